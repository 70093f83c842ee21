/* fuzz regression: activities (False, True, True, True) (x, y, a, b); float */
#include <math.h>
// @diff(f2_fwd: (const, dual, dual, dual) -> dual;
//       f2_rev: (const, dup, active, active) -> active;
//       f2_fwd4: forward[4] (const, dual, dual, dual) -> dualonly)
double f2(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    t1 = t3;
    for (int i = 0; i < 5; i++) { { float f = (float)tanh(erf(log(1.0 + (y[4]) * (y[4])))); t3 = t3 * 0.5 + (double)(f * f); } t2 = t3; }
    y[1] = log1p(exp(tanh(hypot(y[0], 1.0 + b))));
    return t0 + t1 * t2 - t3 + y[0];
}
