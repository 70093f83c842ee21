"""Writes outputs atomically: each file appears whole or not at all, and nothing is written
until every output of the run has been made."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_all(files: dict[Path, str | bytes]) -> None:
    for path, content in files.items():
        write_atomically(path, content)


def write_atomically(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_depfile(path: Path, targets: list[Path], generated) -> None:
    """A Makefile rule naming every file the outputs depend on: each source and the headers it
    includes, so a build system reruns adgen when one of them changes."""
    deps: list[str] = []
    for g in generated:
        deps.append(str(g.source.path.resolve()))
        if g.unit is not None:
            deps += sorted(g.unit.includes)
    escape = lambda p: str(p).replace(" ", "\\ ")  # noqa: E731
    rule = " ".join(escape(t) for t in targets) + ": " + " \\\n  ".join(escape(d) for d in dict.fromkeys(deps))
    write_atomically(path, rule + "\n")
