/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float */
/* t2 overflows to inf while the result stays finite: the derivative is inf * 0 (NaN), as in any
 * AD tool; the fuzzer must call this inconclusive (the primal raised FE_OVERFLOW), not wrong */
#include <math.h>
__attribute__((noinline)) static double h528_0(double u, const double *x)
{
    return fmin(cosh(tanh(u)), (x[0] > 0.80 ? -1.888 : u));
}
static double h528_1(double u, const double *x)
{
    return (fmax(x[2], u) > 0.92 ? exp(tanh(u)) : (-0.579 > -0.89 ? x[4] : x[4]));
}
// @diff(f528_fwd: (dual, dual, dual, dual) -> dual;
//       f528_rev: (dup, dup, active, active) -> active;
//       f528_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly)
double f528(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < n; i++) { for (int j = 0; j < 5; j++) { t2 = t2 * t2 + y[2]; } y[4] += expm1(tanh(h528_0(t1, x))); for (int j = 0; j < n; j++) { t2 = t2 * (double)(float)tanh(hypot(x[(j + 3) % 5], 1.0 + a)) + 0.582; { float f = (float)tanh((log2(2.0 + tanh(x[(j + 2) % 5])) + fmax(y[j], t2))); t1 = t1 * 0.5 + (double)(f * f); } y[j] = (log2(2.0 + tanh(y[j])) - ((double)i * -0.769)); } }
    t2 = hypot(fmin((double)(float)tanh(y[0]), x[4]), 1.0 + (-((-1.448 * t1))));
    return t0 + t1 * t2 - t3 + y[0];
}
