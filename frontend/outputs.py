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
