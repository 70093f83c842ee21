"""`adgen build --explain`: the cache plan of every reverse-mode derivative, as a reader wants it:
what the forward sweep stores for the reverse sweep, at which C line, why it cannot be
recomputed, and how many bytes per call or per loop iteration; what is recomputed instead. The
counterpart of Enzyme's `-Rpass=enzyme` cache remarks."""

from __future__ import annotations

import os
from functools import lru_cache

from adgen.ir_ad.reverse.plan.cache_plan import INDEXED, CachePlan, CacheSlot
from adgen.ir_ad.diagnose import source_name, user_location
from adgen.ir_ad.ir import Module
from adgen.ir_ad.reverse.plan.keys import BLOB, CAME, CHOICE, DESC, EXIT, GUARD, LOG, MASK, OLD, RETURNS, SHADOW, VALUE
from adgen.ir_ad.reverse.plan.undo import LOG_RUN_HEADER
from adgen.ir_ad.analysis.loops import Loop


def explain(module: Module, plans: list[tuple[str, CachePlan]]) -> str:
    """`plans`: (a title, the plan) per derived function, top-level ones first."""
    return "\n".join(_one(module, title, plan) for title, plan in plans) + "\n"


def _one(module: Module, title: str, plan: CachePlan) -> str:
    if not isinstance(plan, CachePlan):  # a checkpointed loop's schedule (reverse/checkpoint/pair.py)
        return plan.explain(module, title)
    fn = module.functions[plan.function]
    where = _where(module, fn.dbg)
    lines = [f"{title}{f' ({where})' if where else ''}:"]
    recomputed = len({k for k in plan.recomputed if k.kind == VALUE})
    lines += _logged(module, plan)
    if plan.stores_nothing():
        lines.append(f"  stores nothing: the reverse sweep recomputes the {recomputed} primal values it needs"
                     if recomputed else "  stores nothing")
        return "\n".join(lines)
    top = [s for s in plan.slots.values() if s.group is None]
    if top:
        lines.append(f"  per call, in its record ({plan.record_size} bytes, the caller's; no allocation):")
        lines += [_slot(module, plan, s) for s in sorted(top, key=lambda s: s.offset)]
    for g in plan.groups:
        root = g.root
        inner = "" if len(g.members) == 1 else \
            f", with the {len(g.members) - 1} loop(s) inside it whose trip counts are known then"
        if g.kind != INDEXED:
            how = f"{_loop(module, plan, root)} (trip count known only when it ends): a buffer growing as it runs"
        elif g.in_record is not None:
            how = f"{_loop(module, plan, root)}: constant trip counts, so in the record at byte {g.in_record}{inner}"
        else:
            how = f"{_loop(module, plan, root)}: one buffer, allocated before it starts{inner}"
        lines.append(f"  {how}")
        for member in g.members:
            slots = [s for s in g.slots if s.scope is member]
            if not slots:
                continue
            per = sum(s.size for s in slots) if g.kind == INDEXED else g.stride
            lines.append(f"    per iteration of {_loop(module, plan, member)} ({per} bytes):")
            lines += ["  " + _slot(module, plan, s) for s in slots]
    lines.append(f"  recomputed by the reverse sweep instead of stored: {recomputed} primal values")
    return "\n".join(lines)


def _logged(module: Module, plan: CachePlan) -> list[str]:
    """The writes the reverse sweep undoes through the undo log, instead of storing what they
    overwrite."""
    if not plan.logged:
        return []
    lines = [f"  undone through the undo log (the bytes a store overwrites each time it runs, and {LOG_RUN_HEADER} "
             "more where it does not write right after the store logged before it), so that what they "
             "overwrite is read again, not stored:"]
    for inst in plan.logged:
        what = f"a call to {source_name(inst.callee)}, which undoes its writes" if inst.opcode == "call" else \
            f"a store ({inst.operands[0].type.text})" + _checked(module, plan, inst)
        where = _where(module, inst.dbg)
        code = _source(module, inst.dbg)
        lines.append(f"    {where or '(no line)'}  {what}" + (f"\n{' ' * 14}| {code}" if code else ""))
    return lines


