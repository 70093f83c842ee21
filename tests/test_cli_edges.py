"""The adgen command at the edges of its use (issue 42): outputs that are symbolic links, paths
that cannot be written, the output set written all or none, SIGTERM during a build, stdout a
pipe nobody reads, compiler flags before `--`, and options adgen check has no use for."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT, adgen_compiler, compile_c

GOOD = "// @diff(f_grad: (active) -> active)\ndouble f(double x) { return x * x; }\n"
ENZYME = """double __enzyme_autodiff(void *, ...);
static double sq(double x) { return x * x; }
double dsq(double x) { return __enzyme_autodiff((void *)sq, x); }
"""
CLI = [sys.executable, "-m", "adgen.commands.cli"]


def _leftovers(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith((".tmp", ".old")))


# ------------------------------------------------------------------------- symbolic links (item 2)

@pytest.mark.slow
def test_adgen_cc_replaces_an_output_that_is_a_symlink(tmp_path):
    (tmp_path / "enzyme.c").write_text(ENZYME)
    (tmp_path / "victim.o").write_text("not to be overwritten\n")
    (tmp_path / "a.o").symlink_to("victim.o")
    adgen_compiler("cc", "-c", "enzyme.c", "-o", "a.o", cwd=tmp_path)
    assert (tmp_path / "victim.o").read_text() == "not to be overwritten\n"
    assert not (tmp_path / "a.o").is_symlink() and (tmp_path / "a.o").read_bytes().startswith(b"\x7fELF")


def test_adgen_build_replaces_outputs_that_are_symlinks(adgen, c_file, tmp_path):
    src, out = c_file(GOOD), tmp_path / "out"
    out.mkdir()
    (tmp_path / "victim").write_text("kept\n")
    for name in ("src.adgen.h", "src.adgen.o"):
        (out / name).symlink_to(tmp_path / "victim")
    assert adgen("build", "-q", src, "-o", out).status == 0
    assert (tmp_path / "victim").read_text() == "kept\n"
    assert not any((out / n).is_symlink() for n in ("src.adgen.h", "src.adgen.o"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.slow
def test_an_output_that_is_a_pipe_or_device_is_written_into_not_replaced(tmp_path):
    """As `-o /dev/null` (a configure script's): tried on a named pipe, which a mistake would
    not make into a file of the machine's /dev."""
    (tmp_path / "enzyme.c").write_text(ENZYME)
    os.mkfifo(tmp_path / "pipe")
    received = []
    reader = threading.Thread(target=lambda: received.append((tmp_path / "pipe").read_bytes()), daemon=True)
    reader.start()
    done = adgen_compiler("cc", "-c", "enzyme.c", "-o", "pipe", cwd=tmp_path, check=False)
    if reader.is_alive() and stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode):
        os.close(os.open(tmp_path / "pipe", os.O_WRONLY | os.O_NONBLOCK))  # nothing written: let the reader go
    reader.join(timeout=10)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode)
    assert received[0].startswith(b"\x7fELF")


# ------------------------------------------------------------------- unwritable outputs (item 7)

def test_output_directory_that_is_a_file(adgen, c_file, tmp_path):
    src, blocker = c_file(GOOD), tmp_path / "blocker"
    blocker.write_text("a file\n")
    for out in (blocker, blocker / "sub"):
        result = adgen("generate", src, "-o", out)
        assert result.status == 1, result.err
        assert result.err.splitlines()[0] == \
            f"adgen: error: cannot write {out / 'src.adgen.h'}: {blocker} is not a directory"
    assert blocker.read_text() == "a file\n"


