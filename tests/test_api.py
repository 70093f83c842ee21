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
    from adgen.commands.cli import main

    src = tmp_path / "k.c"
    src.write_text(SOURCE)
    assert main(["build", "-q", str(src), "-o", str(tmp_path / "out")]) == 0
    lib = adgen.load(tmp_path / "out")
    assert lib.functions == ["energy_fwd", "energy_grad", "scale_grad"]  # derived functions only
    dx = np.zeros(2)
    assert lib.energy_grad(np.array([1.0, 2.0]), dx, 2, 1.0, 1.0).ret == pytest.approx(5 + np.sin(1) + np.sin(2))
    with pytest.raises(FileNotFoundError, match="holds no output of `adgen build`"):
        adgen.load(tmp_path)


SHADOWS = r"""
// @diff(axpy_grad: (dup, dup, const))
void axpy(const double *x, double *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] += 2.0 * x[i] * x[i];
}

// @diff(sq_v: forward[2] (dualv) -> dual)
double sq(double x) { return x * x; }
"""


@pytest.fixture(scope="module")
def shadowed(tmp_path_factory):
    src = tmp_path_factory.mktemp("shadows") / "axpy.c"
    src.write_text(SHADOWS)
    return adgen.load(src, build_dir=src.parent / "build")


def test_shadows_and_tangents_are_checked(lib, shadowed):
    """A shadow of another size than its primal made the C code write past it; one that is the
    primal, or shares memory with another shadow of a separate primal, gives wrong derivatives
    quietly; a read-only one is written all the same. Each is a ValueError before the call.
    A tangent only has its size checked: that of a const input may be the input itself."""
    x, dx, y, dy = np.ones(4), np.zeros(4), np.zeros(4), np.ones(4)
    with pytest.raises(ValueError, match=r"axpy_grad\(\): 'd_x' has 2 elements; as the shadow of x it must have 4"):
        shadowed.axpy_grad(x, np.zeros(2), y, dy, 4)
    with pytest.raises(ValueError, match=r"'d_x' shares memory with 'x'; a shadow needs memory of its own"):
        shadowed.axpy_grad(x, x, y, dy, 4)
    both = np.zeros(8)
    with pytest.raises(ValueError, match=r"'d_y' shares memory with 'd_x', though their primals do not overlap so"):
        shadowed.axpy_grad(x, both[:4], y, both[2:6], 4)
    frozen = np.zeros(4)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=r"'d_x' is read-only; the gradient is added into it"):
        shadowed.axpy_grad(x, frozen, y, dy, 4)
    with pytest.raises(TypeError, match="must be C-contiguous"):
        shadowed.axpy_grad(np.ones(8)[::2], dx, y, dy, 4)
    with pytest.raises(ValueError, match=r"sq_v\(\): 'd_x' has 3 elements; as the tangents of x, 2 lanes "
                                         r"interleaved it must have 2"):
        shadowed.sq_v(3.0, np.ones(3))
    assert list(shadowed.sq_v(3.0, np.array([1.0, 2.0])).d_ret) == [6.0, 12.0]
    along = np.array([0.5, -1.0, 2.0])
    along.flags.writeable = False
    assert lib.energy_fwd(along, along, along, 3, 2.0, 0.0, 1.0).d_ret[0] == pytest.approx(  # x·∇f, along x itself
        float(np.sum(along * (4.0 * along + np.cos(along)))))
    with pytest.raises(ValueError, match="'d_x' has 2 elements; as the shadow of x it must have 3"):
        lib.energy_grad(np.ones(3), np.zeros(2), 3, 1.0, 1.0)
    assert not dx.any() and not y.any()  # nothing ran


def test_aliased_primals_take_shadows_aliased_alike(shadowed):
    """`axpy(x, x, n)` is valid C (y += 2x², in place): its shadows then alias the same way, and
    the gradient is that of the aliased function, x + 2x²."""
    x0 = np.array([0.5, -1.0, 2.0])
    x, shadow = x0.copy(), np.ones(3)  # the seed on y, which is x
    shadowed.axpy_grad(x, shadow, x, shadow, 3)
    assert x == pytest.approx(x0 + 2 * x0 * x0)
    assert shadow == pytest.approx(1 + 4 * x0)  # d(x + 2x²)/dx
