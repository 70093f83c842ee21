"""OpenMP-parallel sources (built with -fopenmp): derivatives in forward mode (forked as the
primal's regions are) and reverse mode (both sweeps forked, or on the calling thread), against
central differences and each other, at 1, 2 and 4 threads; the constructs adgen does not differentiate yet are errors at the
pragma's line. Needs an OpenMP runtime (libomp: Debian's libomp-dev) to run the code."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import compile_c
from fuzzer import libomp, openmp_runtime

THREADS = (1, 2, 4)


LIBOMP = libomp()
pytestmark = pytest.mark.skipif(LIBOMP is None, reason="no OpenMP runtime (libomp) to run parallel code: "
                                                       "install libomp-dev (.ci/run does)")

SOURCE = r"""
#include <math.h>
int omp_get_thread_num(void);

/* a parallel loop; `who` records which thread ran each iteration */
// @diff(scale_fwd: forward (dual, dual, const, const))
// @diff(scale_fwd2: forward[2] (dual, dual, const, const))
// @diff(scale_grad: (dup, dup, const, const))
void scale(double *restrict y, const double *restrict x, int *who, int n) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++) {
        y[i] = sin(x[i]) * x[i] + 1.0;
        who[i] = omp_get_thread_num();
    }
}

/* an active scalar captured firstprivate, a dynamic schedule */
// @diff(axpy_fwd: forward (dual, dual, const, dual) -> dual)
// @diff(axpy_grad: (active, dup, const, dup) -> active)
double axpy(double a, const double *restrict x, int n, double *restrict y) {
    #pragma omp parallel for firstprivate(a) schedule(dynamic, 7)
    for (int i = 0; i < n; i++) y[i] = a * x[i] + exp(-a * x[i]);
    return y[n - 1];
}

/* a guided schedule on a team of three, gathering through a const array of indices */
// @diff(cube_fwd: forward (dual, dual, const, const))
// @diff(cube_grad: (dup, dup, const, const))
void cube(double *restrict y, const double *restrict x, const int *idx, int n) {
    #pragma omp parallel for schedule(guided) num_threads(3)
    for (int i = 0; i < n; i++) y[i] = x[idx[i]] * x[idx[i]] * x[idx[i]];
}

/* reductions: a sum, a product, a minimum and a maximum */
// @diff(stats_fwd: forward (dual, const, dual))
// @diff(stats_grad: (dup, const, dup))
void stats(const double *restrict x, int n, double *restrict out) {
    double s = 0, p = 1, lo = x[0], hi = x[0];
    #pragma omp parallel for reduction(+: s) reduction(*: p) reduction(min: lo) reduction(max: hi)
    for (int i = 0; i < n; i++) {
        s += x[i] * x[i];
        p *= 1 + 0.01 * x[i];
        lo = fmin(lo, x[i]);
        hi = x[i] > hi ? x[i] : hi;
    }
    out[0] = s; out[1] = p; out[2] = lo; out[3] = hi;
}

/* a reduction of a worksharing loop inside a parallel region (the variant with a barrier) */
// @diff(norm2_fwd: forward (dual, const) -> dual)
// @diff(norm2_grad: (dup, const) -> active)
double norm2(const double *x, int n) {
    double s = 0;
    #pragma omp parallel
    {
        #pragma omp for reduction(+: s)
        for (int i = 0; i < n; i++) s += x[i] * x[i];
    }
    return sqrt(s);
}

/* a parallel region: a collapsed worksharing loop into a private sum, then a critical section */
// @diff(energy_fwd: forward (dual, const, const, dual))
// @diff(energy_grad: (dup, const, const, dup))
void energy(const double *restrict u, int n, int m, double *restrict total) {
    #pragma omp parallel
    {
        double local = 0;
        #pragma omp for collapse(2) schedule(static, 3)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < m; j++)
                local += u[i * m + j] * u[i * m + j] * (1 + 0.1 * j);
        #pragma omp critical
        *total += local;
    }
}

/* a gather through an index array: its adds to x's adjoints cannot be bounded, so are atomic */
// @diff(gather_grad: (dup, dup, const, const, const))
void gather(double *restrict y, const double *restrict x, const int *idx, int *who, int n) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++) {
        y[i] = x[idx[i]] * x[idx[i]];
        who[i] = omp_get_thread_num();
    }
}

/* atomic updates (an addition and a subtraction) of what every iteration adds to */
// @diff(tot_fwd: forward (dual, const, dual))
// @diff(tot_grad: (dup, const, dup))
void tot(const double *x, int n, double *s) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++) {
        #pragma omp atomic
        s[0] += x[i] * x[i];
        #pragma omp atomic
        s[1] -= sin(x[i]);
    }
}

/* interleaved lanes: the region's arrays are its arguments (passed by value), not loaded */
// @diff(wave_fwd4: forward[4] (dualv, dualv, const))
// @diff(wave4_grad: reverse[4] (dupv, dupv, const))
void wave(double *restrict y, const double *restrict x, int n) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++) y[i] = sin(x[i]) * x[(i + 1) % n];
}

/* two phases: what the first loop writes, the second reads at other iterations after the barrier
   between them (reversed by a barrier); a sum reduced in the second */
// @diff(phases_fwd: forward (dual, dual, const) -> dual)
// @diff(phases_grad: (dup, dup, const) -> active)
double phases(const double *restrict x, double *restrict y, int n) {
    double s = 0;
    #pragma omp parallel
    {
        #pragma omp for
        for (int i = 0; i < n; i++) y[i] = sin(x[i]) * x[(i + 3) % n];
        #pragma omp for reduction(+: s)
        for (int i = 0; i < n; i++) s += y[(i + 1) % n] * y[i] * x[i];
    }
    return s;
}

