// @diff(f_grad: (active, const) -> active)
double f(double x, int n, ...);
