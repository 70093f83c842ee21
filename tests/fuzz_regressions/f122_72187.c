/* fuzz regression: activities (True, True, False, True) (x, y, a, b); float; failed to build */
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
__attribute__((noinline)) static fz_pair s122_0(fz_pair p, double u)
{
    fz_pair r = { tanh(creal(((u) + (1.386) * I) * ((1.386) - 0.5 * I))), p.hi };
    return r;
}
// @diff(f122_fwd: (dual, dual, const, dual) -> dual;
//       f122_rev: (dup, dup, const, active) -> active;
//       f122_fwd4: forward[4] (dual, dual, const, dual) -> dualonly)
double f122(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */

    return t0 + t1 * t2 - t3 + y[0];
}
