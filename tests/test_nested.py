"""Derived functions called in code that is itself differentiated (specs/annotations.md,
'Calling a derived function in differentiated code'): bilevel problems from AD benchmarks —
a particle descending a potential with a gradient adgen made (of reverse mode, of forward mode a
direction at a time, of forward[4], of split mode), and a saddle point, min over x of max over
y, three levels deep — in every mode over them (reverse, forward, forward[4], split, and forward
over the reverse one), and a source calling another's, against central finite differences and
forward against reverse. Then the
errors: a derived function its own primal reaches (a cycle), and inner code adgen cannot
differentiate, each at the user's line, every entry reported, nothing written."""

from __future__ import annotations

import numpy as np
import pytest

import adgen

SOURCE = r"""
#include <math.h>
#include <string.h>
#include "nested.adgen.h"

/* the potential a particle at x feels under parameters p */
// @diff(pot_grad: (dup, const, const) -> active; pot_dir: forward (dual, const, const) -> dualonly)
// @diff(pot_dir4: forward[4] (dual, const, const) -> dualonly; pot_split: split (dup, const, const) -> active)
double potential(const double *x, const double *p, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += p[i] * x[i] * x[i] + sin(x[i] * p[(i + 1) % n]);
    return s;
}

static double miss(const double *x, int n)
{
    double f = 0;
    for (int i = 0; i < n; i++)
        f += (x[i] - 1) * (x[i] - 1);
    return f;
}

/* a step down the gradient of reverse mode, in a function of its own */
__attribute__((noinline)) static void step(double *x, const double *p, int n)
{
    double g[8] = {0};
    pot_grad(x, g, p, n, 1.0);
    for (int i = 0; i < n; i++)
        x[i] -= 0.1 * g[i];
}

/* the particle after `steps` steps: how far it ends from 1 */
// @diff(particle_grad: (const, dup, const, const) -> active; particle_dir: forward (const, dual, const, const) -> dualonly)
// @diff(particle_dir4: forward[4] (const, dual, const, const) -> dualonly; particle_split: split (const, dup, const, const) -> active)
// @diff(particle_hvp: forward of particle_grad (const, dual, dual, const, const, const) -> dualonly)
double particle(const double *x0, const double *p, int n, int steps)
{
    double x[8];
    memcpy(x, x0, n * sizeof *x);
    for (int t = 0; t < steps; t++)
        step(x, p, n);
    return miss(x, n);
}

/* the same, the gradient called in the loop itself: pot_grad's kernel writes the potential into
 * a local of the stub inlined here, which its reverse sweep puts back while it runs (the local
 * must outlive in_loop_grad's forward sweep) */
// @diff(in_loop_grad: (const, dup, const, const) -> active; in_loop_dir: forward (const, dual, const, const) -> dualonly)
double in_loop(const double *x0, const double *p, int n, int steps)
{
    double x[8], g[8];
    for (int i = 0; i < n; i++)
        x[i] = x0[i];
    for (int t = 0; t < steps; t++) {
        for (int i = 0; i < n; i++)
            g[i] = 0;
        pot_grad(x, g, p, n, 1.0);
        for (int i = 0; i < n; i++)
            x[i] -= 0.1 * g[i];
    }
    double f = 0;
    for (int i = 0; i < n; i++)
        f += (x[i] - 1) * (x[i] - 1);
    return f;
}

/* the gradient of forward mode, a direction at a time */
// @diff(by_dir_grad: (const, dup, const, const) -> active; by_dir_dir: forward (const, dual, const, const) -> dualonly)
double by_dir(const double *x0, const double *p, int n, int steps)
{
    double x[8], g[8], e[8] = {0};
    memcpy(x, x0, n * sizeof *x);
    for (int t = 0; t < steps; t++) {
        for (int i = 0; i < n; i++) {
            e[i] = 1;
            g[i] = pot_dir(x, e, p, n);
            e[i] = 0;
        }
        for (int i = 0; i < n; i++)
            x[i] -= 0.1 * g[i];
    }
    return miss(x, n);
}

/* four directions a call (n <= 4) */
// @diff(by_dir4_grad: (const, dup, const, const) -> active; by_dir4_dir: forward (const, dual, const, const) -> dualonly)
double by_dir4(const double *x0, const double *p, int n, int steps)
{
    double x[4], e[4][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
    memcpy(x, x0, n * sizeof *x);
    for (int t = 0; t < steps; t++) {
        pot_dir4_result d = pot_dir4(x, e[0], e[1], e[2], e[3], p, n);
        for (int i = 0; i < n; i++)
            x[i] -= 0.1 * d.d_ret[i];
    }
    return miss(x, n);
}

/* the gradient of split mode, its tape in a local buffer */
// @diff(by_split_grad: (const, dup, const, const) -> active; by_split_dir: forward (const, dual, const, const) -> dualonly)
double by_split(const double *x0, const double *p, int n, int steps)
{
    double x[8], g[8];
    _Alignas(16) unsigned char tape[512];
    memcpy(x, x0, n * sizeof *x);
    for (int t = 0; t < steps; t++) {
        memset(g, 0, n * sizeof *g);
        pot_split_forward(x, g, p, n, tape);
        pot_split_reverse(tape, 1.0);
        for (int i = 0; i < n; i++)
            x[i] -= 0.1 * g[i];
    }
    return miss(x, n);
}

/* a saddle point: h is minimized over x and maximized over y */
// @diff(h_dy: (const, dup, const, const) -> active)
double h(const double *x, const double *y, const double *q, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += q[i] * x[i] * y[i] - 0.5 * y[i] * y[i] * (1.5 + sin(x[i])) + 0.5 * x[i] * x[i] * q[(i + 1) % n];
    return s;
}

/* max over y by gradient ascent from 0 */
// @diff(best_dx: (dup, const, const, const) -> active)
double best(const double *x, const double *q, int n, int steps)
{
    double y[8] = {0}, gy[8];
    for (int t = 0; t < steps; t++) {
        memset(gy, 0, n * sizeof *gy);
        h_dy(x, y, gy, q, n, 1.0);
        for (int i = 0; i < n; i++)
            y[i] += 0.3 * gy[i];
    }
    return h(x, y, q, n);
}

/* min over x by gradient descent on the max over y */
// @diff(saddle_grad: (const, dup, const, const) -> active; saddle_dir: forward (const, dual, const, const) -> dualonly)
double saddle(const double *x0, const double *q, int n, int steps)
{
    double x[8], gx[8];
    memcpy(x, x0, n * sizeof *x);
    for (int t = 0; t < steps; t++) {
        memset(gx, 0, n * sizeof *gx);
        best_dx(x, gx, q, n, steps, 1.0);
        for (int i = 0; i < n; i++)
            x[i] -= 0.2 * gx[i];
    }
    return best(x, q, n, steps);
}
"""

