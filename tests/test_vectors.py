"""Vector values (SIMD code: vector types and intrinsics in the source, Eigen's packets;
specs/abi.md, "Vector values"): loads and stores of vectors, lane-wise arithmetic and the vector
forms of math intrinsics, phis of vectors, lanes taken and put (at constant and run-time
indices), shuffles (lanes moved, and one lane taken several times), in forward and reverse mode
at widths 1 and 2, split mode and Hessian-vector products; each derived function against central
finite differences and forward against reverse (`adgen check`). And what is refused, at its line."""

from __future__ import annotations

import platform

import pytest

VECTORS = r"""
#include <math.h>
typedef double v2d __attribute__((vector_size(16)));
typedef float v4f __attribute__((vector_size(16)));

/* vector loads and stores, lane-wise arithmetic, sqrt and fmuladd on vectors, a shuffle of two
   vectors with a lane left poison, lanes taken and put, a vector carried around a loop */
// @diff(lanes_grad: (dup, dup, const) -> active; lanes_fwd: (dual, dual, const) -> dual;
//       lanes_fwd2: forward[2] (dual, dual, const) -> dualonly; lanes_grad2: reverse[2] (dup, dup, const) -> active;
//       lanes_split: split (dup, dup, const) -> active)
double lanes(const double *x, double *y, int n)
{
    v2d acc = {0.5, -0.25};
    for (int i = 0; i + 1 < n; i += 2) {
        v2d a, b;
        __builtin_memcpy(&a, x + i, sizeof a);
        __builtin_memcpy(&b, y + i, sizeof b);
        v2d prod = a * b + __builtin_elementwise_sqrt(a * a + 1.0);
        v2d swapped = __builtin_shufflevector(prod, a, 1, 2);
        acc = acc * 0.5 + swapped / (b * b + 2.0);
        swapped[1] = acc[0] * 3.0;
        __builtin_memcpy(y + i, &swapped, sizeof swapped);
    }
    return acc[0] * 2.0 + acc[1] * acc[0];
}

/* one lane taken twice (its adjoint the sum of both), and lanes at run-time indices */
// @diff(broadcast_grad: (dup, dup, const) -> active; broadcast_fwd: (dual, dual, const) -> dual;
//       broadcast_grad2: reverse[2] (dup, dup, const) -> active)
double broadcast(const double *x, double *y, int n)
{
    double s = 0;
    for (int i = 0; i + 1 < n; i += 2) {
        v2d a;
        __builtin_memcpy(&a, x + i, sizeof a);
        v2d twice = __builtin_shufflevector(a, a, 1, 1);
        v2d t = twice * a;
        int k = (i / 2) & 1;
        t[k] = t[1 - k] * t[k] + y[i];
        s += t[k] * t[1 - k] - sin(t[0]);
    }
    return s;
}

/* a function of one array, for Hessian-vector products (forward mode over the gradient) */
// @diff(energy_grad: (dup, const) -> activeonly; energy_hvp: forward of energy_grad (dual, dual, const, const))
double energy(const double *x, int n)
{
    v2d s = {0, 0};
    for (int i = 0; i + 1 < n; i += 2) {
        v2d a;
        __builtin_memcpy(&a, x + i, sizeof a);
        s += a * a * __builtin_shufflevector(a, a, 1, 0) + __builtin_elementwise_sqrt(a * a + 0.5);
    }
    return s[0] * s[1];
}

/* floats, four lanes */
// @diff(narrow_grad: (dup, dup, const) -> active; narrow_fwd: (dual, dual, const) -> dual)
float narrow(const float *x, float *y, int n)
{
    v4f v = {x[0], x[1], x[2], x[3]};
    v4f w = v * v + (v4f){1.0f, 2.0f, 3.0f, 4.0f};
    w = __builtin_elementwise_sqrt(w) * v;
    y[0] = w[0] + w[3];
    return w[1] * w[2] + y[1];
}
"""

SSE2 = r"""
#include <emmintrin.h>
/* SSE2 intrinsics, as Eigen's packets use them on x86-64 */
// @diff(dot_grad: (dup, dup, const) -> active; dot_fwd: (dual, dual, const) -> dual)
double dot(const double *x, const double *y, int n)
{
    __m128d s = _mm_setzero_pd();
    for (int i = 0; i + 1 < n; i += 2)
        s = _mm_add_pd(s, _mm_mul_pd(_mm_loadu_pd(x + i), _mm_mul_pd(_mm_loadu_pd(y + i), _mm_loadu_pd(x + i))));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
/* Eigen's broadcast of packed doubles without SSE3: the optimizer loads them as <4 x i32> and
   casts the lanes back to <2 x double> */
// @diff(bcast_grad: (dup, dup, const) -> active; bcast_fwd: (dual, dual, const) -> dual)
double bcast(const double *x, const double *y, int n)
{
    __m128d s = _mm_setzero_pd();
    for (int i = 0; i + 1 < n; i += 2) {
        __m128d b = _mm_loadu_pd(y + i);
        __m128d b0 = _mm_castsi128_pd(_mm_shuffle_epi32(_mm_castpd_si128(b), 0x44));
        __m128d b1 = _mm_castsi128_pd(_mm_shuffle_epi32(_mm_castpd_si128(b), 0xEE));
        s = _mm_add_pd(s, _mm_mul_pd(_mm_loadu_pd(x + i), _mm_add_pd(b0, _mm_mul_pd(b1, b1))));
    }
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
"""


