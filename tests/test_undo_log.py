"""The undo log (specs/abi.md, "Stores undone"): stores inside loops that overwrite what a deeper
loop or an earlier call read are undone by the reverse sweep instead of the loads being stored;
gradients against central finite differences, memory as the primal left it after the call, and
what the cache plan no longer stores."""

from __future__ import annotations

import ctypes as C
import math
import re

import numpy as np

import pytest

from conftest import ROOT, central_difference, quick_first
from every_mode import check_hessian_vector_product
from test_forward import D, I, P, arr, fn

TILED = r"""
#include <math.h>
#include <stddef.h>
static void matmul(double *out, const double *inp, const double *weight, int BT, int C, int OC)
{
    for (int obt = 0; obt < BT; obt += 4) {
        for (int o = 0; o < OC; o++) {
            double result[4];
            for (int ibt = 0; ibt < 4; ibt++) result[ibt] = 0.0;
            for (int i = 0; i < C; i++) {
                double w = weight[i + o * C];
                for (int ibt = 0; ibt < 4; ibt++) result[ibt] += inp[(obt + ibt) * C + i] * w;
            }
            for (int ibt = 0; ibt < 4; ibt++) out[(obt + ibt) * OC + o] = result[ibt];
        }
    }
}
// @diff(two_grad: (dup, dup, dup, const, const) -> activeonly)
double two_layers(double *acts, double *w1, double *w2, int BT, int C)
{
    double *x = acts, *h = acts + BT * C, *y = acts + 2 * BT * C;
    matmul(h, x, w1, BT, C, C);
    for (int i = 0; i < BT * C; i++) h[i] = h[i] > 0 ? h[i] : 0.01 * h[i];
    matmul(y, h, w2, BT, C, C);
    double s = 0;
    for (int i = 0; i < BT * C; i++) s += sin(y[i]) * y[i];
    return s;
}
"""

# One layer: out = tanh(w inp).
LAYER = r"""
static void layer(double *out, const double *inp, const double *w, int n)
{
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < n; j++) s += w[i * n + j] * inp[j];
        out[i] = tanh(s);
    }
}
"""

# The output overlaps the input: each row written is read by the rows after it.
OVERLAPPING = "#include <math.h>\n" + LAYER + r"""
// @diff(shifted_grad: (dup, dup, const) -> activeonly)
double shifted(double *a, double *w, int n)
{
    layer(a + 1, a, w, n);
    layer(a, a + 1, w, n);
    double s = 0;
    for (int i = 0; i <= n; i++) s += a[i] * a[i] * (1 + 0.1 * i);
    return s;
}
"""

# A loop writing in place what its inner loop reads, then a store outside every loop into the same
# memory (undone from the log with the others, in order).
IN_PLACE = r"""
#include <math.h>
// @diff(relax_grad: (dup, dup, const) -> activeonly)
double relax(double *a, double *out, int n)
{
    for (int i = 0; i < n; i++) {
        double s = 0.5;
        for (int j = 0; j < n; j++) s += a[j] * cos(a[(i + j) % n]);
        a[i] = s / n;
    }
    a[0] = a[0] * a[1] + out[0];
    out[0] = a[0] * a[n - 1];
    double s = 0;
    for (int i = 0; i < n; i++) s += exp(0.3 * a[i]);
    return s + out[0];
}
"""


def _check(lib, name, grad_name, arrays, ints):
    """The gradient of every array entry against central differences, and memory after the
    gradient as after the primal."""
    primal = fn(lib, name, D, *([P] * len(arrays)), *([I] * len(ints)))
    grad = fn(lib, grad_name, D, *([P, P] * len(arrays)), *([I] * len(ints)), D)

    def loss(values):
        return primal(*[arr(v) for v in values], *ints)

    primal_after = [arr(v) for v in arrays]
    primal(*primal_after, *ints)
    inputs = [arr(v) for v in arrays]
    shadows = [arr([0.0] * len(v)) for v in arrays]
    grad(*[x for pair in zip(inputs, shadows) for x in pair], *ints, 1.0)
    for k in range(len(arrays)):
        assert list(inputs[k]) == pytest.approx(list(primal_after[k]), rel=1e-12, abs=1e-14), \
            f"array {k}: memory after the gradient differs from the primal's"
    for k, v in enumerate(arrays):
        for j in range(len(v)):
            def along(t, k=k, j=j):
                values = [list(x) for x in arrays]
                values[k][j] = t
                return loss(values)

            fd = central_difference(along, v[j], 1e-6)
            assert shadows[k][j] == pytest.approx(fd, rel=1e-5, abs=1e-7), (k, j)


