"""Lowers C to LLVM bitcode with the selected clang: each source as written (through a wrapper
that keeps its annotated functions alive and findable) and each stub file.

A Rust source is compiled by rustc as a crate of its own (`lower_rust`).

Lowering runs no optimization (`-O2 -Xclang -disable-llvm-passes`): the module is optimized
once linked, before differentiation, by `optimize.py`. `-fno-math-errno` lets libm calls
become intrinsics the optimizer can hoist and vectorize; derivative code never sets errno.
Flags given after `--` come last, so they can override it (`-fmath-errno`). NDEBUG is defined
only by the user's flags (`toolchain.USERS_NDEBUG`): an assert() in differentiated code stays."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from adgen.base.diagnostics import AdgenError, SourceFile
from adgen.frontend.comments import find_rust_comments
from adgen.frontend.rust_wrappers import BY_HAND, methods_beside, render_shims
from adgen.frontend.generate import Generated
from adgen.base.naming import BY_ADDRESS_PREFIX, MEMBER_PREFIX
from adgen.frontend.render import render_text
from adgen.base.cxx_library import choose
from adgen.base.toolchain import (USERS_NDEBUG, Compiler, RustCompiler, cxx_command, cxx_library_flags,
                                  zig_spelling)
from adgen.frontend.languages import is_cxx
from adgen.ir_ad import mpi
from adgen.commands.build import kept_rules

from adgen.base.compiler_errors import Files, compiler_errors, rustc_errors

# An `#include` of a header adgen generates (its own, or another source's of the same build).
_GENERATED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]*\.adgen\.h)[>"]', re.M)
BASE_FLAGS = ["-x", "c", "-c", "-emit-llvm", "-O2", "-Xclang", "-disable-llvm-passes", "-gline-tables-only",
              "-fno-builtin-sincos", "-fno-builtin-sincosf",
              "-fno-math-errno", "-Wno-unused-command-line-argument", *USERS_NDEBUG]

CXX_FLAGS = ["-x", "c++", "-fexceptions", "-D_LIBCPP_VERBOSE_ABORT(...)=__builtin_abort()"]  # (exceptions: as users
# compile C++, so that a throw anywhere builds; ir/unwinding.py takes them out of the code differentiated)


def keep_array(index: int) -> str:
    """The name of the array holding source `index`'s annotated functions."""
    return f"__adgen_primals_{index}"


def inactive_array(index: int) -> str:
    """The name of the array holding source `index`'s functions marked @inactive."""
    return f"__adgen_inactive_{index}"


def custom_array(index: int) -> str:
    """The name of the array holding the functions source `index` gives derivatives for by hand,
    then the functions through which the derivatives call theirs (`partials_function`'s in C,
    rust_wrappers.BY_HAND's in Rust), in the same order."""
    return f"__adgen_custom_{index}"


def partials_function(index: int) -> str:
    """The prefix of the functions giving those derivatives' partials, numbered as in the array."""
    return f"__adgen_partials_{index}_"


def primal_functions(g: Generated) -> list:
    """The functions a source's lowering keeps for differentiation, in the order it keeps them
    (derived functions, which `of` entries derive, are the stubs' own)."""
    return list({s.derivation.primal.key: s.derivation.primal for s in g.signatures
                 if s.derivation.inner is None}.values())


def without_annotation_attributes(text: str, beside: dict[int, str] | None = None) -> str:
    """Rust source with its `#[adgen::...]` attributes (and std::autodiff's) and its imports of
    adgen's crate blanked (lines kept): adgen's own compile needs no macro crate for them (the
    user's build takes adgen's, specs/annotations.md). `beside`: the derived methods adgen's
    crate of attributes would put beside a method, by where their names are in an attribute,
    written in its place (rust_wrappers.methods_beside)."""
    for c in sorted(find_rust_comments(text), key=lambda c: -c.start):  # (from the end: offsets stay)
        if c.attribute:
            method = next((m for at, m in (beside or {}).items() if c.start <= at < c.end), "")
            first, newline, rest = text[c.start:c.end].partition("\n")
            replaced = method.ljust(len(first)) + newline + re.sub(r"[^\n]", " ", rest)  # (on its first line)
            text = text[:c.start] + replaced + text[c.end:]
    # (and the imports of the attributes from adgen's crate: `use adgen::autodiff_reverse;`)
    return re.sub(r"(?m)^[ \t]*(?:pub(?:\([^)]*\))?\s+)?use\s+(?:::)?adgen::[^;]*;",
                  lambda m: re.sub(r"[^\n]", " ", m.group()), text)


