"""The `adgen` command. Errors are printed as located diagnostics and exit with status 1;
no Python traceback reaches the user."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import shlex
import sys
from functools import partial
from pathlib import Path

from adgen.base import __version__
from adgen.base.diagnostics import AdgenError
from adgen.commands import stopping
from adgen.commands.outputs import depfile_rule, write_all
from adgen.commands.report import diagnostics_text, internal_error_text
from adgen.base.timing import Stages, plural
from adgen.base.zig_cache import remove_scratch_cache
from adgen.base.cxx_library import NAMES, compiler_named
from adgen.base.mpi_wrapper import mpi_include_flags
from adgen.base.toolchain import openmp_include_flags, select_compiler, system_flags

DESCRIPTION = """\
adgen: automatic differentiation for C (and C++ and Rust), driven by @diff annotations.

Annotate a function in a comment directly above it:

    // @diff(rosen_grad: (const, const, active, active) -> active)
    double rosen(double a, double b, double x, double y);

then `adgen generate` writes rosen.adgen.h (the derivative functions' declarations) and
rosen.adgen.c (the stubs `adgen build` fills), and `adgen build` also writes rosen.adgen.o.
The documentation (docs/ of the source tree: tutorials, how-to guides, every error message with
its fix) and the specification (specs/) say more."""

EXAMPLES = """\
examples:
  adgen generate rosen.c -o build            # build/rosen.adgen.h, build/rosen.adgen.c
  adgen cc -O2 prog.c -o prog -lm            # code written for Enzyme's C API (see adgen cc)
  adgen c++ -O2 prog.cpp -o prog             # ... and C++ code written for Enzyme (adgen c++ --adgen-help)
  adgen build model.rs -o build              # Rust: build/model.adgen.rs (wrappers) and model.adgen.o
  adgen generate src/*.c -I include -D N=64  # several sources, with the flags they need
  adgen build rosen.c -o build -- -O3        # flags after -- go to the C compiler
  adgen -v generate rosen.c                  # print each stage's time

environment:
  ADGEN_CC         the clang to use instead of the one bundled with adgen (--cc wins)
  ADGEN_RUSTC      the rustc for Rust sources (else RUSTC, else rustc on the PATH)
  ADGEN_RUSTFLAGS  more flags for that rustc (--edition=2024, say)
  CXX              C++: the program's compiler, whose C++ library adgen compiles against (--cxx wins)"""


def _options(check: bool) -> argparse.ArgumentParser:
    """The options of generate, build and check. Those of building only (outputs, their target)
    are refused by check, which has no use for them, rather than ignored."""
    common = argparse.ArgumentParser(add_help=False)
    building = partial(_refusable, common, check)
    common.add_argument("sources", metavar="SRC.c", nargs="+", type=Path,
                        help="annotated C sources (or C++ sources, SRC.cpp, read as C++; or Rust sources, SRC.rs: "
                             "they get SRC.adgen.rs wrappers)")
    building("-o", dest="out_dir", metavar="DIR", type=Path, default=Path("."),
             help="where to write outputs (default: the current directory)", why=_WRITES_NO_FILES, generate=True)
    common.add_argument("-I", dest="includes", metavar="DIR", action="append", default=[],
                        help="add a directory to the header search path, as for the C compiler")
    common.add_argument("-D", dest="defines", metavar="NAME[=VAL]", action="append", default=[],
                        help="define a preprocessor macro, as for the C compiler")
    common.add_argument("--cc", metavar="PATH",
                        help="the clang to use (default: ADGEN_CC, else the clang of the ziglang wheel); "
                             "its LLVM must not be newer than llvmlite's")
    common.add_argument("--cxx", metavar="COMPILER",
                        help="C++: the compiler the program is built with, whose C++ library (libstdc++ or "
                             "libc++) the derivatives are compiled against (default: CXX, else c++ on the PATH)")
    common.add_argument("--cxx-library", choices=NAMES, metavar="{libstdc++,libc++}",
                        help="C++: compile against this C++ library, whatever the compiler uses (as -stdlib= "
                             "after --)")
    common.add_argument("-v", "--verbose", action="store_true", help="print each stage's time")
    building("--target", metavar="TRIPLE", help="build: the target triple (default: this machine's)",
             why=_RUNS_HERE)
    building("--march", metavar="CPU",
             help="build: the CPU to optimize for, passed to clang and LLVM (`native` for this "
                  "machine's; default: the generic CPU of the target)", why=_RUNS_HERE)
    building("--emit-llvm", action="store_true",
             help="build: also write the differentiated module as DIR/<stem>.adgen.ll", why=_WRITES_NO_FILES)
    building("--explain", action="store_true",
             help="build: print the cache plan of each reverse-mode derivative: what the forward sweep "
                  "stores for the reverse sweep, where, why, and how many bytes per call or iteration",
             why="prints its table only")
    common.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    building("--depfile", type=Path, metavar="FILE",
             help="also write the headers each source includes as a Makefile rule (for build systems)",
             why=_WRITES_NO_FILES, generate=True)
    return common


_WRITES_NO_FILES = "writes no files (it builds in a temporary directory)"
_RUNS_HERE = "runs the derivatives on this machine"


def _refusable(parser: argparse.ArgumentParser, refuse: bool, *names: str, why: str, generate: bool = False,
               **kwargs) -> None:
    """An option of build (and of generate), or where `refuse` (adgen check), one that is a usage
    error: `why` says what check does instead."""
    if not refuse:
        parser.add_argument(*names, **kwargs)
        return
    why = f"it is for adgen build{' and adgen generate' if generate else ''}; adgen check {why}"
    parser.add_argument(*names, action=_Refused, why=why, nargs=0 if kwargs.get("action") == "store_true" else None,
                        help=argparse.SUPPRESS)


class _Refused(argparse.Action):
    def __init__(self, *args, why: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.why = why

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"argument {option_string}: {self.why}")


def _parser() -> argparse.ArgumentParser:
    common, checking = _options(check=False), _options(check=True)

    parser = argparse.ArgumentParser(prog="adgen", description=DESCRIPTION, epilog=EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter, fromfile_prefix_chars="@")
    parser.add_argument("--version", action="version", version=f"adgen {__version__}")
    parser.add_argument("--cmake-dir", action=_CMakeDir, nargs=0,
                        help="print the directory of adgen's CMake package (for -Dadgen_DIR=...) and exit")
    parser.add_argument("--rust-crate-dir", action=_RustCrateDir, nargs=0,
                        help="print the directory of adgen's Rust crate of attributes (`#[adgen::diff(...)]`: a "
                             "path dependency, or a proc-macro crate for rustc's --extern adgen=...) and exit")
    parser.add_argument("--openmp-library", action=_OpenMPLibrary, nargs=0,
                        help="print the OpenMP runtime (libomp) that objects built with -fopenmp need, "
                             "nothing where this machine has none, and exit")
    parser.add_argument("-v", "--verbose", action="store_true", dest="verbose_global",
                        help="print each stage's time")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    sub.add_parser("cc", help="a C compiler for code written for Enzyme's API (adgen cc --adgen-help)",
                   add_help=False)
    sub.add_parser("c++", help="a C++ compiler for code written for Enzyme's API and its <enzyme/enzyme> header",
                   add_help=False)
    sub.add_parser("generate", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
                   help="check annotations; write <stem>.adgen.h and <stem>.adgen.c",
                   description="Check the @diff annotations of each SRC.c against its prototypes and "
                               "write DIR/<stem>.adgen.h and DIR/<stem>.adgen.c.",
                   epilog="example:\n  adgen generate rosen.c -o build")
    build = sub.add_parser("build", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
                           help="generate, then write <stem>.adgen.o with the derivative functions",
                           description="Generate, then lower the sources with clang, differentiate and write "
                                       "DIR/<stem>.adgen.o. Arguments after -- go to the C compiler.",
                           epilog="example:\n  adgen build rosen.c -o build -- -DNDEBUG")
    build.add_argument("-j", "--jobs", type=_positive, metavar="N",
                       help="a large derivative module is optimized and compiled in parts, a clang process each: "
                            "run at most N at once (default: one per core; the object is the same either way)")
    check = sub.add_parser("check", parents=[checking], formatter_class=argparse.RawDescriptionHelpFormatter,
                           help="build, then check every derivative against finite differences",
                           description="Build the sources with their derivatives, then check each derived function "
                                       "against central finite differences of its primal on seeded random inputs "
                                       "that respect its activities and width. Prints a table; the exit status is 1 "
                                       "if any derivative does not match.",
                           epilog="examples:\n  adgen check rosen.c\n"
                                  "  adgen check kernel.c --only f_grad --size x=n --size n=16")
    check.add_argument("--only", metavar="NAME", help="check this derived function only")
    check.add_argument("--size", metavar="NAME=VALUE", action="append", default=[],
                       help="the length of pointer parameter NAME (a number, or the name of an integer parameter), "
                            "or the value of integer parameter NAME (default 4)")
    check.add_argument("--seed", type=int, default=0, help="the random inputs' seed (default 0)")
    check.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                       help="give up on a call that has not returned after this long, naming the function and "
                            "its input (default 10)")
    return parser


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a number of jobs, 1 or more, got '{text}'")
    return int(text)


class _CMakeDir(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        print(Path(__file__).resolve().parent.parent / "cmake")
        parser.exit()


class _RustCrateDir(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        print(Path(__file__).resolve().parent.parent / "include" / "rust" / "adgen")
        parser.exit()


class _OpenMPLibrary(argparse.Action):
    """For build systems (cmake/adgenConfig.cmake): the bundled clang writes OpenMP's runtime
    calls for libomp, which it does not ship."""

    def __call__(self, parser, namespace, values, option_string=None):
        from adgen.base.toolchain import openmp_library

        print(openmp_library() or "")
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["cc"], ["c++"]):  # a C or C++ compiler's command line: not adgen's own options
        from adgen.commands.cc.driver import main as cc

        return reporting(lambda: cc(argv[1:], cxx=argv[0] == "c++"))
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(_unrecognized(argv, args.command, unknown, extra))
    stages = Stages(verbose=args.verbose or args.verbose_global,
                    progress=not args.quiet and sys.stderr.isatty() and not os.environ.get("CI"),
                    quiet=getattr(args, "quiet", False))
    status = reporting(lambda: _run(args, extra, stages))
    stages.total()
    return status


def _unrecognized(argv: list[str], command: str, unknown: list[str], extra: list[str]) -> str:
    """argparse's message, and where a compiler's flag is among them (`-O2`), where it goes:
    the command line again, those flags moved after `--`."""
    message = f"unrecognized arguments: {' '.join(unknown)}"
    flags = [a for a in unknown if a.startswith("-") and not a.startswith("--") and a != "-"]
    if not flags:
        return message
    rest = list(argv)
    at = rest.index(command) + 1 if command in rest else 0
    for flag in flags:
        if flag in rest[at:]:  # (not if it came from an @file)
            del rest[rest.index(flag, at)]
    return f"{message} (compiler flags go after `--`: adgen {shlex.join([*rest, '--', *flags, *extra])})"


def print_explained(plans: str) -> None:
    """--explain's output: the cache plans of the reverse-mode derivatives."""
    print(plans or "no reverse-mode derivatives: nothing is stored for a reverse sweep\n", end="", flush=True)


def reporting(run) -> int:
    """Runs a command: its errors printed as located diagnostics (status 1), a bug in adgen as
    one line (status 70), never a traceback; stopped by a signal, 128 and its number; writing to
    a pipe whose reader has gone (`| head -1`), quietly 141, as a C program killed by SIGPIPE."""
    try:
        return run()
    except AdgenError as exc:
        print(diagnostics_text(exc.diagnostics), end="", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        return stopping.status(exc)
    except BrokenPipeError:
        return BROKEN_PIPE
    except Exception as exc:  # a bug in adgen: say so in one line, keep the trace for reports
        if os.environ.get("ADGEN_TRACEBACK"):
            raise
        print(internal_error_text(exc), end="", file=sys.stderr)
        return 70


# What each command imports while the compiler answers the toolchain's questions.
_MODULES = {"build": ("adgen.frontend.generate", "adgen.commands.build.pipeline"),
            "generate": ("adgen.frontend.generate",), "check": ("adgen.commands.check",)}


def _run(args, extra: list[str], stages: Stages) -> int:
    if args.cxx_library:  # (the flags carry it to every compile: base/cxx_library.py)
        extra = [*extra, f"-stdlib={args.cxx_library}"]
    with compiler_named(args.cxx):
        return _command(args, extra, stages)


def _command(args, extra: list[str], stages: Stages) -> int:
    with stages.stage("toolchain", "and adgen's modules, loaded meanwhile"):
        compiler = select_compiler(args.cc, lambda: [importlib.import_module(m) for m in _MODULES[args.command]])
        user = [*(f"-I{d}" for d in args.includes), *(f"-D{d}" for d in args.defines)]
        user += openmp_include_flags(compiler, extra)
        user += mpi_include_flags(args.sources, [*user, *extra])  # (mpi.h, where the wrapper knows it)
        flags = [*system_flags(compiler), *user]  # libclang needs the compiler's header paths spelled out
    if args.command == "check":
        from adgen.commands.check import run

        return run(args.sources, [*user, *extra], args.only, args.size, args.seed, args.quiet, args.timeout)
    from adgen.frontend.generate import generate

    if args.command == "build":
        from adgen.commands.build.pipeline import build

        written, generated, plans = build(args.sources, args.out_dir, flags, user, extra, compiler, stages,
                                          args.target, args.march, args.emit_llvm, jobs=args.jobs,
                                          depfile=args.depfile, explain=args.explain)
        if args.explain:
            print_explained(plans)
        if not args.quiet:
            for paths, names in written:
                print(f"adgen: wrote {', '.join(str(p) for p in paths)} ({', '.join(names) or 'no derivatives'})",
                      file=sys.stderr)
        return 0
    generated = generate(args.sources, args.out_dir, flags + extra, stages)
    files = {path: text for g in generated for path, text in g.files.items()}
    if args.depfile:
        files[args.depfile] = depfile_rule([p for g in generated for p in g.files if p.suffix == ".h"], generated)
    with stages.stage("write"):  # all or none (outputs.py)
        write_all(files)
    if not args.quiet:
        for g in generated:
            names = " and ".join(str(p) for p in g.files)
            print(f"adgen: wrote {names} ({plural(len(g.signatures), 'derivative function')})", file=sys.stderr)
    return 0


BROKEN_PIPE = 128 + 13


def command() -> None:
    """The `adgen` program (`program`)."""
    program(main)


def program(main) -> None:
    """A program of adgen's: `main`, then an exit that skips tearing down the interpreter's
    objects (the modules' IR and LLVM's: 40 ms of every build), as mypy's command does. Streams
    are flushed; files and temporary folders are closed by then. SIGTERM stops it as Ctrl-C
    does, its compilers with it (stopping.py). Python's collector of cycles runs a hundredth as
    often as by default: the AD core makes objects by the hundred thousand, few of them garbage,
    and collecting took 30-80 ms of llm.c's build (the process is short; a Python program
    calling `adgen.load` keeps its own settings)."""
    stopping.install()
    gc.set_threshold(70_000, 10, 10)
    try:
        status = main()
    except SystemExit as exc:  # argparse's: --help, --version, a usage error
        status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except KeyboardInterrupt as exc:  # while the command line was read
        status = stopping.status(exc)
    except BrokenPipeError:
        status = BROKEN_PIPE
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        status = BROKEN_PIPE
    if status == BROKEN_PIPE:  # what is left in the buffer goes nowhere, not into a second error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    try:
        sys.stderr.flush()
    except OSError:
        pass
    stopping.finish()
    remove_scratch_cache()  # (os._exit runs nothing at exit)
    os._exit(status)


if __name__ == "__main__":
    command()
