"""Lowers C to LLVM bitcode with the selected clang: each source as written (through a wrapper
that keeps its annotated functions alive and findable) and each stub file.

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
from adgen.frontend.toolchain import Compiler

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


def lower_source(compiler: Compiler, source: Path, g: Generated, index: int, flags: list[str], extra: list[str],
                 workdir: Path) -> bytes:
    """Keeps the annotated functions (by a wrapper where they pass structs by value), those
    marked @inactive, and those with derivatives written by hand with their partials."""
    primals = list({s.derivation.primal.name: s.derivation.primal for s in g.signatures
                    if s.derivation.inner is None}.values())  # derived functions are the stubs' own
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
