"""Reading back what an undone store wrote (keys.AGAIN), rather than storing the value or
computing it again: where the reverse sweep reverses the store, before undoing it, memory holds
what the store wrote, provided every write that may follow it there was undone first. An Elman
network's `next[i] = tanh(s)` needs nothing stored for the tanh's derivative then.

A write that is not undone may not follow the store into its memory (keys.Keys._again). A write
that is logged only where its run-time check says so (plan/undo.py, sweeps/guards.py) may be
skipped, leaving its value in place: such a write may follow the store only where it is the store
itself in later runs of the loop before which it is checked, and then the store's bytes are added
to the log's reads right after its check (so a later run that overwrites them is logged), and the
store writes other bytes in each iteration of that loop (so its own run does not overwrite them)."""

from __future__ import annotations

from adgen.ir_ad.analysis.loops import Loop
from adgen.ir_ad.ir import Instruction, slot_size
from adgen.ir_ad.reverse.plan.keys import AGAIN, VALUE, Key, Keys, instruction_key


def read_back(keys: Keys, store: Instruction, before: frozenset, site_loop: Loop | None) -> Key | None:
    """The AGAIN key of an undone store, at the site (`before`, `site_loop`) that reverses it,
    whose value the rest of its block reads back: the value of a call or one that must be stored,
    computed before the store in its block; else None."""
    value = store.operands[0]
    cfg = keys.cfg
    if value.value not in cfg.defs or cfg.block_of[value.value] != cfg.block_of_inst(store):
        return None
    inst = cfg.defs[value.value]
    if inst.opcode == "phi" or (inst.opcode != "call" and keys[Key(VALUE, value.value)].recomputable):
        return None
    key = Key(AGAIN, instruction_key(keys.fn, store))
    d = keys[key]
    if not d.recomputable or keys.clobbered(key, before, False, site_loop):
        return None
    if any(w in keys.guards for w in d.clobbers if w != id(store)):
        return None  # (another write checked at run time may follow it, unlogged)
    if id(store) in keys.guards and keys.guards[id(store)] is not None and \
            not steps_apart(keys, store, keys.guards[id(store)]):
        return None
    return key


def steps_apart(keys: Keys, store: Instruction, loop: Loop) -> bool:
    """Whether a store writes other bytes in every iteration of `loop`: it runs at most once per
    iteration (in no loop inside), at `base[i]` (or `base[i * c]`), `base` fixed in the loop and `i`
    an induction variable of it whose step, times the element's size, is at least the store's."""
    cfg = keys.cfg
    if keys.loops.loop_of[cfg.block_of_inst(store)] is not loop:
        return False
    gep = cfg.defs.get(store.operands[1].value)
    if gep is None or gep.opcode != "getelementptr" or len(gep.operands) != 2 or gep.source_type is None:
        return False
    base = gep.operands[0].value
    if base in cfg.defs and cfg.block_of[base] in loop.body:
        return False
    scale, index = slot_size(gep.source_type), gep.operands[1].value
    while index in cfg.defs and cfg.defs[index].opcode in ("sext", "zext", "shl", "mul"):
        step = cfg.defs[index]
        if step.opcode in ("shl", "mul"):
            if not step.operands[1].is_constant:
                return False
            c = int(step.operands[1].value)
            scale *= (1 << c) if step.opcode == "shl" else c
        index = step.operands[0].value
    induction = loop.inductions.get(index)
    if induction is None or not induction.step.is_constant:
        return False
    return abs(scale * int(induction.step.value)) >= slot_size(store.operands[0].type)