# Where a Rust source marks functions @inactive, rustc's MIR inliner must leave their calls calls
# (it inlines small functions before LLVM, and adgen, sees them): `-Z inline-mir=no`, which a
# stable rustc takes with RUSTC_BOOTSTRAP=1 (as cargo's own builds of std do); for adgen's
# compile only, the user's build unchanged.
STOP_MIR_INLINING = {False: (), True: ("-Z", "inline-mir=no")}

# A Rust source's include of the wrappers adgen makes of it (`include!(concat!(env!("ADGEN_OUT"),
# "/model.adgen.rs"))`): adgen's own compile has them appended instead.
_WRAPPERS_INCLUDE = re.compile(r"\binclude!\s*\([^;]*?\)\s*;")


def lower_rust(rustc: RustCompiler, source: Path, g: Generated, index: int, workdir: Path) -> bytes:
    """A Rust source compiled on its own as a library crate (rustc at -O2 with LLVM's passes
    left to adgen, line tables for errors, panics aborting: no unwinding edges), its annotated
    functions kept by a function appended to a copy of it that returns their addresses. The
    copy has the source's name and lines, and its folder stands for the source's in the debug
    information, so errors point into the source."""
    folder = workdir / f"rust{index}"
    folder.mkdir()
    copy = folder / source.name
    primals = primal_functions(g)
    # The derived functions' wrappers too, in place of the source's include of them (a source may
    # call its own derivatives, as std::autodiff's tests do): declarations of C functions, to be
    # defined by the derivatives.
    def blank(m: re.Match) -> str:  # (its own wrappers' include only: `/model.adgen.rs"`)
        return re.sub(r"[^\n]", " ", m.group()) if re.search(rf'\b{re.escape(source.stem)}\.adgen\.rs"', m.group()) \
            else m.group()

    text = _WRAPPERS_INCLUDE.sub(blank, without_annotation_attributes(source.read_text(encoding="utf-8"),
                                                                      methods_beside(g.unit, g.signatures)))
    wrappers = "".join(t for p, t in g.files.items() if p.name.endswith(".adgen.rs"))
    ffi = "__adgen_ffi_" + re.sub(r"[^A-Za-z0-9_]", "_", source.stem)
    copy.write_text(text + "\n" + wrappers + render_text(
        "lowering.rs.j2", source=source.name, primals=primals, keep=keep_array(index),
        unsafe_spellings=rustc.unsafe_spellings, shims=render_shims(g.unit, [f.name for f in primals]),
        inactive=g.inactive, keep_inactive=inactive_array(index), keep_custom=custom_array(index),
        customs=[c.primal.name for c in g.customs] + [f"{ffi}::{BY_HAND}{k}" for k in range(len(g.customs))]))
    edition = () if any(f.startswith("--edition") for f in rustc.flags) else ("--edition=2021",)  # theirs, else 2021
    target = workdir / f"{index}-{source.stem}.bc"
    command = [*rustc.command, "--crate-type=lib", "--crate-name", f"adgen_{index}", "--emit=llvm-bc",
               "-C", "opt-level=2", "-C", "no-prepopulate-passes", "-C", "debuginfo=1", "-C", "panic=abort",
               *edition, "--cap-lints=allow", f"--remap-path-prefix={folder}={source.resolve().parent}",
               "--error-format=json", *STOP_MIR_INLINING[kept_apart(g)], *rustc.flags, str(copy), "-o", str(target)]
    done = subprocess.run(command, capture_output=True, text=True,
                          env={**os.environ, "RUSTC_BOOTSTRAP": "1"} if kept_apart(g) else None)
    if done.returncode != 0:
        files = Files(g.source, user={os.path.realpath(source): g.source})
        raise AdgenError(rustc_errors(done.stderr, files, rustc.description))
    return target.read_bytes()