def _refuse_writes_in(monkeypatch, folder: Path) -> None:
    """What an unwritable directory does for one who is not root: no file made in it."""
    mkstemp, mkdir = tempfile.mkstemp, Path.mkdir

    def refusing_mkstemp(*args, dir=None, **kwargs):
        if dir is not None and Path(dir).resolve() == folder.resolve():
            raise PermissionError(13, "Permission denied", str(dir))
        return mkstemp(*args, dir=dir, **kwargs)

    def refusing_mkdir(self, *args, **kwargs):
        if self.resolve().parent == folder.resolve():
            raise PermissionError(13, "Permission denied", str(self))
        return mkdir(self, *args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", refusing_mkstemp)
    monkeypatch.setattr(Path, "mkdir", refusing_mkdir)


@pytest.mark.parametrize("real", [pytest.param(True, marks=pytest.mark.skipif(
    os.name != "posix" or os.geteuid() == 0, reason="root writes in any directory")), False],
    ids=["chmod", "simulated"])
def test_output_directory_without_write_permission(adgen, c_file, tmp_path, monkeypatch, real):
    src, locked = c_file(GOOD), tmp_path / "locked"
    locked.mkdir()
    if real:
        locked.chmod(0o555)
    else:
        _refuse_writes_in(monkeypatch, locked)
    try:
        result = adgen("generate", src, "-o", locked)
        assert result.status == 1, result.err
        assert result.err.splitlines()[0] == f"adgen: error: cannot write {locked / 'src.adgen.h'}: permission denied"
        result = adgen("generate", src, "-o", locked / "sub")
        assert result.status == 1, result.err
        assert result.err.splitlines()[0] == (f"adgen: error: cannot write {locked / 'sub' / 'src.adgen.h'}: cannot "
                                              f"create directory {locked / 'sub'}: permission denied")
    finally:
        locked.chmod(0o755)
    assert os.listdir(locked) == []


@pytest.mark.slow
def test_adgen_cc_output_in_a_missing_directory(tmp_path):
    (tmp_path / "enzyme.c").write_text(ENZYME)
    done = adgen_compiler("cc", "-c", "enzyme.c", "-o", "nowhere/a.o", cwd=tmp_path, check=False)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == "adgen: error: cannot write nowhere/a.o: no such file or directory"
    assert not (tmp_path / "nowhere").exists()


# ---------------------------------------------------------------------- all outputs or none (item 8)

def test_build_writes_all_outputs_or_none(adgen, c_file, tmp_path):
    src, out = c_file(GOOD), tmp_path / "out"
    out.mkdir()
    for ext in ("h", "c"):
        (out / f"src.adgen.{ext}").write_text(f"stale {ext}\n")
    (out / "src.adgen.o").mkdir()
    result = adgen("build", src, "-o", out)
    assert result.status == 1
    assert result.err.splitlines()[0] == f"adgen: error: cannot write {out / 'src.adgen.o'}: it is a directory"
    assert [(out / f"src.adgen.{e}").read_text() for e in ("h", "c")] == ["stale h\n", "stale c\n"]
    assert sorted(os.listdir(out)) == ["src.adgen.c", "src.adgen.h", "src.adgen.o"]


def test_a_depfile_that_cannot_be_written_writes_nothing(adgen, c_file, tmp_path):
    src, blocker = c_file(GOOD), tmp_path / "blocker"
    blocker.write_text("a file\n")
    result = adgen("generate", src, "-o", tmp_path / "out", "--depfile", blocker / "src.d")
    assert result.status == 1
    assert result.err.splitlines()[0] == f"adgen: error: cannot write {blocker / 'src.d'}: {blocker} is not a directory"
    assert not (tmp_path / "out").exists()


def test_a_rename_failing_midway_puts_back_what_was_there(tmp_path, monkeypatch):
    from adgen.base.diagnostics import AdgenError
    from adgen.commands import outputs

    (tmp_path / "a").write_text("old a\n")  # b is new, c's rename fails
    (tmp_path / "victim").write_text("victim\n")
    (tmp_path / "c").symlink_to("victim")
    replace, calls = os.replace, []

    def failing(source, target):
        calls.append(target)
        if Path(target).name == "c":
            raise OSError(28, "No space left on device")
        return replace(source, target)

    monkeypatch.setattr(outputs.os, "replace", failing)
    with pytest.raises(AdgenError) as raised:
        outputs.write_all({tmp_path / "a": "new a\n", tmp_path / "b": b"new b\n", tmp_path / "c": "new c\n"})
    assert raised.value.diagnostics[0].message == f"cannot write {tmp_path / 'c'}: no space left on device"
    assert (tmp_path / "a").read_text() == "old a\n"
    assert not (tmp_path / "b").exists()
    assert os.readlink(tmp_path / "c") == "victim" and (tmp_path / "victim").read_text() == "victim\n"
    assert sorted(os.listdir(tmp_path)) == ["a", "c", "victim"]


def test_directories_made_for_outputs_that_were_not_written_are_removed(tmp_path):
    from adgen.base.diagnostics import AdgenError
    from adgen.commands import outputs

    (tmp_path / "x.o").mkdir()
    with pytest.raises(AdgenError):
        outputs.write_all({tmp_path / "new" / "deeper" / "x.h": "h\n", tmp_path / "x.o": b"o"})
    assert sorted(os.listdir(tmp_path)) == ["x.o"]


# --------------------------------------------------------------------------------- SIGTERM (item 9)

def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process, from /proc."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[int(name)] = (int(stat.rsplit(b")", 1)[1].split()[1]), cmdline)
    return found


