"""The natural loops of a function as a forest, with what reverse mode needs of each loop: its
header, the blocks that enter it and the latches that go back to it, its exits, its affine
induction variables, and its trip count where that is known when the loop starts.

The reverse sweep runs each loop's iterations backwards by counting them, and the cache plan
indexes what it stores by the iteration numbers of the loops around it; a loop whose trip count
is known on entry can have its storage allocated once, before it starts."""

from __future__ import annotations

from dataclasses import dataclass, field

from adgen.ir_ad.analysis.flow import CFG
from adgen.ir_ad.ir import I64, Function, Instruction, Operand, slot_size

# icmp predicates: the predicate with swapped operands, and the one that is true when it is false
_SWAPPED = {"eq": "eq", "ne": "ne", "slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle", "ult": "ugt", "ugt": "ult",
            "ule": "uge", "uge": "ule"}
_NEGATED = {"eq": "ne", "ne": "eq", "slt": "sge", "sge": "slt", "sgt": "sle", "sle": "sgt", "ult": "uge", "uge": "ult",
            "ugt": "ule", "ule": "ugt"}


class Irreducible(Exception):
    """A cycle with more than one way in: reverse mode needs every loop to have one header."""

    def __init__(self, block: str):
        super().__init__(block)
        self.block = block


@dataclass(frozen=True)
class Induction:
    """An affine induction variable: `start + step * k` at iteration k (counted from 0); a
    pointer's (a loop walking an array by pointer, `for (; first != last; ++first)`) steps by
    a constant number of bytes."""

    start: Operand  # defined before the loop
    step: Operand  # a constant or a value defined before the loop (a pointer's: bytes, constant)

    @property
    def pointer(self) -> bool:
        return self.start.type.kind == "ptr"


@dataclass(frozen=True)
class Trip:
    """The number of iterations of a loop, known when it starts: `max(1, sign * (bound - start) + offset)`
    in `bits`-bit arithmetic extended to i64 (signed or not), or exactly `bound - start` (mod 2^bits)
    when the loop runs until its induction variable equals the bound (a pointer: its difference
    in bytes divided by the `scale` it steps by). A loop stepping by `stride`
    (more than 1, counting up or down) runs `max(1, ceil((sign * (bound - start) + slack) / stride) + offset)`
    times: `slack` is 1 where the comparison includes the bound (`<=`, `>=`)."""

    start: Operand
    bound: Operand
    sign: int  # +1 counting up, -1 counting down
    offset: int
    signed: bool
    exact: bool  # runs until equal: no max(1, ...), the difference taken modulo 2^bits
    stride: int = 1
    slack: int = 0
    scale: int = 0  # a pointer's: the bytes it steps by (its difference divided by them); 0 for an integer's

    @property
    def operands(self) -> list[Operand]:
        return [self.start, self.bound]


@dataclass(eq=False)
class Loop:
    header: str
    body: set[str]
    parent: "Loop | None" = None
    children: list["Loop"] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)  # predecessors of the header outside the loop
    latches: list[str] = field(default_factory=list)  # predecessors of the header inside it
    exits: list[tuple[str, str]] = field(default_factory=list)  # (block inside, block outside) edges
    inductions: dict[str, Induction] = field(default_factory=dict)  # header phi -> its progression
    trip: Trip | None = None

    @property
    def depth(self) -> int:
        return 1 + (self.parent.depth if self.parent else 0)

    @property
    def preheader(self) -> str | None:
        """The one block entering the loop from outside, when there is one (it may branch elsewhere too)."""
        return self.entries[0] if len(self.entries) == 1 else None

    def ancestors(self) -> list["Loop"]:
        """This loop and the loops around it, outermost first."""
        chain, loop = [], self
        while loop is not None:
            chain.append(loop)
            loop = loop.parent
        return chain[::-1]

    def contains(self, other: "Loop | None") -> bool:
        while other is not None:
            if other is self:
                return True
            other = other.parent
        return False

    def __repr__(self) -> str:
        return f"Loop({self.header})"


def common(a: Loop | None, b: Loop | None) -> Loop | None:
    """The innermost loop containing both (None: the function's top level)."""
    if a is None or b is None:
        return None
    outer = set(map(id, a.ancestors()))
    for loop in reversed(b.ancestors()):
        if id(loop) in outer:
            return loop
    return None


