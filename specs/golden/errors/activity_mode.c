// @diff(f_rev: reverse (dual) -> active;
//       f_fwd: forward (active) -> dual)
double f(double x);
