"""MPI programs (ir_ad/mpi.py, base/mpi_wrapper.py, specs/mpi.md): derivatives of functions that
ask MPI for their rank and size and reduce integers over the ranks, built with `adgen build`
(mpi.h found through the wrapper) and with `adgen cc` as the wrapper's compiler
(`OMPI_CC="adgen cc" mpicc`), run on 2 and 3 ranks and checked against finite differences; a
communication of floating data refused with an error at its line. Runs where Open MPI's mpicc
and mpirun are installed (.ci/run installs libopenmpi-dev and openmpi-bin), and is skipped with
that reason elsewhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from adgen.base.mpi_wrapper import mpi_include_flags

MPICC, MPIRUN = shutil.which("mpicc"), shutil.which("mpirun")
pytestmark = pytest.mark.skipif(not (MPICC and MPIRUN), reason="Open MPI is not installed (.ci/run installs "
                                "libopenmpi-dev and openmpi-bin; apt-get install libopenmpi-dev openmpi-bin)")

LOCAL = r"""
#include <mpi.h>

/* @diff(local_grad: (dup, const) -> active; local_fwd: forward (dual, const) -> dual) */
double local(const double *x, int n)
{
    int rank, size, total;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&n, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);  /* integers: no derivatives */
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (rank + 1) * x[i] * x[i] * x[i] / (size * total);
    return s;
}
"""

DRIVER = r"""
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include "local.adgen.h"
double local(const double *x, int n);

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x[3] = {0.5 + rank, -1.0, 2.0}, dx[3] = {0}, worst = 0, h = 1e-6;
    local_grad(x, dx, 3, 1.0);
    for (int i = 0; i < 3; i++) {
        double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]}, t[3] = {0}, fd;
        xp[i] += h; xm[i] -= h; t[i] = 1;
        fd = (local(xp, 3) - local(xm, 3)) / (2 * h);
        worst = fmax(worst, fmax(fabs(fd - dx[i]), fabs(local_fwd(x, t, 3).d_ret - dx[i])));
    }
    printf("rank %d: %s\n", rank, worst < 1e-6 ? "ok" : "WRONG");
    MPI_Finalize();
    return worst < 1e-6 ? 0 : 1;
}
"""

ENZYME = r"""
#include <mpi.h>
#include <stdio.h>
extern int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);

