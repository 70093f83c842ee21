"""Memory the differentiated code allocates itself is memory like any other (specs/abi.md, "Memory
allocated during the call"): stores into it are undone through the undo log where a later read
needs the old value, rather than every load before them stored, and what the code frees waits
for the log. One computation (three layers through two activation arrays, the first overwritten
after the second read it, then smoothed in place through a scratch array) gets its arrays in
every way real programs get theirs: passed in by the caller with shadows (the reference), one
block allocated at once and sliced (llm.c's activations), allocated lazily by a callee into a
struct the function keeps on its stack, or into the caller's struct (with a shadow), kept from one
call to the next and never freed by the call, allocated and freed in a loop, carved from a pool, grown with realloc, and returned by a
constructor. Each gradient against the reference and central differences; the kept memory
holds the forward results after the gradient; OpenMP-parallel layers on teams of 1 and 2; what
adgen stores per call (--explain) is what the reference stores; a logged store into a local
variable reached through memory is refused at run time with a message."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest

from conftest import compile_c
from fuzzer import libomp, openmp_runtime

N = 12
H = 1e-6

SOURCE = r"""
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* out = tanh(W in), W n x n */
__attribute__((noinline)) static void layer(double *out, const double *in, const double *w, int n)
{
    #pragma omp parallel for
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < n; j++)
            s += w[i * n + j] * in[j];
        out[i] = tanh(s);
    }
}

/* a smoothed in place, through tmp */
static void smooth(double *a, double *tmp, int n)
{
    for (int i = 0; i < n; i++)
        tmp[i] = (a[(i + n - 1) % n] + 2 * a[i] + a[(i + 1) % n]) / 4;
    for (int i = 0; i < n; i++)
        a[i] = sin(tmp[i]) + 0.5 * a[i] * a[i];
}

/* h1 = tanh(W0 x), h2 = tanh(W1 h1), h1 = tanh(W0 h2): h1 overwritten after h2's layer read it */
static double net(double *h1, double *h2, double *tmp, const double *w, const double *x, int n)
{
    layer(h1, x, w, n);
    layer(h2, h1, w + n * n, n);
    layer(h1, h2, w, n);
    smooth(h1, tmp, n);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += h1[i] * h2[i] + tmp[i];
    return s;
}

/* the reference: the arrays passed in, with shadows */
// @diff(given_grad: (dup, dup, dup, dup, const, const) -> active)
double given(double *h1, double *h2, double *tmp, const double *w, const double *x, int n)
{
    return net(h1, h2, tmp, w, x, n);
}

/* one block, sliced */
// @diff(once_grad: (dup, const, const) -> active)
double once(const double *w, const double *x, int n)
{
    double *block = malloc(3 * n * sizeof(double));
    double s = net(block, block + n, block + 2 * n, w, x, n);
    free(block);
    return s;
}

/* lazily, by a callee, into a struct on the stack (llm.c's gpt2_forward) */
typedef struct { double *memory, *h1, *h2, *tmp; int n; } model;

__attribute__((noinline)) static double forward(model *m, const double *w, const double *x, int n)
{
    if (m->memory == NULL) {
        m->memory = malloc(3 * n * sizeof(double));
        m->h1 = m->memory, m->h2 = m->memory + n, m->tmp = m->memory + 2 * n, m->n = n;
    }
    return net(m->h1, m->h2, m->tmp, w, x, n);
}

// @diff(lazy_grad: (dup, const, const) -> active)
double lazy(const double *w, const double *x, int n)
{
    model m = {0};
    double s = forward(&m, w, x, n);
    free(m.memory);
    return s;
}

/* kept by the caller from one call to the next (with a shadow model), never freed by the call */
// @diff(kept_grad: (dup, const, const, dup) -> active)
double kept(const double *w, const double *x, int n, model *m)
{
    return forward(m, w, x, n);
}

double kept_at(const model *m, int i) { return m->memory[i]; }

/* allocated and freed in a loop: each pass from the one before */
// @diff(looped_grad: (dup, const, const) -> active)
double looped(const double *w, const double *x, int n)
{
    double s = 0, *in = malloc(n * sizeof(double));
    memcpy(in, x, n * sizeof(double));
    for (int pass = 0; pass < 3; pass++) {
        double *h = malloc(3 * n * sizeof(double));
        s += net(h, h + n, h + 2 * n, w, in, n);
        for (int i = 0; i < n; i++)
            in[i] = 0.5 * h[i];
        free(h);
    }
    free(in);
    return s;
}

