"""The side a select does not choose never turns a derivative into NaN (specs/abi.md, "What the
derivative code does"). The optimizer computes both sides of a branch and selects one
(`x > 0 ? sqrt(x) : 0.5 * x`, fmax and fmin, the recovery of infinities in a complex product or
quotient hoisted out of a loop); the side not chosen gets a zero adjoint, and its partials may be
infinite or NaN there (sqrt below 0, a product with an infinity). Reverse mode gave NaN where
forward mode and finite differences give finite derivatives, found by the differential fuzzer.
Each function is checked against central finite differences and forward against reverse, at
width 1, reverse[2], split mode, forward[2] and forward over reverse (Hessian-vector products),
at points where the side not chosen has non-finite partials. Across calls not inlined too (the
arguments a callee may mask, a result its caller may mask: NaN before), and a value computed on
every path but read on some, here or in a callee not inlined."""

from __future__ import annotations

import numpy as np
import pytest

import adgen

NAMES = ("root", "nested", "biggest", "smallest", "stored", "product", "quotient", "passed", "returned", "early",
         "unread")


def _annotations(name: str) -> str:
    return (f"// @diff({name}_grad: (dup, const) -> activeonly; {name}_grad2: reverse[2] (dup, const) -> activeonly;\n"
            f"//       {name}_split: split (dup, const) -> activeonly; {name}_tan: (dual, const) -> dualonly;\n"
            f"//       {name}_tan2: forward[2] (dual, const) -> dualonly;\n"
            f"//       {name}_hvp: forward of {name}_grad (dual, dual, const, const))\n")


SOURCE = r"""
#include <complex.h>
#include <math.h>
#include <stdlib.h>

""" + _annotations("root") + r"""double root(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] > 0 ? sqrt(x[i]) : 0.5 * x[i];
    return s;
}

/* the whole slice below the side not chosen: both square roots have NaN partials below 0 */
""" + _annotations("nested") + r"""double nested(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] > 0 ? sqrt(sqrt(x[i])) : 0.5 * x[i];
    return s;
}

""" + _annotations("biggest") + r"""double biggest(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += fmax(1.0, sqrt(x[i]));
    return s;
}

""" + _annotations("smallest") + r"""double smallest(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += fmin(0.5 * x[i], 3.0 * sqrt(x[i]));
    return s;
}

/* the side not chosen comes through memory: stored in one loop, loaded in the next */
""" + _annotations("stored") + r"""double stored(const double *x, int n)
{
    double *w = malloc(n * sizeof *w), s = 0;
    for (int i = 0; i < n; i++)
        w[i] = sqrt(x[i]);
    for (int i = 0; i < n; i++) {
        double r = w[i], t = 0.5 * x[i];  /* both loaded: a select between loads */
        s += x[i] > 0 ? r : t;
    }
    free(w);
    return s;
}

""" + _annotations("product") + r"""double product(const double *x, int n)
{
    double t = 0;
    for (int i = 0; i < n; i++)
        t += creal((x[2] + 1.0 * I) * (2.0 - 0.5 * I));
    return t;
}

""" + _annotations("quotient") + r"""double quotient(const double *x, int n)
{
    double t = 0;
    for (int i = 0; i < n; i++)
        t += creal((x[2] + 1.0 * I) / (2.0 - 0.5 * I));
    return t;
}

/* across calls not inlined: a callee selecting between its arguments, and a caller selecting
   between a callee's result and another value (a checkpointed loop's step is such a callee) */
__attribute__((noinline)) static double pick(double a, double b, double c) { return c > 0 ? a : b; }

""" + _annotations("passed") + r"""double passed(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += pick(sqrt(x[i]), 0.5 * x[i], x[i]);
    return s;
}

__attribute__((noinline)) static double root_of(double a) { return sqrt(sqrt(a)); }

""" + _annotations("returned") + r"""double returned(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        double r = root_of(x[i]);
        s += x[i] > 0 ? r : 0.5 * x[i];
    }
    return s;
}

/* a value computed on every path and read on one only: here where the loop breaks, never at X */
""" + _annotations("early") + r"""double early(const double *x, int n)
{
    double r = sqrt(x[0]) * 3.0, s = 0;
    for (int i = 1; i < n; i++) {
        s += x[i] * x[i];
        if (s > 1e6) { s = r; break; }
    }
    return s;
}

/* the same across a call not inlined: the callee reads its argument on one path only */
__attribute__((noinline)) static double unless(double v, const double *x, int n)
{
    double s = 0;
    for (int i = 1; i < n; i++) {
        s += x[i] * x[i];
        if (s > 1e6) return v;
    }
    return s;
}

""" + _annotations("unread") + r"""double unread(const double *x, int n)
{
    return unless(sqrt(x[0]) * 3.0, x, n);
}
"""

X = np.array([-1.0, -0.3, 0.7, 4.0])  # no kinks within the finite differences' step
N = len(X)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    work = tmp_path_factory.mktemp("strong_zero")
    src = work / "strong.c"
    src.write_text(SOURCE)
    return adgen.load(src, build_dir=work / "build")


def _differences(f, x, h=1e-6):
    out = np.zeros(N)
    for k in range(N):
        e = np.zeros(N)
        e[k] = h
        out[k] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def _grad(lib, name, x):
    dx = np.zeros(N)
    getattr(lib, f"{name}_grad")(x.copy(), dx, N, 1.0)
    return dx


@pytest.mark.parametrize("name", NAMES)
def test_reverse_against_differences_and_forward(lib, name):
    primal = lambda x: getattr(lib, name)(x.copy(), N)
    want = _differences(primal, X)
    grad = _grad(lib, name, X)
    assert np.isfinite(grad).all() and grad == pytest.approx(want, abs=1e-7)
    tangents = [getattr(lib, f"{name}_tan")(X.copy(), e, N) for e in np.eye(N)]
    assert tangents == pytest.approx(list(grad), rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("name", NAMES)
def test_two_lanes_and_split_mode(lib, name):
    grad = _grad(lib, name, X)
    d0, d1 = np.zeros(N), np.zeros(N)
    getattr(lib, f"{name}_grad2")(X.copy(), d0, d1, N, 1.0, -2.0)
    assert d0 == pytest.approx(grad, rel=1e-13) and d1 == pytest.approx(-2 * grad, rel=1e-13)
    split = getattr(lib, f"{name}_split")
    d = np.zeros(N)
    _, tape = split.forward(X.copy(), d, N)  # (no primal result: activeonly)
    split.reverse(tape, 1.0)
    assert d == pytest.approx(grad, rel=1e-13)
    for k in range(0, N, 2):
        lanes = getattr(lib, f"{name}_tan2")(X.copy(), np.eye(N)[k], np.eye(N)[k + 1], N)
        assert list(np.ravel(lanes)) == pytest.approx([grad[k], grad[k + 1]], rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("name", NAMES)
def test_hessian_vector_products(lib, name):
    v = np.array([1.0, -0.5, 0.25, 2.0])
    hv = np.zeros(N)
    getattr(lib, f"{name}_hvp")(X.copy(), v, np.zeros(N), hv, N, 1.0)
    h = 1e-5
    want = (_grad(lib, name, X + h * v) - _grad(lib, name, X - h * v)) / (2 * h)
    assert np.isfinite(hv).all() and hv == pytest.approx(want, rel=1e-6, abs=1e-6)