/* rounds of a serial loop and a parallel one over one array, each overwriting what was read
   before it: the serial loop's stores are logged, and the region's, in the threads' own logs,
   joined to the caller's between its own runs (templates/openmp.ll.j2) */
// @diff(rounds_grad: (dup, dup, const) -> active)
double rounds(double *a, double *w, int n) {
    double s = 0;
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < n; i++) {
            double t = 0.1 * r;
            for (int j = 0; j < n; j++) t += w[j] * a[j];
            a[i] = tanh(t);
        }
        #pragma omp parallel for
        for (int i = 0; i < n; i++) a[i] = sin(a[i]) + w[i] * a[i];
        for (int i = 0; i < n; i++) s += a[i] * a[i] * (i + 1);
    }
    return s;
}

/* threads adding differently to what they all read (sharing.py): thread 0 also writes k, so adds
   its adjoints atomically; the others add k's into private buffers, which all threads (thread 0
   too) add up at the barriers and at the end */
// @diff(mixed_fwd: forward (dual, dual, dual, dual, const))
// @diff(mixed_grad: (dup, dup, dup, dup, const))
void mixed(const double *restrict x, double *restrict k, double *restrict y, double *restrict z, int n) {
    #pragma omp parallel
    {
        #pragma omp for
        for (int i = 0; i < n; i++) y[i] = sin(x[i]) + k[0] + 0.5 * k[(i + 1) % n];
        #pragma omp for
        for (int i = 0; i < 1; i++) k[i] = y[i] * y[i + 1];  /* (thread 0's only) */
        #pragma omp for
        for (int i = 0; i < n; i++) z[i] = k[i] * x[i] + k[0] * y[i];
    }
}

/* a critical section inside another (its reverse sweep runs on one thread: a team cannot order
   them), updating a product */
// @diff(nested_grad: (dup, const, dup))
void nested(const double *x, int n, double *acc) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++) {
        #pragma omp critical(outer)
        {
            acc[0] *= 1 + 0.1 * x[i];
            #pragma omp critical(inner)
            acc[1] += acc[0] * x[i];
        }
    }
}

/* a collapsed loop whose store is addressed through the collapsed counter's / and %, after inner
   loops (one as long as that / and % say) read what it may overwrite: checked at run time, not
   logged every time */
// @diff(rows_fwd: forward (dual, dual, const, const))
// @diff(rows_grad: (dup, dup, const, const))
void rows(double *out, const double *in, int n, int m) {
    #pragma omp parallel for collapse(2)
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            double acc = 0;
            for (int k = 0; k < m; k++) acc += in[i * m + k] * (1 + 0.1 * (j - k));
            for (int k = 0; k <= j; k++) acc += 0.01 * in[i * m + k];  /* (as many as j + 1: a mask) */
            out[i * m + j] = acc * acc;
        }
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    """Two builds of SOURCE: with its forward-mode entries alone (the regions fork again: specs/
    openmp.md) and with all (forward derivatives fork there too; reverse mode forks its regions' pairs)."""
    from adgen.commands.cli import main

    builds = []
    for name, text in (("fwd", "\n".join(line for line in SOURCE.splitlines()
                                          if not line.startswith("// @diff(") or "forward" in line)),
                       ("both", SOURCE)):
        work = tmp_path_factory.mktemp(f"openmp-{name}")
        src = work / "par.c"
        src.write_text(text)
        assert main(["build", "-q", str(src), "-o", str(work / "out"), "--", "-fopenmp"]) == 0
        compile_c("-c", "-O2", "-fPIC", "-fopenmp", src, "-o", work / "par.o")
        compile_c("-shared", work / "par.o", work / "out" / "par.adgen.o", *openmp_runtime(), "-lm",
                  "-o", work / "libpar.so")
        builds.append(ctypes.CDLL(str(work / "libpar.so")))
    return Libraries(*builds), ctypes.CDLL(LIBOMP)


class Libraries:
    """The primals and forward derivatives of the forward-only build, the gradients of the other."""

    def __init__(self, forward, both):
        self.forward, self.both = forward, both

    def __getattr__(self, name: str):
        return getattr(self.both if name.endswith("_grad") else self.forward, name)


D = ctypes.c_double
P = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
IP = np.ctypeslib.ndpointer(dtype=np.int32, flags="C_CONTIGUOUS")


class Pair(ctypes.Structure):
    _fields_ = [("first", D), ("second", D)]


@pytest.fixture(params=THREADS, ids=lambda t: f"{t}-threads")
def team(request, lib, monkeypatch):
    """The library, its functions' types set, OpenMP's team size set to the parameter, the
    regions' reverse sweeps forked wherever there are two threads (not only where enough threads
    would make up for their atomic adds: specs/openmp.md)."""
    library, omp = lib
    _setup(library)
    omp.omp_set_num_threads(request.param)
    monkeypatch.setenv("ADGEN_PARALLEL_REVERSE", "always")
    return library, request.param


def _setup(libraries):
    for library in (libraries.forward, libraries.both):
        _types(library)