/* carved from a pool: one arena, a bump pointer */
typedef struct { char *base; size_t used; } pool;

__attribute__((noinline)) static double *carve(pool *p, size_t count)
{
    double *at = (double *)(p->base + p->used);
    p->used += (count * sizeof(double) + 15) & ~(size_t)15;
    return at;
}

// @diff(pooled_grad: (dup, const, const) -> active)
double pooled(const double *w, const double *x, int n)
{
    pool p = {malloc(4 * n * sizeof(double) + 64), 0};
    double *h1 = carve(&p, n), *h2 = carve(&p, n), *tmp = carve(&p, n);
    double s = net(h1, h2, tmp, w, x, n);
    free(p.base);
    return s;
}

/* grown with realloc: h1 first, then room for h2 and tmp after it */
// @diff(grown_grad: (dup, const, const) -> active)
double grown(const double *w, const double *x, int n)
{
    double *block = malloc(n * sizeof(double));
    layer(block, x, w, n);
    block = realloc(block, 3 * n * sizeof(double));
    double s = net(block, block + n, block + 2 * n, w, x, n) + block[0];
    free(block);
    return s;
}

/* returned by a constructor */
__attribute__((noinline)) static double *make(int n) { return calloc(n, sizeof(double)); }

// @diff(made_grad: (dup, const, const) -> active)
double made(const double *w, const double *x, int n)
{
    double *h1 = make(n), *h2 = make(n), *tmp = make(n);
    double s = net(h1, h2, tmp, w, x, n);
    free(tmp), free(h2), free(h1);
    return s;
}
"""

WAYS = ["once", "lazy", "looped", "pooled", "grown", "made"]
D, I = ctypes.c_double, ctypes.c_int
P = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
B = np.ctypeslib.ndpointer(dtype=np.uint8, flags="C_CONTIGUOUS")
RNG = np.random.default_rng(7)
W = RNG.normal(scale=0.4, size=2 * N * N)
X = RNG.normal(size=N)


def _build(work, adgen_main, openmp: bool):
    src = work / "allocated.c"
    src.write_text(SOURCE)
    flags = ["-fopenmp"] if openmp else []
    assert adgen_main(["build", "-q", str(src), "-o", str(work / "out"), *(["--", *flags] if flags else [])]) == 0
    compile_c("-c", "-O2", "-fPIC", *flags, src, "-o", work / "allocated.o")
    runtime = openmp_runtime() if openmp else []
    compile_c("-shared", work / "allocated.o", work / "out" / "allocated.adgen.o", *runtime, "-lm", "-o",
              work / "liballocated.so")
    lib = ctypes.CDLL(str(work / "liballocated.so"))
    lib.given.argtypes, lib.given.restype = [P, P, P, P, P, I], D
    lib.given_grad.argtypes, lib.given_grad.restype = [P, P, P, P, P, P, P, P, P, I, D], D
    for way in WAYS:
        getattr(lib, way).argtypes, getattr(lib, way).restype = [P, P, I], D
        getattr(lib, f"{way}_grad").argtypes, getattr(lib, f"{way}_grad").restype = [P, P, P, I, D], D
    lib.kept.argtypes, lib.kept_grad.argtypes = [P, P, I, B], [P, P, P, I, B, B, D]
    lib.kept.restype = lib.kept_grad.restype = D
    lib.kept_at.argtypes, lib.kept_at.restype = [B, I], D
    return lib


class Kept:
    """kept's model and its shadow (40 bytes each: four pointers and an int), as a caller keeps
    them from one call to the next."""

    def __init__(self):
        self.model, self.shadow = np.zeros(40, np.uint8), np.zeros(40, np.uint8)


LIBOMP = libomp()


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    from adgen.commands.cli import main

    return _build(tmp_path_factory.mktemp("allocated"), main, openmp=False)


def _reference(lib):
    """The gradient in w with the arrays passed in, and the loss."""
    scratch = [np.zeros(N) for _ in range(3)]
    shadows = [np.zeros(N) for _ in range(3)]
    dw = np.zeros_like(W)
    loss = lib.given_grad(scratch[0], shadows[0], scratch[1], shadows[1], scratch[2], shadows[2], W, dw, X, N, 1.0)
    return loss, dw


def _central(f):
    out = np.zeros_like(W)
    for k in range(len(W)):
        e = np.zeros_like(W)
        e[k] = H
        out[k] = (f(W + e, X, N) - f(W - e, X, N)) / (2 * H)
    return out


@pytest.mark.parametrize("way", WAYS)
def test_gradient_against_the_memory_passed_in_and_central_differences(serial, way):
    loss, reference = _reference(serial)
    dw = np.zeros_like(W)
    got = getattr(serial, f"{way}_grad")(W, dw, X, N, 1.0)
    assert got == pytest.approx(getattr(serial, way)(W, X, N), rel=1e-14)
    if way not in ("looped", "grown"):  # (the same computation as the reference's)
        assert got == pytest.approx(loss, rel=1e-14)
        assert dw == pytest.approx(reference, rel=1e-12, abs=1e-14)
    assert dw == pytest.approx(_central(getattr(serial, way)), rel=1e-6, abs=1e-8)


def test_memory_kept_by_the_caller(serial):
    """The model's arrays, allocated by the first gradient and kept by the caller (memory later
    calls did not allocate, reached through their argument), hold what the primal leaves there
    after each gradient (the undo log wrote its stores again; to rounding: the derivative's copy
    of the primal is compiled apart from the user's), and each gradient is the reference's."""
    primal = Kept()
    serial.kept(W, X, N, primal.model)
    after_primal = [serial.kept_at(primal.model, i) for i in range(3 * N)]
    kept = Kept()
    for _ in range(3):
        dw = np.zeros_like(W)
        loss = serial.kept_grad(W, dw, X, N, kept.model, kept.shadow, 1.0)
        assert loss == pytest.approx(_reference(serial)[0], rel=1e-14)
        assert [serial.kept_at(kept.model, i) for i in range(3 * N)] == pytest.approx(after_primal, rel=1e-13)
        assert dw == pytest.approx(_reference(serial)[1], rel=1e-12, abs=1e-14)


@pytest.mark.slow
def test_nothing_is_stored_per_iteration_for_memory_allocated_in_the_call(tmp_path, adgen):
    """--explain: the functions of allocated memory store what the reference does (the undo log
    keeps the overwritten activations); no load is stored for being in memory the call
    allocated."""
    src = tmp_path / "allocated.c"
    src.write_text(SOURCE)
    done = adgen("build", src, "-o", tmp_path / "out", "--explain")
    assert done.status == 0, done.err
    assert "may overwrite its memory before the reverse sweep runs" not in done.out, done.out


@pytest.mark.skipif(LIBOMP is None, reason="no OpenMP runtime (libomp) to run parallel code: install libomp-dev "
                                           "(.ci/run does)")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.slow
def test_parallel_layers_on_a_team(tmp_path_factory, threads, monkeypatch):
    from adgen.commands.cli import main

    lib = _build(tmp_path_factory.mktemp(f"allocated-omp{threads}"), main, openmp=True)
    omp = ctypes.CDLL(LIBOMP)
    omp.omp_set_num_threads(threads)
    monkeypatch.setenv("ADGEN_PARALLEL_REVERSE", "always")
    loss, reference = _reference(lib)
    for way in WAYS:
        dw = np.zeros_like(W)
        got = getattr(lib, f"{way}_grad")(W, dw, X, N, 1.0)
        assert got == pytest.approx(getattr(lib, way)(W, X, N), rel=1e-14), way
        if way not in ("looped", "grown"):
            assert dw == pytest.approx(reference, rel=1e-12, abs=1e-14), way
        else:
            assert dw == pytest.approx(_central(getattr(lib, way)), rel=1e-6, abs=1e-8), way


LOCAL = r"""
#include <math.h>
static int *order; /* the order apply uses: a local array of local's, named by a global */

// @inactive
__attribute__((noinline)) void use_order(int *mine) { order = mine; }

/* reads the order in a deeper loop, then rotates it: the rotation is logged */
__attribute__((noinline)) static double apply(const double *x, int n)
{
    double s = 0;
    for (int r = 0; r < 3; r++) {
        for (int i = 0; i < n; i++) {
            double t = 0;
            for (int j = 0; j < n; j++)
                t += x[order[j]] * (i + j + 1);
            s += sin(t);
        }
        for (int i = 0; i < n; i++)
            order[i] = (order[i] + 1) % n;
    }
    return s;
}

// @diff(local_grad: (dup, const) -> active)
double local(const double *x, int n)
{
    int mine[16];
    for (int i = 0; i < n; i++)
        mine[i] = i;
    use_order(mine);
    return apply(x, n);
}
"""

@pytest.mark.slow
def test_a_local_array_named_through_memory(tmp_path, adgen, c_file):
    """A local array reached through a global that a function marked @inactive sets (whose code
    adgen does not read): the stores rotating it are logged, its frame is the gradient's own
    while both sweeps run, and the gradient is right."""
    src = c_file(LOCAL, "local.c")
    (tmp_path / "fd.c").write_text(FD_DRIVER)
    assert adgen("build", "-q", src, "-o", tmp_path).status == 0
    compile_c("-O2", "-I", tmp_path, tmp_path / "fd.c", src, tmp_path / "local.adgen.o", "-lm", "-o", tmp_path / "fd")
    done = subprocess.run([str(tmp_path / "fd")], capture_output=True, text=True, check=True)
    for line in done.stdout.splitlines():
        _, grad, fd = line.split()
        assert float(grad) == pytest.approx(float(fd), rel=1e-6, abs=1e-8)


FD_DRIVER = r"""
#include <stdio.h>
#include "local.adgen.h"
double local(const double *x, int n);
int main(void)
{
    double x[8] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}, d[8] = {0}, h = 1e-6;
    local_grad(x, d, 8, 1.0);
    for (int i = 0; i < 8; i++) {
        x[i] += h;
        double up = local(x, 8);
        x[i] -= 2 * h;
        double down = local(x, 8);
        x[i] += h;
        printf("%d %.12g %.12g\n", i, d[i], (up - down) / (2 * h));
    }
    return 0;
}
"""

# The undo log's run-time refusal, driven directly: a gradient's entry (adgen.log.enter keeps its
# frame), a log opened, and a logged store into a local variable of a deeper frame, which ends
# before the redo.
LOCAL_STORE = """
define void @entry() {
  %saved = alloca [2 x ptr], align 8
  call void @"adgen.log.enter"(ptr %saved)
  %own = call ptr @"adgen.log.open"()
  call void @deeper(i1 %ON)
  call void @deeper(i1 true)
  ret void
}

