"""Loops whose reverse sweep may run their iterations in the order the forward sweep ran them.

The reverse sweep runs a loop's iterations backwards, as the adjoints of one iteration may
depend on those of the iterations after it: through a value it carries to the next (a
product's), through memory it writes and a later iteration reads. Where they cannot, the order
is free, and the sweep runs them forward: it reads its inputs and what the forward sweep stored
in the order the hardware prefetches them, and the vectorizer need not reverse its vectors
(Rosenbrock's n-dimensional gradient, a dot product's, a matrix product's inner loop). The adds
to shadow memory happen in another order, which changes only their rounding.

A loop runs forward when
- it has one way in and one latch, and leaves only from its latch: each iteration runs whole,
  so the sweep does not begin with a partial one;
- nothing in it writes memory or returns: no store, no allocation, no call but to a primitive
  with a derivative rule taking no pointer (`sin`, `llvm.fmuladd`...): its adjoints add to
  shadow memory and to values defined before it, and add only;
- each header phi carrying an adjoint is a sum: it flows through adds, and subtractions of
  which it is the first operand, to its latch value, each used only by the next, so that its
  adjoint is the sum's at every iteration;
- no value it defines with an adjoint is used after it, but those sums' latch values (an
  adjoint arriving at the exit is the last iteration's alone);
- the loops inside it may run either way: each iteration of this loop runs them whole.

GVN's load PRE carries a load over from one iteration to the next (Rosenbrock's `x[i]` is the
`x[i + 1]` the iteration before loaded: a header phi of that load and of one before the loop).
Such a phi's adjoint goes to the iteration before, in reverse order; in a loop that writes no
memory it is the load where it is, which `reload_carried` puts in its place (before the analyses,
where the loop would then run forward), and the reverse sweep adds its adjoint to its address
there: x read twice per iteration, in the order memory is, which LLVM carries over again.
Elsewhere plan/carried.py keeps the phi and takes the load from the reverse iteration before."""

from __future__ import annotations

from adgen.ir_ad.analysis.flow import CFG
from adgen.ir_ad.analysis.loops import Loop, LoopForest
from adgen.ir_ad.analysis.uses import uses_of
from adgen.ir_ad.ir import Function, Instruction, floating
from adgen.ir_ad.ir.builder import bare, local
from adgen.ir_ad.ir.edit import phi_as_load
from adgen.ir_ad.rules import rule_for

_WRITES = {"store", "alloca", "invoke", "callbr", "atomicrmw", "cmpxchg", "fence", "va_arg", "landingpad",
           "resume", "ret"}
_FUSED = ("@llvm.fmuladd.", "@llvm.fma.")  # a * b + c: the sum goes on through c


def forward_loops(d) -> frozenset[str]:
    """The headers of `d`'s loops whose reverse sweep runs forward (a ReverseFacts' loops)."""
    order = _Order(d.fn, d.cfg, d.activity.active)
    return frozenset(loop.header for loop in d.loops.loops if order.any_order(loop))


def reload_carried(fn: Function) -> bool:
    """Puts, in each loop that writes no memory and would run forward but for header phis
    carrying a load over from the iteration before, the load where it is in place of each
    (see the module's docstring), whichever values turn out to carry derivatives (any float is
    taken to). Whether it changed `fn`."""
    cfg = CFG(fn)
    loops = LoopForest(fn, cfg)
    order = _Order(fn, cfg, lambda value: value in cfg.defs and floating(cfg.defs[value].type))
    changed = False
    for loop in loops.loops:
        carried: list = []
        if order.any_order(loop, carried) and carried:
            for phi, address, load in carried:
                phi_as_load(next(b for b in fn.blocks if b.label == loop.header), phi, address, load)
            changed = True
    return changed


