"""The undo log's run-time checks, written into the augmented forward sweep (plan/undo.py decides
where, analysis/ranges.py bounds the accesses, templates/undo_log.ll.j2 keeps the ranges):

- before a loop, the bytes each store checked there may write over the loop's run, whether they
  overlap what the reverse sweep reads again (the log's ranges, and the loads inside the loop
  whose values it reads again): the store's flag, kept for the reverse sweep, says whether it is
  logged this time;
- before the outermost loop whose run bounds a load the reverse sweep reads again, the bytes it
  may read, added to the log's ranges (before the load itself outside loops), and after a
  checked store's check, the bytes it writes where the reverse sweep reads them back
  (plan/read_back.py); where no loop
  bounds it, the poison, after which every store is logged. So is a call whose reverse sweep
  reads memory the log does not know of (a derivative written by hand, a call through a pointer,
  a checkpointed loop, whose iterations run again)."""

from __future__ import annotations

from adgen.ir_ad.analysis.loops import Loop
from adgen.ir_ad.analysis.ranges import Access, Node, Ranges, known_values
from adgen.ir_ad.ir import I1, I64, PTR, VOID, Instruction, struct
from adgen.ir_ad.ir.builder import Builder, V, integer
from adgen.ir_ad.reverse.plan.keys import AGAIN, VALUE
from adgen.ir_ad.reverse.types import ReverseFacts
from adgen.ir_ad.reverse.sweeps.storage import trip_count