def _aliased(lib, name, grad_name, start, extra, ints):
    """The gradient of f(a, a, extra..., ints...) (its first two pointers one array) against central
    differences, and memory after it as the primal leaves it."""
    primal = fn(lib, name, D, P, P, *([P] * len(extra)), *([I] * len(ints)))
    grad = fn(lib, grad_name, D, P, P, P, P, *([P] * len(extra)), *([I] * len(ints)), D)
    a, da = arr(start), arr([0.0] * len(start))
    grad(a, da, a, da, *[arr(e) for e in extra], *ints, 1.0)
    after = arr(start)
    primal(after, after, *[arr(e) for e in extra], *ints)
    assert list(a) == pytest.approx(list(after), rel=1e-12, abs=1e-14)
    for j in range(len(start)):
        def along(t, j=j):
            v = list(start)
            v[j] = t
            x = arr(v)
            return primal(x, x, *[arr(e) for e in extra], *ints)
        assert da[j] == pytest.approx(central_difference(along, start[j], 1e-6), rel=1e-5, abs=1e-7), j


def _values(n, seed):
    return [math.sin(1.7 * (k + 1) * seed) * 0.8 for k in range(n)]


@pytest.mark.slow
def test_tiled_matmuls_over_slices_of_one_block(build_lib):
    lib = build_lib(TILED)
    bt, c = 8, 3
    _check(lib, "two_layers", "two_grad", [_values(3 * bt * c, 1), _values(c * c, 2), _values(c * c, 3)], [bt, c])


@pytest.mark.parametrize("n", [1, 2, 5])
def test_an_output_overlapping_the_input(build_lib, n):
    lib = build_lib(OVERLAPPING)
    _check(lib, "shifted", "shifted_grad", [_values(n + 1, 4), _values(n * n, 5)], [n])


def test_logs_of_every_size_one_after_another(build_lib):
    """A discarded log is kept for the next (templates/undo_log.ll.j2, adgen.log.pool.put):
    logs larger and smaller than the one kept, one after another, each gradient right."""
    lib = build_lib(OVERLAPPING)
    for n in (5, 1, 7, 2, 7, 3):
        _check(lib, "shifted", "shifted_grad", [_values(n + 1, n), _values(n * n, n + 1)], [n])


@quick_first("n", [2, 3, 6])
def test_a_loop_writing_what_its_inner_loop_reads(build_lib, n):
    lib = build_lib(IN_PLACE)
    _check(lib, "relax", "relax_grad", [_values(n, 6), _values(1, 7)], [n])


@pytest.mark.slow
def test_the_plan_stores_none_of_the_loads_the_log_protects(adgen, c_file):
    result = adgen("build", "--explain", c_file(TILED), "-o", c_file("", "out/x").parent)
    assert result.status == 0, result.err
    assert "may overwrite its memory before the reverse sweep runs" not in result.out, result.out
    assert "undone through the undo log" in result.out


# Each round writes b, then reads what it wrote in a deeper loop: the store is undone through the
# log (a later round overwrites what this one read), and the load after it in the same round is read
# again, not stored.
WRITE_THEN_READ = r"""
#include <math.h>
// @diff(rounds_grad: (dup, dup, const, const) -> activeonly)
double rounds(double *a, double *b, int n, int m)
{
    double s = 0;
    for (int k = 0; k < m; k++) {
        for (int i = 0; i < n; i++) b[i] = a[i] * (k + 1) + 0.1 * b[i];
        for (int i = 0; i < n; i++)
            for (int j = 0; j <= k; j++) s += sin(b[(i + j) % n]) * (i + j + 1);
    }
    return s;
}
"""


@quick_first("n", [1, 4])
def test_a_load_of_what_the_same_iteration_wrote(build_lib, n):
    _check(build_lib(WRITE_THEN_READ), "rounds", "rounds_grad", [_values(n, 10), _values(n, 11)], [n, 3])


