"""A link that makes zig build a runtime for the first time says so, once (issue 43): a first
`adgen.load` spent ~15 s (C++ against the bundled libc++: a minute) with no word on screen; it now
links at its compiles' -O2, whose runtimes zig builds in a few seconds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import adgen
from adgen.base import zig_runtimes
from adgen.base.toolchain import bundled_cc, cxx_command, select_compiler, zig
from adgen.base.zig_runtimes import links, pending, quietly, run_link

SOURCE = """// @diff(f_grad: (active) -> active)
double f(double x) { return x * x; }
"""
RT = "adgen: building clang's compiler runtime for this machine once (about 15 s; zig caches it in {})"
RT_FAST = RT.replace("about 15 s", "a few seconds")  # (the runtime of -O1 to -O3: what adgen.load links with)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """zig's global cache, as this module sees it: an empty folder (zig itself keeps its own)."""
    folder = tmp_path / "zig-cache"
    folder.mkdir()
    monkeypatch.setattr(zig_runtimes, "zig_env", lambda prefix: (folder, "0.17.1"))
    return folder


def _cc(*args: str) -> list[str]:
    return [*bundled_cc(), *args]


def test_a_first_link_says_what_it_builds_then_remembers_it(cache):
    markers, line = pending(_cc("a.o", "-shared", "-o", "a.so"))
    assert line == RT.format(cache)
    assert [m.relative_to(cache).as_posix() for m in markers] == \
        ["adgen/runtimes-0.17.1/compiler-rt-native-baseline-debug"]
    zig_runtimes.remember(markers)
    assert pending(_cc("a.o", "-shared", "-o", "a.so")) == (markers, "")


def test_what_zig_builds_a_runtime_for_keys_it(cache):
    zig_runtimes.remember(pending(_cc("a.o", "-o", "a"))[0])
    assert pending(_cc("-O2", "a.o", "-o", "a"))[1].endswith("(a few seconds; zig caches it in " f"{cache})")
    assert pending(_cc("-O3", "a.o", "-o", "a"))[1]  # (-O1 to -O3 alike: zig's ReleaseFast)
    assert pending(_cc("-Os", "a.o", "-o", "a"))[1]
    assert pending(_cc("-O0", "a.o", "-o", "a"))[1] == ""  # (as no -O: zig's Debug)
    assert pending(_cc("-march=native", "a.o", "-o", "a"))[1]  # the user's CPU after adgen's baseline
    assert "for aarch64-linux-gnu once" in pending(_cc("-target", "aarch64-linux-gnu", "a.o", "-o", "a"))[1]


def test_the_bundled_libcxx_is_said_with_the_runtime(cache):
    cxx = cxx_command(select_compiler(None))
    assert pending([*cxx, "a.o", "-o", "a"])[1] == (
        "adgen: building clang's compiler runtime and the bundled libc++ for this machine once (a minute or more; "
        f"zig caches them in {cache})")
    zig_runtimes.remember(pending(_cc("a.o", "-o", "a"))[0])
    assert pending([*cxx, "a.o", "-o", "a"])[1] == ("adgen: building the bundled libc++ for this machine once (a "
                                                    f"minute or more; zig caches it in {cache})")
    assert pending([*cxx, "-nostdlib++", "a.o", "/usr/lib/libstdc++.so", "-o", "a"])[1] == ""  # (libstdc++'s)
    assert pending(_cc("a.o", "-lc++", "-o", "a"))[1].startswith("adgen: building the bundled libc++")


def test_a_cache_from_before_the_markers_is_taken_at_its_artefacts(cache):
    (cache / "o" / "0123abcd").mkdir(parents=True)
    (cache / "o" / "0123abcd" / "libcompiler_rt.a").write_bytes(b"!<arch>\n")
    assert pending(_cc("a.o", "-o", "a"))[1] == ""  # zig built it already: nothing said
    assert (cache / "adgen" / "runtimes-0.17.1" / "compiler-rt-native-baseline-debug").exists()
    # once markers are kept, they alone say: a runtime for another mode is built, whatever is there
    assert pending(_cc("-O2", "a.o", "-o", "a"))[1]


def test_no_link_or_no_zig_of_adgens_says_nothing(cache):
    assert pending(_cc("-c", "a.c", "-o", "a.o")) is None
    assert pending(_cc("-E", "a.c")) is None
    assert pending(_cc("-v")) is None
    assert pending(["clang", "a.o", "-o", "a"]) is None  # (ADGEN_CC: not the bundled zig's)
    assert pending([*zig(), "build-exe", "a.zig"]) is None


