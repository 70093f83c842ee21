"""The cache plan: what reverse mode stores and where (printed by `adgen build --explain`),
that derivatives which store nothing allocate nothing, that a loop nest gets one buffer, and
that each storage kind gives gradients that agree with finite differences."""

from __future__ import annotations

import ctypes as C
import math
import re
import subprocess

import pytest

from conftest import compile_c
from test_forward import D, I, P, _grad_fd, arr, close, fn

SOURCE = r"""
#include <math.h>
#include <stdio.h>

/* nothing to store: every value the reverse sweep needs is recomputed from x */
// @diff(rosen_grad: (dup, const) -> activeonly)
double rosen(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n - 1; i++) {
        double a = x[i + 1] - x[i] * x[i], b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    return s;
}

/* a running product: each iteration's is needed, and cannot be recomputed */
// @diff(prod_grad: (dup, const) -> activeonly)
double prod(const double *x, int n)
{
    double p = 1;
    for (int i = 0; i < n; i++)
        p = p * sin(x[i]) + 0.25;
    return p;
}

/* a loop whose trip count is known only when it ends */
// @diff(heron_grad: (active) -> activeonly)
double heron(double a)
{
    double x = a > 1 ? a : 1;
    for (int k = 0; k < 60 && fabs(x * x - a) > 1e-13 * a; k++)
        x = 0.5 * (x + a / x);
    return x;
}

/* a triangular nest: the inner trip count is known only when the inner loop starts */
// @diff(tri_grad: (dup, const) -> activeonly)
double tri(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        double t = 1;
        for (int j = 0; j <= i; j++)
            t = t * cos(x[j]) + 0.5 * x[i];
        s += t * t;
    }
    return s;
}

/* results stored at the end, after the loads they come from: the reverse sweep undoes them */
// @diff(out_grad: (dup, dup, const))
void out(const double *x, double *err, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i] * x[i];
    err[0] = s;
    err[1] = s * x[0];
}

/* a constant trip count: the storage is small and in the record, on the stack */
// @diff(st_grad: (dup) -> activeonly)
double st(const double *x)
{
    double p = 1;
    for (int i = 0; i < 100; i++)
        p = p * sin(x[i % 7]) + 0.25;
    return p;
}

/* a running maximum: a byte per iteration says which argument won */
// @diff(mx_grad: (dup, const) -> activeonly)
double mx(const double *x, int n)
{
    double m = x[0];
    for (int i = 1; i < n; i++)
        m = fmax(m, x[i] * x[i]);
    return m * m;
}

/* a call LLVM moves out of its loop, without a line of its own: named at its one call */
__attribute__((noinline)) double mag(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}
// @diff(norm_grad: (dup, dup, const))
void norm(double *restrict out, const double *restrict in, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = in[i] / mag(in, n);
}
"""

# counts the allocations a gradient makes: linked with -Wl,--wrap=malloc,... like the bench
COUNTING = r"""
#include <stdio.h>
#include <stdlib.h>
#include "src.adgen.h"
void *__real_malloc(size_t);
void *__real_calloc(size_t, size_t);
void *__real_realloc(void *, size_t);
static int allocations;
void *__wrap_malloc(size_t n) { allocations++; return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { allocations++; return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { allocations++; return __real_realloc(p, n); }
int main(void)
{
    double x[16], g[16], e[2] = {0, 0}, de[2] = {1, 1};
    for (int i = 0; i < 16; i++) x[i] = 0.1 * (i + 1), g[i] = 0;
    int before = allocations;
    rosen_grad(x, g, 16, 1.0);
    printf("rosen %d\n", allocations - before);
    before = allocations;
    prod_grad(x, g, 16, 1.0);
    printf("prod %d\n", allocations - before);
    before = allocations;
    out_grad(x, g, e, de, 16);
    printf("out %d\n", allocations - before);
    before = allocations;
    prod_grad(x, g, 16, 1.0);
    printf("prod_again %d\n", allocations - before);
    before = allocations;
    tri_grad(x, g, 16, 1.0);
    printf("tri %d\n", allocations - before);
    before = allocations;
    st_grad(x, g, 1.0);
    printf("st %d\n", allocations - before);
    return 0;
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from adgen.commands.cli import main

    work = tmp_path_factory.mktemp("plan")
    src = work / "src.c"
    src.write_text(SOURCE)
    out = work / "out"
    import contextlib
    import io

    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(["build", "-q", "--explain", str(src), "-o", str(out)]) == 0
    compile_c("-c", "-O2", "-fPIC", src, "-o", work / "src.o")
    compile_c("-shared", work / "src.o", out / "src.adgen.o", "-o", work / "lib.so", "-lm")
    return work, text.getvalue(), C.CDLL(str(work / "lib.so"))


def _plan(text: str, name: str) -> str:
    """The part of --explain's output about one derived function."""
    return re.search(rf"^{name}: .*?(?=^\S|\Z)", text, re.M | re.S).group(0)


