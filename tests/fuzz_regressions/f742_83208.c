/* fuzz regression: activities (True, True, True, False) (x, y, a, b); float; seed 14676084234198291030 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;
typedef double fz_v2 __attribute__((vector_size(16)));

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
// @diff(f742_fwd: (dual, dual, dual, const) -> dual;
//       f742_rev: (dup, dup, active, const) -> active;
//       f742_fwd4: forward[4] (dual, dual, dual, const) -> dualonly)
double f742(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    #pragma omp parallel for reduction(*: t1) schedule(guided)
    for (int i = 0; i < n; i++) { t1 *= 1.0 + 0.25 * tanh(x[3]); }
    t1 = sin(fmax(fmax(t1, t2), (t3 * y[4])));
    { float f = (float)tanh(fmax((y[2] + t1), y[2])); t0 = t0 * 0.5 + (double)(f * f); }
    return t0 + t1 * t2 - t3 + y[0];
}
