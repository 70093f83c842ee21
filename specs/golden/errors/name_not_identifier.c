// @diff(2fast: (active) -> active;
//       double: (active) -> active)
double f(double x);