double local(const double *x, int n)
{
    int rank, size, total;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&n, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double s = 0;
    for (int i = 0; i < n; i++) s += (rank + 1) * x[i] * x[i] / (size * total);
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x[2] = {1.0, -2.0}, dx[2] = {0, 0};
    __enzyme_autodiff((void *)local, enzyme_dup, x, dx, enzyme_const, 2);
    double want = 2.0 * (rank + 1) / (size * 2 * size);
    int right = dx[0] == want * x[0] && dx[1] == want * x[1];
    printf("rank %d: %s\n", rank, right ? "ok" : "WRONG");
    MPI_Finalize();
    return right ? 0 : 1;
}
"""


def _mpirun(exe, ranks: int) -> subprocess.CompletedProcess:
    return subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), str(exe)],
                          capture_output=True, text=True, timeout=120)


def test_mpi_h_is_found_through_the_wrapper(tmp_path):
    src = tmp_path / "local.c"
    src.write_text(LOCAL)
    flags = mpi_include_flags([src], [])
    assert any(f.startswith("-I") and os.path.isfile(os.path.join(f[2:], "mpi.h")) for f in flags), flags
    assert mpi_include_flags([src], flags) == []  # (the flags given reach mpi.h already)
    plain = tmp_path / "plain.c"
    plain.write_text("double f(double x) { return x; }\n")
    assert mpi_include_flags([plain], []) == []


@pytest.mark.parametrize("ranks", [2, 3])
def test_rank_size_and_integer_reductions_carry_no_derivatives(adgen, tmp_path, ranks):
    src = tmp_path / "local.c"
    src.write_text(LOCAL)
    (tmp_path / "main.c").write_text(DRIVER)
    assert adgen("build", "-q", src, "-o", tmp_path / "out").status == 0  # (no flags: the wrapper's)
    subprocess.run([MPICC, "-O2", "-I", str(tmp_path / "out"), str(tmp_path / "main.c"), str(src),
                    str(tmp_path / "out" / "local.adgen.o"), "-lm", "-o", str(tmp_path / "prog")], check=True)
    run = _mpirun(tmp_path / "prog", ranks)
    assert run.returncode == 0 and run.stdout.count(": ok") == ranks, run.stdout + run.stderr


def test_adgen_cc_as_the_wrappers_compiler(tmp_path):
    src = tmp_path / "enzyme.c"
    src.write_text(ENZYME)
    env = {**os.environ, "OMPI_CC": f"{sys.executable} -m adgen.commands.cli cc"}
    built = subprocess.run([MPICC, "-O2", str(src), "-o", str(tmp_path / "prog")], capture_output=True, text=True,
                           env=env, cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    run = _mpirun(tmp_path / "prog", 2)
    assert run.returncode == 0 and run.stdout.count(": ok") == 2, run.stdout + run.stderr


@pytest.mark.parametrize("datatype", ["MPI_DOUBLE", "MPI_BYTE"])
def test_communication_of_floating_data_is_refused_at_its_line(adgen, c_file, tmp_path, datatype):
    count = "1" if datatype == "MPI_DOUBLE" else "sizeof local"
    src = c_file("#include <mpi.h>\n"
                 "// @diff(dot_grad: (dup, dup, const) -> active)\n"
                 "double dot(const double *x, const double *y, int n)\n{\n"
                 "    double local = 0, global = 0;\n"
                 "    for (int i = 0; i < n; i++) local += x[i] * y[i];\n"
                 f"    MPI_Allreduce(&local, &global, {count}, {datatype}, MPI_SUM, MPI_COMM_WORLD);\n"
                 "    return global;\n}\n", "dot.c")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1 and "Traceback" not in result.err
    assert f"{src}:7:5: error: cannot differentiate MPI's 'MPI_Allreduce' on data that is not integers: adgen does " \
        "not differentiate MPI communication yet" in result.err, result.err
    assert not (tmp_path / "out").exists()


CMAKE_MAIN = r"""
#include <mpi.h>
#include <stdio.h>
#include "local.adgen.h"
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x[2] = {1.0, 2.0}, dx[2] = {0, 0};
    local_grad(x, dx, 2, 1.0);
    double c = 3.0 * (rank + 1) / (size * 2 * size);  /* d/dx of (rank + 1) x^3 / (size * total) */
    int right = dx[0] == c * 1.0 && dx[1] == c * 4.0;
    printf("rank %d: %s\n", rank, right ? "ok" : "WRONG");
    MPI_Finalize();
    return right ? 0 : 1;
}
"""


def test_cmake_with_find_package_mpi(tmp_path):
    """`find_package(MPI)` and `MPI::MPI_C` beside `adgen_add_derivatives`: mpi.h reaches adgen."""
    from test_cmake import cmake_dir, tool

    (tmp_path / "local.c").write_text(LOCAL)
    (tmp_path / "main.c").write_text(CMAKE_MAIN)
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(mpidemo C)\nfind_package(MPI REQUIRED COMPONENTS C)\n"
        "find_package(adgen REQUIRED)\nadd_executable(demo main.c local.c)\n"
        "target_link_libraries(demo PRIVATE MPI::MPI_C m)\nadgen_add_derivatives(TARGET demo SOURCES local.c)\n")
    build = tmp_path / "build"
    done = subprocess.run([tool("cmake"), "-S", str(tmp_path), "-B", str(build), "-G", "Ninja",
                           f"-DCMAKE_MAKE_PROGRAM={tool('ninja')}", f"-Dadgen_DIR={cmake_dir()}",
                           f"-DADGEN_EXECUTABLE={tool('adgen')}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([tool("cmake"), "--build", str(build)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    run = _mpirun(build / "demo", 2)
    assert run.returncode == 0 and run.stdout.count(": ok") == 2, run.stdout + run.stderr