N, STEPS, H = 4, 3, 1e-6
X0 = np.linspace(0.1, 0.9, N)
P = np.linspace(0.5, 1.5, N)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    work = tmp_path_factory.mktemp("nested")
    src = work / "nested.c"
    src.write_text(SOURCE)
    return adgen.load(src, build_dir=work / "build")


def _fd(f, p, h=H):
    return np.array([(f(p + h * e) - f(p - h * e)) / (2 * h) for e in np.eye(len(p))])


def _grad(lib, name, p):
    dp = np.zeros(N)
    getattr(lib, f"{name}_grad")(X0, p, dp, N, STEPS, 1.0)
    return dp


@pytest.mark.parametrize("name", ["particle", "in_loop", "by_dir", "by_dir4", "by_split"])
@pytest.mark.slow
def test_gradient_through_a_derived_function(lib, name):
    """Reverse and forward mode of a function descending with a gradient adgen made."""
    primal = getattr(lib, name)
    fd = _fd(lambda p: primal(X0, p, N, STEPS), P)
    dp = np.zeros(N)
    value = getattr(lib, f"{name}_grad")(X0, P, dp, N, STEPS, 1.0)
    assert value == pytest.approx(primal(X0, P, N, STEPS), rel=1e-14)
    assert dp == pytest.approx(fd, rel=1e-6, abs=1e-8)
    directions = np.array([getattr(lib, f"{name}_dir")(X0, P, e, N, STEPS) for e in np.eye(N)])
    assert directions == pytest.approx(dp, rel=1e-11, abs=1e-13)  # forward against reverse


