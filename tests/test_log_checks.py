"""The undo log's run-time checks (specs/abi.md, "Stores undone"): a logged store is logged only
where what its loop writes may overlap what the reverse sweep reads again. Each program here is
called with its arrays apart and overlapping, so that both answers of a check are taken, and
checked against central finite differences, with memory after the gradient as the primal left it;
reads the log cannot bound (a derivative written by hand, an index loaded from memory) make every
later store logged; a loop that follows another is checked before itself (it has a block of its own
that enters it: ir_ad/optimize.py)."""

from __future__ import annotations

import re

import pytest

from conftest import central_difference, quick_first
from test_forward import D, I, P, arr, fn
from test_undo_log import _aliased, _check, _values

# Two layers over slices of one block, the slices placed by the caller: apart, overlapping, the same.
SLICES = r"""
#include <math.h>
static void layer(double *out, const double *in, const double *w, int n)
{
    for (int i = 0; i < n; i++) {
        double s = 0.1 * i;
        for (int j = 0; j < n; j++) s += w[i * n + j] * sin(in[j]);
        out[i] = tanh(s);
    }
}
// @diff(slices_grad: (dup, dup, const, const, const) -> activeonly)
double slices(double *acts, double *w, int n, int first, int second)
{
    layer(acts + first, acts, w, n);
    layer(acts + second, acts + first, w, n);
    double s = 0;
    for (int i = 0; i < 3 * n; i++) s += acts[i] * acts[i] * (1 + 0.1 * i);
    return s;
}
"""


@quick_first("first, second", [(4, 8), (1, 2), (2, 1), (0, 0), (4, 0)])
def test_slices_of_one_block_apart_and_overlapping(build_lib, first, second):
    lib = build_lib(SLICES)
    n = 4
    _check(lib, "slices", "slices_grad", [_values(3 * n, 1), _values(n * n, 2)], [n, first, second])


# A load in an outer loop, a store checked before an inner loop: its range is added before the
# outer loop (the inner check, once per outer iteration, must see what later iterations will read).
OUTER_READ = r"""
#include <math.h>
// @diff(outer_read_grad: (dup, dup, const, const) -> activeonly)
double outer_read(double *a, double *b, int n, int m)
{
    double s = 0;
    for (int k = 0; k < m; k++) {
        s += sin(a[k] + 0.1 * k);
        for (int i = 0; i < n; i++) {
            double u = 0;
            for (int j = 0; j < n; j++) u += cos(a[j + m] * (i + 1));
            b[i] = u * s;
        }
    }
    double r = 0;
    for (int i = 0; i < n + m; i++) r += a[i] * (i + 1);
    for (int i = 0; i < n; i++) r += b[i] * b[i];
    return r;
}
"""


@pytest.mark.slow
def test_a_load_in_an_outer_loop_and_a_store_checked_inside(build_lib):
    lib = build_lib(OUTER_READ)
    n, m = 3, 4
    _check(lib, "outer_read", "outer_read_grad", [_values(n + m, 12), _values(n, 13)], [n, m])
    _aliased(lib, "outer_read", "outer_read_grad", _values(n + m, 14), [], [n, m])  # b's stores overwrite what
    # the outer loop reads next


# A store outside every loop, checked where it runs; stores in a loop after it, checked before it.
OUTSIDE = r"""
#include <math.h>
// @diff(outside_grad: (dup, dup, const) -> activeonly)
double outside(double *a, double *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) s += sin(a[i] * a[j] + 0.1 * j);
    b[0] = s * a[0];
    for (int i = 1; i < n; i++) {
        double t = 0;
        for (int j = 0; j < n; j++) t += cos(a[j] * (i + 1));
        b[i] = t * b[0];
    }
    double r = 0;
    for (int i = 0; i < n; i++) r += b[i] * a[i];
    return r;
}
"""


@pytest.mark.slow
def test_a_store_outside_loops_and_stores_in_a_loop(build_lib):
    lib = build_lib(OUTSIDE)
    n = 4
    _check(lib, "outside", "outside_grad", [_values(n, 3), _values(n, 4)], [n])


@pytest.mark.slow
def test_a_store_outside_loops_into_what_was_read(build_lib):
    _aliased(build_lib(OUTSIDE), "outside", "outside_grad", _values(4, 5), [], [4])


# The reverse sweep of a derivative written by hand reads `a` again; a later store into `b` (the same
# array at run time) must be logged although no load of the function read it.
BY_HAND = r"""
#include <math.h>
double weighted(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i] * (i + 1);
    return s;
}
// @derivative(weighted: (dup, const) -> active)
double weighted_grad(const double *x, double *d_x, int n, double d_ret)
{
    for (int i = 0; i < n; i++) d_x[i] += 2 * x[i] * (i + 1) * d_ret;
    return 0;
}
// @diff(after_grad: (dup, dup, const, const) -> activeonly)
double after(double *a, double *b, const double *c, int n)
{
    double s = weighted(a, n);
    for (int i = 0; i < n; i++) {
        double t = 0;
        for (int j = 0; j < n; j++) t += cos(c[j] * (i + 1));
        b[i] = t * s;
    }
    double r = 0;
    for (int i = 0; i < n; i++) r += b[i] * b[i] * (i + 2);
    return r;
}
"""


