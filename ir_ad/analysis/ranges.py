"""The bytes a memory access may touch over one execution of a loop, as an expression of values
known before the loop starts (its preheader): the undo log's run-time checks (specs/abi.md,
"Stores undone") compare what a loop nest writes with what the reverse sweep reads again.

An address is followed back through getelementptr, integer arithmetic, extensions and selects
to values defined outside the loop (taken as they are) and to the induction variables of loops
inside it, whose values lie between their start and their start plus (trip count - 1) steps; a
start or bound defined inside the loop is itself bounded the same way. A quotient or remainder
(by a divisor of at least one, of a dividend that is not negative) is bounded too: OpenMP's
`collapse(n)` indexes by the collapsed loop's counter divided and taken modulo the inner trip
counts. The result is a tree of `Node`s over those values, evaluated at run time by interval
arithmetic (an upper bound of every address, a lower bound, both in 64 bits): a phi that only
passes values around (a peeled last iteration's, pointers swapped each iteration) is bounded by
the values it passes; a loop's exits other than its latch's (a `break`, a bounds check's panic)
only end it sooner; anything else (a loaded index, a counter that is not an induction variable,
a loop whose trip count is not known when it starts, narrow arithmetic that may wrap) leaves the
access without a range, and its store is logged every time. Narrow integer arithmetic that LLVM
does not mark as free of signed wrap (`nsw`) is bounded in 64 bits and valid
where those bounds fit its width (`Node.bits`)."""

from __future__ import annotations

from dataclasses import dataclass

from adgen.ir_ad.analysis.flow import CFG
from adgen.ir_ad.analysis.loops import Loop, LoopForest, Trip
from adgen.ir_ad.ir import I64, Instruction, Operand, Type



@dataclass(frozen=True)
class Node:
    """An interval-valued expression. `kind`:
    - "leaf": `operand`, defined before the loop (an integer is taken as signed);
    - "iv": an induction variable stepping by `step` from `args[0]`, of a loop whose `trip`
      bounds `args[1]` (its start) and `args[2]` (its bound) give;
    - "add", "sub", "mul" of `args`; "scale" of `args[0]` by the constant `step`;
    - "div", "rem": the quotient and remainder of `args[0]` by `args[1]`, valid where the
      dividend is not negative and the divisor at least one (signed or unsigned alike then);
    - "mask": `args[0]` (if any: else unbounded) and the constant `step`, not negative: between 0
      and the mask (and `args[0]`, where that is not negative), which LLVM writes for a zero
      extension of a truncation (`and i64 %n, 4294967295`);
    - "zext" of `args[0]`, valid where its lower bound is not negative; "fit": `args[0]` itself
      (a truncation, valid where it fits `bits`);
    - "hull" of `args` (a select of either);
    - "gep": `inst` (a getelementptr) with `args` its base and indices.
    `bits`: the width the value must fit, signed, for its bounds to hold (64: nothing to check)."""

    kind: str
    args: tuple["Node", ...] = ()
    operand: Operand | None = None
    step: int = 0
    trip: Trip | None = None
    inst: Instruction | None = None
    bits: int = 64


@dataclass(frozen=True)
class Access:
    """The bytes [address, address + size) of a load or store, over a loop's execution."""

    address: Node
    size: Type  # the type read or written