@pytest.mark.parametrize("args, linking", [
    (["a.o", "-o", "a"], True), (["-shared", "x.o", "-lm"], True), (["-o", "a", "-lm"], False),
    (["-c", "a.c"], False), (["-MM", "a.c"], False), (["-print-file-name=libc.so"], False), (["--version"], False),
    (["-I", "include", "-D", "N"], False)])
def test_links(args, linking):
    assert links(args) is linking


class _Ran:
    def __init__(self, status: int):
        self.status, self.commands = status, []

    def run(self, command, **kwargs):
        self.commands.append(command)
        return subprocess.CompletedProcess(command, self.status, "", "")


def test_the_line_is_printed_before_the_link_once_and_never_quietly(cache, monkeypatch, capsys):
    ran = _Ran(1)
    monkeypatch.setattr(zig_runtimes, "subprocess", ran)
    command = _cc("a.o", "-o", "a")
    with quietly():
        run_link(command)
    assert capsys.readouterr().err == ""
    run_link(command)  # a failed link: not remembered, said again
    ran.status = 0
    run_link(command)
    run_link(command)
    assert capsys.readouterr().err == (RT.format(cache) + "\n") * 2
    assert ran.commands == [command] * 4


def test_adgen_load_says_it_on_stderr(cache, tmp_path, capfd):
    src = tmp_path / "f.c"
    src.write_text(SOURCE)
    lib = adgen.load(src, build_dir=tmp_path / "build")
    assert lib.f_grad(3.0, 1.0).d_x == 6.0
    assert capfd.readouterr().err == RT_FAST.format(cache) + "\n"
    adgen.load(src, build_dir=tmp_path / "build")  # (built again: the link finds the runtime)
    assert capfd.readouterr().err == ""


def test_adgen_check_says_it_unless_quiet(cache, tmp_path, monkeypatch, adgen):
    import shutil

    import adgen.commands.load as load

    src = tmp_path / "f.c"
    src.write_text(SOURCE)
    said = {}
    for options in (["-q"], []):
        shutil.rmtree(cache / "adgen", ignore_errors=True)  # (a first link each time)
        loads = tmp_path / f"loads{len(said)}"  # (a build for each check, not adgen.load's cached one)
        loads.mkdir(mode=0o700)
        monkeypatch.setattr(load, "cache_root", lambda: loads)
        result = adgen("check", *options, src)
        assert result.status == 0, result.err
        said[tuple(options)] = result.err
    assert said == {("-q",): "", (): RT_FAST.format(cache) + "\n"}


@pytest.mark.slow
def test_adgen_cc_builds_the_runtime_in_a_fresh_cache_and_says_so_once(tmp_path):
    """For real: zig builds its compiler-rt for -O2 (ReleaseFast) in a few seconds, its debug
    one (and the UBSan runtime) in 15 to 30."""
    (tmp_path / "m.c").write_text("int main(void) { return 0; }\n")
    env = {**os.environ, "ZIG_GLOBAL_CACHE_DIR": str(tmp_path / "zig")}
    said = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "cc", "-O2", "m.c", "-o", "m"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        said.append(done.stderr)
    assert said == [f"adgen: building clang's compiler runtime for this machine once (a few seconds; zig caches it "
                    f"in {tmp_path / 'zig'})\n", ""]
    assert list(Path(tmp_path / "zig", "o").glob("*/libcompiler_rt.a"))


def test_clang_cpu_names_reach_zig_in_its_spelling():
    """zig reads `-march=x86-64-v3` as the CPU `x86` less features `64` and `v3` (and refuses
    `-mtune=generic`): commands of the bundled clang get clang's names respelled, x86's only."""
    from adgen.base.toolchain import zig_spelling

    assert zig_spelling(_cc("-march=x86-64-v3", "-mtune=generic", "-mcpu=skylake-avx512", "-O2")) == \
        _cc("-march=x86_64_v3", "-mcpu=skylake_avx512", "-O2")
    assert zig_spelling(_cc("-march=native", "-mtune=icelake-server")) == _cc("-march=native", "-mtune=icelake_server")
    arm = _cc("-target", "aarch64-linux-gnu", "-march=armv8.2-a+crypto")
    assert zig_spelling(arm) == arm  # (an architecture and its extensions: zig's own reading)
    assert zig_spelling(["clang", "-march=x86-64-v3"]) == ["clang", "-march=x86-64-v3"]  # (a clang of the user's)


@pytest.mark.parametrize("cpu", ["x86-64-v3", "skylake-avx512"])
def test_a_build_for_a_cpu_named_as_clang_names_it(tmp_path, cpu):
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("x86 CPU names: this machine is not x86")
    (tmp_path / "f.c").write_text(SOURCE)
    done = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "build", str(tmp_path / "f.c"), "-o", str(tmp_path / "out"),
                           "--", "-O2", f"-march={cpu}", "-mtune=generic"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "f.adgen.o").is_file()