def _descendants(root: int, processes) -> set[int]:
    found, todo = set(), [root]
    while todo:
        parent = todo.pop()
        for pid, (ppid, _) in processes.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                todo.append(pid)
    return found


def _running(pid: int) -> bool:
    """Whether a process lives and is not a zombie."""
    try:
        return b") Z" not in Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False


def _stopped_cleanly(run: subprocess.Popen, seen: set[int], marker: str, within: float = 5) -> None:
    """No process `run` started (those `seen`, and any whose command line names `marker`) is left
    after `within` seconds."""
    for _ in range(int(within * 10)):  # a moment for the killed to be reaped
        left = {pid: cmd for pid, (_, cmd) in _processes().items()
                if (pid in seen or marker in cmd) and pid != run.pid and _running(pid)}
        if not left:
            return
        time.sleep(0.1)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    pytest.fail(f"left running: {left}")


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads processes from /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.slow
def test_a_signal_during_compilation_ends_the_compilers_and_removes_temporaries(tmp_path, signum):
    private = tmp_path / "tmp"
    private.mkdir()
    run = subprocess.Popen([*CLI, "build", "-q", "-j", "2", str(ROOT / "bench" / "programs" / "gpt2.c"), "-o",
                            str(tmp_path / "out")], env=os.environ | {"TMPDIR": str(private)},
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and run.poll() is None:
            processes = _processes()
            children = _descendants(run.pid, processes)
            seen |= children
            compiling = [pid for pid in children if pid in processes and "-cc1" in processes[pid][1]]
            if len(compiling) >= 2:  # the derivative module's parts, by clangs the worker threads run
                break
            time.sleep(0.02)
        else:
            pytest.fail("no two clang -cc1 ran at once: " +
                        (run.communicate()[1] if run.poll() is not None else "timed out"))
        run.send_signal(signum)
        _stopped_cleanly(run, seen, str(private), within=1)  # at once, not when they are done
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 128 + signum, err
    assert (out, err) == ("", "")
    # (zig's scratch cache, base/zig_cache.py, is left to the next adgen run however adgen exits)
    assert [n for n in os.listdir(private) if not n.startswith("adgen-zig-")] == []
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads processes from /proc")
def test_sigterm_ends_the_children_of_worker_threads_and_theirs(tmp_path):
    """A worker whose clang has been ended asks for its next one while the program unwinds; it is
    refused, and the program exits after its workers (one run in 160, under load, a `sleep 62`
    once outlived it: CPython 3.11's interrupted join had taken a worker still running for ended)."""
    marker = f"{os.getpid()}{time.time_ns() % 100000}"
    program = textwrap.dedent(f"""
        import subprocess, sys, threading
        from adgen.commands import stopping
        stopping.install()
        refused = []
        def work():  # a compiler driver whose compiler is a child of its own (`zig cc`)
            subprocess.run(["sh", "-c", "sleep 60.{marker} & sleep 61.{marker}; wait"])
            try:
                subprocess.run(["sleep", "62.{marker}"])  # the next part, asked for after the stop
            except KeyboardInterrupt:
                refused.append(True)
        workers = [threading.Thread(target=work) for _ in range(2)]
        for w in workers:
            w.start()
        print("started", flush=True)
        try:
            for w in workers:
                w.join()
        except KeyboardInterrupt as exc:
            for w in workers:  # (CPython 3.11 returns at once where the stop interrupted the first join)
                w.join()
            stopping.finish()  # as the program does: it waits for the workers
            print("refused", len(refused), flush=True)
            sys.exit(stopping.status(exc))
        """)
    run = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    try:
        assert run.stdout.readline() == "started\n"
        deadline = time.monotonic() + 30
        while len([p for p, (_, cmd) in _processes().items() if marker in cmd and cmd.startswith("sleep ")]) < 4:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        seen = _descendants(run.pid, _processes())
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=30) == 128 + signal.SIGTERM
        assert run.stdout.readline() == "refused 2\n"  # neither worker started its next process
    finally:
        if run.poll() is None:
            run.kill()
    _stopped_cleanly(run, seen, marker)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads processes from /proc")