TYPES = {  # name: (argument types, result type)
    "scale": ([P, P, IP, ctypes.c_int], None), "scale_fwd": ([P, P, P, P, IP, ctypes.c_int], None),
    "scale_fwd2": ([P, P, P, P, P, P, IP, ctypes.c_int], None), "scale_grad": ([P, P, P, P, IP, ctypes.c_int], None),
    "axpy": ([D, P, ctypes.c_int, P], D), "axpy_fwd": ([D, D, P, P, ctypes.c_int, P, P], Pair),
    "axpy_grad": ([D, P, P, ctypes.c_int, P, P, D], Pair),
    "cube": ([P, P, IP, ctypes.c_int], None), "cube_fwd": ([P, P, P, P, IP, ctypes.c_int], None),
    "cube_grad": ([P, P, P, P, IP, ctypes.c_int], None),
    "stats": ([P, ctypes.c_int, P], None), "stats_fwd": ([P, P, ctypes.c_int, P, P], None),
    "stats_grad": ([P, P, ctypes.c_int, P, P], None),
    "norm2": ([P, ctypes.c_int], D), "norm2_fwd": ([P, P, ctypes.c_int], Pair), "norm2_grad": ([P, P, ctypes.c_int, D], D),
    "energy": ([P, ctypes.c_int, ctypes.c_int, P], None), "energy_fwd": ([P, P, ctypes.c_int, ctypes.c_int, P, P], None),
    "energy_grad": ([P, P, ctypes.c_int, ctypes.c_int, P, P], None),
    "tot": ([P, ctypes.c_int, P], None), "tot_fwd": ([P, P, ctypes.c_int, P, P], None),
    "tot_grad": ([P, P, ctypes.c_int, P, P], None),
    "gather": ([P, P, IP, IP, ctypes.c_int], None), "gather_grad": ([P, P, P, P, IP, IP, ctypes.c_int], None),
    "wave": ([P, P, ctypes.c_int], None), "wave_fwd4": ([P, P, P, P, ctypes.c_int], None),
    "wave4_grad": ([P, P, P, P, ctypes.c_int], None),
    "phases": ([P, P, ctypes.c_int], D), "phases_fwd": ([P, P, P, P, ctypes.c_int], Pair),
    "phases_grad": ([P, P, P, P, ctypes.c_int, D], D),
    "rounds": ([P, P, ctypes.c_int], D), "rounds_grad": ([P, P, P, P, ctypes.c_int, D], D),
    "mixed": ([P, P, P, P, ctypes.c_int], None), "mixed_fwd": ([P, P, P, P, P, P, P, P, ctypes.c_int], None),
    "mixed_grad": ([P, P, P, P, P, P, P, P, ctypes.c_int], None),
    "nested": ([P, ctypes.c_int, P], None), "nested_grad": ([P, P, ctypes.c_int, P, P], None),
    "rows": ([P, P, ctypes.c_int, ctypes.c_int], None), "rows_fwd": ([P, P, P, P, ctypes.c_int, ctypes.c_int], None),
    "rows_grad": ([P, P, P, P, ctypes.c_int, ctypes.c_int], None),
}


def _types(library):
    for name, (arguments, result) in TYPES.items():
        if hasattr(library, name):
            getattr(library, name).argtypes, getattr(library, name).restype = arguments, result


