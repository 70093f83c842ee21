/* fuzz regression: activities (False, True, True, True) (x, y, a, b); double; seed 14677987264303946014 */
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
__attribute__((noinline)) static double h17_0(double u, const double *x)
{
    return exp2(tanh((u + 0.071)));
}
// @diff(f17_fwd: (const, dual, dual, dual) -> dual;
//       f17_rev: (const, dup, active, active) -> active;
//       f17_fwd4: forward[4] (const, dual, dual, dual) -> dualonly;
//       f17_fwd4v: forward[4] (const, dualv, dualv, dualv) -> dualonly;
//       f17_rev4v: reverse[4] (const, dupv, active, active) -> active)
double f17(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    #pragma omp parallel for schedule(guided)
    for (int i = 0; i < n; i++) { y[i] += -1.169; }
    for (int i = 0; i < 5; i++) { for (int j = 0; j < n; j++) { y[j] = hypot(y[j], 1.0 + t2); t0 = a; } for (int j = 0; j < 5; j++) { y[j] += (fmin(t0, t3) / (1.5 + (t3) * (t3))); } }
    return t0 + t1 * t2 - t3 + y[0];
}
