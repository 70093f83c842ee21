/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float; seed 5686441053043884005 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
__attribute__((noinline)) static double h160_0(double u, const double *x)
{
    return 0.312;
}
// @diff(f160_fwd: (dual, dual, dual, dual) -> dual;
//       f160_rev: (dup, dup, active, active) -> active;
//       f160_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f160_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f160_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f160(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < n; i++) { { float f = (float)tanh(b); t0 = t0 * 0.5 + (double)(f * f); } for (int j = 0; j < n; j++) { if ((x[(j + 2) % 5] / (1.5 + (x[i]) * (x[i]))) > 0.61) break; } for (int j = 0; j < n; j++) { { float f = (float)tanh((sinh(tanh(x[(j + 1) % 5])) - cbrt(2.0 + tanh(t1)))); t2 = t2 * 0.5 + (double)(f * f); } t2 = t2 * fmin((t0 * y[1]), sinh(tanh(x[0]))) + x[i]; t0 = hypot((x[(j + 4) % 5] * x[i]), 1.0 + (double)i); } }
    return t0 + t1 * t2 - t3 + y[0];
}