def test_parallel_for_forward_runs_on_every_thread_and_matches_reverse_and_differences(team):
    library, threads = team
    n, rng = 1000, np.random.default_rng(1)
    x, dx, w = rng.uniform(0.1, 2, n), rng.normal(size=n), rng.normal(size=n)
    y, dy, who = np.zeros(n), np.zeros(n), np.full(n, -1, dtype=np.int32)
    library.scale_fwd(y, dy, x, dx, who, n)
    assert sorted(set(who)) == list(range(threads))  # the tangents were computed by the whole team
    beside = np.zeros(n)
    who[:] = -1
    library.both.scale_fwd(np.zeros(n), beside, x, dx, who, n)  # (a build with reverse mode too: the same)
    assert sorted(set(who)) == list(range(threads))
    np.testing.assert_allclose(beside, dy, rtol=1e-15)
    h, plus, minus = 1e-6, np.zeros(n), np.zeros(n)
    library.scale(plus, x + h * dx, who, n)
    library.scale(minus, x - h * dx, who, n)
    np.testing.assert_allclose(dy, (plus - minus) / (2 * h), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(y, np.sin(x) * x + 1)
    gx, gy = np.zeros(n), w.copy()
    who[:] = -1
    library.scale_grad(y, gy, x, gx, who, n)
    assert sorted(set(who)) == list(range(threads))  # the gradient's forward sweep ran on the team too
    assert np.dot(dy, w) == pytest.approx(np.dot(dx, gx), rel=1e-12)
    dy0, dy1, dx1 = np.zeros(n), np.zeros(n), rng.normal(size=n)
    library.scale_fwd2(y, dy0, dy1, x, dx, dx1, who, n)
    np.testing.assert_allclose(dy0, dy, rtol=1e-14)
    np.testing.assert_allclose(dy1, (np.cos(x) * x + np.sin(x)) * dx1, rtol=1e-12)


def test_firstprivate_scalar_and_dynamic_schedule(team):
    library, _ = team
    n, rng = 500, np.random.default_rng(2)
    a, da = 0.7, 0.3
    x, dx = rng.uniform(0, 1, n), rng.normal(size=n)
    y, dy = np.zeros(n), np.zeros(n)
    got = library.axpy_fwd(a, da, x, dx, n, y, dy)

    def f(t):
        out = np.zeros(n)
        library.axpy(a + t * da, x + t * dx, n, out)
        return out

    h = 1e-6
    np.testing.assert_allclose(dy, (f(h) - f(-h)) / (2 * h), rtol=1e-7, atol=1e-8)
    assert got.second == pytest.approx(dy[-1], rel=1e-14)
    w, seed = rng.normal(size=n), 0.25
    gx, gy = np.zeros(n), w.copy()
    grad = library.axpy_grad(a, x, gx, n, y, gy, seed)
    assert np.dot(dy, w) + got.second * seed == pytest.approx(np.dot(dx, gx) + da * grad.second, rel=1e-12)


def test_guided_schedule_with_num_threads_and_a_const_index_array(team):
    library, _ = team  # (the clause asks for three, whatever this says)
    n, rng = 300, np.random.default_rng(4)
    idx = rng.integers(0, 50, n).astype(np.int32)  # repeated: the reverse sweep accumulates
    x, dx = rng.uniform(0.5, 1.5, 50), rng.normal(size=50)
    y, dy = np.zeros(n), np.zeros(n)
    library.cube_fwd(y, dy, x, dx, idx, n)
    np.testing.assert_allclose(dy, 3 * x[idx] ** 2 * dx[idx], rtol=1e-13)
    w, gx = rng.normal(size=n), np.zeros(50)
    library.cube_grad(y, w.copy(), x, gx, idx, n)
    np.testing.assert_allclose(gx, np.bincount(idx, weights=3 * x[idx] ** 2 * w, minlength=50), rtol=1e-12)


def test_reductions_sum_product_min_max(team):
    library, _ = team
    n, rng = 400, np.random.default_rng(5)
    x, dx = rng.permutation(np.linspace(-2, 3, n)), rng.normal(size=n)  # distinct: min and max unique
    out, dout = np.zeros(4), np.zeros(4)
    library.stats_fwd(x, dx, n, out, dout)
    p = np.prod(1 + 0.01 * x)
    np.testing.assert_allclose(out, [np.sum(x * x), p, x.min(), x.max()], rtol=1e-12)
    expected = [np.sum(2 * x * dx), p * np.sum(0.01 * dx / (1 + 0.01 * x)), dx[x.argmin()], dx[x.argmax()]]
    np.testing.assert_allclose(dout, expected, rtol=1e-10)
    w, gx = rng.normal(size=4), np.zeros(n)
    library.stats_grad(x, gx, n, np.zeros(4), w.copy())
    assert np.dot(dout, w) == pytest.approx(np.dot(dx, gx), rel=1e-10)


def test_reduction_inside_a_parallel_region(team):
    library, _ = team
    n, rng = 333, np.random.default_rng(6)
    x, dx = rng.normal(size=n), rng.normal(size=n)
    got = library.norm2_fwd(x, dx, n)
    assert got.first == pytest.approx(np.linalg.norm(x), rel=1e-12)
    assert got.second == pytest.approx(np.dot(x, dx) / np.linalg.norm(x), rel=1e-10)
    gx = np.zeros(n)
    assert library.norm2_grad(x, gx, n, 1.0) == pytest.approx(np.linalg.norm(x), rel=1e-12)
    np.testing.assert_allclose(gx, x / np.linalg.norm(x), rtol=1e-10)


def test_parallel_region_with_collapsed_loop_and_critical_section(team):
    library, _ = team
    n, m, rng = 13, 11, np.random.default_rng(3)
    u, du = rng.normal(size=n * m), rng.normal(size=n * m)
    total, dtotal = np.zeros(1), np.zeros(1)
    library.energy_fwd(u, du, n, m, total, dtotal)

    def f(t):
        out = np.zeros(1)
        library.energy(u + t * du, n, m, out)
        return out[0]

    h = 1e-6
    assert dtotal[0] == pytest.approx((f(h) - f(-h)) / (2 * h), rel=1e-6)
    assert total[0] == pytest.approx((u.reshape(n, m) ** 2 * (1 + 0.1 * np.arange(m))).sum(), rel=1e-12)
    gu, seed = np.zeros(n * m), np.array([0.5])
    library.energy_grad(u, gu, n, m, np.zeros(1), seed)
    assert dtotal[0] * 0.5 == pytest.approx(np.dot(du, gu), rel=1e-10)


def test_atomic_updates(team):
    library, _ = team
    n, rng = 211, np.random.default_rng(13)
    x, dx = rng.normal(size=n), rng.normal(size=n)
    s, ds = np.array([0.5, 0.25]), np.zeros(2)
    library.tot_fwd(x, dx, n, s, ds)
    np.testing.assert_allclose(s, [0.5 + np.sum(x * x), 0.25 - np.sum(np.sin(x))], rtol=1e-12)
    np.testing.assert_allclose(ds, [np.sum(2 * x * dx), -np.sum(np.cos(x) * dx)], rtol=1e-12)
    w, gx = np.array([1.5, -0.7]), np.zeros(n)
    library.tot_grad(x, gx, n, np.array([0.5, 0.25]), w.copy())
    np.testing.assert_allclose(gx, 1.5 * 2 * x + 0.7 * np.cos(x), rtol=1e-12)


def test_interleaved_lanes(team):
    library, _ = team
    n, rng = 37, np.random.default_rng(11)
    x, tx, w = rng.normal(size=n), rng.normal(size=(n, 4)), rng.normal(size=(n, 4))
    after = np.roll(np.arange(n), -1)  # (i + 1) % n
    ty = np.zeros((n, 4))
    library.wave_fwd4(np.zeros(n), ty, x, np.ascontiguousarray(tx), n)
    np.testing.assert_allclose(ty, (np.cos(x) * x[after])[:, None] * tx + np.sin(x)[:, None] * tx[after], rtol=1e-13)
    gx = np.zeros((n, 4))
    library.wave4_grad(np.zeros(n), w.copy(), x, gx, n)
    np.testing.assert_allclose(np.sum(gx * tx, axis=0), np.sum(w * ty, axis=0), rtol=1e-12)  # (lane by lane)


def test_stores_logged_by_the_threads_between_the_callers_own(team):
    library, _ = team
    n, rng = 9, np.random.default_rng(21)
    a, w = rng.uniform(-1, 1, n), rng.uniform(-0.5, 0.5, n)
    after = a.copy()
    loss = library.rounds(after, w.copy(), n)
    got, ga, gw = a.copy(), np.zeros(n), np.zeros(n)
    assert library.rounds_grad(got, ga, w.copy(), gw, n, 1.0) == pytest.approx(loss, rel=1e-14)
    np.testing.assert_allclose(got, after, rtol=1e-15)  # memory as the primal leaves it
    h = 1e-6
    for x, g in ((a, ga), (w, gw)):
        for k in range(n):
            up, down = a.copy(), a.copy()
            wu, wd = w.copy(), w.copy()
            (up if x is a else wu)[k] += h
            (down if x is a else wd)[k] -= h
            fd = (library.rounds(up, wu, n) - library.rounds(down, wd, n)) / (2 * h)
            assert g[k] == pytest.approx(fd, rel=1e-6, abs=1e-8), k


def test_two_phases_with_a_barrier_between(team):
    library, _ = team
    n, rng = 97, np.random.default_rng(9)
    x, dx = rng.normal(size=n), rng.normal(size=n)
    got = library.phases_fwd(x, dx, np.zeros(n), np.zeros(n), n)

    def f(t):
        return library.phases(x + t * dx, np.zeros(n), n)

    h = 1e-6
    assert got.second == pytest.approx((f(h) - f(-h)) / (2 * h), rel=1e-6)
    gx = np.zeros(n)
    assert library.phases_grad(x, gx, np.zeros(n), np.zeros(n), n, 1.0) == pytest.approx(got.first, rel=1e-12)
    assert np.dot(dx, gx) == pytest.approx(got.second, rel=1e-10)


def test_threads_adding_atomically_and_into_private_buffers(team):
    library, _ = team
    n, rng = 101, np.random.default_rng(14)
    x, dx, k, dk = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    kk, dkk, z, dz = k.copy(), dk.copy(), np.zeros(n), np.zeros(n)
    library.mixed_fwd(x, dx, kk, dkk, np.zeros(n), np.zeros(n), z, dz, n)

    def f(t):
        out = np.zeros(n)
        library.mixed(x + t * dx, k + t * dk, np.zeros(n), out, n)
        return out

    h = 1e-6
    np.testing.assert_allclose(z, f(0), rtol=1e-14)
    np.testing.assert_allclose(dz, (f(h) - f(-h)) / (2 * h), rtol=1e-6, atol=1e-8)
    w, gx, gk = rng.normal(size=n), np.zeros(n), np.zeros(n)
    library.mixed_grad(x, gx, k.copy(), gk, np.zeros(n), np.zeros(n), np.zeros(n), w.copy(), n)
    assert np.dot(dx, gx) + np.dot(dk, gk) == pytest.approx(np.dot(w, dz), rel=1e-10)


def test_nested_critical_sections(team, lib):
    """The region runs on the calling thread in the gradient (its reverse sweep on a team could not
    order the sections): the same gradient at any team size, that of the primal run on one thread."""
    library, threads = team
    n, rng = 40, np.random.default_rng(10)
    x, dx = rng.uniform(-1, 1, n), rng.normal(size=n)
    w, gx = np.array([0.3, -0.7]), np.zeros(n)
    library.nested_grad(x, gx, n, np.array([1.0, 0.0]), w.copy())
    lib[1].omp_set_num_threads(1)  # (the primal's result depends on the order the threads entered in)

    def f(t):
        acc = np.array([1.0, 0.0])
        library.nested(x + t * dx, n, acc)
        return acc

    h = 1e-6
    assert np.dot(gx, dx) == pytest.approx(np.dot(w, (f(h) - f(-h)) / (2 * h)), rel=1e-6)


def test_reverse_sweeps_fork_unless_their_adds_are_atomic(lib, monkeypatch):
    """By default a region's reverse sweep forks where its threads can tell which adds to the
    arrays they read are theirs (scale's, whose accesses are bounded), not where those adds are
    atomic (gather's, through an index array); ADGEN_PARALLEL_REVERSE=always forks both, =never
    neither. Which pair ran shows in `who`, which the forward sweep writes."""
    library, omp = lib
    _setup(library)
    n, rng = 200, np.random.default_rng(12)
    x, y, idx = np.linspace(0.1, 2, n), np.zeros(n), rng.integers(0, n, n).astype(np.int32)
    cases = [(None, 2, "scale", True), (None, 4, "gather", False), ("always", 2, "gather", True),
             ("never", 4, "scale", False), ("always", 2, "scale", True)]
    for setting, threads, name, forked in cases:
        if setting is None:
            monkeypatch.delenv("ADGEN_PARALLEL_REVERSE", raising=False)
        else:
            monkeypatch.setenv("ADGEN_PARALLEL_REVERSE", setting)
        omp.omp_set_num_threads(threads)
        who, gx = np.full(n, -1, dtype=np.int32), np.zeros(n)
        if name == "scale":
            library.scale_grad(y, np.ones(n), x, gx, who, n)
            np.testing.assert_allclose(gx, np.cos(x) * x + np.sin(x), rtol=1e-13)
        else:
            library.gather_grad(y, np.ones(n), x, gx, idx, who, n)
            np.testing.assert_allclose(gx, np.bincount(idx, weights=2 * x[idx], minlength=n), rtol=1e-12)
        assert sorted(set(who)) == (list(range(threads)) if forked else [0]), (setting, threads, name)


@pytest.mark.slow
def test_collapsed_loop_indexed_by_quotient_and_remainder(team, adgen, c_file, tmp_path):
    library, _ = team
    n, m, rng = 7, 9, np.random.default_rng(8)
    x, dx = rng.normal(size=n * m), rng.normal(size=n * m)
    out, dout = np.zeros(n * m), np.zeros(n * m)
    library.rows_fwd(out, dout, x, dx, n, m)

    def f(t):
        y = np.zeros(n * m)
        library.rows(y, x + t * dx, n, m)
        return y

    h = 1e-6
    np.testing.assert_allclose(dout, (f(h) - f(-h)) / (2 * h), rtol=1e-6, atol=1e-8)
    w, gx = rng.normal(size=n * m), np.zeros(n * m)
    library.rows_grad(np.zeros(n * m), w.copy(), x, gx, n, m)
    assert np.dot(dout, w) == pytest.approx(np.dot(dx, gx), rel=1e-10)
    src = c_file(SOURCE)
    explained = adgen("build", src, "-o", tmp_path / "out", "--explain", "--", "-fopenmp").out
    rows = explained[explained.index("reverse mode of rows"):]
    assert "out[i * m + j] = acc * acc" in rows and "every time" not in rows.split("per call")[0]
    assert "rows.omp_outlined, as a callee of the derivatives above" in explained  # (both pairs, the team's marked)
    assert re.search(r"rows\.omp_outlined, as a callee .*, each thread's, on an OpenMP team", explained)


def test_task_is_a_located_error(adgen, c_file, tmp_path):
    src = c_file("// @diff(sq_grad: (dup, const))\n"
                 "void sq(double *x, int n) {\n"
                 "    #pragma omp parallel\n"
                 "    #pragma omp single\n"
                 "    for (int i = 0; i < n; i++) {\n"
                 "        #pragma omp task firstprivate(i)\n"
                 "        x[i] = x[i] * x[i];\n"
                 "    }\n"
                 "}\n")
    result = adgen("build", src, "-o", tmp_path / "out", "--", "-fopenmp")
    assert result.status == 1, result.err
    assert f"{src}:4:5: error: cannot differentiate a `single` region: OpenMP's '__kmpc_single'" in result.err
    assert "Traceback" not in result.err and not (tmp_path / "out").exists()


def test_atomic_capture_of_derivative_data_is_a_located_error_in_both_modes(adgen, c_file, tmp_path):
    """An atomic update whose old value is used (`atomic capture`): a located error."""
    src = c_file("// @diff(tot_fwd: forward (dual, const, dual, dual))\n"
                 "// @diff(tot_grad: (dup, const, dup, dup))\n"
                 "void tot(const double *x, int n, double *s, double *seen) {\n"
                 "    #pragma omp parallel for\n"
                 "    for (int i = 0; i < n; i++) {\n"
                 "        #pragma omp atomic capture\n"
                 "        { seen[i] = s[0]; s[0] += x[i] * x[i]; }\n"
                 "    }\n"
                 "}\n")
    result = adgen("build", src, "-o", tmp_path / "out", "--", "-fopenmp")
    assert result.status == 1
    for name in ("tot_fwd", "tot_grad"):
        assert re.search(re.escape(f"{src}:7:") + r"\d+" + re.escape(": error: cannot differentiate an atomic update "
                         "whose old value is used (OpenMP's `atomic capture`)") + r".* in function "
                         + rf"'tot(\.omp_outlined)?' \(needed by '{name}'\)", result.err), result.err
    assert "Traceback" not in result.err and not (tmp_path / "out").exists()


ENZYME_STYLE = r"""
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
extern int enzyme_dup, enzyme_const, enzyme_dupnoneed;
void __enzyme_autodiff(void *, ...);
void __enzyme_fwddiff(void *, ...);

void squares(double *a, int n) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++) a[i] *= a[i];
}

double __enzyme_autodiff_d(void *, ...);

/* each thread's first iteration reads `in` (Enzyme's omp_firstprivate.c): its gradient is the
   number of threads, which a reverse sweep on one thread would make 1 */
void first(double *a, double in, int n) {
    #pragma omp parallel for firstprivate(in)
    for (int i = 0; i < n; i++) { a[i] = in; in = 0; }
}

void sum(const double *x, double *out, int n) {
    double s = 0;
    #pragma omp parallel for reduction(+: s)
    for (int i = 0; i < n; i++) s += sin(x[i]);
    *out = s;
}

int main(void) {
    enum { N = 50 };
    double a[N], da[N], x[N], dx[N], out, dout;
    for (int i = 0; i < N; i++) { a[i] = i + 1; da[i] = 1; x[i] = 0.1 * i; dx[i] = 0; }
    __enzyme_autodiff((void *)squares, a, da, enzyme_const, N);
    for (int i = 0; i < N; i++)
        if (fabs(da[i] - 2.0 * (i + 1)) > 1e-12) { printf("squares: da[%d] = %g\n", i, da[i]); return 1; }
    dout = 1;
    __enzyme_autodiff((void *)sum, enzyme_dup, x, dx, enzyme_dupnoneed, &out, &dout, enzyme_const, N);
    for (int i = 0; i < N; i++)
        if (fabs(dx[i] - cos(0.1 * i)) > 1e-12) { printf("sum: dx[%d] = %g\n", i, dx[i]); return 1; }
    for (int i = 0; i < N; i++) dx[i] = 1;
    double t = 0;
    __enzyme_fwddiff((void *)sum, enzyme_dup, x, dx, enzyme_dup, &out, &t, enzyme_const, N);
    double want = 0;
    for (int i = 0; i < N; i++) want += cos(0.1 * i);
    if (fabs(t - want) > 1e-10) { printf("sum forward: %g, want %g\n", t, want); return 1; }
    double b[N], db[N];
    for (int i = 0; i < N; i++) db[i] = 1;
    double g = __enzyme_autodiff_d((void *)first, b, db, 1.0, N);
    if (fabs(g - omp_get_max_threads()) > 1e-12) { printf("first: %g\n", g); return 1; }
    printf("threads %d\n", omp_get_max_threads());
    return 0;
}
"""


@pytest.mark.parametrize("level", ["-O0", "-O2"])
@pytest.mark.slow
def test_adgen_cc_differentiates_openmp_code_written_for_enzyme(tmp_path, level):
    import subprocess
    import sys

    src = tmp_path / "prog.c"
    src.write_text(ENZYME_STYLE)
    exe = tmp_path / "prog"
    built = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "cc", "-fopenmp", level, str(src), "-o",
                            str(exe), "-lm"], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    for threads in THREADS:
        ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
        assert ran.returncode == 0 and f"threads {threads}" in ran.stdout, ran.stdout + ran.stderr


