"""A build in batches (commands/build/batches.py): two sources, forced into several batches by a
small batch size, build, and their derivatives are those of the build in one batch (to 1e-12)
and central finite differences of the primals; among them a static helper called from
functions in different batches (and another of the same name in the other source), a primal
called by another source's primal, functions reached through pointers (an external one the
driver passes in, static ones from a table), an in-place update the reverse sweep undoes and a
forward-mode derivative."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import compile_c

A = r"""
#include <math.h>
typedef double (*unary)(double);

static double helper(double v) { return v * tanh(v) + sin(v); }

double square(double v) { return v * v + helper(v); }
static double cube(double v) { return v * v * v; }
static double wave(double v) { return cos(2 * v) * v; }
static const unary table[3] = { cube, square, wave };

// @diff(f0_grad: (dup, const) -> active)
double f0(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += helper(x[i]) * x[(i + 1) % n];
    return s;
}

// @diff(f1_grad: (dup, const) -> active)
double f1(const double *x, int n)
{
    double s = 1;
    for (int i = 0; i < n; i++)
        s *= 1 + 0.1 * cos(x[i]);
    return log(s) + helper(x[0]);
}

// @diff(f2_grad: (dup, const) -> active; f2_fwd: forward (dual, const) -> dual)
double f2(const double *x, int n)
{
    double s = 0;
    for (int i = 1; i < n; i++)
        s += exp(-(x[i] - x[i - 1]) * (x[i] - x[i - 1]));
    return s * helper(x[n - 1]);
}

// @diff(apply_grad: (const, dup, const) -> active)
double apply(unary g, const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += g(x[i]) * (i + 1);
    return s;
}

// @diff(pick_grad: (dup, const, const) -> active)
double pick(const double *x, int n, int which)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += table[(i + which) % 3](x[i]);
    return s;
}

// @diff(update_grad: (dup, dup, const) -> active)
double update(const double *x, double *w, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        s += w[i] * sin(x[i]) + helper(w[i]);
        w[i] = 0.9 * w[i] + 0.1 * x[i] * x[i];
    }
    return s + w[0] * w[n - 1];
}
"""

B = r"""
#include <math.h>
double f0(const double *x, int n);

static double helper(double v) { return atan(v) * v; }

// @diff(h_grad: (dup, const) -> active)
double h(const double *x, int n) { return f0(x, n) * helper(x[1]) + sqrt(1 + x[0] * x[0]); }

// @diff(k_grad: (dup, const) -> active)
double k(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += helper(x[i]) / (1 + i);
    return s;
}
"""

DRIVER = r"""
#include <stdio.h>
#include <string.h>
typedef double (*unary)(double);
#include "a.adgen.h"
#include "b.adgen.h"
double f0(const double *, int), f1(const double *, int), f2(const double *, int), apply(unary, const double *, int),
    pick(const double *, int, int), update(const double *, double *, int), h(const double *, int),
    k(const double *, int), square(double);
#define N 5
static const double X[N] = {0.3, -0.7, 1.1, 0.45, -0.2}, W[N] = {0.5, 0.25, -0.6, 0.8, 0.1};

/* the value, the gradient in x and its central differences, of a function of x alone */
#define PLAIN(name, call) do { \
    double x[N], d[N] = {0}; memcpy(x, X, sizeof x); \
    double v = name##_grad call; \
    printf("%s %.17g", #name, v); \
    for (int i = 0; i < N; i++) { \
        double xp[N], xm[N]; memcpy(xp, X, sizeof xp); memcpy(xm, X, sizeof xm); xp[i] += H; xm[i] -= H; \
        double *x_ = xp; double fp = FN(x_); x_ = xm; double fm = FN(x_); \
        printf(" %.17g %.17g", d[i], (fp - fm) / (2 * H)); \
    } \
    printf("\n"); } while (0)

