"""`adgen cc` and `adgen c++`: a C and a C++ compiler for code written for Enzyme's API. They take
what a C or C++ compiler takes (`CC="adgen cc" CXX="adgen c++"` for Make, a CMake compiler
wrapper), compile each C or C++ file that calls Enzyme's entry points through adgen
(commands/cc/pipeline.py) and every other input with clang as it is, then link with the same
clang (its C++ driver for `adgen c++`) unless -c, -S or -E says not to."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from adgen.base.diagnostics import AdgenError, error
from adgen.base.timing import Stages
from adgen.commands.outputs import write_all
from adgen.base.cxx_library import CxxLibrary, choose, without_stdlib
from adgen.base.zig_runtimes import STOPS, WITH_VALUE, run_link
from adgen.base.toolchain import (USERS_NDEBUG, Compiler, cxx_command, cxx_library_flags, cxx_link_flags,
                                  enzyme_include_flags, openmp_include_flags, openmp_link_flags, select_compiler,
                                  system_flags, zig_spelling)
from adgen.frontend.languages import Language, language

HELP = """\
usage: adgen cc [C compiler flags] FILE.c ... [-c] [-o OUT]
       adgen c++ [C++ compiler flags] FILE.cpp ... [-c] [-o OUT]

A C (C++) compiler for code written for Enzyme's API (`__enzyme_autodiff((void *)f, enzyme_dup, x,
dx, enzyme_const, n)`, `__enzyme_fwddiff`, `__enzyme_augmentfwd`, `__enzyme_reverse`...): each
call to an entry point is replaced by a call to the derivative adgen generates, so such code
builds with `pip install adgen` alone, no LLVM plugin. It takes a C compiler's flags (-I -D -O
-g -std -c -S -emit-llvm -o -MD -MF -fPIC -W... and link flags), compiles the C files that call
Enzyme's API through adgen and everything else with clang as it is, and links with the same clang:

    adgen cc -O2 prog.c -o prog -lm
    adgen c++ -std=c++17 -O2 prog.cpp -o prog
    make CC="adgen cc" CXX="adgen c++"
    CC="adgen cc" cmake ..     (or -DCMAKE_C_COMPILER_LAUNCHER="adgen;cc": the compiler
                                CMake names is then replaced by adgen's clang)

Derivatives are always computed from optimized code, whatever -O the file is built with.
The mapping from Enzyme's API to adgen's activities is in specs/enzyme.md of the source tree;
what adgen does not implement is an error at the call, naming the argument. C++ files (.cpp,
.cc, .cxx, .C, .c++: by their names) may also use the sugar of Enzyme's header
<enzyme/enzyme> (enzyme::autodiff<enzyme::Reverse>(f, enzyme::Duplicated<double *>(x, dx))):
adgen ships its own header of that name and API (specs/cxx.md). `adgen c++` compiles and links
against the C++ library of this machine's C++ compiler (CXX, else c++ on the PATH), as clang++
does: libstdc++ where that is g++ or a Linux clang++; -stdlib=libc++ for the bundled libc++.

adgen's own options (all others go to the C compiler):
  --adgen-verbose   print each stage's time
  --adgen-explain   print the cache plan of each reverse-mode derivative
  --adgen-help      this text (also: adgen cc with no arguments)

environment:
  ADGEN_CC   the clang to use instead of the one bundled with adgen
  CXX        the C++ compiler whose C++ library C++ files are compiled against"""

# Flags that only concern the link (the compile of a file does not get them).
_LINK_ONLY = ("-l", "-L", "-Wl,", "-Xlinker", "-shared", "-static", "-rdynamic", "-nostdlib", "-nostartfiles",
              "-nodefaultlibs", "-pie", "-no-pie", "-s", "-T", "-u", "-z", "-fuse-ld=", "-rpath", "-e")
# What the lowering for differentiation takes of the user's flags: the preprocessor's, the
# language's (C++ exceptions on or off), the target's. Optimization, debug information, warnings, dependency files,
# instrumentation and the value-changing floating-point flags (-ffast-math and its parts) are
# the object's business only: derivatives are computed from the file as C evaluates it, so
# their rounding does not depend on the order fast-math lets LLVM sum in.
_PREPROCESS = ("-I", "-D", "-U", "-include", "-imacros", "-isystem", "-iquote", "-idirafter", "-isysroot", "-iprefix",
               "-iwithprefix", "--sysroot", "-std=", "-ansi", "-target", "--target=", "-march=", "-mcpu=", "-mtune=",
               "-m32", "-m64", "-pthread", "-funsigned-char", "-fsigned-char", "-fgnu89-inline", "-fms-extensions",
               "-fcommon", "-fno-common", "-fwrapv", "-fno-strict-aliasing", "-fstrict-aliasing", "-fno-builtin",
               "-fbuiltin", "-ffreestanding", "-w", "-fopenmp", "-stdlib=", "-nostdinc", "-fno-exceptions",
               "-fexceptions", "-fno-cxx-exceptions", "-fcxx-exceptions")  # (the library's try and catch as built)
_HEADERS = {".h", ".hh", ".hpp", ".hxx", ".h++", ".H", ".tcc", ".ipp", ".inl"}  # (a precompiled header's input)


@dataclass
class CommandLine:
    """A C compiler's command line, taken apart."""

    argv: list[str]
    sources: list[tuple[int, Path]] = field(default_factory=list)  # (position in argv, path) of each C file
    output: str | None = None
    compile_only: bool = False  # -c
    assemble_only: bool = False  # -S
    emit_llvm: bool = False  # -emit-llvm: LLVM's IR (-S) or bitcode (-c) instead of assembly or an object
    stops_early: bool = False  # -E, -M, -fsyntax-only...: no object at all
    adgen: list[str] = field(default_factory=list)  # --adgen-* options
    compile_flags: list[str] = field(default_factory=list)  # what each file's compile gets
    lowering_flags: list[str] = field(default_factory=list)  # what the lowering for differentiation gets


def parse(argv: list[str]) -> CommandLine:
    if argv and _is_compiler(argv[0]):  # as a launcher (CMAKE_C_COMPILER_LAUNCHER): `adgen cc /usr/bin/cc -c ...`
        argv = argv[1:]
    line = CommandLine([a for a in argv if not a.startswith("--adgen-")], adgen=[a for a in argv
                                                                                   if a.startswith("--adgen-")])
    args, language, i = line.argv, None, 0
    while i < len(args):
        a = args[i]
        value = args[i + 1] if a in WITH_VALUE and i + 1 < len(args) else None
        width = 2 if value is not None else 1
        if a == "-o":
            line.output = value
        elif a == "-x":
            language = value
        elif a == "-c":
            line.compile_only = True
        elif a == "-S":
            line.assemble_only = True
        elif a == "-emit-llvm":
            line.emit_llvm = True
            line.compile_flags.append(a)
        elif a in STOPS:
            line.stops_early = True
        elif not a.startswith("-") or a == "-":
            if _source_language(a, language):
                line.sources.append((i, Path(a)))
        else:
            taken = args[i:i + width]
            if not a.startswith(_LINK_ONLY) or a.startswith(("-std", "-static-libgcc")):
                line.compile_flags += taken
            if a.startswith(_PREPROCESS) and not a.startswith(("-iframework",)):
                line.lowering_flags += taken
        i += width
    return line


def _source_language(arg: str, forced: str | None) -> Language | None:
    """The language of an input adgen compiles itself (C or C++ by its extension, as clang
    decides), None for any other input (objects, assembly, a file -x gives another language)."""
    found = language(Path(arg))
    if Path(arg).suffix in _HEADERS:
        return None
    if found is Language.C and arg.endswith(".c") and forced in ("c++", "c++-header"):
        raise AdgenError(error(f"{arg}: `-x c++` on a C file is not supported yet: adgen tells C++ by the file's "
                               "extension (name it .cpp)"))
    if found is Language.C and arg.endswith(".c") and forced in (None, "c"):
        return found
    return found if found is Language.CXX and forced in (None, "c++") else None


def _suffix(line: CommandLine) -> str:
    """The output's suffix where -o does not name it, as clang names it."""
    if line.emit_llvm:
        return ".ll" if line.assemble_only else ".bc"
    return ".s" if line.assemble_only else ".o"


def _is_compiler(arg: str) -> bool:
    """Whether an argument names a compiler to run (a build system's, before its flags) rather
    than a flag or an input."""
    if arg.startswith("-") or Path(arg).suffix in (".c", ".i", ".o", ".a", ".so", ".s", ".S") or \
            _source_language(arg, None):
        return False
    found = shutil.which(arg)
    return found is not None and os.access(found, os.X_OK) and not Path(arg).is_dir()


def main(argv: list[str], cxx: bool = False) -> int:
    """`cxx`: as `adgen c++`, linking with the C++ driver (its C++ library)."""
    if not argv or "--adgen-help" in argv:
        print(HELP)
        return 0
    line = parse(argv)
    stages = Stages(verbose="--adgen-verbose" in line.adgen, progress=False)
    compiler = select_compiler(None)
    headers = openmp_include_flags(compiler, line.compile_flags)
    first = enzyme_include_flags() if any(language(s) is Language.CXX for _, s in line.sources) else []
    line.compile_flags = [*first, *line.compile_flags, *headers]  # adgen's <enzyme/enzyme> before the program's
    line.lowering_flags = [*first, *line.lowering_flags, *headers]
    driver = cxx_command(compiler) if cxx else compiler.command
    cxx_sources = any(language(s) is Language.CXX for _, s in line.sources)
    library = choose(line.compile_flags) if cxx or cxx_sources else None  # (the program's: cxx_library.py)
    if line.stops_early or not line.sources:
        if library is None:
            return _clang(driver, line.argv)
        if line.stops_early:  # (-E, -fsyntax-only...: as its compile)
            return _clang(driver, [*without_stdlib(line.argv), *cxx_library_flags(compiler, library, line.argv)])
        return _clang(driver, [*_link_arguments(line.argv, library), *cxx_link_flags(compiler, library)])
    if (line.compile_only or line.assemble_only) and line.output and len(line.sources) > 1:
        raise AdgenError(error("cannot specify -o when generating multiple output files"))
    missing = [error(f"no such file or directory: '{s}'") for _, s in line.sources if str(s) != "-" and not s.is_file()]
    if missing:  # (as clang says it, before any source is compiled)
        raise AdgenError(missing)
    # (said before any compile, as adgen build says it; else the linker says it, last)
    if line.output and Path(line.output).is_dir() and not Path(line.output).is_symlink():
        raise AdgenError(error(f"cannot write {line.output}: it is a directory"))
    implicit = [] if any(f.startswith("-fsanitize") for f in line.compile_flags) else ["-fno-sanitize=all"]
    with tempfile.TemporaryDirectory(prefix="adgen-cc-") as tmp:
        argv = list(line.argv)
        for n, (at, source) in enumerate(line.sources):
            if line.compile_only or line.assemble_only:
                out = Path(line.output) if line.output else Path(source.stem + _suffix(line))
            else:
                out = Path(tmp) / f"{n}-{source.stem}.o"
                argv[at] = str(out)
            status = _compile(compiler, line, source, out, implicit, stages, library)
            if status:
                return status
        if line.compile_only or line.assemble_only:
            return 0
        flags = [a for i, a in enumerate(argv) if not (a in ("-o", "-x") or (i and argv[i - 1] in ("-o", "-x")))]
        flags += openmp_link_flags(compiler, flags)
        if cxx:  # (its C++ library, as a clang++ of this machine links: cxx_library.py)
            flags = [*_link_arguments(flags, library), *cxx_link_flags(compiler, library)]
        return _clang(driver, [*flags, "-Wno-unused-command-line-argument", "-o", line.output or "a.out"])


def _link_arguments(argv: list[str], library: CxxLibrary) -> list[str]:
    """A link's arguments, less `-stdlib=`, and less `-lstdc++` where the library is libstdc++
    (to `zig c++`, `-lstdc++` names its own libc++; cxx_link_flags names libstdc++ by path)."""
    return [a for a in without_stdlib(argv) if library.bundled or a != "-lstdc++"]


def _compile(compiler: Compiler, line: CommandLine, source: Path, out: Path, implicit: list[str],
             stages: Stages, library: CxxLibrary | None = None) -> int:
    """One C file to `out`: through adgen if it calls Enzyme's API, else by clang as it is; a C++
    file against the program's C++ library (`library`)."""
    flags = [*line.compile_flags, *implicit]
    driver = cxx_command(compiler) if language(source) is Language.CXX else compiler.command
    headers = []  # (C++: the library's headers, after the user's flags)
    if language(source) is Language.CXX:
        headers = cxx_library_flags(compiler, library or choose(flags), flags)
        flags = [*without_stdlib(flags), *headers]
    mentions = _mentions_enzyme(driver, source, [*without_stdlib(line.lowering_flags), *headers])
    if mentions:
        from adgen.commands.cc.pipeline import compile_unit

        user, deps = _without_dependencies(flags)
        if mentions == "attributes":  # Enzyme's plugin's attributes, which clang does not know but adgen reads
            user.append("-Wno-unknown-attributes")
        read = [*system_flags(compiler), *line.lowering_flags]
        obj, plans = compile_unit(source, line.lowering_flags, [*USERS_NDEBUG, *user], compiler, stages, read,
                                  explain="--adgen-explain" in line.adgen, assembly=line.assemble_only,
                                  emit_llvm=line.emit_llvm)
        if plans:
            print(plans, end="", flush=True)
        if obj is not None and str(out) == "-":  # (-o -: standard output, as clang writes it)
            sys.stdout.flush()
            sys.stdout.buffer.write(obj)
            sys.stdout.buffer.flush()
            return 0
        if obj is not None:
            write_all({out: obj}, make_dirs=False)  # a link at `out` replaced, as clang's -o does
            return _write_dependencies(driver, user, deps, source, out)
    return _clang(driver, [*flags, "-c", str(source), "-o", str(out)] if not line.assemble_only else
                  [*flags, "-S", str(source), "-o", str(out)])


def _mentions_enzyme(driver: tuple[str, ...], source: Path, flags: list[str]) -> str:
    """Whether the preprocessed file names anything of Enzyme's API (cheap: no compile): "" if
    not, "attributes" if it uses the attributes of Enzyme's plugin too, else "calls"."""
    done = subprocess.run(zig_spelling([*driver, "-E", "-P", *USERS_NDEBUG, *flags, str(source)]), capture_output=True,
                          text=True, errors="replace")  # a C file's bytes need not be UTF-8 (a Latin-1 comment)
    if done.returncode == 0 and "enzyme_" not in done.stdout:
        return ""
    return "attributes" if re.search(r"__attribute__\s*\(\(\s*enzyme_", done.stdout) else "calls"


_DEPENDENCY_FLAGS = {"-MD", "-MMD", "-MP", "-MG"}
_DEPENDENCY_VALUES = {"-MF", "-MT", "-MQ"}


def _without_dependencies(flags: list[str]) -> tuple[list[str], list[str]]:
    """The flags without those asking for a dependency file, and those (clang writes none
    along with bitcode through zig's clang: adgen asks for it apart, see `_write_dependencies`)."""
    kept, deps, i = [], [], 0
    while i < len(flags):
        f = flags[i]
        if f in _DEPENDENCY_FLAGS:
            deps.append(f)
        elif f in _DEPENDENCY_VALUES and i + 1 < len(flags):
            deps += flags[i:i + 2]
            i += 1
        else:
            kept.append(f)
        i += 1
    return kept, deps


def _write_dependencies(driver: tuple[str, ...], flags: list[str], deps: list[str], source: Path, out: Path) -> int:
    """The dependency file -MD/-MMD ask for, naming the object adgen wrote."""
    if not {"-MD", "-MMD"} & set(deps):
        return 0
    args = [*flags, "-MM" if "-MMD" in deps else "-M", str(source)]
    if "-MF" not in deps:
        args += ["-MF", str(out.with_suffix(".d"))]
    if "-MT" not in deps and "-MQ" not in deps:
        args += ["-MT", str(out)]
    return _clang(driver, args + [d for d in deps if d not in ("-MD", "-MMD")])


def _clang(driver: tuple[str, ...], args: list[str]) -> int:
    """The compiler run as gcc or clang would be: NDEBUG only from the user's flags. A link that
    is the first to build a runtime zig caches says so first (zig_runtimes.py)."""
    return run_link([*driver, *USERS_NDEBUG, *args]).returncode


__all__ = ["main", "parse", "CommandLine", "HELP"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
