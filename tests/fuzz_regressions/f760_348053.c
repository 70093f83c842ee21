/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float; seed 6531694998249939814 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
static fz_pair s760_0(fz_pair p, double u)
{
    fz_pair r = { log(1.0 + (cosh(tanh(p.hi))) * (cosh(tanh(p.hi)))), (p.lo * p.lo) };
    return r;
}
// @diff(f760_fwd: (dual, dual, dual, dual) -> dual;
//       f760_rev: (dup, dup, active, active) -> active;
//       f760_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f760_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f760_rev4v: reverse[4] (dupv, dupv, active, active) -> active;
//       f760_ckpt: (dup, dup, active, active) -> active within 512)
double f760(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    if (hypot(t3, 1.0 + lgamma(2.0 + tanh(y[1]))) > -0.43) { for (int i = 0; i < 5; i++) { t3 = creal(cexp(((cimag(csqrt(2.0 + tanh(-1.861) + I * (-1.861))) - atanh(0.5 * tanh(a)))) * I) * (1.0 + 0.5 * I)); if (cbrt(2.0 + tanh(x[i])) > 1.33) break; } } else { for (int i = 0; i < n; i++) { y[2] += (s760_0(fz_make(x[(i + 3) % 5], y[i]), (double)i).hi > -0.16 ? t2 : y[4]); y[4] = ((t0 > 0.03 ? b : b) - t3); t0 = t0 * t0 + x[i]; } }
    return t0 + t1 * t2 - t3 + y[0];
}