int main(void)
{
    const double H = 1e-6;
#define FN(x_) f0(x_, N)
    PLAIN(f0, (x, d, N, 1.0));
#undef FN
#define FN(x_) f1(x_, N)
    PLAIN(f1, (x, d, N, 1.0));
#undef FN
#define FN(x_) f2(x_, N)
    PLAIN(f2, (x, d, N, 1.0));
#undef FN
#define FN(x_) apply(square, x_, N)
    PLAIN(apply, (square, x, d, N, 1.0));
#undef FN
#define FN(x_) pick(x_, N, 1)
    PLAIN(pick, (x, d, N, 1, 1.0));
#undef FN
#define FN(x_) h(x_, N)
    PLAIN(h, (x, d, N, 1.0));
#undef FN
#define FN(x_) k(x_, N)
    PLAIN(k, (x, d, N, 1.0));
#undef FN
    {   /* forward mode: the derivative along (1, 2, ..., N) */
        double x[N], dx[N], xp[N], xm[N];
        for (int i = 0; i < N; i++) {
            x[i] = X[i]; dx[i] = i + 1; xp[i] = X[i] + H * (i + 1); xm[i] = X[i] - H * (i + 1);
        }
        f2_fwd_result r = f2_fwd(x, dx, N);
        printf("f2_fwd %.17g %.17g %.17g\n", r.ret, r.d_ret, (f2(xp, N) - f2(xm, N)) / (2 * H));
    }
    {   /* an in-place update: gradients in x and in w as they were on entry */
        double x[N], w[N], dx[N] = {0}, dw[N] = {0};
        memcpy(x, X, sizeof x); memcpy(w, W, sizeof w);
        double v = update_grad(x, dx, w, dw, N, 1.0);
        printf("update %.17g", v);
        for (int i = 0; i < 2 * N; i++) {
            double xp[N], xm[N], wp[N], wm[N];
            memcpy(xp, X, sizeof xp); memcpy(xm, X, sizeof xm); memcpy(wp, W, sizeof wp); memcpy(wm, W, sizeof wm);
            if (i < N) { xp[i] += H; xm[i] -= H; } else { wp[i - N] += H; wm[i - N] -= H; }
            printf(" %.17g %.17g", i < N ? dx[i] : dw[i - N], (update(xp, wp, N) - update(xm, wm, N)) / (2 * H));
        }
        printf("\n");
    }
    return 0;
}
"""


def _build(adgen, work, name: str, monkeypatch, size: int) -> tuple[dict[str, list[float]], str]:
    """Builds a.c and b.c in `size`-instruction batches; the driver's lines by name, and -v's report."""
    monkeypatch.setenv("ADGEN_BATCH_INSTRUCTIONS", str(size))
    out = work / name
    result = adgen("build", "-v", work / "a.c", work / "b.c", "-o", out)
    assert result.status == 0, result.err
    exe = out / "driver"
    compile_c("-O2", "-I", out, work / "driver.c", work / "a.c", work / "b.c", out / "a.adgen.o", out / "b.adgen.o",
              "-o", exe, "-lm")
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    return {line.split()[0]: [float(v) for v in line.split()[1:]] for line in lines}, result.err


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    work = tmp_path_factory.mktemp("batches")
    (work / "a.c").write_text(A)
    (work / "b.c").write_text(B)
    (work / "driver.c").write_text(DRIVER)
    return work


@pytest.mark.slow
def test_several_batches_make_the_derivatives_of_one(adgen, work, monkeypatch):
    """The sources in one batch, then in four; each derivative as the one batch's, and its finite
    differences'."""
    whole, report = _build(adgen, work, "whole", monkeypatch, 10 ** 9)
    assert "adgen: batches" not in report and "batch 1" not in report
    batched, report = _build(adgen, work, "batched", monkeypatch, 150)  # 4 batches (f0 and h apart)
    made = re.search(r"adgen: batches .*\(9 derivative functions in (\d+) batches of ", report)
    assert made and int(made.group(1)) >= 3, report
    assert re.search(r"adgen: join .*\(a\.adgen\.o from \d+ batches' objects\)", report), report
    assert set(batched) == set(whole) == {"f0", "f1", "f2", "apply", "pick", "h", "k", "f2_fwd", "update"}
    for name, values in batched.items():
        assert values == pytest.approx(whole[name], rel=1e-12, abs=1e-14), name
        if name == "f2_fwd":
            assert values[1] == pytest.approx(values[2], rel=1e-6), name
            continue
        for d, fd in zip(values[1::2], values[2::2]):  # each derivative against its central difference
            assert d == pytest.approx(fd, rel=1e-6, abs=1e-8), name