class Intervals:
    """Emits the bounds of `Node`s at one place: i64 lower and upper bounds (memoized), and the
    conditions under which they hold (`valid`)."""

    def __init__(self, b: Builder, value=None):
        """`value(operand)`: a leaf's value where it is computed (the primal operand itself by
        default: in the forward sweep)."""
        self.b = b
        self.value = value or (lambda op: V(op.type, op.value))
        self.memo: dict[Node, tuple[V, V]] = {}
        self.checked: dict[tuple[str, str, str], V] = {}  # (operation, a, b): a op b
        self.conditions: list[V] = []
        self._valid, self._upto = V(I1, "true"), 0  # the conjunction of conditions[:_upto]

    def bytes(self, access: Access) -> tuple[V, V]:
        """[lo, hi) of an access (valid only where lo <= hi: no address wrapped around)."""
        lo, last = self.bounds(access.address)
        hi = self._checked("add", last, self.b.size_of(access.size))
        self._condition("ule", lo, hi)
        return lo, hi

    def valid(self) -> V:
        """All conditions so far, conjoined onto those of the last call (one `and` per condition)."""
        for c in self.conditions[self._upto:]:
            self._valid = c if self._valid.ref == "true" else self.b.binary("and", self._valid, c)
        self._upto = len(self.conditions)
        return self._valid

    def bounds(self, node: Node) -> tuple[V, V]:
        if node not in self.memo:
            known = known_values(node) if node.kind != "leaf" else None
            if known is not None:  # (constants: known at build time)
                self.memo[node] = V(I64, str(min(known))), V(I64, str(max(known)))
                return self.memo[node]
            lo, hi = getattr(self, "_" + node.kind)(node)
            if node.bits < 64:  # computed in a narrower width, where it may wrap: valid where it fits
                self._condition("sge", lo, V(I64, str(-(1 << (node.bits - 1)))))
                self._condition("sle", hi, V(I64, str((1 << (node.bits - 1)) - 1)))
            self.memo[node] = lo, hi
        return self.memo[node]

    def _leaf(self, node: Node) -> tuple[V, V]:
        op, b = node.operand, self.b
        if op.type.kind == "ptr":
            v = V(I64, "0") if op.value == "null" else b.cast("ptrtoint", self.value(op), I64)
        elif op.value in ("true", "false"):
            v = V(I64, "1" if op.value == "true" else "0")
        elif op.is_constant:
            v = V(I64, op.value)
        elif op.type.bits == 64:
            v = V(I64, self.value(op).ref)
        else:
            v = b.cast("sext", self.value(op), I64)
        return v, v

    def _checked(self, op: str, a: V, b: V) -> V:
        """a op b in 64 bits; where it overflows, the bounds are not valid. Written once for
        each operation and operands; not at all where an operand is the identity (x + 0, x * 1),
        nor where both are constants (folded here)."""
        identity = {"add": "0", "sub": "0", "mul": "1"}[op]
        if b.ref == identity or (a.ref == identity and op != "sub"):
            return a if b.ref == identity else b
        if _constant(a) and _constant(b):
            value = {"add": int.__add__, "sub": int.__sub__, "mul": int.__mul__}[op](integer(a.ref), integer(b.ref))
            if -(1 << 63) <= value < 1 << 63:
                return V(I64, str(value))
        key = (op, a.ref, b.ref)
        if key not in self.checked:
            both = self.b.call(f"@llvm.s{op}.with.overflow.i64", struct(I64, I1), [a, b])
            over = self.b.value(I1, f"extractvalue {both}, 1")
            self.conditions.append(self.b.binary("xor", over, V(I1, "true")))
            self.checked[key] = self.b.value(I64, f"extractvalue {both}, 0")
        return self.checked[key]

    def _condition(self, predicate: str, a: V, b: V) -> None:
        """A condition of the bounds' validity, `icmp predicate a, b`; none where it holds of
        constants."""
        if _constant(a) and _constant(b):
            x, y = integer(a.ref), integer(b.ref)
            if {"sge": x >= y, "sle": x <= y, "ule": x % (1 << 64) <= y % (1 << 64)}[predicate]:
                return
        self.conditions.append(self.b.value(I1, f"icmp {predicate} {a}, {b.ref}"))

    def _add(self, node: Node) -> tuple[V, V]:
        (a0, a1), (b0, b1) = (self.bounds(a) for a in node.args)
        return self._checked("add", a0, b0), self._checked("add", a1, b1)

    def _sub(self, node: Node) -> tuple[V, V]:
        (a0, a1), (b0, b1) = (self.bounds(a) for a in node.args)
        return self._checked("sub", a0, b1), self._checked("sub", a1, b0)

    def _scale(self, node: Node) -> tuple[V, V]:
        x0, x1 = self.bounds(node.args[0])
        c = V(I64, str(node.step))
        lo, hi = self._checked("mul", x0, c), self._checked("mul", x1, c)
        return (lo, hi) if node.step >= 0 else (hi, lo)

    def _mul(self, node: Node) -> tuple[V, V]:
        (a0, a1), (b0, b1) = (self.bounds(a) for a in node.args)
        corners = [self._checked("mul", x, y) for x in (a0, a1) for y in (b0, b1)]
        return self.fold("@llvm.smin.i64", corners), self.fold("@llvm.smax.i64", corners)

    def _div(self, node: Node) -> tuple[V, V]:
        """Non-decreasing in the dividend, non-increasing in the divisor, where the dividend is
        not negative and the divisor at least one (the divisions themselves divide by at least
        one, whatever the bounds: they run before anything checks them)."""
        (x0, x1), (d0, d1) = (self.bounds(a) for a in node.args)
        self._condition("sge", x0, V(I64, "0"))
        self._condition("sge", d0, V(I64, "1"))
        least, most = (self.fold("@llvm.smax.i64", [d, V(I64, "1")]) for d in (d0, d1))
        return self._divided(x0, most), self._divided(x1, least)

    def _rem(self, node: Node) -> tuple[V, V]:
        """From 0 to the dividend's upper bound or the divisor's less one, whichever is less,
        under the conditions of a quotient."""
        (x0, x1), (d0, d1) = (self.bounds(a) for a in node.args)
        self._condition("sge", x0, V(I64, "0"))
        self._condition("sge", d0, V(I64, "1"))
        return V(I64, "0"), self.fold("@llvm.smin.i64", [x1, self._checked("sub", d1, V(I64, "1"))])

    def _mask(self, node: Node) -> tuple[V, V]:
        """`x & c` for a constant c not negative: from 0 to c, and to x's upper bound where x is
        not negative (then x & c is at most x)."""
        c = V(I64, str(node.step))
        if not node.args:
            return V(I64, "0"), c
        x0, x1 = self.bounds(node.args[0])
        least = self.fold("@llvm.smin.i64", [x1, c])
        if _constant(x0) and integer(x0.ref) >= 0:
            return V(I64, "0"), least
        return V(I64, "0"), self.b.select(self.b.value(I1, f"icmp sge {x0}, 0"), least, c)

    def _divided(self, x: V, d: V) -> V:
        if _constant(x) and _constant(d) and integer(d.ref) >= 1:
            return V(I64, str(abs(integer(x.ref)) // integer(d.ref) * (1 if integer(x.ref) >= 0 else -1)))
        return self.b.binary("sdiv", x, d)

    def _zext(self, node: Node) -> tuple[V, V]:
        x0, x1 = self.bounds(node.args[0])
        self._condition("sge", x0, V(I64, "0"))
        return x0, x1

    def _fit(self, node: Node) -> tuple[V, V]:
        return self.bounds(node.args[0])

    def _hull(self, node: Node) -> tuple[V, V]:
        (a0, a1), (b0, b1) = (self.bounds(a) for a in node.args)
        return self.fold("@llvm.smin.i64", [a0, b0]), self.fold("@llvm.smax.i64", [a1, b1])

    def _gep(self, node: Node) -> tuple[V, V]:
        """The address is non-decreasing in the base and in every index (sizes are not negative)."""
        inst = node.inst
        ends = []
        for side in (0, 1):
            base = self.b.cast("inttoptr", self.bounds(node.args[0])[side], PTR)
            indices = [V(o.type, o.value) if o.is_constant else self.bounds(a)[side]
                       for o, a in zip(inst.operands[1:], node.args[1:])]
            ends.append(self.b.cast("ptrtoint", self.b.gep(inst.source_type, base, *indices), I64))
        return ends[0], ends[1]

    def _iv(self, node: Node) -> tuple[V, V]:
        """From the start to the start plus (trip count - 1) steps, the trip count the largest the
        bounds of the loop's start and bound allow."""
        b, trip = self.b, node.trip
        s0, s1 = self.bounds(node.args[0])
        (t0, t1), (u0, u1) = self.bounds(node.args[1]), self.bounds(node.args[2])
        first, second = ((u1, u0), (t0, t1)) if trip.sign == 1 else ((t1, t0), (u0, u1))
        if not trip.signed or trip.exact:  # (what it compares, taken as unsigned, is not negative)
            for x in (t0, u0):
                self._condition("sge", x, V(I64, "0"))
        if trip.exact:  # (and the bound is not behind the start: no wrapping)
            self._condition("sge", first[1], second[1])
        self._checked("sub", first[0], second[0])  # (the trip count's difference, in 64 bits)
        most = trip_count(b, trip, *((second[0], first[0]) if trip.sign == 1 else (first[0], second[0])))
        span = self._checked("mul", b.binary("sub", most, V(I64, "1")), V(I64, str(node.step)))
        return (s0, self._checked("add", s1, span)) if node.step > 0 else (self._checked("add", s0, span), s1)

    def fold(self, fn: str, values: list[V]) -> V:
        """smin or smax of the values, each written once, constants folded."""
        pick = min if fn.endswith("smin.i64") else max
        constants = [integer(v.ref) for v in values if _constant(v)]
        kept = list({v.ref: v for v in values if not _constant(v)}.values())
        out = kept[0] if kept else V(I64, str(pick(constants)))
        for v in kept[1:] + ([V(I64, str(pick(constants)))] if kept and constants else []):
            out = self.b.call(fn, I64, [out, v])
        return out


def _constant(v: V) -> bool:
    return integer(v.ref) is not None


class Guards:
    """Where the augmented forward sweep of one function checks and registers (see the module)."""

    def __init__(self, d: ReverseFacts):
        self.d = d
        self.ranges = Ranges(d.cfg, d.loops)
        self.flags: dict[int, V] = {}  # a checked store (by id) -> its flag in the forward sweep
        self.checks: dict[str, list[tuple[Instruction, Loop]]] = {}  # a loop's entry block -> stores checked at its end
        self.reads: dict[str, list[tuple[Instruction, Loop]]] = {}  # ... -> loads whose ranges are added there
        self.here: dict[int, str] = {}  # an instruction (by id) -> "check", "read" or "poison" before it
        self.again = self._read_again() if d.registers or d.guards else []
        self.again_ids = set(map(id, self.again))
        for store in d.undoable:
            if id(store) in d.guards:
                loop = d.guards[id(store)]
                if loop is None:
                    self.here[id(store)] = "check"
                else:
                    self.checks.setdefault(d.loops.entry_block(loop), []).append((store, loop))
        for store in self._written_again() if d.registers else []:  # (after its check: plan/read_back.py)
            loop = d.guards[id(store)]
            if loop is None:
                self.here[id(store)] = "check, read"
            else:
                self.reads.setdefault(d.loops.entry_block(loop), []).append((store, loop))
        if d.registers:
            for load in self.again:
                loop = self._registered_before(load)
                if loop is not None:
                    self.reads.setdefault(d.loops.entry_block(loop), []).append((load, loop))
                else:
                    self.here[id(load)] = "read" if self._around(load) == [] else "poison"

    def told_in(self) -> set[str]:
        """The blocks where this sweep tells the undo log what the reverse sweep reads again, or
        poisons it: a loop skipped (plan/discarded.py) must hold none of them."""
        blocks = {block for block, reads in self.reads.items() if reads}
        return blocks | {self.d.cfg.block_of_inst(i) for i in self.d.fn.instructions() if id(i) in self.here}

    def _registered_before(self, load: Instruction) -> Loop | None:
        """The loop before which a load's range is added: the outermost that bounds it, unless a
        store that may write what it reads is checked inside it (in a loop that does not hold the
        load: that check would find what the load reads only later, written by that very loop
        nest, say); then the next loop in, down to the innermost that bounds it."""
        d = self.d
        bounded = [m for m in self._around(load) if d.loops.entry_block(m) is not None
                   and self.ranges.access(load, m) is not None]
        base = d.memory.base(load.operands[0].value)
        checked = [loop for store, loop in (x for xs in self.checks.values() for x in xs)
                   if d.memory.may_alias(d.memory.base(store.operands[1].value), base)]
        for m in bounded:
            if not any(m.contains(g) and g is not m for g in checked):
                return m
        return bounded[-1] if bounded else None

    def _around(self, inst: Instruction) -> list[Loop]:
        loop = self.d.loops.loop_of[self.d.cfg.block_of_inst(inst)]
        return loop.ancestors() if loop is not None else []

    def _read_again(self) -> list[Instruction]:
        """The loads the reverse sweep repeats: of any memory but a local array of the forward
        sweep's frame (memory this call allocated too, into which stores may be logged)."""
        d = self.d
        out = []
        for key in d.plan.recomputed:
            inst = d.cfg.defs.get(key.name) if key.kind == VALUE else None
            if inst is not None and inst.opcode == "load" and d.memory.base(inst.operands[0].value).name not in d.stack \
                    and d.cfg.block_of_inst(inst) not in d.cfg.doomed:
                out.append(inst)
        order = {id(i): k for k, i in enumerate(d.fn.instructions())}
        return sorted(out, key=lambda i: order[id(i)])

    def _written_again(self) -> list[Instruction]:
        """The stores checked at run time whose value the reverse sweep reads back (plan/read_back.py)."""
        d = self.d
        return [d.keys.instruction(key.name) for key in d.plan.recomputed
                if key.kind == AGAIN and id(d.keys.instruction(key.name)) in d.guards]

    def flag(self, store: Instruction) -> V:
        """Whether a logged store is logged this time (true where it always is)."""
        return self.flags.get(id(store), V(I1, "true"))

    def at_end(self, block: str, b: Builder) -> list[tuple[Instruction, V]]:
        """The checks and registrations before the loops this block enters; returns the flags made."""
        checks, reads = self.checks.get(block, []), self.reads.get(block, [])
        if not checks and not reads:
            return []
        iv = Intervals(b)
        made = []
        for store, loop in checks:
            lo, hi = iv.bytes(self.ranges.access(store, loop))
            inside = [iv.bytes(self.ranges.access(load, loop)) for load in self._loads_inside(store, loop)]
            flag = b.call('@"adgen.log.overlaps"', I1, [lo, hi, iv.valid()])
            for r0, r1 in inside:  # [lo, hi) and [r0, r1) overlap
                both = b.binary("and", b.value(I1, f"icmp slt {lo}, {r1.ref}"), b.value(I1, f"icmp slt {r0}, {hi.ref}"))
                flag = b.binary("or", flag, both)
            self.flags[id(store)] = flag
            made.append((store, flag))
        for load, loop in reads:
            lo, hi = iv.bytes(self.ranges.access(load, loop))
            b.call('@"adgen.log.reads"', VOID, [lo, hi, iv.valid()])
        return made

    def before(self, inst: Instruction, b: Builder) -> V | None:
        """What comes right before an instruction: a store's check (returns its flag), a load's
        registration, or the poison."""
        what = self.here.get(id(inst))
        if what == "poison":
            b.call('@"adgen.log.poison"', VOID, [])
        elif what is not None:
            iv = Intervals(b)
            lo, hi = iv.bytes(self.ranges.access(inst, None))
            if what == "read":
                b.call('@"adgen.log.reads"', VOID, [lo, hi, iv.valid()])
            else:
                self.flags[id(inst)] = b.call('@"adgen.log.overlaps"', I1, [lo, hi, iv.valid()])
                if what == "check, read":  # (its bytes read back, after its check)
                    b.call('@"adgen.log.reads"', VOID, [lo, hi, iv.valid()])
                return self.flags[id(inst)]
        return None

    def _loads_inside(self, store: Instruction, loop: Loop) -> list[Instruction]:
        """The loads in `loop` the reverse sweep repeats that may read what `store` writes."""
        d = self.d
        base = d.memory.base(store.operands[1].value)
        return [i for label in sorted(loop.body, key=d.cfg.blocks.index) for i in d.loops.block(label).instructions
                if id(i) in self.again_ids and d.memory.may_alias(d.memory.base(i.operands[0].value), base)
                and d.memory.types_may_alias(i, store)]
