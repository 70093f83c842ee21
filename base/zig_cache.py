"""A zig cache of the process's own for the compiles adgen runs (issue 42).

`zig cc -c` keeps every object it compiles in its local cache, which outside a zig project is its
global one (`~/.cache/zig/o`), keyed by the source's text, flags and paths. adgen compiles the
user's sources through wrappers in temporary folders, so each build stored their bitcode there
for good, never to be found again (a 5 MB source: 14 MB a build). zig is pointed, through
ZIG_LOCAL_CACHE_DIR, at a temporary folder instead: removed when the process exits, or by the
next adgen process where it could not be (the command line ends by `os._exit`; a kill). zig's
global cache, where linking builds the C library and compiler-rt once, stays the user's.

(zig also stops caching where it is given one of clang's dependency options, `-MP` say, but then
loses the output of `-emit-llvm`.)"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

PREFIX = "adgen-zig-"
LOCK = "lock"  # a file of the folder, locked (flock) while its process lives

_held: list[int] = []  # the lock's descriptor, kept open for the process's life
_mine: dict[int, Path] = {}  # the folder, by the process that made it


@cache
def use_scratch_cache() -> Path | None:
    """Points zig's local cache at a new folder of this process's, unless the user chose one
    (ZIG_LOCAL_CACHE_DIR set); the folder, or None."""
    if os.environ.get("ZIG_LOCAL_CACHE_DIR"):
        return None
    _sweep()
    try:
        folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    except OSError:
        return None  # (no temporary folder: zig caches as it would)
    try:
        _lock(folder)
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    _mine[os.getpid()] = folder
    atexit.register(remove_scratch_cache)
    os.environ["ZIG_LOCAL_CACHE_DIR"] = str(folder)
    return folder


def remove_scratch_cache() -> None:
    """Removes this process's folder (not a forked child's: its parent's), at exit; a process
    ending by `os._exit`, which runs nothing at exit, may call it first. zig is not run after."""
    folder = _mine.pop(os.getpid(), None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _lock(folder: Path) -> None:
    """Locks the folder for as long as this process lives: the lock is taken under another name,
    then renamed, so that no other process finds it unlocked meanwhile."""
    try:
        import fcntl
    except ImportError:  # (Windows: nothing sweeps; the folder is removed at exit)
        return
    staged = folder / f"{LOCK}.new"
    fd = os.open(staged, os.O_CREAT | os.O_WRONLY, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.rename(staged, folder / LOCK)
    _held.append(fd)


def _sweep() -> None:
    """Removes the folders of the adgen processes that ended without removing their own: those
    whose lock no process holds."""
    try:
        import fcntl
    except ImportError:
        return
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            fd = os.open(folder / LOCK, os.O_RDONLY)
        except OSError:
            continue  # not locked yet, or another user's
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # its process lives
            continue
        shutil.rmtree(folder, ignore_errors=True)
        os.close(fd)