LATER_LEVEL = r"""
#include "lv.adgen.h"
// @diff(f_grad: (dup, const) -> active)
double f(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i] * x[i];
    return s;
}

// @diff(g_dir: forward (dual, const) -> dual)
double g(const double *x, int n)
{
    double d[4] = {0};
    f_grad(x, d, n < 4 ? n : 4, 1.0);
    return d[0] * x[1];
}
"""


def test_what_cannot_be_batched_is_built_as_one(adgen, tmp_path, monkeypatch):
    """A primal calling a derived function (a derivative of a later level) is built as one
    batch, however small the batch size, as is --emit-llvm's single module."""
    monkeypatch.setenv("ADGEN_BATCH_INSTRUCTIONS", "5")
    src = tmp_path / "lv.c"
    src.write_text(LATER_LEVEL)
    result = adgen("build", "-v", src, "-o", tmp_path / "out")
    assert result.status == 0, result.err
    assert "adgen: batches" in result.err and "(one: 'g' reaches a derived function" in result.err, result.err
    assert "batch 1 of" not in result.err
    result = adgen("build", "-v", "--emit-llvm", src, "-o", tmp_path / "ll")
    assert result.status == 0, result.err
    assert "adgen: batches" not in result.err and (tmp_path / "ll" / "lv.adgen.ll").exists()


IR = r"""
@table = internal constant [2 x ptr] [ptr @cube, ptr @square]
@exported = global ptr @kept
@__adgen_primals_0 = internal constant [3 x ptr] [ptr @f, ptr @apply, ptr @"odd name"], align 16
@tag = internal global i32 0
@llvm.compiler.used = appending global [3 x ptr] [ptr @__adgen_primals_0, ptr @user, ptr @tag], section "llvm.metadata"

define internal double @helper(double %v) {
  %r = fmul double %v, %v
  ret double %r
}

define double @f(double %x) {
  %r = call double @helper(double %x)
  ret double %r
}

define double @apply(ptr %g, double %x) {
  %r = call double %g(double %x)
  ret double %r
}

define double @square(double %x) {
  %r = call double @helper(double %x)
  ret double %r
}

define internal double @cube(double %x) {
  ret double %x
}

define double @"odd name"(i32 %n) {
  %p = getelementptr [2 x ptr], ptr @table, i32 0, i32 %n
  %g = load ptr, ptr %p
  %r = call double %g(double 1.0)
  ret double %r
}

define double @other(ptr %x) {
  ret double 0.0
}

define void @kept() {
  ret void
}

define void @user() {
  ret void
}
"""


def test_what_each_function_reaches():
    """ir/reach.py: names in bodies and initializers, and a call through a pointer reaching the
    external functions of its type (as dispatch.py's candidates); kept globals apart."""
    from adgen.ir_ad.ir.reach import definitions, reached

    defs = definitions(IR)
    assert defs["helper"].local and not defs["f"].local and defs["exported"].kept and not defs["table"].kept
    assert defs["apply"].pointer_calls == (("double", ("double",)),) and defs["f"].pointer_calls == ()
    assert defs["f"].size == 2 and defs["f"].names == ("helper",)
    pointers = {("double", ("double",)): ["f", "square"]}
    assert reached(defs, {"f"}, pointers) == {"f", "helper"}
    assert reached(defs, {"apply"}, pointers) == {"apply", "f", "square", "helper"}
    assert reached(defs, {"odd name"}, pointers) == {"odd name", "table", "cube", "square", "f", "helper"}
    assert reached(defs, {"exported"}, pointers) == {"exported", "kept"}


