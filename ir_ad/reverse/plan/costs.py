"""What the cache plan weighs besides bytes (keys.py asks): time against memory, and the
operations GVN's partial redundancy elimination leaves as phis of copies.

- An expensive call (a libm function whose computation costs COST_PER_BYTE or more per byte of its
  result: `exp`, `tanhf`; rules.Rule.cost) is stored rather than computed again by the reverse
  sweep, where the forward sweep computes it anyway (`forward_live`): elsewhere storing it would
  make the forward sweep compute what it need not (a gradient of a sum of sines, whose sum nobody
  reads, needs no forward sweep of the loop at all). The plan is made memory-first, then again
  with such calls stored (reverse/mode.py).
  sin and cos (rules.Rule.partner) are such calls, but for one whose partner of the same argument
  the primal does not compute: the reverse sweep computes that partner for its partial, and LLVM
  both in one sincos call, so computing it again there costs all but nothing. Where the primal
  computes both (a rotation's sin and cos of one angle), the partials are the primal's values
  (`partner`), and both are stored: the reverse sweep calls nothing.
- A phi whose incoming values all compute the same operation on the same operands (`phi [%a,
  B1], [%b, B2]` where both are `or i64 %i, 1`) is that operation (`copied`)."""

from __future__ import annotations

from typing import Callable
from weakref import WeakKeyDictionary

from adgen.ir_ad.analysis.flow import PURE, CFG
from adgen.ir_ad.ir import Instruction, intrinsic_family, slot_size
from adgen.ir_ad.rules import COST_PER_BYTE, primitive, rule_for


def expensive(cfg: CFG, name: str, active: Callable[[str], bool]) -> bool:
    """A call whose computation costs more than storing its result (rules.Rule.cost), unless the
    reverse sweep computes its partner of the same argument anyway (`active`: whether a value has
    derivatives, for which the call's partial is written)."""
    inst = cfg.defs.get(name)
    rule = rule_for(inst.callee) if inst is not None and inst.opcode == "call" else None
    if rule is None or rule.cost < COST_PER_BYTE * slot_size(inst.type):
        return False
    return rule.partner is None or partner(cfg, inst) is not None or \
        not (active(name) and all(active(o.value) for o in inst.operands))


_CALLS: WeakKeyDictionary = WeakKeyDictionary()  # CFG -> {(primitive, arguments): [call]}


def partner(cfg: CFG, call: Instruction) -> Instruction | None:
    """The primal's call of a primitive's partner (rules.Rule.partner: cos for sin) on the same
    arguments, computed wherever `call` is (in its block, or one dominating it); else None."""
    rule = rule_for(call.callee)
    if rule is None or rule.partner is None:
        return None
    calls = _CALLS.get(cfg)
    if calls is None:
        calls = _CALLS[cfg] = {}
        for inst in cfg.defs.values():
            if inst.opcode == "call" and inst.callee.startswith("@"):
                key = (primitive(inst.callee), inst.type.text, tuple(o.value for o in inst.operands))
                calls.setdefault(key, []).append(inst)
    here = cfg.block_of_inst(call)
    key = (rule.partner, call.type.text, tuple(o.value for o in call.operands))
    return next((c for c in calls.get(key, ()) if cfg.dominates(cfg.block_of_inst(c), here)), None)


def forward_live(fn, cfg: CFG, stored: set[str], ret_needed: bool, pure_intrinsics: frozenset) -> set[str]:
    """The values the forward sweep computes whatever the plan's choice of an expensive call:
    what its side effects need (stores, calls of functions that are not pure, branches; the
    result, where the caller uses it) and what the values `stored` (by a plan that computes
    every expensive call again) are computed from."""
    work = list(stored)
    for inst in fn.instructions():
        op = inst.opcode
        if op in ("store", "br", "switch", "atomicrmw", "cmpxchg") or (op == "ret" and ret_needed) or \
                (op == "call" and intrinsic_family(inst.callee) not in pure_intrinsics and rule_for(inst.callee) is None):
            work += [o.value for o in inst.operands]
    live: set[str] = set()
    while work:
        name = work.pop()
        if name in live or name not in cfg.defs:
            continue
        live.add(name)
        inst = cfg.defs[name]
        work += [o.value for o in inst.operands] + [v.value for v, _ in inst.incoming]
    return live


def copied(cfg: CFG, phi: Instruction) -> Instruction | None:
    """The instruction every incoming value of a phi is a copy of (the same pure operation on
    the same operands), or None. The operands dominate every predecessor, so the phi's block: it
    is that operation there, recomputed as such."""
    copies = [cfg.defs.get(v.value) for v, _ in phi.incoming]
    if not copies or any(c is None or c.opcode not in PURE or c.opcode in ("inttoptr", "phi") for c in copies):
        return None
    shape = copies[0].text.split("=", 1)[1].split(", !")[0].strip()
    if any(c.text.split("=", 1)[1].split(", !")[0].strip() != shape for c in copies[1:]):
        return None
    return copies[0]
