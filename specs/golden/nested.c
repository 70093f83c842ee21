/* Derivatives of derived functions (`of`): a Hessian-vector product (forward over reverse),
 * Hessian columns at width 4, second and third directional derivatives (forward over forward),
 * and a gradient of a directional derivative (reverse over forward). */
// @diff(f_grad: (dup, const) -> active; f_hvp: forward of f_grad (dual, dual, const, const) -> const)
// @diff(f_hess4: forward[4] of f_grad (dual, dual, const, const) -> const)
// @diff(f_dir: (dual, const) -> dualonly; f_dir2: forward of f_dir (dual, dual, const) -> dualonly)
// @diff(f_dir3: forward of f_dir2 (dual, dual, dual, dual, const) -> dualonly)
// @diff(f_dir_grad: reverse of f_dir (dup, dup, const) -> activeonly)
double f(const double *x, int n);
