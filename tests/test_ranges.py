"""The bytes an access may touch over a loop's run (ir_ad/analysis/ranges.py), as the undo log's
checks compute them (ir_ad/reverse/sweeps/guards.py, `Intervals`): for loops of each shape, the
bounds computed before the outermost loop hold every byte its store writes (and are exact where
every iteration runs), against the addresses the loop writes, which the C code records (a loop
indexed by quotients and remainders, as OpenMP's `collapse(n)` indexes, one by a masked index,
as LLVM writes a zero extension of a truncation, one left by a `break`, and pointers swapped each
iteration among them); an access
through an index read from memory has no bounds."""

from __future__ import annotations

import ctypes as C
import subprocess
import sys

import pytest

from test_loops import optimized

SOURCE = r"""
long seen_lo = -1, seen_hi = -1;
static void saw(const double *p)
{
    long at = (long)p;
    if (seen_lo < 0 || at < seen_lo) seen_lo = at;
    if (at + 8 > seen_hi) seen_hi = at + 8;
}
void rect(double *a, int n, int m)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) { saw(&a[i * m + j]); a[i * m + j] = i + j; }
}
void down(double *a, int n, int m)
{
    for (int i = n - 1; i >= 0; i--) { saw(&a[2 * i + m]); a[2 * i + m] = i; }
}
void stride(double *a, int n, int m)
{
    for (int i = 1; i < n; i += 3) { saw(&a[i + m]); a[i + m] = i; }
}
void triangle(double *a, int n, int m)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) { saw(&a[i * n + j + m]); a[i * n + j + m] = j; }
}
void unsigned_up(double *a, int n, int m)
{
    for (unsigned i = 0; i < (unsigned)n; i++) { saw(&a[i + (unsigned)m]); a[i + (unsigned)m] = i; }
}
void shifted_back(double *a, int n, int m)
{
    double *b = a + 2 * m;
    for (int i = 0; i < n; i++) { saw(&b[i - m]); b[i - m] = i; }
}
void gathered(double *a, int n, int m)
{
    for (int i = 0; i < n; i++) { saw(&a[(i * 7) % (m + 1)]); a[(i * 7) % (m + 1)] = i; }
}
void collapsed(double *a, int n, int m)
{
    for (int k = 0; k < n * m; k++) { int i = k / m, j = k % m; saw(&a[i * m + j]); a[i * m + j] = k; }
}
void collapsed_unsigned(double *a, int n, int m)
{
    for (unsigned k = 0; k < (unsigned)(n * m); k++) {
        unsigned i = k / (unsigned)m, j = k % (unsigned)m;
        saw(&a[2 * (i * (unsigned)m + j) + (k >> 2)]); a[2 * (i * (unsigned)m + j) + (k >> 2)] = k;
    }
}
void masked(double *a, int n, int m)
{
    for (long i = 0; i < n; i++) { long k = (i * 3 + m) & 1023; saw(&a[k]); a[k] = i; }
}
void early_exit(double *a, int n, int m)
{
    for (int i = 0; i < n; i++) { if (a[i + m] > 1e300) break; saw(&a[i + m]); a[i + m] = i; }
}
void swapped(double *a, int n, int m)
{
    double *p = a, *q = a + 2 * m + 4;
    for (int i = 0; i < n; i++) { saw(&p[i % 2]); p[i % 2] = i; double *t = p; p = q; q = t; }
}
void loaded(double *a, int n, int m)
{
    for (int i = 0; i < n; i++) { saw(&a[(int)a[i] + m]); a[(int)a[i] + m] = i; }
}
"""

CASES = ["rect", "down", "stride", "triangle", "unsigned_up", "shifted_back", "gathered", "collapsed",
         "collapsed_unsigned", "masked", "early_exit", "swapped"]


