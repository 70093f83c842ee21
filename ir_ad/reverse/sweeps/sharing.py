"""Who adds to an array's adjoints, in the reverse sweep of a parallel region that every thread of
a team runs (specs/openmp.md). A load's adjoint is added to the shadow of what it read, which
other threads may add to at once: atomically, that is safe, and slow (a compare-and-exchange
per add, and cache lines passed between cores). Where the region's accesses can be bounded
(analysis/ranges.py), each thread instead works out at run time, for each array (pointer
argument) it reads, the bytes its own accesses span, and compares them with every other
thread's (templates/openmp.ll.j2, `adgen.omp.share.mode`):

- apart from every other thread's accesses (through any array): it adds as its own (a row of a
  matrix product's input, which one iteration reads);
- else, where its own stores are apart from its loads of the array, into a private buffer over
  those bytes, added to the shared adjoints at the end and at each barrier (a matrix product's
  weights, which every iteration reads);
- else atomically: the thread runs a copy of the reverse sweep adding so (reverse/mode.py).

Shadows mirror the primal memory: adjoints of apart bytes are apart. Arrays reached otherwise
(through a loaded pointer, a global), calls of functions with derivatives, and copies of memory
leave every add atomic."""

from __future__ import annotations

from adgen.ir_ad.analysis.ranges import Access, Ranges
from adgen.ir_ad.calls import COPIES, SET, kind_of
from adgen.ir_ad.ir import I1, I8, I32, I64, PTR, VOID, Operand
from adgen.ir_ad.ir.builder import Builder, V
from adgen.ir_ad.reverse.sweeps.guards import Intervals
from adgen.ir_ad.reverse.types import ReverseFacts
from adgen.ir_ad.shadows import LANES

_LOWEST, _HIGHEST = V(I64, str(-(1 << 63))), V(I64, str((1 << 63) - 1))
_PRIVATE_TYPES = ("double", "float")


class Sharing:
    """The arrays of one team pair whose adds the threads decide at run time, and what the
    reverse sweep's entry decided (`prologue`): per array, the offset from its shared shadow to
    where its adds go (its private buffer, or nothing)."""

    def __init__(self, d: ReverseFacts):
        self.d = d
        self.arrays: dict[str, tuple[list[Access], list[Access]]] = _arrays(d) if _eligible(d) else {}
        # array -> (offset to its adds, private buffer, shared shadow at its start, bytes): named before the entry
        # defines them (the blocks are reversed first)
        self.decided = {name: tuple(V(t, f'%"adgen.share.{k}.{part}"') for t, part in
                                    ((I64, "delta"), (PTR, "buffer"), (PTR, "shared"), (I64, "bytes")))
                        for k, name in enumerate(self.arrays) if name in d.activity.pointers}  # (those with shadows)

    def handles(self, pointer: Operand) -> str | None:
        """The array whose adds a load through `pointer` makes, where the threads decide them."""
        base = self.d.memory.base(pointer.value)
        return base.name if base.kind == "arg" and base.name in self.arrays else None

    def prologue(self, value, b: Builder) -> V:
        """At the reverse sweep's entry: the bytes each array's accesses span, written to this
        thread's slot; the barrier all threads meet at; each array's decision; whether all its adds
        are the thread's own (else it adds atomically: its caller's fallback). `value(operand)`:
        a primal value as the entry can use it."""
        bounds = Intervals(b, value)
        spans = {name: (_hull(b, bounds, loads), _hull(b, bounds, stores))
                 for name, (loads, stores) in self.arrays.items()}
        valid = bounds.valid()
        extents = b.call('@"adgen.omp.share.extents"', PTR, [])
        for k, (name, ((ll, hl), (ls, hs))) in enumerate(spans.items()):
            for j, (v, unknown) in enumerate(((ll, _LOWEST), (hl, _HIGHEST), (ls, _LOWEST), (hs, _HIGHEST))):
                at = b.gep(I8, extents, V(I64, str(32 * k + 8 * j)))
                b.store(b.select(valid, v, unknown), at, 8)
        b.call('@"adgen.omp.share.ready"', VOID, [])
        count = V(I64, str(len(spans)))
        own = V(I1, "true")
        for k, (name, ((ll, hl), _)) in enumerate(spans.items()):
            if name not in self.decided:
                continue
            memtype = self.d.activity.memtype(name)
            typed = memtype is not None and memtype.text in _PRIVATE_TYPES
            privatizable = valid if typed else V(I1, "false")
            mode = b.call('@"adgen.omp.share.mode"', I32, [V(I64, str(k)), count, privatizable])
            own = b.binary("and", own, b.value(I1, f"icmp ne {mode}, 2")) if own.ref != "true" else \
                b.value(I1, f"icmp ne {mode}, 2")
            private = b.value(I1, f"icmp eq {mode}, 1")
            buffer = b.call('@"adgen.omp.private"', PTR, [private, ll, hl])
            shadow = self.d.layout.named(name, PTR)[0]
            primal = b.cast("ptrtoint", V(PTR, name), I64)
            # (where the shadow of primal address a goes: buffer + (a - ll), the shared shadow + (a - primal))
            moved = b.binary("sub", b.binary("add", b.cast("ptrtoint", buffer, I64), primal),
                             b.binary("add", ll, b.cast("ptrtoint", shadow, I64)))
            made = (b.select(private, moved, V(I64, "0")), buffer, b.gep(I8, shadow, b.binary("sub", ll, primal)),
                    b.binary("sub", hl, ll))
            for named, v in zip(self.decided[name], made):
                b.emit(f"{named.ref} = select i1 true, {v}, {v}")
        return own

    def add(self, b: Builder, name: str, value: V, pointer: V, align: int | None) -> None:
        """A load's adjoint added where the thread decided for its array: as its own (its private
        buffer's, or the shared adjoint no other thread adds to)."""
        at = b.gep(I8, pointer, self.decided[name][0])
        layout = self.d.layout
        layout.store(b, layout.add(b, layout.load(b, value.type, (at,), align), (value,)), (at,), align)

    def flush(self, b: Builder, release: bool) -> None:
        """The private buffers added to the shared adjoints: at a barrier (zeroed for the next
        phase) and at the end (freed)."""
        for name, (_, buffer, shared_lo, size) in self.decided.items():
            memtype = self.d.activity.memtype(name)
            if memtype is not None and memtype.text in _PRIVATE_TYPES:
                b.call(f'@"adgen.omp.private.flush.{memtype.text}"', VOID,
                       [buffer, shared_lo, size, V(I1, "true" if release else "false")])


