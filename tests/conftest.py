"""Shared helpers: run the adgen command in-process, and write small C files."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from adgen.commands.cli import main

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "specs" / "golden"


@dataclass
class Result:
    status: int
    out: str
    err: str


def quick_first(argnames: str, values, kept: int = 1, **kwargs):
    """`pytest.mark.parametrize(argnames, values, **kwargs)` with the values after the first
    `kept` marked slow: the quick run (`pytest -m "not slow"`) tries the first, the full run all."""
    many = "," in argnames
    marked = []
    for i, value in enumerate(values):
        if i < kept:
            marked.append(value)
        elif isinstance(value, type(pytest.param())):  # (a pytest.param: its marks kept)
            marked.append(pytest.param(*value.values, marks=[*value.marks, pytest.mark.slow], id=value.id))
        else:
            marked.append(pytest.param(*(value if many else (value,)), marks=pytest.mark.slow))
    return pytest.mark.parametrize(argnames, marked, **kwargs)


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


def adgen_compiler(driver: str, *args, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    """`adgen cc` or `adgen c++` (`driver`) run on a compiler's command line, in `cwd`; with
    `check`, it must succeed."""
    done = subprocess.run([sys.executable, "-m", "adgen.commands.cli", driver, *map(str, args)], cwd=cwd,
                          capture_output=True, text=True)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def zig_cc(*args: str, cxx: bool = False) -> list[str]:
    return [sys.executable, "-m", "ziglang", "c++" if cxx else "cc", *args]


def compile_c(*args: str) -> None:
    done = subprocess.run(zig_cc(*map(str, args)), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def build_lib(tmp_path, adgen):
    """`adgen build` a C source, compile it as users do, and load both as one shared library."""
    import ctypes

    count = [0]

    def build(source: str, *flags: str, name: str = "src.c"):
        count[0] += 1
        work = tmp_path / f"lib{count[0]}"
        work.mkdir()
        src = work / name
        src.write_text(source)
        out = work / "out"
        result = adgen("build", "-q", src, "-o", out, *flags)
        assert result.status == 0, result.err
        stem = src.stem
        compile_c("-c", "-O2", "-fPIC", "-I", out, src, "-o", work / f"{stem}.o")
        compile_c("-shared", work / f"{stem}.o", out / f"{stem}.adgen.o", "-o", work / "lib.so", "-lm")
        return ctypes.CDLL(str(work / "lib.so"))

    return build


def build_explained(work: Path, source: str):
    """`adgen build --explain` a C source in `work` and compile it as users do: the shared library
    of both, and what `--explain` printed."""
    import contextlib
    import ctypes
    import io

    src = work / "src.c"
    src.write_text(source)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["build", "-q", "--explain", str(src), "-o", str(work / "out")]) == 0
    compile_c("-c", "-O2", "-fPIC", "-I", work / "out", src, "-o", work / "src.o")
    compile_c("-shared", work / "src.o", work / "out" / "src.adgen.o", "-o", work / "lib.so", "-lm")
    return ctypes.CDLL(str(work / "lib.so")), printed.getvalue()


def longer_run(long_run) -> tuple[int, int, int]:
    """A test module's command `python tests/test_X.py N [SEED]`: its `long_run(N, SEED, folder)`
    in a temporary folder; N and the two counts it gives."""
    import tempfile

    count, first = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1
    with tempfile.TemporaryDirectory() as tmp:
        return (count, *long_run(count, first, Path(tmp)))


def central_difference(f, x: float, h: float | None = None) -> float:
    h = h or 1e-6 * max(1.0, abs(x))
    return (f(x + h) - f(x - h)) / (2 * h)


def no_rustc() -> str | None:
    """Why there is no usable rustc (for a skip reason), or None when there is one."""
    from adgen.base.diagnostics import AdgenError
    from adgen.base.toolchain import select_rustc

    try:
        select_rustc()
        return None
    except AdgenError as exc:
        return str(exc)


@pytest.fixture
def rustc_named(monkeypatch):
    """Selects a rustc for adgen (ADGEN_RUSTC) for one test."""
    from adgen.base.toolchain import select_rustc

    def use(path: str, flags: str = "") -> None:
        monkeypatch.setenv("ADGEN_RUSTC", path)
        monkeypatch.setenv("ADGEN_RUSTFLAGS", flags)
        select_rustc.cache_clear()

    yield use
    select_rustc.cache_clear()
