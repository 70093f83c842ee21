"""Control flow and memory patterns in both modes at once: nested loops, early returns,
pointer walks, `continue`, arrays of structs, float data. Each function has a forward and a
reverse derivative; they must satisfy <J u, v> = <u, J^T v> and match finite differences."""

from __future__ import annotations

import ctypes as C
import random

import pytest

from test_forward import D, F, I, P, _build_module, _grad_fd, arr, close, fn

SOURCE = r"""
#include <math.h>

typedef struct { double m; double x[2]; } particle;

// @diff(matvec_f: (dual, dual, dual, const, const); matvec_r: (dup, dup, dup, const, const))
void matvec(const double *A, const double *x, double *y, int rows, int cols)
{
    for (int i = 0; i < rows; i++) {
        double s = 0;
        for (int j = 0; j < cols; j++)
            s += A[i * cols + j] * sin(x[j]);
        y[i] = s * s;
    }
}

// @diff(first_f: (dual, const, dual) -> dualonly; first_r: (dup, const, active) -> activeonly)
double first_above(const double *x, int n, double t)
{
    for (int i = 0; i < n; i++) {
        if (x[i] * t > 1.0)
            return x[i] * x[i] * t;
        if (x[i] < -5.0)
            return exp(x[i]);
    }
    return t * t;
}

// @diff(walk_f: (dual, const) -> dualonly; walk_r: (dup, const) -> activeonly)
double walk(const double *p, int n)
{
    const double *end = p + n;
    double s = 0, last = 1.0;
    while (p < end) {
        s += *p * last;
        last = *p++;
    }
    return s;
}

// @diff(skip_f: (dual, const) -> dualonly; skip_r: (dup, const) -> activeonly)
double skip(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        if (i % 3 == 1)
            continue;
        if (x[i] > 0.5) {
            s += log(x[i]);
            continue;
        }
        s += x[i] * s + 1.0;
    }
    return s;
}

// @diff(energy_f: (dual, const) -> dualonly; energy_r: (dup, const) -> activeonly)
double energy(const particle *p, int n)
{
    double e = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double dx = p[i].x[0] - p[j].x[0], dy = p[i].x[1] - p[j].x[1];
            e += p[i].m * p[j].m / sqrt(dx * dx + dy * dy + 0.1);
        }
    return e;
}

// @diff(mix_f: (const, dual, dual, const) -> dual; mix_r: (const, dup, active, const) -> active)
double mix(const double *x, double *y, double t, int k)
{
    double s = 0;
    for (int i = 0; i < 4; i++) {
        s += (t * i > 1.0 ? x[i] : y[i]) * t;
        y[i] = (t > 0.5 ? x[i] : y[(i + k) % 4]) * t;
    }
    return s;
}

// @diff(cases_f: (dual, const) -> dualonly; cases_r: (dup, const) -> activeonly)
double cases(const double *x, int n)
{
    double s = 0;
    for (int k = 0; k < n; k++) {
        switch (k % 7) {
        case 0: case 1: s += x[k] * x[k]; break;
        case 2: case 3: s += sin(x[k]); break;
        case 4: case 5: break;
        default: s -= x[k];
        }
        s *= 0.9 + 0.05 * x[k];
    }
    return s;
}

// @diff(smooth_f: (dual, const, const); smooth_r: (dup, const, const))
void smooth(float *x, int n, int sweeps)
{
    for (int s = 0; s < sweeps; s++)
        for (int i = 1; i < n - 1; i++)
            x[i] = 0.25f * x[i - 1] + 0.5f * x[i] + 0.25f * x[i + 1] * x[i + 1];
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return _build_module(tmp_path_factory, SOURCE)


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def test_nested_loops_matvec(lib):
    rows, cols = 3, 4
    rng = random.Random(1)
    A = [rng.uniform(-1, 1) for _ in range(rows * cols)]
    x = [rng.uniform(-1, 1) for _ in range(cols)]
    f = fn(lib, "matvec_f", None, P, P, P, P, P, P, I, I)
    r = fn(lib, "matvec_r", None, P, P, P, P, P, P, I, I)
    uA, ux = [rng.uniform(-1, 1) for _ in A], [rng.uniform(-1, 1) for _ in x]
    v = [rng.uniform(-1, 1) for _ in range(rows)]
    ju = arr([0.0] * rows)
    f(arr(A), arr(uA), arr(x), arr(ux), arr([0.0] * rows), ju, rows, cols)
    gA, gx = arr([0.0] * len(A)), arr([0.0] * cols)
    r(arr(A), gA, arr(x), gx, arr([0.0] * rows), arr(v), rows, cols)
    assert _dot(ju, v) == pytest.approx(_dot(uA, gA) + _dot(ux, gx), rel=1e-12)


def _check_scalar(lib, name, x, extra_args, seed_types):
    """FD and forward-vs-reverse for f(x: double*, ...) -> double with x dup/dual."""
    n = len(x)
    primal = fn(lib, name, D, P, *seed_types)
    f = fn(lib, f"{name}_f", D, P, P, *seed_types)
    r = fn(lib, f"{name}_r", None, P, P, *seed_types, D)
    g = arr([0.0] * n)
    r(arr(x), g, *extra_args, 1.0)
    for k in range(n):
        assert close(g[k], _grad_fd(lambda v: primal(arr(v), *extra_args), x, k)), (name, k)
        unit = [1.0 if j == k else 0.0 for j in range(n)]
        assert f(arr(x), arr(unit), *extra_args) == pytest.approx(g[k], rel=1e-12, abs=1e-14)


def test_early_returns_from_a_loop(lib):
    first = fn(lib, "first_above", D, P, I, D)
    f = fn(lib, "first_f", D, P, P, I, D, D)
    r = fn(lib, "first_r", D, P, P, I, D, D)
    for x, t in [([0.1, 0.3, 2.0, 5.0], 1.5), ([0.1, -7.0, 2.0], 0.9), ([0.1, 0.2], 0.5)]:
        n = len(x)
        g = arr([0.0] * n)
        gt = r(arr(x), g, n, t, 1.0)
        assert close(gt, (first(arr(x), n, t + 1e-6) - first(arr(x), n, t - 1e-6)) / 2e-6)
        assert f(arr(x), arr([0.0] * n), n, t, 1.0) == pytest.approx(gt, rel=1e-12)
        for k in range(n):
            assert close(g[k], _grad_fd(lambda v: first(arr(v), n, t), x, k))


def test_pointer_walk(lib):
    _check_scalar(lib, "walk", [0.5, -1.5, 2.0, 0.25, 3.0], (5,), (I,))


def test_continue_statements(lib):
    _check_scalar(lib, "skip", [0.3, 0.9, 0.2, 0.7, 0.1, 0.05, 1.5], (7,), (I,))


def test_switch_cases_sharing_a_block(lib):
    """A switch in a loop whose cases share a block (0 and 1, 2 and 3) or go straight to the
    block after it (4 and 5: two edges from one block, two entries of the phi after it)."""
    _check_scalar(lib, "cases", [0.3 + 0.07 * k * (-1) ** k for k in range(16)], (16,), (I,))


def test_array_of_structs(lib):
    class Particle(C.Structure):
        _fields_ = [("m", D), ("x", D * 2)]

    n = 4
    rng = random.Random(5)
    values = [rng.uniform(0.5, 2.0) if k % 3 == 0 else rng.uniform(-2, 2) for k in range(3 * n)]
    PP = C.POINTER(Particle)
    primal = fn(lib, "energy", D, PP, I)
    f = fn(lib, "energy_f", D, PP, PP, I)
    r = fn(lib, "energy_r", None, PP, PP, I, D)

    def pack(v):
        return (Particle * n)(*[Particle(v[3 * i], (D * 2)(v[3 * i + 1], v[3 * i + 2])) for i in range(n)])

    g = pack([0.0] * (3 * n))
    r(pack(values), g, n, 1.0)
    flat = [x for p in g for x in (p.m, p.x[0], p.x[1])]
    for k in range(3 * n):
        assert close(flat[k], _grad_fd(lambda v: primal(pack(v), n), values, k))
        unit = [1.0 if j == k else 0.0 for j in range(3 * n)]
        assert f(pack(values), pack(unit), n) == pytest.approx(flat[k], rel=1e-12, abs=1e-14)


def test_in_place_float_sweeps(lib):
    FP = C.POINTER(F)
    n, sweeps = 6, 3
    rng = random.Random(9)
    x = [rng.uniform(-1, 1) for _ in range(n)]
    f = fn(lib, "smooth_f", None, FP, FP, I, I)
    r = fn(lib, "smooth_r", None, FP, FP, I, I)
    u, v = [rng.uniform(-1, 1) for _ in range(n)], [rng.uniform(-1, 1) for _ in range(n)]
    ju = arr(u, F)
    f(arr(x, F), ju, n, sweeps)
    jtv = arr(v, F)
    r(arr(x, F), jtv, n, sweeps)
    assert _dot(ju, v) == pytest.approx(_dot(u, jtv), rel=1e-5)


@pytest.mark.parametrize("t", [0.3, 0.7, -0.4])
def test_select_between_const_and_active_arrays(lib, t):
    """c ? x[i] : y[i] with x const becomes a select of pointers: derivatives flow through y only."""
    primal = fn(lib, "mix", D, P, P, D, I)
    x, y = [0.3, -0.2, 0.5, 0.9], [0.1, 0.4, -0.6, 0.2]

    def outputs(v):  # (return value, y after the call) from (y, t)
        yy = arr(v[:4])
        return [primal(arr(x), yy, v[4], 1)] + list(yy)

    z = y + [t]
    rng = random.Random(11)
    u, w = [rng.uniform(-1, 1) for _ in range(5)], [rng.uniform(-1, 1) for _ in range(5)]
    class R(C.Structure):
        _fields_ = [("ret", D), ("d_ret", D)]

    f = fn(lib, "mix_f", R, P, P, P, D, D, I)
    dy = arr(u[:4])
    jvp = [f(arr(x), arr(y), dy, t, u[4], 1).d_ret] + list(dy)
    h = 1e-6
    fd = [(a - b) / (2 * h) for a, b in zip(outputs([p + h * q for p, q in zip(z, u)]),
                                           outputs([p - h * q for p, q in zip(z, u)]))]
    assert jvp == pytest.approx(fd, rel=1e-6, abs=1e-8)

    class G(C.Structure):
        _fields_ = [("ret", D), ("d_t", D)]

    r = fn(lib, "mix_r", G, P, P, P, D, I, D)
    gy = arr(w[1:])
    g = r(arr(x), arr(y), gy, t, 1, w[0])
    assert _dot(jvp, w) == pytest.approx(_dot(u, list(gy) + [g.d_t]), rel=1e-12)
