/* fuzz batch (seed 4901, programs 760-799): f793's forward[4] tangent was NaN here, not when built alone: LLVM turned a
   forward[4] dispatch derivative's ret (extractvalue (call)) into a jump to a callee returning five doubles through memory */
#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }

__attribute__((noinline)) static double h760_0(double u, const double *x)
{
    return 0.743;
}

// @diff(f760_fwd: (dual, dual, dual, dual) -> dual;
//       f760_rev: (dup, dup, active, active) -> active;
//       f760_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f760_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f760_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f760(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { int k = 0; while (k < 3 && erfc(tanh(t1)) < 2.74) { for (int i = 0; i < n; i++) { { float f = (float)tanh(t3); t2 = t2 * 0.5 + (double)(f * f); } } k++; } }
    if (creal(ccos(0.5 * tanh(carg(2.0 + (x[2]) * I)) + 0.3 * I)) > 0.31) { y[3] *= tanh(b); } else { y[2] *= tanh(fmin(asinh(1.665), hypot(t3, 1.0 + 1.242))); }
    for (int i = 0; i < 5; i++) { y[i] += exp2(tanh(acosh(2.0 + (y[0]) * (y[0])))); y[0] = asinh((double)(float)tanh(a)); y[i] = h760_0(hypot((double)i, 1.0 + x[i]), x); }
    t0 = a;
    { double *w = NULL; for (int i = 0; i < n; i++) { w = realloc(w, (i + 1) * sizeof *w); w[i] = log(1.0 + (t1) * (t1)); } t0 = t0 * 0.5 + w[0] * w[0]; free(w); }
    return t0 + t1 * t2 - t3 + y[0];
}

// @diff(f761_fwd: (dual, dual, dual, dual) -> dual;
//       f761_rev: (dup, dup, active, active) -> active;
//       f761_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f761_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f761_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f761(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t1 = (exp(tanh((0.354 * -1.477))) - ((a - t1) * log1p(exp(tanh(t1)))));
    t3 = t3 * a + x[0];
    t0 = t0 * acosh(2.0 + (fmax(t0, x[2])) * (fmax(t0, x[2]))) + t0;
    return t0 + t1 * t2 - t3 + y[0];
}

static double *m762_0(double u, const double *x, int n)
{
    double *w = malloc(n * sizeof *w);
    for (int i = 0; i < n; i++)
        w[i] = ((-(sinh(tanh(1.465))))) * x[(i + 3) % 5];
    return w;
}

static double h762_1(double u, const double *x)
{
    return u;
}

// @diff(f762_fwd: (dual, dual, dual, dual) -> dual;
//       f762_rev: (dup, dup, active, active) -> active;
//       f762_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f762_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f762_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f762(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { double *w = m762_0(t0, x, n); t1 = t1 * 0.5 + w[1] * w[0]; fz_free(w); }
    t1 = (-((tanh(t1) / (1.5 + (t2) * (t2)))));
    t3 = h762_1(hypot((x[1] > -0.21 ? a : x[4]), 1.0 + (-(b))), x);
    return t0 + t1 * t2 - t3 + y[0];
}

// @diff(f763_fwd: (const, dual, dual, dual) -> dual;
//       f763_rev: (const, dup, active, active) -> active;
//       f763_fwd4: forward[4] (const, dual, dual, dual) -> dualonly;
//       f763_fwd4v: forward[4] (const, dualv, dualv, dualv) -> dualonly;
//       f763_rev4v: reverse[4] (const, dupv, active, active) -> active)
double f763(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t1 = t1 * t3 + t1;
    { float f = (float)tanh(a); t2 = t2 * 0.5 + (double)(f * f); }
    return t0 + t1 * t2 - t3 + y[0];
}

static double h764_0(double u, const double *x)
{
    return u;
}

static double (*volatile ph764_0)(double, const double *) = h764_0;

// @diff(f764_fwd: (dual, dual, dual, dual) -> dual;
//       f764_rev: (dup, dup, active, active) -> active;
//       f764_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f764_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f764_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f764(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t1 = tgamma(1.5 + tanh(x[3]));
    for (int i = 0; i < 5; i++) { for (int j = 0; j < 5; j++) { y[j] *= tanh((-((-1.088 / (1.5 + (x[i]) * (x[i])))))); t2 = y[j]; t1 = fmax((double)j, x[(i + 4) % 5]); } }
    t2 = acosh(2.0 + (ph764_0(acosh(2.0 + (t0) * (t0)), x)) * (ph764_0(acosh(2.0 + (t0) * (t0)), x)));
    return t0 + t1 * t2 - t3 + y[0];
}

static double *m765_0(double u, const double *x, int n)
{
    double *w = malloc(n * sizeof *w);
    for (int i = 0; i < n; i++)
        w[i] = (exp2(tanh((u - 1.652)))) * x[(i + 2) % 5];
    return w;
}

static fz_pair s765_1(fz_pair p, double u)
{
    fz_pair r = { (sinh(tanh(p.hi)) + (u + p.hi)), cimag((((-(u))) + 0.5 * I) / (1.5 + tanh((1.849 > 0.73 ? p.lo : u)) + ((-(u))) * I)) };
    return r;
}

// @diff(f765_fwd: (dual, dual, dual, const) -> dual;
//       f765_rev: (dup, dup, active, const) -> active;
//       f765_fwd4: forward[4] (dual, dual, dual, const) -> dualonly;
//       f765_fwd4v: forward[4] (dualv, dualv, dualv, const) -> dualonly;
//       f765_rev4v: reverse[4] (dupv, dupv, active, const) -> active)
double f765(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    y[1] = log1p(exp(tanh(a)));
    y[4] += log10(2.0 + sin(b));
    y[1] += asinh((a + t3));
    if (atan2(asin(0.5 * tanh(x[0])), 2.0 + (fmin(t3, b)) * (fmin(t3, b))) > -0.33) { t1 = b; } else { { double *w = m765_0(((t3 * t2) > -0.70 ? t1 : t1), x, n); t2 = t2 * 0.5 + w[0] * w[2]; fz_free(w); } }
    y[0] = (double)(float)tanh(s765_1(fz_make(t3, a), t1).lo);
    y[0] *= tanh((sqrt(1.0 + (t2) * (t2)) + t1));
    return t0 + t1 * t2 - t3 + y[0];
}

__attribute__((noinline)) static double h766_0(double u, const double *x)
{
    return exp(tanh((double)(float)tanh(x[2])));
}

static double (*volatile ph766_0)(double, const double *) = h766_0;

// @diff(f766_fwd: (dual, dual, dual, const) -> dual;
//       f766_rev: (dup, dup, active, const) -> active;
//       f766_fwd4: forward[4] (dual, dual, dual, const) -> dualonly;
//       f766_fwd4v: forward[4] (dualv, dualv, dualv, const) -> dualonly;
//       f766_rev4v: reverse[4] (dupv, dupv, active, const) -> active)
double f766(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t0 = (-(ph766_0(sinh(tanh(y[0])), x)));
    y[3] = ((-(t0)) + exp(tanh(t0)));
    return t0 + t1 * t2 - t3 + y[0];
}

static double h767_0(double u, const double *x)
{
    return exp(tanh(u));
}

static double (*volatile ph767_0)(double, const double *) = h767_0;

