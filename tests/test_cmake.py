"""The CMake package: examples/cmake configures with find_package(adgen) (through adgen_DIR and
through CMAKE_PREFIX_PATH), builds with Ninja, runs, rebuilds nothing the second time, and
after a header it includes is touched rebuilds only what depends on it."""

from __future__ import annotations

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


def test_compile_definitions_reach_adgen(project, tmp_path):
    source, cc = project
    out = tmp_path / "build"
    configure(source, out, cc, f"-Dadgen_DIR={cmake_dir()}")
    build(out)
    rsp = (out / "adgen" / "spring.adgen.rsp").read_text().splitlines()
    assert "-DSTIFFNESS_SCALE=2.5" in rsp and any(line.endswith("/include") for line in rsp if line.startswith("-I"))


def test_errors_keep_their_location_in_cmake_builds(project, tmp_path):
    source, cc = project
    text = (source / "spring.c").read_text().replace("(dup, const, const)", "(dupp, const, const)")
    (source / "spring.c").write_text(text)
    out = tmp_path / "build"
    configure(source, out, cc, f"-Dadgen_DIR={cmake_dir()}")
    done = subprocess.run([tool("cmake"), "--build", str(out)], capture_output=True, text=True)
    assert done.returncode != 0
    assert re.search(r"spring\.c:5:31: error: unknown activity 'dupp'", done.stdout + done.stderr)


def test_found_through_cmake_prefix_path(project, tmp_path):
    source, cc = project
    env = {**os.environ, "CMAKE_PREFIX_PATH": cmake_dir()}
    configure(source, tmp_path / "build", cc, env=env)


def test_version_file_matches_the_package():
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert f'set(PACKAGE_VERSION "{version}")' in (ROOT / "cmake" / "adgenConfigVersion.cmake").read_text()


ENZYME_PROJECT = {
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(demo C)\nadd_executable(demo main.c)\n",
    "main.c": "#include <stdio.h>\ndouble __enzyme_autodiff(void *, ...);\n"
              "static double cube(double x) { return x * x * x; }\n"
              "int main(void) { double d = __enzyme_autodiff((void *)cube, 2.0); printf(\"%g\\n\", d);"
              " return d != 12.0; }\n",
}


@pytest.mark.parametrize("how", ["launcher", "wrapper"])
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