@pytest.mark.slow
def test_sigterm_while_the_main_thread_is_busy_in_c_code(tmp_path):
    """Python runs a handler between bytecodes only: llvmlite's optimizer, or a derivative adgen
    check calls, may hold the main thread for long."""
    # The C code says it has started (a signal sent before would be handled in Python, as it should)
    (tmp_path / "spin.c").write_text(
        "#include <unistd.h>\n"
        "void spin(void) { write(1, \"started\\n\", 8); for (;;) __asm__ volatile(\"\"); }\n")
    compile_c("-shared", "-fPIC", "-O1", tmp_path / "spin.c", "-o", tmp_path / "libspin.so")
    marker = f"{os.getpid()}{time.time_ns() % 100000}"
    program = textwrap.dedent(f"""
        import ctypes, subprocess
        from adgen.commands import stopping
        stopping.install()
        subprocess.Popen(["sleep", "63.{marker}"])
        ctypes.CDLL({str(tmp_path / "libspin.so")!r}).spin()
        """)
    run = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    try:
        assert run.stdout.readline() == "started\n"
        seen = _descendants(run.pid, _processes())
        run.send_signal(signal.SIGTERM)
        _stopped_cleanly(run, seen, marker, within=1)  # at once, while the main thread still spins
        assert run.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if run.poll() is None:
            run.kill()


# ----------------------------------------------------------------------------- broken pipe (item 10)

@pytest.mark.parametrize("args", [["cc", "--adgen-help"], ["c++", "--adgen-help"], ["--help"]],
                         ids=["cc", "c++", "adgen"])
def test_stdout_a_pipe_nobody_reads(args):
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([*CLI, *args], stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert done.returncode in (0, 141), done.stderr  # 0: argparse's help, which ignores the error itself
    assert done.stderr == ""


# ------------------------------------------------------------------------------ usage errors (item 11)

def _usage_error(capsys, *args) -> str:
    from adgen.commands.cli import main

    with pytest.raises(SystemExit) as exit_:
        main([str(a) for a in args])
    assert exit_.value.code == 2
    return capsys.readouterr().err.splitlines()[-1]


def test_compiler_flags_before_the_dashes_say_where_they_go(c_file, capsys):
    src = c_file(GOOD)
    assert _usage_error(capsys, "build", src, "-O2") == \
        f"adgen: error: unrecognized arguments: -O2 (compiler flags go after `--`: adgen build {src} -- -O2)"
    assert _usage_error(capsys, "generate", src, "-ffast-math", "-o", "out", "--", "-DX") == \
        ("adgen: error: unrecognized arguments: -ffast-math (compiler flags go after `--`: adgen generate "
         f"{src} -o out -- -ffast-math -DX)")
    assert _usage_error(capsys, "build", src, "--nonsense") == "adgen: error: unrecognized arguments: --nonsense"


@pytest.mark.parametrize("option, why", [
    (["-o", "out"], "it is for adgen build and adgen generate; adgen check writes no files"),
    (["--depfile", "f.d"], "it is for adgen build and adgen generate; adgen check writes no files"),
    (["--emit-llvm"], "it is for adgen build; adgen check writes no files"),
    (["--explain"], "it is for adgen build; adgen check prints its table only"),
    (["--target", "x86_64-linux-gnu"], "it is for adgen build; adgen check runs the derivatives on this machine"),
    (["--march", "native"], "it is for adgen build; adgen check runs the derivatives on this machine")],
    ids=["-o", "--depfile", "--emit-llvm", "--explain", "--target", "--march"])
def test_check_refuses_the_options_of_build(c_file, capsys, option, why):
    error = _usage_error(capsys, "check", c_file(GOOD), *option)
    assert error.startswith(f"adgen check: error: argument {option[0]}: {why}")


def test_check_of_a_missing_source_is_a_plain_error(adgen, tmp_path):
    result = adgen("check", tmp_path / "nowhere.c")
    assert result.status == 1 and f"adgen: error: no such file: {tmp_path / 'nowhere.c'}" in result.err, result.err
