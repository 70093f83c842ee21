/* The seeds' example: reverse mode with active scalars. */

// @diff(rosen_grad: (const, const, active, active) -> active)
double rosen(double a, double b, double x, double y)
{
    return (a - x) * (a - x) + b * (y - x * x) * (y - x * x);
}
