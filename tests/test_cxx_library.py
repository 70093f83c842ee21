"""The C++ library derivatives are compiled against (base/cxx_library.py, specs/cxx.md "The C++
library"): the program's, so that the classes it hands them (`std::string`, `std::map`,
`std::unordered_map`, `std::function`) have its layout. libstdc++ where the program is built by
g++ (a const object of them read inside the differentiated function: gradients against central
finite differences), the bundled libc++ where it asks for it; the choice in the manifest, and a
program or a load mixing the two an error; `adgen c++` compiling and linking as this machine's
clang++ would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import adgen_compiler, zig_cc

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ on this machine (libstdc++'s compiler)")

CONFIG = r"""#pragma once
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>
struct Config {
    std::string name;
    std::map<std::string, double> weights;
    std::unordered_map<std::string, double> offsets;
    std::function<double(double)> shape;
    std::vector<double> bias;
    double scale;
};
"""

LOSS = r"""#include <algorithm>
#include <cmath>
#include <complex>
#include "config.h"
// @diff(loss_grad: (dup, const, const) -> active; loss_fwd: (dual, const, const) -> dual)
double loss(const double *x, int n, const Config &c) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        double v = x[i] * c.weights.at("w") + c.offsets.at("b") + c.bias[i % c.bias.size()];
        double k = c.shape ? 2.0 : 1.0;
        s += v * v * v * k * c.scale * (double)c.name.size() + std::sin(v) + std::abs(std::complex<double>(v, 1.0));
    }
    return s;
}
"""

MAIN = r"""#include <cmath>
#include <cstdio>
#include "config.h"
#include "loss.adgen.h"
double loss(const double *x, int n, const Config &c);
int main() {
    Config c;
    c.name = "a name longer than the small-string buffer";
    c.weights["w"] = 2.0; c.weights["v"] = 5.0;
    c.offsets["b"] = 0.25; c.offsets["q"] = 9.0;
    c.shape = [](double v) { return v * v; };
    c.bias = {0.1, -0.2};
    c.scale = 0.5;
    double x[3] = {0.3, -0.7, 1.1}, d[3] = {0, 0, 0};
    double v = loss_grad(x, d, 3, c, 1.0), worst = std::fabs(v - loss(x, 3, c));
    for (int i = 0; i < 3; i++) {
        double h = 1e-6, p[3] = {x[0], x[1], x[2]}, m[3] = {x[0], x[1], x[2]}, t[3] = {0, 0, 0};
        p[i] += h; m[i] -= h; t[i] = 1;
        double fd = (loss(p, 3, c) - loss(m, 3, c)) / (2 * h);
        loss_fwd_result r = loss_fwd(x, t, 3, c);
        worst = std::fmax(worst, std::fabs(d[i] - fd) / (1 + std::fabs(fd)));
        worst = std::fmax(worst, std::fabs(r.d_ret - fd) / (1 + std::fabs(fd)) + std::fabs(r.ret - loss(x, 3, c)));
    }
    std::printf("worst %g\n", worst);
    return !(worst < 1e-6);
}
"""


def _sources(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.h").write_text(CONFIG)
    (folder / "loss.cpp").write_text(LOSS)
    (folder / "main.cpp").write_text(MAIN)
    return folder / "loss.cpp", folder / "main.cpp"


def _run_program(command: list[str], folder: Path) -> None:
    done = subprocess.run([*command, "-o", str(folder / "app")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(folder / "app")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


@needs_gxx
@pytest.mark.slow
def test_a_config_of_library_classes_from_a_program_built_by_gxx(adgen, tmp_path, monkeypatch):
    """CXX=g++: compiled against libstdc++ (its headers, g++'s), as the program's objects are;
    gradient and tangents right; the manifest and the header say libstdc++."""
    monkeypatch.setenv("CXX", "g++")
    loss, main = _sources(tmp_path)
    result = adgen("build", "-q", loss, "-o", tmp_path)
    assert result.status == 0, result.err
    assert json.loads((tmp_path / "loss.adgen.json").read_text())["cxx_library"] == "libstdc++"
    assert "compiled against libstdc++" in (tmp_path / "loss.adgen.h").read_text()
    _run_program(["g++", "-O2", "-I", str(tmp_path), str(main), str(loss), str(tmp_path / "loss.adgen.o")], tmp_path)


@pytest.mark.slow
def test_the_libcxx_choice_with_a_program_built_by_the_bundled_clang(adgen, tmp_path):
    """--cxx-library=libc++ (or -stdlib=libc++ after --): the bundled libc++, which a program the
    bundled clang builds uses."""
    loss, main = _sources(tmp_path)
    for how in (["--cxx-library=libc++"], ["--", "-stdlib=libc++"]):
        result = adgen("build", "-q", loss, "-o", tmp_path, *how)
        assert result.status == 0, result.err
        assert json.loads((tmp_path / "loss.adgen.json").read_text())["cxx_library"] == "libc++"
    _run_program(zig_cc("-O2", "-I", str(tmp_path), str(main), str(loss), str(tmp_path / "loss.adgen.o"), cxx=True),
                 tmp_path)


@needs_gxx
@pytest.mark.slow
def test_a_program_of_the_other_library_is_a_compile_error(adgen, tmp_path, monkeypatch):
    """The header stops a program built against the other C++ library at its compile, saying
    which library the object was compiled against and how to build it again."""
    monkeypatch.setenv("CXX", "g++")
    loss, main = _sources(tmp_path / "gnu")
    assert adgen("build", "-q", loss, "-o", loss.parent).status == 0
    done = subprocess.run(zig_cc("-O2", "-fsyntax-only", "-I", str(loss.parent), str(main), cxx=True),
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert "loss.adgen.h: loss.adgen.o was compiled against libstdc++, and this program uses libc++: build it " \
           "again with `adgen build --cxx-library=libc++`" in done.stderr, done.stderr
    loss, main = _sources(tmp_path / "llvm")
    assert adgen("build", "-q", loss, "-o", loss.parent, "--cxx-library=libc++").status == 0
    done = subprocess.run(["g++", "-fsyntax-only", "-I", str(loss.parent), str(main)], capture_output=True, text=True)
    assert done.returncode != 0 and "was compiled against libc++, and this program uses libstdc++" in done.stderr


LOADED = r"""#include <vector>
namespace lib {
// @diff(scaled_grad: (dup, const) -> active)
double scaled(const double *x, int n) {
    std::vector<double> t;  // (its growth calls libstdc++'s std::__throw_length_error: linked with it)
    for (int i = 0; i < n; i++) t.push_back(x[i] * x[i]);
    double s = 0;
    for (double v : t) s += 23 * v;
    return s;
}
}
"""


@needs_gxx
@pytest.mark.slow
def test_load_links_with_the_library_and_refuses_a_mix(tmp_path, monkeypatch):
    """adgen.load builds C++ against libstdc++ (CXX=g++) and links it; loading an output directory
    whose objects were compiled against both libraries is an error naming them."""
    import numpy as np

    import adgen as package
    from adgen.commands.load import BuildError

    monkeypatch.setenv("CXX", "g++")
    source = tmp_path / "scaled.cpp"
    source.write_text(LOADED)
    lib = package.load(source, build_dir=tmp_path / "build")
    x, d = np.array([1.0, 2.0, 3.0]), np.zeros(3)
    getattr(lib, "lib::scaled_grad")(x, d, 3, 1.0)
    assert np.allclose(d, 2 * x * 23)
    needed = subprocess.run(["readelf", "-d", str(tmp_path / "build" / "libadgen.so")], capture_output=True,
                            text=True).stdout
    assert "libstdc++" in needed, needed
    assert json.loads((tmp_path / "build" / "scaled.adgen.json").read_text())["cxx_library"] == "libstdc++"
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for name, library in (("a", "libstdc++"), ("b", "libc++")):
        (mixed / f"{name}.cpp").write_text(LOADED.replace("scaled", name))
        done = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "build", "-q", str(mixed / f"{name}.cpp"),
                               "-o", str(mixed), f"--cxx-library={library}"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    with pytest.raises(BuildError) as raised:
        package.load(mixed)
    assert "a.adgen.o was compiled against libstdc++ and b.adgen.o was compiled against libc++" in str(raised.value)
    assert "one program cannot use both C++ libraries" in str(raised.value)


def test_wrong_choices_are_errors(adgen, tmp_path):
    loss, _ = _sources(tmp_path)
    result = adgen("build", "-q", loss, "-o", tmp_path, "--", "-stdlib=libcxx")
    assert result.status == 1 and "Traceback" not in result.err
    assert "adgen: error: -stdlib=libcxx: adgen compiles C++ against libstdc++ or libc++" in result.err
    result = adgen("build", "-q", loss, "-o", tmp_path, "--cxx", str(tmp_path / "no-such-c++"))
    assert result.status == 1 and f"the C++ compiler '{tmp_path / 'no-such-c++'}' (from --cxx) was not found" \
        in result.err


def _fake_compiler(folder: Path, name: str, headers: Path) -> Path:
    """A C++ compiler that says it searches `headers` (gcc's and clang's `-v`)."""
    script = folder / name
    script.write_text("#!/bin/sh\ncat >&2 <<'EOF'\n#include <...> search starts here:\n"
                      f" {headers}\n /usr/include\nEnd of search list.\nEOF\n")
    script.chmod(0o755)
    return script


def test_the_compiler_named_decides(tmp_path, monkeypatch):
    """--cxx, else CXX, else the PATH's: a compiler whose search list holds libc++ (`__config`)
    gives libc++, one holding libstdc++'s (`bits/c++config.h`) libstdc++ with those folders; CXX
    naming adgen itself is passed over."""
    from adgen.base.cxx_library import choose, compiler_named

    llvm, gnu = tmp_path / "v1", tmp_path / "c++" / "12"
    (llvm / "__config").parent.mkdir(parents=True)
    (llvm / "__config").write_text("")
    (gnu / "bits").mkdir(parents=True)
    (gnu / "bits" / "c++config.h").write_text("")
    clangxx, gxx = _fake_compiler(tmp_path, "clangxx", llvm), _fake_compiler(tmp_path, "gxx", gnu)
    monkeypatch.setenv("CXX", str(clangxx))
    assert choose([]).name == "libc++"
    with compiler_named(str(gxx)):
        chosen = choose([])
        assert (chosen.name, chosen.include_dirs) == ("libstdc++", (str(gnu),))
        assert choose(["-stdlib=libc++"]).name == "libc++"
    monkeypatch.setenv("CXX", f"{sys.executable} -m adgen.commands.cli c++")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert choose([]).bundled  # (no compiler on the PATH: the bundled libc++)


PROGRAM = r"""#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>
struct Config { std::string name; std::map<std::string, double> weights; double scale; };
double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
static int constructed = 0;
struct Counted { Counted() { constructed++; } } counted;  // (a static constructor: run once)
double loss(const double *x, int n, const Config &c) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i] * c.weights.at("w") * c.scale * (double)c.name.size();
    return s;
}
int main() {
    std::cout << "start\n";
    Config c; c.name = "abcdefghijklmnopqrstuvwxyz"; c.weights["w"] = 2.0; c.scale = 0.5;
    std::vector<double> x = {1, 2, 3}, d(3, 0.0);
    __enzyme_autodiff((void *)loss, enzyme_dup, x.data(), d.data(), enzyme_const, 3, enzyme_const, &c);
    std::cout << d[0] << " " << d[1] << " " << d[2] << " " << constructed << "\n";
    return !(d[0] == 52 && d[1] == 104 && d[2] == 156 && constructed == 1);
}
"""


@needs_gxx
@pytest.mark.parametrize("stdlib", [None, "libc++"])
@pytest.mark.slow
def test_adgen_cxx_compiles_and_links_as_this_machines_clangxx(tmp_path, monkeypatch, stdlib):
    """`adgen c++` with CXX=g++: libstdc++'s headers and its shared library (<iostream>'s
    initialization run, a static constructor once); -stdlib=libc++: the bundled libc++, no
    libstdc++. The object of `-c` links with g++ too."""
    monkeypatch.setenv("CXX", "g++")
    (tmp_path / "prog.cpp").write_text(PROGRAM)
    flags = [f"-stdlib={stdlib}"] if stdlib else []
    adgen_compiler("c++", "-O2", *flags, "prog.cpp", "-o", "prog", cwd=tmp_path)
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "start\n52 104 156 1\n", run.stdout + run.stderr
    needed = subprocess.run(["readelf", "-d", str(tmp_path / "prog")], capture_output=True, text=True).stdout
    assert ("libstdc++" in needed) == (stdlib is None), needed
    if stdlib is None:
        adgen_compiler("c++", "-O2", "-c", "prog.cpp", "-o", "prog.o", cwd=tmp_path)
        _run_program(["g++", str(tmp_path / "prog.o")], tmp_path)


@pytest.mark.slow
def test_adgen_cc_runs_static_constructors_once(tmp_path):
    """A C file's constructors and destructors (`.init_array`, which the bundled clang's linker
    runs: not `.ctors`), once though the derivatives copy the file's code."""
    (tmp_path / "ctor.c").write_text(r"""#include <stdio.h>
double __enzyme_autodiff(void *, ...);
static double k;
__attribute__((constructor(200))) static void early(void) { k = 3; puts("early"); }
__attribute__((constructor)) static void init(void) { k += 1; puts("init"); }
__attribute__((destructor)) static void fini(void) { puts("fini"); }
double f(double x) { return k * x * x; }
int main(void) { printf("%g\n", __enzyme_autodiff((void *)f, 2.0)); return 0; }
""")
    adgen_compiler("cc", "-O2", "ctor.c", "-o", "ctor", cwd=tmp_path)
    run = subprocess.run([str(tmp_path / "ctor")], capture_output=True, text=True)
    assert run.stdout == "early\ninit\n16\nfini\n", run.stdout + run.stderr


