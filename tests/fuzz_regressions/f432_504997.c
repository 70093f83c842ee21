/* fuzz regression: activities (True, True, True, False) (x, y, a, b); float; seed 2514050241751671585 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;
typedef double fz_v2 __attribute__((vector_size(16)));

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
// @diff(f432_fwd: (dual, dual, dual, const) -> dual;
//       f432_rev: (dup, dup, active, const) -> active;
//       f432_fwd4: forward[4] (dual, dual, dual, const) -> dualonly)
double f432(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    #pragma omp parallel for schedule(guided)
    for (int i = 0; i < n; i++) { y[i] = creal((((0.485 * t1)) + (cimag(((x[i]) + 0.5 * I) / (1.5 + tanh(x[i]) + (x[i]) * I))) * I) * ((cimag(((x[i]) + 0.5 * I) / (1.5 + tanh(x[i]) + (x[i]) * I))) - 0.5 * I)); }
    { int k = 0; while (k < 3 && ({ fz_v2 _v0; __builtin_memcpy(&_v0, x + 1, sizeof _v0); _v0 = _v0 * (t3) + (t0); _v0[0] - _v0[1] * 0.5; }) < 1.75) { if (cimag(((expm1(tanh(t3))) + 0.5 * I) / (1.5 + tanh(a) + (expm1(tanh(t3))) * I)) > -0.32) { t2 = t2 * (exp2(tanh(t1)) / (1.5 + (t2) * (t2))) + t2; } else { { double w[5]; for (int i = 0; i < n; i++) w[i] = hypot(t3, 1.0 + tanh(y[i])); t2 = t2 * 0.5 + w[4] * w[2]; } } k++; } }
    return t0 + t1 * t2 - t3 + y[0];
}
