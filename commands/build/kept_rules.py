"""MPI's rules (templates/mpi_rules.c.j2) compiled once for each MPI installation, not at every
build: their bitcode kept in the user's cache (`~/.cache/adgen/mpi-rules`), by a key of adgen's
version, the rules' text, the compiler and the flags, beside the list of the headers the compile
read (make's rule of it, `clang -M`) with their sizes and times, which each build checks again, as
ccache's direct mode does: an MPI upgraded, a header changed, and the rules are compiled anew.
The cache holds code the build links into the user's object, so it lives in a folder of the user's
alone (base/user_cache.py), each entry written whole (a file of this process's, then renamed);
where that folder cannot be had, the rules are compiled at every build."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from adgen.base.user_cache import optional_private_folder


def key(*parts) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


def _stamp(path: str) -> list | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]


def kept(name: str) -> bytes | None:
    """The bitcode kept under `name` where every header it was compiled from is as it was then."""
    folder = optional_private_folder("mpi-rules")
    if folder is None:
        return None
    try:
        headers = json.loads((folder / f"{name}.json").read_text())
        code = (folder / f"{name}.bc").read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(headers, list) or any(_stamp(path) != stamp for path, stamp in headers):
        return None
    return code


def keep(name: str, code: bytes, rule: str, source: Path) -> None:
    """Keeps `code` under `name`, with the headers make's rule of its compile lists (`clang -M`;
    but the source)."""
    folder = optional_private_folder("mpi-rules")
    if folder is None or not code:
        return
    headers = [(os.path.abspath(path), _stamp(path)) for path in _dependencies(rule) if path != str(source)]
    if not headers or any(stamp is None for _, stamp in headers):
        return
    for suffix, data in ((".bc", code), (".json", json.dumps(headers).encode())):  # (the list last: it says whole)
        own = folder / f"{name}.{os.getpid()}{suffix}"
        try:
            own.write_bytes(data)
            os.replace(own, folder / f"{name}{suffix}")
        except OSError:
            return
    _forget_old(folder, name)


KEPT = 16  # entries (an MPI installation and set of flags, for one version of adgen each: 350 KB)


def _forget_old(folder: Path, name: str) -> None:
    """Entries beyond the KEPT most recently written removed (another adgen's, another MPI's)."""
    try:
        entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[KEPT:]:
            if old.stem != name:
                old.unlink(missing_ok=True)
                old.with_suffix(".bc").unlink(missing_ok=True)
    except OSError:
        pass


def _dependencies(text: str) -> list[str]:
    """The files a make-style dependency file lists after its target (`a.o: x.c y.h \\`, spaces
    in names escaped)."""
    body = text.replace("\\\n", " ").partition(": ")[2]
    paths, word, escaped = [], "", False
    for ch in body:
        if escaped:
            word, escaped = word + ch, False
        elif ch == "\\":
            escaped = True
        elif ch.isspace():
            if word:
                paths.append(word)
            word = ""
        else:
            word += ch
    return paths + ([word] if word else [])