@pytest.mark.slow
def test_wider_and_split_outer_entries(lib):
    """forward[4] (a direction a lane) and split mode of the particle, against its gradient."""
    dp = _grad(lib, "particle", P)
    lanes = lib.particle_dir4(X0, P, *np.eye(N), N, STEPS)
    assert np.array(lanes.d_ret) == pytest.approx(dp, rel=1e-11, abs=1e-13)
    split = np.zeros(N)
    value, tape = lib.particle_split.forward(X0, P, split, N, STEPS)
    lib.particle_split.reverse(tape, 1.0)
    assert value == pytest.approx(lib.particle(X0, P, N, STEPS), rel=1e-14)
    assert split == pytest.approx(dp, rel=1e-12, abs=1e-14)
    assert lib.pot_split_tape_size() <= 512  # by_split's tape


@pytest.mark.slow
def test_hessian_vector_product_of_a_nested_gradient(lib):
    """forward of particle_grad (three levels: pot_grad, particle_grad, particle_hvp)."""
    v = np.array([0.3, -0.7, 0.2, 0.5])
    dp, hv = np.zeros(N), np.zeros(N)
    slope = lib.particle_hvp(X0, P, v, dp, hv, N, STEPS, 1.0)
    fd = (_grad(lib, "particle", P + H * v) - _grad(lib, "particle", P - H * v)) / (2 * H)
    assert hv == pytest.approx(fd, rel=1e-5, abs=1e-7)
    assert dp == pytest.approx(_grad(lib, "particle", P), rel=1e-13)
    assert slope == pytest.approx(_grad(lib, "particle", P) @ v, rel=1e-11)


@pytest.mark.slow
def test_saddle_point_three_levels_deep(lib):
    """saddle_grad differentiates best_dx (of best, which calls h_dy, of h): the gradient in
    the parameters of where min over x of max over y ends."""
    q = np.array([0.8, 1.1, 0.6, 1.3])
    fd = _fd(lambda q: lib.saddle(X0, q, N, STEPS), q)
    dq = np.zeros(N)
    value = lib.saddle_grad(X0, q, dq, N, STEPS, 1.0)
    assert value == pytest.approx(lib.saddle(X0, q, N, STEPS), rel=1e-14)
    assert dq == pytest.approx(fd, rel=1e-6, abs=1e-8)
    directions = np.array([lib.saddle_dir(X0, q, e, N, STEPS) for e in np.eye(N)])
    assert directions == pytest.approx(dq, rel=1e-11, abs=1e-13)


OTHER = r"""
#include "nested.adgen.h"

/* pot_grad, of the other source, three steps down from x0 */
// @diff(far_grad: (const, dup, const) -> active; far_dir: forward (const, dual, const) -> dualonly)
double far(const double *x0, const double *p, int n)
{
    double x[8], g[8];
    memcpy(x, x0, n * sizeof *x);
    for (int t = 0; t < 3; t++) {
        memset(g, 0, n * sizeof *g);
        pot_grad(x, g, p, n, 1.0);
        for (int i = 0; i < n; i++)
            x[i] -= 0.1 * g[i];
    }
    return x[0] * x[n - 1];
}
"""


@pytest.mark.slow
def test_a_derived_function_of_another_source(tmp_path):
    """A source calling the derived functions of another one built with it, through its header."""
    first, second = tmp_path / "nested.c", tmp_path / "other.c"
    first.write_text(SOURCE)
    second.write_text("#include <string.h>\n" + OTHER)
    both = adgen.load([first, second], build_dir=tmp_path / "build")
    fd = _fd(lambda p: both.far(X0, p, N), P)
    dp = np.zeros(N)
    both.far_grad(X0, P, dp, N, 1.0)
    assert dp == pytest.approx(fd, rel=1e-6, abs=1e-8)
    assert np.array([both.far_dir(X0, P, e, N) for e in np.eye(N)]) == pytest.approx(dp, rel=1e-11, abs=1e-13)


CYCLE = r"""
#include "cyc.adgen.h"

// @diff(f_grad: (dup, const) -> active)
double f(const double *x, int n)
{
    double g[4] = {0};
    if (n > 100)
        f_grad(x, g, n, 1.0);
    return x[0] * x[0] + g[0];
}

// @diff(a_grad: (dup) -> active)
double a(const double *x)
{
    double g[1] = {0};
    b_grad(x, g, 1.0);
    return x[0] * g[0];
}

// @diff(b_grad: (dup) -> active)
double b(const double *x)
{
    double g[1] = {0};
    a_grad(x, g, 1.0);
    return x[0] * g[0];
}
"""


