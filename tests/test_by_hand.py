"""What the user tells adgen by hand: `@inactive` functions, whose calls carry no derivatives,
and `@derivative`, a derivative written for a function (a solver with a closed-form
derivative, a library function without source) that both modes call instead of
differentiating it. Against finite differences, forward against reverse, and each error."""

from __future__ import annotations

import math

import pytest

import adgen

H = 1e-6

INACTIVE = r"""
#include <math.h>
#include <stdio.h>

static int logged;

// @inactive
static void log_value(const double *x, int n) { for (int i = 0; i < n; i++) logged += x[i] > 0; }

/* a stop-gradient: its result is a constant to the derivatives */
// @inactive
static double frozen(double x) { return x * x; }

// @diff(f_grad: (dup, const) -> active; f_fwd: (dual, const) -> dual)
double f(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * frozen(x[i]);
    log_value(x, n);
    return s;
}
"""


def test_inactive_functions(tmp_path):
    src = tmp_path / "inactive.c"
    src.write_text(INACTIVE)
    lib = adgen.load(src, build_dir=tmp_path / "build")
    import numpy as np

    x = np.array([0.5, -1.5, 2.0])
    dx = np.zeros(3)
    assert lib.f_grad(x, dx, 3, 1.0) == pytest.approx(float(np.sum(x ** 3)))
    assert dx == pytest.approx(x * x)  # frozen(x) is a constant: d(x c)/dx = c
    for i in range(3):
        u = np.zeros(3)
        u[i] = 1.0
        assert lib.f_fwd(x, u, 3).d_ret == pytest.approx(dx[i])


IDENTITIES = r"""
#include <math.h>

/* stop-gradient as an identity, and a straight-through clamp whose derivative is 2 by hand: LLVM
 * infers that each returns its argument, and InstCombine used to put the argument in place of
 * the call (the derivative flowed through both) */
// @inactive
double stop(double x) { return x; }

double clamp(double x) { return x; }
typedef struct { double ret; double d_x; } clamp_grad_result;
// @derivative(clamp: (active) -> active)
clamp_grad_result clamp_grad(double x, double d_ret) { clamp_grad_result r = { x, 2 * d_ret }; return r; }
typedef struct { double ret; double d_ret; } clamp_fwd_result;
// @derivative(clamp: (dual) -> dual)
clamp_fwd_result clamp_fwd(double x, double d_x) { clamp_fwd_result r = { x, 2 * d_x }; return r; }

// @diff(f_grad: (active) -> active; f_fwd: (dual) -> dual)
double f(double x) { return sin(x) * stop(x) + x + clamp(x * x); }
"""


def test_functions_returning_their_argument(tmp_path):
    src = tmp_path / "identities.c"
    src.write_text(IDENTITIES)
    lib = adgen.load(src, build_dir=tmp_path / "build")
    x = 1.3
    right = math.cos(x) * x + 1 + 2 * (2 * x)  # stop(x) a constant; clamp's derivative 2 by hand
    assert lib.f_grad(x, 1.0).d_x == pytest.approx(right, rel=1e-14)
    assert lib.f_fwd(x, 1.0).d_ret == pytest.approx(right, rel=1e-14)


SOLVER = r"""
/* the real root of x^3 + a x - b (a > 0), by Newton: its derivatives have a closed form */
double root(double a, double b, int iters)
{
    double x = 1;
    for (int i = 0; i < iters; i++)
        x -= (x * x * x + a * x - b) / (3 * x * x + a);
    return x;
}

/* implicit differentiation: x^3 + a x = b gives (3x^2 + a) dx = db - x da */
BY_HAND

// @diff(f_grad: (active, active) -> active; f_fwd: (dual, dual) -> dual)
double f(double a, double b) { double x = root(a, b, 40); return x * x + a * root(b, a, 40); }
"""

REVERSE = """typedef struct { double ret; double d_a; double d_b; } root_grad_result;
// @derivative(root: (active, active, const) -> active)
root_grad_result root_grad(double a, double b, int iters, double d_ret)
{
    double x = root(a, b, iters), g = 3 * x * x + a;
    root_grad_result r = { x, -x / g * d_ret, d_ret / g };
    return r;
}"""

FORWARD = """typedef struct { double ret; double d_ret; } root_fwd_result;
// @derivative(root: (dual, dual, const) -> dual)
root_fwd_result root_fwd(double a, double d_a, double b, double d_b, int iters)
{
    double x = root(a, b, iters);
    root_fwd_result r = { x, (d_b - x * d_a) / (3 * x * x + a) };
    return r;
}"""


def _root(a, b):
    x = 1.0
    for _ in range(40):
        x -= (x ** 3 + a * x - b) / (3 * x * x + a)
    return x


def _f(a, b):
    x = _root(a, b)
    return x * x + a * _root(b, a)


@pytest.mark.parametrize("by_hand", [REVERSE, FORWARD], ids=["reverse form", "forward form"])
def test_a_derivative_written_by_hand_in_both_modes(tmp_path, by_hand):
    src = tmp_path / "solver.c"
    src.write_text(SOLVER.replace("BY_HAND", by_hand))
    lib = adgen.load(src, build_dir=tmp_path / "build")
    a, b = 1.5, 2.0
    g = lib.f_grad(a, b, 1.0)
    assert g.ret == pytest.approx(_f(a, b), rel=1e-14)
    assert g.d_a == pytest.approx((_f(a + H, b) - _f(a - H, b)) / (2 * H), rel=1e-7)
    assert g.d_b == pytest.approx((_f(a, b + H) - _f(a, b - H)) / (2 * H), rel=1e-7)
    assert lib.f_fwd(a, 1.0, b, 0.0).d_ret == pytest.approx(g.d_a, rel=1e-12)
    assert lib.f_fwd(a, 0.3, b, -0.7).d_ret == pytest.approx(0.3 * g.d_a - 0.7 * g.d_b, rel=1e-12)


