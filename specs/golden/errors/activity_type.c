#include <stddef.h>

// @diff(f_grad: (active, dup, dup, const) -> active)
double f(double *x, int *counts, void *scratch, size_t n);

// @diff(g_fwd: (dual, dual) -> dual)
double g(double x, long k);
