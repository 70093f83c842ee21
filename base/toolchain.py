"""Chooses the C compiler: the clang bundled in the `ziglang` wheel by default (the same LLVM
major as llvmlite), or `--cc PATH` / `ADGEN_CC`. A clang whose LLVM is newer than llvmlite's
writes bitcode llvmlite cannot read, so it is refused up front."""

from __future__ import annotations

import glob
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Sequence

from adgen.base.cxx_library import CxxLibrary
from adgen.base.diagnostics import AdgenError, error
from adgen.base.templates import render_text
from adgen.base.user_cache import optional_private_folder
from adgen.base.zig_cache import use_scratch_cache


# zig's clang defines NDEBUG when it optimizes (-O1 and up); gcc and clang leave it to the user.
# Every compile of user code undefines it ahead of the user's flags, so that assert() stays in
# optimized code, derivatives included, unless they pass -DNDEBUG.
USERS_NDEBUG = ("-UNDEBUG",)


@dataclass(frozen=True)
class Compiler:
    command: tuple[str, ...]  # argv prefix, e.g. (python, -m, ziglang, cc)
    llvm_major: int
    description: str


def llvmlite_llvm_major() -> int:
    import llvmlite.binding as llvm

    return llvm.llvm_version_info[0]


def select_compiler(cc: str | None, meanwhile=None) -> Compiler:
    """The compiler named by --cc, else ADGEN_CC, else ziglang's clang; checked against llvmlite.
    `meanwhile()` runs while the compiler answers (the command's modules imported, say). A zig
    named by --cc or ADGEN_CC gets a cache of this process's too (zig_cache.py)."""
    use_scratch_cache()
    chosen = cc or os.environ.get("ADGEN_CC") or None
    if chosen:
        command = tuple(shlex.split(chosen))
        origin = "--cc" if cc else "ADGEN_CC"
    else:
        command = bundled_cc()
        origin = "the ziglang wheel"
    # the compiler asked for its version and, for `system_flags`, its header paths at once,
    # while llvmlite loads
    with ThreadPoolExecutor(max_workers=2) as pool:
        pool.submit(_probe, command, "c")
        asked = pool.submit(_version, command, origin)
        supported = llvmlite_llvm_major()
        if meanwhile is not None:
            meanwhile()
        major, description = asked.result()
    if major > supported:
        raise AdgenError(error(
            f"{description} (from {origin}) uses LLVM {major}, newer than the LLVM {supported} in "
            f"llvmlite: llvmlite cannot read its bitcode. Use a clang {supported} or older, or drop "
            f"{origin} to use the clang {supported} bundled with adgen"))
    return Compiler(command, major, description)


@cache
def zig() -> tuple[str, ...]:
    """The ziglang wheel's `zig`: its executable itself where it is found (`python -m ziglang`
    only execs it, after starting a Python: 60 ms a compile), else through Python. Its compiles
    keep their objects in a cache of this process's, not in zig's (zig_cache.py)."""
    from importlib.util import find_spec

    use_scratch_cache()

    spec = find_spec("ziglang")
    if spec is not None and spec.origin:
        path = Path(spec.origin).parent / ("zig.exe" if os.name == "nt" else "zig")
        if path.is_file() and os.access(path, os.X_OK):
            return (str(path),)
    return (sys.executable, "-m", "ziglang")


# zig's clang compiles for the machine it runs on unless told otherwise (`-march=native`, where
# clang and gcc take the target's baseline CPU): objects that stop with an illegal instruction on
# another machine, and C++ classes laid out for its vector units (Eigen aligns fixed-size matrices
# to 32 bytes where AVX is on, 16 where not) unlike the same classes in the user's objects. adgen's
# compiles take the baseline, as clang does; the user's -march or -mcpu, coming after, wins.
BASELINE = ("-mcpu=baseline",)


# zig's driver reads -march, -mcpu and -mtune in its own spelling of CPU names, with underscores
# (`x86_64_v3`, `skylake_avx512`): clang's `-march=x86-64-v3` it reads as the CPU `x86` less the
# features `64` and `v3`, and fails. Users write clang's (and gcc's) names; commands run by the
# bundled clang get them respelled (`zig_spelling`), x86's only (elsewhere -march names an
# architecture and its extensions, `armv8.2-a+crypto`, which zig reads otherwise), and without
# `-mtune=generic`, which zig's clang refuses (tuning for no CPU in particular is the default).
_CPU_FLAGS = ("-march=", "-mcpu=", "-mtune=")


