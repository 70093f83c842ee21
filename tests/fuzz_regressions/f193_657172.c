/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float; seed 3150457358206329520 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;
typedef double fz_v2 __attribute__((vector_size(16)));

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
// @diff(f193_fwd: (dual, dual, dual, dual) -> dual;
//       f193_rev: (dup, dup, active, active) -> active;
//       f193_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f193_ckpt: (dup, dup, active, active) -> active within 512)
double f193(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < 5; i++) { y[i] = y[4]; if (b > -0.04) { t1 = x[2]; } else { t0 = creal(cexp((a) * I) * (1.0 + 0.5 * I)); } if (({ fz_v2 _v0; __builtin_memcpy(&_v0, x + 3, sizeof _v0); _v0 = _v0 * ((-(x[1]))) + (y[i]); _v0[0] - _v0[1] * 0.5; }) > 0.85) { { float f = (float)tanh(t2); t0 = t0 * 0.5 + (double)(f * f); } } else { t2 = hypot((-((-1.118 - y[1]))), 1.0 + ((-(b)) + (double)(float)tanh(y[i]))); } }
    return t0 + t1 * t2 - t3 + y[0];
}