@pytest.mark.slow
def test_what_a_derivative_written_by_hand_reads_is_logged(build_lib):
    _aliased(build_lib(BY_HAND), "after", "after_grad", _values(4, 6), [_values(4, 7)], [4])


# A load through an index read from memory cannot be bounded: every store after it is logged.
GATHER = r"""
#include <math.h>
// @diff(gather_grad: (dup, dup, const, const) -> activeonly)
double gather(double *a, double *b, const int *idx, int n)
{
    double s = 0;
    for (int j = 0; j < n; j++) s += sin(a[idx[j]]) * (j + 1);
    for (int i = 0; i < n; i++) {
        double t = 0;
        for (int j = 0; j < n; j++) t += cos(b[j]) * (i + j + 1);
        a[i] = t * s;
    }
    double r = 0;
    for (int i = 0; i < n; i++) r += a[i] * a[i] + b[i];
    return r;
}
"""


def test_a_load_through_an_index_makes_later_stores_logged(build_lib):
    import ctypes as C

    lib = build_lib(GATHER)
    n = 4
    idx = C.cast((C.c_int * n)(2, 0, 3, 2), C.POINTER(C.c_int))
    IP = C.POINTER(C.c_int)
    primal = fn(lib, "gather", D, P, P, IP, I)
    grad = fn(lib, "gather_grad", D, P, P, P, P, IP, I, D)
    start_a, start_b = _values(n, 8), _values(n, 9)
    a, da, b, db = arr(start_a), arr([0.0] * n), arr(start_b), arr([0.0] * n)
    grad(a, da, b, db, idx, n, 1.0)
    for j in range(n):
        def along(t, j=j):
            v = list(start_a)
            v[j] = t
            return primal(arr(v), arr(start_b), idx, n)
        assert da[j] == pytest.approx(central_difference(along, start_a[j], 1e-6), rel=1e-5, abs=1e-7), j


@pytest.mark.slow
def test_explain_says_where_stores_are_checked(adgen, c_file):
    result = adgen("build", "--explain", c_file(SLICES), "-o", c_file("", "out/x").parent)
    assert result.status == 0, result.err
    assert "where it may overwrite what is read again (checked before the loop at" in result.out, result.out
    assert re.search(r"whether the store to `[^`]+` was logged", result.out), result.out
    result = adgen("build", "--explain", c_file(GATHER, "g.c"), "-o", c_file("", "out/y").parent)
    assert result.status == 0, result.err


# A softmax by rows, asked to undo its writes (it may overwrite what its caller read before the
# call): the exponentials are stored by one loop, divided in place by the next, each after another
# loop in the row loop. Each store is checked before its own loop, over one row; checked over the
# row loop's whole run, each would find what the loop after it reads (the row in place, and the
# next rows'), and be logged every time.
SOFT_ROWS = r"""
#include <math.h>
__attribute__((noinline)) static void soft_rows(double *probs, const double *logits, int BT, int V)
{
    for (int bt = 0; bt < BT; bt++) {
        const double *z = logits + bt * V;
        double *p = probs + bt * V;
        double maxval = -1e30;
        for (int i = 0; i < V; i++)
            if (z[i] > maxval)
                maxval = z[i];
        double sum = 0.0;
        for (int i = 0; i < V; i++) {
            p[i] = exp(z[i] - maxval);
            sum += p[i];
        }
        for (int i = 0; i < V; i++)
            p[i] /= sum;
    }
}
// @diff(soft_grad: (dup, const, const, const, const) -> activeonly)
double soft(double *a, int rows, int n, int first, int second)
{
    double t = 0;
    for (int i = 0; i < 3 * rows * n; i++) t += sin(a[i]);
    soft_rows(a + second, a + first, rows, n);
    for (int i = 0; i < 3 * rows * n; i++) t += a[i] * a[i] * (1 + 0.1 * i);
    return t;
}
"""


@quick_first("first, second", [(0, 6), (6, 0), (0, 3), (2, 2)])
def test_loops_after_loops_are_checked_before_themselves(build_lib, first, second):
    lib = build_lib(SOFT_ROWS)
    _check(lib, "soft", "soft_grad", [_values(18, 3)], [2, 3, first, second])


def test_explain_checks_each_loop_of_a_row_before_itself(adgen, c_file):
    result = adgen("build", "--explain", c_file(SOFT_ROWS, "soft.c"), "-o", c_file("", "out/s").parent)
    assert result.status == 0, result.err
    for line in (14, 18):  # (each store's own loop, named by its body's line; not the row loop's, 6)
        assert re.search(rf"soft\.c:{line}  the store to `p\[i\]` \(8 B\), where it may overwrite what is read "
                         rf"again \(checked before the loop at \S*soft\.c:{line}\)", result.out), result.out
