"""Folders of adgen's in the user's cache, `$XDG_CACHE_HOME/adgen/NAME` (`~/.cache/adgen/NAME`),
whose contents a process runs (a library `adgen.load` opens, compiled templates): made mode
0700 and checked each time, never a shared temporary directory, where another user may prepare
the folder. Their parent, `adgen`, is the user's and closed to others' writes (then no one else
can swap a folder in it)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class NotPrivate(Exception):
    """A folder that is not the user's alone: `why`, a clause (`has mode 0777: others may write it`)."""

    def __init__(self, folder: Path, why: str):
        super().__init__(f"{folder} {why}")
        self.folder, self.why = folder, why


def cache_folder(name: str) -> Path:
    """`$XDG_CACHE_HOME/adgen/NAME` (a relative XDG_CACHE_HOME is ignored, as the XDG spec says)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "adgen" / name


def private_folder(name: str, close_parent: bool = True) -> Path:
    """`cache_folder(name)`, made if need be (mode 0700, whatever the umask; `adgen`, where it is
    the user's and others may write it, closed to their writes unless not `close_parent`) and
    checked: raises OSError where it cannot be made, NotPrivate where it or `adgen` is not the
    user's alone."""
    folder = cache_folder(name)
    folder.parent.parent.mkdir(parents=True, exist_ok=True)
    for made in (folder.parent, folder):
        try:
            made.mkdir(mode=0o700)
            os.chmod(made, 0o700)  # (whatever the umask)
        except FileExistsError:
            pass
        info = os.lstat(made)
        if close_parent and made != folder and stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and \
                info.st_mode & 0o022:
            os.chmod(made, stat.S_IMODE(info.st_mode) & ~0o022)  # (adgen's, made under a lax umask)
        why = why_not_private(made, everyone=0o022 if made != folder else 0o077)
        if why:
            raise NotPrivate(made, why)
    return folder


def optional_private_folder(name: str) -> Path | None:
    """`private_folder(name)` for a cache adgen can do without (compiled templates, parsers, MPI's
    rules): None where it cannot be made or is not the user's alone (the work is then done again
    at each build). Its parent is left as it is."""
    try:
        return private_folder(name, close_parent=False)
    except (OSError, RuntimeError, NotPrivate):  # (RuntimeError: no home folder to be found)
        return None


def why_not_private(folder: Path, everyone: int) -> str:
    """Why `folder` is not a real directory of this user's that no one else may write (nor, with
    `everyone` 0o077, read or enter); "" where it is."""
    info = os.lstat(folder)
    return ("is not a directory" if not stat.S_ISDIR(info.st_mode) else
            f"belongs to user {info.st_uid}, not to you ({os.geteuid()})" if info.st_uid != os.geteuid() else
            f"has mode {stat.S_IMODE(info.st_mode):04o}: others may {'write' if info.st_mode & 0o022 else 'read'} it"
            if info.st_mode & everyone else "")
