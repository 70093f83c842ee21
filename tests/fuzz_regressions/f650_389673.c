/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float; seed 6096005550293056664 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;
typedef double fz_v2 __attribute__((vector_size(16)));

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
static double h650_0(double u, const double *x)
{
    return acos(0.5 * tanh(asin(0.5 * tanh(1.375))));
}
static double (*volatile ph650_0)(double, const double *) = h650_0;
// @diff(f650_fwd: (dual, dual, dual, dual) -> dual;
//       f650_rev: (dup, dup, active, active) -> active;
//       f650_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly)
double f650(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < 5; i++) { t2 = ({ fz_v2 _v0 = {(double)(float)tanh(atanh(0.5 * tanh(b))), creal(((fmin(a, t1)) + (asinh(x[0])) * I) * ((asinh(x[0])) - 0.5 * I))}; _v0[i & 1] = _v0[1 - (i & 1)] * 0.75; _v0[0] * _v0[1]; }); y[i] = log10(2.0 + sin(t1)); if (fmax(t0, a) > 1.46) break; }
    return t0 + t1 * t2 - t3 + y[0];
}