define void @deeper(i1 %on) noinline {
  %local = alloca i32, align 4
  store i32 1, ptr %local, align 4
  call void @"adgen.log.push.i32"(ptr %local, i1 %on)
  store i32 2, ptr %local, align 4
  ret void
}

define void @heap() {
  %saved = alloca [2 x ptr], align 8
  call void @"adgen.log.enter"(ptr %saved)
  %own = call ptr @"adgen.log.open"()
  %p = call ptr @malloc(i64 4)
  call void @"adgen.log.push.i32"(ptr %p, i1 true)
  ret void
}

define i32 @main(i32 %argc, ptr %argv) {
  %which = icmp sgt i32 %argc, 1
  br i1 %which, label %local, label %heap
local:
  call void @entry()
  ret i32 0
heap:
  call void @heap()
  ret i32 0
}
"""


def test_a_logged_store_into_a_frame_that_ends_is_refused_at_run_time(tmp_path):
    """Memory reached through a pointer in memory is taken for the heap's; where it is a local
    variable of a frame below the gradient's entry, the log says so and aborts rather than undo
    and write again a frame that is gone. The heap's is logged as ever."""
    import sys

    from adgen.base.templates import render_text
    from adgen.ir_ad.reverse.mode import RUNTIME_DECLARATIONS
    from adgen.ir_ad.reverse.plan.undo import LOGGED

    declared = "\n".join(f"declare {ret.text} {name}({', '.join(p.text for p in params)})"
                         for name, ret, params in RUNTIME_DECLARATIONS)
    text = render_text("undo_log.ll.j2", LOGGED=LOGGED) + "\n" + declared + LOCAL_STORE.replace("%ON", "false")
    (tmp_path / "log.ll").write_text(text)
    subprocess.run([sys.executable, "-m", "ziglang", "cc", "-O1", str(tmp_path / "log.ll"), "-o",
                    str(tmp_path / "log")], check=True, capture_output=True)
    done = subprocess.run([str(tmp_path / "log"), "local"], capture_output=True, text=True)
    assert done.returncode != 0 and "a store the undo log keeps writes a local variable" in done.stderr
    assert subprocess.run([str(tmp_path / "log")], capture_output=True, text=True).returncode == 0