def _checked(module: Module, plan: CachePlan, store) -> str:
    """Where a logged store's run-time check is made (plan/undo.py)."""
    guards = plan.keys.guards
    if id(store) not in guards:
        return ", every time"
    loop = guards[id(store)]
    if loop is None:
        return ", where it may overwrite what is read again (checked where it runs)"
    first = _first_located(module, plan.keys.loops.block(loop.header).instructions)
    where = _where(module, first.dbg) if first is not None else None
    return f", where it may overwrite what is read again (checked before the loop at {where or 'an unknown line'})"


def _slot(module: Module, plan: CachePlan, slot: CacheSlot) -> str:
    key = slot.key
    d = plan.keys[key]
    what, why, inst = _describe(module, plan, key)
    where = _where(module, inst.dbg if inst is not None else None)
    text = f"    {slot.size:>5} B  {where or '(no line)'}"
    code = _source(module, inst.dbg if inst is not None else None)
    why = why or d.why or ("it can be recomputed, but storing it is cheaper than storing what it is recomputed "
                           "from")
    return f"{text}  {what}: {why}" + (f"\n{' ' * 14}| {code}" if code else "")


def _describe(module: Module, plan: CachePlan, key):
    keys = plan.keys
    d = keys[key]
    if key.kind == VALUE:
        return f"{d.inst.opcode} {key.name}", d.why, d.inst
    if key.kind == SHADOW:
        return f"the shadow of {key.name}", d.why, d.inst
    if key.kind == MASK:
        return f"whether {key.name} has a shadow", d.why, d.inst
    if key.kind == CAME:
        if key.name == RETURNS:
            return "which return", d.why, None
        block = keys.loops.block(key.name)
        return "which way in", d.why, _first_located(module, block.instructions)
    if key.kind == EXIT:
        loop = keys.loops.by_header[key.name]
        return "iterations run", d.why, _first_located(module, keys.loops.block(loop.header).instructions)
    if key.kind == DESC:
        loop = keys.loops.by_header[key.name]
        return "a loop's buffer", "where the storage of the loop inside is", \
            _first_located(module, keys.loops.block(loop.header).instructions)
    if key.kind == BLOB:
        return f"the record of a call to {source_name(d.inst.callee)}", "what its reverse sweep needs", d.inst
    if key.kind == CHOICE:
        return f"which argument of {d.inst.callee.lstrip('@')} won", \
            "a byte instead of the arguments' values, which would have to be stored", d.inst
    if key.kind == LOG:
        return "the undo log", "the log this call opened, if none was open", None
    if key.kind == OLD:
        return "the value overwritten by a store", "put back while the reverse sweep runs", d.inst
    if key.kind == GUARD:
        return "whether a store was logged", "its run-time check said it may overwrite what is read again", d.inst
    return str(key), d.why, d.inst


def _first_located(module: Module, instructions):
    return next((i for i in instructions if _where(module, i.dbg)), None)


def _loop(module: Module, plan: CachePlan, loop: Loop) -> str:
    """The loop's C line: the first located instruction of its header (or of its body)."""
    blocks = [plan.keys.loops.block(loop.header)] + [plan.keys.loops.block(b) for b in sorted(loop.body)]
    for block in blocks:
        inst = _first_located(module, block.instructions)
        if inst is not None and _where(module, inst.dbg):
            return f"the loop at {_where(module, inst.dbg)}"
    return f"the loop {loop.header}"


def _where(module: Module, dbg: str | None) -> str:
    loc = user_location(module, dbg)
    if loc is None or loc.line == 0:  # line 0: code the compiler made up
        return ""
    path = loc.file
    if os.path.isabs(path) and not os.path.relpath(path).startswith(".."):
        path = os.path.relpath(path)  # short when under the current directory
    return f"{path}:{loc.line}"


def _source(module: Module, dbg: str | None) -> str:
    loc = user_location(module, dbg)
    if loc is None or loc.line == 0:
        return ""
    lines = _read(loc.file)
    return lines[loc.line - 1].strip() if 0 < loc.line <= len(lines) else ""


@lru_cache(maxsize=64)
def _read(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


