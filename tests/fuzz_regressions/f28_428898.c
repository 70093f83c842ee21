/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float */
#include <math.h>
// @diff(f28_fwd: (dual, dual, dual, dual) -> dual;
//       f28_rev: (dup, dup, active, active) -> active;
//       f28_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly)
double f28(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    y[1] *= tanh(hypot((double)(float)tanh(t2), 1.0 + (t1 - a)));
    return t0 + t1 * t2 - t3 + y[0];
}
