"""The CMake package: examples/cmake configures with find_package(adgen) (through adgen_DIR and
through CMAKE_PREFIX_PATH), builds with Ninja, runs, rebuilds nothing the second time, and
after a header it includes is touched rebuilds only what depends on it. A target using OpenMP
gets derivatives built with -fopenmp and the runtime they call, with GCC, clang and the bundled
clang."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert found, f"{name} is a test dependency (pip install '.[test]')"
    return found


@pytest.fixture
def project(tmp_path):
    copy = tmp_path / "example"
    shutil.copytree(ROOT / "examples" / "cmake", copy)
    cc = tmp_path / "zigcc"  # the clang of the ziglang wheel, as CMake wants one executable
    cc.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ziglang cc "$@"\n')
    cc.chmod(0o755)
    return copy, cc


def cmake_dir() -> str:
    return subprocess.run([tool("adgen"), "--cmake-dir"], capture_output=True, text=True, check=True).stdout.strip()


def configure(source: Path, build: Path, cc: Path, *extra: str, env=None) -> None:
    done = subprocess.run([tool("cmake"), "-S", str(source), "-B", str(build), "-G", "Ninja",
                           f"-DCMAKE_MAKE_PROGRAM={tool('ninja')}", f"-DCMAKE_C_COMPILER={cc}", *extra],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def build(build: Path) -> str:
    done = subprocess.run([tool("cmake"), "--build", str(build)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
def test_build_run_and_rebuild_only_what_depends(project, tmp_path):
    source, cc = project
    out = tmp_path / "build"
    configure(source, out, cc, f"-Dadgen_DIR={cmake_dir()}")
    first = build(out)
    assert "adgen: derivatives of spring.c" in first
    run = subprocess.run([str(out / "spring")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.count("finite differences") == 5
    assert "no work to do" in build(out)
    time.sleep(1.1)
    (source / "include" / "spring.h").touch()
    again = build(out)
    steps = re.findall(r"\] (.*)", again)
    assert "adgen: derivatives of spring.c" in steps
    assert any("spring.c.o" in s for s in steps) and any("main.c.o" in s for s in steps)
    assert not any("report.c.o" in s for s in steps), steps  # report.c does not include spring.h
    assert "no work to do" in build(out)


@pytest.mark.slow
def test_compile_definitions_reach_adgen(project, tmp_path):
    source, cc = project
    out = tmp_path / "build"
    configure(source, out, cc, f"-Dadgen_DIR={cmake_dir()}")
    build(out)
    rsp = (out / "adgen" / "spring.adgen.rsp").read_text().splitlines()
    assert "-DSTIFFNESS_SCALE=2.5" in rsp and any(line.endswith("/include") for line in rsp if line.startswith("-I"))


@pytest.mark.slow
def test_errors_keep_their_location_in_cmake_builds(project, tmp_path):
    source, cc = project
    text = (source / "spring.c").read_text().replace("(dup, const, const)", "(dupp, const, const)")
    (source / "spring.c").write_text(text)
    out = tmp_path / "build"
    configure(source, out, cc, f"-Dadgen_DIR={cmake_dir()}")
    done = subprocess.run([tool("cmake"), "--build", str(out)], capture_output=True, text=True)
    assert done.returncode != 0
    assert re.search(r"spring\.c:5:31: error: unknown activity 'dupp'", done.stdout + done.stderr)


@pytest.mark.slow
def test_found_through_cmake_prefix_path(project, tmp_path):
    source, cc = project
    env = {**os.environ, "CMAKE_PREFIX_PATH": cmake_dir()}
    configure(source, tmp_path / "build", cc, env=env)


def test_version_file_matches_the_package():
    import tomllib

    from adgen.base import __version__

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert f'set(PACKAGE_VERSION "{version}")' in (ROOT / "cmake" / "adgenConfigVersion.cmake").read_text()
    assert __version__ == version  # what adgen --version and generated files say


ENZYME_PROJECT = {
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(demo C)\nadd_executable(demo main.c)\n",
    "main.c": "#include <stdio.h>\ndouble __enzyme_autodiff(void *, ...);\n"
              "static double cube(double x) { return x * x * x; }\n"
              "int main(void) { double d = __enzyme_autodiff((void *)cube, 2.0); printf(\"%g\\n\", d);"
              " return d != 12.0; }\n",
}


@pytest.mark.parametrize("how", ["launcher", "wrapper"])
@pytest.mark.slow
def test_code_written_for_enzyme_with_adgen_cc(tmp_path, how):
    """`adgen cc` as CMake's compiler launcher (the compiler CMake found is replaced), or as the
    compiler itself through a one-line wrapper script."""
    source = tmp_path / "src"
    source.mkdir()
    for name, text in ENZYME_PROJECT.items():
        (source / name).write_text(text)
    wrapper = tmp_path / "adgen-cc"
    wrapper.write_text(f'#!/bin/sh\nexec "{tool("adgen")}" cc "$@"\n')
    wrapper.chmod(0o755)
    zigcc = tmp_path / "zigcc"
    zigcc.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ziglang cc "$@"\n')
    zigcc.chmod(0o755)
    if how == "launcher":
        configure(source, tmp_path / "build", zigcc, f"-DCMAKE_C_COMPILER_LAUNCHER={tool('adgen')};cc")
    else:
        configure(source, tmp_path / "build", wrapper)
    build(tmp_path / "build")
    run = subprocess.run([str(tmp_path / "build" / "demo")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "12\n"


OPENMP_PROJECT = {
    "kernel.c": """
