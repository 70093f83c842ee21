/* fuzz regression: activities (True, True, True, False) (x, y, a, b); double */
#include <math.h>
// @diff(f45_fwd: (dual, dual, dual, const) -> dual;
//       f45_rev: (dup, dup, active, const) -> active;
//       f45_fwd4: forward[4] (dual, dual, dual, const) -> dualonly)
double f45(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    y[4] *= tanh((t1 + (t0 > -0.97 ? t0 : 1.036)));
    return t0 + t1 * t2 - t3 + y[0];
}
