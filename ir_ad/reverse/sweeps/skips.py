"""The augmented forward sweep's branch into a loop the plan skips (plan/discarded.py): past it in
the last iteration of the loop around it, that loop's latch condition computed again before it
from the values it is computed from, or at every run."""

from __future__ import annotations

from adgen.ir_ad.ir.builder import Builder
from adgen.ir_ad.reverse.plan.discarded import Skipped, latch_exit
from adgen.ir_ad.reverse.types import ReverseFacts


def skip_branch(d: ReverseFacts, skip: Skipped, b: Builder) -> str:
    """The terminator of the block entering the loop."""
    header = skip.loop.header
    if skip.around is None:  # (the loop's phis still name this block: an edge LLVM folds away)
        return f"br i1 true, label {skip.exit}, label {header}"
    latch, leaves_if_true = latch_exit(d, skip.around, skip.entry)
    cond = _again(d, latch.operands[0].value, skip.entry, b, {})
    first, second = (skip.exit, header) if leaves_if_true else (header, skip.exit)
    return f"br i1 {cond}, label {first}, label {second}"


def _again(d: ReverseFacts, value: str, at: str, b: Builder, memo: dict[str, str]) -> str:
    """A primal value at the end of block `at`: computed again from what is defined there."""
    cfg = d.cfg
    if not value.startswith("%") or value not in cfg.defs or cfg.dominates(cfg.block_of[value], at):
        return value
    if value not in memo:
        inst = cfg.defs[value]
        memo[value] = b.reemit(inst, {o.value: _again(d, o.value, at, b, memo) for o in inst.operands
                                      if o.is_local}).ref
    return memo[value]