@pytest.mark.slow
def test_a_load_of_what_the_same_iteration_wrote_aliasing_its_input(build_lib):
    _aliased(build_lib(WRITE_THEN_READ), "rounds", "rounds_grad", _values(3, 12), [], [3, 3])  # b is a


def test_the_load_after_a_store_in_its_iteration_is_read_again(adgen, c_file):
    result = adgen("build", "--explain", c_file(WRITE_THEN_READ), "-o", c_file("", "out/x").parent)
    assert result.status == 0, result.err
    assert "undone through the undo log" in result.out
    assert "`b[(i + j) % n]`" not in result.out, result.out


# An Elman recurrent network: each step's hidden state, tanh of a row of W times the last one, is
# written over the state of two steps before, which the rows' inner loops read. The store is
# undone through the log, and the tanh its derivative needs is read back from the memory it was
# stored to, where the reverse sweep reverses the store: neither it nor the sum it came from is
# stored (the values that vary, one per unit and step, are then all the log holds).
ELMAN = r"""
#include <math.h>
// @diff(elman_grad: (dup, dup, dup, dup, const, const, const) -> activeonly)
double elman(double *w, double *x, double *h, double *hn, int hid, int in, int steps)
{
    double *W = w, *U = w + hid * hid, *v = U + hid * in, *now = h, *next = hn, loss = 0;
    for (int t = 0; t < steps; t++) {
        for (int i = 0; i < hid; i++) {
            double s = 0.1 * i;
            for (int j = 0; j < hid; j++) s += W[i * hid + j] * now[j];
            for (int j = 0; j < in; j++) s += U[i * in + j] * x[t * in + j];
            next[i] = tanh(s);
        }
        double y = 0;
        for (int i = 0; i < hid; i++) y += v[i] * next[i];
        loss += y * y;
        double *swap = now;
        now = next;
        next = swap;
    }
    return loss;
}
"""

# The value stored is also used after the store (stored, or computed again, for that use) and
# before it (read back); the arrays may be one (_aliased).
BEFORE_AND_AFTER = r"""
#include <math.h>
// @diff(both_grad: (dup, dup, const, const) -> activeonly)
double both(double *a, double *b, int n, int m)
{
    double s = 0;
    for (int k = 0; k < m; k++)
        for (int i = 0; i < n; i++) {
            double t = 0.2 * k;
            for (int j = 0; j < n; j++) t += a[j] * b[(i + j) % n];
            double e = exp(-t * t);
            s += e * (i + 1);
            b[i] = e;
            s += sin(e) * a[i];
        }
    return s;
}
"""


# An output written again in every round, read by nothing: its store is checked at run time and
# not logged in the first round; what it wrote is read back, so the later rounds are logged (the
# bytes it writes are added to the log's reads after its check), not left in place.
REWRITTEN = r"""
#include <math.h>
// @diff(rewritten_grad: (dup, dup, dup, const, const) -> activeonly)
double rewritten(double *x, double *w, double *out, int n, int rounds)
{
    double s = 0;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < n; i++) {
            double t = 0.3 * r;
            for (int j = 0; j < n; j++) t += x[j] * w[(i + j) % n];
            double e = exp(-t * t);
            s += e * (i + 1 + r);
            out[i] = e;
        }
    return s;
}
"""


@quick_first("n", [1, 4])
def test_a_value_read_back_where_the_first_round_was_not_logged(build_lib, n):
    _check(build_lib(REWRITTEN), "rewritten", "rewritten_grad", [_values(n, 20), _values(n, 21), _values(n, 22)],
           [n, 3])


def test_read_back_of_a_checked_store_stores_nothing_per_iteration(adgen, c_file):
    result = adgen("build", "--explain", c_file(REWRITTEN), "-o", c_file("", "out/x").parent)
    assert result.status == 0, result.err
    assert re.search(r"the store to `out\[i\]` \(8 B\), where it may overwrite what is read again \(checked before the "
                     r"loop at \S*src\.c:10\)", result.out) and "`exp(-t * t)`" not in result.out, result.out


