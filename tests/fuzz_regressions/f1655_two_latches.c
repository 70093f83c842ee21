/* fuzz regression: activities (True, True, True, False) (x, y, a, b); float; failed to build: a loop with two latches whose iteration count is known only when it ends (its buffer grew after the header stored into it, and both latches named their count alike) */
#include <complex.h>
#include <math.h>

typedef struct { double lo, hi; } fz_pair;

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
static double h1655_0(double u, const double *x)
{
    return -0.902;
}
static double h1655_1(double u, const double *x)
{
    return u;
}
// @diff(f1655_fwd: (dual, dual, dual, const) -> dual;
//       f1655_rev: (dup, dup, active, const) -> active;
//       f1655_fwd4: forward[4] (dual, dual, dual, const) -> dualonly)
double f1655(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < n; i++) { if (((t3 > 0.97 ? b : t3) > 0.00 ? ldexp(y[1], 3) : cbrt(2.0 + tanh(t0))) > -0.15) { y[i] *= tanh(erf(asinh(b))); } else { if (erf(b) > 1.03) break; } t0 = (b > 0.89 ? t1 : (-(atan2(t3, 2.0 + (1.590) * (1.590))))); }
    return t0 + t1 * t2 - t3 + y[0];
}
