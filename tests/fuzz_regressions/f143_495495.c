/* fuzz regression: activities (True, True, False, True) (x, y, a, b); double; seed 2459483335370045691 */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;
typedef double fz_v2 __attribute__((vector_size(16)));

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
typedef struct { double *p; int n; } fz_box;
/* memory allocated on first use, kept in a struct (llm.c's activations) */
__attribute__((noinline)) static double *fz_lazy(fz_box *b, int n)
{
    if (b->p == NULL) {
        b->p = (double *)malloc(2 * n * sizeof(double));
        b->n = n;
    }
    return b->p;
}
static fz_pair s143_0(fz_pair p, double u)
{
    fz_pair r = { p.lo, (({ fz_v2 _v0 = {0.924, 0.542}; _v0[(int)(p.lo > 0.3) & 1] = _v0[1 - ((int)(p.lo > 0.3) & 1)] * 0.75; _v0[0] * _v0[1]; }) > -0.28 ? acosh(2.0 + (-0.026) * (-0.026)) : sinh(tanh(p.lo))) };
    return r;
}
// @diff(f143_fwd: (dual, dual, const, dual) -> dual;
//       f143_rev: (dup, dup, const, active) -> active;
//       f143_fwd4: forward[4] (dual, dual, const, dual) -> dualonly)
double f143(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { double *blk = (double *)malloc(4 * n * sizeof *blk); double *w = blk + n; for (int i = 0; i < n; i++) w[i] = atan2(y[i], 2.0 + (-1.882) * (-1.882)); for (int i = 0; i < n; i++) { double s = 0; for (int j = 0; j < n; j++) s += w[j] * ldexp(x[(j + 3) % 5], 3); w[n + i] = tanh(s); } for (int i = 0; i < n; i++) { double s = 0; for (int j = 0; j < n; j++) s += w[n + j] * atan2(x[(j + 4) % 5], 2.0 + (t3) * (t3)); w[i] = sin(s) + 0.5 * w[i]; } t3 = t3 * 0.5 + w[3] * w[n + 4]; free(blk); }
    return t0 + t1 * t2 - t3 + y[0];
}