def kept_apart(g: Generated) -> bool:
    """Whether the source marks functions whose calls must stay calls (@inactive, @derivative):
    rustc's MIR inliner is then turned off (STOP_MIR_INLINING)."""
    return bool(g.inactive or g.customs)


def lower_source(compiler: Compiler, source: Path, g: Generated, index: int, flags: list[str], extra: list[str],
                 workdir: Path, built: Sequence[Generated] = ()) -> bytes:
    """Keeps the annotated functions (by a wrapper where they pass structs by value), those
    marked @inactive, and those with derivatives written by hand with their partials. The
    `*.adgen.h` headers the source includes that this build makes (`built`, `g`'s own among
    them) are found wherever its includes would find them (`_generated_headers`)."""
    primals = primal_functions(g)
    cxx = is_cxx(source)
    wrapper = workdir / f"{index}-{source.stem}.{'cpp' if cxx else 'c'}"
    wrapper.write_text(render_text("lowering.c.j2", source=source.name, path=_c_string(source.resolve()), cxx=cxx,
                                   wrapper=_c_string(wrapper.resolve()),
                                   primals=primals, keep=keep_array(index), by_address=BY_ADDRESS_PREFIX,
                                   member=MEMBER_PREFIX,
                                   inactive=g.inactive, keep_inactive=inactive_array(index), customs=g.customs,
                                   keep_custom=custom_array(index), partials_prefix=partials_function(index)))
    files = Files(g.source, os.path.realpath(wrapper), {os.path.realpath(source): g.source})
    overlay = _generated_headers(g.source, [g, *built], [*flags, *extra], workdir / f"{index}-headers", files)
    return _clang(compiler, wrapper, [*overlay, *flags], extra, workdir, files, cxx)


# What templates/libc.c.j2 defines: linked in when the sources call one of them.
LIBC_FUNCTIONS = frozenset(f"{name}{suffix}" for name in ("cabs", "carg", "cexp", "clog", "csqrt", "csin", "ccos",
                                                          "cpow", "sincos") for suffix in ("", "f")) | \
    {"__muldc3", "__divdc3", "__mulsc3", "__divsc3", "posix_memalign"}


def lower_libc(compiler: Compiler, flags: list[str], extra: list[str], workdir: Path) -> bytes:
    """adgen's C definitions of library functions, for the target the sources are lowered for."""
    path = workdir / "adgen-libc.c"
    path.write_text(render_text("libc.c.j2"))
    files = Files(SourceFile(path), own={os.path.realpath(path): "adgen's definitions of library functions"})
    return _clang(compiler, path, _for_c(flags), _for_c(extra), workdir, files)


def lower_mpi(compiler: Compiler, flags: list[str], extra: list[str], workdir: Path) -> bytes:
    """The derivatives of MPI's calls (ir_ad/mpi.py), compiled against the sources' own mpi.h,
    optimized by clang (no derivative differentiates them: the build links them in settled,
    optimize.settled): once for each MPI installation and set of flags, then kept (kept_rules.py)."""
    text = render_text("mpi_rules.c.j2", datatypes=mpi.FLOATING_DATATYPES + mpi.INTEGER_DATATYPES,
                       prefix=mpi.HANDLE_PREFIX)
    name = kept_rules.key(text, compiler.command, compiler.description, _for_c(flags), _for_c(extra), "optimized")
    code = kept_rules.kept(name)
    if code is not None:
        return code
    path = workdir / "adgen-mpi.c"
    path.write_text(text)
    files = Files(SourceFile(path), own={os.path.realpath(path): "adgen's derivatives of MPI's calls"})
    code = _clang(compiler, path, _for_c(flags), _for_c(extra), workdir, files, optimized=True)
    headers = subprocess.run(zig_spelling([*compiler.command, "-x", "c", *_for_c(flags), *_for_c(extra), "-M",
                                           str(path)]), capture_output=True, text=True)  # (what it read: make's rule)
    if headers.returncode == 0:
        kept_rules.keep(name, code, headers.stdout, path)
    return code


def _for_c(flags: list[str]) -> list[str]:
    """A C++ source's flags as a C file of adgen's takes them: without its C++ standard
    (`-std=c++17`, which clang refuses for C) and C++ library."""
    return [f for f in flags if not re.match(r"-std=(c|gnu)\+\+|-stdlib=", f)]