// @diff(f767_fwd: (dual, dual, const, const) -> dual;
//       f767_rev: (dup, dup, const, const) -> active;
//       f767_fwd4: forward[4] (dual, dual, const, const) -> dualonly;
//       f767_fwd4v: forward[4] (dualv, dualv, const, const) -> dualonly;
//       f767_rev4v: reverse[4] (dupv, dupv, const, const) -> active)
double f767(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { int k = 0; while (k < 3 && a < 2.57) { y[0] += fmin(a, log1p(exp(tanh(a)))); k++; } }
    t2 = atan2(ph767_0((t1 - a), x), 2.0 + (t1) * (t1));
    if (log1p(exp(tanh((double)(float)tanh(a)))) > -0.08) { if (sinh(tanh((t1 - a))) > -0.17) { { double w[5]; for (int i = 0; i < n; i++) w[i] = t2; t1 = t1 * 0.5 + w[2] * w[1]; } } else { { double w[5]; for (int i = 0; i < n; i++) w[i] = (atan2(x[(i + 1) % 5], 2.0 + (y[3]) * (y[3])) / (1.5 + ((x[0] + t1)) * ((x[0] + t1)))); t2 = t2 * 0.5 + w[2] * w[0]; } } } else { for (int i = 0; i < n; i++) { t0 = t0 * pow(1.0 + (x[2]) * (x[2]), 1.5) + -1.236; t2 = (x[i] - (creal(ccos(0.5 * tanh(y[i]) + 0.3 * I)) > 0.74 ? atan(x[(i + 3) % 5]) : log(1.0 + (-0.510) * (-0.510)))); t0 = creal(((cimag((((t3 * y[2])) + 0.5 * I) / (1.5 + tanh((double)(float)tanh(x[i])) + ((t3 * y[2])) * I))) + (fmin(fmin(t0, x[(i + 3) % 5]), ((double)i / (1.5 + ((double)i) * ((double)i))))) * I) * ((fmin(fmin(t0, x[(i + 3) % 5]), ((double)i / (1.5 + ((double)i) * ((double)i))))) - 0.5 * I)); } }
    t3 = t3 * fmax(cimag(((a) + 0.5 * I) / (1.5 + tanh(x[2]) + (a) * I)), 1.026) + y[3];
    t3 = atan2(asinh(sqrt(1.0 + (a) * (a))), 2.0 + (creal(ccos(0.5 * tanh((x[3] > 0.62 ? t1 : t1)) + 0.3 * I))) * (creal(ccos(0.5 * tanh((x[3] > 0.62 ? t1 : t1)) + 0.3 * I))));
    return t0 + t1 * t2 - t3 + y[0];
}

// @diff(f768_fwd: (const, dual, const, dual) -> dual;
//       f768_rev: (const, dup, const, active) -> active;
//       f768_fwd4: forward[4] (const, dual, const, dual) -> dualonly;
//       f768_fwd4v: forward[4] (const, dualv, const, dualv) -> dualonly;
//       f768_rev4v: reverse[4] (const, dupv, const, active) -> active)
double f768(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t1 = t1 * ((-(-0.326)) - atan(x[1])) + t0;
    { int k = 0; while (k < 3 && hypot(0.965, 1.0 + a) < 1.43) { { float f = (float)tanh(b); t1 = t1 * 0.5 + (double)(f * f); } k++; } }
    y[1] *= tanh(-0.591);
    return t0 + t1 * t2 - t3 + y[0];
}

// @diff(f769_fwd: (dual, dual, dual, const) -> dual;
//       f769_rev: (dup, dup, active, const) -> active;
//       f769_fwd4: forward[4] (dual, dual, dual, const) -> dualonly;
//       f769_fwd4v: forward[4] (dualv, dualv, dualv, const) -> dualonly;
//       f769_rev4v: reverse[4] (dupv, dupv, active, const) -> active)
double f769(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    if ((-0.445 > 0.84 ? asin(0.5 * tanh(y[4])) : (b > 0.59 ? t3 : 0.688)) > -0.06) { { int k = 0; while (k < 3 && 1.166 < 1.74) { { double w[5]; for (int i = 0; i < n; i++) w[i] = ((x[i] - (double)i) > -0.94 ? atan2(a, 2.0 + (t1) * (t1)) : fmin(t2, x[i])); t0 = t0 * 0.5 + w[1] * w[0]; } k++; } } } else { if (t0 > 0.58) { { double w[5]; for (int i = 0; i < n; i++) w[i] = x[1]; t1 = t1 * 0.5 + w[2] * w[1]; } } else { y[0] *= tanh(x[4]); } }
    t1 = -1.848;
    if ((atan(1.918) / (1.5 + ((double)(float)tanh(t1)) * ((double)(float)tanh(t1)))) > 0.52) { { double w[5]; for (int i = 0; i < n; i++) w[i] = (x[i] - (double)(float)tanh(x[(i + 1) % 5])); t0 = t0 * 0.5 + w[3] * w[3]; } } else { for (int i = 0; i < n; i++) { t1 = fmax(hypot(log(1.0 + (a) * (a)), 1.0 + fmin(x[2], a)), x[i]); y[i] = (-(lgamma(2.0 + tanh(t0)))); y[i] += x[(i + 3) % 5]; } }
    return t0 + t1 * t2 - t3 + y[0];
}

static double *m770_0(double u, const double *x, int n)
{
    double *w = malloc(n * sizeof *w);
    for (int i = 0; i < n; i++)
        w[i] = ((cimag(csqrt(2.0 + tanh(-0.098) + I * (-0.098))) > 0.81 ? acos(0.5 * tanh(x[2])) : u)) * x[(i + 4) % 5];
    return w;
}

static double h770_1(double u, const double *x)
{
    return cos(lgamma(2.0 + tanh(x[4])));
}

static double (*volatile ph770_1)(double, const double *) = h770_1;

// @diff(f770_fwd: (const, dual, const, const) -> dual;
//       f770_rev: (const, dup, const, const) -> active;
//       f770_fwd4: forward[4] (const, dual, const, const) -> dualonly;
//       f770_fwd4v: forward[4] (const, dualv, const, const) -> dualonly;
//       f770_rev4v: reverse[4] (const, dupv, const, const) -> active)
double f770(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t1 = acosh(2.0 + ((-(t3))) * ((-(t3))));
    { double *w = m770_0(b, x, n); t3 = t3 * 0.5 + w[0] * w[1]; free(w); }
    for (int i = 0; i < 5; i++) { t3 = tgamma(1.5 + tanh((cimag(((t1) + 0.5 * I) / (1.5 + tanh(t0) + (t1) * I)) + sqrt(1.0 + (t0) * (t0))))); }
    { int k = 0; while (k < 3 && ph770_1(t3, x) < 1.67) { y[0] *= tanh(sqrt(1.0 + (cbrt(2.0 + tanh(t2))) * (cbrt(2.0 + tanh(t2))))); k++; } }
    t0 = -0.338;
    return t0 + t1 * t2 - t3 + y[0];
}

static double h771_0(double u, const double *x)
{
    return cbrt(2.0 + tanh(ldexp(x[1], 3)));
}

static double (*volatile ph771_0)(double, const double *) = h771_0;

// @diff(f771_fwd: (dual, dual, dual, const) -> dual;
//       f771_rev: (dup, dup, active, const) -> active;
//       f771_fwd4: forward[4] (dual, dual, dual, const) -> dualonly;
//       f771_fwd4v: forward[4] (dualv, dualv, dualv, const) -> dualonly;
//       f771_rev4v: reverse[4] (dupv, dupv, active, const) -> active)
double f771(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    if ((cimag(((-1.615) + 0.5 * I) / (1.5 + tanh(-0.381) + (-1.615) * I)) * t3) > -0.78) { y[3] = t1; } else { for (int i = 0; i < n; i++) { if (log1p(exp(tanh(-0.481))) > 0.64) break; t2 = atan2((double)(float)tanh(y[i]), 2.0 + ((double)(float)tanh(asin(0.5 * tanh(t1)))) * ((double)(float)tanh(asin(0.5 * tanh(t1))))); } }
    for (int i = 0; i < n; i++) { y[i] += (ph771_0(-0.625, x) * a); t2 = hypot((-(hypot(x[(i + 2) % 5], 1.0 + 1.600))), 1.0 + (t0 - (t1 - x[1]))); for (int j = 0; j <= i; j++) { if (log(1.0 + (a) * (a)) > 1.10) break; } }
    { float f = (float)tanh((cimag(((x[3]) + 0.5 * I) / (1.5 + tanh(a) + (x[3]) * I)) > 0.47 ? (t3 > 0.48 ? -0.598 : t2) : erfc(tanh(t3)))); t3 = t3 * 0.5 + (double)(f * f); }
    y[4] += (atan2(t3, 2.0 + (t2) * (t2)) + fmin(x[0], t0));
    for (int i = 0; i < n; i++) { t0 = (sin((t0 + (double)i)) > -0.91 ? y[i] : hypot(exp(tanh(t1)), 1.0 + asin(0.5 * tanh(-0.665)))); t1 = (double)i; if (atanh(0.5 * tanh((t1 * t1))) > 0.67) { if ((x[1] > 0.96 ? (double)i : x[3]) > 0.83) break; } else { if (asin(0.5 * tanh(t3)) > 1.38) break; } }
    for (int i = 0; i < n; i++) { for (int j = 0; j < n; j++) { if ((double)(float)tanh(y[i]) > 0.87) break; if ((x[i] + x[(i + 4) % 5]) > 0.58) break; } { float f = (float)tanh(atanh(0.5 * tanh(atanh(0.5 * tanh(b))))); t1 = t1 * 0.5 + (double)(f * f); } }
    return t0 + t1 * t2 - t3 + y[0];
}