class Ranges:
    """The ranges of the accesses of one function (memoized per value and loop)."""

    def __init__(self, cfg: CFG, loops: LoopForest):
        self.cfg, self.loops = cfg, loops
        self._memo: dict[tuple[str, int], Node | None] = {}

    def access(self, inst: Instruction, loop: Loop | None) -> Access | None:
        """A load's or store's bytes over one execution of `loop` (None: at the access itself)."""
        if inst.opcode == "load":
            pointer, t = inst.operands[0], inst.type
        elif inst.opcode == "store":
            pointer, t = inst.operands[1], inst.operands[0].type
        else:
            return None
        if t.kind not in ("int", "float", "ptr", "vector"):
            return None
        if loop is None:
            return Access(Node("leaf", operand=pointer), t)
        node = self.value(pointer, loop)
        return Access(node, t) if node is not None else None

    def value(self, op: Operand, loop: Loop, depth: int = 0) -> Node | None:
        if not op.is_local or op.value not in self.cfg.defs or self.cfg.block_of[op.value] not in loop.body:
            if op.type.kind not in ("int", "ptr") or op.value in ("undef", "poison"):
                return None
            return Node("leaf", operand=op)
        key = (op.value, id(loop))
        if key not in self._memo:
            self._memo[key] = None  # (a cycle through phis: no range)
            self._memo[key] = self._defined(self.cfg.defs[op.value], loop, depth) if depth < 64 else None
        return self._memo[key]

    def _defined(self, inst: Instruction, loop: Loop, depth: int) -> Node | None:
        op, t = inst.opcode, inst.type
        words = inst.text.split()

        def sub(k: int) -> Node | None:
            return self.value(inst.operands[k], loop, depth + 1)

        if op == "phi":
            return self._induction(inst, loop, depth) or self._joined(inst, loop, depth)
        if op in ("add", "sub", "mul", "shl", "or"):
            if t.kind != "int":
                return None
            if op == "or" and "disjoint" not in words:
                return None
            bits = t.bits if t.bits < 64 and op != "or" and "nsw" not in words else 64  # (else it may wrap)
            a = sub(0)
            if a is None:
                return None
            second = inst.operands[1]
            if op in ("shl", "mul") and second.is_constant:
                factor = 1 << int(second.value) if op == "shl" else int(second.value)
                return Node("scale", (a,), step=factor, bits=bits)
            if op == "shl":
                return None
            b = sub(1)
            if b is None:
                return None
            return Node("add" if op == "or" else op, (a, b), bits=bits)
        if op in ("udiv", "sdiv", "urem", "srem", "lshr", "ashr") and t.kind == "int":
            a = sub(0)
            second = inst.operands[1]
            if op in ("lshr", "ashr"):  # by a constant: a quotient by a power of two
                if not second.is_constant or not 0 <= int(second.value) < 63:
                    return None
                divisor = Node("leaf", operand=Operand(I64, str(1 << int(second.value))))
            else:
                divisor = sub(1)
            if a is None or divisor is None:
                return None
            return Node("rem" if op.endswith("rem") else "div", (a, divisor))
        if op == "and" and t.kind == "int" and inst.operands[1].is_constant and \
                _constant(inst.operands[1].value) is not None and _constant(inst.operands[1].value) >= 0:
            a = sub(0)
            return Node("mask", (a,) if a is not None else (), step=_constant(inst.operands[1].value))
        if op == "sext" or op == "freeze":
            return sub(0)
        if op == "zext":
            a = sub(0)
            return None if a is None else Node("zext", (a,))
        if op == "trunc" and t.kind == "int":  # the same value where it fits the narrower width
            a = sub(0)
            return None if a is None else Node("fit", (a,), bits=t.bits)
        if op == "select":
            a, b = sub(1), sub(2)
            return None if a is None or b is None else Node("hull", (a, b))
        if op == "getelementptr" and t.kind == "ptr":
            parts = [sub(k) for k in range(len(inst.operands))]
            if any(p is None for p in parts) or any(o.type.kind == "vector" for o in inst.operands):
                return None
            return Node("gep", tuple(parts), inst=inst)
        return None

    def _induction(self, phi: Instruction, loop: Loop, depth: int) -> Node | None:
        """An induction variable of a loop inside `loop` (or `loop` itself) with a known trip count."""
        inner = self.loops.loop_of[self.cfg.block_of[phi.result]]
        if inner is None or inner.header != self.cfg.block_of[phi.result] or not loop.contains(inner):
            return None
        ind = inner.inductions.get(phi.result)
        trip = self.loops.bounding_trip(inner)
        if ind is None or trip is None or not ind.step.is_constant or phi.type.kind != "int" or trip.scale:
            return None
        parts = [self.value(o, loop, depth + 1) for o in (ind.start, trip.start, trip.bound)]
        if any(p is None for p in parts):
            return None
        bits = phi.type.bits if phi.type.bits < 64 and not self._steps_without_wrap(phi, inner) else 64
        return Node("iv", tuple(parts), step=int(ind.step.value), trip=trip, bits=bits)

    def _joined(self, phi: Instruction, loop: Loop, depth: int) -> Node | None:
        """A phi that only passes values around: the hull of the values that are not phis among
        those it and the phis it takes from (inside the loop) take, each bounded over the loop's
        run (a loop's last iteration peeled off, pointers swapped each iteration). A value
        computed from the phis themselves (a counter) has no bound: neither has the phi."""
        members, seen, todo = [], {phi.result}, [phi]
        while todo:
            for v, _ in todo.pop().incoming:
                inner = self.cfg.defs.get(v.value) if v.is_local else None
                if inner is not None and inner.opcode == "phi" and self.cfg.block_of[v.value] in loop.body:
                    if v.value not in seen:
                        seen.add(v.value)
                        todo.append(inner)
                    continue
                node = self.value(v, loop, depth + 1)
                if node is None or len(members) > 16:
                    return None
                if node not in members:
                    members.append(node)
        if not members:
            return None
        out = members[0]
        for m in members[1:]:
            out = Node("hull", (out, m))
        return out

    def _steps_without_wrap(self, phi: Instruction, loop: Loop) -> bool:
        """The next value of a narrow induction variable is computed without signed wrap (nsw)."""
        latch = next(v for v, frm in phi.incoming if frm == loop.latches[0])
        step = self.cfg.defs.get(latch.value)
        return step is not None and "nsw" in step.text.split()


