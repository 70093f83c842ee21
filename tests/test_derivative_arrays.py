"""`@derivative` for functions of arrays (specs/annotations.md): a reverse derivative written by
hand, with adgen's reverse-mode ABI, that the reverse sweep calls in place of differentiating
the function. Against adgen differentiating the function's own code, central finite
differences, and each error."""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from adgen import load

MATMUL = r"""
#include <math.h>
#ifndef SCALE
#define SCALE 1  /* 0: a wrong derivative by hand, to see that adgen calls it */
#endif

/* C = A B, A m-by-k, B k-by-n */
void matmul(const double *A, const double *B, double *C, int m, int k, int n)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int l = 0; l < k; l++)
                s += A[i * k + l] * B[l * n + j];
            C[i * n + j] = s;
        }
}

BY_HAND

/* a * <x, y> */
double scaled_dot(const double *x, const double *y, double a, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * y[i];
    return a * s;
}

DOT_BY_HAND

// @diff(loss_grad: (dup, dup, dup, const, active) -> active)
double loss(const double *X, const double *W1, const double *W2, const double *w, double a)
{
    double H[4 * 3], T[4 * 3], Y[4 * 2];
    matmul(X, W1, H, 4, 5, 3);
    for (int i = 0; i < 12; i++)
        T[i] = tanh(H[i]);
    matmul(T, W2, Y, 4, 3, 2);
    double s = scaled_dot(Y, w, a * a, 8);
    for (int i = 0; i < 8; i++)
        s += Y[i] * Y[i];
    return s * s;
}
"""

BY_HAND = r"""// @derivative(matmul: (dup, dup, dup, const, const, const))
void matmul_backward(const double *A, double *d_A, const double *B, double *d_B, double *C, double *d_C,
                     int m, int k, int n)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double g = SCALE * d_C[i * n + j];
            for (int l = 0; l < k; l++) {
                d_A[i * k + l] += g * B[l * n + j];
                d_B[l * n + j] += A[i * k + l] * g;
            }
            d_C[i * n + j] = 0;  /* the shadow of what it wrote: read, then zeroed */
        }
}"""

DOT_BY_HAND = r"""typedef struct { double ret; double d_a; } dot_grad_result;
// @derivative(scaled_dot: (dup, const, active, const) -> active)
dot_grad_result scaled_dot_grad(const double *x, double *d_x, const double *y, double a, int n, double d_ret)
{
    dot_grad_result r = { 0, 0 };
    for (int i = 0; i < n; i++) {
        d_x[i] += a * y[i] * d_ret;
        r.d_a += x[i] * y[i] * d_ret;
    }
    return r;
}"""


def _build(tmp_path, name, by_hand: bool, flags=()):
    src = tmp_path / f"{name}.c"
    src.write_text(MATMUL.replace("DOT_BY_HAND", DOT_BY_HAND if by_hand else "")
                   .replace("BY_HAND", BY_HAND if by_hand else ""))
    return adgen.load(src, build_dir=tmp_path / name, flags=flags)


def _loss(X, W1, W2, w, a):
    Y = np.tanh(X.reshape(4, 5) @ W1.reshape(5, 3)) @ W2.reshape(3, 2)
    return float((a * a * np.dot(Y.ravel(), w) + np.sum(Y * Y)) ** 2)


