"""Writes a run's outputs as one: each file is first written aside (a temporary file in its own
directory), then all are moved into place together, or none is: when a move fails midway, the
files already moved are put back as they were. A path that is a symbolic link is replaced, not
written through (as a compiler's -o replaces it); a device or a pipe (`-o /dev/null`) is written
into, last. A path that cannot be written is the user's error, naming it and why, not a bug in
adgen."""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
from pathlib import Path

from adgen.base.diagnostics import AdgenError, error


def write_all(files: dict[Path, str | bytes], make_dirs: bool = True) -> None:
    """Every file of `files`, or none (the directories it made removed again). `make_dirs`:
    create missing directories (`-o DIR`), as a compiler's `-o FILE` does not."""
    made: list[Path] = []
    staged: dict[Path, str] = {}
    special = {path: content for path, content in files.items() if _is_special(path)}
    try:
        for path, content in files.items():
            if path in special:
                continue
            if make_dirs:
                _make_directories(path, made)
            staged[path] = _stage(path, content)
        _move_into_place(staged)
    except BaseException:
        for tmp in staged.values():
            _remove(tmp)
        for directory in reversed(made):
            try:
                directory.rmdir()
            except OSError:
                pass
        raise
    for path, content in special.items():
        try:
            with open(path, "wb") as f:
                f.write(content.encode("utf-8") if isinstance(content, str) else content)
        except OSError as exc:
            raise _unwritable(path, exc)


def _is_special(path: Path) -> bool:
    """Whether `path` is a device, a pipe or a socket (`/dev/null`), not to be replaced by a file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def depfile_rule(targets: list[Path], generated) -> str:
    """A Makefile rule naming every file the outputs depend on: each source and the headers it
    includes, so a build system reruns adgen when one of them changes."""
    deps: list[str] = []
    for g in generated:
        deps.append(str(g.source.path.resolve()))
        if g.unit is not None:
            deps += sorted(g.unit.includes)
    escape = lambda p: str(p).replace(" ", "\\ ")  # noqa: E731
    return " ".join(escape(t) for t in targets) + ": " + " \\\n  ".join(escape(d) for d in dict.fromkeys(deps)) + "\n"


def _make_directories(path: Path, made: list[Path]) -> None:
    """The missing directories above `path`, outermost first, each recorded in `made` (to be
    removed again if the run writes nothing)."""
    missing, directory = [], path.parent
    while not directory.is_dir() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for directory in reversed(missing):
        try:
            directory.mkdir()
        except FileExistsError:
            if directory.is_dir():  # made meanwhile by another process
                continue
            raise _unwritable(path, None)
        except OSError as exc:
            raise _unwritable(path, exc, f"cannot create directory {directory}: ")
        made.append(directory)


def _stage(path: Path, content: str | bytes) -> str:
    """`content` in a temporary file beside `path`: its name."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _unwritable(path, exc)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
    except BaseException as exc:
        _remove(tmp)
        raise _unwritable(path, exc) if isinstance(exc, OSError) else exc
    return tmp


def _move_into_place(staged: dict[Path, str]) -> None:
    """Each temporary file renamed to its path; on a failure, those renamed already undone."""
    done: list[tuple[Path, str | None]] = []
    try:
        for path, tmp in staged.items():
            backup = _backup(path)
            try:
                os.replace(tmp, path)
            except BaseException as exc:
                _remove(backup)
                raise _unwritable(path, exc) if isinstance(exc, OSError) else exc
            done.append((path, backup))
    except BaseException:
        for path, backup in reversed(done):
            try:
                if backup is None:
                    os.unlink(path)
                else:
                    os.replace(backup, path)
            except OSError:
                pass
        raise
    for _, backup in done:
        _remove(backup)


def _backup(path: Path) -> str | None:
    """A second name for the file (or link) now at `path`, to put it back if the run fails: a
    hard link, else a copy. None when there is nothing there."""
    if not os.path.lexists(path):
        return None
    if path.is_dir() and not path.is_symlink():
        raise _unwritable(path, None)
    backup = str(path.with_name(f".{path.name}.{secrets.token_hex(4)}.old"))
    try:
        try:
            os.link(path, backup, follow_symlinks=False)
        except OSError:  # a file system without hard links
            if path.is_symlink():
                os.symlink(os.readlink(path), backup)
            else:
                shutil.copy2(path, backup)
    except OSError as exc:
        _remove(backup)
        raise _unwritable(path, exc)
    return backup


def _unwritable(path: Path, exc: BaseException | None, doing: str = "") -> AdgenError:
    """Why `path` cannot be written, as the user's error: a directory on the way that is a
    file, the path itself a directory, or what the system said."""
    for directory in reversed(path.parents):
        if os.path.lexists(directory) and not directory.is_dir():
            return AdgenError(error(f"cannot write {path}: {directory} is not a directory"))
    if path.is_dir() and not path.is_symlink():
        return AdgenError(error(f"cannot write {path}: it is a directory"))
    reason = (getattr(exc, "strerror", None) or str(exc)) if exc is not None else "it cannot be created"
    return AdgenError(error(f"cannot write {path}: {doing}{reason[:1].lower()}{reason[1:]}"))


def _remove(name: str | None) -> None:
    if name is not None:
        try:
            os.unlink(name)
        except OSError:
            pass