@quick_first("hid", [1, 3])
def test_an_elman_network_reads_back_what_it_stored(build_lib, hid):
    steps, inputs = 4, 2
    _check(build_lib(ELMAN), "elman", "elman_grad",
           [_values(hid * hid + hid * inputs + hid, 13), _values(steps * inputs, 14), _values(hid, 15),
            _values(hid, 16)], [hid, inputs, steps])


def test_an_elman_network_stores_nothing_per_unit_but_the_log(adgen, c_file):
    result = adgen("build", "--explain", c_file(ELMAN), "-o", c_file("", "out/x").parent)
    assert result.status == 0, result.err
    assert "undone through the undo log" in result.out and "the store to `next[i]`" in result.out
    assert "`tanh(s)`" not in result.out, result.out


@quick_first("n", [1, 3])
def test_a_value_read_back_that_is_used_after_its_store_too(build_lib, n):
    _check(build_lib(BEFORE_AND_AFTER), "both", "both_grad", [_values(n, 17), _values(n, 18)], [n, 3])


@pytest.mark.slow
def test_a_value_read_back_from_memory_its_input_aliases(build_lib):
    _aliased(build_lib(BEFORE_AND_AFTER), "both", "both_grad", _values(3, 19), [], [3, 2])


# A global written in a loop after a deeper loop read it: logged by the gradient; split mode (whose
# caller may change any memory between the sweeps) stores instead, its tapes reversed out of order,
# one released, a logging gradient run between them.
GLOBAL_STATE = r"""
#include <math.h>
int order[16];
// @diff(mix_split: split (dup, const, const) -> active; mix_grad: (dup, const, const) -> active)
double mix(const double *x, int n, int m)
{
    double acc = 0.5;
    for (int i = 0; i < m; i++) order[i] = i;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < m; i++) {
            int k = 0;
            for (int j = 0; j < m; j++) {
                acc = acc * cos(x[order[j]]) + x[order[(j + i) % m]];
                k += order[j] * (j + 1);
            }
            order[i] = (order[i] + k + r) % m;
        }
    return acc;
}
"""


@pytest.mark.slow
def test_split_mode_beside_a_gradient_that_logs(tmp_path):
    import adgen as api

    src = tmp_path / "mix.c"
    src.write_text(GLOBAL_STATE)
    lib = api.load(src, build_dir=tmp_path / "build")
    xs = [np.array(_values(4, s)) for s in (1, 2, 3)]
    expected = []
    for x in xs:
        d = np.zeros(4)
        result = lib.mix_grad(x, d, 3, 4, 1.0)
        expected.append((d.copy(), result.ret if hasattr(result, "ret") else lib.mix(x, 3, 4)))
        for j in range(4):  # the combined gradient against central differences
            up, down = x.copy(), x.copy()
            up[j] += 1e-6
            down[j] -= 1e-6
            assert d[j] == pytest.approx((lib.mix(up, 3, 4) - lib.mix(down, 3, 4)) / 2e-6, rel=1e-5, abs=1e-7)
    tapes = []
    for x in xs:
        d = np.zeros(4)
        y, tape = lib.mix_split.forward(x, d, 3, 4)
        tapes.append((d, y, tape))
    _, _, dropped = tapes.pop(1)
    lib.mix_split.release(dropped)
    for k in (1, 0):  # out of order, a gradient computed in between
        lib.mix_grad(xs[1], np.zeros(4), 2, 4, 1.0)
        d, y, tape = tapes[k]
        lib.mix_split.reverse(tape, 1.0)
        index = (0, 2)[k]
        assert y == pytest.approx(lib.mix(xs[index], 3, 4), rel=1e-12)
        assert d == pytest.approx(expected[index][0], rel=1e-12)


@pytest.mark.slow
def test_threads_each_have_their_own_log(build_lib):
    import threading

    lib = build_lib(TILED)
    grad = fn(lib, "two_grad", D, P, P, P, P, P, P, I, I, D)
    bt, c = 16, 5
    inputs = [[_values(3 * bt * c, s), _values(c * c, s + 1), _values(c * c, s + 2)] for s in range(1, 5)]

    def run(values):
        arrays = [arr(v) for v in values]
        shadows = [arr([0.0] * len(v)) for v in values]
        for _ in range(20):
            for s in shadows:
                C.memset(s, 0, C.sizeof(s))
            arrays = [arr(v) for v in values]
            grad(arrays[0], shadows[0], arrays[1], shadows[1], arrays[2], shadows[2], bt, c, 1.0)
        return [list(a) for a in arrays], [list(s) for s in shadows]

    alone = [run(v) for v in inputs]
    together = [None] * len(inputs)

    def worker(k):
        together[k] = run(inputs[k])

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert together == alone


