"""Reverse mode against central finite differences and against forward mode
(<J u, v> = <u, J^T v>): the kernels of the design (rosenbrock, norm, memcpy, in-place updates,
temporaries, while loops, recursion), every libm rule, duponly/activeonly, and widths."""

from __future__ import annotations

import ctypes as C
import math
import random

import pytest

from conftest import central_difference
from test_forward import LIBM, SCALARS, D, F, I, P, _build_module, _grad_fd, _libm_exact, arr, close, fn, libm_source


def result(*fields):
    class Result(C.Structure):
        _fields_ = list(fields)

    return Result


KERNELS = r"""
#include <math.h>
#include <stdlib.h>
#include <string.h>

// @diff(rosen_grad: (const, const, active, active) -> active)
double rosen(double a, double b, double x, double y)
{
    return (a - x) * (a - x) + b * (y - x * x) * (y - x * x);
}

__attribute__((noinline)) double mag(const double *restrict x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}

// @diff(norm_grad: (dup, dup, const); norm_fwd: (dual, dual, const))
void norm(double *restrict out, const double *restrict in, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = in[i] / mag(in, n);
}

// @diff(copy_grad: (dup, dup))
void copy(double *dst, const double *src)
{
    memcpy(dst, src, 8);
}

// @diff(block_copy_grad: (dup, dup, const))
void block_copy(double *dst, const double *src, int n)
{
    memcpy(dst, src, n * sizeof(double));
}

// @diff(block_move_grad: (dup, const))
void block_move(double *x, int n)
{
    memmove(x + 1, x, (n - 1) * sizeof(double));
    x[0] = x[n - 1] * x[1];
}

// @diff(step_grad: (dup, dup, const, const); step_fwd: (dual, dual, const, const))
void step(double *pos, double *vel, int n, double dt)
{
    for (int i = 0; i < n; i++) {
        double r = sqrt(pos[i] * pos[i] + 1.0);
        vel[i] = vel[i] - dt * pos[i] / (r * r * r);
        pos[i] = pos[i] + dt * vel[i] * pos[i];
    }
}

// @diff(temp_grad: (dup, const) -> activeonly)
double temp(const double *x, int n)
{
    double *t = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++)
        t[i] = sin(x[i]) * x[(i + 1) % n];
    double s = 0;
    for (int i = 0; i < n; i++)
        s += t[i] * t[(i + 2) % n];
    free(t);
    return s;
}

// @diff(heron_grad: (active) -> activeonly)
double heron(double a)
{
    double x = a;
    while (fabs(x * x - a) > 1e-14 * a)
        x = 0.5 * (x + a / x);
    return x;
}

// @diff(tree_grad: (active, const) -> active; tree_fwd: (dual, const) -> dualonly)
double tree(double x, int depth)
{
    if (depth == 0)
        return sin(x) + 2.0;
    return tree(x * 0.9, depth - 1) * tree(x * 1.1 + 0.2, depth - 1);
}

// @diff(dot_grad: (duponly, dup, const) -> activeonly)
double dot(double *a, const double *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

// @diff(branchy_grad: (dup, const) -> activeonly)
double branchy(const double *x, int n)
{
    double s = 0, t[16];
    for (int i = 0; i < n; i++) {
        if (x[i] > 0)
            t[i & 15] = exp(x[i]);
        else
            t[i & 15] = x[i] * x[i] * 3.0;
        s += t[i & 15] * (i % 3 == 0 ? x[(i + 1) % n] : 1.0);
        if (s > 1e6)
            break;
    }
    return s;
}

/* a pointer walking a stack array: its shadow is a phi the reverse sweep needs per iteration */
// @diff(walk_grad: (dup, const) -> activeonly)
double walk(const double *x, int n)
{
    double w[64];
    double *p = w;
    for (int i = 0; i < n; i++) {
        *p++ = sin(x[i]);
        if (x[i] > 0.5)
            *p++ = x[i] * x[i];
    }
    double s = 0;
    for (double *q = w; q < p; q++)
        s += *q * *q;
    return s;
}

// @diff(map_grad: (dup, dup, const); map_fwd: (dual, dual, const))
void map(const double *x, double *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = tanh(x[i]) * x[(i + 1) % n] + log1p(x[i] * x[i]);
}
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    return _build_module(tmp_path_factory, KERNELS)


def _unit(n, k):
    return [1.0 if j == k else 0.0 for j in range(n)]


def test_rosenbrock_active_scalars(kernels):
    primal = fn(kernels, "rosen", D, D, D, D, D)
    grad = fn(kernels, "rosen_grad", result(("ret", D), ("d_x", D), ("d_y", D)), D, D, D, D, D)
    for x, y in [(0.5, 0.7), (-1.2, 1.0), (2.0, 3.5)]:
        g = grad(1.0, 100.0, x, y, 1.0)
        assert g.ret == pytest.approx(primal(1.0, 100.0, x, y), rel=1e-12)
        assert close(g.d_x, central_difference(lambda t: primal(1.0, 100.0, t, y), x))
        assert close(g.d_y, central_difference(lambda t: primal(1.0, 100.0, x, t), y))
    assert grad(1.0, 100.0, 0.5, 0.7, 2.0).d_x == 2 * grad(1.0, 100.0, 0.5, 0.7, 1.0).d_x  # the seed scales


def test_norm_of_the_seeds(kernels):
    grad = fn(kernels, "norm_grad", None, P, P, P, P, I)
    fwd = fn(kernels, "norm_fwd", None, P, P, P, P, I)
    n = 6
    x = [0.3 * (k + 1) * (-1) ** k for k in range(n)]
    for k in range(n):  # row k of the Jacobian, against finite differences of out[k]
        dx, dout = arr([0.0] * n), arr(_unit(n, k))
        grad(arr([0.0] * n), dout, arr(x), dx, n)
        for j in range(n):
            def out_k(v, j=j):
                y = arr([0.0] * n)
                fwd(y, arr([0.0] * n), arr(v), arr([0.0] * n), n)
                return y[k]
            assert close(dx[j], _grad_fd(out_k, x, j)), (k, j)
        assert list(dout) == [0.0] * n  # the seed of written memory is consumed


def test_memcpy_of_the_seeds(kernels):
    grad = fn(kernels, "copy_grad", None, P, P, P, P)
    dst, ddst, src, dsrc = arr([0.0]), arr([2.5]), arr([7.0]), arr([0.5])
    grad(dst, ddst, src, dsrc)
    assert (dst[0], ddst[0], dsrc[0]) == (7.0, 0.0, 3.0)  # src' += dst'; dst' = 0


def test_block_copy_and_overlapping_move(kernels):
    copy = fn(kernels, "block_copy_grad", None, P, P, P, P, I)
    ddst, dsrc = arr([1.0, 2.0, 3.0]), arr([10.0, 20.0, 30.0])
    copy(arr([0.0] * 3), ddst, arr([1.0, 2.0, 3.0]), dsrc, 3)
    assert list(dsrc) == [11.0, 22.0, 33.0] and list(ddst) == [0.0] * 3
    move = fn(kernels, "block_move_grad", None, P, P, I)
    primal = fn(kernels, "block_move", None, P, I)
    x = [0.5, -1.5, 2.0, 3.0]
    for k in range(4):
        seed = arr(_unit(4, k))
        move(arr(x), seed, 4)
        for j in range(4):
            def out(v, k=k):
                y = arr(v)
                primal(y, 4)
                return y[k]
            assert close(seed[j], _grad_fd(out, x, j)), (k, j)


def test_in_place_update_is_cached(kernels):
    grad = fn(kernels, "step_grad", None, P, P, P, P, I, D)
    fwd = fn(kernels, "step_fwd", None, P, P, P, P, I, D)
    n, dt = 4, 0.1
    pos, vel = [0.5, -1.0, 1.5, 0.25], [0.1, 0.2, -0.3, 0.4]
    rng = random.Random(3)
    for _ in range(3):
        u = [rng.uniform(-1, 1) for _ in range(2 * n)]
        v = [rng.uniform(-1, 1) for _ in range(2 * n)]
        dpos, dvel = arr(u[:n]), arr(u[n:])
        fwd(arr(pos), dpos, arr(vel), dvel, n, dt)  # tangents of the outputs, in place
        ju = list(dpos) + list(dvel)
        bpos, bvel = arr(v[:n]), arr(v[n:])
        grad(arr(pos), bpos, arr(vel), bvel, n, dt)  # adjoints of the inputs, in place
        jtv = list(bpos) + list(bvel)
        assert sum(a * b for a, b in zip(ju, v)) == pytest.approx(sum(a * b for a, b in zip(u, jtv)), rel=1e-12)


def test_malloced_temporary(kernels):
    primal = fn(kernels, "temp", D, P, I)
    grad = fn(kernels, "temp_grad", None, P, P, I, D)
    x = [0.5, 1.5, -0.25, 2.0, 1.0]
    dx = arr([0.0] * 5)
    grad(arr(x), dx, 5, 1.0)
    for k in range(5):
        assert close(dx[k], _grad_fd(lambda v: primal(arr(v), 5), x, k))


def test_while_loop_with_data_dependent_trip_count(kernels):
    grad = fn(kernels, "heron_grad", D, D, D)
    for a in (0.3, 2.0, 17.0, 1e4):
        assert close(grad(a, 1.0), 0.5 / math.sqrt(a), rtol=1e-9)


def test_recursion_against_forward(kernels):
    primal = fn(kernels, "tree", D, D, I)
    grad = fn(kernels, "tree_grad", result(("ret", D), ("d_x", D)), D, I, D)
    fwd = fn(kernels, "tree_fwd", D, D, D, I)
    for depth in (0, 1, 3, 5):
        g = grad(0.8, depth, 1.0)
        assert g.ret == pytest.approx(primal(0.8, depth), rel=1e-12)
        assert g.d_x == pytest.approx(fwd(0.8, 1.0, depth), rel=1e-12)
        assert close(g.d_x, central_difference(lambda t: primal(t, depth), 0.8))


def test_duponly_and_activeonly(kernels):
    grad = fn(kernels, "dot_grad", None, P, P, P, P, I, D)
    a, b = [1.0, 2.0, 3.0], [4.0, 5.0, 6.0]
    da, db = arr([0.0] * 3), arr([0.0] * 3)
    grad(arr(a), da, arr(b), db, 3, 2.0)
    assert list(da) == [2 * x for x in b] and list(db) == [2 * x for x in a]


def test_branches_breaks_and_stack_arrays(kernels):
    primal = fn(kernels, "branchy", D, P, I)
    grad = fn(kernels, "branchy_grad", None, P, P, I, D)
    x = [0.5, -1.5, 0.25, 2.0, -0.75, 1.0, -0.1]
    dx = arr([0.0] * len(x))
    grad(arr(x), dx, len(x), 1.0)
    for k in range(len(x)):
        assert close(dx[k], _grad_fd(lambda v: primal(arr(v), len(v)), x, k))


def test_pointer_walking_a_stack_array(kernels):
    primal = fn(kernels, "walk", D, P, I)
    grad = fn(kernels, "walk_grad", None, P, P, I, D)
    x = [0.3 + 0.11 * k for k in range(8)]
    dx = arr([0.0] * len(x))
    grad(arr(x), dx, len(x), 1.0)
    for k in range(len(x)):
        assert close(dx[k], _grad_fd(lambda v: primal(arr(v), len(v)), x, k))


def test_forward_against_reverse_on_a_map(kernels):
    grad = fn(kernels, "map_grad", None, P, P, P, P, I)
    fwd = fn(kernels, "map_fwd", None, P, P, P, P, I)
    n = 7
    rng = random.Random(7)
    x = [rng.uniform(-1, 1) for _ in range(n)]
    for _ in range(3):
        u = [rng.uniform(-1, 1) for _ in range(n)]
        v = [rng.uniform(-1, 1) for _ in range(n)]
        ju = arr([0.0] * n)
        fwd(arr(x), arr(u), arr([0.0] * n), ju, n)
        jtv = arr([0.0] * n)
        grad(arr(x), jtv, arr([0.0] * n), arr(v), n)
        assert sum(a * b for a, b in zip(ju, v)) == pytest.approx(sum(a * b for a, b in zip(u, jtv)), rel=1e-12)


@pytest.fixture(scope="module")
def libm(tmp_path_factory):
    return _build_module(tmp_path_factory, libm_source("r", "active", "activeonly"))


@pytest.mark.parametrize("name, arity, point", LIBM, ids=[n for n, _, _ in LIBM])
@pytest.mark.parametrize("precision", ["double", "float"])
def test_libm_reverse(libm, name, arity, point, precision):
    point = point if isinstance(point, tuple) else (point,)
    t, suffix = (D, "") if precision == "double" else (F, "f")
    primal = fn(libm, f"m_{name}{suffix}", t, *[t] * arity)
    ret = t if arity == 1 else result(*[(f"d_a{i}", t) for i in range(arity)])
    grad = fn(libm, f"r_{name}{suffix}", ret, *[t] * arity, t)
    got = grad(*point, 1.0)
    values = [got] if arity == 1 else [getattr(got, f"d_a{i}") for i in range(arity)]
    for k in range(arity):
        expected = _grad_fd(lambda v: primal(*v), list(point), k) if precision == "double" else \
            _libm_exact(name, point, k)
        tol = 1e-6 if precision == "double" else 1e-4
        assert close(values[k], expected, rtol=tol, atol=tol), (name, k)


def test_powi_reverse(libm):
    assert close(fn(libm, "r_powi", D, D, I, D)(1.3, 5, 1.0), 5 * 1.3 ** 4)


@pytest.mark.parametrize("name, t", [("ldexp", D), ("ldexpf", F), ("scalbn", D)])
def test_scaling_by_a_power_of_two_reverse(libm, name, t):
    for x, n in ((1.3, 5), (-0.7, -3), (0.0, 2)):
        assert close(fn(libm, f"r_{name}", t, t, I, t)(x, n, 1.0), 2.0 ** n)


@pytest.mark.parametrize("name, t", [("frexp", D), ("frexpf", F)])
def test_frexp_mantissa_reverse(libm, name, t):
    for x in (5.3, -0.3, 1e-3):
        scale = 2.0 ** -math.frexp(x)[1]
        assert close(fn(libm, f"r_{name}", t, t, t)(x, 1.0), 2 * x * scale * scale, rtol=1e-6)


def test_fdim_below_its_kink_is_flat_reverse(libm):
    got = fn(libm, "r_fdim_below", result(("d_x", D), ("d_y", D)), D, D, D)(0.4, 1.7, 1.0)
    assert close(got.d_x, 0.5) and close(got.d_y, 0.0)


WIDTHS = r"""
#include <math.h>