def _check(adgen, c_file, source: str, n: int = 6) -> str:
    src = c_file(source)
    result = adgen("check", src, "--size", "x=n", "--size", "y=n", "--size", "d_x=n", "--size", f"n={n}")
    assert result.status == 0, result.out + result.err
    return result.out


@pytest.mark.slow
def test_vector_values_in_both_modes_against_finite_differences(adgen, c_file):
    out = _check(adgen, c_file, VECTORS)
    for name in ("lanes_grad", "lanes_fwd2", "lanes_grad2", "lanes_split", "energy_hvp", "broadcast_grad",
                 "broadcast_grad2", "narrow_grad", "narrow_fwd"):
        assert name in out
    assert "checks pass" in out and "FAIL" not in out, out


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="SSE2 intrinsics are x86-64's")
def test_sse2_intrinsics(adgen, c_file):
    out = _check(adgen, c_file, SSE2)
    assert "dot_grad" in out and "bcast_grad" in out and "bcast_fwd" in out and "FAIL" not in out, out


@pytest.mark.parametrize("source, message", [
    ("typedef double v2d __attribute__((vector_size(16)));\n"
     "typedef long long v2i __attribute__((vector_size(16)));\n"
     "// @diff(g: (dup, const) -> active)\n"
     "double f(const double *x, int n) {\n  v2d a = {x[0], x[1]};\n  v2i bits = (v2i)a;\n"
     "  bits &= (v2i){-1, 0x7fffffffffffffffLL};\n  a = (v2d)bits;\n  return a[0] + a[1];\n}\n",
     "taken as another type ('<2 x i64>'): adgen cannot follow derivatives through its bits"),
    ("typedef double v2d __attribute__((vector_size(16)));\n"
     "typedef long long v2i __attribute__((vector_size(16)));\n"
     "// @diff(g: (dual, const) -> dual)\n"
     "double f(const double *x, int n) {\n  v2d a = {x[0], x[1]};\n  v2i bits = (v2i)a;\n"
     "  bits &= (v2i){-1, 0x7fffffffffffffffLL};\n  a = (v2d)bits;\n  return a[0] + a[1];\n}\n",
     "taken as another type ('<2 x i64>'): adgen cannot follow derivatives through its bits"),
    ("typedef double v2d __attribute__((vector_size(16)));\n"
     "// @diff(g: (dup, const) -> active)\n"
     "double f(const double *x, int n) {\n  v2d a = {x[0], x[1]}, b = {x[1], 0.5};\n"
     "  v2d m = __builtin_elementwise_max(a, b);\n  return m[0] * m[1];\n}\n",
     "on a vector value in reverse mode"),
    ("typedef double v2d __attribute__((vector_size(16)));\n"
     "// @diff(g: forward[2] (dualv, const) -> dualonly)\n"
     "double f(const double *x, int n) {\n  v2d a = {x[0], x[1]};\n  a = a * a;\n  return a[0] + a[1];\n}\n",
     "not interleaved ones (dualv, dupv)"),
    *[("#include <string.h>\n#include <stdint.h>\n"
       f"// @diff(g: {entry})\n"
       "double f(const double *x) {\n  __int128 bits;\n  memcpy(&bits, x, 16);  /* two doubles as one integer */\n"
       "  uint64_t lo = (uint64_t)bits, hi = (uint64_t)(bits >> 64);\n  double a, b;\n"
       "  memcpy(&a, &lo, 8);\n  memcpy(&b, &hi, 8);\n  return a * b;\n}\n",
       "an integer of 128 bits loaded from memory holding derivatives, whose bits become floating-point values")
      for entry in ("(dup) -> active", "(dual) -> dual")],
    *[("#include <emmintrin.h>\n"
       f"// @diff(g: {entry})\n"
       "double f(const double *x, int n) {\n  __m128d b = _mm_loadu_pd(x);\n"
       "  __m128d c = _mm_castsi128_pd(_mm_shuffle_epi32(_mm_castpd_si128(b), 0x1B));  /* halves of doubles */\n"
       "  return _mm_cvtsd_f64(c) * x[0];\n}\n",
       "a vector of integers ('<4 x i32>') loaded from memory holding derivatives, whose bits become floating-point "
       "values other than by a bitcast of the whole vector")
      for entry in ("(dup, const) -> active", "(dual, const) -> dual") if platform.machine() in ("x86_64", "AMD64")],
])
def test_what_is_refused_is_a_located_error(adgen, c_file, source, message):
    src = c_file(source)
    result = adgen("build", src, "-o", src.parent / "out")
    assert result.status == 1 and "Traceback" not in result.err, result.err
    assert "src.c:" in result.err and message in result.err, result.err
    assert not (src.parent / "out").exists()