// @diff(f772_fwd: (const, dual, dual, dual) -> dual;
//       f772_rev: (const, dup, active, active) -> active;
//       f772_fwd4: forward[4] (const, dual, dual, dual) -> dualonly;
//       f772_fwd4v: forward[4] (const, dualv, dualv, dualv) -> dualonly;
//       f772_rev4v: reverse[4] (const, dupv, active, active) -> active)
double f772(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < 5; i++) { y[i] = creal((((double)(float)tanh(t3)) + (atan2(1.508, 2.0 + (x[3]) * (x[3]))) * I) * ((atan2(1.508, 2.0 + (x[3]) * (x[3]))) - 0.5 * I)); t3 = a; { float f = (float)tanh((b > 0.81 ? atanh(0.5 * tanh(x[(i + 4) % 5])) : y[i])); t3 = t3 * 0.5 + (double)(f * f); } }
    if (atan2((t0 / (1.5 + (t3) * (t3))), 2.0 + (t2) * (t2)) > -0.61) { if (creal(((cimag(((x[1]) + 0.5 * I) / (1.5 + tanh(t3) + (x[1]) * I))) + (hypot(x[4], 1.0 + y[0])) * I) * ((hypot(x[4], 1.0 + y[0])) - 0.5 * I)) > 0.90) { t3 = acos(0.5 * tanh(t0)); } else { t0 = atan(erfc(tanh(cimag(conj((t1) + 2.0 * I) * (0.5 - (t1) * I))))); } } else { t1 = ((hypot(b, 1.0 + t0) > -0.63 ? (a / (1.5 + (t2) * (t2))) : (-(t2))) - (a / (1.5 + ((double)(float)tanh(t1)) * ((double)(float)tanh(t1))))); }
    for (int i = 0; i < n; i++) { t3 = ((-(b)) > -0.22 ? (-(atan2(y[i], 2.0 + (b) * (b)))) : (double)i); y[2] += x[i]; t0 = cosh(tanh((sqrt(1.0 + (b) * (b)) / (1.5 + ((b > -0.60 ? (double)i : t3)) * ((b > -0.60 ? (double)i : t3)))))); }
    if ((b / (1.5 + (b) * (b))) > 0.78) { { double *w = NULL; for (int i = 0; i < n; i++) { w = realloc(w, (i + 1) * sizeof *w); w[i] = sinh(tanh(expm1(tanh(y[i])))); } t2 = t2 * 0.5 + w[1] * w[2]; fz_free(w); } } else { y[1] = (-(asinh(-1.455))); }
    { int k = 0; while (k < 3 && y[0] < 1.48) { if ((double)(float)tanh((t0 + b)) > -0.97) { { double w[5]; for (int i = 0; i < n; i++) w[i] = asinh((-1.481 / (1.5 + (y[i]) * (y[i])))); t1 = t1 * 0.5 + w[2] * w[0]; } } else { { double w[5]; for (int i = 0; i < n; i++) w[i] = x[(i + 2) % 5]; t2 = t2 * 0.5 + w[3] * w[3]; } } k++; } }
    t1 = t1 * ((double)(float)tanh(b) * expm1(tanh(a))) + -0.183;
    return t0 + t1 * t2 - t3 + y[0];
}

__attribute__((noinline)) static fz_pair s773_0(fz_pair p, double u)
{
    fz_pair r = { atan2(atanh(0.5 * tanh(p.lo)), 2.0 + (u) * (u)), (double)(float)tanh(p.lo) };
    return r;
}

// @diff(f773_fwd: (dual, dual, dual, dual) -> dual;
//       f773_rev: (dup, dup, active, active) -> active;
//       f773_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f773_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f773_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f773(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    y[1] = t3;
    for (int i = 0; i < n; i++) { t0 = (double)(float)tanh(((double)(float)tanh(-0.706) * y[i])); if (s773_0(fz_make(t2, x[3]), (double)i).hi > 1.28) break; }
    return t0 + t1 * t2 - t3 + y[0];
}

static fz_pair s774_0(fz_pair p, double u)
{
    fz_pair r = { pow(1.0 + (1.157) * (1.157), 1.5), p.hi };
    return r;
}

__attribute__((noinline)) static double *m774_1(double u, const double *x, int n)
{
    double *w = malloc(n * sizeof *w);
    for (int i = 0; i < n; i++)
        w[i] = (cimag(conj(((double)(float)tanh(u)) + 2.0 * I) * (0.5 - ((double)(float)tanh(u)) * I))) * x[(i + 2) % 5];
    return w;
}

// @diff(f774_fwd: (dual, dual, const, const) -> dual;
//       f774_rev: (dup, dup, const, const) -> active;
//       f774_fwd4: forward[4] (dual, dual, const, const) -> dualonly;
//       f774_fwd4v: forward[4] (dualv, dualv, const, const) -> dualonly;
//       f774_rev4v: reverse[4] (dupv, dupv, const, const) -> active)
double f774(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { int k = 0; while (k < 3 && exp2(tanh(b)) < 0.62) { t0 = x[2]; k++; } }
    t3 = fmax(y[2], ((-(t3)) / (1.5 + (atanh(0.5 * tanh(t3))) * (atanh(0.5 * tanh(t3))))));
    t3 = exp(tanh(atanh(0.5 * tanh(y[2]))));
    if ((creal(cpow(1.5 + 0.2 * I, tanh(t3) + 0.3 * I)) > -0.82 ? creal(((t0) + (t0) * I) * ((t0) - 0.5 * I)) : s774_0(fz_make(t3, b), t0).lo) > 0.22) { if (cimag(((fmax(a, t0)) + 0.5 * I) / (1.5 + tanh(tanh(a)) + (fmax(a, t0)) * I)) > -0.67) { t1 = y[1]; } else { y[0] = y[1]; } } else { y[2] = (-0.768 / (1.5 + (y[0]) * (y[0]))); }
    { double *w = m774_1(exp2(tanh(pow(1.0 + (a) * (a), 1.5))), x, n); t3 = t3 * 0.5 + w[4] * w[1]; free(w); }
    y[1] = (-(-0.925));
    return t0 + t1 * t2 - t3 + y[0];
}

__attribute__((noinline)) static fz_pair s775_0(fz_pair p, double u)
{
    fz_pair r = { erfc(tanh(atan2(-0.472, 2.0 + (p.hi) * (p.hi)))), p.lo };
    return r;
}

// @diff(f775_fwd: (dual, dual, dual, dual) -> dual;
//       f775_rev: (dup, dup, active, active) -> active;
//       f775_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f775_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f775_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f775(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    if (exp2(tanh((-(t1)))) > 0.04) { y[0] += cosh(tanh(t0)); } else { for (int i = 0; i < 5; i++) { t2 = x[i]; if (x[i] > 1.15) break; if ((t3 + -1.024) > 1.26) break; } }
    for (int i = 0; i < n; i++) { { float f = (float)tanh(-0.604); t0 = t0 * 0.5 + (double)(f * f); } }
    { double w[5]; for (int i = 0; i < n; i++) w[i] = s775_0(fz_make(exp(tanh(b)), (-(t3))), fmin(y[2], -0.077)).hi; t3 = t3 * 0.5 + w[1] * w[4]; }
    t3 = t3 * (-(y[3])) + b;
    for (int i = 0; i < 5; i++) { { float f = (float)tanh(t0); t0 = t0 * 0.5 + (double)(f * f); } }
    return t0 + t1 * t2 - t3 + y[0];
}

