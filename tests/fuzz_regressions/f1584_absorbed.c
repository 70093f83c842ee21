/* fuzz regression: activities (True, True, False, True) (x, y, a, b); float; seed 1680139026728231123 */
/* t3 grows to about 1e271 and absorbs b * x[0]: forward mode keeps its derivative, finite differences lose it */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
static double h1584_0(double u, const double *x)
{
    return ((-(-1.100)) + log1p(exp(tanh(-1.127))));
}
static fz_pair s1584_1(fz_pair p, double u)
{
    fz_pair r = { atanh(0.5 * tanh(log1p(exp(tanh(u))))), (double)(float)tanh((p.lo * u)) };
    return r;
}
// @diff(f1584_fwd: (dual, dual, const, dual) -> dual;
//       f1584_rev: (dup, dup, const, active) -> active;
//       f1584_fwd4: forward[4] (dual, dual, const, dual) -> dualonly;
//       f1584_fwd4v: forward[4] (dualv, dualv, const, dualv) -> dualonly;
//       f1584_rev4v: reverse[4] (dupv, dupv, const, active) -> active)
double f1584(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < 5; i++) { t3 = (pow(1.0 + (cimag(conj((t3) + 2.0 * I) * (0.5 - (t3) * I))) * (cimag(conj((t3) + 2.0 * I) * (0.5 - (t3) * I))), 1.5) / (1.5 + ((double)(float)tanh(creal(ccos(0.5 * tanh(x[0]) + 0.3 * I)))) * ((double)(float)tanh(creal(ccos(0.5 * tanh(x[0]) + 0.3 * I)))))); t0 = t3; }
    return t0 + t1 * t2 - t3 + y[0];
}
