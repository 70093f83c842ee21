"""The adgen command: help, version, -v, atomic and reproducible outputs, compiler choice,
and errors without tracebacks."""

from __future__ import annotations

import math
import os
import re
import stat
import subprocess
import sys

import pytest

from adgen.base import __version__
from adgen.base.diagnostics import display_path

GOOD = "// @diff(f_grad: (active) -> active)\ndouble f(double x) { return x * x; }\n"
BAD = "// @diff(f_grad: (actve) -> active)\ndouble f(double x) { return x * x; }\n"


def test_version(adgen):
    with pytest.raises(SystemExit) as exit_:
        adgen("--version")
    assert exit_.value.code == 0


def test_version_text():
    out = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "--version"], capture_output=True, text=True)
    assert out.stdout.strip() == f"adgen {__version__}"


def test_help_explains_with_examples(capsys):
    from adgen.commands.cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "@diff(rosen_grad: (const, const, active, active) -> active)" in text
    assert "examples:" in text and "adgen generate rosen.c -o build" in text and "ADGEN_CC" in text
    for command in ("generate", "build"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        sub = capsys.readouterr().out
        assert "-I DIR" in sub and "--cc PATH" in sub and "example:" in sub


def test_verbose_prints_each_stage(adgen, c_file):
    src = c_file(GOOD)
    result = adgen("-v", "generate", src, "-o", src.parent / "out")
    assert result.status == 0
    for stage in ("toolchain", "parse", "read", "check", "render", "write"):
        assert f"adgen: {stage}" in result.err and " ms" in result.err
    assert "(1 derivative function)" in result.err


def test_quiet_prints_nothing(adgen, c_file):
    src = c_file(GOOD)
    result = adgen("generate", "-q", src, "-o", src.parent / "out")
    assert (result.status, result.out, result.err) == (0, "", "")


def test_outputs_are_reproducible_and_leave_no_temporaries(adgen, c_file, tmp_path):
    src = c_file(GOOD)
    contents = []
    names = ["src.adgen.c", "src.adgen.h", "src.adgen.json"]
    for out in (tmp_path / "a", tmp_path / "a", tmp_path / "b"):
        assert adgen("generate", "-q", src, "-o", out).status == 0
        contents.append([(out / n).read_bytes() for n in names])
    assert contents[0] == contents[1] == contents[2]
    assert sorted(os.listdir(tmp_path / "a")) == names
    mode = stat.S_IMODE(os.stat(tmp_path / "a" / "src.adgen.h").st_mode)
    assert mode & 0o444 == 0o444


def test_error_leaves_previous_outputs_untouched(adgen, c_file, tmp_path):
    src = c_file(GOOD)
    out = tmp_path / "out"
    assert adgen("generate", "-q", src, "-o", out).status == 0
    before = (out / "src.adgen.h").read_bytes()
    src.write_text(BAD)
    result = adgen("generate", src, "-o", out)
    assert result.status == 1
    assert (out / "src.adgen.h").read_bytes() == before
    assert sorted(os.listdir(out)) == ["src.adgen.c", "src.adgen.h", "src.adgen.json"]


def test_one_bad_source_writes_nothing_for_any(adgen, c_file, tmp_path):
    good, bad = c_file(GOOD, "good.c"), c_file(BAD.replace("f_grad", "g_grad"), "bad.c")
    result = adgen("generate", good, bad, "-o", tmp_path / "out")
    assert result.status == 1
    assert "bad.c:1:19: error: unknown activity 'actve'" in result.err
    assert result.err.rstrip().endswith("1 error generated.")
    assert not (tmp_path / "out").exists()


def test_same_stem_twice(adgen, c_file, tmp_path):
    a, b = c_file(GOOD, "x/src.c"), c_file(GOOD, "y/src.c")
    result = adgen("generate", a, b, "-o", tmp_path / "out")
    assert result.status == 1
    assert "would both write src.adgen.h" in result.err


def test_missing_source(adgen, tmp_path):
    result = adgen("generate", tmp_path / "nope.c", "-o", tmp_path / "out")
    assert result.status == 1
    assert result.err.startswith(f"adgen: error: no such file: {tmp_path / 'nope.c'}")


def test_flags_after_double_dash_reach_the_prototypes(adgen, c_file):
    src = c_file("// @diff(g: (active) -> activeonly)\nREAL f(REAL x);\n")
    result = adgen("generate", "-q", src, "-o", src.parent / "out", "--", "-DREAL=float")
    assert result.status == 0, result.err
    assert "float g(float x, float d_ret);" in (src.parent / "out" / "src.adgen.h").read_text()


def fake_clang(tmp_path, version_line: str):
    script = tmp_path / "fake-clang"
    script.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    script.chmod(0o755)
    return script


def test_newer_clang_is_refused(adgen, c_file, tmp_path):
    src = c_file(GOOD)
    cc = fake_clang(tmp_path, "clang version 99.0.1 (https://example.invalid)")
    result = adgen("generate", src, "-o", tmp_path / "out", "--cc", cc)
    assert result.status == 1
    assert "clang 99.0.1 (from --cc) uses LLVM 99, newer than the LLVM 22 in llvmlite: llvmlite cannot read its bitcode" in result.err
    assert not (tmp_path / "out").exists()


def test_adgen_cc_environment(adgen, c_file, tmp_path, monkeypatch):
    src = c_file(GOOD)
    monkeypatch.setenv("ADGEN_CC", str(fake_clang(tmp_path, "clang version 30.1.0")))
    result = adgen("generate", src, "-o", tmp_path / "out")
    assert result.status == 1 and "(from ADGEN_CC) uses LLVM 30" in result.err


def test_not_a_clang(adgen, c_file, tmp_path):
    src = c_file(GOOD)
    result = adgen("generate", src, "-o", tmp_path / "out", "--cc", fake_clang(tmp_path, "gcc (Debian) 12.2.0"))
    assert result.status == 1 and "is not a clang" in result.err
    result = adgen("generate", src, "-o", tmp_path / "out", "--cc", tmp_path / "missing-cc")
    assert result.status == 1 and "cannot run the C compiler" in result.err


def exported_symbols(path) -> tuple[set[str], set[str]]:
    """(defined global symbols, undefined symbols) of an ELF object."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        symbols = list(ELFFile(f).get_section_by_name(".symtab").iter_symbols())
    defined = {s.name for s in symbols if s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"}
    undefined = {s.name for s in symbols if s["st_shndx"] == "SHN_UNDEF" and s.name}
    return defined, undefined


def test_build_exports_only_the_derived_functions(adgen, c_file, tmp_path):
    src = c_file("#include <math.h>\n"
                 "static double helper(double x) { return sin(x) * x; }\n"
                 "double other(double x) { return helper(x) + 1; }\n" + GOOD.replace("active", "dual")
                 .replace("f_grad", "f_tan").replace("x * x", "other(x) * x"))
    out = tmp_path / "out"
    result = adgen("build", src, "-o", out, "--emit-llvm")
    assert result.status == 0, result.err
    assert sorted(os.listdir(out)) == ["src.adgen.c", "src.adgen.h", "src.adgen.json", "src.adgen.ll", "src.adgen.o"]
    defined, undefined = exported_symbols(out / "src.adgen.o")
    assert defined == {"f_tan"}
    assert undefined <= {"sin", "cos", "sincos"}
    assert "f_tan" in result.err  # says what it wrote


def test_build_verbose_shows_stages_and_instruction_counts(adgen, c_file, tmp_path):
    src = c_file(GOOD.replace("active", "dual"))
    result = adgen("-v", "build", src, "-o", tmp_path / "out")
    assert result.status == 0, result.err
    for stage in ("toolchain", "lower", "link", "optimize", "analyze", "differentiate", "compile", "total"):
        assert f"adgen: {stage}" in result.err
    assert re.search(r"adgen: compile .*src\.adgen\.o from \d+ instructions, in one part", result.err), result.err
    kept = adgen("-v", "build", "--emit-llvm", src, "-o", tmp_path / "kept")  # the optimized module kept
    assert "instructions before" in kept.err and "after" in kept.err and "adgen: emit" in kept.err


def test_build_writes_the_same_object_every_time(adgen, c_file, tmp_path):
    """Identical inputs, byte-identical outputs (specs/abi.md): no temporary folder's name in the
    object's debug information."""
    src = c_file(GOOD)
    for out in ("one", "two"):
        assert adgen("build", src, "-o", tmp_path / out).status == 0
    for name in ("src.adgen.o", "src.adgen.h", "src.adgen.c"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def test_build_reports_annotation_errors_first(adgen, c_file, tmp_path):
    result = adgen("build", c_file(BAD), "-o", tmp_path / "out")
    assert result.status == 1 and "unknown activity 'actve'" in result.err


def test_console_script_errors_without_traceback(c_file, tmp_path):
    src = c_file(BAD)
    exe = os.path.join(os.path.dirname(sys.executable), "adgen")
    out = subprocess.run([exe, "generate", str(src), "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.splitlines()[0].endswith("src.c:1:19: error: unknown activity 'actve'; expected one of "
                                               "const, active, activeonly, dup, duponly, dupv, dual, dualonly, dualv")
    assert "Traceback" not in out.stderr


def test_internal_error_is_one_line(adgen, c_file, monkeypatch):
    import adgen.frontend.generate as generate

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(generate, "render", broken)
    monkeypatch.delenv("ADGEN_TRACEBACK", raising=False)
    src = c_file(GOOD)
    result = adgen("generate", src, "-o", src.parent / "out")
    assert result.status == 70
    assert result.err.strip() == ("adgen: internal error: RuntimeError: boom (set ADGEN_TRACEBACK=1 for the trace, "
                                  "and please report it)")


def test_build_links_several_sources_before_differentiating(adgen, c_file, tmp_path):
    import ctypes

    from conftest import compile_c

    helper = c_file("#include <math.h>\ndouble wave(double x) { return sin(3.0 * x); }\n", "helper.c")
    main = c_file("double wave(double x);\n// @diff(total_grad: (active) -> activeonly)\n"
                  "double total(double x) { return wave(x) * x; }\n", "main.c")
    out = tmp_path / "out"
    result = adgen("build", "-q", main, helper, "-o", out)
    assert result.status == 0, result.err
    assert (out / "helper.adgen.o").exists()  # one object per source, this one without derivatives
    compile_c("-shared", "-fPIC", main, helper, out / "main.adgen.o", "-o", tmp_path / "lib.so", "-lm")
    grad = ctypes.CDLL(str(tmp_path / "lib.so")).total_grad
    grad.restype, grad.argtypes = ctypes.c_double, [ctypes.c_double, ctypes.c_double]
    x = 0.4
    assert grad(x, 1.0) == pytest.approx(3 * x * math.cos(3 * x) + math.sin(3 * x))


def test_build_needs_the_definition(adgen, c_file, tmp_path):
    src = c_file("// @diff(g: (active) -> activeonly)\ndouble f(double x);\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    assert "src.c:1:10: error: 'f' is declared but not defined in the sources given to adgen build" in result.err
    assert not (tmp_path / "out" / "src.adgen.o").exists()


def test_build_refuses_mixed_layouts_with_a_struct_by_value(adgen, c_file, tmp_path):
    src = c_file("typedef struct { double a, b; } pair;\n// @diff(g: reverse[2] (active, dupv) -> active)\n"
                 "double f(pair s, double *x) { return s.a * x[0]; }\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    assert "src.c:2:33: error: 'g' mixes interleaved and separate pointer shadows: 'x' is 'dupv', 's' is " \
           "'active'" in result.err
    assert not (tmp_path / "out").exists()


def test_check_and_load_take_c_sources_only(adgen, tmp_path):
    """A Rust source's derivatives are called from Rust (tests/test_rust.py): adgen check and
    adgen.load say so rather than compile it as C."""
    import adgen as package

    src = tmp_path / "m.rs"
    src.write_text("// @diff(f_grad: (active) -> active)\npub fn f(x: f64) -> f64 { x * x }\n")
    result = adgen("check", src)
    assert result.status == 1 and "adgen check takes C sources" in result.err
    with pytest.raises(ValueError, match="adgen.load and adgen check take C sources"):
        package.load(src)


@pytest.mark.parametrize("command", ["build", "generate", "check"])
def test_an_objective_c_or_cuda_source_is_refused_as_such(adgen, c_file, tmp_path, command):
    """Objective-C and CUDA (by the names clang gives them) are not read as C: each such file is
    named, with the C sources beside it written by none."""
    objc = "#import <Foundation/Foundation.h>\n// @diff(sum_grad: (dup) -> active)\ndouble sum(const double *v);\n"
    sources = [c_file(GOOD, "good.c"), c_file(objc, "model.m"), c_file(objc, "Model.mm"), c_file(objc, "k.cu")]
    result = adgen(command, *sources, *(["-o", tmp_path / "out"] if command != "check" else []))
    assert result.status == 1, result.err
    errors = [line for line in result.err.splitlines() if "error" in line]
    languages = ["Objective-C", "Objective-C++", "CUDA"]
    assert errors == [f"adgen: error: {display_path(p)}: {lang} sources are not supported yet: adgen reads C, C++ and "
                      "Rust sources (.c, .cpp, .rs)" for p, lang in zip(sources[1:], languages)] + \
        ["3 errors generated."], result.err
    assert not (tmp_path / "out").exists()


def test_adgen_load_refuses_a_cuda_source(tmp_path):
    import adgen as package

    src = tmp_path / "model.cu"
    src.write_text("// @diff(f_grad: (active) -> active)\ndouble f(double x) { return x * x; }\n")
    with pytest.raises(package.BuildError, match="model.cu: CUDA sources are not supported yet"):
        package.load(src, build_dir=tmp_path / "build")
    assert not (tmp_path / "build").exists() or not any((tmp_path / "build").iterdir())


def test_sources_are_lowered_for_the_baseline_cpu_unless_march_says(tmp_path):
    """Code that depends on the CPU's features is differentiated as the user's compiler sees it
    by default, for the target's baseline CPU (zig's clang would take this machine's), and as
    --march names (base/toolchain.py, BASELINE)."""
    import adgen

    src = tmp_path / "cpu.c"
    src.write_text("// @diff(f_grad: (active) -> active)\n"
                   "double f(double x) {\n#ifdef __SSE4_2__\n  return 2 * x;\n#else\n  return 3 * x;\n#endif\n}\n")
    lib = adgen.load(src, build_dir=tmp_path / "build")
    assert lib.f_grad(1.0, 1.0).d_x == 3.0