class LoopForest:
    def __init__(self, fn: Function, cfg: CFG):
        self.fn, self.cfg = fn, cfg
        self.loops: list[Loop] = []  # outer loops before the loops they contain
        bodies = sorted(cfg.loops.items(), key=lambda item: -len(item[1]))
        self.by_header: dict[str, Loop] = {}
        for header, body in bodies:
            loop = Loop(header, set(body))
            parent = next((p for p in reversed(self.loops) if header in p.body and p.header != header), None)
            loop.parent = parent
            if parent is not None:
                parent.children.append(loop)
            self.loops.append(loop)
            self.by_header[header] = loop
        self.loop_of: dict[str, Loop | None] = {b: None for b in cfg.blocks}
        for loop in self.loops:  # inner loops come later and win
            for b in loop.body:
                self.loop_of[b] = loop
        for loop in self.loops:
            self._describe(loop)

    def check_reducible(self) -> None:
        """Raises Irreducible for an edge into a cycle that does not go to its header."""
        order = {b: i for i, b in enumerate(self.cfg.order)}
        for b in self.cfg.order:
            for s in self.cfg.succs[b]:
                if s in order and order[s] <= order[b] and not self.cfg.dominates(s, b):
                    raise Irreducible(s)

    def _describe(self, loop: Loop) -> None:
        cfg = self.cfg
        for p in cfg.preds[loop.header]:
            (loop.latches if p in loop.body else loop.entries).append(p)
        for b in sorted(loop.body, key=cfg.blocks.index):
            for s in cfg.succs[b]:
                if s not in loop.body:
                    loop.exits.append((b, s))
        if len(loop.entries) != 1 or len(loop.latches) != 1:
            return
        header = self.block(loop.header)
        for inst in header.instructions:
            if inst.opcode != "phi" or inst.type.kind not in ("int", "ptr") or len(inst.incoming) != 2:
                continue
            start = next(v for v, frm in inst.incoming if frm == loop.entries[0])
            if inst.type.kind == "ptr":
                step = self._pointer_step(next(v for v, frm in inst.incoming if frm == loop.latches[0]), inst.result)
                if step is not None and self.invariant(start, loop):
                    loop.inductions[inst.result] = Induction(start, Operand(I64, str(step)))
                continue
            nxt = self._step_of(cfg.defs.get(next(v for v, frm in inst.incoming if frm == loop.latches[0]).value),
                                inst.result)
            if nxt is None:
                continue
            step = nxt.operands[1]
            if not self.invariant(step, loop) or not self.invariant(start, loop):
                continue
            if nxt.opcode == "sub":
                if not step.is_constant:
                    continue
                step = Operand(step.type, str(-int(step.value)))
            loop.inductions[inst.result] = Induction(start, step)
        loop.trip = self._trip(loop)

    def _step_of(self, inst: Instruction | None, iv: str) -> Instruction | None:
        """The `add iv, step` (or sub) an induction variable's next value is: the instruction
        itself, or the one every incoming value of a phi is (the same step on every path, which
        GVN leaves as a phi of copies)."""
        if inst is not None and inst.opcode == "phi":
            steps = [self.cfg.defs.get(v.value) for v, _ in inst.incoming]
            if not steps or any(s is None or s.opcode not in ("add", "sub") or s.operands[0].value != iv
                                for s in steps):
                return None
            if len({(s.opcode, s.operands[1].value) for s in steps}) != 1:
                return None
            return steps[0]
        if inst is None or inst.opcode not in ("add", "sub") or inst.operands[0].value != iv:
            return None
        return inst

    def _pointer_step(self, latch: Operand, iv: str) -> int | None:
        """The bytes a pointer induction variable steps by: its latch value a `getelementptr`
        of it by a constant index, of a type of known size."""
        gep = self.cfg.defs.get(latch.value)
        if gep is None or gep.opcode != "getelementptr" or gep.operands[0].value != iv or len(gep.operands) != 2:
            return None
        index, t = gep.operands[1], gep.source_type
        if not index.is_constant or t is None or t.kind not in ("int", "float", "ptr") or not index.value.lstrip("-").isdigit():
            return None
        return int(index.value) * slot_size(t) or None

    def block(self, label: str):
        return next(b for b in self.fn.blocks if b.label == label)

    def invariant(self, op: Operand, loop: Loop) -> bool:
        """A constant, an argument or a value computed before the loop."""
        return not op.is_local or op.value not in self.cfg.defs or self.cfg.block_of[op.value] not in loop.body

    def _trip(self, loop: Loop) -> Trip | None:
        """The trip count of a rotated loop whose latch is its only exit and compares an induction
        variable stepping by a constant with a bound fixed before the loop (by 1 only when the
        loop runs until they are equal: a larger step may step over the bound)."""
        latch = loop.latches[0]
        if len(loop.exits) != 1 or loop.exits[0][0] != latch:
            return None
        term = self.block(latch).instructions[-1]
        cond = self.cfg.defs.get(term.operands[0].value) if term.opcode == "br" and term.operands else None
        if cond is None or cond.opcode != "icmp" or len(term.targets) != 2:
            return None
        pred = cond.predicate
        x, bound = cond.operands
        if not self._progression(self._narrowed(x.value), loop):
            x, bound, pred = bound, x, _SWAPPED[pred]
        found = self._progression(self._narrowed(x.value), loop)
        if found is None or not self.invariant(bound, loop):
            return None
        iv, after = found
        ind = loop.inductions[iv]
        if not ind.step.is_constant or int(ind.step.value) == 0:
            return None
        if term.targets[0] != loop.header:  # the loop goes on while the comparison is false
            pred = _NEGATED[pred]
        step = int(ind.step.value)
        sign, stride = (1, step) if step > 0 else (-1, -step)
        scale = stride if ind.pointer else 0  # (a pointer's: compared in bytes, counted in its steps)
        if ind.pointer and pred == "ne":
            return Trip(ind.start, bound, sign, 1 - after, signed=False, exact=True, scale=scale)
        start = ind.start
        if self._narrowed(x.value) != x.value:  # (a wide counter compared narrowed: from its narrow start)
            start = self._narrow_start(ind.start, x.type)
            if start is None or pred != "ne" or stride != 1:
                return None
        # compared value at iteration k: start + step * (k + after); the loop goes on while `x pred bound`
        if pred == "ne" and stride == 1:
            return Trip(start, bound, sign, 1 - after, signed=False, exact=True)
        if pred in ("eq", "ne"):
            return None
        signed = pred.startswith("s")
        direction = pred[1:]
        if (sign == 1 and direction not in ("lt", "le")) or (sign == -1 and direction not in ("gt", "ge")):
            return None
        slack = 1 if direction in ("le", "ge") else 0
        if stride == 1:
            return Trip(ind.start, bound, sign, 1 - after + slack, signed, exact=False, scale=scale)
        return Trip(ind.start, bound, sign, 1 - after, signed, exact=False, stride=stride, slack=slack, scale=scale)

    def bounding_trip(self, loop: Loop) -> Trip | None:
        """The most iterations `loop` runs, where its latch counts them: exits elsewhere (a
        `break`, a bounds check's panic) only end it sooner. What bounds an address over the
        loop's run (analysis/ranges.py); not its trip count (the storage of loops, whose
        reverse sweep must know how many iterations ran, uses `loop.trip`)."""
        if loop.trip is not None:
            return loop.trip
        if len(loop.latches) != 1:
            return None
        counted = [e for e in loop.exits if e[0] == loop.latches[0]]
        if len(counted) != 1 or len(counted) == len(loop.exits):
            return None
        exits, loop.exits = loop.exits, counted
        try:
            return self._trip(loop)
        finally:
            loop.exits = exits

    def _narrowed(self, value: str) -> str:
        """The value a truncation narrows (LLVM compares a counter it widened to 64 bits, in the
        width of its bound: `icmp eq i32 %n, trunc(%iv.next)`), else the value itself."""
        inst = self.cfg.defs.get(value)
        return inst.operands[0].value if inst is not None and inst.opcode == "trunc" else value

    def _narrow_start(self, start: Operand, narrow) -> Operand | None:
        """A widened counter's start in the narrow width it is compared in: what the extension
        widened (the narrow count then runs from it), or None."""
        inst = self.cfg.defs.get(start.value)
        if inst is None or inst.opcode not in ("sext", "zext") or inst.operands[0].type != narrow:
            return None
        return inst.operands[0]

    def _progression(self, value: str, loop: Loop) -> tuple[str, int] | None:
        """(the induction variable, 0) for an induction variable of `loop`, (it, 1) for its next value."""
        if value in loop.inductions:
            return value, 0
        inst = self.cfg.defs.get(value)
        if inst is not None and inst.opcode in ("add", "sub", "getelementptr"):
            iv = inst.operands[0].value
            if iv in loop.inductions:
                header = self.block(loop.header)
                phi = next(i for i in header.instructions if i.result == iv)
                if any(v.value == value for v, _ in phi.incoming):
                    return iv, 1
        return None

    def entry_block(self, loop: Loop) -> str | None:
        """The one block entering `loop` that runs once each time it is entered (in the loop
        around it, not in a sibling loop that exits into it): where to compute what holds over
        the loop's run."""
        pre = loop.preheader
        return pre if pre is not None and self.loop_of[pre] is loop.parent else None

    def exited(self, inside: str, outside: str) -> list[Loop]:
        """The loops the edge inside -> outside leaves, innermost first."""
        loop, out = self.loop_of[inside], []
        while loop is not None and outside not in loop.body:
            out.append(loop)
            loop = loop.parent
        return out
