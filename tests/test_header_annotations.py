"""Annotations in the project's own headers (specs/annotations.md): a prototype in a `.h`, a
member function declared in a class of a `.hpp`, a function a header defines inline. An entry is
made by the source of the build that defines its function (or, for one the header defines, by
the first source including it), once; one defined in none of the sources built is a note, and
the build goes on; a mistake in a header's annotation is an error located in the header.
Derivatives against central finite differences, built by g++ and by the bundled clang."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import zig_cc

MODEL_H = r"""
#pragma once
/* the loss of a model: annotated where it is declared */
// @diff(loss_grad: (dup, const) -> active)
double loss(const double *x, int n);
// @diff(square_grad: (active) -> active)
static inline double square(double v) { return v * v; }
// @diff(defined_elsewhere_grad: (active) -> active)
double defined_elsewhere(double x);
"""

MODEL_C = r"""
#include <math.h>
#include "model.h"
double loss(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += sin(x[i]) * square(x[i]);
    return s;
}
"""

OTHER_C = r"""
#include "model.h"
double twice(double v) { return 2 * square(v); }
"""

MAIN_C = r"""
#include <math.h>
#include <stdio.h>
#include "model.adgen.h"
double loss(const double *x, int n);
int main(void)
{
    double x[3] = {0.5, -1.25, 2.0}, d[3] = {0};
    loss_grad(x, d, 3, 1.0);
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        double h = 1e-6, keep = x[i];
        x[i] = keep + h; double up = loss(x, 3);
        x[i] = keep - h; double down = loss(x, 3);
        x[i] = keep;
        worst = fmax(worst, fabs((up - down) / (2 * h) - d[i]));
    }
    printf("%.3g %.17g\n", worst, square_grad(1.5, 1.0).d_v);
    return 0;
}
"""


def _run(command, cwd) -> str:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
def test_a_prototype_annotated_in_a_header_is_made_once_by_its_defining_source(adgen, tmp_path):
    for name, text in {"model.h": MODEL_H, "model.c": MODEL_C, "other.c": OTHER_C, "main.c": MAIN_C}.items():
        (tmp_path / name).write_text(text)
    result = adgen("build", tmp_path / "model.c", tmp_path / "other.c", "-o", tmp_path / "out")
    assert result.status == 0, result.err
    assert "model.h:8:4: note: @diff of 'defined_elsewhere' not made: it is defined in none of the sources built" \
        in result.err
    assert "(loss_grad, square_grad)" in result.err and "other.adgen.o (no derivatives)" in result.err
    out = tmp_path / "out"
    _run(zig_cc("-O2", "-I", out, "main.c", "model.c", "other.c", out / "model.adgen.o", out / "other.adgen.o",
                "-lm", "-o", "main"), tmp_path)
    worst, square = _run([tmp_path / "main"], tmp_path).split()
    assert float(worst) < 1e-6 and float(square) == 3.0
    quiet = adgen("build", "-q", tmp_path / "model.c", "-o", tmp_path / "out2")
    assert quiet.status == 0 and quiet.err == ""


MODEL_HPP = r"""
#pragma once
namespace fit {
struct Model {
    double w[3];
    // @diff(loss_grad: (dup, dup, const) -> active)
    double loss(const double *x, int n) const;
    // @diff(ridge_grad: (dup, const) -> active)
    double ridge(double lambda) const { return lambda * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]); }
};
}
"""

MODEL_CPP = r"""
#include <cmath>
#include "model.hpp"
double fit::Model::loss(const double *x, int n) const
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += std::pow(w[i % 3] * x[i] - 1.0, 2);
    return s;
}
"""

MAIN_CPP = r"""
#include <cstdio>
#include "model.adgen.h"
int main()
{
    fit::Model m{{0.5, 1.5, -2.0}}, dm{};
    double x[4] = {1, 2, 3, 4}, dx[4] = {0};
    fit::loss_grad(&m, &dm, x, dx, 4, 1.0);
    double h = 1e-6;
    fit::Model up = m, down = m;
    up.w[1] += h;
    down.w[1] -= h;
    fit::Model dr{};
    fit::ridge_grad(&m, &dr, 0.5, 1.0);
    std::printf("%.17g %.17g %.17g %.17g\n", dm.w[1], (up.loss(x, 4) - down.loss(x, 4)) / (2 * h), dx[0], dr.w[2]);
}
"""


@pytest.mark.parametrize("compiler", ["g++", "bundled"])
@pytest.mark.slow
def test_member_functions_declared_in_a_class_of_a_header(adgen, tmp_path, compiler):
    if compiler == "g++" and shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    for name, text in {"model.hpp": MODEL_HPP, "model.cpp": MODEL_CPP, "main.cpp": MAIN_CPP}.items():
        (tmp_path / name).write_text(text)
    library = ["--cxx-library=libc++"] if compiler == "bundled" else []  # (the program's C++ library)
    result = adgen("build", "-q", tmp_path / "model.cpp", "-o", tmp_path / "out", *library)
    assert result.status == 0, result.err
    out = tmp_path / "out"
    cxx = ["g++"] if compiler == "g++" else zig_cc(cxx=True)
    _run([*cxx, "-O2", "-I", out, "main.cpp", "model.cpp", out / "model.adgen.o", "-o", "main"], tmp_path)
    dw1, fd, dx0, dridge = map(float, _run([tmp_path / "main"], tmp_path).split())
    assert dw1 == pytest.approx(fd, rel=1e-6)
    assert dx0 == pytest.approx(2 * (0.5 * 1 - 1.0) * 0.5)
    assert dridge == pytest.approx(2 * 0.5 * -2.0)


def test_a_source_without_annotations_of_its_own(adgen, tmp_path):
    (tmp_path / "model.h").write_text(MODEL_H.replace("// @diff(defined_elsewhere_grad: (active) -> active)\n", ""))
    (tmp_path / "model.c").write_text(MODEL_C)
    result = adgen("build", tmp_path / "model.c", "-o", tmp_path / "out")
    assert result.status == 0 and "(loss_grad, square_grad)" in result.err, result.err
    assert "note" not in result.err


def test_a_mistake_in_a_header_annotation_is_located_there(adgen, tmp_path):
    (tmp_path / "model.h").write_text("#pragma once\n// @diff(loss_grad: (dup, const, const) -> active)\n"
                                      "double loss(const double *x, int n);\n")
    (tmp_path / "model.c").write_text(MODEL_C.replace("square(x[i])", "x[i]"))
    result = adgen("build", tmp_path / "model.c", "-o", tmp_path / "out")
    assert result.status == 1
    assert "model.h:2:" in result.err and "error:" in result.err and "Traceback" not in result.err
    assert not (tmp_path / "out").exists()


def test_an_annotation_in_a_branch_not_taken_stands_before_nothing(adgen, tmp_path):
    (tmp_path / "model.h").write_text("#ifndef MODEL_H\n#define MODEL_H\n#ifdef FAST\n"
                                      "// @diff(loss_grad: (dup, const) -> active)\nstatic inline double loss_fast(void);\n"
                                      "#else\n// @diff(loss_grad: (dup, const) -> active)\n"
                                      "double loss(const double *x, int n);\n#endif\n#endif\n")
    (tmp_path / "model.c").write_text('#include "model.h"\n#include "model.h"\n' +
                                      MODEL_C.replace("square(x[i])", "x[i]"))
    result = adgen("build", tmp_path / "model.c", "-o", tmp_path / "out")
    assert result.status == 0 and "(loss_grad)" in result.err, result.err
