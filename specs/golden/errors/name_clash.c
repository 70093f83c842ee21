// @diff(f_grad: (dup, const))
void f(double *x, double *d_x);