# A derivative written by hand that calls a gradient of the same source, from inside the reverse
# sweep of a gradient that logs: the inner gradient keeps a log of its own (without, it undid the
# outer one's entries and crashed).
NESTED = '#include <math.h>\n#include "nest.adgen.h"\n' + LAYER + r"""
// @diff(inner_grad: (dup, dup, const) -> activeonly)
double inner(double *a, double *w, int n)
{
    layer(a + 1, a, w, n);
    double s = 0;
    for (int i = 0; i <= n; i++) s += a[i] * a[i];
    return s;
}


double sq(const double *x, double *y, int n)
{
    double t[9], w[64];
    for (int i = 0; i <= n; i++) t[i] = x[i];
    for (int i = 0; i < n * n; i++) w[i] = 0.1 * (i % 5) - 0.2;
    return inner(t, w, n);
}
// @derivative(sq: (dup, const, const) -> active)
double sq_grad(const double *x, double *d_x, double *y, int n, double d_ret)
{
    double t[9], dt[9] = {0}, w[64], dw[64] = {0};
    for (int i = 0; i <= n; i++) t[i] = x[i];
    for (int i = 0; i < n * n; i++) w[i] = 0.1 * (i % 5) - 0.2;
    inner_grad(t, dt, w, dw, n, d_ret);
    for (int i = 0; i <= n; i++) d_x[i] += dt[i];
    return 0;
}
// @diff(outer_grad: (dup, dup, const) -> activeonly)
double outer(double *a, double *w, int n)
{
    layer(a + 1, a, w, n);
    double y[9];
    return sq(a, y, n) + a[0] * a[n];
}
"""


@pytest.mark.slow
def test_a_gradient_called_inside_another_gradients_sweeps(build_lib):
    lib = build_lib(NESTED, name="nest.c")
    n = 4
    _check(lib, "outer", "outer_grad", [_values(n + 1, 8), _values(n * n, 9)], [n])


# GradBench's gmm in small: each (i, k) centers a point into `xc`, multiplies it by a lower
# triangle into `qx` (whose second loop sums into what the first wrote: `qx[j] = qx[j] + l * xc[i]`)
# and sums squares, both buffers allocated by the call. The reverse sweep reads `xc` again (the
# store centering it is undone), never the `qx[j]` summed into: the store of the first loop is not
# logged for its sake (a check every iteration that always said no).
CENTERED = r"""
#include <math.h>
#include <stdlib.h>
// @diff(centered_grad: (dup, dup, dup, const, const) -> activeonly)
double centered(double *x, double *mu, double *l, int n, int d)
{
    double *xc = malloc(d * sizeof(double)), *qx = malloc(d * sizeof(double)), s = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            for (int j = 0; j < d; j++) xc[j] = x[i * d + j] - mu[k * d + j];
            for (int j = 0; j < d; j++) qx[j] = exp(mu[j]) * xc[j];
            int at = 0;
            for (int a = 0; a < d; a++)
                for (int b = a + 1; b < d; b++) qx[b] = qx[b] + l[k * d * d + at++] * xc[a];
            for (int j = 0; j < d; j++) s += sin(qx[j]) * qx[j];
        }
    free(xc);
    free(qx);
    return s;
}
"""


@quick_first("d", [2, 3])
def test_buffers_of_the_call_summed_into_and_read_again(build_lib, d):
    lib = build_lib(CENTERED)
    n = 3
    _check(lib, "centered", "centered_grad", [_values(n * d, 8), _values(2 * d, 9), _values(2 * d * d, 10)], [n, d])


