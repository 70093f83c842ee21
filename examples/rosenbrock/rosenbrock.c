/* The Rosenbrock function, f(x, y) = (a - x)^2 + b (y - x^2)^2, with its derivatives
 * declared by annotations: the gradient (reverse mode), a directional derivative
 * (forward mode), and four directions at once (forward mode, width 4). */

// @diff(rosen_grad: (const, const, active, active) -> active)
// @diff(rosen_tangent: (const, const, dual, dual) -> dual)
// @diff(rosen_tangent4: forward[4] (const, const, dual, dual) -> dualonly)
double rosen(double a, double b, double x, double y)
{
    return (a - x) * (a - x) + b * (y - x * x) * (y - x * x);
}