@pytest.mark.slow
def test_adgen_check_builds_and_checks_openmp_code(adgen, c_file):
    src = c_file("#include <math.h>\n"
                 "#include <omp.h>  /* (the bundled clang has none: adgen adds the system's) */\n"
                 "// @diff(scale_grad: (dup, dup, const))\n"
                 "// @diff(scale_fwd: forward (dual, dual, const))\n"
                 "void scale(double *restrict y, const double *restrict x, int n) {\n"
                 "    #pragma omp parallel for\n"
                 "    for (int i = 0; i < n; i++) y[i] = sin(x[i]) * x[i] + omp_get_thread_num() * 0.0;\n"
                 "}\n")
    result = adgen("check", src, "--size", "x=n", "--size", "y=n", "--size", "n=40", "--", "-fopenmp")
    assert result.status == 0, result.out + result.err
    assert "3 of 3 checks pass" in result.out  # (each mode, and forward against reverse)


def test_linking_openmp_code_without_a_runtime_says_so(monkeypatch):
    from adgen.base import toolchain
    from adgen.base.diagnostics import AdgenError

    bundled = toolchain.select_compiler(None)
    assert toolchain.openmp_link_flags(bundled, ["-O2"]) == []  # (no -fopenmp: nothing to add)
    monkeypatch.setattr(toolchain, "openmp_library", lambda: None)
    with pytest.raises(AdgenError) as raised:
        toolchain.openmp_link_flags(bundled, ["-fopenmp"])
    assert "the bundled clang has no OpenMP runtime, and none was found on this machine (install libomp-dev" in \
        raised.value.diagnostics[0].message


