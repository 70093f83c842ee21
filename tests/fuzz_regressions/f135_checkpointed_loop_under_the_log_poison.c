/* fuzz regression: activities (True, True, False, False) (x, y, a, b); double; seed 1483748711523699085 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
static double h135_0(double u, const double *x)
{
    return x[2];
}
static double (*volatile ph135_0)(double, const double *) = h135_0;
// @diff(f135_fwd: (dual, dual, const, const) -> dual;
//       f135_rev: (dup, dup, const, const) -> active;
//       f135_fwd4: forward[4] (dual, dual, const, const) -> dualonly;
//       f135_fwd4v: forward[4] (dualv, dualv, const, const) -> dualonly;
//       f135_rev4v: reverse[4] (dupv, dupv, const, const) -> active;
//       f135_ckpt: (dup, dup, const, const) -> active within 512)
double f135(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < n; i++) { t2 = t2 * cimag(((atan2(y[i], 2.0 + (t2) * (t2))) + 0.5 * I) / (1.5 + tanh(acos(0.5 * tanh(t1))) + (atan2(y[i], 2.0 + (t2) * (t2))) * I)) + a; }
    t0 = t0 * (ph135_0(t0, x) + (t1 * t2)) + y[3];
    y[2] = ((x[3] > -0.55 ? t3 : t0) + (b / (1.5 + (t3) * (t3))));
    return t0 + t1 * t2 - t3 + y[0];
}