static double h776_0(double u, const double *x)
{
    return ((-0.735 > -0.44 ? x[1] : 1.858) * exp2(tanh(x[0])));
}

// @diff(f776_fwd: (dual, dual, dual, dual) -> dual;
//       f776_rev: (dup, dup, active, active) -> active;
//       f776_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f776_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f776_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f776(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { int k = 0; while (k < 3 && fmin(x[2], t0) < 2.75) { y[0] *= tanh(t1); k++; } }
    if (h776_0(creal(((t1) + (t2) * I) * ((t2) - 0.5 * I)), x) > 0.12) { if ((a * atan2(-0.428, 2.0 + (t0) * (t0))) > 0.75) { t3 = cabs(((fmin(t1, -1.173) > -0.95 ? cimag(csqrt(2.0 + tanh(a) + I * (a))) : y[2])) + 0.5 * I); } else { t3 = t3 * a + x[0]; } } else { { int k = 0; while (k < 3 && (a > 0.04 ? t1 : b) < 2.00) { { double w[5]; for (int i = 0; i < n; i++) w[i] = tanh(asin(0.5 * tanh(x[1]))); t0 = t0 * 0.5 + w[2] * w[2]; } k++; } } }
    t2 = acosh(2.0 + ((log(1.0 + (-1.486) * (-1.486)) * 0.516)) * ((log(1.0 + (-1.486) * (-1.486)) * 0.516)));
    return t0 + t1 * t2 - t3 + y[0];
}

// @diff(f777_fwd: (dual, dual, dual, dual) -> dual;
//       f777_rev: (dup, dup, active, active) -> active;
//       f777_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f777_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f777_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f777(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { double w[5]; for (int i = 0; i < n; i++) w[i] = (t3 / (1.5 + ((-(t0))) * ((-(t0))))); t1 = t1 * 0.5 + w[3] * w[0]; }
    y[2] *= tanh(fmin(cosh(tanh(y[2])), y[1]));
    t3 = fmax(acosh(2.0 + ((double)(float)tanh(x[0])) * ((double)(float)tanh(x[0]))), t1);
    y[0] *= tanh(t1);
    y[2] += t2;
    return t0 + t1 * t2 - t3 + y[0];
}

static fz_pair s778_0(fz_pair p, double u)
{
    fz_pair r = { p.lo, p.lo };
    return r;
}

// @diff(f778_fwd: (dual, dual, dual, dual) -> dual;
//       f778_rev: (dup, dup, active, active) -> active;
//       f778_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f778_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f778_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f778(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t2 = s778_0(fz_make(atan2(t3, 2.0 + (log1p(exp(tanh(y[4])))) * (log1p(exp(tanh(y[4]))))), t3), log(1.0 + ((double)(float)tanh(b)) * ((double)(float)tanh(b)))).hi;
    { float f = (float)tanh(sin(asinh(b))); t2 = t2 * 0.5 + (double)(f * f); }
    for (int i = 0; i < n; i++) { if (t1 > 1.08) break; }
    return t0 + t1 * t2 - t3 + y[0];
}

// @diff(f779_fwd: (dual, dual, dual, dual) -> dual;
//       f779_rev: (dup, dup, active, active) -> active;
//       f779_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f779_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f779_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f779(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t2 = t2 * fmin(a, atan2(t0, 2.0 + (t0) * (t0))) + a;
    t3 = t3 * pow(1.0 + ((-(a))) * ((-(a))), 1.5) + t0;
    { int k = 0; while (k < 3 && fmax(t3, t2) < 1.57) { t2 = t2 * (-((t1 - t1))) + t2; k++; } }
    { float f = (float)tanh(atan2(t3, 2.0 + ((t1 + x[4])) * ((t1 + x[4])))); t1 = t1 * 0.5 + (double)(f * f); }
    t2 = cos(b);
    return t0 + t1 * t2 - t3 + y[0];
}

static fz_pair s780_0(fz_pair p, double u)
{
    fz_pair r = { (u - atan(1.519)), fmax((p.lo / (1.5 + (p.lo) * (p.lo))), (-(-1.597))) };
    return r;
}

__attribute__((noinline)) static double h780_1(double u, const double *x)
{
    return (tanh(u) > -0.53 ? (double)(float)tanh(u) : x[3]);
}

// @diff(f780_fwd: (const, dual, dual, dual) -> dual;
//       f780_rev: (const, dup, active, active) -> active;
//       f780_fwd4: forward[4] (const, dual, dual, dual) -> dualonly;
//       f780_fwd4v: forward[4] (const, dualv, dualv, dualv) -> dualonly;
//       f780_rev4v: reverse[4] (const, dupv, active, active) -> active)
double f780(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t2 = b;
    for (int i = 0; i < n; i++) { t1 = s780_0(fz_make((-(x[i])), hypot(b, 1.0 + cos(a))), t0).lo; if (((1.222 > -0.36 ? x[i] : x[(i + 4) % 5]) / (1.5 + (cbrt(2.0 + tanh(t1))) * (cbrt(2.0 + tanh(t1))))) > 0.45) { { float f = (float)tanh((double)(float)tanh((t3 - x[(i + 2) % 5]))); t0 = t0 * 0.5 + (double)(f * f); } } else { t1 = hypot(((x[i] * 0.342) > 0.28 ? (y[0] - x[3]) : (0.494 - t1)), 1.0 + atan2((-0.788 / (1.5 + (b) * (b))), 2.0 + (fmax(x[2], y[4])) * (fmax(x[2], y[4])))); } t3 = h780_1(sinh(tanh(log2(2.0 + tanh(t3)))), x); }
    for (int i = 0; i < n; i++) { t0 = x[(i + 1) % 5]; }
    t3 = log2(2.0 + tanh(1.553));
    y[0] = (b > -0.37 ? tgamma(1.5 + tanh(x[1])) : (-(y[3])));
    return t0 + t1 * t2 - t3 + y[0];
}

static fz_pair s781_0(fz_pair p, double u)
{
    fz_pair r = { hypot(p.hi, 1.0 + p.hi), (fmin(u, u) > -0.46 ? exp(tanh(u)) : atan2(u, 2.0 + (p.hi) * (p.hi))) };
    return r;
}

static fz_pair s781_1(fz_pair p, double u)
{
    fz_pair r = { p.lo, (acos(0.5 * tanh(0.487)) * (p.hi > -0.39 ? p.lo : u)) };
    return r;
}

// @diff(f781_fwd: (dual, dual, dual, dual) -> dual;
//       f781_rev: (dup, dup, active, active) -> active;
//       f781_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f781_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f781_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f781(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < n; i++) { { float f = (float)tanh(x[3]); t1 = t1 * 0.5 + (double)(f * f); } }
    { double *w = NULL; for (int i = 0; i < n; i++) { w = realloc(w, (i + 1) * sizeof *w); w[i] = s781_0(fz_make((t1 * t0), (t2 > 0.16 ? y[0] : t3)), sinh(tanh(x[(i + 2) % 5]))).hi; } t2 = t2 * 0.5 + w[3] * w[2]; fz_free(w); }
    t2 = atan2(t0, 2.0 + (b) * (b));
    y[0] *= tanh(((t3 > -0.43 ? b : t2) > 0.26 ? (-(x[3])) : fmin(y[1], 1.139)));
    t1 = cimag(((t3) + 0.5 * I) / (1.5 + tanh(s781_1(fz_make((x[2] > -0.88 ? b : y[0]), t1), (t3 > -0.38 ? t3 : t0)).hi) + (t3) * I));
    return t0 + t1 * t2 - t3 + y[0];
}

__attribute__((noinline)) static double h782_0(double u, const double *x)
{
    return -0.032;
}

