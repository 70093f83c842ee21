"""Split mode (specs/abi.md): the forward sweep now, the reverse sweep later or never, a tape in
between. Against the combined gradient: across loops whose trip count is known only at their end,
a triangular nest, a variable-size local array, recursion, memory allocated and freed; at width
2 with separate and interleaved lanes; many tapes alive at once, reversed in any order, with
the inputs changed in between; tapes never reversed released with nothing leaked. From Python,
a tape is reversed or released once, by its own entry only, with threads racing for it too."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import adgen
from conftest import compile_c

SOURCE = r"""
#include <math.h>
#include <stdlib.h>

__attribute__((noinline)) static double rec(const double *x, int k)
{
    if (k <= 0)
        return x[0];
    return sin(x[k]) * rec(x, k - 1) + x[k];
}

typedef struct node { double v; struct node *next; } node;

static node *push(node *head, double v)
{
    node *n = malloc(sizeof *n);
    n->v = v;
    n->next = head;
    return n;
}

// @diff(g_split: split (dup, const, active) -> active; g_grad: (dup, const, active) -> active)
// @diff(g_lanes: split[2] (dup, const, active) -> active)
double g(const double *x, int n, double k)
{
    double s = x[0] * x[0], acc = 0;
    int steps = 0;
    node *list = NULL;
    while (s < 50 && steps < 1000) {  /* a trip count known only at the end */
        s = s * 1.3 + k * x[steps % n] * x[steps % n];
        list = push(list, s);
        steps++;
    }
    for (int i = 0; i < n; i++)  /* a triangular nest */
        for (int j = 0; j <= i; j++)
            acc += sin(x[i] * x[j]);
    double local[n];
    for (int i = 0; i < n; i++)
        local[i] = x[i] * acc;
    for (node *p = list; p; p = p->next)
        acc += p->v * 0.01;
    while (list) {
        node *next = list->next;
        free(list);
        list = next;
    }
    return acc + rec(x, n - 1) + local[n / 2] * local[0];
}

/* interleaved lanes keep no pointers in memory: no list here */
// @diff(h_inter: split[2] (dupv, const) -> activeonly; h_grad: (dup, const) -> active)
double h(const double *x, int n)
{
    double acc = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++)
            acc += sin(x[i] * x[j]);
    return acc + rec(x, n - 1);
}
"""

N = 6
X = np.linspace(0.3, 1.05, N)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("split")
    src = work / "split.c"
    src.write_text(SOURCE)
    return work, src, adgen.load(src, build_dir=work / "build")


def _combined(lib, x, k=0.7, seed=1.0):
    dx = np.zeros(N)
    r = lib.g_grad(x, dx, N, k, seed)
    return r, dx


def test_split_against_the_combined_gradient(built):
    _, _, lib = built
    r, dx = _combined(lib, X)
    d = np.zeros(N)
    y, tape = lib.g_split.forward(X, d, N, 0.7)
    assert y == pytest.approx(r.ret, rel=1e-15)
    assert not d.any()  # nothing before the reverse sweep
    dk = lib.g_split.reverse(tape, 1.0)
    assert d == pytest.approx(dx, rel=1e-13) and dk == pytest.approx(r.d_k, rel=1e-13)
    whole = lib.g_split(X, np.zeros(N), N, 0.7, 1.0)  # both halves, as one reverse-mode call
    assert whole.ret == pytest.approx(r.ret, rel=1e-15) and whole.d_k == pytest.approx(r.d_k, rel=1e-13)


def test_many_tapes_alive_any_order_inputs_changed_between(built):
    _, _, lib = built
    xs = [X + 0.05 * t for t in range(8)]
    shadows = [np.zeros(N) for _ in xs]
    given = [x.copy() for x in xs]
    tapes = [lib.g_split.forward(x, d, N, 0.7)[1] for x, d in zip(given, shadows)]
    for x in given:
        x += 100.0  # the caller reuses its buffers: the tapes kept what the reverse sweep reads
    for t in [5, 0, 7, 2]:
        dk = lib.g_split.reverse(tapes[t], 2.0)
        r, dx = _combined(lib, xs[t], seed=2.0)
        assert shadows[t] == pytest.approx(dx, rel=1e-13) and dk == pytest.approx(r.d_k, rel=1e-13)


def test_widths_and_layouts(built):
    _, _, lib = built
    _, dx = _combined(lib, X)
    lanes = [np.zeros(N), np.zeros(N)]
    y, tape = lib.g_lanes.forward(X, *lanes, N, 0.7)
    dk = lib.g_lanes.reverse(tape, 1.0, -2.0)
    assert lanes[0] == pytest.approx(dx, rel=1e-13) and lanes[1] == pytest.approx(-2 * dx, rel=1e-13)
    assert list(dk.d_k) == pytest.approx([_combined(lib, X)[0].d_k, -2 * _combined(lib, X)[0].d_k], rel=1e-13)
    dh = np.zeros(N)
    lib.h_grad(X, dh, N, 1.0)
    both = np.zeros(2 * N)
    _, tape = lib.h_inter.forward(X, both, N)
    assert lib.h_inter.reverse(tape, 3.0, 0.5) is None
    assert both[0::2] == pytest.approx(3 * dh, rel=1e-13) and both[1::2] == pytest.approx(0.5 * dh, rel=1e-13)


DRIVER = r"""
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include "split.adgen.h"

