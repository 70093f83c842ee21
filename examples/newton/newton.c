/* Newton's method with Hessian-vector products.
 *
 * Newton-CG minimizes a function by solving H p = -g for each step with conjugate gradients,
 * which only needs products H v, never H itself. `rosen_hvp` is forward mode over the
 * reverse-mode gradient `rosen_grad`: one call gives H v (and the gradient), for a small
 * multiple of the gradient's cost, however large n is. */
// @diff(rosen_grad: (dup, const) -> active)
// @diff(rosen_hvp: forward of rosen_grad (dual, dual, const, const) -> const)
double rosen(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i + 1 < n; i++)
        s += 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]);
    return s;
}