def lower_stubs(compiler: Compiler, g: Generated, index: int, flags: list[str], extra: list[str],
                workdir: Path) -> bytes:
    """A source's stub file, made for a folder of the work directory (nothing is written to
    the output directory before the build succeeds)."""
    folder = workdir / f"{index}-stubs"
    folder.mkdir()
    stubs, text = next((p, text) for p, text in g.files_in(folder).items() if p.suffix == ".c")
    stubs.write_text(text)
    files = Files(g.source, own={os.path.realpath(stubs): f"the stubs adgen made for {g.source.name}"})
    return _clang(compiler, stubs, ["-DADGEN_LOWERING", *flags], extra, workdir, files, is_cxx(g.source.path))


def _generated_headers(source: SourceFile, built: Sequence[Generated], flags: list[str], folder: Path,
                       files: Files) -> list[str]:
    """Flags for clang to find, for each `#include` of a `*.adgen.h` that this build makes, the
    header it makes, in the source's folder and every -I and -iquote folder (a stale one there
    from an earlier build or none at all): a VFS overlay of headers made for those folders
    (their own includes relative to them), written to `folder`."""
    made = {p.name: g for g in built for p in g.files if p.suffix == ".h"}
    dirs = [source.path.parent.absolute(), *_include_dirs(flags)]
    roots = []
    for spelling in dict.fromkeys(_GENERATED_INCLUDE.findall(source.text)):
        g = made.get(Path(spelling).name)
        if g is None:
            continue
        for d in dict.fromkeys(dirs):
            where = Path(os.path.normpath(d / spelling))
            text = g.files_in(where.parent)[where]
            folder.mkdir(exist_ok=True)
            real = folder / f"{len(roots)}-{where.name}"
            real.write_text(text)
            for path in (real, where):
                files.own[os.path.realpath(path)] = f"the header adgen made for {g.source.name}"
            roots.append({"type": "directory", "name": str(where.parent),
                          "contents": [{"type": "file", "name": where.name, "external-contents": str(real)}]})
    if not roots:
        return []
    overlay = folder / "overlay.yaml"
    overlay.write_text(json.dumps({"version": 0, "case-sensitive": "true",
                                   "roots": roots}))
    return ["-ivfsoverlay", str(overlay)]


def _include_dirs(flags: list[str]) -> list[Path]:
    """The folders `-I` and `-iquote` flags name, absolute."""
    dirs = []
    for i, f in enumerate(flags):
        m = re.fullmatch(r"-(?:I|iquote)(.*)", f)
        if m:
            dirs.append(m[1] or (flags[i + 1] if i + 1 < len(flags) else ""))
    return [Path(d).absolute() for d in dirs if d]


def _clang(compiler: Compiler, path: Path, flags: list[str], extra: list[str], workdir: Path, files: Files,
           cxx: bool = False, optimized: bool = False) -> bytes:
    """The bitcode of `path`, or clang's errors in the user's files (compiler_errors.py). C++ is
    compiled by the compiler's C++ driver against the program's C++ library (base/cxx_library.py),
    without exceptions (specs/cxx.md). The debug information names the temporary `workdir` (the stubs and the
    lowering wrappers are there) `adgen`, so that a build writes the same object every time."""
    with tempfile.NamedTemporaryFile(dir=workdir, suffix=".bc", delete=False) as out:
        target = Path(out.name)
    base = [*CXX_FLAGS, *BASE_FLAGS[2:]] if cxx else BASE_FLAGS
    if optimized:  # (clang's -O2 run: adgen's own C, which no derivative differentiates)
        base = [f for f in base if f not in ("-Xclang", "-disable-llvm-passes")]
    driver = cxx_command(compiler) if cxx else compiler.command
    library = cxx_library_flags(compiler, choose([*flags, *extra]), [*flags, *extra]) if cxx else []
    command = zig_spelling([*driver, *base, f"-fdebug-prefix-map={workdir}=adgen", *flags, *extra, *library,
                            str(path), "-o", str(target)])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise AdgenError(compiler_errors(done.stderr, files, compiler.description))
    return target.read_bytes()


def _c_string(path: Path) -> str:
    return str(path).replace("\\", "\\\\").replace('"', '\\"')
