"""`adgen build`'s derivative object reads and writes the program's variables (specs/abi.md,
"Variables of the sources"): a variable the sources define with external linkage is weak in it,
the user's object of the source defining the one, not a copy of its initial value (before, the derivative
read its own copy, which LLVM even folded in: a gradient silently computed with the initial
value). C++ variables initialized at run time are initialized once, by the program; static ones
stay the derivative's own, initialized by it."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

SOURCE = r"""
double scale = 1.0;
int calls;
// @diff(f_grad: (active) -> active; f_tan: forward (dual) -> dualonly)
double f(double x)
{
    calls++;
    return scale * x * x;
}
"""


def test_a_gradient_reads_the_programs_variables(build_lib):
    lib = build_lib(SOURCE)
    scale = ctypes.c_double.in_dll(lib, "scale")
    calls = ctypes.c_int.in_dll(lib, "calls")

    class Result(ctypes.Structure):
        _fields_ = [("ret", ctypes.c_double), ("d_x", ctypes.c_double)]

    lib.f_grad.restype, lib.f_grad.argtypes = Result, [ctypes.c_double, ctypes.c_double]
    lib.f_tan.restype, lib.f_tan.argtypes = ctypes.c_double, [ctypes.c_double, ctypes.c_double]
    assert lib.f_grad(2.0, 1.0).d_x == 4.0
    scale.value = 3.0
    assert lib.f_grad(2.0, 1.0).d_x == 12.0  # (4.0, the initial value's, before)
    assert lib.f_tan(2.0, 1.0) == 12.0
    assert calls.value == 3  # its writes are the program's too


CXX = r"""
#include <cmath>
#include <cstdio>
#include <vector>
std::vector<double> weights = {1.0, 2.0, 3.0};
static std::vector<double> own = {0.5, 0.25};
double k = 1.0;
struct Noisy { Noisy() { std::puts("constructed"); } ~Noisy() { std::puts("destructed"); } } noisy;
// @diff(g_grad: (active) -> active)
double g(double x)
{
    double s = 0;
    for (double w : weights)
        s += w * std::sin(x * k);
    return s + own[1] * x;
}
"""

MAIN = r"""
#include <cstdio>
#include <vector>
#include "g.adgen.h"
extern std::vector<double> weights;
extern double k;
double g(double x);
int main()
{
    weights.push_back(4.0);
    k = 2.0;
    double x = 0.7, h = 1e-6;
    std::printf("%.12g %.12g\n", g_grad(x, 1.0).d_x, (g(x + h) - g(x - h)) / (2 * h));
}
"""


@pytest.mark.slow
def test_cxx_variables_initialized_once_by_the_program(adgen, tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    (tmp_path / "g.cpp").write_text(CXX)
    (tmp_path / "main.cpp").write_text(MAIN)
    result = adgen("build", "-q", tmp_path / "g.cpp", "-o", tmp_path / "out")
    assert result.status == 0, result.err
    subprocess.run(["g++", "-O2", "-I", "out", "main.cpp", "g.cpp", "out/g.adgen.o", "-o", "main"], cwd=tmp_path,
                   check=True)
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.split("\n")
    assert lines[0] == "constructed" and lines[2] == "destructed" and lines[3] == ""  # once each
    grad, fd = map(float, lines[1].split())
    assert grad == pytest.approx(fd, rel=1e-6)