// @diff(f782_fwd: (dual, dual, dual, dual) -> dual;
//       f782_rev: (dup, dup, active, active) -> active;
//       f782_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f782_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f782_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f782(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t2 = t2 * hypot((t2 > -0.71 ? a : t2), 1.0 + atan2(b, 2.0 + (a) * (a))) + a;
    { int k = 0; while (k < 3 && t3 < 1.90) { if ((expm1(tanh(t0)) * 1.024) > 0.82) { { double w[5]; for (int i = 0; i < n; i++) w[i] = b; t3 = t3 * 0.5 + w[4] * w[1]; } } else { { double w[5]; for (int i = 0; i < n; i++) w[i] = acosh(2.0 + (atan2(0.350, 2.0 + (x[(i + 3) % 5]) * (x[(i + 3) % 5]))) * (atan2(0.350, 2.0 + (x[(i + 3) % 5]) * (x[(i + 3) % 5])))); t1 = t1 * 0.5 + w[3] * w[3]; } } k++; } }
    t2 = ((exp(tanh(y[0])) - (double)(float)tanh(t3)) + (double)(float)tanh(h782_0(b, x)));
    { double w[5]; for (int i = 0; i < n; i++) w[i] = t0; t3 = t3 * 0.5 + w[4] * w[1]; }
    { double *w = NULL; for (int i = 0; i < n; i++) { w = realloc(w, (i + 1) * sizeof *w); w[i] = 1.915; } t0 = t0 * 0.5 + w[0] * w[3]; fz_free(w); }
    if ((cosh(tanh(t1)) / (1.5 + (fmax(y[0], b)) * (fmax(y[0], b)))) > 0.23) { y[4] *= tanh(cimag((((x[1] > -0.89 ? t2 : y[4])) + 0.5 * I) / (1.5 + tanh(cos(t3)) + ((x[1] > -0.89 ? t2 : y[4])) * I))); } else { { float f = (float)tanh(t2); t2 = t2 * 0.5 + (double)(f * f); } }
    return t0 + t1 * t2 - t3 + y[0];
}

static double h783_0(double u, const double *x)
{
    return (asin(0.5 * tanh(u)) > 0.49 ? cimag(((u) + 0.5 * I) / (1.5 + tanh(x[2]) + (u) * I)) : (u / (1.5 + (x[2]) * (x[2]))));
}

static double (*volatile ph783_0)(double, const double *) = h783_0;

// @diff(f783_fwd: (const, dual, dual, dual) -> dual;
//       f783_rev: (const, dup, active, active) -> active;
//       f783_fwd4: forward[4] (const, dual, dual, dual) -> dualonly;
//       f783_fwd4v: forward[4] (const, dualv, dualv, dualv) -> dualonly;
//       f783_rev4v: reverse[4] (const, dupv, active, active) -> active)
double f783(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t1 = t1 * exp2(tanh(ph783_0(t2, x))) + b;
    for (int i = 0; i < n; i++) { if (x[i] > 0.10) { t3 = atan2(y[3], 2.0 + (atan2(fmin(t3, (double)i), 2.0 + ((b * y[i])) * ((b * y[i])))) * (atan2(fmin(t3, (double)i), 2.0 + ((b * y[i])) * ((b * y[i]))))); } else { if (((double)i > -0.59 ? t1 : t1) > 1.30) break; } }
    if ((fmax(t1, b) > 0.40 ? fmin(t2, t3) : y[3]) > -0.41) { if ((-(erfc(tanh(t3)))) > -0.03) { { double w[5]; for (int i = 0; i < n; i++) w[i] = (pow(1.0 + (b) * (b), 1.5) / (1.5 + ((b + y[i])) * ((b + y[i])))); t2 = t2 * 0.5 + w[0] * w[4]; } } else { t0 = asinh((y[1] > 0.38 ? hypot(x[0], 1.0 + a) : cimag(conj((t1) + 2.0 * I) * (0.5 - (t1) * I)))); } } else { for (int i = 0; i < n; i++) { t2 = log1p(exp(tanh(acosh(2.0 + (creal(((y[1]) + (t3) * I) * ((t3) - 0.5 * I))) * (creal(((y[1]) + (t3) * I) * ((t3) - 0.5 * I))))))); y[2] = t1; if (sinh(tanh(x[(i + 4) % 5])) > 0.82) break; } }
    t2 = t3;
    { int k = 0; while (k < 3 && (-(t1)) < 2.53) { t1 = (lgamma(2.0 + tanh(b)) > 0.85 ? ((a > 0.12 ? x[3] : t0) - cimag(csin((t2) + 0.5 * I))) : fmax(cbrt(2.0 + tanh(t0)), atan2(x[3], 2.0 + (t0) * (t0)))); k++; } }
    t1 = (1.149 > -0.59 ? b : ((-(t3)) > -0.08 ? (a / (1.5 + (t2) * (t2))) : log10(2.0 + sin(0.398))));
    return t0 + t1 * t2 - t3 + y[0];
}

__attribute__((noinline)) static double h784_0(double u, const double *x)
{
    return acosh(2.0 + ((u - -0.383)) * ((u - -0.383)));
}

static fz_pair s784_1(fz_pair p, double u)
{
    fz_pair r = { (-((double)(float)tanh(p.lo))), p.hi };
    return r;
}

// @diff(f784_fwd: (const, dual, const, dual) -> dual;
//       f784_rev: (const, dup, const, active) -> active;
//       f784_fwd4: forward[4] (const, dual, const, dual) -> dualonly;
//       f784_fwd4v: forward[4] (const, dualv, const, dualv) -> dualonly;
//       f784_rev4v: reverse[4] (const, dupv, const, active) -> active)
double f784(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t1 = creal(cexp((((b * t2) / (1.5 + (t0) * (t0)))) * I) * (1.0 + 0.5 * I));
    { double w[5]; for (int i = 0; i < n; i++) w[i] = lgamma(2.0 + tanh(a)); t3 = t3 * 0.5 + w[4] * w[2]; }
    for (int i = 0; i < n; i++) { for (int j = 0; j < 5; j++) { y[0] = x[j]; y[j] = (-((x[4] > -0.57 ? x[j] : -0.806))); } { float f = (float)tanh(((-(t0)) + cabs((t0) + 0.5 * I))); t1 = t1 * 0.5 + (double)(f * f); } }
    if (log10(2.0 + sin((b + y[1]))) > 0.41) { for (int i = 0; i < 5; i++) { t2 = -1.658; { float f = (float)tanh(x[i]); t2 = t2 * 0.5 + (double)(f * f); } } } else { { float f = (float)tanh(sqrt(1.0 + (cimag(((y[3]) + 0.5 * I) / (1.5 + tanh(t0) + (y[3]) * I))) * (cimag(((y[3]) + 0.5 * I) / (1.5 + tanh(t0) + (y[3]) * I))))); t0 = t0 * 0.5 + (double)(f * f); } }
    t2 = (cimag(csin((fmin(t0, x[3])) + 0.5 * I)) > 0.86 ? y[3] : lgamma(2.0 + tanh(h784_0(t1, x))));
    for (int i = 0; i < 5; i++) { y[i] *= tanh((-1.163 > -0.40 ? (t0 > -0.85 ? t0 : 0.836) : s784_1(fz_make((double)i, x[2]), (double)i).lo)); { float f = (float)tanh((erfc(tanh((double)i)) / (1.5 + (carg(2.0 + ((double)i) * I)) * (carg(2.0 + ((double)i) * I))))); t1 = t1 * 0.5 + (double)(f * f); } t0 = t0 * ((double)i - acosh(2.0 + (t0) * (t0))) + y[4]; }
    return t0 + t1 * t2 - t3 + y[0];
}

static double *m785_0(double u, const double *x, int n)
{
    double *w = malloc(n * sizeof *w);
    for (int i = 0; i < n; i++)
        w[i] = ((-(hypot(u, 1.0 + u)))) * x[(i + 1) % 5];
    return w;
}

