"""Says so on stderr, once, when a link is about to make zig build a runtime (issue 43).

The first time the bundled zig links for a target, CPU and optimization mode, it builds clang's
compiler runtime (compiler-rt, and in debug mode zig's UBSan runtime: 15 to 30 s) into its
global cache (`~/.cache/zig`, or ZIG_GLOBAL_CACHE_DIR: what `zig env` says); the first time it
links C++ against the bundled libc++, libc++, libc++abi and libunwind too (a minute, more on a
busy machine). Every later link finds them there. Before such a link adgen prints one line, so
that a first `adgen.load` does not sit silent for a minute.

zig's cache is keyed by hashes of zig's own making, which adgen cannot compute, so adgen keeps
markers of its own, in zig's global cache (removing the cache removes them too):
`adgen/runtimes-ZIGVERSION/KIND-TARGET-CPU-MODE`, written once a link that may have built KIND
succeeds. A cache that holds no marker of this zig version yet, but holds zig's artefact of KIND
already (`o/*/libcompiler_rt.a`, `o/*/libc++.a`: built by an adgen without markers, or by the
user's own zig), is taken as having it, silently: the line is never printed for a build that
does not happen, at the price of missing one for another CPU or mode the first time."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

COMPILER_RT, LIBCXX = "compiler-rt", "libc++"
ARTEFACTS = {COMPILER_RT: "libcompiler_rt.a", LIBCXX: "libc++.a"}  # (zig's names, in its cache's o/HASH/)
NAMES = {COMPILER_RT: "clang's compiler runtime", LIBCXX: "the bundled libc++"}

# What stops a C driver before it makes any object (a preprocess, a question): adgen cc's driver
# reads them so too; and, with a compile (-c) or an assembly (-S), what stops it before it links.
STOPS = frozenset({"-E", "-M", "-MM", "-fsyntax-only", "-###", "--version", "-dumpversion", "-dumpmachine",
                   "-print-search-dirs"})
_NO_LINK = STOPS | {"-c", "-S", "--help", "-help"}

# Flags whose value is the next argument (no input, then): adgen cc's driver reads them so too.
WITH_VALUE = frozenset({
    "-o", "-x", "-I", "-D", "-U", "-L", "-l", "-MF", "-MT", "-MQ", "-target", "--target", "-include", "-imacros",
    "-isystem", "-iquote", "-idirafter", "-isysroot", "-iprefix", "-iwithprefix", "--sysroot", "-Xlinker", "-Xclang",
    "-Xpreprocessor", "-Xassembler", "-mllvm", "-T", "-u", "-z", "-e", "-rpath", "--param", "-arch", "-aux-info",
    "--serialize-diagnostics"})

_quiet = [False]


@contextmanager
def quietly(quiet: bool = True) -> Iterator[None]:
    """While a command runs: whether it is quiet (`-q`), which the line is not printed for."""
    before = _quiet[0]
    _quiet[0] = quiet
    try:
        yield
    finally:
        _quiet[0] = before


def run_link(command: Sequence[str], **run: Any) -> subprocess.CompletedProcess:
    """`subprocess.run(command, **run)` for a command that links (a driver's command line that
    may stop before: -c, -E... are told apart): where it is the bundled zig's and is to build a
    runtime it has not built yet, one line on stderr first, and the runtime remembered once the
    link succeeded."""
    from adgen.base.toolchain import zig_spelling

    command = zig_spelling(command)
    found = pending(command)
    if found is not None:
        markers, line = found
        if line and not _quiet[0]:
            print(line, file=sys.stderr, flush=True)
    done = subprocess.run(command, **run)
    if found is not None and done.returncode == 0:
        remember(found[0])
    return done


def pending(command: Sequence[str]) -> tuple[list[Path], str] | None:
    """None where `command` is no link by the bundled zig; else the markers of the runtimes its
    link may build, and the line to print: "" where all of them are built already."""
    from adgen.base.toolchain import zig

    prefix = zig()
    if tuple(command[:len(prefix)]) != prefix or len(command) <= len(prefix):
        return None
    driver, args = command[len(prefix)], list(command[len(prefix) + 1:])
    if driver not in ("cc", "c++") or not links(args):
        return None
    where = zig_env(prefix)
    if where is None:
        return None
    cache, version = where
    target, cpu, mode = _variant(args)
    kinds = [COMPILER_RT] + ([LIBCXX] if _links_libcxx(driver, args) else [])
    folder = cache / "adgen" / f"runtimes-{_safe(version)}"
    markers = {kind: folder / _safe(f"{kind}-{target}-{cpu}-{mode}") for kind in kinds}
    missing = [kind for kind in kinds if not markers[kind].exists()]
    if missing and not folder.is_dir():  # (a cache from before the markers: zig's own artefacts say)
        adopted = [kind for kind in missing if next((cache / "o").glob(f"*/{ARTEFACTS[kind]}"), None)]
        remember([markers[kind] for kind in adopted])
        missing = [kind for kind in missing if kind not in adopted]
    return list(markers.values()), message(missing, target, mode, cache) if missing else ""


def message(kinds: list[str], target: str, mode: str, cache: Path) -> str:
    """The line said before a link builds `kinds` (COMPILER_RT, LIBCXX)."""
    what = " and ".join(NAMES[kind] for kind in kinds)
    machine = "this machine" if target == "native" else target
    if LIBCXX in kinds:
        takes = "a minute or more"
    else:
        takes = "about 15 s" if mode == "debug" else "a few seconds"
    home = Path.home()
    shown = f"~{os.sep}{cache.relative_to(home)}" if cache.is_relative_to(home) and cache != home else str(cache)
    return (f"adgen: building {what} for {machine} once ({takes}; zig caches {'them' if len(kinds) > 1 else 'it'} "
            f"in {shown})")


def remember(markers: Sequence[Path]) -> None:
    """Records that the runtimes of `markers` are built (nothing, where they cannot be written:
    the line is printed again)."""
    for marker in markers:
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
        except OSError:
            pass


def links(args: Sequence[str]) -> bool:
    """Whether a C driver's arguments make it link: an input, and no flag that stops it before."""
    if any(a in _NO_LINK or a.startswith("-print-") for a in args):
        return False
    return any(not a.startswith("-") and (i == 0 or args[i - 1] not in WITH_VALUE) for i, a in enumerate(args))


