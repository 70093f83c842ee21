/* fuzz regression: activities (False, True, False, True) (x, y, a, b); float */
#include <math.h>
// @diff(f901_fwd: (const, dual, const, dual) -> dual;
//       f901_rev: (const, dup, const, active) -> active;
//       f901_fwd4: forward[4] (const, dual, const, dual) -> dualonly)
double f901(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < n; i++) { for (int j = 0; j <= i; j++) { t0 = sqrt(1.0 + (y[0]) * (y[0])); y[4] = (double)(float)tanh((b + t3)); } if (y[i] > -0.30) { t2 = atan2(x[i], 2.0 + (tanh(t2)) * (tanh(t2))); } else { y[i] += x[3]; } for (int j = 0; j < n; j++) { { float f = (float)tanh((acos(0.5 * tanh(x[4])) + log(1.0 + (1.906) * (1.906)))); t0 = t0 * 0.5 + (double)(f * f); } if (log2(2.0 + tanh(y[j])) > 0.75) break; if ((double)i > 0.62) break; } }
    for (int i = 0; i < n; i++) { for (int j = 0; j < n; j++) { { float f = (float)tanh(t1); t2 = t2 * 0.5 + (double)(f * f); } { float f = (float)tanh(x[(j + 3) % 5]); t0 = t0 * 0.5 + (double)(f * f); } } y[i] *= tanh(t0); for (int j = 0; j < 5; j++) { if (x[2] > 0.85) break; if (cosh(tanh(t3)) > 1.22) break; } }
    t0 = exp(tanh(t2));
    y[4] += log2(2.0 + tanh(y[4]));
    if (sinh(tanh(b)) > 0.42) { if (t1 > -0.91) { { double w[5]; for (int i = 0; i < n; i++) w[i] = (double)i; t0 = t0 * 0.5 + w[0] * w[4]; } } else { t2 = (double)(float)tanh(((-(a)) + (t1 / (1.5 + (t3) * (t3))))); } } else { { int k = 0; while (k < 3 && acos(0.5 * tanh(t1)) < 2.86) { { double w[5]; for (int i = 0; i < n; i++) w[i] = sqrt(1.0 + (sinh(tanh(t1))) * (sinh(tanh(t1)))); t1 = t1 * 0.5 + w[2] * w[2]; } k++; } } }
    return t0 + t1 * t2 - t3 + y[0];
}