// @diff(f785_fwd: (const, dual, dual, dual) -> dual;
//       f785_rev: (const, dup, active, active) -> active;
//       f785_fwd4: forward[4] (const, dual, dual, dual) -> dualonly;
//       f785_fwd4v: forward[4] (const, dualv, dualv, dualv) -> dualonly;
//       f785_rev4v: reverse[4] (const, dupv, active, active) -> active)
double f785(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t1 = erf(atan((x[1] / (1.5 + (t0) * (t0)))));
    for (int i = 0; i < n; i++) { { float f = (float)tanh(fmax((-(t3)), atan(b))); t0 = t0 * 0.5 + (double)(f * f); } }
    { double *w = m785_0(erfc(tanh(expm1(tanh(b)))), x, n); t0 = t0 * 0.5 + w[4] * w[4]; free(w); }
    for (int i = 0; i < n; i++) { { float f = (float)tanh((cosh(tanh(a)) * y[2])); t2 = t2 * 0.5 + (double)(f * f); } }
    return t0 + t1 * t2 - t3 + y[0];
}

static fz_pair s786_0(fz_pair p, double u)
{
    fz_pair r = { hypot(fmin(u, -1.336), 1.0 + (p.lo > -0.01 ? 1.576 : 0.046)), (-1.912 + cosh(tanh(u))) };
    return r;
}

__attribute__((noinline)) static double h786_1(double u, const double *x)
{
    return fmin((-(x[3])), x[4]);
}

static double (*volatile ph786_1)(double, const double *) = h786_1;

// @diff(f786_fwd: (dual, dual, const, const) -> dual;
//       f786_rev: (dup, dup, const, const) -> active;
//       f786_fwd4: forward[4] (dual, dual, const, const) -> dualonly;
//       f786_fwd4v: forward[4] (dualv, dualv, const, const) -> dualonly;
//       f786_rev4v: reverse[4] (dupv, dupv, const, const) -> active)
double f786(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    y[1] += ((-(t2)) * (y[4] > -0.92 ? t3 : t0));
    t3 = s786_0(fz_make(ph786_1(fmax(t2, x[4]), x), y[3]), fmin(y[0], t0)).lo;
    { int k = 0; while (k < 3 && cosh(tanh(t3)) < 0.92) { y[1] *= tanh(fmax(t3, erfc(tanh(t0)))); k++; } }
    t3 = t3 * (t1 / (1.5 + (fmax(x[4], t0)) * (fmax(x[4], t0)))) + 0.199;
    y[0] *= tanh((double)(float)tanh((-(1.910))));
    if ((t0 > 0.57 ? y[4] : cimag(((x[1]) + 0.5 * I) / (1.5 + tanh(x[3]) + (x[1]) * I))) > 0.36) { for (int i = 0; i < n; i++) { if ((b + (double)i) > 0.96) break; if (carg(2.0 + (x[(i + 1) % 5]) * I) > 0.98) break; { float f = (float)tanh(erfc(tanh((y[0] + 0.303)))); t1 = t1 * 0.5 + (double)(f * f); } } } else { t0 = cimag((((x[0] / (1.5 + ((double)(float)tanh(t1)) * ((double)(float)tanh(t1))))) + 0.5 * I) / (1.5 + tanh(t2) + ((x[0] / (1.5 + ((double)(float)tanh(t1)) * ((double)(float)tanh(t1))))) * I)); }
    return t0 + t1 * t2 - t3 + y[0];
}

__attribute__((noinline)) static double h787_0(double u, const double *x)
{
    return x[4];
}

static fz_pair s787_1(fz_pair p, double u)
{
    fz_pair r = { (-(hypot(p.lo, 1.0 + 0.374))), fmin((p.lo > 0.50 ? -0.571 : 1.940), u) };
    return r;
}

// @diff(f787_fwd: (dual, dual, dual, const) -> dual;
//       f787_rev: (dup, dup, active, const) -> active;
//       f787_fwd4: forward[4] (dual, dual, dual, const) -> dualonly;
//       f787_fwd4v: forward[4] (dualv, dualv, dualv, const) -> dualonly;
//       f787_rev4v: reverse[4] (dupv, dupv, active, const) -> active)
double f787(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    y[0] += (fmax(x[0], t0) + (-(t3)));
    y[0] = log2(2.0 + tanh(h787_0(t0, x)));
    { double w[5]; for (int i = 0; i < n; i++) w[i] = (-((-0.425 * (double)i))); t1 = t1 * 0.5 + w[1] * w[0]; }
    for (int i = 0; i < n; i++) { for (int j = 0; j < n; j++) { t1 = t1 * (-(tanh(t1))) + (double)j; if ((-(a)) > 1.27) break; } if (a > 1.25) break; for (int j = 0; j < 5; j++) { t1 = b; { float f = (float)tanh(y[4]); t3 = t3 * 0.5 + (double)(f * f); } } }
    t1 = s787_1(fz_make(b, asinh(t0)), a).lo;
    return t0 + t1 * t2 - t3 + y[0];
}

// @diff(f788_fwd: (dual, dual, const, const) -> dual;
//       f788_rev: (dup, dup, const, const) -> active;
//       f788_fwd4: forward[4] (dual, dual, const, const) -> dualonly;
//       f788_fwd4v: forward[4] (dualv, dualv, const, const) -> dualonly;
//       f788_rev4v: reverse[4] (dupv, dupv, const, const) -> active)
double f788(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < n; i++) { y[0] += cimag(conj((tgamma(1.5 + tanh(b))) + 2.0 * I) * (0.5 - (tgamma(1.5 + tanh(b))) * I)); }
    { int k = 0; while (k < 3 && expm1(tanh(y[4])) < 1.38) { for (int i = 0; i < n; i++) { y[i] *= tanh(cbrt(2.0 + tanh(hypot(t2, 1.0 + a)))); if (x[(i + 3) % 5] > 1.25) break; t2 = t2 * y[1] + t3; } k++; } }
    y[3] += hypot((double)(float)tanh(t0), 1.0 + a);
    return t0 + t1 * t2 - t3 + y[0];
}

static fz_pair s789_0(fz_pair p, double u)
{
    fz_pair r = { atan2(u, 2.0 + (ldexp(p.hi, 3)) * (ldexp(p.hi, 3))), (double)(float)tanh(creal(((p.lo) + (p.lo) * I) * ((p.lo) - 0.5 * I))) };
    return r;
}

static double h789_1(double u, const double *x)
{
    return creal(((0.470) + (sin(u)) * I) * ((sin(u)) - 0.5 * I));
}

// @diff(f789_fwd: (dual, dual, const, const) -> dual;
//       f789_rev: (dup, dup, const, const) -> active;
//       f789_fwd4: forward[4] (dual, dual, const, const) -> dualonly;
//       f789_fwd4v: forward[4] (dualv, dualv, const, const) -> dualonly;
//       f789_rev4v: reverse[4] (dupv, dupv, const, const) -> active)
double f789(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t0 = asin(0.5 * tanh(sqrt(1.0 + (s789_0(fz_make(t3, a), t1).lo) * (s789_0(fz_make(t3, a), t1).lo))));
    if ((lgamma(2.0 + tanh(y[2])) > -0.97 ? atan2(1.528, 2.0 + (t1) * (t1)) : hypot(t1, 1.0 + x[0])) > 0.46) { for (int i = 0; i < n; i++) { t3 = x[i]; if ((0.958 * (double)i) > 1.45) break; t3 = fmax((double)(float)tanh(t3), tgamma(1.5 + tanh(h789_1(x[(i + 2) % 5], x)))); } } else { if (ldexp(ldexp(t0, 3), 3) > -0.54) { { double w[5]; for (int i = 0; i < n; i++) w[i] = log1p(exp(tanh((t0 > 0.44 ? t3 : x[4])))); t3 = t3 * 0.5 + w[3] * w[1]; } } else { { double w[5]; for (int i = 0; i < n; i++) w[i] = creal(ccos(0.5 * tanh(exp2(tanh(y[0]))) + 0.3 * I)); t1 = t1 * 0.5 + w[2] * w[0]; } } }
    t1 = t1 * (acosh(2.0 + (b) * (b)) - (-(0.455))) + y[3];
    t2 = (-((t1 > 0.11 ? sin(t2) : (-(a)))));
    { double w[5]; for (int i = 0; i < n; i++) w[i] = tgamma(1.5 + tanh(t1)); t0 = t0 * 0.5 + w[0] * w[4]; }
    t2 = b;
    return t0 + t1 * t2 - t3 + y[0];
}