@pytest.fixture(scope="module")
def module_and_lib(tmp_path_factory):
    """The optimized module, and a library of it with each function's bounds computed before its
    outermost loop into globals."""
    from adgen.ir_ad.analysis.flow import CFG
    from adgen.ir_ad.analysis.loops import LoopForest
    from adgen.ir_ad.analysis.ranges import Ranges
    from adgen.ir_ad.ir.builder import Builder, Declarations
    from adgen.ir_ad.reverse.sweeps.guards import Intervals

    tmp = tmp_path_factory.mktemp("ranges")
    module = optimized(SOURCE, tmp)
    text = module.text
    found, inserted, decls = {}, {}, Declarations(set(module.functions))
    for name in CASES + ["loaded"]:
        fn = module.functions["@" + name]
        cfg = CFG(fn)
        loops = LoopForest(fn, cfg)
        store = next(i for i in fn.instructions() if i.opcode == "store" and i.operands[0].type.text == "double")
        outer = loops.loop_of[cfg.block_of_inst(store)].ancestors()[0]
        access = Ranges(cfg, loops).access(store, outer)
        found[name] = access
        if access is None:
            continue
        lines: list[str] = []
        b = Builder(decls, lines, prefix=f"r.{name}")
        iv = Intervals(b)
        lo, hi = iv.bytes(access)
        ok = iv.valid()
        b.store(lo, _ptr(f"@lo.{name}"))
        b.store(hi, _ptr(f"@hi.{name}"))
        b.store(b.cast("zext", ok, _i64()), _ptr(f"@ok.{name}"))
        inserted[(fn.name, loops.entry_block(outer))] = lines
    out = []
    current = None
    for line in text.splitlines():
        if line.startswith("define"):
            current = line.split("@", 1)[1].split("(", 1)[0]
        block = line.split(":", 1)[0] if line and not line.startswith((" ", "define", ";", "}")) and ":" in line else None
        if block is not None:
            out_block = "%" + block
        out.append(line)
        if line.startswith("  ") and line.split()[0] in ("br", "switch") and current is not None:
            key = ("@" + current, out_block)
            if key in inserted:
                term = out.pop()
                out += inserted.pop(key) + [term]
    assert not inserted, inserted
    out += [f"@{k}.{n} = global i64 0" for n in found if found[n] is not None for k in ("lo", "hi", "ok")]
    out += decls.added
    ll = tmp / "bounds.ll"
    ll.write_text("\n".join(out) + "\n")
    so = tmp / "bounds.so"
    subprocess.run([sys.executable, "-m", "ziglang", "cc", "-O0", "-shared", "-fPIC", str(ll), "-o", str(so)],
                   check=True, capture_output=True)
    return found, C.CDLL(str(so))


def _ptr(name):
    from adgen.ir_ad.ir import PTR
    from adgen.ir_ad.ir.builder import V
    return V(PTR, name)


def _i64():
    from adgen.ir_ad.ir import I64
    return I64


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("n, m", [(1, 1), (4, 3), (7, 5), (10, 2)])
def test_bounds_hold_what_each_loop_writes(module_and_lib, name, n, m):
    found, lib = module_and_lib
    assert found[name] is not None, f"{name}: no range"
    buf = (C.c_double * (4 * n * n + 8 * m + 64))()
    base = C.addressof(buf) + 8 * 4 * m  # room below for shifted_back
    C.c_long.in_dll(lib, "seen_lo").value = -1
    C.c_long.in_dll(lib, "seen_hi").value = -1
    getattr(lib, name)(C.c_void_p(base), n, m)
    lo, hi, ok = (C.c_int64.in_dll(lib, f"{k}.{name}").value for k in ("lo", "hi", "ok"))
    seen_lo, seen_hi = C.c_long.in_dll(lib, "seen_lo").value, C.c_long.in_dll(lib, "seen_hi").value
    if seen_lo < 0:
        return  # the loop did not run (nor, maybe, the block before it that computes the bounds)
    assert ok == 1
    assert lo <= seen_lo and seen_hi <= hi, (name, lo - base, hi - base, seen_lo - base, seen_hi - base)
    if name in ("rect", "down", "unsigned_up", "shifted_back", "collapsed"):  # every iteration runs: exact
        assert (lo, hi) == (seen_lo, seen_hi)


def test_an_index_read_from_memory_has_no_range(module_and_lib):
    found, _ = module_and_lib
    assert found["loaded"] is None


def test_values_known_at_build_time_and_loose_bounds():
    """`(i + 2) % 5` for i < 5 as LLVM writes it, `(i + select(i > 2, 2^32 - 3, 2)) & (2^32 - 1)`:
    the values known at build time (every way the select goes) bound it to 0..6 and 2^32 - 3 ..
    2^32 - 1, an index no snapshot of a checkpointed loop can hold (regions.py calls it loose)."""
    from adgen.ir_ad.analysis.loops import Trip
    from adgen.ir_ad.analysis.ranges import Node, known_values
    from adgen.ir_ad.ir import I64, Operand, PTR
    from adgen.ir_ad.reverse.checkpoint.regions import _loose

    def leaf(v):
        return Node("leaf", operand=Operand(I64, str(v)))

    i = Node("iv", (leaf(0), leaf(0), leaf(5)), step=1,
             trip=Trip(Operand(I64, "0"), Operand(I64, "5"), 1, 0, signed=False, exact=True))
    assert known_values(i) == set(range(5))
    index = Node("mask", (Node("add", (Node("hull", (leaf(4294967293), leaf(2))), i)),), step=4294967295)
    assert known_values(index) == set(range(7)) | {4294967293, 4294967294, 4294967295}
    address = Node("gep", (Node("leaf", operand=Operand(PTR, "%x")), index))
    assert _loose(address) and not _loose(Node("gep", (Node("leaf", operand=Operand(PTR, "%x")), i)))
    assert _loose(Node("mask", step=4294967295))  # a mask of what nothing bounds
