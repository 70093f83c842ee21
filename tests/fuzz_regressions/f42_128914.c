/* fuzz regression: activities (True, True, False, True) (x, y, a, b); float */
#include <math.h>
// @diff(f42_fwd: (dual, dual, const, dual) -> dual;
//       f42_rev: (dup, dup, const, active) -> active;
//       f42_fwd4: forward[4] (dual, dual, const, dual) -> dualonly)
double f42(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    y[3] *= tanh(t1);
    return t0 + t1 * t2 - t3 + y[0];
}
