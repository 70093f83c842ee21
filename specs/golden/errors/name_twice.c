// @diff(f_grad: (active) -> active)
double f(double x);

// @diff(f_grad: (active) -> active)
double g(double x);
