/* fuzz regression: activities (False, True, False, True) (x, y, a, b); float */
#include <math.h>
__attribute__((noinline)) static double h159_0(double u, const double *x)
{
    return sqrt(1.0 + (0.865) * (0.865));
}
// @diff(f159_fwd: (const, dual, const, dual) -> dual;
//       f159_rev: (const, dup, const, active) -> active;
//       f159_fwd4: forward[4] (const, dual, const, dual) -> dualonly)
double f159(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { int k = 0; while (k < 3 && fmax(y[3], a) < 2.77) { { double w[5]; for (int i = 0; i < n; i++) w[i] = (t3 > 0.89 ? (x[(i + 1) % 5] - b) : hypot(t1, 1.0 + t0)); t1 = t1 * 0.5 + w[4] * w[2]; } k++; } }
    return t0 + t1 * t2 - t3 + y[0];
}