def test_explain_without_reverse_mode_says_so(tmp_path, capsys):
    from adgen.commands.cli import main

    src = tmp_path / "fwd.c"
    src.write_text("// @diff(sq_tangent: (dual) -> dual)\ndouble sq(double x) { return x * x; }\n")
    assert main(["build", "-q", "--explain", str(src), "-o", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "no reverse-mode derivatives: nothing is stored for a reverse sweep\n"


def test_annotations_sharing_a_derivative_share_its_plan(tmp_path, capsys):
    from adgen.commands.cli import main

    src = tmp_path / "two.c"
    src.write_text("// @diff(a_grad: (dup, const) -> active; b_grad: (dup, const) -> activeonly;\n"
                   "//       c_grad: (duponly, const) -> active)\n"
                   "double sq(const double *x, int n)\n{\n    double s = 1;\n"
                   "    for (int i = 0; i < n; i++)\n        s = s * x[i] + 0.5;\n    return s;\n}\n")
    assert main(["build", "-q", "--explain", str(src), "-o", str(tmp_path)]) == 0
    titles = [line.split(" (")[0] for line in capsys.readouterr().out.splitlines() if not line.startswith(" ")]
    assert titles == ["a_grad, c_grad: reverse mode of sq", "b_grad: reverse mode of sq"]


def test_a_derivative_that_needs_nothing_stores_nothing(built):
    _, text, _ = built
    assert "stores nothing" in _plan(text, "rosen_grad")


def test_a_loop_carried_value_is_stored_per_iteration_in_one_buffer(built):
    _, text, _ = built
    plan = _plan(text, "prod_grad")
    assert re.search(r"one buffer, allocated before it starts", plan)
    assert re.search(r"per iteration of the loop at \S*src\.c:\d+ \(8 B\)", plan)
    assert "the value of `p`: it is carried from one iteration to the next" in plan
    assert "| p = p * sin(x[i]) + 0.25;" in plan


def test_a_loop_of_unknown_trip_count_gets_a_growing_buffer(built):
    _, text, _ = built
    assert "trip count known only when it ends): a buffer growing as it runs" in _plan(text, "heron_grad")


def test_an_inner_loop_whose_count_depends_on_the_outer_gets_its_own_buffer(built):
    _, text, _ = built
    plan = _plan(text, "tri_grad")
    assert plan.count("one buffer, allocated before it starts") == 2
    outer = plan.split("per iteration of the loop", 1)[1].split("\n  the loop", 1)[0]
    assert "where the storage of the loop at" in outer  # the inner buffer's descriptor, kept per outer iteration


def test_stores_after_the_loads_are_undone_not_the_loads_stored(built):
    _, text, _ = built
    plan = _plan(text, "out_grad")
    assert "the old value of `err[0]`: the store overwrites it" in plan and "per iteration" not in plan


def test_a_small_nest_of_constant_trip_count_is_in_the_record(built):
    _, text, _ = built
    plan = _plan(text, "st_grad")
    assert "constant trip counts, so in the record at byte" in plan and "allocated" not in plan


def test_constant_trip_count_gradient(built):
    _, _, lib = built
    primal, grad = fn(lib, "st", D, P), fn(lib, "st_grad", D, P, P, D)
    x = [0.3 + 0.1 * k for k in range(7)]
    g = arr([0.0] * 7)
    grad(arr(x), g, 1.0)
    for k in range(7):
        assert close(g[k], _grad_fd(lambda v: primal(arr(v)), x, k)), k


def test_a_maximum_stores_one_byte_per_iteration(built):
    _, text, _ = built
    plan = _plan(text, "mx_grad")
    assert re.search(r"1 B  \S*src\.c:\d+  which argument of `fmax\(m, x\[i\] \* x\[i\]\)` was larger: 1 byte "
                     r"instead of both values \(16 B\)", plan)
    assert "per iteration of the loop at" in plan and "(1 B):" in plan


def test_explain_names_stored_values_by_their_source(built):
    """--explain names what it stores as the source has it: a call by its text, a value a loop
    carries by its variable, an overwritten value by what the store writes to."""
    _, text, _ = built
    assert re.search(r"src\.c:23  the value of `p`", _plan(text, "prod_grad"))
    assert re.search(r"src\.c:33  the value of `x`", _plan(text, "heron_grad"))
    assert re.search(r"src\.c:58  the old value of `err\[0\]`", _plan(text, "out_grad"))
    assert "how many iterations the loop at" in _plan(text, "heron_grad")
    line = SOURCE.splitlines().index("        out[i] = in[i] / mag(in, n);") + 1
    assert re.search(rf"src\.c:{line}  the record of `mag\(in, n\)`: what its reverse sweep needs",
                     _plan(text, "norm_grad"))


def test_explain_speaks_the_sources_terms(built):
    """No LLVM value names, opcodes or intrinsics; no entry without a place; sizes in B, KiB, MiB."""
    _, text, _ = built
    assert not re.search(r"%[-\w.]+|\b(phi|fadd|fmul|load|call) %|llvm\.|\(no line\)|bytes\)", text), text
    sizes = re.findall(r"^\s+(\S+ \S+)  ", text, re.M)
    assert sizes and all(re.fullmatch(r"\d+(\.\d)? (B|KiB|MiB|GiB)", s) for s in sizes), sizes


def test_explain_sums_up_each_derived_function_on_its_first_line(built):
    _, text, _ = built
    assert re.search(r"^prod_grad: reverse mode of prod \(\S*src\.c:19\): stores 16 B per call, 8 B per iteration of "
                     r"the loop at \S*src\.c:23; recomputes \d+ values$", text, re.M), text
    assert re.search(r"^rosen_grad: reverse mode of rosen \(\S*src\.c:7\): stores nothing; recomputes \d+ values$",
                     text, re.M), text
    assert re.search(r"^tri_grad: .*: stores 16 B per call, 24 B per iteration of the loop at \S*src\.c:44, 8 B per "
                     r"iteration of the loop at \S*src\.c:45; recomputes", text, re.M), text


def test_explain_names_files_as_the_command_line_gave_them(tmp_path, monkeypatch, capsys):
    from adgen.commands.cli import main

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "p.c").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    assert main(["build", "-q", "--explain", "src/p.c", "-o", "out"]) == 0
    text = capsys.readouterr().out
    assert "prod_grad: reverse mode of prod (src/p.c:19): " in text and "  src/p.c:23  the value of `p`" in text
    assert str(tmp_path) not in text


def test_allocations(built, tmp_path):
    """No allocation where nothing is stored (nor for the undone stores, kept in the record on
    the stack); loop buffers come from the thread's storage stack (specs/abi.md, "Storage"): its
    first chunk is the one malloc, at the first gradient that stores anything, kept for the next
    gradient; a triangular nest's buffer per outer iteration is no malloc either."""
    work, _, _ = built
    (tmp_path / "main.c").write_text(COUNTING)
    compile_c("-O2", "-I", work / "out", tmp_path / "main.c", work / "src.o", work / "out" / "src.adgen.o", "-lm",
              *(f"-Wl,--wrap={f}" for f in ("malloc", "calloc", "realloc")), "-o", tmp_path / "count")
    done = subprocess.run([str(tmp_path / "count")], capture_output=True, text=True, check=True)
    counts = dict(line.split() for line in done.stdout.splitlines())
    assert counts == {"rosen": "0", "prod": "1", "prod_again": "0", "out": "0", "tri": "0", "st": "0"}


@pytest.mark.parametrize("name", ["rosen", "prod", "tri", "mx"])
def test_gradients_against_finite_differences(built, name):
    _, _, lib = built
    primal = fn(lib, name, D, P, I)
    grad = fn(lib, f"{name}_grad", D, P, P, I, D)
    x = [0.3 + 0.17 * k * (-1) ** k for k in range(9)]
    g = arr([0.0] * 9)
    grad(arr(x), g, 9, 1.0)
    for k in range(9):
        assert close(g[k], _grad_fd(lambda v: primal(arr(v), 9), x, k)), k


def test_growing_buffer_gradient(built):
    _, _, lib = built
    grad = fn(lib, "heron_grad", D, D, D)
    for a in (0.3, 2.0, 17.0, 1e4):
        assert close(grad(a, 1.0), 0.5 / math.sqrt(a), rtol=1e-8)


def test_undone_stores_leave_the_results_and_give_the_gradient(built):
    _, _, lib = built
    out = fn(lib, "out", None, P, P, I)
    grad = fn(lib, "out_grad", None, P, P, P, P, I)
    x = [0.5, -0.25, 0.75, 1.5]
    for k in range(2):  # row k of the Jacobian
        e, de, dx = arr([0.0, 0.0]), arr([1.0 if j == k else 0.0 for j in range(2)]), arr([0.0] * 4)
        grad(arr(x), dx, e, de, 4)
        s = sum(v ** 3 for v in x)
        assert close(e[0], s) and close(e[1], s * x[0])  # the stores happened, and stayed
        assert list(de) == [0.0, 0.0]  # the seeds of written memory are consumed

        def row(v):
            y = arr([0.0, 0.0])
            out(arr(v), y, 4)
            return y[k]

        for j in range(4):
            assert close(dx[j], _grad_fd(row, x, j)), (k, j)


QUOTIENT = r"""
// @diff(step_grad: (dup, dup, const))
void step(double *y, double *k, int n)
{
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < n; i++)
            k[i] = y[i] * y[i];
        for (int i = 0; i < n; i++)
            y[i] += (k[i] + 1.0) / 6;
    }
}
"""


def test_a_quotient_by_a_constant_stores_nothing_of_its_numerator(tmp_path, capsys):
    """A rule's partials are written only for the arguments with derivatives, and ask only for
    what those use: fdiv's partial in a constant divisor asked for the numerator, `k[i] + 1.0`,
    which the next round overwrites, and the plan stored it once per iteration (GradBench's ode)."""
    from adgen.commands.cli import main

    src = tmp_path / "step.c"
    src.write_text(QUOTIENT.lstrip())
    assert main(["build", "-q", "--explain", str(src), "-o", str(tmp_path / "out")]) == 0
    text = capsys.readouterr().out
    assert "k[i] + 1.0" not in text and re.search(r"step\.c:6\b", text) and not re.search(r"step\.c:8\b", text), text
    compile_c("-c", "-O2", "-fPIC", src, "-o", tmp_path / "step.o")
    compile_c("-shared", tmp_path / "step.o", tmp_path / "out" / "step.adgen.o", "-o", tmp_path / "lib.so")
    lib = C.CDLL(str(tmp_path / "lib.so"))
    n, y0 = 3, [0.3, -0.7, 1.1]
    grad, step = fn(lib, "step_grad", None, P, P, P, P, I), fn(lib, "step", None, P, P, I)

    def total(y):
        ys, ks = arr(y), arr([0.0] * n)
        step(ys, ks, n)
        return sum(ys) + 2 * sum(ks)

    ys, dys, ks, dks = arr(y0), arr([1.0] * n), arr([0.0] * n), arr([2.0] * n)
    grad(ys, dys, ks, dks, n)
    h = 1e-6
    for j in range(n):
        up, down = list(y0), list(y0)
        up[j] += h
        down[j] -= h
        assert dys[j] == pytest.approx((total(up) - total(down)) / (2 * h), rel=1e-6)
