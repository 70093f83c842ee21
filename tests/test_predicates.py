"""Intrinsics that take floating-point values and give integers — a class test
(`llvm.is.fpclass`, which clang makes of `isnormal`, `__builtin_isfpclass` and C++'s complex
arithmetic), a rounding to an integer (`llvm.lround`) — carry no derivative: the code around
them is differentiated, both modes, against central finite differences (before, "has no
derivative rule")."""

from __future__ import annotations

import math

import pytest

import adgen

SOURCE = r"""
#include <math.h>

// @diff(classed_grad: (active) -> active; classed_tan: forward (dual) -> dualonly)
double classed(double x)
{
    double y = sin(x);
    if (isnormal(y) && !__builtin_isfpclass(y, 0x0003))  /* not a NaN */
        return y * x + (double)lround(4 * x);
    return x;
}

// @diff(summed_grad: (dup, const) -> active)
double summed(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        if (!__builtin_isfpclass(x[i], 0x0204))  /* not infinite */
            s += x[i] * x[i];
    return s;
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    work = tmp_path_factory.mktemp("predicates")
    (work / "classed.c").write_text(SOURCE)
    return adgen.load(work / "classed.c", build_dir=work / "build")


@pytest.mark.parametrize("x", [0.3, 1.2, -2.1])
def test_a_class_test_and_a_rounding_carry_no_derivative(lib, x):
    f = lambda v: lib.classed(v)  # noqa: E731
    fd = (f(x + 1e-6) - f(x - 1e-6)) / 2e-6
    assert lib.classed_grad(x, 1.0).d_x == pytest.approx(fd, rel=1e-6)
    assert lib.classed_tan(x, 1.0) == pytest.approx(math.sin(x) + x * math.cos(x), rel=1e-12)


def test_in_a_loop(lib):
    import numpy as np

    x = np.array([0.5, -1.5, np.inf, 2.0])
    dx = np.zeros(4)
    lib.summed_grad(x, dx, 4, 1.0)
    assert list(dx) == [1.0, -3.0, 0.0, 4.0]
