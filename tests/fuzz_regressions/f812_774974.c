/* fuzz regression: activities (True, True, False, True) (x, y, a, b); double; seed 4161492336500724194 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;
typedef double fz_v2 __attribute__((vector_size(16)));

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
static double h812_0(double u, const double *x)
{
    return atan(fmin(u, u));
}
// @diff(f812_fwd: (dual, dual, const, dual) -> dual;
//       f812_rev: (dup, dup, const, active) -> active;
//       f812_fwd4: forward[4] (dual, dual, const, dual) -> dualonly)
double f812(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    #pragma omp parallel for reduction(min: t3)
    for (int i = 0; i < n; i++) { t3 = fmin(t3, ({ fz_v2 _v0 = {x[(i + 4) % 5], (t2 + x[(i + 2) % 5])}; fz_v2 _w0 = _v0 * _v0 + __builtin_shufflevector(_v0, _v0, 1, 0) * 0.5; _w0[0] - 0.25 * _w0[1]; })); }
    return t0 + t1 * t2 - t3 + y[0];
}