__attribute__((noinline)) static double h790_0(double u, const double *x)
{
    return erfc(tanh(u));
}

static double (*volatile ph790_0)(double, const double *) = h790_0;

// @diff(f790_fwd: (dual, dual, dual, const) -> dual;
//       f790_rev: (dup, dup, active, const) -> active;
//       f790_fwd4: forward[4] (dual, dual, dual, const) -> dualonly;
//       f790_fwd4v: forward[4] (dualv, dualv, dualv, const) -> dualonly;
//       f790_rev4v: reverse[4] (dupv, dupv, active, const) -> active)
double f790(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t1 = t1 * ph790_0(fmax(1.146, a), x) + x[4];
    y[0] = 1.745;
    return t0 + t1 * t2 - t3 + y[0];
}

// @diff(f791_fwd: (const, dual, dual, dual) -> dual;
//       f791_rev: (const, dup, active, active) -> active;
//       f791_fwd4: forward[4] (const, dual, dual, dual) -> dualonly;
//       f791_fwd4v: forward[4] (const, dualv, dualv, dualv) -> dualonly;
//       f791_rev4v: reverse[4] (const, dupv, active, active) -> active)
double f791(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < 5; i++) { for (int j = 0; j < 5; j++) { if (fmax(x[(i + 1) % 5], x[4]) > 0.85) break; } t3 = atan2(sin(log1p(exp(tanh(t3)))), 2.0 + ((double)i) * ((double)i)); }
    if (fmax(fmax(t0, x[1]), a) > 0.50) { for (int i = 0; i < 5; i++) { { float f = (float)tanh((double)(float)tanh(asin(0.5 * tanh(t3)))); t3 = t3 * 0.5 + (double)(f * f); } } } else { t3 = fmin((-(atan2(y[3], 2.0 + (t1) * (t1)))), t3); }
    if (((y[0] * t3) / (1.5 + (hypot(t1, 1.0 + b)) * (hypot(t1, 1.0 + b)))) > -0.50) { t3 = (asin(0.5 * tanh((-(y[4])))) - (double)(float)tanh(t3)); } else { y[4] = t0; }
    return t0 + t1 * t2 - t3 + y[0];
}

__attribute__((noinline)) static double *m792_0(double u, const double *x, int n)
{
    double *w = malloc(n * sizeof *w);
    for (int i = 0; i < n; i++)
        w[i] = (-0.435) * x[(i + 4) % 5];
    return w;
}

__attribute__((noinline)) static fz_pair s792_1(fz_pair p, double u)
{
    fz_pair r = { u, creal((((u + p.hi)) + ((double)(float)tanh(p.hi)) * I) * (((double)(float)tanh(p.hi)) - 0.5 * I)) };
    return r;
}

// @diff(f792_fwd: (dual, dual, dual, dual) -> dual;
//       f792_rev: (dup, dup, active, active) -> active;
//       f792_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f792_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f792_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f792(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { double w[5]; for (int i = 0; i < n; i++) w[i] = log1p(exp(tanh((double)(float)tanh(x[0])))); t0 = t0 * 0.5 + w[1] * w[3]; }
    { double *w = m792_0(atan2((a * t2), 2.0 + ((double)(float)tanh(-0.402)) * ((double)(float)tanh(-0.402))), x, n); t2 = t2 * 0.5 + w[4] * w[2]; fz_free(w); }
    t1 = t1 * x[4] + b;
    t1 = cabs((s792_1(fz_make((t3 / (1.5 + (t1) * (t1))), acosh(2.0 + (0.225) * (0.225))), (a * t2)).hi) + 0.5 * I);
    return t0 + t1 * t2 - t3 + y[0];
}

static double h793_0(double u, const double *x)
{
    return (-(creal(((u) + (x[0]) * I) * ((x[0]) - 0.5 * I))));
}

static double (*volatile ph793_0)(double, const double *) = h793_0;

static double *m793_2(double u, const double *x, int n)
{
    double *w = malloc(n * sizeof *w);
    for (int i = 0; i < n; i++)
        w[i] = (x[2]) * x[(i + 1) % 5];
    return w;
}

// @diff(f793_fwd: (const, dual, dual, dual) -> dual;
//       f793_rev: (const, dup, active, active) -> active;
//       f793_fwd4: forward[4] (const, dual, dual, dual) -> dualonly;
//       f793_fwd4v: forward[4] (const, dualv, dualv, dualv) -> dualonly;
//       f793_rev4v: reverse[4] (const, dupv, active, active) -> active)
double f793(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    if (b > 0.51) { t1 = (-(cimag(conj((atan(t1)) + 2.0 * I) * (0.5 - (atan(t1)) * I)))); } else { if (creal(((log1p(exp(tanh(b)))) + ((t2 > 0.52 ? y[3] : -0.995)) * I) * (((t2 > 0.52 ? y[3] : -0.995)) - 0.5 * I)) > -0.35) { { double w[5]; for (int i = 0; i < n; i++) w[i] = ((double)(float)tanh(t0) / (1.5 + (atan2(t0, 2.0 + (y[0]) * (y[0]))) * (atan2(t0, 2.0 + (y[0]) * (y[0]))))); t2 = t2 * 0.5 + w[0] * w[4]; } } else { t1 = t1 * x[2] + t1; } }
    for (int i = 0; i < n; i++) { t0 = cosh(tanh(ph793_0(y[i], x))); for (int j = 0; j <= i; j++) { t2 = (tgamma(1.5 + tanh(atan2(t2, 2.0 + (x[(j + 3) % 5]) * (x[(j + 3) % 5])))) - erf(atan2(t3, 2.0 + (b) * (b)))); { float f = (float)tanh(b); t2 = t2 * 0.5 + (double)(f * f); } { float f = (float)tanh(erf(fmax((double)j, x[2]))); t1 = t1 * 0.5 + (double)(f * f); } } t0 = b; }
    { double *w = m793_2(a, x, n); t1 = t1 * 0.5 + w[0] * w[2]; free(w); }
    { double w[5]; for (int i = 0; i < n; i++) w[i] = fmax(atanh(0.5 * tanh(y[1])), (y[1] * t2)); t1 = t1 * 0.5 + w[3] * w[2]; }
    return t0 + t1 * t2 - t3 + y[0];
}

// @diff(f794_fwd: (dual, dual, const, dual) -> dual;
//       f794_rev: (dup, dup, const, active) -> active;
//       f794_fwd4: forward[4] (dual, dual, const, dual) -> dualonly;
//       f794_fwd4v: forward[4] (dualv, dualv, const, dualv) -> dualonly;
//       f794_rev4v: reverse[4] (dupv, dupv, const, active) -> active)
double f794(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    t1 = hypot((t2 > -0.10 ? (-(t2)) : log10(2.0 + sin(x[4]))), 1.0 + (cos(x[3]) > 0.21 ? (-(t2)) : fmax(t1, a)));
    y[1] += creal(cpow(1.5 + 0.2 * I, tanh(atan2(b, 2.0 + (t0) * (t0))) + 0.3 * I));
    t0 = fmin(((b > 0.73 ? t3 : t3) > -0.11 ? lgamma(2.0 + tanh(t3)) : t1), fmin(atan2(t2, 2.0 + (a) * (a)), hypot(t3, 1.0 + t3)));
    y[1] += (ldexp(t3, 3) * hypot(t0, 1.0 + a));
    y[3] *= tanh(sqrt(1.0 + (ldexp(t0, 3)) * (ldexp(t0, 3))));
    if (a > -0.89) { if ((double)(float)tanh(pow(1.0 + (x[3]) * (x[3]), 1.5)) > 0.73) { { double w[5]; for (int i = 0; i < n; i++) w[i] = atan2(atan(x[i]), 2.0 + (acosh(2.0 + ((double)i) * ((double)i))) * (acosh(2.0 + ((double)i) * ((double)i)))); t3 = t3 * 0.5 + w[3] * w[4]; } } else { y[1] *= tanh((erf(y[2]) > 0.64 ? (1.842 + b) : atan2(t0, 2.0 + (a) * (a)))); } } else { { double w[5]; for (int i = 0; i < n; i++) w[i] = hypot(t1, 1.0 + cosh(tanh(t1))); t2 = t2 * 0.5 + w[3] * w[4]; } }
    return t0 + t1 * t2 - t3 + y[0];
}

