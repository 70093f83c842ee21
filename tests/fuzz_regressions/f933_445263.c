/* fuzz regression: activities (True, True, True, False) (x, y, a, b); float */
#include <math.h>
static double h933_0(double u, const double *x)
{
    return log2(2.0 + tanh(erfc(tanh(0.347))));
}
static double h933_1(double u, const double *x)
{
    return fmin(exp2(tanh(u)), (-1.923 > -0.65 ? u : u));
}
// @diff(f933_fwd: (dual, dual, dual, const) -> dual;
//       f933_rev: (dup, dup, active, const) -> active;
//       f933_fwd4: forward[4] (dual, dual, dual, const) -> dualonly)
double f933(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    { int k = 0; while (k < 3 && fmin(y[1], t0) < 1.90) { t1 = a; k++; } }
    for (int i = 0; i < 5; i++) { { float f = (float)tanh(log10(2.0 + sin((y[i] + x[(i + 4) % 5])))); t1 = t1 * 0.5 + (double)(f * f); } t3 = x[0]; y[i] *= tanh((double)(float)tanh((a / (1.5 + (t1) * (t1))))); }
    return t0 + t1 * t2 - t3 + y[0];
}