def zig_spelling(command: Sequence[str]) -> list[str]:
    """A command line with clang's CPU names in zig's spelling, where it runs zig's driver (the
    bundled clang) for x86 (no -target, on an x86 machine, or an x86 -target)."""
    prefix = zig()
    command = list(command)
    if tuple(command[:len(prefix)]) != prefix or not _x86_target(command):
        return command
    out = []
    for a in command:
        flag = next((f for f in _CPU_FLAGS if a.startswith(f)), None)
        name = a[len(flag):] if flag else ""
        if flag == "-mtune=" and name == "generic":
            continue
        if flag and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            a = flag + name.replace("-", "_")
        out.append(a)
    return out


def _x86_target(command: list[str]) -> bool:
    triple = next((command[i + 1] for i, a in enumerate(command[:-1]) if a in ("-target", "--target")), None)
    triple = next((a.split("=", 1)[1] for a in command if a.startswith(("--target=", "-target="))), triple)
    arch = triple.split("-", 1)[0] if triple else platform.machine().lower()
    return arch in ("x86_64", "amd64", "x86", "i386", "i486", "i586", "i686")


def bundled_cc() -> tuple[str, ...]:
    """The bundled clang's C driver, for the target's baseline CPU (BASELINE)."""
    return (*zig(), "cc", *BASELINE)


def bundled_llvm_major() -> int:
    """The LLVM major version of the bundled clang (the ziglang wheel's)."""
    return _version(bundled_cc(), "adgen's bundled clang")[0]


@cache
def _version(command: tuple[str, ...], origin: str) -> tuple[int, str]:
    try:
        out = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AdgenError(error(f"cannot run the C compiler '{shlex.join(command)}' (from {origin}): {exc}"))
    m = re.search(r"clang version (\d+)\.(\d+)\.(\d+)", out.stdout + out.stderr)
    if out.returncode != 0 or not m:
        raise AdgenError(error(
            f"'{shlex.join(command)}' (from {origin}) is not a clang: adgen needs clang to lower C to "
            f"LLVM bitcode ('--version' printed: {(out.stdout + out.stderr).strip()[:200]!r})"))
    return int(m.group(1)), f"clang {m.group(1)}.{m.group(2)}.{m.group(3)}"


@dataclass(frozen=True)
class RustCompiler:
    command: tuple[str, ...]
    llvm_major: int
    description: str
    flags: tuple[str, ...] = ()  # ADGEN_RUSTFLAGS: more flags for rustc (an --edition, say)
    version: tuple[int, int] = (0, 0)  # (major, minor)

    @property
    def unsafe_spellings(self) -> bool:
        """Whether it takes `unsafe extern` blocks and `#[unsafe(...)]` attributes (1.82+, in every
        edition), which edition 2024 requires and older rustcs (editions up to 2021) cannot parse."""
        return self.version >= (1, 82)


