// @diff(f_d: (dual, active) -> dual)
double f(double x, double y);
