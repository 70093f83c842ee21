// @diff(f_grad: (dup) -> active)
void f(double *x);