def zig_env(prefix: Sequence[str]) -> tuple[Path, str] | None:
    """zig's global cache folder and version, as `zig env` says them; None where it does not."""
    try:
        out = subprocess.run([*prefix, "env"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    cache = re.search(r'global_cache_dir"?\s*[=:]\s*"((?:[^"\\]|\\.)*)"', out)
    version = re.search(r'(?:^|[\s.{,"])version"?\s*[=:]\s*"([^"]+)"', out, re.M)
    if not cache or not version:
        return None
    return Path(cache.group(1).replace("\\\\", "\\")).absolute(), version.group(1)  # (zig's, from its cwd: ours)


def _variant(args: Sequence[str]) -> tuple[str, str, str]:
    """What zig builds a runtime for, from a link's arguments: the target (`native` where none is
    named), the CPU (the last -mcpu= or -march=) and the optimization mode, as zig's driver
    maps -O: `small` (-Os, -Oz), `fast` (-O1 to -O4, -Ofast), else `debug`."""
    target, cpu, mode = "native", "native", "debug"
    for i, a in enumerate(args):
        if a in ("-target", "--target") and i + 1 < len(args):
            target = args[i + 1]
        elif a.startswith(("--target=", "-target=")):
            target = a.split("=", 1)[1]
        elif a.startswith(("-mcpu=", "-march=")):
            cpu = a.split("=", 1)[1]
        elif a.startswith("-O"):
            level = a[2:]
            mode = "small" if level in ("s", "z") else "fast" if level in ("1", "2", "3", "4", "fast") else "debug"
    return target, cpu, mode


def _links_libcxx(driver: str, args: Sequence[str]) -> bool:
    """Whether the link takes the bundled libc++: `zig c++`'s own, or `-lc++` (`-lstdc++`, to
    zig), unless a flag leaves the C++ library out."""
    if any(a in ("-nostdlib++", "-nostdlib", "-nodefaultlibs") for a in args):
        return False
    return driver == "c++" or any(a in ("-lc++", "-lstdc++") for a in args)


def _safe(name: str) -> str:
    """A name for a file, of any target triple or CPU name."""
    return re.sub(r"[^\w.+-]", "_", name)


__all__ = ["run_link", "quietly", "pending", "message", "remember", "links", "zig_env"]
