/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float */
#include <math.h>
static double h22_0(double u, const double *x)
{
    return 0.033;
}
__attribute__((noinline)) static double h22_1(double u, const double *x)
{
    return ((x[1] > -0.22 ? 1.579 : -0.718) > -0.25 ? (u / (1.5 + (-1.437) * (-1.437))) : cbrt(2.0 + tanh(x[3])));
}
// @diff(f22_fwd: (dual, dual, dual, dual) -> dual;
//       f22_rev: (dup, dup, active, active) -> active;
//       f22_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly)
double f22(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    y[2] *= tanh((-(exp(tanh(b)))));
    return t0 + t1 * t2 - t3 + y[0];
}
