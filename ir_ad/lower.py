"""Lowers C to LLVM bitcode with the selected clang: each source as written (through a wrapper
that keeps its annotated functions alive and findable) and each stub file.

A Rust source is compiled by rustc as a crate of its own (`lower_rust`).

Lowering runs no optimization (`-O2 -Xclang -disable-llvm-passes`): the module is optimized
once linked, before differentiation, by `optimize.py`. `-fno-math-errno` lets libm calls
become intrinsics the optimizer can hoist and vectorize; derivative code never sets errno.
Flags given after `--` come last, so they can override it (`-fmath-errno`)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from adgen.frontend.diagnostics import AdgenError, error
from adgen.frontend.generate import Generated
from adgen.frontend.render import BY_ADDRESS_PREFIX, render_text
from adgen.frontend.toolchain import Compiler, RustCompiler

BASE_FLAGS = ["-x", "c", "-c", "-emit-llvm", "-O2", "-Xclang", "-disable-llvm-passes", "-gline-tables-only",
              "-fno-builtin-sincos", "-fno-builtin-sincosf",
              "-fno-math-errno", "-Wno-unused-command-line-argument"]


def keep_array(index: int) -> str:
    """The name of the array holding source `index`'s annotated functions."""
    return f"__adgen_primals_{index}"


def inactive_array(index: int) -> str:
    """The name of the array holding source `index`'s functions marked @inactive."""
    return f"__adgen_inactive_{index}"


def custom_array(index: int) -> str:
    """The name of the array holding the functions source `index` gives derivatives for by hand."""
    return f"__adgen_custom_{index}"


def partials_function(index: int) -> str:
    """The prefix of the functions giving those derivatives' partials, numbered as in the array."""
    return f"__adgen_partials_{index}_"


def primal_functions(g: Generated) -> list:
    """The functions a source's lowering keeps for differentiation, in the order it keeps them
    (derived functions, which `of` entries derive, are the stubs' own)."""
    return list({s.derivation.primal.name: s.derivation.primal for s in g.signatures
                 if s.derivation.inner is None}.values())


def lower_rust(rustc: RustCompiler, source: Path, g: Generated, index: int, workdir: Path) -> bytes:
    """A Rust source compiled on its own as a library crate (rustc at -O2 with LLVM's passes
    left to adgen, line tables for errors, panics aborting: no unwinding edges), its annotated
    functions kept by a function appended to a copy of it that returns their addresses. The
    copy has the source's name and lines, and its folder stands for the source's in the debug
    information, so errors point into the source."""
    folder = workdir / f"rust{index}"
    folder.mkdir()
    copy = folder / source.name
    copy.write_text(source.read_text(encoding="utf-8") + render_text(
        "lowering.rs.j2", source=source.name, primals=primal_functions(g), keep=keep_array(index),
        unsafe_spellings=rustc.unsafe_spellings))
    edition = () if any(f.startswith("--edition") for f in rustc.flags) else ("--edition=2021",)  # theirs, else 2021
    target = workdir / f"{index}-{source.stem}.bc"
    command = [*rustc.command, "--crate-type=lib", "--crate-name", f"adgen_{index}", "--emit=llvm-bc",
               "-C", "opt-level=2", "-C", "no-prepopulate-passes", "-C", "debuginfo=1", "-C", "panic=abort",
               *edition, "--cap-lints=allow", f"--remap-path-prefix={folder}={source.resolve().parent}",
               *rustc.flags, str(copy), "-o", str(target)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise AdgenError(error(f"{rustc.description} could not compile {source}:\n{done.stderr.rstrip()}"))
    return target.read_bytes()


def lower_source(compiler: Compiler, source: Path, g: Generated, index: int, flags: list[str], extra: list[str],
                 workdir: Path) -> bytes:
    """Keeps the annotated functions (by a wrapper where they pass structs by value), those
    marked @inactive, and those with derivatives written by hand with their partials."""
    primals = primal_functions(g)
    wrapper = workdir / f"{index}-{source.stem}.c"
    wrapper.write_text(render_text("lowering.c.j2", source=source.name, path=_c_string(source.resolve()),
                                   primals=primals, keep=keep_array(index), by_address=BY_ADDRESS_PREFIX,
                                   inactive=g.inactive, keep_inactive=inactive_array(index), customs=g.customs,
                                   keep_custom=custom_array(index), partials_prefix=partials_function(index)))
    return _clang(compiler, wrapper, flags, extra, workdir, shown=str(source))


# What templates/libc.c.j2 defines: linked in when the sources call one of them.
LIBC_FUNCTIONS = frozenset(f"{name}{suffix}" for name in ("cabs", "carg", "cexp", "clog", "csqrt", "csin", "ccos",
                                                          "cpow", "sincos") for suffix in ("", "f")) | \
    {"__muldc3", "__divdc3", "__mulsc3", "__divsc3", "posix_memalign"}


def lower_libc(compiler: Compiler, flags: list[str], extra: list[str], workdir: Path) -> bytes:
    """adgen's C definitions of library functions, for the target the sources are lowered for."""
    path = workdir / "adgen-libc.c"
    path.write_text(render_text("libc.c.j2"))
    return _clang(compiler, path, flags, extra, workdir, shown="adgen's definitions of library functions")


def lower_stubs(compiler: Compiler, stubs: Path, flags: list[str], extra: list[str], workdir: Path) -> bytes:
    return _clang(compiler, stubs, ["-DADGEN_LOWERING", *flags], extra, workdir, shown=str(stubs))


def _clang(compiler: Compiler, path: Path, flags: list[str], extra: list[str], workdir: Path, shown: str) -> bytes:
    with tempfile.NamedTemporaryFile(dir=workdir, suffix=".bc", delete=False) as out:
        target = Path(out.name)
    command = [*compiler.command, *BASE_FLAGS, *flags, *extra, str(path), "-o", str(target)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise AdgenError(error(f"{compiler.description} could not compile {shown}:\n{done.stderr.rstrip()}"))
    return target.read_bytes()


def _c_string(path: Path) -> str:
    return str(path).replace("\\", "\\\\").replace('"', '\\"')