def test_a_cycle_is_an_error_at_each_annotation(adgen, c_file, tmp_path):
    src = c_file(CYCLE, "cyc.c")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    assert ("cyc.c:4:10: error: 'f_grad' cannot be made: it differentiates 'f', which calls 'f_grad' itself; "
            "a derivative cannot differentiate its own code") in result.err
    assert "cyc.c:9:9: note: 'f' calls 'f_grad' here" in result.err
    assert ("cyc.c:13:10: error: 'a_grad' cannot be made: it differentiates 'a', which calls 'b_grad', whose code "
            "reaches 'a_grad' in turn") in result.err
    assert "cyc.c:17:5: note: 'a' calls 'b_grad' here" in result.err
    assert "cyc.c:21:10: error: 'b_grad' cannot be made" in result.err
    assert "adgen.c" not in result.err and "Traceback" not in result.err
    assert not (tmp_path / "out").exists()


INTERLEAVED = r"""
#include "lanes.adgen.h"

// @diff(pv4: forward[4] (dualv, const) -> dualonly)
double potential(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i] * x[(i + 1) % n];
    return s;
}

// @diff(a_grad: (dup, const) -> active; a_dir: forward (dual, const) -> dualonly)
double a(const double *x0, int n)
{
    double x[4] = {x0[0], x0[1], x0[2], x0[3]}, e[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    pv4_result d = pv4(x, e, n);
    return d.d_ret[0] * x[1];
}
"""


def test_through_the_vector_code_of_a_derived_function(tmp_path):
    """The tangents of a dualv entry are vectors in memory (`<4 x double>`), which the outer
    derivatives differentiate as vector values (specs/abi.md): the gradient of a, which calls
    pv4, against central finite differences and against its forward mode."""
    src = tmp_path / "lanes.c"
    src.write_text(INTERLEAVED)
    lib = adgen.load(src, build_dir=tmp_path / "build")
    x0 = np.array([0.7, -0.4, 1.3, 0.2])
    fd = _fd(lambda x: lib.a(x, 4), x0)
    dx = np.zeros(4)
    assert lib.a_grad(x0, dx, 4, 1.0) == pytest.approx(lib.a(x0, 4), rel=1e-14)
    assert dx == pytest.approx(fd, rel=1e-6, abs=1e-8)
    directions = np.array([lib.a_dir(x0, e, 4) for e in np.eye(4)])
    assert directions == pytest.approx(dx, rel=1e-12, abs=1e-14)


def test_what_cannot_be_differentiated_in_a_derived_function_is_at_its_call(adgen, c_file, tmp_path):
    """Vector values with interleaved lanes (a dualv entry of a, over pv4's vector tangents) are
    not differentiated: an error at the call of pv4 in the user's source, and no path of adgen's
    own files."""
    src = c_file(INTERLEAVED.replace("a_dir: forward (dual, const) -> dualonly)",
                                     "a_dir: forward (dual, const) -> dualonly)\n// @diff(a_dir4v: forward[4] (dualv, const) -> dualonly)"),
                 "lanes.c")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    assert ("lanes.c:18:20: error: cannot differentiate a vector value ('<4 x double>') carrying derivatives"
            in result.err)
    assert "in the code of the derived function 'pv4', which 'a' calls here (needed by 'a_dir4v')" in result.err
    assert result.err.count(": error: ") == 1
    assert "adgen.c" not in result.err and "Traceback" not in result.err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_check_and_explain_a_nested_source(adgen, tmp_path):
    """`adgen check` builds a source that includes its own header and calls its derived
    functions; --explain names the derived function where the user's code calls it."""
    src = tmp_path / "nested.c"
    src.write_text(SOURCE)
    result = adgen("check", src, "--only", "particle_grad", "--size", "x0=n", "--size", "p=n", "--size", "d_p=n",
                   "--size", "n=4", "--size", "steps=3")
    assert result.status == 0, result.err
    assert "1 of 1 checks pass" in result.out
    result = adgen("build", src, "-o", tmp_path / "out", "--explain")
    assert result.status == 0, result.err
    line = SOURCE.splitlines().index("    pot_grad(x, g, p, n, 1.0);") + 1
    assert f"nested.c:{line}  the record of `pot_grad(x, g, p, n, 1.0)`: what its reverse sweep needs" in result.out
    assert "adgen.c:" not in result.out + result.err and "__adgen_kernel" not in result.out + result.err
