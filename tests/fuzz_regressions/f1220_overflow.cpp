/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float; seed 11301099114699876855 */
#include <cmath>
#include <complex>
#include <cstdlib>
#include <vector>

typedef struct { double lo, hi; } fz_pair;
typedef std::complex<double> fz_c;
typedef double fz_v2 __attribute__((vector_size(16)));

static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
struct fz_vec2 {
    double u, v;
    fz_vec2 operator+(const fz_vec2 &o) const { return {u + o.u, v + o.v}; }
    fz_vec2 operator-(const fz_vec2 &o) const { return {u - o.u, v - o.v}; }
    fz_vec2 operator*(double s) const { return {u * s, v * s}; }
    double dot(const fz_vec2 &o) const { return u * o.u + v * o.v; }
    double norm2() const { return dot(*this); }
};
template <typename T> static double fz_sq(T t) { return static_cast<double>(t * t); }
template <typename T> static T fz_max2(T p, T q) { return p > q ? p : q; }

namespace fz {
extern "C" {
static double h1220_0(double u, const double *x)
{
    return cbrt(2.0 + tanh(log10(2.0 + sin(1.890))));
}
// @diff(f1220_fwd: (dual, dual, dual, dual) -> dual;
//       f1220_rev: (dup, dup, active, active) -> active;
//       f1220_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly)
double f1220(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */
    for (int i = 0; i < n; i++) { for (int j = 0; j <= i; j++) { { float f = (float)tanh(((double)(float)tanh(x[4]) > -0.59 ? exp(tanh(x[(i + 4) % 5])) : y[1])); t2 = t2 * 0.5 + (double)(f * f); } t1 = t1 * t1 + x[(j + 1) % 5]; } { float f = (float)tanh(exp2(tanh((0.582 - x[i])))); t3 = t3 * 0.5 + (double)(f * f); } }
    { int k = 0; while (k < 3 && (-(x[3])) < 2.70) { for (int i = 0; i < n; i++) { t1 = atan2(h1220_0(std::real(fz_c(t3, (double)i) * fz_c((double)i, -0.5)), x), 2.0 + (log(1.0 + (t2) * (t2))) * (log(1.0 + (t2) * (t2)))); if (x[4] > 1.44) break; y[i] = std::abs(fz_c(t3, 0.5)); } k++; } }
    return t0 + t1 * t2 - t3 + y[0];
}
}  // extern "C"
}  // namespace fz