@cache
def select_rustc() -> RustCompiler:
    """The rustc named by ADGEN_RUSTC, else RUSTC (what cargo gives a build script), else the
    one on the PATH; its LLVM must not be newer than llvmlite's."""
    chosen = os.environ.get("ADGEN_RUSTC") or os.environ.get("RUSTC") or "rustc"
    command = tuple(shlex.split(chosen))
    try:
        out = subprocess.run([*command, "-vV"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        raise AdgenError(error(f"no Rust compiler: '{chosen}' cannot be run. Install Rust (rustup, or your "
                               "distribution's rustc), or name one with ADGEN_RUSTC"))
    version = re.search(r"release: ((\d+)\.(\d+)\S*)", out.stdout)
    llvm = re.search(r"LLVM version: (\d+)", out.stdout)
    if out.returncode != 0 or not version or not llvm:
        raise AdgenError(error(f"'{chosen}' is not a rustc ('-vV' printed: {(out.stdout + out.stderr).strip()[:200]!r})"))
    major, supported = int(llvm.group(1)), llvmlite_llvm_major()
    if major > supported:
        raise AdgenError(error(f"rustc {version.group(1)} uses LLVM {major}, newer than the LLVM {supported} in "
                               f"llvmlite: llvmlite cannot read its bitcode. Use a rustc whose LLVM is {supported} or "
                               "older (ADGEN_RUSTC)"))
    return RustCompiler(command, major, f"rustc {version.group(1)}",
                        tuple(shlex.split(os.environ.get("ADGEN_RUSTFLAGS", ""))),
                        (int(version.group(2)), int(version.group(3))))


@cache
def system_flags(compiler: Compiler) -> tuple[str, ...]:
    """The target and header search flags the compiler would use, for libclang to see the same
    headers (libclang's wheel ships no C library headers of its own)."""
    args = _cc1_arguments(compiler.command, "c", compiler.description)
    flags: list[str] = ["-nostdinc"]
    for i, arg in enumerate(args[:-1]):
        value = args[i + 1]
        if arg == "-triple":
            flags += ["-target", value]
        elif arg in ("-isystem", "-internal-isystem", "-internal-externc-isystem", "-idirafter"):
            flags += ["-isystem", str(Path(value).absolute())]
        elif arg == "-D" and value.split("=")[0] != "NDEBUG":  # the user's alone (USERS_NDEBUG)
            flags += ["-D", value]
    return tuple(flags)


def _cc1_arguments(command: tuple[str, ...], language: str, description: str) -> list[str]:
    """The arguments the driver `command` would give clang's `-cc1` for a file of `language`."""
    printed = _probe(command, language)
    cc1 = next((line for line in printed.splitlines() if '"-cc1"' in line), None)
    if cc1 is None:
        raise AdgenError(error(f"could not ask {description} for its header search paths:\n{printed}"))
    return shlex.split(cc1)


@cache
def _probe(command: tuple[str, ...], language: str) -> str:
    """What the driver prints of the jobs it would run for a file of `language` (`-###`)."""
    try:
        return subprocess.run([*command, "-###", "-x", language, "-c", os.devnull, "-o", os.devnull],
                              capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)


def cores() -> int:
    """The processors this process may run on (its affinity, where the system says)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cxx_command(compiler: Compiler) -> tuple[str, ...]:
    """The C++ driver of a compiler: `zig c++` for the bundled clang (`zig cc -x c++` leaves out
    the C++ library's headers), clang's own in g++ mode otherwise. The C++ library's own flags
    are `cxx_library_flags`'s."""
    if compiler.command == bundled_cc():
        return (*zig(), "c++", *BASELINE)
    return (*compiler.command, "--driver-mode=g++")


def cxx_library_flags(compiler: Compiler, library: CxxLibrary, flags: Sequence[str] = ()) -> list[str]:
    """What a compile of C++ by `cxx_command(compiler)` takes, after the user's `flags`, to compile
    against `library` (cxx_library.py): the bundled libc++ is `zig c++`'s own; libstdc++'s
    headers are searched before the C library's, which `#include_next` from them needs (zig puts
    the system's C headers first among the system folders, so they are given to it as `-I`, a
    header of theirs being a system header by its `#pragma GCC system_header`). None where the
    user's flags ask for no C++ library headers (`-nostdinc++`, `-nostdinc`)."""
    if "-nostdinc++" in flags or "-nostdinc" in flags:
        return []
    bundled = compiler.command == bundled_cc()
    if library.bundled:
        return [] if bundled else list(cxx_read_flags(library))
    return ["-nostdinc++", *(f"-I{d}" if bundled else f"-isystem{d}" for d in library.include_dirs)]


def cxx_link_flags(compiler: Compiler, library: CxxLibrary) -> list[str]:
    """What a link by `cxx_command(compiler)` takes to link with `library`: libstdc++ by path
    (to `zig c++`, `-lstdc++` is its own libc++), and `-nostdlib++` so that the bundled libc++ is
    not linked besides."""
    if library.bundled:
        return []
    return ["-nostdlib++", *library.link] if compiler.command == bundled_cc() else [*library.link]


def cxx_read_flags(library: CxxLibrary) -> tuple[str, ...]:
    """What libclang needs besides the C flags to read C++ against `library`: its headers,
    searched first (before the C library's, which `system_flags` lists), and libc++'s macros."""
    if not library.bundled:
        return ("-nostdinc++", *(f for d in library.include_dirs for f in ("-isystem", d)))
    return _bundled_libcxx_flags()


@cache
def _bundled_libcxx_flags() -> tuple[str, ...]:
    """The bundled libc++ as the bundled clang compiles with it (LLVM's libc++, which zig ships),
    and its macros."""
    args = _cc1_arguments(cxx_command(Compiler(bundled_cc(), 0, "")), "c++", "the bundled clang")
    flags: list[str] = ["-nostdinc++"]  # (not the system's libstdc++ as well, whose <math.h> libc++'s would meet)
    for i, arg in enumerate(args[:-1]):
        value = args[i + 1]
        if arg in ("-isystem", "-internal-isystem") and re.search(r"libcxx(abi)?[/\\]include", value):
            flags += ["-isystem", str(Path(value).absolute())]
        elif arg == "-D" and value.startswith(("_LIBCPP", "_LIBCXXABI")):
            flags += ["-D", value]
    return tuple(flags)


DISPATCH_DEINIT = "__kmpc_dispatch_deinit"  # (templates/openmp_dispatch_deinit.ll.j2 says why)


def openmp_library() -> str | None:
    """The OpenMP runtime to link parallel code with where the bundled clang has none of its own
    (zig ships no libomp): the system's libomp (Debian's libomp-dev), None where there is none;
    one that has every entry point the bundled clang calls first (LLVM 19's or newer)."""
    patterns = ["/usr/lib/llvm-*/lib/libomp.so", "/usr/lib/*-linux-gnu/libomp.so", "/usr/lib/*-linux-gnu/libomp.so.5",
                "/usr/local/lib/libomp.so", "/opt/homebrew/opt/libomp/lib/libomp.dylib"]
    found = sorted(path for pattern in patterns for path in glob.glob(pattern))
    current = [path for path in found if _names(path, DISPATCH_DEINIT)]
    return (current or found)[-1] if found else None


@cache
def _names(library: str, symbol: str) -> bool:
    """Whether a shared library names `symbol` (its dynamic symbols' names: a runtime names what
    it defines)."""
    try:
        return b"\0" + symbol.encode() + b"\0" in Path(library).read_bytes()
    except OSError:
        return False


def openmp_lacks_dispatch_deinit() -> bool:
    """Whether the runtime parallel code is linked with here is older than the bundled clang's
    code (see DISPATCH_DEINIT)."""
    library = openmp_library()
    return library is not None and not _names(library, DISPATCH_DEINIT)


def openmp_link_flags(compiler: Compiler, flags: list[str]) -> list[str]:
    """What linking with `flags` needs besides, where they hold -fopenmp: for the bundled clang,
    the system's libomp by path, found at run time where it was found now."""
    if "-fopenmp" not in flags or compiler.command != bundled_cc():
        return []
    runtime = openmp_runtime_flags()
    if not runtime:
        raise AdgenError(error("-fopenmp: the bundled clang has no OpenMP runtime, and none was found on this "
                               "machine (install libomp-dev, or name a clang that has one with ADGEN_CC)"))
    return runtime


def openmp_runtime_flags() -> list[str]:
    """What a link of code the bundled clang compiled with -fopenmp names: the runtime found here,
    by path, found at run time where it was found now; before it, where it is older than the
    bundled clang's code, the empty entry point that code calls and it lacks (DISPATCH_DEINIT).
    Nothing where there is no runtime."""
    library = openmp_library()
    if library is None:
        return []
    shim = [str(_dispatch_deinit_file())] if not _names(library, DISPATCH_DEINIT) else []
    return [*shim, library, f"-Wl,-rpath,{os.path.dirname(library)}"]


def _dispatch_deinit_file() -> Path:
    """The empty DISPATCH_DEINIT in a file of its own, for a link to compile beside the objects."""
    text = render_text("openmp_dispatch_deinit.ll.j2")
    folder = optional_private_folder("openmp-compat") or Path(tempfile.mkdtemp(prefix="adgen-openmp-"))
    path = folder / "dispatch_deinit.ll"  # (compiled into the user's program: in a folder theirs alone)
    if not path.exists() or path.read_text() != text:
        scratch = path.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(text)
        os.replace(scratch, path)  # (atomic: another process may link at the same time)
    return path


def enzyme_include_flags() -> list[str]:
    """For `adgen c++`: the folder of adgen's own `<enzyme/enzyme>` (Enzyme's C++ API), searched
    before the user's own folders (to go first among them): a build moving from Enzyme keeps
    Enzyme's `-I.../enzyme/include`, whose header of that name expands to calls adgen does not
    read. The folder holds that header alone, so Enzyme's others are still found there."""
    return ["-I", str(Path(__file__).resolve().parent.parent / "include")]


def openmp_include_flags(compiler: Compiler, flags: list[str]) -> list[str]:
    """What compiling with `flags` needs besides, where they hold -fopenmp: for the bundled clang,
    which has no `omp.h`, a folder holding the system's alone (LLVM's, from libomp-dev; else
    GCC's: the API is the same). Alone, so that the system compiler's other headers do not take
    the place of zig's."""
    if "-fopenmp" not in flags or compiler.command != bundled_cc():
        return []
    found = sorted(glob.glob("/usr/lib/llvm-*/lib/clang/*/include/omp.h")) or \
        sorted(glob.glob("/usr/lib/gcc/*/*/include/omp.h")) or sorted(glob.glob("/usr/local/include/omp.h"))
    if not found:
        return []
    header = Path(found[-1])
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "adgen" / "openmp-include"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        copy = folder / "omp.h"
        if not copy.exists() or copy.read_bytes() != header.read_bytes():
            copy.write_bytes(header.read_bytes())
    except OSError:
        return []
    return ["-isystem", str(folder)]
