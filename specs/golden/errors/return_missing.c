// @diff(f_grad: (active))
double f(double x);
