// @diff(f_fwd: forward[4] (dual, dualv, dualv) -> dual;
//       f_rev: reverse[2] (dupv, dup, active) -> active)
double f(const double *a, const double *b, double x);