def test_a_value_only_summed_and_stored_is_not_read_by_the_reverse_sweep():
    from adgen.ir_ad.ir import Module
    from adgen.ir_ad.analysis.uses import unread_values

    text = """define void @f(ptr %out, ptr %l, ptr %x, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %acc = phi double [ 0.0, %entry ], [ %acc1, %loop ]
  %po = getelementptr double, ptr %out, i64 %i
  %o = load double, ptr %po
  %a = load double, ptr %l
  %b = load double, ptr %x
  %m = fmul double %a, %b
  %s = fadd double %o, %m
  store double %s, ptr %po
  %q = load double, ptr %x
  %acc1 = fadd double %acc, %q
  %i1 = add i64 %i, 1
  %c = icmp eq i64 %i1, %n
  br i1 %c, label %exit, label %loop
exit:
  %sq = fmul double %acc1, %acc1
  store double %sq, ptr %out
  ret void
}
"""
    assert unread_values(Module(text).functions["@f"]) == {"%o"}  # (%q reaches a product through the sum)


# A Hessian-vector product in the same file: its gradient, which the second level differentiates,
# goes without the log; the Elman network's gradient, which nothing differentiates again, keeps it
# (it stored each overwritten value instead, as a file of its own does not).
WITH_A_SECOND_LEVEL = ELMAN + r"""
#include <stdlib.h>
// @diff(sq_grad: (dup, const) -> activeonly; sq_hvp: forward of sq_grad (dual, dual, const, const))
double sq(const double *x, int n)
{
    double s = 0, *t = malloc(n * sizeof *t);  /* (its gradient frees memory: the second level
                                                   differentiates that, not the log's keeping it) */
    for (int i = 0; i < n; i++) t[i] = x[i] * x[i];
    for (int i = 0; i < n; i++) s += t[i] * x[i] + sin(t[(i + 1) % n]);
    free(t);
    return s;
}
"""


def test_an_entry_keeps_the_log_beside_one_a_later_level_differentiates(adgen, c_file):
    result = adgen("build", "--explain", c_file(WITH_A_SECOND_LEVEL), "-o", c_file("", "out/x").parent)
    assert result.status == 0, result.err
    elman = result.out.split("elman_grad: reverse mode")[1].split("sq_grad")[0]
    assert "undone through the undo log" in elman and "`tanh(s)`" not in elman, result.out


@quick_first("hid", [2])
def test_an_elman_network_beside_a_second_level(build_lib, hid):
    lib = build_lib(WITH_A_SECOND_LEVEL)
    _check(lib, "elman", "elman_grad",
           [_values(hid * hid + hid * 2 + hid, 13), _values(4 * 2, 14), _values(hid, 15), _values(hid, 16)],
           [hid, 2, 4])
    a = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
    lib.sq.restype, lib.sq.argtypes = D, [a, I]
    lib.sq_grad.restype, lib.sq_grad.argtypes = None, [a, a, I, D]
    lib.sq_hvp.restype, lib.sq_hvp.argtypes = None, [a, a, a, a, I, D]
    x, v = np.array(_values(5, 17)), np.array(_values(5, 18))
    check_hessian_vector_product(lib, "sq", x, v)


# Bundle adjustment's residuals, cameras and points picked by index: the reverse sweep reads them
# again, though no store may overwrite them; the log is never opened, and none of its checks is
# left in the gradient (they were calls, 18 per observation, in a loop of nothing else: 2.3x the
# time of the gradient without them). Nor beside a gradient that logs (the Elman network's): none of
# them is left, nor the frame a gradient keeping a log of its own records.
_KERNELS = (ROOT / "bench" / "kernels.c").read_text()
INDEXED_READS = _KERNELS[_KERNELS.index("// @diff(ba_grad"):_KERNELS.index("\n}\n", _KERNELS.index("double ba(")) + 3]


@pytest.mark.parametrize("beside", ["", ELMAN])
def test_a_log_never_opened_leaves_no_checks(adgen, c_file, beside):
    out = c_file("", "out/x").parent
    result = adgen("build", "--emit-llvm", c_file(INDEXED_READS + beside), "-o", out)
    assert result.status == 0, result.err
    text = (out / "src.adgen.ll").read_text()
    grad = text[text.index("define void @ba_grad("):]
    grad = grad[:grad.index("\n}\n")]
    assert '@"adgen.log.' not in grad and grad.count("br ") <= 4, grad  # (one loop: the reverse sweep's)
    assert "stacksave" not in grad, grad  # (the frame a log of its own records)
