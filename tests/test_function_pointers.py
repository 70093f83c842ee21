"""Calls through function pointers: a table of functions, a callback passed down, a callback
the user's own code passes in, and one adgen cannot see (specs/abi.md, ir_ad/dispatch.py).
Each possible target is differentiated; against finite differences, forward against reverse."""

from __future__ import annotations

import subprocess

import pytest

import adgen
from conftest import compile_c

H = 1e-6

SOURCE = r"""
#include <math.h>

typedef double (*integrand)(double x, double p);

static double wave(double x, double p) { return sin(p * x); }
static double bell(double x, double p) { return exp(-p * x * x); }
double ramp(double x, double p) { return p * x * x; }

static const integrand table[3] = { wave, bell, ramp };

__attribute__((noinline)) static double simpson(integrand f, double p, double a, double b, int n)
{
    double h = (b - a) / n, s = f(a, p) + f(b, p);
    for (int i = 1; i < n; i++)
        s += (i % 2 ? 4 : 2) * f(a + i * h, p);
    return s * h / 3;
}

// @diff(table_grad: (active, const) -> active; table_fwd: (dual, const) -> dual)
double by_table(double p, int which) { return simpson(table[which % 3], p, 0, 1, 20) * simpson(bell, p, 0, 2, 10); }

// @diff(integrate_grad: (const, active) -> active; integrate_fwd: (const, dual) -> dual)
double integrate(integrand f, double p) { return simpson(f, p, 0, 1, 20); }
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("fp")
    src = work / "fp.c"
    src.write_text(SOURCE)
    return work, src, adgen.load(src, build_dir=work / "build")


@pytest.mark.parametrize("which", [0, 1, 2])
def test_a_table_of_functions_and_a_callback_passed_down(built, which):
    _, _, lib = built
    p = 0.8
    g = lib.table_grad(p, which, 1.0)
    assert g.ret == pytest.approx(lib.by_table(p, which), rel=1e-14)
    assert g.d_p == pytest.approx((lib.by_table(p + H, which) - lib.by_table(p - H, which)) / (2 * H), rel=1e-7)
    assert lib.table_fwd(p, 1.0, which).d_ret == pytest.approx(g.d_p, rel=1e-12)


DRIVER = r"""
#include <stdio.h>
typedef double (*integrand)(double x, double p);
#include "fp.adgen.h"
double ramp(double x, double p);
double integrate(integrand f, double p);
static double outside(double x, double p) { return x * p; }
int main(int argc, char **argv)
{
    const double p = 0.7, h = 1e-6;
    if (argc > 1) {
        integrate_grad(outside, p, 1.0);   /* not a function of the sources: no derivative */
        return 0;
    }
    double fd = (integrate(ramp, p + h) - integrate(ramp, p - h)) / (2 * h);
    printf("%.12f %.12f %.12f\n", integrate_grad(ramp, p, 1.0).d_p, integrate_fwd(ramp, p, 1.0).d_ret, fd);
    return 0;
}
"""


def test_a_callback_from_the_users_own_code(built):
    """`ramp` as the user's object defines it is recognized: the two objects share it."""
    work, src, _ = built
    (work / "main.c").write_text(DRIVER)
    exe = work / "main"
    compile_c("-O2", "-I", work / "build", work / "main.c", src, work / "build" / "fp.adgen.o", "-o", exe, "-lm")
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    rev, fwd, fd = map(float, out)
    assert rev == pytest.approx(fd, rel=1e-7) and fwd == pytest.approx(rev, rel=1e-12)
    assert rev == pytest.approx(1 / 3, rel=1e-9)  # the integral of x^2 on [0, 1]: Simpson is exact
    done = subprocess.run([str(exe), "outside"], capture_output=True, text=True)
    assert done.returncode != 0
    assert "adgen: a call through a function pointer reached a function outside the sources it " \
           "differentiated" in done.stderr


def test_no_function_of_the_pointers_type(adgen, c_file, tmp_path):
    src = c_file("typedef float (*g)(float);\n// @diff(d: (const, active) -> active)\n"
                 "double f(g fn, double x) { return fn((float)x) * x; }\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    assert "src.c:3:" in result.err and "cannot differentiate a call through a function pointer, and no function " \
                                         "of the sources has its type ('float (float)')" in result.err
    assert not (tmp_path / "out" / "src.adgen.o").exists()


CONSTANT_CALLEE = r"""
#include <math.h>
__attribute__((noinline)) static double h(double u, const double *x) { return -u; }
static double (*volatile ph)(double, const double *) = h;
// @diff(g_fwd: (dual, dual) -> dual; g_rev: (dup, dup) -> active)
double g(double *x, double *y)
{
    y[0] += hypot(0.0, 1.0 + ph(1.0, x)) + x[0] * x[0];
    return y[0];
}
"""


def test_a_callee_taking_an_active_pointer_may_return_a_constant(tmp_path):
    """h is given the active x but returns a value of constants: its result has no tangent, so
    hypot(0, 0), which is not differentiable, is not differentiated (forward mode gave NaN: a
    zero tangent times the 0/0 partial; fuzz f89)."""
    import numpy as np

    src = tmp_path / "k.c"
    src.write_text(CONSTANT_CALLEE)
    lib = adgen.load(src, build_dir=tmp_path / "build")
    x, y = np.array([0.3]), np.array([0.5])
    dx, dy = np.array([1.0]), np.array([1.0])
    fwd = lib.g_fwd(x.copy(), dx, y.copy(), dy.copy())
    fd = (lib.g(x + H, y + H) - lib.g(x - H, y - H)) / (2 * H)
    assert fwd.d_ret == pytest.approx(fd, rel=1e-7) and fwd.d_ret == pytest.approx(1.6, rel=1e-12)
    bx, by = np.zeros(1), np.zeros(1)
    lib.g_rev(x.copy(), bx, y.copy(), by, 1.0)
    assert bx[0] == pytest.approx(0.6, rel=1e-12) and by[0] == pytest.approx(1.0, rel=1e-12)
