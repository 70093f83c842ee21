/* f(x, y) = x^2 sin(y): both partial derivatives, and a directional derivative. */
#include <math.h>

// @diff(f_tangent: (dual, dual) -> dual)
double f(double x, double y)
{
    return x * x * sin(y);
}
