/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float; seed 13009195430073613552 */
/* t3 reaches -6e6, and y[3] takes sin(t3): within a float-sized step (1e-3) t3 moves by
 * thousands, so finite differences at that step say 1.87 where the derivative is -87816 (steps
 * of 1e-9 agree with it); the fuzzer must call this inconclusive, not wrong */
#include <math.h>
static double h1185_0(double u, const double *x)
{
    return sin(1.385);
}
// @diff(f1185_fwd: (dual, dual, dual, dual) -> dual;
//       f1185_rev: (dup, dup, active, active) -> active;
//       f1185_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly)
double f1185(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < n; i++) { for (int j = 0; j < n; j++) { t3 = t3 * fmin(pow(1.0 + (x[(j + 1) % 5]) * (x[(j + 1) % 5]), 1.5), (x[(j + 4) % 5] - -1.994)) + x[i]; } t1 = asin(0.5 * tanh((expm1(tanh(t2)) + (b + t0)))); }
    for (int i = 0; i < n; i++) { if (t3 > -0.26) { if (a > 1.48) break; } else { y[i] += (double)(float)tanh((t1 / (1.5 + (t1) * (t1)))); } if (t2 > -0.04) { t1 = atan(erfc(tanh((t3 * b)))); } else { y[i] = (fmin(a, (double)i) / (1.5 + (erf(x[4])) * (erf(x[4])))); } }
    if (cosh(tanh(sqrt(1.0 + (x[2]) * (x[2])))) > -0.72) { { double w[5]; for (int i = 0; i < n; i++) w[i] = sqrt(1.0 + ((a > 0.80 ? (double)i : t3)) * ((a > 0.80 ? (double)i : t3))); t3 = t3 * 0.5 + w[4] * w[2]; } } else { t0 = t0 * (double)(float)tanh((t2 / (1.5 + (-0.165) * (-0.165)))) + t2; }
    y[3] *= tanh((fmin(t0, b) > 0.77 ? (-(x[1])) : log10(2.0 + sin(t3))));
    return t0 + t1 * t2 - t3 + y[0];
}
