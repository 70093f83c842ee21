"""Memory on the heap in reverse mode (specs/abi.md, "Memory the derivative code allocates"):
pointers returned by calls (a tree built by a recursive malloc'ing function, then evaluated and
freed by other functions; a malloc wrapper called without derivatives; a row of a matrix),
realloc of memory with derivatives (a growing buffer) at every width and layout, and memory the
primal frees, which the reverse sweep keeps until it reverses the allocation. Against finite
differences, forward against reverse, and nothing leaked."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import adgen
from conftest import compile_c

H = 1e-6

SOURCE = r"""
#include <math.h>
#include <stdlib.h>

typedef struct node { double val; struct node *left, *right; } node;

/* a balanced tree of the squares of x[lo..hi) */
static node *build(const double *x, int lo, int hi)
{
    if (lo >= hi)
        return NULL;
    int mid = (lo + hi) / 2;
    node *n = malloc(sizeof *n);
    n->val = x[mid] * x[mid];
    n->left = build(x, lo, mid);
    n->right = build(x, mid + 1, hi);
    return n;
}

static double eval(const node *n, int depth)
{
    if (!n)
        return 0;
    return sin(n->val) * depth + eval(n->left, depth + 1) * n->val + eval(n->right, depth + 1);
}

static void release(node *n)
{
    if (!n)
        return;
    release(n->left);
    release(n->right);
    free(n);
}

// @diff(tree_grad: (dup, const) -> active; tree_fwd: (dual, const) -> dual; tree_g3: reverse[3] (dup, const) -> active)
double tree(const double *x, int n)
{
    node *t = build(x, 0, n);
    double v = eval(t, 1);
    release(t);
    return v;
}

/* a constructor called with no argument carrying a derivative */
__attribute__((noinline)) static double *vec_new(int n) { return calloc(n, sizeof(double)); }

__attribute__((noinline)) static double *row(double *m, int i, int n) { return m + i * n; }