__attribute__((noinline)) static fz_pair s795_0(fz_pair p, double u)
{
    fz_pair r = { erfc(tanh(p.lo)), atan2(fmin(p.lo, p.lo), 2.0 + ((p.hi / (1.5 + (0.914) * (0.914)))) * ((p.hi / (1.5 + (0.914) * (0.914))))) };
    return r;
}

static fz_pair s795_1(fz_pair p, double u)
{
    fz_pair r = { (sqrt(1.0 + (p.hi) * (p.hi)) > 0.69 ? p.lo : p.hi), p.lo };
    return r;
}

// @diff(f795_fwd: (dual, dual, const, const) -> dual;
//       f795_rev: (dup, dup, const, const) -> active;
//       f795_fwd4: forward[4] (dual, dual, const, const) -> dualonly;
//       f795_fwd4v: forward[4] (dualv, dualv, const, const) -> dualonly;
//       f795_rev4v: reverse[4] (dupv, dupv, const, const) -> active)
double f795(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { int k = 0; while (k < 3 && (t1 > 0.48 ? t0 : 0.883) < 0.75) { { int k = 0; while (k < 3 && (b + t1) < 1.57) { { double w[5]; for (int i = 0; i < n; i++) w[i] = cimag((((t1 + y[0])) + 0.5 * I) / (1.5 + tanh(y[i]) + ((t1 + y[0])) * I)); t2 = t2 * 0.5 + w[0] * w[1]; } k++; } } k++; } }
    t2 = fmax(exp(tanh(s795_0(fz_make(t1, t0), t0).lo)), exp(tanh(t1)));
    for (int i = 0; i < 5; i++) { t0 = log10(2.0 + sin(s795_1(fz_make((b + t0), (y[i] > 0.94 ? a : x[i])), t2).lo)); for (int j = 0; j < n; j++) { if (t2 > 0.50) break; } }
    return t0 + t1 * t2 - t3 + y[0];
}

static fz_pair s796_0(fz_pair p, double u)
{
    fz_pair r = { hypot(erf(0.772), 1.0 + (double)(float)tanh(p.hi)), (1.241 - p.hi) };
    return r;
}

// @diff(f796_fwd: (const, dual, dual, const) -> dual;
//       f796_rev: (const, dup, active, const) -> active;
//       f796_fwd4: forward[4] (const, dual, dual, const) -> dualonly;
//       f796_fwd4v: forward[4] (const, dualv, dualv, const) -> dualonly;
//       f796_rev4v: reverse[4] (const, dupv, active, const) -> active)
double f796(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { float f = (float)tanh(t2); t1 = t1 * 0.5 + (double)(f * f); }
    t1 = (hypot((double)(float)tanh(a), 1.0 + atan2(t3, 2.0 + (x[1]) * (x[1]))) / (1.5 + (fmin(s796_0(fz_make(t2, 1.698), a).hi, (-1.443 + t2))) * (fmin(s796_0(fz_make(t2, 1.698), a).hi, (-1.443 + t2)))));
    return t0 + t1 * t2 - t3 + y[0];
}

__attribute__((noinline)) static double h797_0(double u, const double *x)
{
    return expm1(tanh(x[3]));
}

static double (*volatile ph797_0)(double, const double *) = h797_0;

// @diff(f797_fwd: (dual, dual, dual, dual) -> dual;
//       f797_rev: (dup, dup, active, active) -> active;
//       f797_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f797_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f797_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f797(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    { int k = 0; while (k < 3 && b < 2.67) { t1 = exp2(tanh(b)); k++; } }
    t0 = atan2(ph797_0(x[2], x), 2.0 + (t0) * (t0));
    y[2] *= tanh(0.304);
    t0 = sinh(tanh(x[0]));
    for (int i = 0; i < n; i++) { t2 = t3; for (int j = 0; j < 5; j++) { { float f = (float)tanh(hypot(exp(tanh(t0)), 1.0 + creal(cpow(1.5 + 0.2 * I, tanh(t3) + 0.3 * I)))); t3 = t3 * 0.5 + (double)(f * f); } } y[i] += ((double)(float)tanh(t0) > -0.57 ? (x[i] > -0.37 ? t2 : (double)i) : x[3]); }
    return t0 + t1 * t2 - t3 + y[0];
}

static double h798_0(double u, const double *x)
{
    return creal((((u - x[0])) + ((-1.647 + 1.687)) * I) * (((-1.647 + 1.687)) - 0.5 * I));
}

static double (*volatile ph798_0)(double, const double *) = h798_0;

// @diff(f798_fwd: (dual, dual, dual, dual) -> dual;
//       f798_rev: (dup, dup, active, active) -> active;
//       f798_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f798_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f798_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f798(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    y[4] *= tanh(t2);
    y[1] *= tanh(t1);
    if (expm1(tanh(fmin(x[0], t1))) > 0.06) { y[4] = b; } else { if ((creal(((t1) + (t3) * I) * ((t3) - 0.5 * I)) / (1.5 + (t3) * (t3))) > -0.82) { t2 = ph798_0(fmax((y[3] > -0.10 ? t1 : -0.941), log(1.0 + (a) * (a))), x); } else { { double w[5]; for (int i = 0; i < n; i++) w[i] = atan2((a - t1), 2.0 + (hypot(t0, 1.0 + y[2])) * (hypot(t0, 1.0 + y[2]))); t3 = t3 * 0.5 + w[2] * w[3]; } } }
    t0 = t0;
    { int k = 0; while (k < 3 && b < 1.75) { if (atan2((double)(float)tanh(x[4]), 2.0 + (acos(0.5 * tanh(t3))) * (acos(0.5 * tanh(t3)))) > 0.17) { t3 = (tgamma(1.5 + tanh(hypot(b, 1.0 + y[1]))) > 0.13 ? 0.044 : a); } else { t2 = t0; } k++; } }
    return t0 + t1 * t2 - t3 + y[0];
}

static double h799_0(double u, const double *x)
{
    return acosh(2.0 + (sqrt(1.0 + (u) * (u))) * (sqrt(1.0 + (u) * (u))));
}

static double (*volatile ph799_0)(double, const double *) = h799_0;

// @diff(f799_fwd: (dual, dual, dual, dual) -> dual;
//       f799_rev: (dup, dup, active, active) -> active;
//       f799_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f799_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f799_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f799(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < 5; i++) { { float f = (float)tanh(sqrt(1.0 + ((y[4] * x[i])) * ((y[4] * x[i])))); t3 = t3 * 0.5 + (double)(f * f); } for (int j = 0; j < n; j++) { t2 = lgamma(2.0 + tanh(cimag(csqrt(2.0 + tanh(ph799_0(b, x)) + I * (ph799_0(b, x)))))); t0 = (double)(float)tanh(atan(y[1])); } { float f = (float)tanh(fmin((double)(float)tanh(b), (t1 / (1.5 + (t0) * (t0))))); t0 = t0 * 0.5 + (double)(f * f); } }
    t2 = sinh(tanh((double)(float)tanh(fmin(a, a))));
    { double w[5]; for (int i = 0; i < n; i++) w[i] = t1; t1 = t1 * 0.5 + w[0] * w[2]; }
    if (cabs((y[2]) + 0.5 * I) > 0.36) { { double w[5]; for (int i = 0; i < n; i++) w[i] = t3; t0 = t0 * 0.5 + w[1] * w[2]; } } else { for (int i = 0; i < 5; i++) { if (y[i] > 1.18) break; } }
    return t0 + t1 * t2 - t3 + y[0];
}