// @diff(f_grad2: reverse[2] (dup, const, active) -> active;
//       f_grad4: reverse[4] (dup, const, active) -> activeonly;
//       f_grad4v: reverse[4] (dupv, const, active) -> activeonly;
//       f_grad1: (dup, const, active) -> activeonly)
double f(const double *x, int n, double s)
{
    double acc = 0;
    for (int i = 0; i < n; i++)
        acc += sin(s * x[i]) * x[i];
    return acc * s;
}
"""


@pytest.fixture(scope="module")
def widths(tmp_path_factory):
    return _build_module(tmp_path_factory, WIDTHS)


def test_widths_two_and_four_match_width_one(widths):
    n = 5
    x = [0.1 * k - 0.2 for k in range(n)]
    one = fn(widths, "f_grad1", D, P, P, I, D, D)
    singles = []
    for seed in (1.0, -2.0, 0.5, 3.0):
        dx = arr([0.0] * n)
        ds = one(arr(x), dx, n, 0.7, seed)
        singles.append((list(dx), ds))
    two = fn(widths, "f_grad2", result(("ret", D), ("d_s", D * 2)), P, P, P, I, D, D, D)
    dxs = [arr([0.0] * n) for _ in range(2)]
    r = two(arr(x), *dxs, n, 0.7, 1.0, -2.0)
    for k in range(2):
        assert list(dxs[k]) == pytest.approx(singles[k][0], rel=1e-13)
        assert r.d_s[k] == pytest.approx(singles[k][1], rel=1e-13)
    four = fn(widths, "f_grad4", result(("d_s", D * 4)), P, P, P, P, P, I, D, D, D, D, D)
    dxs = [arr([0.0] * n) for _ in range(4)]
    r = four(arr(x), *dxs, n, 0.7, 1.0, -2.0, 0.5, 3.0)
    for k in range(4):
        assert list(dxs[k]) == pytest.approx(singles[k][0], rel=1e-13)
        assert r.d_s[k] == pytest.approx(singles[k][1], rel=1e-13)
    fourv = fn(widths, "f_grad4v", result(("d_s", D * 4)), P, P, I, D, D, D, D, D)
    dxv = arr([0.0] * (4 * n))
    r = fourv(arr(x), dxv, n, 0.7, 1.0, -2.0, 0.5, 3.0)
    for k in range(4):
        assert [dxv[j * 4 + k] for j in range(n)] == pytest.approx(singles[k][0], rel=1e-13)
        assert r.d_s[k] == pytest.approx(singles[k][1], rel=1e-13)
    primal = lambda v, s: sum(math.sin(s * a) * a for a in v) * s
    for j in range(n):
        assert close(singles[0][0][j], _grad_fd(lambda v: primal(v, 0.7), x, j))
    assert close(singles[0][1], central_difference(lambda s: primal(x, s), 0.7))


def test_reverse_unsupported_is_located(adgen, c_file, tmp_path):
    src = c_file("double ext(double);\n// @diff(u_grad: (active) -> activeonly)\n"
                 "double u(double x)\n{\n    return ext(x) * x;\n}\n")
    result_ = adgen("build", src, "-o", tmp_path / "out")
    assert result_.status == 1
    assert "src.c:5:12: error: cannot differentiate a call to 'ext', which is not defined in the sources and has " \
           "no derivative rule in function 'u' (needed by 'u_grad')" in result_.err


@pytest.fixture(scope="module")
def scalars(tmp_path_factory):
    return _build_module(tmp_path_factory, SCALARS)


def test_scalar_constructs_reverse(scalars):
    primal = fn(scalars, "arith", D, D, D)
    grad = fn(scalars, "arith_r", result(("ret", D), ("d_x", D), ("d_y", D)), D, D, D)
    for x, y in [(0.7, 1.9), (2.5, -0.4), (-1.2, -3.3)]:
        g = grad(x, y, 1.0)
        assert close(g.d_x, central_difference(lambda t: primal(t, y), x))
        assert close(g.d_y, central_difference(lambda t: primal(x, t), y))
    pick = fn(scalars, "pick", D, D, I)
    pick_r = fn(scalars, "pick_r", D, D, I, D)
    for k in (0, 1, 2, 7):
        assert close(pick_r(0.8, k, 1.0), central_difference(lambda t: pick(t, k), 0.8))
    relu3_r = fn(scalars, "relu3_r", D, D, D)
    assert close(relu3_r(1.5, 1.0), 3 * 1.5 ** 2) and relu3_r(-1.5, 1.0) == 0.0
    mixed_r = fn(scalars, "mixed_r", result(("ret", F), ("d_x", F)), F, I, F)
    x = 0.33
    assert abs(mixed_r(x, 3, 1.0).d_x - (2 * x * 3 + math.cos(x) * int(x * 10))) < 1e-5
    frac = fn(scalars, "frac", D, D, D)
    frac_r = fn(scalars, "frac_r", result(("d_x", D), ("d_y", D)), D, D, D)
    for x, y in [(0.7, 1.3), (2.1, -0.6)]:
        g = frac_r(x, y, 1.0)
        assert close(g.d_x, central_difference(lambda t: frac(t, y), x))
        assert close(g.d_y, central_difference(lambda t: frac(x, t), y))