int main(void)
{
    mallopt(M_MXFAST, 0);
    double x[6], d[6] = {0}, e[6] = {0};
    for (int i = 0; i < 6; i++)
        x[i] = 0.3 + 0.15 * i;
    size_t size = g_split_tape_size(), before = 0;
    void *tapes[16];
    for (int t = 0; t < 16; t++)
        tapes[t] = aligned_alloc(16, (size + 15) / 16 * 16);
    void *lanes = aligned_alloc(16, (g_lanes_tape_size() + 15) / 16 * 16);
    for (int rep = 0; rep < 51; rep++) {
        if (rep == 1)
            before = mallinfo2().uordblks;
        for (int t = 0; t < 16; t++)
            g_split_forward(x, d, 6, 0.7, tapes[t]);
        for (int t = 0; t < 16; t += 3)  /* some reversed, the others never */
            g_split_reverse(tapes[t], 1.0);
        for (int t = 0; t < 16; t++)
            g_split_free(tapes[t]);  /* nothing for those reversed */
        g_split_free(tapes[0]);      /* nor twice */
        g_lanes_forward(x, d, e, 6, 0.7, lanes);
        g_lanes_free(lanes);
    }
    printf("%zu %zu\n", size, mallinfo2().uordblks - before);
    for (int t = 0; t < 16; t++)
        free(tapes[t]);
    free(lanes);
    return 0;
}
"""


@pytest.mark.slow
def test_tapes_never_reversed_leak_nothing(built, adgen):
    """`NAME_free` releases what the forward sweep allocated (loop storage, a recursive call's
    records, the local array moved to the heap, the list the primal freed): 50 more rounds of
    16 tapes leave the heap as it was (glibc's count of bytes in use, tcache off), and valgrind
    finds no leak or invalid access."""
    work, src, _ = built
    out = work / "out"
    assert adgen("build", "-q", src, "-o", out).status == 0
    driver = work / "leaks.c"
    driver.write_text(DRIVER)
    compile_c("-O1", "-I", out, driver, src, out / "split.adgen.o", "-lm", "-o", work / "leaks")
    env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.tcache_count=0")
    done = subprocess.run([str(work / "leaks")], capture_output=True, text=True, check=True, env=env)
    size, leaked = map(int, done.stdout.split())
    assert leaked == 0
    assert size == built[2].g_split_tape_size() and size % 8 == 0
    if shutil.which("valgrind"):  # and no invalid access or leak by valgrind's count, where it is installed
        checked = subprocess.run(["valgrind", "--leak-check=full", "--errors-for-leak-kinds=all", "--error-exitcode=3",
                                  str(work / "leaks")], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
        assert "All heap blocks were freed" in checked.stderr


@pytest.mark.parametrize("entry, message", [
    ("s_split: split (active) -> active", "split mode takes no struct or complex number by value (parameter 'p'"),
    ("s_grad: (dup) -> active; s_hvp: forward of s_split (dual, dual, const); s_split: split (dup) -> active",
     "'s_hvp' derives 's_split', a split-mode entry"),
])
def test_what_split_mode_refuses(adgen, c_file, tmp_path, entry, message):
    pointer = "of s_split" in entry
    src = c_file(f"typedef struct {{ double a, b; }} pair;\n// @diff({entry})\n"
                 f"double s({'const double *p' if pointer else 'pair p'});\n")
    result = adgen("generate", src, "-o", tmp_path / "out")
    assert result.status == 1 and message in result.err and "src.c:2:" in result.err
    assert not (tmp_path / "out").exists()


def _isolated(built, code: str) -> str:
    """Runs `code` in a fresh Python with `lib` loaded from the module's build, so a crash in C
    (an abort on a double free) fails the test instead of ending pytest; returns its stdout."""
    build = built[0] / "build"
    head = ("import sys, gc, threading, numpy as np, adgen\n"
            f"lib = adgen.Library({str(build / 'libadgen.so')!r}, {sorted(map(str, build.glob('*.adgen.json')))!r})\n"
            f"N, X = {N}, np.linspace(0.3, 1.05, {N})\n")
    done = subprocess.run([sys.executable, "-c", head + code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"exit status {done.returncode}\n{done.stderr}"
    return done.stdout


def test_a_tape_is_reversed_once_and_then_refused(built):
    """The C reverse sweep frees what the tape holds: a second one freed it again (an abort on
    a double free). From Python, a tape reversed, or released, raises TapeError instead; the
    first reverse sweep's gradient stands."""
    out = _isolated(built, """
d = np.zeros(N)
y, tape = lib.g_split.forward(X, d, N, 0.7)
first = lib.g_split.reverse(tape, 1.0)
for again in (lambda: lib.g_split.reverse(tape, 1.0), lambda: tape.release()):
    try:
        again()
    except adgen.TapeError as e:
        print(e)
print(tape.state, first == lib.g_grad(X, np.zeros(N), N, 0.7, 1.0).d_k)
_, kept = lib.g_split.forward(X, np.zeros(N), N, 0.7)
kept.release()
try:
    lib.g_split.reverse(kept, 1.0)
except adgen.TapeError as e:
    print(e)
""")
    once = "a tape is reversed or released once (call g_split.forward() again for another)"
    assert out.splitlines() == [f"g_split.reverse(): this tape was reversed already; {once}",
                                f"g_split.release(): this tape was reversed already; {once}",
                                "reversed True",
                                f"g_split.reverse(): this tape was released already; {once}"]


def test_tapes_go_to_their_own_entry_only(built):
    """A tape of another entry (another size and layout), anything else given as a tape, and the
    C parts called directly with memory of the caller's: each refused before C sees it."""
    _, _, lib = built
    _, tape = lib.g_lanes.forward(X, np.zeros(N), np.zeros(N), N, 0.7)
    with pytest.raises(adgen.TapeError, match=r"g_split.reverse\(\): this tape is from g_lanes.forward\(\), not "
                                              r"g_split.forward\(\)"):
        lib.g_split.reverse(tape, 1.0)
    with pytest.raises(TypeError, match=r"a tape is what g_split.forward\(\) returns, not ndarray"):
        lib.g_split.reverse(np.zeros(lib.g_split_tape_size(), np.uint8), 1.0)
    with pytest.raises(AttributeError, match=r"'g_split_reverse' takes a tape: call it as lib.g_split.reverse"):
        lib.g_split_reverse
    assert "g_split_free" not in lib.functions and "g_split" in lib.functions
    assert lib.g_lanes.reverse(tape, 1.0, 1.0).d_k.shape == (2,)  # still its own entry's to reverse


def test_a_failed_reverse_call_keeps_the_tape(built):
    _, _, lib = built
    d = np.zeros(N)
    _, tape = lib.g_split.forward(X, d, N, 0.7)
    with pytest.raises(ctypes.ArgumentError):
        lib.g_split.reverse(tape, "one")  # refused by ctypes before the C call
    assert tape.state == "held"
    dk = lib.g_split.reverse(tape, 1.0)
    r, dx = _combined(lib, X)
    assert d == pytest.approx(dx, rel=1e-13) and dk == pytest.approx(r.d_k, rel=1e-13)


@pytest.mark.slow
def test_threads_race_for_one_tape(built):
    """ctypes lets other threads run during a C call: of eight threads reversing one tape, one
    does and seven get TapeError, for each of 200 tapes; tapes of their own, forward and reverse
    in 8 threads at once, give the combined gradient."""
    out = _isolated(built, """
want = lib.g_grad(X, np.zeros(N), N, 0.7, 1.0).d_k
for _ in range(200):
    _, tape = lib.g_split.forward(X, np.zeros(N), N, 0.7)
    results, start = [], threading.Barrier(8)
    def race():
        start.wait()
        try:
            results.append(lib.g_split.reverse(tape, 1.0))
        except adgen.TapeError:
            results.append("refused")
    threads = [threading.Thread(target=race) for _ in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert sorted(map(str, results)) == sorted([str(want)] + ["refused"] * 7), results
wrong = []
def own():
    for _ in range(100):
        _, tape = lib.g_split.forward(X, np.zeros(N), N, 0.7)
        wrong.append(lib.g_split.reverse(tape, 1.0) != want)
threads = [threading.Thread(target=own) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(wrong), any(wrong))
""")
    assert out.split() == ["800", "False"]


def test_tapes_dropped_unreversed_are_released(built):
    """A tape never reversed is released by NAME_free when Python drops it (or at `release()`):
    after 5,000 forward sweeps of `g`, the process's resident memory has grown by less than a
    tenth of the 15 MB their tapes' heap memory (3 KB a tape) would leak."""
    out = _isolated(built, """
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
def sweeps(count):
    for i in range(count):
        _, tape = lib.g_split.forward(X, np.zeros(N), N, 0.7)
        if i % 2:
            tape.release()
sweeps(500)
gc.collect()
before = rss()
sweeps(5000)
gc.collect()
print(rss() - before)
""")
    assert int(out) < 1_500_000
