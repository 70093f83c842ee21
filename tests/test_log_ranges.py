"""The undo log's ranges (templates/undo_log.ll.j2): what the reverse sweep reads again, kept as a
sorted list of disjoint ranges, merged where they overlap or touch, and asked whether a range
overlaps any of them. Random sequences of additions and questions against a model in Python; the
poison and an invalid range answer yes; with no log open nothing is kept; a log below the open one
(a team thread's: its caller's) answers too."""

from __future__ import annotations

import ctypes as C
import random
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    from adgen.base.templates import render_text
    from adgen.ir_ad.reverse.mode import RUNTIME_DECLARATIONS
    from adgen.ir_ad.reverse.plan.undo import LOGGED

    text = render_text("undo_log.ll.j2", LOGGED=LOGGED)
    for name in ("reads", "overlaps", "poison"):
        text = text.replace(f'define internal void @"adgen.log.{name}"', f'define void @"adgen.log.{name}"')
        text = text.replace(f'define internal i1 @"adgen.log.{name}"', f'define i1 @"adgen.log.{name}"')
    declared = "\n".join(f"declare {ret.text} {name}({', '.join(p.text for p in params)})"
                         for name, ret, params in RUNTIME_DECLARATIONS)
    extra = """
define void @set_log(ptr %log) {
  store ptr %log, ptr @"adgen.log.open.log", align 8
  ret void
}
define i1 @overlaps(i64 %lo, i64 %hi, i1 %valid) {
  %r = call i1 @"adgen.log.overlaps"(i64 %lo, i64 %hi, i1 %valid)
  ret i1 %r
}
"""
    tmp = tmp_path_factory.mktemp("log")
    (tmp / "log.ll").write_text(text + "\n" + declared + "\n" + extra)
    so = tmp / "log.so"
    subprocess.run([sys.executable, "-m", "ziglang", "cc", "-O1", "-shared", "-fPIC", str(tmp / "log.ll"), "-o",
                    str(so)], check=True, capture_output=True)
    lib = C.CDLL(str(so))
    lib.overlaps.restype = C.c_bool
    lib.overlaps.argtypes = [C.c_int64, C.c_int64, C.c_bool]
    getattr(lib, "adgen.log.reads").argtypes = [C.c_int64, C.c_int64, C.c_bool]
    return lib


class Log(C.Structure):
    """The whole log, 168 bytes (the runtime writes its hints at the end)."""
    _fields_ = [("entries", C.c_void_p), ("top", C.c_int64), ("room", C.c_int64), ("cursor", C.c_int64),
                ("reads", C.POINTER(C.c_int64)), ("count", C.c_int64), ("capacity", C.c_int64),
                ("poisoned", C.c_int64), ("below", C.c_void_p), ("frees", C.c_void_p), ("freed", C.c_int64),
                ("room_for_frees", C.c_int64), ("stack", C.c_void_p), ("last", C.c_void_p), ("next", C.c_void_p),
                ("size", C.c_int64), ("left", C.c_int64), ("hints", C.c_int64 * 4)]


def test_the_log_is_laid_out_as_the_runtime_allocates_it(runtime):
    from adgen.base.templates import render_text
    from adgen.ir_ad.reverse.plan.undo import LOGGED

    assert f"@calloc(i64 1, i64 {C.sizeof(Log)})" in render_text("undo_log.ll.j2", LOGGED=LOGGED)


def _kept(log: Log) -> list[tuple[int, int]]:
    return [(log.reads[2 * k], log.reads[2 * k + 1]) for k in range(log.count)]


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for lo, hi in sorted(r for r in ranges if r[0] < r[1]):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [tuple(r) for r in out]


@pytest.mark.parametrize("seed", range(6))
def test_ranges_merge_and_answer_like_a_model(runtime, seed):
    rng = random.Random(seed)
    log = Log()
    runtime.set_log(C.byref(log))
    reads = getattr(runtime, "adgen.log.reads")
    added = []
    try:
        for step in range(300):
            lo = rng.randrange(0, 2000)
            hi = lo + rng.choice([0, 1, 2, 8, 30, 100, 400])
            if added and rng.random() < 0.3:  # (what a loop nest read before: found through the hints)
                lo, hi = rng.choice(added[-6:])
            if rng.random() < 0.5:
                reads(lo, hi, True)
                added.append((lo, hi))
                assert _kept(log) == _merged(added), step
            elif lo < hi:  # (what a loop writes is never empty)
                want = any(a < hi and lo < b for a, b in _merged(added))
                assert runtime.overlaps(lo, hi, True) == want, (step, lo, hi)
        assert runtime.overlaps(5, 6, False)  # an invalid range may overlap anything
        runtime.__getattr__("adgen.log.poison")()
        assert log.poisoned == 1 and runtime.overlaps(-100, -99, True)
    finally:
        runtime.set_log(None)


def test_nothing_is_kept_without_a_log(runtime):
    runtime.set_log(None)
    getattr(runtime, "adgen.log.reads")(1, 10, True)  # (no log: nothing to add to, no crash)
    assert runtime.overlaps(1, 10, True)  # (and a check without one is answered conservatively)


def test_the_log_below_answers_too(runtime):
    """A thread's log on a team consults its caller's reads (and poison) without copying them."""
    caller, thread = Log(), Log()
    thread.below = C.addressof(caller)
    reads = getattr(runtime, "adgen.log.reads")
    try:
        runtime.set_log(C.byref(caller))
        reads(100, 200, True)
        runtime.set_log(C.byref(thread))
        reads(300, 400, True)
        assert _kept(thread) == [(300, 400)] and _kept(caller) == [(100, 200)]
        assert runtime.overlaps(150, 160, True) and runtime.overlaps(390, 500, True)
        assert not runtime.overlaps(200, 300, True) and not runtime.overlaps(0, 100, True)
        runtime.set_log(C.byref(caller))
        assert not runtime.overlaps(300, 400, True)  # (the caller does not see the thread's)
        caller.poisoned = 1
        runtime.set_log(C.byref(thread))
        assert runtime.overlaps(0, 1, True)
    finally:
        runtime.set_log(None)
