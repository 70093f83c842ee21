/* Telling adgen what it should not work out itself.
 *
 * `cubic_root` solves x^3 + a x = b by Newton's method. Differentiating its 50 iterations would
 * work, but the implicit function theorem gives the derivative in closed form, exactly and at
 * the cost of one evaluation: the derivative annotation below says that `cubic_root_grad`,
 * written by hand with the signature adgen would generate, is its reverse-mode derivative.
 * adgen then calls it wherever `cubic_root` is called, in both modes.
 *
 * `trace` only reports progress: marked inactive, its calls carry no derivatives. */
#include <stdio.h>

static int verbose = 0;

double cubic_root(double a, double b)
{
    double x = b > 1 ? b : 1;
    for (int i = 0; i < 50; i++)
        x -= (x * x * x + a * x - b) / (3 * x * x + a);
    return x;
}

typedef struct { double ret; double d_a; double d_b; } cubic_root_grad_result;

/* x^3 + a x = b, so (3x^2 + a) dx = db - x da */
// @derivative(cubic_root: (active, active) -> active)
cubic_root_grad_result cubic_root_grad(double a, double b, double d_ret)
{
    double x = cubic_root(a, b), slope = 3 * x * x + a;
    cubic_root_grad_result r = { x, -x / slope * d_ret, d_ret / slope };
    return r;
}

// @inactive
void trace(const char *what, double value)
{
    if (verbose)
        printf("%s = %g\n", what, value);
}

/* The volume of a cube whose side solves the cubic, scaled by the cubic's coefficient. */
// @diff(volume_grad: (active, active) -> active; volume_tangent: (dual, dual) -> dual)
double volume(double a, double b)
{
    double side = cubic_root(a, b);
    trace("side", side);
    return a * side * side * side;
}
