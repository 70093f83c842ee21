"""adgen.load at its edges (issue 42): a cache no one else can prepare, libraries checked by
their digests and built aside under a lock (so a truncated one is rebuilt, and concurrent loads
of one source all succeed), and arguments checked before C runs: None for a pointer, arrays
shorter than `@size` says, integers out of their C type's range or of the wrong type, keyword
arguments, integer addresses. What crashed the process once runs in a subprocess, so that a
crash fails its test instead of ending pytest."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import adgen
from adgen.base.toolchain import zig
from adgen.base.zig_runtimes import zig_env
from conftest import compile_c

SOURCE = r"""
// @size(x=n)
// @diff(energy_grad: (dup, const, active) -> active; energy_split: split (dup, const, active) -> active)
double energy(const double *x, int n, double k)
{
    double e = 0;
    for (int i = 0; i < n; i++)
        e += k * x[i] * x[i];
    return e;
}

// @diff(scaled_grad: (const, active) -> active)
double scaled(unsigned char m, double a) { return m * a * a; }
"""

SQUARE = "// @diff(sq_grad: (active) -> active)\ndouble sq(double x) { return ROUND * x * x; }\n"


def _environment(root) -> dict:
    """This process's environment with adgen.load's cache (and the temporary directory, where
    it once was) under `root`; zig's global cache, which XDG_CACHE_HOME moves too, stays where
    it is (a new one would build zig's compiler runtime again: 20 s a test)."""
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    return {**os.environ, "XDG_CACHE_HOME": str(root / "cache"), "TMPDIR": str(root / "tmp"),
            "ZIG_GLOBAL_CACHE_DIR": str(zig_env(zig())[0])}


PINNED = "tests"  # adgen's fingerprint in the cache keys: files edited during a run would change them


def _python(code: str, env: dict) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh Python, adgen's fingerprint pinned; it must succeed (a crash in C
    fails the test)."""
    pin = f"import adgen.commands.load\nadgen.commands.load._fingerprint = lambda: {PINNED!r}\n"
    done = subprocess.run([sys.executable, "-c", pin + textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"exit status {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """SOURCE, loaded once in a subprocess so that the tests' loads find it in their cache."""
    root = tmp_path_factory.mktemp("edges")
    src = root / "energy.c"
    src.write_text(SOURCE)
    env = _environment(root)
    _python(f"import adgen; adgen.load({str(src)!r})", env)
    return src, env


@pytest.fixture
def lib(built, monkeypatch):
    src, env = built
    monkeypatch.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])
    monkeypatch.setattr("adgen.commands.load._fingerprint", lambda: PINNED)
    return adgen.load(src)


@pytest.mark.slow
def test_a_folder_planted_where_the_cache_once_was_is_not_run(tmp_path):
    """The cache was `$TMPDIR/adgen-load-HASH`, HASH computable by anyone: a library planted
    there ran. It is now in the user's cache directory, mode 0700, and the planted one is never
    opened."""
    src = tmp_path / "sq.c"
    src.write_text(SQUARE)
    env = _environment(tmp_path)
    key = hashlib.sha256("\0".join([adgen.__version__, PINNED, "-DROUND=1", SQUARE]).encode()).hexdigest()
    planted = tmp_path / "tmp" / f"adgen-load-{key[:16]}"
    planted.mkdir()
    (tmp_path / "evil.c").write_text("double sq(double x) { return 1000.0; }\n")
    compile_c("-shared", "-fPIC", tmp_path / "evil.c", "-o", planted / "libadgen.so")
    (planted / "sq.adgen.json").write_text(json.dumps({"functions": {"sq": {
        "kind": "primal", "params": [{"name": "x", "role": "", "ffi": "double"}], "returns": {"ffi": "double"}}}}))
    out = _python(f"""
        import adgen, os, stat
        lib = adgen.load({str(src)!r}, flags=["-DROUND=1"])
        print(lib.sq(3.0), lib.path.is_relative_to({str(tmp_path / "cache" / "adgen" / "load")!r}))
        for folder in (lib.path.parent.parent, lib.path.parent.parent.parent):
            print(oct(stat.S_IMODE(os.stat(folder).st_mode)))
    """, env).stdout.split()
    assert out == ["9.0", "True", "0o700", "0o700"]