def _hull(b: Builder, bounds: Intervals, accesses: list[Access]) -> tuple[V, V]:
    """[lo, hi) of the bytes the accesses span (lo >= hi: none)."""
    if not accesses:
        return _HIGHEST, _LOWEST
    spans = [bounds.bytes(a) for a in accesses]
    return bounds.fold("@llvm.smin.i64", [lo for lo, _ in spans]), bounds.fold("@llvm.smax.i64", [hi for _, hi in spans])


def _eligible(d: ReverseFacts) -> bool:
    """A region's team pair with one lane of derivatives, no calls of functions with derivatives
    nor copies of memory (whose adds the threads could not compare)."""
    if not d.pattern.forked or d.layout.kind != LANES or d.layout.width != 1 or d.calls:
        return False
    return not any(i.opcode == "call" and kind_of(d.module, i) in (*COPIES, SET) for i in d.fn.instructions())


def _arrays(d: ReverseFacts) -> dict[str, tuple[list[Access], list[Access]]]:
    """The pointer arguments accessed, each with the ranges of its loads and of its stores over
    the outermost loop around each; none at all where an access (but to the thread's own memory)
    is through anything else, or cannot be bounded."""
    ranges = Ranges(d.cfg, d.loops)
    arrays: dict[str, tuple[list[Access], list[Access]]] = {}
    for inst in d.fn.instructions():
        if inst.opcode not in ("load", "store", "atomicrmw", "cmpxchg"):
            continue
        pointer = inst.operands[0] if inst.opcode != "store" else inst.operands[1]
        base = d.memory.base(pointer.value)
        if base.kind == "fresh":
            continue
        if base.kind != "arg" or inst.opcode in ("atomicrmw", "cmpxchg"):
            return {}
        home = d.loops.loop_of[d.cfg.block_of_inst(inst)]
        access = ranges.access(inst, home.ancestors()[0] if home is not None else None)
        if access is None:
            return {}
        loads, stores = arrays.setdefault(base.name, ([], []))
        (loads if inst.opcode == "load" else stores).append(access)
    return arrays

