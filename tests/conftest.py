"""Shared helpers: run the adgen command in-process, and write small C files."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from adgen.frontend.cli import main

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "specs" / "golden"


@dataclass
class Result:
    status: int
    out: str
    err: str


@pytest.fixture
def adgen(capsys):
    """Runs `adgen ARGS…` in this process and returns its exit status and output."""

    def run(*args: str) -> Result:
        capsys.readouterr()
        status = main([str(a) for a in args])
        captured = capsys.readouterr()
        return Result(status, captured.out, captured.err)

    return run


@pytest.fixture
def c_file(tmp_path):
    """Writes a C source under tmp_path and returns its path."""

    def write(text: str, name: str = "src.c") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    return write


def zig_cc(*args: str, cxx: bool = False) -> list[str]:
    return [sys.executable, "-m", "ziglang", "c++" if cxx else "cc", *args]
