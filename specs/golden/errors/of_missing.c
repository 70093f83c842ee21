// @diff(f_grad: (dup, const) -> active; f_hvp: forward of f_gard (dual, dual, const, const) -> const)
double f(const double *x, int n);
