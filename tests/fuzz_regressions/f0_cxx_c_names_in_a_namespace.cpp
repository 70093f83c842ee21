/* fuzz regression: activities (True, True, True, True) (x, y, a, b); float; failed to build */
#include <cmath>
#include <complex>
#include <cstdlib>
#include <vector>

typedef struct { double lo, hi; } fz_pair;
typedef std::complex<double> fz_c;

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
static double h0_0(double u, const double *x)
{
    return exp(tanh((double)(float)tanh(0.175)));
}
static double (*volatile ph0_0)(double, const double *) = h0_0;
// @diff(f0_fwd: (dual, dual, dual, dual) -> dual;
//       f0_rev: (dup, dup, active, active) -> active;
//       f0_fwd4: forward[4] (dual, dual, dual, dual) -> dualonly;
//       f0_fwd4v: forward[4] (dualv, dualv, dualv, dualv) -> dualonly;
//       f0_rev4v: reverse[4] (dupv, dupv, active, active) -> active)
double f0(double *x, double *y, double a, double b)
{
    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];
    int n = 5 - (b > 1e9); /* 5, though the compiler cannot know it */

    return t0 + t1 * t2 - t3 + y[0];
}
}  // extern "C"
}  // namespace fz
