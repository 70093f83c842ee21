"""Derivatives of derived functions (`of INNER`, specs/annotations.md): Hessian-vector products
(forward over reverse), full Hessians from forward[4] over reverse, second and third directional
derivatives (forward over forward), and reverse over forward and over reverse; against finite
differences of the first derivatives, on Rosenbrock, a loop over an array calling an
out-of-line helper, a function calling an inlined helper, and a loop whose tape grows."""

from __future__ import annotations

import numpy as np
import pytest

import adgen

H = 1e-6

SOURCE = r"""
#include <math.h>

/* Rosenbrock in n dimensions */
// @diff(rosen_grad: (dup, const) -> active; rosen_hvp: forward of rosen_grad (dual, dual, const, const) -> dual)
// @diff(rosen_hess4: forward[4] of rosen_grad (dual, dual, const, const) -> const)
double rosen(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i + 1 < n; i++)
        s += 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]);
    return s;
}

__attribute__((noinline)) static double pair(double a, double b) { return sin(a * b) + a * exp(0.3 * b); }

/* a loop over an array, calling an out-of-line helper */
// @diff(chain_grad: (dup, const) -> active; chain_hvp: forward of chain_grad (dual, dual, const, const) -> const)
// @diff(chain_hess4: forward[4] of chain_grad (dual, dual, const, const) -> const)
// @diff(chain_rr: reverse of chain_grad (dup, dup, const, const) -> active)
// @diff(chain_dir: (dual, const) -> dualonly; chain_dir2: forward of chain_dir (dual, dual, const) -> dualonly)
// @diff(chain_dir3: forward of chain_dir2 (dual, dual, dual, dual, const) -> dualonly)
// @diff(chain_dir_grad: reverse of chain_dir (dup, dup, const) -> activeonly)
double chain(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i + 1 < n; i++)
        s += pair(x[i], x[i + 1]) * x[i];
    return s;
}

/* a loop whose reverse sweep reads back a byte an iteration (which argument of fmax won): the
 * gradient's tape holds bytes beside doubles, which forward mode over it must carry */
// @diff(peak_grad: (dup, const) -> active; peak_hvp: forward of peak_grad (dual, dual, const, const) -> const)
// @diff(peak_hess4: forward[4] of peak_grad (dual, dual, const, const) -> const)
// @diff(peak_hess4v: forward[4] of peak_grad (dualv, dualv, const, const) -> const)
double peak(const double *x, int n)
{
    double m = x[0], s = 0;
    for (int i = 1; i < n; i++)
        m = fmax(m, x[i]);
    for (int i = 0; i < n; i++)
        s += exp(x[i] - m) * x[i];
    return m * m + s;
}

/* a loop whose trip count is known only when it ends: the gradient's tape grows as it runs
 * (a buffer adgen's runtime reallocates), which reverse mode over the gradient reverses too */
// @diff(grow_grad: (active, const) -> activeonly; grow_rr: reverse of grow_grad (active, const, active) -> activeonly)
// @diff(grow_hvp: forward of grow_grad (dual, const, dual) -> dualonly)
double grow(double x, unsigned long long n)
{
    double r = 0, term = x;
    for (unsigned long long i = 1; i <= n; i += 2) {
        r += term;
        term *= -x * x / ((i + 1) * (i + 2));
    }
    return r;
}

static double soft(double t) { return log1p(exp(t)); }

/* a function calling an inlined helper, writing its result through a pointer */
// @diff(energy_grad: (dup, dup, const); energy_hvp: forward of energy_grad (dual, dual, dual, dual, const))
void energy(const double *x, double *out, int n)
{
    double s = 0, t = 0;
    for (int i = 0; i < n; i++) {
        s += soft(x[i] * x[(i + 1) % n]);
        t += x[i] * x[i];
    }
    *out = s / (1 + t);
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    work = tmp_path_factory.mktemp("nested")
    src = work / "nested.c"
    src.write_text(SOURCE)
    return adgen.load(src, build_dir=work / "build")


N = 7
X = np.linspace(-0.8, 1.3, N)
RNG = np.random.default_rng(11)


def _grad(lib, name, x):
    g = np.zeros(len(x))
    getattr(lib, f"{name}_grad")(x, g, len(x), 1.0)
    return g


def _hessian_fd(lib, name, x):
    """Columns from central differences of the gradient."""
    return np.array([(_grad(lib, name, x + H * e) - _grad(lib, name, x - H * e)) / (2 * H) for e in np.eye(len(x))]).T


@pytest.mark.parametrize("name", ["rosen", "chain", "peak"])
def test_hessian_vector_product_forward_over_reverse(lib, name):
    v = RNG.normal(size=N)
    dx, hv = np.zeros(N), np.zeros(N)
    result = getattr(lib, f"{name}_hvp")(X, v, dx, hv, N, 1.0)
    fd = (_grad(lib, name, X + H * v) - _grad(lib, name, X - H * v)) / (2 * H)
    assert hv == pytest.approx(fd, rel=1e-6, abs=1e-6)
    assert dx == pytest.approx(_grad(lib, name, X), rel=1e-14)  # the gradient, as rosen_grad gives it
    ret = result.ret if hasattr(result, "ret") else result
    assert ret == pytest.approx(getattr(lib, name)(X, N), rel=1e-14)
    if hasattr(result, "d2_ret"):  # the directional derivative of f itself
        assert result.d2_ret == pytest.approx(_grad(lib, name, X) @ v, rel=1e-12)


@pytest.mark.parametrize("name", ["rosen", "chain", "peak"])
def test_full_hessian_four_columns_a_call(lib, name):
    """forward[4] over reverse: the n x n Hessian in ceil(n / 4) calls, by unit directions."""
    hessian = np.zeros((N, N))
    eye = np.eye(N)
    for start in range(0, N, 4):
        cols = [eye[min(start + k, N - 1)] for k in range(4)]
        outs = [np.zeros(N) for _ in range(4)]
        getattr(lib, f"{name}_hess4")(X, *cols, np.zeros(N), *outs, N, 1.0)
        for k in range(4):
            if start + k < N:
                hessian[:, start + k] = outs[k]
    assert hessian == pytest.approx(_hessian_fd(lib, name, X), rel=1e-6, abs=1e-5)
    assert hessian == pytest.approx(hessian.T, rel=1e-12, abs=1e-12)


def test_full_hessian_interleaved_directions(lib):
    """forward[4] with `dualv`: the four directions (and the four columns) interleaved in one array."""
    hessian = np.zeros((N, N))
    for start in range(0, N, 4):
        cols = np.zeros((N, 4))
        for k in range(4):
            cols[min(start + k, N - 1), k] = 1
        out = np.zeros(N * 4)
        lib.peak_hess4v(X, cols.ravel(), np.zeros(N), out, N, 1.0)
        for k in range(4):
            if start + k < N:
                hessian[:, start + k] = out.reshape(N, 4)[:, k]
    assert hessian == pytest.approx(_hessian_fd(lib, "peak", X), rel=1e-6, abs=1e-5)


def test_second_and_third_directional_derivatives_forward_over_forward(lib):
    u, v, w = RNG.normal(size=(3, N))
    first = lambda x, d: lib.chain_dir(x, d, N)
    second = lib.chain_dir2(X, u, v, w, N)
    fd = (first(X + H * u, v + H * w) - first(X - H * u, v - H * w)) / (2 * H)
    assert second == pytest.approx(fd, rel=1e-7)
    a, b, c, e = RNG.normal(size=(4, N))
    third = lib.chain_dir3(X, a, u, b, v, c, w, e, N)
    h = 1e-5
    fd3 = (lib.chain_dir2(X + h * a, u + h * b, v + h * c, w + h * e, N) -
           lib.chain_dir2(X - h * a, u - h * b, v - h * c, w - h * e, N)) / (2 * h)
    assert third == pytest.approx(fd3, rel=1e-6)


def test_reverse_over_forward_and_over_reverse(lib):
    hessian = _hessian_fd(lib, "chain", X)
    g = _grad(lib, "chain", X)
    v, w = RNG.normal(size=(2, N))
    d2x, d2v = np.zeros(N), np.zeros(N)
    lib.chain_dir_grad(X, d2x, v, d2v, N, 2.0)  # the gradient of 2 <grad f, v>: in x, 2 H v; in v, 2 grad f
    assert d2x == pytest.approx(2 * hessian @ v, rel=1e-6, abs=1e-6)
    assert d2v == pytest.approx(2 * g, rel=1e-13)
    d2x, dx, d2dx = np.zeros(N), np.zeros(N), w.copy()
    ret = lib.chain_rr(X, d2x, dx, d2dx, N, 1.5, 0.7)  # seeds: w for the output d_x, 0.7 for f
    assert d2x == pytest.approx(0.7 * g + 1.5 * hessian @ w, rel=1e-6, abs=1e-6)
    assert dx == pytest.approx(1.5 * g, rel=1e-13)
    assert ret == pytest.approx(lib.chain(X, N), rel=1e-14)


def test_second_derivatives_through_a_growing_tape(lib):
    """Reverse and forward mode over a gradient whose loop's tape grows as it runs (a realloc'd
    buffer): both derivatives of x -> grow_grad(x) against finite differences of the gradient."""
    x, h = 0.7, 1e-6
    fd = (lib.grow_grad(x + h, 9, 1.0) - lib.grow_grad(x - h, 9, 1.0)) / (2 * h)
    assert lib.grow_rr(x, 9, 1.0, 1.0).d2_x == pytest.approx(fd, rel=1e-7)
    assert lib.grow_hvp(x, 1.0, 9, 1.0, 0.0) == pytest.approx(fd, rel=1e-7)


def test_a_function_writing_through_a_pointer(lib):
    """energy_grad has no return value: its seed is the shadow of *out."""
    v = RNG.normal(size=N)

    def grad(x):
        g = np.zeros(N)
        lib.energy_grad(x, g, np.zeros(1), np.ones(1), N)
        return g

    hv = np.zeros(N)
    lib.energy_hvp(X, v, np.zeros(N), hv, np.zeros(1), np.zeros(1), np.ones(1), np.zeros(1), N)
    fd = (grad(X + H * v) - grad(X - H * v)) / (2 * H)
    assert hv == pytest.approx(fd, rel=1e-6, abs=1e-8)
