"""The terms a derivative rule (rules.py) adds to its arguments' adjoints in the reverse sweep:
its partials times the result's adjoint, each written only for the arguments with derivatives
and computed only from the primal values it uses; or, for a rule whose partials are quotients
by one value (rules.Rule.over), the adjoint divided by that value once, times each numerator."""

from __future__ import annotations

import functools

from adgen.ir_ad.ir import Instruction, Operand, Type
from adgen.ir_ad.ir.builder import Builder, V, renamed, sliced
from adgen.ir_ad.reverse.plan.costs import partner
from adgen.ir_ad.rules import Rule, divides_one_by, is_one, rule_for
from adgen.ir_ad.shadows import Layout, Shadow


def rule_terms(b: Builder, rule: Rule, inst: Instruction, args: list[Operand], dr: Shadow, *, layout: Layout,
               value, wanted: list[bool], masked: bool, at_hand: bool, cfg, fn) -> list[Shadow | None]:
    """What `inst` (a primitive of `rule`, on `args`, its result's adjoint `dr`) adds to each
    argument's adjoint, None where nothing (`wanted`: the arguments with derivatives; `value`:
    a primal operand as the site has it; `masked`: the result's adjoint may be a zero a select
    chose, whose partials may be infinite there; `at_hand`: the site asked for the result
    already)."""
    made = functools.partial(_only_used, b, operands=[*args, Operand(inst.type, inst.result)], value=value,
                             had=_partner(cfg, inst), divided=inst.opcode == "call" and divides_one_by(fn, inst),
                             at_hand=at_hand)
    if rule.over is not None and at_hand and not masked and not any(a.is_constant for a in args):
        divisor, *numerators = made(lambda b, x, r: (lambda d, n: [d, *n])(*rule.over(b, x, r)), wanted=[True, *wanted])
        quotient = layout.divide(b, dr, divisor)
        return [None if n is None else quotient if is_one(n.ref) else layout.scale(b, n, quotient)
                for n in numerators]
    scale = layout.scale_adjoint if masked else layout.scale
    return [None if p is None else scale(b, p, dr) for p in made(rule.partials, wanted=wanted)]


def _partner(cfg, inst: Instruction) -> tuple[str, Operand] | None:
    """The primitive the primal computes on a call's arguments that is the partial of the call's
    (cos for sin: rules.Rule.partner), and its value; else None."""
    found = partner(cfg, inst) if inst.opcode == "call" else None
    return None if found is None else (rule_for(inst.callee).partner, Operand(found.type, found.result))


def _only_used(b: Builder, partials, *, operands: list[Operand], value, wanted: list[bool],
               had: tuple[str, Operand] | None = None, divided: bool = False,
               at_hand: bool = False) -> list[V | None]:
    """A rule's partials (`partials(b, args, result)`), of which only those `wanted` (of the
    arguments with derivatives) are written, with what they are computed from; None for the
    others. The primal values of `operands` (the arguments, then the result) are asked for
    (`value(operand)`) only where a partial written uses them: fdiv's partial in its divisor,
    `-a / b^2`, asked for the numerator `a` where the divisor is a constant, and the plan stored
    `a` once per iteration for nothing (GradBench's ode: `yf[i] += h * (k1[i] + ...) / 6`).
    `had`: a primitive the primal computes on the same arguments (sin's partner, cos), and that
    value, which a partial asking for it gets (plan/costs.py); `divided`: the primal divides 1 by
    the result where it computes it (Builder.divides); `at_hand`: the site has asked for the
    result already, for the partials of its users (Builder.at_hand)."""
    operands = list(operands)
    deferred = [_Deferred(op.type, k) for k, op in enumerate(operands)]
    arguments = tuple(d.ref for d in deferred[:-1])

    def known(name: str, args: tuple[V, ...]) -> V | None:
        if had is None or name != had[0] or tuple(a.ref for a in args) != arguments:
            return None
        operands.append(had[1])
        deferred.append(_Deferred(had[1].type, len(operands) - 1))
        return deferred[-1]

    scratch: list[str] = []
    kept, b.lines, b.known = b.lines, scratch, known
    result = deferred[len(arguments)].ref
    b.divides = (lambda v: v.ref == result) if divided else None
    b.at_hand = (lambda v: v.ref == result) if at_hand else None
    try:
        made = partials(b, deferred[:len(arguments)], deferred[len(arguments)])
    finally:
        b.lines, b.known, b.divides, b.at_hand = kept, None, None, None
    used = [p for p, w in zip(made, wanted) if p is not None and w]
    lines = sliced(scratch, {p.ref for p in used})
    named = {d.ref: value(operands[d.index]).ref for d in deferred
             if any(d.ref == p.ref for p in used) or any(d.ref in line for line in lines)}
    b.lines += [renamed(line, named) for line in lines]
    return [V(p.type, named.get(p.ref, p.ref)) if p is not None and w else None for p, w in zip(made, wanted)]


class _Deferred(V):
    """A primal value a rule's partial may use, named by a token until a partial written uses it."""

    def __init__(self, t: Type, index: int):
        object.__setattr__(self, "type", t)
        object.__setattr__(self, "ref", f"%\"adgen'arg.{index}\"")
        object.__setattr__(self, "index", index)
