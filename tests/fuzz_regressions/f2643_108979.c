/* fuzz regression: activities (False, True, False, True) (x, y, a, b); double; seed 11919691869176515945 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
// @diff(f2643_fwd: (const, dual, const, dual) -> dual;
//       f2643_rev: (const, dup, const, active) -> active;
//       f2643_fwd4: forward[4] (const, dual, const, dual) -> dualonly;
//       f2643_fwd4v: forward[4] (const, dualv, const, dualv) -> dualonly;
//       f2643_rev4v: reverse[4] (const, dupv, const, active) -> active)
double f2643(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { int k = 0; while (k < 3 && t1 < 0.56) { for (int i = 0; i < n; i++) { t1 = t1 * creal(clog(2.0 + tanh(cimag(conj((b) + 2.0 * I) * (0.5 - (b) * I))) + I * (cimag(conj((b) + 2.0 * I) * (0.5 - (b) * I))))) + x[0]; t2 = x[(i + 2) % 5]; if (log2(2.0 + tanh(b)) > 0.59) break; } k++; } }
    return t0 + t1 * t2 - t3 + y[0];
}