class _Order:
    def __init__(self, fn: Function, cfg: CFG, active):
        self.fn, self.cfg, self.active = fn, cfg, active
        self.uses = uses_of(fn)
        self.blocks = {b.label: b for b in fn.blocks}

    def any_order(self, loop: Loop, carried: list | None = None) -> bool:
        """Whether `loop` runs forward (see the module's docstring); with `carried`, header phis
        carrying a load over, which it fills with what reload_carried puts in their place, are
        allowed."""
        if len(loop.entries) != 1 or len(loop.latches) != 1 or len(loop.exits) != 1 or \
                loop.exits[0][0] != loop.latches[0]:
            return False
        inside = [inst for label in loop.body for inst in self.blocks[label].instructions]
        if any(_writes(inst) for inst in inside):
            return False
        body = set(loop.body)

        def outside(user: Instruction) -> bool:
            return self.cfg.block_of_inst(user) not in body

        sums: set[str] = set()  # the sums' latch values
        for phi in self.blocks[loop.header].instructions:
            if phi.opcode != "phi":
                break
            if not self.active(phi.result):
                continue
            end = _sum(phi, loop, self.uses, outside)
            if end is not None:
                sums.add(end)
                continue
            reload = self._carried_load(phi, loop, body) if carried is not None else None
            if reload is None or any(outside(u) for u, _ in self.uses.get(phi.result, ())):
                return False
            carried.append((phi, *reload))
        return not any(inst.result and inst.result not in sums and self.active(inst.result) and
                       any(outside(user) for user, _ in self.uses.get(inst.result, ())) for inst in inside)

    def _carried_load(self, phi: Instruction, loop: Loop, body: set[str]) -> tuple[str, str] | None:
        """For a phi of a load before the loop (of `base[start]`) and a load in it (of
        `base[iv']`, iv' the next value of an induction variable iv starting at `start`): the text
        of the address `base[iv]` and of its load, the phi's name; else None."""
        defs = self.cfg.defs
        came = next(v for v, frm in phi.incoming if frm == loop.entries[0])
        back = next(v for v, frm in phi.incoming if frm == loop.latches[0])
        first, later = defs.get(came.value), defs.get(back.value)
        if first is None or later is None or first.opcode != "load" or later.opcode != "load" or \
                first.type != later.type or " volatile " in f" {first.text} {later.text} " or \
                self.cfg.block_of_inst(later) not in body or self.cfg.block_of_inst(first) != loop.entries[0]:
            return None
        before = self.blocks[loop.entries[0]].instructions
        if any(_writes(inst) for inst in before[before.index(first) + 1:]):
            return None
        gep = defs.get(later.operands[0].value)
        if gep is None or gep.opcode != "getelementptr" or len(gep.operands) != 2 or \
                defs.get(gep.operands[0].value) is not None and self.cfg.block_of_inst(defs[gep.operands[0].value]) in body:
            return None
        base, index = gep.operands
        iv = next((name for name, ind in loop.inductions.items() if not ind.pointer and
                   next(v for v, frm in defs[name].incoming if frm == loop.latches[0]).value == index.value), None)
        if iv is None:
            return None
        start = loop.inductions[iv].start
        at = defs.get(first.operands[0].value)
        same = at is not None and at.opcode == "getelementptr" and len(at.operands) == 2 and \
            at.source_type == gep.source_type and at.operands[0].value == base.value and \
            at.operands[1].value == start.value
        if not same and not (first.operands[0].value == base.value and start.value == "0"):
            return None
        address = local(bare(phi.result) + ".at")
        if address in defs:
            return None
        aligns = [a for a in (first.align, later.align) if a]
        flags = " inbounds" if " inbounds " in f" {gep.text} " and (same and " inbounds " in f" {at.text} " or not same) else ""
        dbg = f", !dbg {later.dbg}" if later.dbg else ""
        return (f"{address} = getelementptr{flags} {gep.source_type.text}, ptr {base.value}, {index.type.text} {iv}{dbg}",
                f"{phi.result} = load {later.type.text}, ptr {address}" + (f", align {min(aligns)}" if aligns else "") + dbg)


def _writes(inst: Instruction) -> bool:
    if inst.opcode in _WRITES:
        return True
    if inst.opcode != "call":
        return False
    if inst.callee.startswith("@llvm.dbg."):
        return False
    rule = rule_for(inst.callee)  # (one written by hand, `recompute` False, may call anything)
    return rule is None or not rule.recompute or any(o.type.kind == "ptr" for o in inst.operands)


def _sum(phi: Instruction, loop: Loop, uses: dict, outside) -> str | None:
    """The latch value of a header phi that is a sum (see the module's docstring), or None: the
    latch value used by the phi and after the loop, nowhere else."""
    latch = next((v.value for v, frm in phi.incoming if frm == loop.latches[0]), None)
    value = phi.result
    for _ in range(64):
        users = uses.get(value, ())
        if value == latch:
            return latch if all(u is phi or outside(u) for u, _ in users) else None
        if len(users) != 1:
            return None
        user, at = users[0]
        if not _adds(user, at):
            return None
        value = user.result
    return None


def _adds(user: Instruction, at: int) -> bool:
    """Whether `user` adds its operand `at` (and it alone) to something else."""
    if user.opcode == "fadd":
        return user.operands[0].value != user.operands[1].value
    if user.opcode == "fsub":
        return at == 0 and user.operands[0].value != user.operands[1].value
    if user.opcode == "call" and user.callee.startswith(_FUSED):
        return at == 2 and user.operands[2].value not in (user.operands[0].value, user.operands[1].value)
    return False
