// @diff(f_grad: (active, active) -> active; f_hvp: forward of f_grad (dual, dual, dual) -> dual)
double f(double x, double y);