def test_a_cache_others_could_write_or_read_is_refused(tmp_path, monkeypatch):
    """adgen.load's folder must be the user's, mode 0700 (it makes it so); its parent, the
    user's and closed to others' writes (a parent of the user's made under a lax umask is
    closed)."""
    src = tmp_path / "sq.c"
    src.write_text(SQUARE)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "cache" / "adgen" / "load"
    root.mkdir(parents=True)
    os.chmod(root.parent, 0o777)
    os.chmod(root, 0o755)
    with pytest.raises(adgen.CacheError, match=r"adgen: error: adgen.load's cache .*/adgen/load has mode 0755: others "
                                               r"may read it; adgen.load runs the code it finds there"):
        adgen.load(src, flags=["-DROUND=1"])
    assert oct(os.stat(root.parent).st_mode & 0o777) == "0o755"
    os.chmod(root, 0o730)
    with pytest.raises(adgen.CacheError, match=r"cache .*/adgen/load has mode 0730: others may write it"):
        adgen.load(src, flags=["-DROUND=1"])
    os.chmod(root, 0o700)
    if os.getuid() == 0:  # (only root can give a folder to another user)
        for folder in (root, root.parent):
            os.chown(folder, 65534, 65534)
            with pytest.raises(adgen.CacheError, match=rf"cache {re.escape(str(folder))} belongs to user 65534, "
                                                       r"not to you \(0\)"):
                adgen.load(src, flags=["-DROUND=1"])
            os.chown(folder, 0, 0)
    os.rmdir(root)
    os.symlink(tmp_path, root)
    with pytest.raises(adgen.CacheError, match=r"cache .*/adgen/load is not a directory"):
        adgen.load(src, flags=["-DROUND=1"])


@pytest.mark.slow
def test_a_truncated_library_is_rebuilt(tmp_path):
    """A cached library cut short made every later load crash; its digest no longer matches, so
    it is built again."""
    src = tmp_path / "sq.c"
    src.write_text(SQUARE)
    env = _environment(tmp_path)
    load = f"import adgen; lib = adgen.load({str(src)!r}, flags=['-DROUND=2']); print(lib.path, lib.sq(3.0))\n"
    path, value = _python(load, env).stdout.split()
    assert value == "18.0"
    with open(path, "r+b") as library:
        library.truncate(1000)  # (its headers, not its code: opening it was a bus error)
    assert _python(load, env).stdout.split() == [path, "18.0"]


@pytest.mark.slow
def test_concurrent_loads_of_one_source_all_succeed(tmp_path):
    """Processes building one source into one cache at once failed (`cannot open shared object
    file`, `cannot open …/sq.o`: about one round in three of four processes, before the fix):
    builds are made aside, renamed into place, under a lock. Three rounds, each a new build."""
    src = tmp_path / "sq.c"
    src.write_text(SQUARE)
    env = _environment(tmp_path)
    code = textwrap.dedent(f"""
        import adgen, adgen.commands.load
        adgen.commands.load._fingerprint = lambda: {PINNED!r}
        for r in (3, 4, 5):
            for _ in range(2):
                print(adgen.load({str(src)!r}, flags=[f"-DROUND={{r}}"]).sq_grad(2.0, 1.0).ret)
    """)
    runs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(4)]
    for run in runs:
        out, err = run.communicate(timeout=900)
        assert run.returncode == 0, err
        assert out.split() == ["12.0", "12.0", "16.0", "16.0", "20.0", "20.0"]
    leftovers = sorted(p.name for p in (tmp_path / "cache" / "adgen" / "load").iterdir())
    assert len(leftovers) == 6 and not any(".build-" in name for name in leftovers)  # three builds, three locks


@pytest.mark.slow
def test_a_build_dir_is_built_aside(tmp_path):
    """An explicit build_dir keeps the build; nothing of a failed one is left there."""
    src = tmp_path / "sq.c"
    src.write_text(SQUARE)
    lib = adgen.load(src, build_dir=tmp_path / "build", flags=["-DROUND=5"])
    assert lib.sq(1.0) == 5.0 and lib.path == tmp_path / "build" / "libadgen.so"
    assert {"sq.adgen.json", "sq.adgen.o", "libadgen.so"} <= {p.name for p in (tmp_path / "build").iterdir()}
    assert not [p for p in (tmp_path / "build").iterdir() if p.name.startswith(".adgen-build-")]


@pytest.mark.parametrize("flags, mode", [([], "fast"), (["-O1"], "fast"), (["-O0", "-g"], "debug")])
def test_the_link_takes_zigs_runtimes_of_the_compiles_mode(tmp_path, monkeypatch, flags, mode):
    """zig's driver builds its runtimes (compiler-rt, the bundled libc++: minutes) once per
    optimization mode, which a link without -O takes as debug: the link says the level the
    sources were compiled at (-O2, or the user's), lest a first load build them twice; and at
    -O0, whose objects call zig's UBSan runtime, the debug one still."""
    from adgen.base.zig_runtimes import _variant
    from adgen.commands import load

    src = tmp_path / "sq.c"
    src.write_text(SQUARE.replace("ROUND", "2"))
    (tmp_path / "out").mkdir()
    commands = []
    monkeypatch.setattr(load, "_run", lambda command, link=False: commands.append((command, link)))
    load._build([src], tmp_path / "out", flags, tmp_path / "out" / "libadgen.so")
    (link,) = [command for command, linking in commands if linking]
    assert [_variant(command)[2] for command, _ in commands] == [mode, mode]  # (the compile, then the link)
    assert "-shared" in link and str(tmp_path / "out" / "sq.adgen.o") in link