_FEW = 1024  # the most values `known_values` enumerates


def known_values(node: Node) -> frozenset[int] | None:
    """The values a node takes, where its leaves are constants and its induction variables those
    of loops counted by constants (at most `_FEW` of them): known at build time, and tighter than
    intervals where LLVM wraps an index around (`(i + 2) % 5` written as `(i + select(i > 2,
    2^32 - 3, 2)) & (2^32 - 1)`); None otherwise. Pairs of sets combine every way (an upper bound
    where the two sides move together)."""
    kind = node.kind
    if kind == "leaf":
        value = _constant(node.operand.value) if node.operand.is_constant else None
        return None if value is None else frozenset([value])
    if kind == "iv":
        parts = [known_values(a) for a in node.args]
        if any(p is None or len(p) != 1 for p in parts) or node.trip.stride != 1:
            return None
        start, first, bound = (next(iter(p)) for p in parts)
        trip = node.trip
        count = trip.sign * (bound - first) + trip.offset  # (storage.trip_count's, in constants)
        if trip.exact and count < 1:
            return None  # (it counts around its integer's width)
        count = max(1, count)
        return None if count > _FEW else frozenset(start + k * node.step for k in range(count))
    if kind == "gep" or not node.args and kind != "mask":
        return None
    args = [known_values(a) for a in node.args]
    if any(a is None for a in args):
        return None
    if kind in ("add", "sub", "mul", "div", "rem"):
        a, b = args
        if len(a) * len(b) > _FEW or kind in ("div", "rem") and (min(b) < 1 or min(a) < 0):
            return None
        op = {"add": int.__add__, "sub": int.__sub__, "mul": int.__mul__, "div": int.__floordiv__,
              "rem": int.__mod__}[kind]
        out = frozenset(op(x, y) for x in a for y in b)
    elif kind == "scale":
        out = frozenset(x * node.step for x in args[0])
    elif kind == "mask":
        out = frozenset(x & node.step for x in args[0]) if args else None
    elif kind == "hull":
        out = args[0] | args[1]
    elif kind == "zext":
        out = args[0] if min(args[0]) >= 0 else None
    elif kind == "fit":
        out = args[0]
    else:
        return None
    if out is None or len(out) > _FEW:
        return None
    limit = 1 << (node.bits - 1)
    return out if all(-limit <= x < limit for x in out) else None


def _constant(text: str) -> int | None:
    """An integer constant's value (LLVM writes them in decimal), None for any other operand."""
    try:
        return int(text)
    except ValueError:
        return None
