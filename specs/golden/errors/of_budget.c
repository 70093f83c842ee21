// @diff(f_grad: (dup, const) -> active within 64MiB)
// @diff(f_hvp: forward of f_grad (dual, dual, const, const) -> const)
double f(const double *x, int n);
