"""Loads the forward sweep stores a loop's worth of at once: one `memcpy` before the loop in
place of a store in every iteration. Part of the plan, printed by `--explain`.

A loop reading `y[i - 1]` that the plan stores per iteration (`y` is written again before the
reverse sweep) stores the same bytes, in the same order, as a copy of `y[start - 1 .. end - 1)`
made before the loop starts, provided nothing in the loop writes `y`. The copy moves them as
one block (Enzyme's caches of such loads are copies too); the loop is left with its own work
(GradBench's ode: its four Runge-Kutta stages each stored `y[i - 1]` in the loop; LLVM's own
loop idiom found one of the four, its alias analysis taking a vector's null pointer, the size 0
case, for a pointer the others may share). The reverse sweep reads the array as it would have.

A load qualifies when its value is stored per iteration of the loop it is in (an indexed group,
whose trip counts are known when the loop starts: the loop leaves from its latch only, after as
many iterations as its trip count says), it runs in every iteration (its block dominates the
latch), it is neither atomic nor volatile, its address steps by its own size each iteration (an
induction variable of the loop, widened, offset or scaled by constants, indexing a base fixed in
the loop: `gep double, %y, %i` and a constant byte offset after it), and nothing in the loop may
write memory of its base (Memory's writes: stores, calls)."""

from __future__ import annotations

from dataclasses import dataclass

from adgen.ir_ad.analysis.loops import Loop
from adgen.ir_ad.analysis.typed_bytes import size_of
from adgen.ir_ad.ir import Instruction, Type, slot_size
from adgen.ir_ad.reverse.plan.keys import VALUE, Key, Keys

_SCALARS = {("int", 8), ("int", 16), ("int", 32), ("int", 64), ("float", 16), ("float", 32), ("float", 64)}


def _sized(t: Type) -> bool:
    """Whether a load's slot_size is LLVM's size of its type in memory: a scalar of whole bytes
    or a pointer (not x86_fp80, whose 10 bytes take 16)."""
    return t.kind == "ptr" or (t.kind, t.bits) in _SCALARS


@dataclass(frozen=True)
class BlockCopy:
    """A load whose values over `loop`'s run are copied before it starts, from its address in
    the loop's first iteration: computed from `iv` (an induction variable of the loop) at its
    start, and from values fixed in the loop."""

    key: Key
    loop: Loop
    iv: str


def block_copies(keys: Keys, slots) -> tuple[BlockCopy, ...]:
    """Those of `slots` (the plan's arrays of indexed groups, of keys stored there only) that
    hold a load copied as a block."""
    found = []
    for slot in slots:
        if slot.key.kind == VALUE and slot.scope is not None:
            copy = _copy(keys, slot.key, slot.scope)
            if copy is not None:
                found.append(copy)
    return tuple(found)


def _copy(keys: Keys, key: Key, loop: Loop) -> BlockCopy | None:
    cfg = keys.cfg
    load = cfg.defs.get(key.name)
    if load is None or load.opcode != "load" or " atomic " in load.text or " volatile " in f" {load.text} ":
        return None
    if not _sized(load.type):
        return None
    block = cfg.block_of[key.name]
    if keys.loops.loop_of[block] is not loop or loop.trip is None or len(loop.latches) != 1 or \
            loop.preheader is None or set(cfg.succs[loop.preheader]) != {loop.header} or \
            not cfg.dominates(block, loop.latches[0]):
        return None  # (the copy is made where the loop is certain to start: it reads what the loop reads)
    ivs: set[str] = set()
    if _step(keys, loop, load.operands[0].value, ivs) != slot_size(load.type) or len(ivs) != 1:
        return None
    base = keys.memory.base(load.operands[0].value)
    for inst, target in keys.memory.writes:
        if cfg.block_of_inst(inst) in loop.body and keys.memory.may_alias(base, target) and \
                (inst.opcode != "store" or keys.memory.types_may_alias(load, inst)):
            return None
    return BlockCopy(key, loop, ivs.pop())


def _step(keys: Keys, loop: Loop, value: str, ivs: set[str]) -> int | None:
    """How much `value` grows from one iteration of `loop` to the next (bytes, for a pointer),
    adding the induction variables it is computed from to `ivs`; None where it is not an
    induction variable's affine function of that kind."""
    cfg = keys.cfg
    if not value.startswith("%") or value not in cfg.defs or cfg.block_of[value] not in loop.body:
        return 0  # (fixed in the loop)
    if value in loop.inductions:
        step = loop.inductions[value].step
        if not step.is_constant:
            return None
        ivs.add(value)
        return int(step.value)
    inst = cfg.defs[value]
    ops = inst.operands
    step: int | None = None
    if inst.opcode in ("sext", "zext"):
        inner = cfg.defs.get(ops[0].value)
        flag = "nsw" if inst.opcode == "sext" else "nuw"
        if ops[0].value in loop.inductions or (inner is not None and f" {flag} " in f" {inner.text} "):
            step = _step(keys, loop, ops[0].value, ivs)  # (its narrow arithmetic does not wrap)
    elif inst.opcode in ("add", "sub") and len(ops) == 2:
        left, right = (_step(keys, loop, o.value, ivs) for o in ops)
        if left is not None and right is not None and (inst.opcode == "add" or not right):
            step = left + right if inst.opcode == "add" else left
    elif inst.opcode in ("shl", "mul") and len(ops) == 2 and ops[1].is_constant and ops[1].value.lstrip("-").isdigit():
        inner = _step(keys, loop, ops[0].value, ivs)
        c = int(ops[1].value)
        step = None if inner is None else inner << c if inst.opcode == "shl" else inner * c
    elif inst.opcode == "or" and " disjoint " in f" {inst.text} " and ops[1].is_constant:
        step = _step(keys, loop, ops[0].value, ivs)
    elif inst.opcode == "getelementptr":
        step = _gep_step(keys, loop, inst, ivs)
    return step


def _gep_step(keys: Keys, loop: Loop, gep: Instruction, ivs: set[str]) -> int | None:
    """A getelementptr's step in bytes: its base's, and each index's times the size it scales
    (LLVM's allocation size of the type it indexes: a `<3 x float>` takes 16)."""
    total = _step(keys, loop, gep.operands[0].value, ivs)
    t: Type | None = gep.source_type
    for k, index in enumerate(gep.operands[1:]):
        if total is None or t is None:
            return None
        step = _step(keys, loop, index.value, ivs)
        if step is None:
            return None
        t = keys.module.struct_type(t)  # (a named struct's body)
        if k and t.kind not in ("array", "vector"):
            if step or t.kind != "struct":  # (a field: a constant, of a struct whose layout is at hand)
                return None
            t = t.elems[int(index.value)] if index.value.isdigit() and int(index.value) < len(t.elems) else None
            continue
        if k:
            t = t.elems[0]
        total += step * size_of(keys.module, t)
    return total
