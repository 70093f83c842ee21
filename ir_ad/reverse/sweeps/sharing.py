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
  those bytes (a matrix product's weights, which every iteration reads); at each barrier and at
  the end, the threads meet and add all buffers to the shared adjoints, each thread a share of
  the bytes, without atomics;
- else atomically: the thread runs a copy of the reverse sweep adding so (reverse/mode.py).

Shadows mirror the primal memory: adjoints of apart bytes are apart. An array read outside loops
only (a reduction's shared variable, which every thread's combine reads) is not decided for: its
few adds stay atomic. Arrays reached otherwise (through a loaded pointer, a global), calls of
functions with derivatives, and copies of memory leave every add atomic."""

from __future__ import annotations

import copy

from adgen.ir_ad.analysis.ranges import Access, Ranges
from adgen.ir_ad.calls import COPIES, SET, kind_of
from adgen.ir_ad.ir import I1, I8, I32, I64, PTR, VOID, Operand
from adgen.ir_ad.ir.builder import Builder, V
from adgen.ir_ad.reverse.sweeps.guards import Intervals
from adgen.ir_ad.reverse.types import ReverseFacts
from adgen.ir_ad.shadows import LANES

_LOWEST, _HIGHEST = V(I64, str(-(1 << 63))), V(I64, str((1 << 63) - 1))
_PRIVATE_TYPES = {"double": 8, "float": 4}
SPAN = 40  # bytes per array in a thread's slot: its loads' and its stores' [lo, hi), its private buffer


class Sharing:
    """The arrays of one team pair whose adds the threads decide at run time, and what the
    reverse sweep's entry decided (`prologue`): per array, the offset from its shared shadow to
    where its adds go (its private buffer, or nothing)."""

    def __init__(self, d: ReverseFacts):
        self.d, self.adds = d, True
        self.arrays: dict[str, tuple[list[Access], list[Access]]] = _arrays(d) if _eligible(d) else {}
        # array -> the offset from its shared shadow to where its adds go: named before the entry defines it (the
        # blocks are reversed first); for the arrays with shadows read inside loops (the others' few adds, a
        # reduction's combine say, stay atomic: deciding for them would make every thread add atomically)
        looped = _read_in_loops(d, self.arrays)
        self.decided = {name: V(I64, f'%"adgen.share.{k}.delta"') for k, name in enumerate(self.arrays)
                        if name in d.activity.pointers and name in looped}

    def bystander(self) -> Sharing:
        """The same arrays for the copy of the reverse sweep adding atomically: it decides and
        adds nothing, and takes part in adding the others' private buffers (`flush`)."""
        other = copy.copy(self)
        other.adds = False
        return other

    def handles(self, pointer: Operand) -> str | None:
        """The array whose adds a load through `pointer` makes, where the threads decide them."""
        base = self.d.memory.base(pointer.value)
        return base.name if self.adds and base.kind == "arg" and base.name in self.decided else None

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
                b.store(b.select(valid, v, unknown), b.gep(I8, extents, V(I64, str(SPAN * k + 8 * j))), 8)
            b.store(V(PTR, "null"), b.gep(I8, extents, V(I64, str(SPAN * k + 32))), 8)
        b.call('@"adgen.omp.share.barrier"', VOID, [])
        count = V(I64, str(len(spans)))
        modes = {name: b.call('@"adgen.omp.share.mode"', I32, [V(I64, str(k)), count, self._privatizable(
            b, name, valid, *spans[name][0])]) for k, name in enumerate(spans) if name in self.decided}
        own = V(I1, "true")
        for mode in modes.values():
            own = b.binary("and", own, b.value(I1, f"icmp ne {mode}, 2"))
        for k, name in enumerate(spans):
            if name not in modes:
                continue
            (ll, hl), _ = spans[name]
            private = b.binary("and", own, b.value(I1, f"icmp eq {modes[name]}, 1"))
            buffer = b.call('@"adgen.omp.private"', PTR, [private, ll, hl])
            b.store(buffer, b.gep(I8, extents, V(I64, str(SPAN * k + 32))), 8)
            shadow = self.d.layout.named(name, PTR)[0]
            primal = b.cast("ptrtoint", V(PTR, name), I64)
            # (where the shadow of primal address a goes: buffer + (a - ll), the shared shadow + (a - primal))
            moved = b.binary("sub", b.binary("add", b.cast("ptrtoint", buffer, I64), primal),
                             b.binary("add", ll, b.cast("ptrtoint", shadow, I64)))
            b.emit(f"{self.decided[name].ref} = select {private}, {moved}, i64 0")
        return own

    def _privatizable(self, b: Builder, name: str, valid: V, lo: V, hi: V) -> V:
        """Whether the array's adjoints may go to a private buffer over [lo, hi): its bounds
        known, it holds floats of one type, and lo and hi are whole elements of it apart from
        every other thread's (aligned to the type: the threads add the buffers element by element)."""
        memtype = self.d.activity.memtype(name)
        if memtype is None or memtype.text not in _PRIVATE_TYPES:
            return V(I1, "false")
        misaligned = b.binary("and", b.binary("or", lo, hi), V(I64, str(_PRIVATE_TYPES[memtype.text] - 1)))
        return b.binary("and", valid, b.value(I1, f"icmp eq {misaligned}, 0"))

    def add(self, b: Builder, name: str, value: V, pointer: V, align: int | None) -> None:
        """A load's adjoint added where the thread decided for its array: as its own (its private
        buffer's, or the shared adjoint no other thread adds to)."""
        at = b.gep(I8, pointer, self.decided[name])
        layout = self.d.layout
        layout.store(b, layout.add(b, layout.load(b, value.type, (at,), align), (value,)), (at,), align)

    def flush(self, b: Builder, release: bool) -> None:
        """The threads' private buffers added to the shared adjoints, at a barrier (zeroed: the next
        phase's adds go there) and at the end (freed once all are added). Every thread of the team
        calls it at the same points, in the copy adding atomically too (its `bystander`): it
        meets the others at the barriers and adds its share of their buffers."""
        memtypes = {name: self.d.activity.memtype(name) for name in self.decided}
        typed = [(k, name, memtypes[name].text) for k, name in enumerate(self.arrays)
                 if memtypes.get(name) is not None and memtypes[name].text in _PRIVATE_TYPES]
        if not typed:
            return
        b.call('@"adgen.omp.share.barrier"', VOID, [])  # (every thread's adds made)
        for k, name, t in typed:
            shadow = self.d.layout.named(name, PTR)[0]
            b.call(f'@"adgen.omp.private.add.{t}"', VOID,
                   [V(I64, str(k)), shadow, V(PTR, name), V(I1, "false" if release else "true")])
        if release:
            b.call('@"adgen.omp.share.barrier"', VOID, [])  # (every thread's share added)
            for k, _, _ in typed:
                b.call('@"adgen.omp.private.release"', VOID, [V(I64, str(k))])


def _hull(b: Builder, bounds: Intervals, accesses: list[Access]) -> tuple[V, V]:
    """[lo, hi) of the bytes the accesses span (lo >= hi: none), leaving out those that span none
    (in a loop this thread runs no iteration of)."""
    if not accesses:
        return _HIGHEST, _LOWEST
    spans = []
    for lo, hi in map(bounds.bytes, accesses):
        some = b.value(I1, f"icmp slt {lo}, {hi.ref}")
        spans.append((b.select(some, lo, _HIGHEST), b.select(some, hi, _LOWEST)))
    return bounds.fold("@llvm.smin.i64", [lo for lo, _ in spans]), bounds.fold("@llvm.smax.i64", [hi for _, hi in spans])


def _eligible(d: ReverseFacts) -> bool:
    """A region's team pair with one lane of derivatives, no calls of functions with derivatives
    nor copies of memory (whose adds the threads could not compare)."""
    if not d.pattern.forked or d.layout.kind != LANES or d.layout.width != 1 or d.calls:
        return False
    return not any(i.opcode == "call" and kind_of(d.module, i) in (*COPIES, SET) for i in d.fn.instructions())


def _read_in_loops(d: ReverseFacts, arrays) -> set[str]:
    """The arrays a load inside a loop reads."""
    return {d.memory.base(i.operands[0].value).name for i in d.fn.instructions()
            if i.opcode == "load" and d.loops.loop_of[d.cfg.block_of_inst(i)] is not None} & set(arrays)


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

