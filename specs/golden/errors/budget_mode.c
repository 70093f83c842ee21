// @diff(f_tangent: (dual, const) -> dual within 64MiB)
double f(const double *x, int n);
