// @diff(f_w0: forward[0] (dual) -> dual)
// @diff(f_w65: forward[65] (dual) -> dual)
double f(double x);
