"""The C++ standard library's algorithms in differentiated functions (specs/cxx.md), against
both C++ libraries: sorts (with and without a comparator, stable or not, partial, nth
element, a partial sort into another range) and min/max element, on a `std::vector` copied
from the input, each function a weighted sum of the result. Reverse mode against central
finite differences (inputs without ties), forward against reverse.

What each library keeps out of its headers or reaches only on long ranges: libc++'s
`std::sort` of arithmetic types without a comparator (an `extern template` compiled into the
library, defined by adgen's lowering), its `std::stable_sort` of doubles without one (a radix
sort, moving the doubles as integers, from 1024 elements), the temporary buffers of both
libraries' stable sorts (a null one where none is had), libstdc++'s end of an empty vector
(null plus a size)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

SOURCE = r"""
#include <algorithm>
#include <functional>
#include <vector>

template <class T> static T weighted(const std::vector<T> &v) {
    T s = 0;
    for (size_t i = 0; i < v.size(); i++) s += v[i] * T(i + 1);
    return s;
}

// @diff(sort_lambda_grad: (dup, const) -> active)
// @diff(sort_lambda_fwd: forward (dual, const) -> dualonly)
double sort_lambda(const double *x, int n) {
    std::vector<double> v(x, x + n);
    std::sort(v.begin(), v.end(), [](double a, double b) { return a > b; });
    return weighted(v);
}

// @diff(sort_plain_grad: (dup, const) -> active)
// @diff(sort_plain_fwd: forward (dual, const) -> dualonly)
double sort_plain(const double *x, int n) {
    std::vector<double> v(x, x + n);
    std::sort(v.begin(), v.end());
    return weighted(v);
}

// @diff(sort_float_grad: (dup, const) -> active)
// @diff(sort_float_fwd: forward (dual, const) -> dualonly)
float sort_float(const float *x, int n) {
    std::vector<float> v(x, x + n);
    std::sort(v.begin(), v.end());
    return weighted(v);
}

/* integers sorted where derivatives flow: the indices of the input read */
// @diff(sort_indices_grad: (dup, const) -> active)
// @diff(sort_indices_fwd: forward (dual, const) -> dualonly)
double sort_indices(const double *x, int n) {
    std::vector<int> idx(n);
    for (int i = 0; i < n; i++) idx[i] = (i * 7 + 3) % n;
    std::sort(idx.begin(), idx.end(), [](int a, int b) { return a % 5 < b % 5 || (a % 5 == b % 5 && a < b); });
    double s = 0;
    for (int i = 0; i < n; i++) s += x[idx[i]] * (i + 1);
    return s;
}

// @diff(stable_lambda_grad: (dup, const) -> active)
// @diff(stable_lambda_fwd: forward (dual, const) -> dualonly)
double stable_lambda(const double *x, int n) {
    std::vector<double> v(x, x + n);
    std::stable_sort(v.begin(), v.end(), [](double a, double b) { return a * a < b * b; });
    return weighted(v);
}

// @diff(stable_plain_grad: (dup, const) -> active)
// @diff(stable_plain_fwd: forward (dual, const) -> dualonly)
double stable_plain(const double *x, int n) {
    std::vector<double> v(x, x + n);
    std::stable_sort(v.begin(), v.end());
    return weighted(v);
}

// @diff(nth_grad: (dup, const) -> active)
// @diff(nth_fwd: forward (dual, const) -> dualonly)
double nth(const double *x, int n) {
    std::vector<double> v(x, x + n);
    std::nth_element(v.begin(), v.begin() + n / 2, v.end());
    return 3 * v[n / 2] + v[n / 2] * v[n / 2];
}

// @diff(partial_grad: (dup, const) -> active)
// @diff(partial_fwd: forward (dual, const) -> dualonly)
double partial(const double *x, int n) {
    std::vector<double> v(x, x + n);
    std::partial_sort(v.begin(), v.begin() + 3, v.end(), std::greater<double>());
    return v[0] + 2 * v[1] + 3 * v[2];
}

// @diff(minmax_grad: (dup, const) -> active)
// @diff(minmax_fwd: forward (dual, const) -> dualonly)
double minmax(const double *x, int n) {
    std::vector<double> v(x, x + n);
    return *std::max_element(v.begin(), v.end()) - 2 * *std::min_element(v.begin(), v.end());
}

