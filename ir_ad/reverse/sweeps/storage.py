"""The arithmetic of the cache plan's storage, written the same way by both sweeps: trip counts,
an indexed group's size and array bases, the flat index of an iteration, and a slot's address.
The forward sweep calls it with its own values (counter phis, the descriptor it just made), the
reverse sweep with what it reads back (counter slots, descriptors it loads)."""

from __future__ import annotations

from adgen.ir_ad.ir.builder import Builder, V, integer
from adgen.ir_ad.reverse.plan.cache_plan import ARRAY_ALIGN, INDEXED, CacheSlot, Group, element_size
from adgen.ir_ad.reverse.plan.keys import align_of
from adgen.ir_ad.ir import I8, I64, Type, slot_size
from adgen.ir_ad.analysis.loops import Loop, Trip


def trip_count(b: Builder, trip: Trip, start: V, bound: V) -> V:
    """The number of iterations (i64), from the loop's start and bound values."""
    first, second = (bound, start) if trip.sign == 1 else (start, bound)
    if trip.scale:  # (pointers: the bytes between them, in steps of `scale` bytes)
        first, second = (b.cast("ptrtoint", x, I64) for x in (first, second))
        if trip.exact:
            diff = b.binary("sub", first, second)
            diff = b.value(I64, f"udiv exact {diff}, {trip.scale}") if trip.scale != 1 else diff
            return b.binary("add", diff, V(I64, str(trip.offset))) if trip.offset else diff
    if trip.exact:
        diff = b.binary("sub", first, second)
        if diff.type.bits != 64:
            diff = b.cast("zext", diff, I64)
        return b.binary("add", diff, V(I64, str(trip.offset))) if trip.offset else diff
    ext = "sext" if trip.signed else "zext"
    wide = [x if x.type.bits == 64 else b.cast(ext, x, I64) for x in (first, second)]
    diff = b.binary("sub", wide[0], wide[1])
    if trip.stride != 1:  # ceil((diff + slack) / stride), rounded towards 0 where negative (then max(1, ...) wins)
        diff = b.binary("sdiv", b.binary("add", diff, V(I64, str(trip.slack + trip.stride - 1))),
                        V(I64, str(trip.stride)))
    diff = b.binary("add", diff, V(I64, str(trip.offset)))
    return b.call("@llvm.smax.i64", I64, [diff, V(I64, "1")])


def _count(b: Builder, group: Group, scope: Loop, trips: list[V]) -> V:
    """Iterations of `scope` per execution of the group's root nest: the product of the trips from
    the root down to it."""
    total = None
    for loop, t in zip(group.members, trips):
        if loop.contains(scope):
            total = t if total is None else b.binary("mul", total, t)
    return total


def array_offsets(b: Builder, group: Group, trips: list[V], count: int, known: list[V] = (),
                  counts: dict[int, V] | None = None) -> list[V]:
    """Where the first `count` arrays of an indexed group start, in bytes from its buffer (the
    array after the last: where it ends, the bytes to allocate), continuing the offsets `known`
    already. The forward sweep computes them once, before the group's loops; the reverse sweep
    once per site, as far as it needs them: not for every slot's address. `counts` keeps the
    iterations per loop of the group between calls."""
    out, counts = list(known), {} if counts is None else counts
    for i in range(len(out), count):
        if not i:
            out.append(V(I64, "0"))
            continue
        before = group.slots[i - 1]
        if id(before.scope) not in counts:
            counts[id(before.scope)] = _count(b, group, before.scope, trips)
        size = b.binary("mul", counts[id(before.scope)], V(I64, str(element_size(before))))
        end = b.binary("add", out[-1], size)
        out.append(b.binary("and", b.binary("add", end, V(I64, str(ARRAY_ALIGN - 1))), V(I64, str(-ARRAY_ALIGN))))
    return out


def flat_index(b: Builder, group: Group, scope: Loop, counters: dict[int, V], trips: list[V]) -> V:
    """The element of `scope`'s arrays for the current iterations: ((i0*T1 + i1)*T2 + i2)…"""
    index = None
    for loop, t in zip(group.members, trips):
        if not loop.contains(scope):
            continue
        count = counters[id(loop)]
        index = count if index is None else b.binary("add", b.binary("mul", index, t), count)
    return index


def address(b: Builder, slot: CacheSlot, record: V, counters: dict[int, V], descriptor, offsets) -> V:
    """Where a slot's element for the current iterations is. `descriptor(group)` gives the
    group's buffer and trip counts (indexed) or its buffer (growable); `offsets(group)`, an
    indexed group's `array_offsets`."""
    group = slot.group
    if group is None:
        return b.gep(I8, record, V(I64, str(slot.offset))) if slot.offset else record
    desc = descriptor(group)
    if group.kind == INDEXED:
        base, trips = desc[0], list(desc[1:])
        start = offsets(group, slot.index + 1)[slot.index]
        array = b.gep(I8, base, start) if integer(start.ref) != 0 else base
        index = flat_index(b, group, slot.scope, counters, trips)
        return b.gep(Type(f"[{element_size(slot)} x i8]", "array", 0, (I8,), element_size(slot)), array, index)
    at = b.binary("mul", counters[id(group.root)], V(I64, str(group.stride)))
    if slot.offset:
        at = b.binary("add", at, V(I64, str(slot.offset)))
    return b.gep(I8, desc[0], at)


def parts_at(b: Builder, types, at: V) -> list[V]:
    """The addresses of a stored key's parts, one after another from `at`."""
    out, offset = [], 0
    for t in types:
        offset = (offset + align_of(t) - 1) // align_of(t) * align_of(t)
        out.append(b.gep(I8, at, V(I64, str(offset))) if offset else at)
        offset += slot_size(t)
    return out


