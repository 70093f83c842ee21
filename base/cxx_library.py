"""Which C++ standard library adgen compiles C++ against: the one the program is built with, so
that the classes a derivative receives (`std::string`, `std::map`, `std::function`...) have the
layout the program gives them (specs/cxx.md, "The C++ library").

The choice, first that says: `-stdlib=libstdc++` or `-stdlib=libc++` among the compiler flags
(`adgen build --cxx-library=...` adds one), else the library of the program's C++ compiler:
`--cxx` (`compiler_named`), else `CXX`, else `c++`, `g++` or `clang++` on the PATH, asked for its
header search path (`-E -x c++ - -v`). libstdc++ is compiled from that compiler's headers by the
bundled clang; libc++ from the bundled libc++'s (ABI version 1, the same layouts as any libc++
of that ABI: `std::__1`); and where the machine has no C++ library at all, the bundled libc++."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Iterable, Iterator

from adgen.base.diagnostics import AdgenError, error

LIBSTDCXX = "libstdc++"
LIBCXX = "libc++"
NAMES = (LIBSTDCXX, LIBCXX)


@dataclass(frozen=True)
class CxxLibrary:
    name: str  # LIBSTDCXX or LIBCXX
    origin: str  # why this one, for messages: "-stdlib=libc++", "g++ (CXX)", "c++ on the PATH"...
    include_dirs: tuple[str, ...] = ()  # libstdc++'s headers, searched before the C library's; () for libc++
    link: tuple[str, ...] = ()  # libstdc++: what a link with it takes, by path (libstdc++.so, libgcc_s.so.1)

    @property
    def bundled(self) -> bool:
        """Whether this is the libc++ the ziglang wheel ships (adgen's headers and library)."""
        return self.name == LIBCXX


BUNDLED = CxxLibrary(LIBCXX, "the bundled libc++: no C++ library was found on this machine")

_named: list[str | None] = [None]  # --cxx of the command running (compiler_named)


@contextmanager
def compiler_named(command: str | None) -> Iterator[None]:
    """While a command runs: the C++ compiler its `--cxx` names (None: `CXX`, else the PATH's)."""
    before = _named[0]
    _named[0] = command
    try:
        yield
    finally:
        _named[0] = before


def stdlib_flag(flags: Iterable[str]) -> str | None:
    """The library the last `-stdlib=` among `flags` names, None where none does; another
    name is an error."""
    chosen = None
    for f in flags:
        if f.startswith("-stdlib="):
            chosen = f[len("-stdlib="):]
            if chosen not in NAMES:
                raise AdgenError(error(f"{f}: adgen compiles C++ against libstdc++ or libc++ "
                                       "(-stdlib=libstdc++, -stdlib=libc++)"))
    return chosen


def without_stdlib(flags: Iterable[str]) -> list[str]:
    """`flags` less their `-stdlib=`, which the bundled clang's driver ignores with a warning
    (adgen gives it the library's headers itself)."""
    return [f for f in flags if not f.startswith("-stdlib=")]


def choose(flags: Iterable[str] = ()) -> CxxLibrary:
    """The C++ library of a compile with `flags` (the module's docstring)."""
    return _choose(stdlib_flag(flags), _named[0], os.environ.get("CXX") or None)


@cache
def _choose(explicit: str | None, named: str | None, env: str | None) -> CxxLibrary:
    if explicit == LIBCXX:
        return CxxLibrary(LIBCXX, "-stdlib=libc++")
    candidates = _candidates(named, env)
    for command, origin in candidates:
        found = _probe(command, origin)
        if found is None:
            continue
        name, dirs = found
        if explicit == LIBSTDCXX and name != LIBSTDCXX:
            continue
        if name == LIBCXX:
            return CxxLibrary(LIBCXX, f"{origin} uses libc++")
        return CxxLibrary(LIBSTDCXX, "-stdlib=libstdc++" if explicit else f"{origin} uses libstdc++", dirs,
                          _libstdcxx_link(command))
    if explicit == LIBSTDCXX:
        asked = ", ".join(o for _, o in candidates) or "no C++ compiler found"
        raise AdgenError(error(f"-stdlib=libstdc++: no libstdc++ was found on this machine (asked: {asked}); "
                               "install g++ (Debian: apt install g++), or name the compiler with --cxx or CXX"))
    return BUNDLED


def _candidates(named: str | None, env: str | None) -> list[tuple[tuple[str, ...], str]]:
    """The C++ compilers to ask, in order, each with where it comes from; a command that is
    adgen itself (`CXX="adgen c++"`) is passed over: it compiles with what this module says."""
    found = []
    for chosen, origin in ((named, "--cxx"), (env, "CXX")):
        if chosen:
            command = tuple(shlex.split(chosen))
            if command and not _is_adgen(command):
                if shutil.which(command[0]) is None:
                    raise AdgenError(error(f"the C++ compiler '{chosen}' (from {origin}) was not found"))
                found.append((command, f"{chosen} ({origin})"))
    for name in ("c++", "g++", "clang++"):
        if shutil.which(name):
            found.append(((name,), f"{name} on the PATH"))
    return found


def _is_adgen(command: tuple[str, ...]) -> bool:
    return any(Path(word).name.startswith("adgen") or "adgen.commands" in word for word in command)


@cache
def _probe(command: tuple[str, ...], origin: str) -> tuple[str, tuple[str, ...]] | None:
    """The library `command` compiles C++ against and, libstdc++'s, its header folders in their
    order; None where it names none (a compiler without a C++ library, or not a C++ compiler)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CXX", "CPLUS_INCLUDE_PATH")}
    try:
        done = subprocess.run([*command, "-E", "-x", "c++", "-", "-v"], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace", timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AdgenError(error(f"cannot run the C++ compiler '{shlex.join(command)}' ({origin}): {exc}"))
    dirs = _search_list(done.stderr)
    for d in dirs:  # the first C++ library among them is the one it compiles with
        if _is_libcxx(d):
            return LIBCXX, ()
        if _is_libstdcxx(d):
            return LIBSTDCXX, tuple(d for d in dirs if _is_libstdcxx(d))
    return None


def _search_list(printed: str) -> list[str]:
    """The `#include <...>` folders a compiler's `-v` prints, normalized (gcc spells them
    through `../`)."""
    dirs, inside = [], False
    for line in printed.splitlines():
        if line.startswith("#include <...> search starts here"):
            inside = True
        elif line.startswith("End of search list"):
            break
        elif inside and line.startswith(" "):
            d = line.strip().removesuffix(" (framework directory)")
            dirs.append(os.path.normpath(d))
    return dirs


def _is_libstdcxx(d: str) -> bool:
    return any(os.path.isfile(os.path.join(d, f)) for f in ("bits/c++config.h", "bits/stl_algobase.h",
                                                             "backward_warning.h"))


def _is_libcxx(d: str) -> bool:
    return os.path.isfile(os.path.join(d, "__config")) or os.path.isfile(os.path.join(d, "__config_site"))


def _libstdcxx_link(command: tuple[str, ...]) -> tuple[str, ...]:
    """libstdc++'s shared library and the unwinder it calls (`_Unwind_Resume`), by path, as the
    compiler finds them (a name alone where it finds none: the linker looks then)."""
    found = []
    for name in ("libstdc++.so", "libgcc_s.so.1"):
        try:
            path = subprocess.run([*command, f"-print-file-name={name}"], capture_output=True, text=True,
                                  timeout=60).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            path = ""
        if os.path.isabs(path) and os.path.exists(path):
            found.append(os.path.normpath(path))
    return tuple(found)


__all__ = ["CxxLibrary", "LIBSTDCXX", "LIBCXX", "NAMES", "BUNDLED", "choose", "compiler_named", "stdlib_flag",
           "without_stdlib"]
