// @diff(a: forward of b (dual) -> dual; b: forward of a (dual) -> dual)
double f(double x);
