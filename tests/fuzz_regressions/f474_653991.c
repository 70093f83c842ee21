/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float */
#include <math.h>
__attribute__((noinline)) static double h474_0(double u, const double *x)
{
    return log1p(exp(tanh((x[3] * x[2]))));
}
static double h474_1(double u, const double *x)
{
    return u;
}
// @diff(f474_fwd: (dual, dual, dual, dual) -> dual;
//       f474_rev: (dup, dup, active, active) -> active;
//       f474_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly)
double f474(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < n; i++) { for (int j = 0; j < 5; j++) { t1 = cbrt(2.0 + tanh(sqrt(1.0 + (a) * (a)))); t3 = t3 * (double)i + x[2]; } }
    t0 = fmax(hypot((b * x[0]), 1.0 + h474_1(t3, x)), t2);
    return t0 + t1 * t2 - t3 + y[0];
}
