// @diff(f_grad: (dup) -> dup;
//       f_fwd: (dual) -> dualv)
double f(double *x);

// @diff(g_grad: (active) -> active)
int g(double x);