def _tool(name: str) -> str | None:
    return shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)


@needs_gxx
@pytest.mark.skipif(_tool("cmake") is None or _tool("ninja") is None, reason="no cmake or ninja")
@pytest.mark.slow
def test_cmake_compiles_against_the_projects_cxx_library(tmp_path):
    """adgen_add_derivatives passes CMAKE_CXX_COMPILER (g++ here) on as --cxx: libstdc++."""
    loss, main = _sources(tmp_path / "src")
    (loss.parent / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(cfg CXX)\nfind_package(adgen CONFIG REQUIRED)\n"
        "add_executable(app main.cpp loss.cpp)\nadgen_add_derivatives(TARGET app SOURCES loss.cpp)\n")
    cmake_dir = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "--cmake-dir"], capture_output=True,
                               text=True, check=True).stdout.strip()
    out = tmp_path / "build"
    done = subprocess.run([_tool("cmake"), "-S", str(loss.parent), "-B", str(out), "-G", "Ninja",
                           f"-DCMAKE_MAKE_PROGRAM={_tool('ninja')}", f"-DCMAKE_CXX_COMPILER={shutil.which('g++')}",
                           f"-Dadgen_DIR={cmake_dir}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([_tool("cmake"), "--build", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((out / "adgen" / "loss.adgen.json").read_text())["cxx_library"] == "libstdc++"
    run = subprocess.run([str(out / "app")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
