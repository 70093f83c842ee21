/* fuzz regression: activities (True, True, False, True) (x, y, a, b); float; seed 12483305693542157410 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
static fz_pair s89_0(fz_pair p, double u)
{
    fz_pair r = { (fmax(0.999, p.lo) > -0.68 ? (double)(float)tanh(u) : (double)(float)tanh(p.lo)), p.hi };
    return r;
}
__attribute__((noinline)) static double h89_1(double u, const double *x)
{
    return (-(u));
}
static double (*volatile ph89_1)(double, const double *) = h89_1;
// @diff(f89_fwd: (dual, dual, const, dual) -> dual;
//       f89_rev: (dup, dup, const, active) -> active;
//       f89_fwd4: forward[4] (dual, dual, const, dual) -> dualonly;
//       f89_fwd4v: forward[4] (dualv, dualv, const, dualv) -> dualonly;
//       f89_rev4v: reverse[4] (dupv, dupv, const, active) -> active)
double f89(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < 5; i++) { for (int j = 0; j <= i; j++) { { float f = (float)tanh(cimag(((hypot((double)i, 1.0 + b)) + 0.5 * I) / (1.5 + tanh(pow(1.0 + (-0.428) * (-0.428), 1.5)) + (hypot((double)i, 1.0 + b)) * I))); t2 = t2 * 0.5 + (double)(f * f); } { float f = (float)tanh(ldexp(cosh(tanh((double)j)), 3)); t0 = t0 * 0.5 + (double)(f * f); } if (((double)j * y[i]) > 0.51) break; } for (int j = 0; j < n; j++) { y[j] += hypot(sinh(tanh((double)j)), 1.0 + ph89_1((double)i, x)); { float f = (float)tanh(y[j]); t1 = t1 * 0.5 + (double)(f * f); } } for (int j = 0; j < n; j++) { { float f = (float)tanh(fmax(cimag(((x[(j + 3) % 5]) + 0.5 * I) / (1.5 + tanh(-1.910) + (x[(j + 3) % 5]) * I)), (t1 > 0.92 ? x[3] : x[i]))); t1 = t1 * 0.5 + (double)(f * f); } if (y[4] > 0.60) break; } }
    return t0 + t1 * t2 - t3 + y[0];
}
