// @diff(f_fwd: fwd (dual) -> dual)
double f(double x);
