// @diff(of: (active) -> active)
double f(double x);