def test_a_runtime_older_than_the_bundled_clangs_code_gets_the_entry_point_it_lacks(tmp_path, monkeypatch):
    """clang 19 and newer end a dynamic schedule's loop with __kmpc_dispatch_deinit, which LLVM 14's
    runtime (Debian 12's libomp-dev) lacks: a newer runtime is chosen first; with only an older one,
    links name an empty one first (templates/openmp_dispatch_deinit.ll.j2), and a module declaring it
    defines it."""
    from adgen.base import toolchain
    from adgen.ir_ad.ir.parallel import with_empty_dispatch_deinit

    old, new = tmp_path / "x86_64-linux-gnu" / "libomp.so.5", tmp_path / "llvm-19" / "libomp.so"  # (old sorts last)
    for path, names in ((old, b"\0__kmpc_dispatch_next_4\0"), (new, b"\0__kmpc_dispatch_deinit\0")):
        path.parent.mkdir()
        path.write_bytes(b"\x7fELF" + names + b"\0omp_get_thread_num\0")
    monkeypatch.setattr(toolchain.glob, "glob", lambda pattern: [str(old), str(new)] if "llvm-*" in pattern else [])
    assert toolchain.openmp_library() == str(new)
    assert toolchain.openmp_runtime_flags() == [str(new), f"-Wl,-rpath,{new.parent}"]
    assert not toolchain.openmp_lacks_dispatch_deinit()
    monkeypatch.setattr(toolchain.glob, "glob", lambda pattern: [str(old)] if "llvm-*" in pattern else [])
    assert toolchain.openmp_lacks_dispatch_deinit()
    shim, *rest = toolchain.openmp_runtime_flags()
    assert rest == [str(old), f"-Wl,-rpath,{old.parent}"]
    assert "define weak void @__kmpc_dispatch_deinit(ptr %loc, i32 %gtid) {\n  ret void\n}" in open(shim).read()
    module = "declare i32 @f()\ndeclare void @__kmpc_dispatch_deinit(ptr, i32) #3\n"
    defined = with_empty_dispatch_deinit(module)
    assert defined.startswith("declare i32 @f()\ndefine weak void @__kmpc_dispatch_deinit(") and "declare void" not in \
        defined
    assert with_empty_dispatch_deinit("declare i32 @f()\n") == "declare i32 @f()\n"


