/* fuzz regression: activities (True, True, True, False) (x, y, a, b); double */
#include <math.h>
// @diff(f43_fwd: (dual, dual, dual, const) -> dual;
//       f43_rev: (dup, dup, active, const) -> active;
//       f43_fwd4: forward[4] (dual, dual, dual, const) -> dualonly)
double f43(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    y[1] += (log2(2.0 + tanh(t0)) - t3);
    y[3] = atan(t3);
    return t0 + t1 * t2 - t3 + y[0];
}
