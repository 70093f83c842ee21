"""One function's derivatives checked in every mode, for test files whose sources annotate
functions `f(const double *x, int n)` with `annotations(name)`: the gradient against central
differences and forward mode, reverse[2] and split mode against the gradient (forward[2] too,
with `lanes`), and forward over reverse against differences of the gradient."""

from __future__ import annotations

import numpy as np
import pytest


def annotations(name: str, lanes: bool = False) -> str:
    return (f"// @diff({name}_grad: (dup, const) -> activeonly; {name}_grad2: reverse[2] (dup, const) -> activeonly;\n"
            f"//       {name}_split: split (dup, const) -> activeonly; {name}_tan: (dual, const) -> dualonly;\n" +
            (f"//       {name}_tan2: forward[2] (dual, const) -> dualonly;\n" if lanes else "") +
            f"//       {name}_hvp: forward of {name}_grad (dual, dual, const, const))\n")


def differences(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of f at x, coordinate by coordinate."""
    out = np.zeros(len(x))
    for k in range(len(x)):
        e = np.zeros(len(x))
        e[k] = h
        out[k] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def gradient(lib, name: str, x: np.ndarray) -> np.ndarray:
    dx = np.zeros(len(x))
    getattr(lib, f"{name}_grad")(x.copy(), dx, len(x), 1.0)
    return dx


def check_reverse(lib, name: str, x: np.ndarray) -> None:
    n = len(x)
    grad = gradient(lib, name, x)
    assert np.isfinite(grad).all()
    assert grad == pytest.approx(differences(lambda y: getattr(lib, name)(y.copy(), n), x), rel=1e-7, abs=1e-7)
    tangents = [getattr(lib, f"{name}_tan")(x.copy(), e, n) for e in np.eye(n)]
    assert tangents == pytest.approx(list(grad), rel=1e-12, abs=1e-14)


def check_lanes_and_split(lib, name: str, x: np.ndarray, lanes: bool = False) -> None:
    n, grad = len(x), gradient(lib, name, x)
    d0, d1 = np.zeros(n), np.zeros(n)
    getattr(lib, f"{name}_grad2")(x.copy(), d0, d1, n, 1.0, -2.0)
    assert d0 == pytest.approx(grad, rel=1e-13, abs=1e-14) and d1 == pytest.approx(-2 * grad, rel=1e-13, abs=1e-14)
    split = getattr(lib, f"{name}_split")
    d = np.zeros(n)
    _, tape = split.forward(x.copy(), d, n)  # (no primal result: activeonly)
    split.reverse(tape, 1.0)
    assert d == pytest.approx(grad, rel=1e-13, abs=1e-14)
    for k in range(0, n - 1, 2) if lanes else ():
        pair = getattr(lib, f"{name}_tan2")(x.copy(), np.eye(n)[k], np.eye(n)[k + 1], n)
        assert list(np.ravel(pair)) == pytest.approx([grad[k], grad[k + 1]], rel=1e-13, abs=1e-15)


def check_hessian_vector_product(lib, name: str, x: np.ndarray, v: np.ndarray, h: float = 1e-5) -> None:
    hv = np.zeros(len(x))
    getattr(lib, f"{name}_hvp")(x.copy(), v, np.zeros(len(x)), hv, len(x), 1.0)
    want = (gradient(lib, name, x + h * v) - gradient(lib, name, x - h * v)) / (2 * h)
    assert np.isfinite(hv).all() and hv == pytest.approx(want, rel=1e-6, abs=1e-6)