def test_none_and_short_arrays_are_refused_before_c_runs(built):
    """None for a pointer crashed (a null pointer read); an array shorter than `@size(x=n)` says
    was read and written past its end (`double free or corruption`)."""
    src, env = built
    out = _python(f"""
        import adgen, numpy as np
        lib = adgen.load({str(src)!r})
        x, dx = np.ones(4), np.zeros(4)
        def attempt(call):
            try:
                call()
                print("ran")
            except (TypeError, ValueError) as exc:
                print(type(exc).__name__, exc)
        attempt(lambda: lib.energy_grad(None, dx, 4, 1.0, 1.0))
        attempt(lambda: lib.energy_grad(x, None, 4, 1.0, 1.0))
        attempt(lambda: lib.energy(None, 4, 1.0))
        attempt(lambda: lib.energy_grad(x, dx, 100000, 1.0, 1.0))
        attempt(lambda: lib.energy_grad(x.ctypes.data, dx, 100000, 1.0, 1.0))
        attempt(lambda: lib.energy_split.forward(x, dx, 100000, 1.0))
        attempt(lambda: lib.energy_split(x[:2], dx[:2], 4, 1.0, 1.0))
        print(lib.energy(x, 4, 2.0), lib.energy(x, 3, 2.0), lib.energy(0, 0, 2.0))
    """, env).stdout.splitlines()
    null = ("got None: the C code reads or writes through it; pass a NumPy array (or 0, an integer address, where the "
            "C code takes a null pointer)")
    assert out == [
        f"TypeError energy_grad(): pointer parameter 'x' {null}",
        f"TypeError energy_grad(): pointer parameter 'd_x' (shadow of x) {null}",
        f"TypeError energy(): pointer parameter 'x' {null}",
        "ValueError energy_grad(): 'x' holds 4 elements, but @size(x=n) with n=100000 needs 100000: the C code would "
        "go past its end",
        "ValueError energy_grad(): 'd_x' (the shadow of x) holds 4 elements, but @size(x=n) with n=100000 needs "
        "100000: the C code would go past its end",
        "ValueError energy_split_forward(): 'x' holds 4 elements, but @size(x=n) with n=100000 needs 100000: the C "
        "code would go past its end",
        "ValueError energy_split_forward(): 'x' holds 2 elements, but @size(x=n) with n=4 needs 4: the C code would go "
        "past its end",
        "8.0 6.0 0.0",
    ]


def test_a_short_tensor_is_refused_by_the_torch_bridge(built):
    """`adgen.torch` calls the same checked functions: a 4-element tensor with n=10 was a crash."""
    pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")
    src, env = built
    out = _python(f"""
        import adgen, adgen.torch, torch
        energy = adgen.torch.function(adgen.load({str(src)!r}), "energy_split")
        x = torch.ones(4, dtype=torch.float64, requires_grad=True)
        try:
            energy(x, 10, 1.0)
        except ValueError as exc:
            print(exc)
        energy(x=x, n=torch.tensor(4), k=2.0).backward()
        print(x.grad.tolist())
    """, env).stdout.splitlines()
    assert out == ["energy_split_forward(): 'x' holds 4 elements, but @size(x=n) with n=10 needs 10: the C code "
                   "would go past its end", "[4.0, 4.0, 4.0, 4.0]"]