// @diff(sort_copy_grad: (dup, const) -> active)
// @diff(sort_copy_fwd: forward (dual, const) -> dualonly)
double sort_copy(const double *x, int n) {
    std::vector<double> v(x, x + n), out(4);
    std::partial_sort_copy(v.begin(), v.end(), out.begin(), out.end());
    return weighted(out);
}
"""

DOUBLES = ["sort_lambda", "sort_plain", "sort_indices", "stable_lambda", "stable_plain", "nth", "partial", "minmax",
           "sort_copy"]
LIBRARIES = ["libc++", "libstdc++"]


@pytest.fixture(scope="module", params=LIBRARIES)
def lib(request, tmp_path_factory):
    """All the functions, built once per C++ library (libstdc++ where g++ is installed)."""
    import adgen

    if request.param == "libstdc++" and shutil.which("g++") is None:
        pytest.skip("no g++ (libstdc++) on this machine")
    work = tmp_path_factory.mktemp("algorithms")
    src = work / "algorithms.cpp"
    src.write_text(SOURCE)
    return adgen.load(src, build_dir=work / "build", flags=[f"-stdlib={request.param}"])


def _input(n: int, seed: int = 0) -> np.ndarray:
    """n distinct values, at least 0.27 apart, of both signs."""
    rng = np.random.default_rng(seed)
    return rng.permutation(n) * 0.37 + rng.uniform(0, 0.1, n) - 0.18 * n


@pytest.mark.parametrize("name", DOUBLES)
@pytest.mark.parametrize("n", [9, 200])  # (200: libc++'s introsort partitions, both stable sorts' merges)
@pytest.mark.slow
def test_reverse_against_finite_differences_and_forward(lib, name, n):
    x = _input(n, seed=n)
    f, grad, fwd = (getattr(lib, name + s) for s in ("", "_grad", "_fwd"))
    g = np.zeros(n)
    assert grad(x, g, n, 1.0) == pytest.approx(f(x, n), rel=1e-13)
    h = 1e-4  # (the functions are piecewise polynomials of degree 2 at most, and no two inputs within 2h)
    fd = np.array([(f(x + h * e, n) - f(x - h * e, n)) / (2 * h) for e in np.eye(n)])
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-5)
    d = np.cos(np.arange(n) + 0.5)
    assert fwd(x, d, n) == pytest.approx(g @ d, rel=1e-10, abs=1e-9)


def _ranks(x: np.ndarray) -> np.ndarray:
    """The gradient of the weighted sum of the sorted values: each input's place, from 1."""
    weights = np.zeros(len(x))
    weights[np.argsort(x, kind="stable")] = np.arange(1, len(x) + 1)
    return weights


@pytest.mark.parametrize("n", [9, 300])
@pytest.mark.slow
def test_float_sort_without_a_comparator(lib, n):
    x = _input(n, seed=3).astype(np.float32)
    g = np.zeros(n, dtype=np.float32)
    lib.sort_float_grad(x, g, n, 1.0)
    np.testing.assert_array_equal(g, _ranks(x))
    d = np.cos(np.arange(n)).astype(np.float32)
    assert lib.sort_float_fwd(x, d, n) == pytest.approx(float(_ranks(x) @ d), rel=1e-5)


@pytest.mark.parametrize("n", [1100, 1500])
@pytest.mark.slow
def test_long_stable_sort_without_a_comparator(lib, n):
    """libc++ radix-sorts from 1024 doubles, moving them as integers of their bits."""
    x = _input(n, seed=n)
    g = np.zeros(n)
    lib.stable_plain_grad(x, g, n, 1.0)
    np.testing.assert_array_equal(g, _ranks(x))
    d = np.cos(np.arange(n))
    assert lib.stable_plain_fwd(x, d, n) == pytest.approx(_ranks(x) @ d, rel=1e-12)
    g = np.zeros(n)
    lib.sort_plain_grad(x, g, n, 1.0)
    np.testing.assert_array_equal(g, _ranks(x))


GLOBAL = r"""
#include <algorithm>
static double scratch[64];
// @diff(into_global_grad: (dup, const) -> active)
double into_global(const double *x, int n) {
    std::copy(x, x + n, scratch);
    std::stable_sort(scratch, scratch + n);
    return scratch[0] * 2 + scratch[n - 1];
}
"""


@pytest.mark.parametrize("library", [pytest.param("libc++", marks=pytest.mark.slow), "libstdc++"])
def test_what_cannot_be_differentiated_inside_the_library_names_the_users_line(adgen, tmp_path, library):
    """A global sorted in place: the library's stores into it carry derivatives adgen keeps none
    of. The error stands at the line of the sources that calls the library."""
    if library == "libstdc++" and shutil.which("g++") is None:
        pytest.skip("no g++ (libstdc++) on this machine")
    src = tmp_path / "global.cpp"
    src.write_text(GLOBAL)
    result = adgen("build", "-q", src, "-o", tmp_path / "out", "--", f"-stdlib={library}")
    assert result.status == 1
    assert "global.cpp:7:5: error: cannot differentiate a store of a value carrying derivatives" in result.err, \
        result.err
    assert "in the library's code here" in result.err
