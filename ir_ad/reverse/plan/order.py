"""Loops whose reverse sweep may run their iterations in the order the forward sweep ran them.

The reverse sweep runs a loop's iterations backwards, as the adjoints of one iteration may
depend on those of the iterations after it: through a value it carries to the next (a
product's), through memory it writes and a later iteration reads. Where they cannot, the order
is free, and the sweep runs them forward: it reads its inputs and what the forward sweep stored
in the order the hardware prefetches them, and the vectorizer need not reverse its vectors
(a dot product's, a norm's, a matrix product's inner loop). The adds
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

A loop whose header phi carries a load over to the next iteration (GVN's load PRE: Rosenbrock's
`x[i]` is the `x[i + 1]` the iteration before loaded) runs backwards: the phi's adjoint joins the
load's in a register (plan/carried.py), and x and its shadow are read and written once per
iteration. Loaded again where it is, the loop would run forward, but with two adds to the shadow
per element where one did: about 4% slower at a million elements, which do not fit in the cache."""

from __future__ import annotations

from adgen.ir_ad.analysis.flow import CFG
from adgen.ir_ad.analysis.loops import Loop
from adgen.ir_ad.analysis.uses import uses_of
from adgen.ir_ad.ir import Function, Instruction
from adgen.ir_ad.rules import rule_for

_WRITES = {"store", "alloca", "invoke", "callbr", "atomicrmw", "cmpxchg", "fence", "va_arg", "landingpad",
           "resume", "ret"}
_FUSED = ("@llvm.fmuladd.", "@llvm.fma.")  # a * b + c: the sum goes on through c


def forward_loops(d) -> frozenset[str]:
    """The headers of `d`'s loops whose reverse sweep runs forward (a ReverseFacts' loops)."""
    order = _Order(d.fn, d.cfg, d.activity.active)
    return frozenset(loop.header for loop in d.loops.loops if order.any_order(loop))


class _Order:
    def __init__(self, fn: Function, cfg: CFG, active):
        self.fn, self.cfg, self.active = fn, cfg, active
        self.uses = uses_of(fn)
        self.blocks = {b.label: b for b in fn.blocks}

    def any_order(self, loop: Loop) -> bool:
        """Whether `loop` runs forward (see the module's docstring)."""
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
            if end is None:
                return False
            sums.add(end)
        return not any(inst.result and inst.result not in sums and self.active(inst.result) and
                       any(outside(user) for user, _ in self.uses.get(inst.result, ())) for inst in inside)


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