NAMED = [REVERSE.replace("root_grad_result", "partials"),
         FORWARD.replace("typedef struct { double ret; double d_ret; } root_fwd_result;",
                         "struct tangent { double ret; double d_ret; };").replace("root_fwd_result", "struct tangent")]


@pytest.mark.parametrize("by_hand", NAMED, ids=["a typedef", "a struct tag"])
def test_a_result_struct_of_any_name(tmp_path, by_hand):
    """annotations.md: the result struct of a derivative written by hand may have any name."""
    src = tmp_path / "solver.c"
    src.write_text(SOLVER.replace("BY_HAND", by_hand))
    lib = adgen.load(src, build_dir=tmp_path / "build")
    a, b = 1.5, 2.0
    assert lib.f_grad(a, b, 1.0).d_a == pytest.approx((_f(a + H, b) - _f(a - H, b)) / (2 * H), rel=1e-7)
    assert lib.f_fwd(a, 0.0, b, 1.0).d_ret == pytest.approx((_f(a, b + H) - _f(a, b - H)) / (2 * H), rel=1e-7)


@pytest.mark.slow
def test_a_library_function_without_source(tmp_path):
    """The function is only declared: its code comes from a library the user links; adgen
    calls the derivative written for it and never needs its body."""
    (tmp_path / "lib.c").write_text("#include <math.h>\ndouble softplus(double x) { return log1p(exp(x)); }\n")
    src = tmp_path / "uses.c"
    src.write_text("""#include <math.h>
double softplus(double x);

// @derivative(softplus: (dual) -> dualonly)
double softplus_tangent(double x, double d_x) { return d_x / (1 + exp(-x)); }

// @diff(loss_grad: (active) -> active)
double loss(double w) { return softplus(3 * w) * w; }
""")
    from conftest import compile_c

    out = tmp_path / "out"
    result = adgen_build(src, out)
    assert result.returncode == 0, result.stderr
    compile_c("-c", "-fPIC", "-I", out, src, "-o", tmp_path / "uses.o")
    compile_c("-shared", "-fPIC", tmp_path / "uses.o", out / "uses.adgen.o", tmp_path / "lib.c", "-o",
              tmp_path / "libuses.so", "-lm")
    import ctypes

    lib = ctypes.CDLL(str(tmp_path / "libuses.so"))

    class Result(ctypes.Structure):
        _fields_ = [("ret", ctypes.c_double), ("d_w", ctypes.c_double)]

    lib.loss_grad.restype, lib.loss_grad.argtypes = Result, [ctypes.c_double, ctypes.c_double]
    w = 0.4
    sp = lambda x: math.log1p(math.exp(x))
    got = lib.loss_grad(w, 1.0)
    assert got.ret == pytest.approx(sp(3 * w) * w)
    assert got.d_w == pytest.approx(3 * w / (1 + math.exp(-3 * w)) + sp(3 * w), rel=1e-12)


def adgen_build(src, out):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "adgen.commands.cli", "build", "-q", str(src), "-o", str(out)],
                          capture_output=True, text=True)


@pytest.mark.parametrize("source, message", [
    ("// @derivative(nowhere: (active) -> active)\ndouble g(double x, double d_ret) { return x; }\n",
     "src.c:1:16: error: @derivative names 'nowhere', which is not a function declared in this file"),
    ("double f(double x);\n// @derivative(f: (active) -> active)\ndouble g(double x, double d_ret) { return x; }\n",
     "src.c:3:8: error: 'g' is declared as the derivative of 'f', but its signature is not the one adgen gives "
     "that entry: g_result g(double x, double d_ret), with g_result a struct of double ret, double d_x"),
    ("double f(double *x);\n// @derivative(f: (dupv) -> active)\ndouble g(double *x, double *d_x, double d_ret);\n",
     "src.c:2:20: error: a derivative written by hand with dup pointers takes parameters as dup (pointers), active "
     "(float or double scalars) or const, not 'dupv' on 'double * x'"),
    ("double f(double x);\n// @derivative(f: forward[2] (dual) -> dual)\ndouble g(double x);\n",
     "error: a derivative written by hand has width 1"),
    ("// @inactive\n", "src.c:1:4: error: @inactive annotation is not followed by a function declaration"),
    ("// @inactive(f)\nvoid f(void);\n", "src.c:1:13: error: syntax error in @inactive annotation: expected the end "
     "of the annotation, found '('"),
])
def test_errors(adgen, c_file, tmp_path, source, message):
    result = adgen("generate", c_file(source), "-o", tmp_path / "out")
    assert result.status == 1
    assert message in result.err
    assert not (tmp_path / "out").exists()


def test_a_derivative_flowing_into_a_parameter_taken_as_const(adgen, c_file, tmp_path):
    src = c_file("""double scale(double x, double k) { return x * k; }
typedef struct { double ret; double d_x; } scale_grad_result;
// @derivative(scale: (active, const) -> active)
scale_grad_result scale_grad(double x, double k, double d_ret) { scale_grad_result r = { x * k, k * d_ret }; return r; }
// @diff(g: (active, active) -> active)
double f(double x, double k) { return scale(x, k * k); }
""")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    assert "src.c:6:" in result.err and "cannot differentiate a call to 'scale', whose derivative written by hand " \
                                        "('scale_grad') takes 'k' as const, but a derivative flows into it here" \
           in result.err
    assert not (tmp_path / "out" / "src.adgen.o").exists()
