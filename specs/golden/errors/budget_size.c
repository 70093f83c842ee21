// @diff(f_grad: (dup, const) -> active within 64Mb)
double f(const double *x, int n);
