"""Values whose adjoint may be a masked zero: the operands a select may not choose, and those of a
rule whose partials give an argument a zero by comparison (fmax, fmin, fdim), with everything
they are computed from. The optimizer computes both sides of a branch and selects one
(`x > 0 ? sqrt(x) : 0.5 * x`), so the side not chosen gets a zero adjoint while its partials may
be infinite or NaN (sqrt of -1, the 1/x of log at 0), and zero times those would turn a finite
gradient into NaN. The reverse sweep gives the values of this slice a "strong zero" product
(exactly zero where the adjoint is zero); every other partial is a plain product."""

from __future__ import annotations

from adgen.ir_ad.analysis.flow import CFG, Memory
from adgen.ir_ad.ir import Function
from adgen.ir_ad.rules import rule_for


def masked_slice(fn: Function, cfg: CFG, memory: Memory, floaty: dict) -> frozenset[str]:
    """The floating values that are transitive SSA ancestors of an operand some instruction may
    mask. A load in the slice brings in the values stored where it may read (by the pointers'
    bases), since their adjoints come back through the same shadow memory."""
    stores = [inst for inst in fn.instructions() if inst.opcode == "store" and inst.operands[0].value in floaty]
    work = []
    for inst in fn.instructions():
        if inst.opcode == "select":
            work += [inst.operands[1].value, inst.operands[2].value]
        elif inst.opcode == "call" and (rule := rule_for(inst.callee)) is not None and rule.masks:
            work += [o.value for o in inst.operands]
    found: set[str] = set()
    while work:
        v = work.pop()
        if v in found or v not in floaty:
            continue
        found.add(v)
        inst = cfg.defs.get(v)
        if inst is None:
            continue
        if inst.opcode == "phi":
            work += [x.value for x, _ in inst.incoming]
        elif inst.opcode == "load":
            read = memory.base(inst.operands[0].value)
            work += [s.operands[0].value for s in stores if memory.may_alias(read, memory.base(s.operands[1].value))]
        else:
            work += [o.value for o in inst.operands]
    return frozenset(found)