@pytest.mark.slow
def test_a_matmul_written_by_hand_matches_adgen_and_finite_differences(tmp_path):
    rng = np.random.default_rng(22)
    X, W1, W2, w = rng.normal(size=20), rng.normal(size=15) * 0.5, rng.normal(size=6), rng.normal(size=8)
    a = 0.7
    hand, auto = _build(tmp_path, "hand", True), _build(tmp_path, "auto", False)
    wrong = _build(tmp_path, "wrong", True, ["-DSCALE=0"])
    grads = {}
    for name, lib in (("hand", hand), ("auto", auto), ("wrong", wrong)):
        shadows = [np.zeros(20), np.zeros(15), np.zeros(6)]
        g = lib.loss_grad(X, shadows[0], W1, shadows[1], W2, shadows[2], w, a, 1.0)
        assert g.ret == pytest.approx(_loss(X, W1, W2, w, a), rel=1e-13)
        grads[name] = (*shadows, g.d_a)
    for got in grads["wrong"][:3]:  # X, W1, W2 reach the loss only through matmul: its derivative is the user's
        assert not got.any()
    for got, want in zip(grads["hand"], grads["auto"]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    h = 1e-6
    args = [X, W1, W2]
    for which in range(3):
        for i in range(len(args[which])):
            up, down = [v.copy() for v in args], [v.copy() for v in args]
            up[which][i] += h
            down[which][i] -= h
            fd = (_loss(*up, w, a) - _loss(*down, w, a)) / (2 * h)
            assert grads["hand"][which][i] == pytest.approx(fd, rel=1e-6, abs=1e-6)
    fd = (_loss(X, W1, W2, w, a + h) - _loss(X, W1, W2, w, a - h)) / (2 * h)
    assert grads["hand"][3] == pytest.approx(fd, rel=1e-7)


HEAD = r"""void scale(const double *x, double *y, int n) { for (int i = 0; i < n; i++) y[i] = 2 * x[i]; }
// @derivative(scale: (dup, dup, const))
void scale_grad(const double *x, double *d_x, double *y, double *d_y, int n)
{ for (int i = 0; i < n; i++) { d_x[i] += 2 * d_y[i]; d_y[i] = 0; } }
"""


@pytest.mark.parametrize("source, message", [
    (HEAD.replace("double *d_y, int n", "int n, double *d_y"),
     "src.c:3:6: error: 'scale_grad' is declared as the derivative of 'scale', but its signature is not the one "
     "adgen gives that entry: void scale_grad(const double *x, double *d_x, double *y, double *d_y, int n)"),
    ("void scale(const double *x, double *y, int n);\n// @derivative(scale: (dual, dual, const))\n"
     "void scale_fwd(const double *x, const double *d_x, double *y, double *d_y, int n);\n",
     "src.c:2:24: error: a derivative written by hand in forward mode takes floating scalars by value: forward "
     "mode of a function of arrays is not built"),
    ("void scale(const double *x, double *y, int n);\n// @derivative(scale: reverse[2] (dup, dup, const))\n"
     "void scale_grad2(const double *x, double *d_x_0, double *d_x_1, double *y, double *d_y_0, double *d_y_1, "
     "int n);\n", "src.c:2:31: error: a derivative written by hand has width 1"),
    ("void scale(const double *x, double *y, int n);\n// @derivative(scale: (duponly, dup, const))\n"
     "void scale_grad(const double *x, double *d_x, double *y, double *d_y, int n);\n",
     "src.c:2:24: error: a derivative written by hand with dup pointers takes parameters as dup (pointers), "
     "active (float or double scalars) or const, not 'duponly' on 'const double * x'"),
])
def test_errors_in_the_annotation(adgen, c_file, tmp_path, source, message):
    result = adgen("generate", c_file(source), "-o", tmp_path / "out")
    assert result.status == 1
    assert message in result.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("caller, message", [
    ("// @diff(f_fwd: (dual) -> dualonly)\n"
     "double f(const double *x) { double y[3]; scale(x, y, 3); return y[0] * y[1]; }\n",
     "src.c:6:42: error: cannot differentiate a call to 'scale' in forward mode, whose derivative written by hand "
     "('scale_grad') is a reverse derivative of arrays (forward mode of those is not built)"),
    ("// @diff(f_grad: reverse[2] (dup) -> active)\n"
     "double f(const double *x) { double y[3]; scale(x, y, 3); return y[0] * y[1]; }\n",
     "src.c:6:42: error: cannot differentiate a call to 'scale', whose derivative written by hand ('scale_grad') "
     "takes one shadow per pointer, at width 2 (batches of those are not built)"),
    ("// @diff(f_grad: (dup) -> active)\n"
     "double f(double *x) { double y[3]; scale(x, y, 3); __builtin_memcpy(x, y, sizeof y); "
     "return x[0] * x[1]; }\n",
     "src.c:6:36: error: cannot differentiate a call to 'scale', whose derivative written by hand ('scale_grad') "
     "reads 'x' in the reverse sweep, but the memory it points to may be overwritten after the call"),
    ("// @diff(f_grad: (const, dup) -> active)\n"
     "double f(const double *x, double *y) { scale(x, y, 3); return y[0] * y[1]; }\n",
     "src.c:6:40: error: cannot differentiate a call to 'scale', whose derivative written by hand ('scale_grad') "
     "takes a shadow of 'x', but no derivative flows through it here"),
])
def test_calls_it_cannot_serve(adgen, c_file, tmp_path, caller, message):
    """Each a located build error at the call, never a silent wrong derivative."""
    result = adgen("build", c_file(HEAD + caller), "-o", tmp_path / "out")
    assert result.status == 1
    assert message in result.err, result.err
    assert not (tmp_path / "out" / "src.adgen.o").exists()


def test_an_entry_of_the_function_itself(adgen, c_file, tmp_path):
    """A reverse entry of F calls F, then G (here a G that is wrong on purpose: 3, not 2); split
    mode of it is an error, its caller writing what it likes between the sweeps."""
    src = c_file(HEAD.replace("2 * d_y[i]", "3 * d_y[i]") + "// @diff(scale_r: (dup, dup, const))\n"
                 "void scale(const double *x, double *y, int n);\n")
    lib = load(src, build_dir=tmp_path / "build")  # (`adgen` is the CLI fixture here)
    x, dx, y, dy = np.array([1.0, 2.0]), np.zeros(2), np.zeros(2), np.array([1.0, 10.0])
    lib.scale_r(x, dx, y, dy, 2)
    assert list(y) == [2.0, 4.0] and list(dx) == [3.0, 30.0] and not dy.any()
    split = c_file(HEAD + "// @diff(scale_s: split (dup, dup, const))\nvoid scale(const double *x, double *y, int n);\n")
    result = adgen("build", split, "-o", tmp_path / "out")
    assert result.status == 1
    assert "src.c:1:1: error: cannot differentiate a call to 'scale', whose derivative written by hand " \
           "('scale_grad') reads 'x' in the reverse sweep" in result.err, result.err


def test_stores_after_the_call_into_what_it_read_are_undone_first(tmp_path):
    """The caller overwrites the call's input with stores outside loops, which the reverse sweep
    undoes (specs/abi.md, "Stores undone") before the derivative by hand reads the input again."""
    caller = ("// @diff(f_grad: (dup) -> active)\n"
              "double f(double *x) { double y[3]; scale(x, y, 3); for (int i = 0; i < 3; i++) x[i] = y[i] * x[i]; "
              "return x[0] * x[1] + x[2]; }\n")
    by_hand = tmp_path / "hand.c"
    by_hand.write_text(HEAD + caller)
    own = tmp_path / "own.c"
    own.write_text(HEAD.split("// @derivative")[0] + caller)
    f = lambda v: (2 * v[0] * v[0]) * (2 * v[1] * v[1]) + 2 * v[2] * v[2]
    for src in (by_hand, own):
        lib = load(src, build_dir=tmp_path / src.stem)
        x0 = np.array([0.5, -1.5, 2.0])
        x, dx = x0.copy(), np.zeros(3)
        lib.f_grad(x, dx, 1.0)
        assert list(x) == [2 * v * v for v in x0]  # memory as the primal left it
        fd = [(f(x0 + h) - f(x0 - h)) / 2e-6 for h in np.eye(3) * 1e-6]
        assert dx == pytest.approx(fd, rel=1e-7), src.name