def test_keep_arrays_regrouped():
    """One external array for each batch; the sources' arrays out of @llvm.compiler.used, what
    else it keeps kept (an internal function and an internal global among them); a batch's
    module, the others' arrays dropped, only what it reaches."""
    import llvmlite.binding as llvm

    from adgen.ir_ad import optimize
    from adgen.ir_ad.ir.reach import definitions, reached

    module = llvm.parse_assembly(IR.replace("define void @user()", "define internal void @user()"))
    optimize.regroup_keep_arrays(module, {"__adgen_primals_0"},
                                 {"__adgen_primals_batch0": ["f"], "__adgen_primals_batch1": ["apply", "odd name"]})
    module.verify()
    out = str(module)
    assert "define internal void @user()" in out
    assert '@llvm.compiler.used = appending global [2 x ptr] [ptr @user, ptr @tag], section "llvm.metadata"\n' in out
    assert "@tag = internal global i32 0" in out
    assert "@__adgen_primals_batch0 = constant [1 x ptr] [ptr @f]\n" in out
    assert '@__adgen_primals_batch1 = constant [2 x ptr] [ptr @apply, ptr @"odd name"]\n' in out
    defs = definitions(out)
    pointers = {("double", ("double",)): ["f", "square"]}
    arrays = ["__adgen_primals_batch0", "__adgen_primals_batch1"]
    keep = [reached(defs, {d for d in defs if defs[d].kept and d not in arrays} | {arrays[k]}, pointers)
            for k in range(2)]
    first, second = (llvm.parse_bitcode(code) for code in optimize.batch_modules(
        module.as_bitcode(), keep, arrays, optimize.create(optimize.machine(None, None))))
    assert {f.name for f in first.functions if not f.is_declaration} == {"f", "helper", "kept", "user"}
    assert {g.name for g in first.global_variables} == {"exported", "tag", "llvm.compiler.used",
                                                        "__adgen_primals_batch0"}
    assert {f.name for f in second.functions if not f.is_declaration} == \
        {"apply", "odd name", "f", "square", "cube", "helper", "kept", "user"}


def test_every_batchs_errors_together(adgen, c_file, tmp_path, monkeypatch):
    """Errors in two batches are reported together, as one module's are, and nothing is written."""
    monkeypatch.setenv("ADGEN_BATCH_INSTRUCTIONS", "20")
    src = c_file("typedef float (*g)(float);\n"
                 "// @diff(d1: (const, active) -> active)\n"
                 "double f1(g fn, double x) { return fn((float)x) * x; }\n"
                 "// @diff(d2: (const, active) -> active)\n"
                 "double f2(g fn, double x) { double s = 0; for (int i = 0; i < 4; i++) s += fn((float)(x * i)); "
                 "return s; }\n")
    result = adgen("build", "-v", src, "-o", tmp_path / "out")
    assert result.status == 1
    assert "2 batches" in result.err, result.err
    assert "src.c:3:" in result.err and "src.c:5:" in result.err, result.err
    assert result.err.count("cannot differentiate a call through a function pointer") == 2
    assert not (tmp_path / "out").exists()


BY_HAND = r"""
#include <math.h>
// @inactive
double stop(double x) { return x; }

double clamp(double x) { return x; }
typedef struct { double ret; double d_x; } clamp_grad_result;
// @derivative(clamp: (active) -> active)
clamp_grad_result clamp_grad(double x, double d_ret) { clamp_grad_result r = { x, 2 * d_ret }; return r; }

// @diff(f_grad: (active) -> active)
double f(double x) { return sin(x) * stop(x) + x + clamp(x * x); }

// @diff(g_grad: (active) -> active)
double g(double x) { return cos(x) * stop(x) + clamp(x); }

// @diff(s_grad: (active) -> active)
static double s(double x) { return x * x * stop(x) + clamp(x); }
"""


@pytest.mark.slow
def test_inactive_and_by_hand_in_every_batch(tmp_path, monkeypatch):
    """@inactive functions and derivatives written by hand hold in each batch (their arrays are
    kept in every batch's module); a static function is derived in its batch."""
    import math

    import adgen

    monkeypatch.setenv("ADGEN_BATCH_INSTRUCTIONS", "5")
    src = tmp_path / "hand.c"
    src.write_text(BY_HAND)
    lib = adgen.load(src, build_dir=tmp_path / "build")
    x = 1.3
    assert lib.f_grad(x, 1.0).d_x == pytest.approx(math.cos(x) * x + 1 + 2 * (2 * x), rel=1e-14)
    assert lib.g_grad(x, 1.0).d_x == pytest.approx(-math.sin(x) * x + 2, rel=1e-14)
    assert lib.s_grad(x, 1.0).d_x == pytest.approx(2 * x * x + 2, rel=1e-14)
