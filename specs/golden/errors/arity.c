// @diff(f_grad: (active, const, const) -> active)
double f(double x, int n);
