"""Where `adgen.load` keeps its builds: a folder of the user's cache only the user can write
(never a shared temporary directory, where another user may prepare the folder whose library
this process would run), each build's files checked by their SHA-256 digests before they are
opened (a library cut short would crash the process), and a lock under which one process builds
or checks a folder while others wait."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from adgen.base.user_cache import NotPrivate, cache_folder, private_folder
from adgen.commands.load_errors import CacheError


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/adgen/load` (`~/.cache/adgen/load`), made mode 0700 and checked at each
    load (base/user_cache.py): never a shared temporary directory, where another user may
    prepare the folder whose library this process would run."""
    try:
        return private_folder("load")
    except NotPrivate as exc:
        raise CacheError(f"adgen: error: adgen.load's cache {exc.folder} {exc.why}; adgen.load runs the code it finds "
                         f"there, so it must be yours alone (remove it, or `chmod 700` it if it is yours; or set "
                         "XDG_CACHE_HOME elsewhere, or pass build_dir=)\n") from exc
    except OSError as exc:
        raise CacheError(f"adgen: error: cannot make adgen.load's cache {cache_folder('load')}: "
                         f"{exc.strerror or exc} (set "
                         "XDG_CACHE_HOME to a folder of yours, or pass build_dir=)\n") from exc


@contextmanager
def locked(path: Path, wait: bool = True):
    """An exclusive lock on `path` (a file, made if need be, or a folder: a user's `build_dir`,
    where no lock file is left behind), held while one process builds or checks and opens a
    library, so that concurrent loads of one source build it once. Without `wait`, a lock
    another process holds raises BlockingIOError."""
    if path.is_dir():
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    else:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        yield
    finally:
        os.close(fd)  # (releases the lock)


_DIGESTS = "adgen-load.sha256"


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def record_digests(folder: Path, names: list[str]) -> None:
    """`sha256sum`'s lines for the files a cached build is loaded from."""
    (folder / _DIGESTS).write_text("".join(f"{_sha256(folder / n)}  {n}\n" for n in names))


def verified(folder: Path) -> list[str] | None:
    """The files of a cached build when each still has the digest recorded when it was built
    (not a library cut short, which would crash the process that opened it); else None."""
    try:
        lines = [line.split("  ", 1) for line in (folder / _DIGESTS).read_text().splitlines()]
        if lines and all(len(e) == 2 and _sha256(folder / e[1]) == e[0] for e in lines):
            return [name for _, name in lines]
    except (OSError, ValueError):
        pass
    return None


UNUSED_DAYS = 30  # a build not loaded for this long is removed by the next build


def sweep(root: Path, keep: str) -> None:
    """Removes the builds of the cache no load has opened for UNUSED_DAYS (the folder's time,
    which each load sets), each under its lock, taken without waiting: one in use is left."""
    old = time.time() - UNUSED_DAYS * 86400
    for folder in root.iterdir():
        key = folder.name
        if key == keep or "." in key or not folder.is_dir() or folder.stat().st_mtime > old:
            continue
        try:
            with locked(root / f"{key}.lock", wait=False):
                shutil.rmtree(folder, ignore_errors=True)
                os.unlink(root / f"{key}.lock")
        except OSError:  # (in use)
            pass