def test_an_object_for_an_older_runtime_defines_the_entry_point_and_runs(tmp_path, monkeypatch):
    """adgen build's object, where the runtime found lacks __kmpc_dispatch_deinit, defines it
    itself (internal): a dynamic schedule's gradient links with the runtime alone and is right."""
    from adgen.commands.build import pipeline
    from adgen.commands.cli import main

    monkeypatch.setattr(pipeline, "openmp_lacks_dispatch_deinit", lambda: True)
    seen, define = [], pipeline.with_empty_dispatch_deinit
    monkeypatch.setattr(pipeline, "with_empty_dispatch_deinit", lambda text: seen.append(text) or define(text))
    src = tmp_path / "dyn.c"
    src.write_text("#include <math.h>\n"
                   "// @diff(spread_grad: (dup, dup, const))\n"
                   "void spread(double *y, const double *x, int n) {\n"
                   "    #pragma omp parallel for schedule(dynamic, 3)\n"
                   "    for (int i = 0; i < n; i++) y[i] = sin(x[i]) * x[i];\n"
                   "}\n")
    assert main(["build", "-q", str(src), "-o", str(tmp_path / "out"), "--", "-fopenmp"]) == 0
    assert len(seen) == 1 and "declare void @__kmpc_dispatch_deinit(" in seen[0]  # (the derivative calls it)
    symbols = subprocess.run(["nm", str(tmp_path / "out" / "dyn.adgen.o")], capture_output=True, text=True).stdout
    assert "U __kmpc_dispatch_deinit" not in symbols, symbols
    compile_c("-shared", "-fPIC", tmp_path / "out" / "dyn.adgen.o", LIBOMP, f"-Wl,-rpath,{os.path.dirname(LIBOMP)}",
              "-lm", "-o", tmp_path / "libdyn.so")
    lib = ctypes.CDLL(str(tmp_path / "libdyn.so"))
    lib.spread_grad.argtypes, lib.spread_grad.restype = [P, P, P, P, ctypes.c_int], None
    n, rng = 50, np.random.default_rng(3)
    x, w = rng.uniform(0.1, 2, n), rng.normal(size=n)
    gx = np.zeros(n)
    lib.spread_grad(np.zeros(n), w.copy(), x, gx, n)
    np.testing.assert_allclose(gx, w * (np.cos(x) * x + np.sin(x)), rtol=1e-12)


