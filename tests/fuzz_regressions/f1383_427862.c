/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float */
#include <math.h>
// @diff(f1383_fwd: (dual, dual, dual, dual) -> dual;
//       f1383_rev: (dup, dup, active, active) -> active;
//       f1383_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly)
double f1383(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < n; i++) { t3 = atan(t1); { float f = (float)tanh(1.149); t3 = t3 * 0.5 + (double)(f * f); } }
    t0 = fmax(hypot(-0.363, 1.0 + -1.083), fmin((double)(float)tanh(b), y[3]));
    t0 = fmax(fmax(b, expm1(tanh(t0))), fmax((a * y[2]), asin(0.5 * tanh(x[4]))));
    y[1] = atan2((t2 > 0.50 ? y[1] : x[3]), 2.0 + (fmax(t2, a)) * (fmax(t2, a)));
    { float f = (float)tanh(0.940); t2 = t2 * 0.5 + (double)(f * f); }
    return t0 + t1 * t2 - t3 + y[0];
}
