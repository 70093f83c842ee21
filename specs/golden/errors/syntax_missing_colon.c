// @diff(f_grad (active) -> active)
double f(double x);