// @diff(energy_grad: (dup, const, const) -> activeonly)
double energy(const double *x, int n, double k)
{
    double e = 0;
    #pragma omp parallel for reduction(+: e)
    for (int i = 0; i < n; i++)
        e += k * x[i] * x[i] * x[i];
    return e;
}
""",
    "main.c": """
#include <stdio.h>
#include "kernel.adgen.h"
int main(void)
{
    enum { N = 1000 };
    static double x[N], dx[N];
    double squares = 0;
    #ifdef _OPENMP
    #pragma omp parallel for reduction(+: squares)
    #endif
    for (int i = 0; i < N; i++) { x[i] = 0.001 * i; squares += x[i] * x[i]; }
    energy_grad(x, dx, N, 2.0, 1.0);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double want = 6.0 * x[i] * x[i], err = dx[i] > want ? dx[i] - want : want - dx[i];
        if (err > worst) worst = err;
    }
    printf("worst %g, squares %.6f\\n", worst, squares);
    return worst > 1e-12;
}
""",
}


def _openmp_compilers() -> list:
    missing = lambda c: pytest.mark.skipif(shutil.which(c) is None, reason=f"no {c} on this machine")
    runtime = pytest.mark.skipif(not glob.glob("/usr/lib/llvm-19/lib/libomp.so"), reason="clang-19 without its "
                                 "OpenMP runtime, which its -fopenmp links (Debian: libomp-19-dev)")
    return [pytest.param("gcc", marks=missing("gcc")), pytest.param("clang-19", marks=[missing("clang-19"), runtime]),
            "bundled"]


@pytest.mark.parametrize("compiler", _openmp_compilers())
@pytest.mark.slow
def test_openmp_targets_build_and_link_the_runtime(tmp_path, compiler):
    """A target linking OpenMP::OpenMP_C (GCC's -fopenmp links libgomp, clang's libomp) gets
    derivatives built with -fopenmp and the runtime they call; with the bundled clang, which has
    no OpenMP of its own, OPENMP asks for it. The gradient of a parallel reduction is right on
    two threads, and the primal's own parallel loop runs beside it."""
    from adgen.base.toolchain import openmp_library

    if openmp_library() is None:
        pytest.skip("no OpenMP runtime (libomp) on this machine: Debian's libomp-dev")
    source = tmp_path / "src"
    source.mkdir()
    for name, text in OPENMP_PROJECT.items():
        (source / name).write_text(text)
    if compiler == "bundled":
        cc = tmp_path / "zigcc"
        cc.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ziglang cc "$@"\n')
        cc.chmod(0o755)
        lists = "add_executable(app main.c)\nadgen_add_derivatives(TARGET app SOURCES kernel.c OPENMP)\n"
    else:
        cc = Path(shutil.which(compiler))
        lists = ("find_package(OpenMP REQUIRED)\nadd_executable(app main.c)\n"
                 "target_link_libraries(app PRIVATE OpenMP::OpenMP_C)\nadgen_add_derivatives(TARGET app SOURCES kernel.c)\n")
    (source / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.20)\nproject(par C)\n"
                                           "find_package(adgen CONFIG REQUIRED)\n" + lists)
    out = tmp_path / "build"
    configure(source, out, cc, f"-Dadgen_DIR={cmake_dir()}")
    build(out)
    run = subprocess.run([str(out / "app")], capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert run.returncode == 0, run.stdout + run.stderr  # (the gradient within 1e-12 of 6 k x^2)
    assert "squares 332.833500" in run.stdout, run.stdout


@pytest.mark.slow
def test_openmp_without_a_runtime_is_a_configure_error(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name, text in OPENMP_PROJECT.items():
        (source / name).write_text(text)
    (source / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.20)\nproject(par C)\n"
                                           "find_package(adgen CONFIG REQUIRED)\nadd_executable(app main.c)\n"
                                           "adgen_add_derivatives(TARGET app SOURCES kernel.c OPENMP)\n")
    done = subprocess.run([tool("cmake"), "-S", str(source), "-B", str(tmp_path / "build"), "-G", "Ninja",
                           f"-DCMAKE_MAKE_PROGRAM={tool('ninja')}", f"-Dadgen_DIR={cmake_dir()}",
                           "-DADGEN_OPENMP_LIBRARY="], capture_output=True, text=True)
    assert done.returncode != 0
    said = " ".join((done.stdout + done.stderr).split())  # (CMake wraps its messages)
    assert "the derivatives call LLVM's OpenMP runtime, libomp, and this machine has none (Debian: apt install " \
           "libomp-dev)" in said, said


@pytest.mark.slow
def test_a_cpp_target(tmp_path):
    """A C++ project: adgen_add_derivatives on a .cpp source, the derived function called from C++."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "kernel.cpp").write_text(
        "#include <vector>\nnamespace k {\n// @diff(sum_sq_grad: (dup, const) -> activeonly)\n"
        "double sum_sq(const double *x, int n) { std::vector<double> t(x, x + n); double s = 0;\n"
        "  for (double v : t) s += v * v; return s; }\n}\n")
    (source / "main.cpp").write_text(
        '#include "kernel.adgen.h"\nint main() { double x[3] = {1, 2, 3}, d[3] = {};\n'
        "  k::sum_sq_grad(x, d, 3, 1.0); return !(d[0] == 2 && d[1] == 4 && d[2] == 6); }\n")
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(cxx CXX)\nfind_package(adgen CONFIG REQUIRED)\n"
        "add_executable(app main.cpp)\nadgen_add_derivatives(TARGET app SOURCES kernel.cpp)\n")
    cxx = tmp_path / "zigcxx"
    cxx.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ziglang c++ "$@"\n')
    cxx.chmod(0o755)
    out = tmp_path / "build"
    done = subprocess.run([tool("cmake"), "-S", str(source), "-B", str(out), "-G", "Ninja",
                           f"-DCMAKE_MAKE_PROGRAM={tool('ninja')}", f"-DCMAKE_CXX_COMPILER={cxx}",
                           f"-Dadgen_DIR={cmake_dir()}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "adgen: derivatives of kernel.cpp" in build(out)
    assert subprocess.run([str(out / "app")]).returncode == 0