def test_integers_are_checked_against_their_c_type(lib):
    """`n=2**40` wrapped to 0 silently; `"10"` and `10.0` were ctypes' ArgumentError."""
    x = np.ones(4)
    with pytest.raises(OverflowError, match=r"energy\(\): 'n' is a C int, from -2147483648 to 2147483647: "
                                            r"1099511627776 does not fit"):
        lib.energy(x, 2 ** 40, 1.0)
    with pytest.raises(OverflowError, match=r"scaled_grad\(\): 'm' is a C unsigned char, from 0 to 255: 256 does not "
                                            r"fit"):
        lib.scaled_grad(256, 1.0, 1.0)
    with pytest.raises(OverflowError, match="from 0 to 255: -1 does not fit"):
        lib.scaled(-1, 1.0)
    with pytest.raises(TypeError, match=r"energy\(\): 'n' is a C int: it takes an integer, not str"):
        lib.energy(x, "10", 1.0)
    with pytest.raises(TypeError, match=r"energy\(\): 'n' is a C int: it takes an integer, not float"):
        lib.energy(x, 10.0, 1.0)
    with pytest.raises(TypeError, match=r"energy\(\): 'k' is a C double: it takes a number, not str"):
        lib.energy(x, 4, "1.0")
    assert lib.energy(x, np.int32(4), np.float32(2.0)) == 8.0  # (__index__, __float__)
    assert lib.scaled_grad(np.uint8(255), 2.0, 1.0).d_a == 1020.0


def test_keyword_arguments_take_the_c_parameters_names(lib):
    x, dx = np.array([1.0, 2.0]), np.zeros(2)
    assert lib.energy_grad(x, d_x=dx, k=3.0, n=2, d_ret=1.0) == (15.0, 5.0)
    assert list(dx) == [6.0, 12.0]
    value, tape = lib.energy_split.forward(x=x, d_x=np.zeros(2), n=2, k=1.0)
    assert value == 5.0 and lib.energy_split.reverse(tape, 1.0) == 5.0
    assert lib.energy_split(x, np.zeros(2), n=2, k=1.0, d_ret=1.0) == (5.0, 5.0)
    with pytest.raises(TypeError, match=r"energy\(\) missing 1 required argument: 'k'"):
        lib.energy(x, n=2)
    with pytest.raises(TypeError, match=r"energy\(\) got multiple values for argument 'x'"):
        lib.energy(x, 2, 1.0, x=x)
    with pytest.raises(TypeError, match=r"energy\(\) got an unexpected keyword argument 'm'"):
        lib.energy(x, 2, 1.0, m=3)
    with pytest.raises(TypeError, match=r"energy\(\) takes 3 arguments \(x, n, k\), not 4"):
        lib.energy(x, 2, 1.0, 5)


def test_an_integer_address_is_a_raw_pointer(lib):
    """An address is passed unchecked, its length the caller's business as in C: its shadow is
    not held to one element (as if the address were a scalar), only to `@size`."""
    x, dx = np.array([1.0, 2.0, 3.0]), np.zeros(3)
    assert lib.energy_grad(x.ctypes.data, dx, 3, 1.0, 1.0).ret == 14.0
    assert list(dx) == [2.0, 4.0, 6.0]
    with pytest.raises(TypeError, match=r"pointer parameter 'x' takes a NumPy array .*, not bool"):
        lib.energy(True, 1, 1.0)


def test_builds_no_load_opened_for_a_month_are_swept(tmp_path):
    """The cache no longer lives where the system clears it: each build removes those not loaded
    for UNUSED_DAYS (a load sets its folder's time), not the one it keeps nor one in use."""
    import fcntl
    import time

    from adgen.commands.load_cache import UNUSED_DAYS, sweep

    old = time.time() - (UNUSED_DAYS + 1) * 86400
    for key in ("fresh", "stale", "busy", "kept"):
        (tmp_path / key).mkdir()
        (tmp_path / key / "libadgen.so").write_text("")
        if key != "fresh":
            os.utime(tmp_path / key, (old, old))
    (tmp_path / "stale.build-x").mkdir()  # another process's build under way
    busy = os.open(tmp_path / "busy.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(busy, fcntl.LOCK_EX)
    try:
        sweep(tmp_path, keep="kept")
    finally:
        os.close(busy)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy", "busy.lock", "fresh", "kept", "stale.build-x"]


@pytest.mark.slow
def test_a_vector_parameter_refuses_a_numpy_array(tmp_path):
    """A `std::vector<double> &` is three pointers, not the doubles: a NumPy array for it gave a
    zero gradient or an abort; it is refused as adgen check refuses to make one."""
    import adgen

    src = tmp_path / "vec.cpp"
    src.write_text("#include <vector>\n// @diff(sumsq_grad: (dup) -> active)\n"
                   "double sumsq(const std::vector<double> &v) { double s = 0; for (double e : v) s += e * e; return s; }\n")
    lib = adgen.load(src, build_dir=tmp_path / "build")
    message = r"sumsq_grad\(\): parameter 'v' points to data that reaches its floats through pointers \(a std::vector"
    with pytest.raises(TypeError, match=message):
        lib.sumsq_grad(np.ones(3), np.zeros(3), 1.0)
    with pytest.raises(TypeError, match=message.replace("sumsq_grad", "sumsq")):
        lib.sumsq(np.ones(3))
