/* fuzz regression: activities (True, True, True, True) (x, y, a, b); double */
#include <math.h>
// @diff(f36_fwd: (dual, dual, dual, dual) -> dual;
//       f36_rev: (dup, dup, active, active) -> active;
//       f36_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly)
double f36(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    y[4] *= tanh((t1 / (1.5 + (log10(2.0 + sin(b))) * (log10(2.0 + sin(b))))));
    return t0 + t1 * t2 - t3 + y[0];
}