// @diff(vec_grad: (dup, const) -> active; vec_fwd: (dual, const) -> dual)
double vec(const double *x, int n)
{
    double *v = vec_new(n * n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            row(v, i, n)[j] = x[i] * x[j] + j;
    double s = 0;
    for (int i = 0; i < n * n; i++)
        s += sin(v[i]);
    free(v);
    return s;
}

typedef struct { double *data; int len, cap; } buffer;

static void push(buffer *b, double v)
{
    if (b->len == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1;
        b->data = realloc(b->data, b->cap * sizeof(double));
    }
    b->data[b->len++] = v;
}

/* a growing buffer from NULL, read back while it grows and after */
// @diff(grow_grad: (dup, const) -> active; grow_fwd: (dual, const) -> dual; grow_g4: reverse[4] (dup, const) -> active)
// @diff(grow_gv: reverse[2] (dupv, const) -> active; grow_f3: forward[3] (dual, const) -> dualonly)
double grow(const double *x, int n)
{
    buffer b = {0};
    double p = 1;
    for (int i = 0; i < n; i++) {
        p *= x[i];
        push(&b, sin(p));
        push(&b, x[i] * b.data[b.len - 1]);
    }
    double s = 0;
    for (int i = 0; i < b.len; i++)
        s += b.data[i] * b.data[(i + 3) % b.len];
    free(b.data);
    return s;
}
"""

X = np.linspace(0.3, 1.4, 9)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("heap")
    src = work / "heap.c"
    src.write_text(SOURCE)
    return work, src, adgen.load(src, build_dir=work / "build")


def _fd(f, x):
    n = len(x)
    return np.array([(f(x + H * e, n) - f(x - H * e, n)) / (2 * H) for e in np.eye(n)])


@pytest.mark.parametrize("name", ["tree", "vec", "grow"])
def test_gradient_against_finite_differences_and_forward(built, name):
    _, _, lib = built
    n = len(X)
    dx = np.zeros(n)
    r = getattr(lib, f"{name}_grad")(X, dx, n, 1.0)
    assert r == pytest.approx(getattr(lib, name)(X, n), rel=1e-14)
    assert dx == pytest.approx(_fd(getattr(lib, name), X), rel=1e-6, abs=1e-8)
    u = np.random.default_rng(3).normal(size=n)
    assert getattr(lib, f"{name}_fwd")(X, u, n).d_ret == pytest.approx(dx @ u, rel=1e-12)


def test_widths_and_layouts(built):
    _, _, lib = built
    n = len(X)
    dx = np.zeros(n)
    lib.grow_grad(X, dx, n, 1.0)
    lanes = [np.zeros(n) for _ in range(4)]
    lib.grow_g4(X, *lanes, n, 1.0, 2.0, -1.0, 0.5)
    for lane, seed in zip(lanes, [1.0, 2.0, -1.0, 0.5]):
        assert lane == pytest.approx(seed * dx, rel=1e-14)
    both = np.zeros(2 * n)
    lib.grow_gv(X, both, n, 1.0, 3.0)
    assert both[0::2] == pytest.approx(dx, rel=1e-14) and both[1::2] == pytest.approx(3 * dx, rel=1e-14)
    u = np.random.default_rng(4).normal(size=(3, n))
    assert list(lib.grow_f3(X, *u, n).d_ret) == pytest.approx(list(u @ dx), rel=1e-12)
    tree = np.zeros(n)
    lib.tree_grad(X, tree, n, 1.0)
    lanes = [np.zeros(n) for _ in range(3)]
    lib.tree_g3(X, *lanes, n, 1.0, -2.0, 0.25)
    for lane, seed in zip(lanes, [1.0, -2.0, 0.25]):
        assert lane == pytest.approx(seed * tree, rel=1e-14)


DRIVER = r"""
#include <malloc.h>
#include <stdio.h>
#include "heap.adgen.h"

int main(void)
{
    mallopt(M_MXFAST, 0); /* freed chunks back to the arena at once (and no tcache: see the test) */
    double x[9], d[4][9] = {{0}}, v[18] = {0};
    for (int i = 0; i < 9; i++)
        x[i] = 0.3 + 0.1 * i;
    size_t before = 0;
    for (int rep = 0; rep < 201; rep++) {
        if (rep == 1)
            before = mallinfo2().uordblks;
        tree_grad(x, d[0], 9, 1.0);
        tree_g3(x, d[0], d[1], d[2], 9, 1.0, 1.0, 1.0);
        vec_grad(x, d[0], 9, 1.0);
        grow_grad(x, d[0], 9, 1.0);
        grow_g4(x, d[0], d[1], d[2], d[3], 9, 1.0, 1.0, 1.0, 1.0);
        grow_gv(x, v, 9, 1.0, 1.0);
        grow_f3(x, d[0], d[1], d[2], 9);
    }
    printf("%zu\n", mallinfo2().uordblks - before);
    return 0;
}
"""


@pytest.mark.slow
def test_nothing_leaks(built, adgen):
    """The memory the primal frees, and its shadow, are freed by the reverse sweep: 200 more
    calls of every derivative leave the heap as it was (glibc's count of bytes in use)."""
    work, src, _ = built
    driver = work / "leaks.c"
    driver.write_text(DRIVER)
    out = work / "out"
    assert adgen("build", "-q", src, "-o", out).status == 0
    compile_c("-O1", "-I", out, driver, src, out / "heap.adgen.o", "-lm", "-o", work / "leaks")
    env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.tcache_count=0")
    done = subprocess.run([str(work / "leaks")], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.strip() == "0"


FOREIGN = r"""
#include <stdlib.h>
// @diff(consume_grad: (dup, const) -> active)
double consume(double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    free(x);
    return s;
}
"""

FOREIGN_DRIVER = r"""
#include <stdlib.h>
#include "src.adgen.h"
int main(void)
{
    double *x = calloc(4, sizeof(double)), *d = calloc(4, sizeof(double));
    consume_grad(x, d, 4, 1.0);
    return 0;
}
"""


def test_freeing_the_callers_memory_stops_with_a_message(tmp_path, c_file, adgen):
    """The reverse sweep needs the memory a free releases: adgen keeps what it allocated
    itself, and says so (and aborts) rather than read memory the caller gave and the code freed."""
    src = c_file(FOREIGN)
    assert adgen("build", "-q", src, "-o", tmp_path / "out").status == 0
    driver = c_file(FOREIGN_DRIVER, "main.c")
    compile_c("-I", tmp_path / "out", driver, src, tmp_path / "out" / "src.adgen.o", "-o", tmp_path / "main")
    done = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True)
    assert done.returncode != 0
    assert "frees or reallocates memory with derivatives that it did not allocate" in done.stderr


NOT_OURS = r"""
static const double TABLE[3] = {1, 2, 3};
__attribute__((noinline)) static const double *weights(const double *x) { return x[0] > 0 ? TABLE : TABLE + 1; }
// @diff(w_grad: (dup) -> active)
double w(const double *x) { const double *t = weights(x); return t[0] * x[0]; }
"""


def test_a_returned_pointer_without_derivatives_is_its_own_shadow(build_lib):
    """A pointer into a global table returned where the caller needs a shadow: its own, with
    runtime activity (ir_ad/shadows.py), so that what is read through it carries none."""
    import ctypes

    lib = build_lib(NOT_OURS)
    for x0, want in ((0.5, 1.0), (-0.5, 2.0)):
        x, dx = (ctypes.c_double * 1)(x0), (ctypes.c_double * 1)(0.0)
        lib.w_grad.restype = ctypes.c_double
        lib.w_grad(x, dx, ctypes.c_double(1.0))
        assert dx[0] == want
