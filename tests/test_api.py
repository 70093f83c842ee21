"""adgen.load: build a C file with its derivatives and call them from Python, NumPy arrays for
pointers, named tuples for result structs; or load the objects of an earlier `adgen build`."""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from conftest import ROOT

SOURCE = r"""
#include <math.h>
// @diff(energy_grad: (dup, const, active) -> active; energy_fwd: forward[2] (dual, const, dual) -> dual)
double energy(const double *x, int n, double k)
{
    double e = 0;
    for (int i = 0; i < n; i++)
        e += k * x[i] * x[i] + sin(x[i]);
    return e;
}

// @diff(scale_grad: (dup, dup, const))
void scale(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = 3.0f * x[i] * x[i];
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    src = tmp_path_factory.mktemp("api") / "energy.c"
    src.write_text(SOURCE)
    return adgen.load(src, build_dir=src.parent / "build")


def test_three_lines_for_a_gradient():
    lib = adgen.load(ROOT / "examples" / "rosenbrock" / "rosenbrock.c")
    g = lib.rosen_grad(1.0, 100.0, -1.2, 1.0, 1.0)
    assert g._fields == ("ret", "d_x", "d_y") and type(g).__name__ == "rosen_grad_result"
    assert g.d_x == pytest.approx(-215.6) and g.d_y == pytest.approx(-88.0) and g.ret == pytest.approx(24.2)


def test_numpy_arrays_are_read_and_written_in_place(lib):
    x = np.array([0.5, -1.0, 2.0])
    dx = np.zeros(3)
    r = lib.energy_grad(x, dx, 3, 2.0, 1.0)
    assert r.ret == pytest.approx(lib.energy(x, 3, 2.0))
    assert dx == pytest.approx(2 * 2.0 * x + np.cos(x))
    assert r.d_k == pytest.approx(float(np.sum(x * x)))


def test_array_fields_and_widths(lib):
    x = np.array([0.5, -1.0, 2.0])
    r = lib.energy_fwd(x, np.ones(3), np.zeros(3), 3, 2.0, 0.0, 1.0)
    assert isinstance(r.d_ret, np.ndarray) and r.d_ret.shape == (2,)
    assert r.d_ret[0] == pytest.approx(float(np.sum(4.0 * x + np.cos(x))))
    assert r.d_ret[1] == pytest.approx(float(np.sum(x * x)))


def test_float_arrays(lib):
    x = np.array([1.0, 2.0], dtype=np.float32)
    y, dy, dx = np.zeros(2, np.float32), np.ones(2, np.float32), np.zeros(2, np.float32)
    lib.scale_grad(x, dx, y, dy, 2)
    assert list(y) == [3.0, 12.0] and list(dx) == [6.0, 12.0] and list(dy) == [0.0, 0.0]


def test_clear_errors_for_wrong_arguments(lib):
    with pytest.raises(TypeError, match="takes a NumPy array"):
        lib.energy_grad([0.5], np.zeros(1), 1, 2.0, 1.0)
    with pytest.raises(TypeError, match="must be a NumPy array of float64, not float32"):
        lib.energy_grad(np.zeros(1, np.float32), np.zeros(1), 1, 2.0, 1.0)
    with pytest.raises(TypeError, match=r"energy_grad\(\) takes 5 arguments"):
        lib.energy_grad(np.zeros(1))
    with pytest.raises(AttributeError, match="has no function 'nope'"):
        lib.nope
    assert "reverse mode, width 1, derivative of energy" in lib.energy_grad.__doc__


def test_build_errors_are_reported(tmp_path):
    src = tmp_path / "bad.c"
    src.write_text("// @diff(g: (actve) -> active)\ndouble f(double x) { return x; }\n")
    with pytest.raises(adgen.BuildError, match=r"bad.c:1:14: error: unknown activity 'actve'"):
        adgen.load(src)


def test_load_a_build_directory(tmp_path):
    from adgen.frontend.cli import main

    src = tmp_path / "k.c"
    src.write_text(SOURCE)
    assert main(["build", "-q", str(src), "-o", str(tmp_path / "out")]) == 0
    lib = adgen.load(tmp_path / "out")
    assert lib.functions == ["energy_fwd", "energy_grad", "scale_grad"]  # derived functions only
    dx = np.zeros(2)
    assert lib.energy_grad(np.array([1.0, 2.0]), dx, 2, 1.0, 1.0).ret == pytest.approx(5 + np.sin(1) + np.sin(2))
    with pytest.raises(FileNotFoundError, match="holds no output of `adgen build`"):
        adgen.load(tmp_path)