NULL_BIAS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include "layer.adgen.h"
int omp_get_max_threads(void);  /* (omp.h: the bundled clang has none) */

/* llm.c's matmul_forward: every row reads all of weight (its adjoints gathered in private buffers,
   sharing.py) and the bias, which may be NULL (the logits' matmul has none) */
// @diff(layer_grad: (dup, dup, dup, dup, const, const, const))
void layer(float *out, const float *inp, const float *weight, const float *bias, int n, int c, int oc) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++)
        for (int o = 0; o < oc; o++) {
            float val = (bias != NULL) ? bias[o] : 0.0f;
            for (int k = 0; k < c; k++) val += inp[i * c + k] * weight[o * c + k];
            out[i * oc + o] = val;
        }
}

int main(void) {
    enum { N = 24, C = 8, OC = 6 };
    float out[N * OC], d_out[N * OC], inp[N * C], d_inp[N * C] = {0}, w[OC * C], d_w[OC * C] = {0};
    for (int i = 0; i < N * C; i++) inp[i] = sinf(i);
    for (int i = 0; i < OC * C; i++) w[i] = cosf(i);
    for (int i = 0; i < N * OC; i++) d_out[i] = 0.01f * (i % 7);
    float seed[N * OC];
    for (int i = 0; i < N * OC; i++) seed[i] = d_out[i];
    layer_grad(out, d_out, inp, d_inp, w, d_w, NULL, NULL, N, C, OC);
    for (int o = 0; o < OC; o++)
        for (int k = 0; k < C; k++) {
            double want = 0;
            for (int i = 0; i < N; i++) want += seed[i * OC + o] * inp[i * C + k];
            if (fabs(d_w[o * C + k] - want) > 1e-4) { printf("d_w[%d][%d] = %g, want %g\n", o, k, d_w[o * C + k], want); return 1; }
        }
    printf("threads %d\n", omp_get_max_threads());
    return 0;
}
"""


def test_private_adjoints_of_an_array_passed_null(tmp_path, adgen, monkeypatch):
    """A shared array every thread reads gets its adjoints in private buffers; passed NULL (read on
    a branch not taken, as llm.c's bias), it has none to add, and no shadow to add them to."""
    import subprocess

    src = tmp_path / "layer.c"
    src.write_text(NULL_BIAS)
    assert adgen("build", "-q", src, "-o", tmp_path / "out", "--", "-fopenmp").status == 0
    exe = tmp_path / "layer"
    compile_c("-O2", "-fopenmp", f"-I{tmp_path / 'out'}", src, tmp_path / "out" / "layer.adgen.o",
              *openmp_runtime(), "-lm", "-o", exe)
    for threads in THREADS:
        ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, OMP_NUM_THREADS=str(threads), ADGEN_PARALLEL_REVERSE="always"))
        assert ran.returncode == 0 and f"threads {threads}" in ran.stdout, (threads, ran.returncode, ran.stdout)
