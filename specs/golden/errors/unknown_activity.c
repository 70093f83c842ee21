// @diff(f_grad: (actve, const) -> active)
double f(double x, int n);
