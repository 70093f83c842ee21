/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float; failed to build */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
// @diff(f45_fwd: (dual, dual, dual, dual) -> dual;
//       f45_rev: (dup, dup, active, active) -> active;
//       f45_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f45_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f45_rev4v: reverse[4] (dupv, dupv, active, active) -> active;
//       f45_ckpt: (dup, dup, active, active) -> active within 512)
double f45(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { int k = 0; while (k < 3 && (x[3] + t1) < 1.98) { if (hypot((double)(float)tanh(a), 1.0 + fmax(y[3], 1.078)) > 0.67) { { double w[5]; for (int i = 0; i < n; i++) w[i] = fmax((y[i] / (1.5 + (x[2]) * (x[2]))), (double)(float)tanh(t3)); t3 = t3 * 0.5 + w[0] * w[4]; } } else { { double w[5]; for (int i = 0; i < n; i++) w[i] = hypot((t3 - t0), 1.0 + x[(i + 1) % 5]); t0 = t0 * 0.5 + w[3] * w[0]; } } k++; } }
    return t0 + t1 * t2 - t3 + y[0];
}
