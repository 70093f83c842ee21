// @diff(f_grad: (activeonly) -> active)
double f(double x);
