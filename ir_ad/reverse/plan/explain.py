"""`adgen build --explain`: the cache plan of every reverse-mode derivative, as a reader wants it.
A line per derived function sums it up (bytes per call, per iteration of each loop, values
recomputed); below it, what the forward sweep stores for the reverse sweep: each value named by
its source expression and line, why it is not recomputed, how many bytes per call or per loop
iteration; the stores undone through the undo log. The counterpart of Enzyme's `-Rpass=enzyme`
cache remarks. The plan is computed elsewhere (cache_plan.py); terms.py names its parts."""

from __future__ import annotations

from adgen.base.units import human_size
from adgen.ir_ad.ir import Module
from adgen.ir_ad.reverse.plan.cache_plan import INDEXED, CachePlan, CacheSlot, Group
from adgen.ir_ad.reverse.plan.keys import VALUE
from adgen.ir_ad.reverse.plan.terms import Entry, Terms
from adgen.ir_ad.reverse.plan.undo import LOG_RUN_HEADER

_CODE = " " * 15 + "| "  # the source line under an entry


def explain(module: Module, plans: list[tuple[str, CachePlan]]) -> str:
    """`plans`: (a title, the plan) per derived function, top-level ones first."""
    return "\n".join(_one(module, title, plan) for title, plan in plans) + "\n"


def _one(module: Module, title: str, plan: CachePlan) -> str:
    if not isinstance(plan, CachePlan):  # a checkpointed loop's schedule (reverse/checkpoint/pair.py)
        return plan.explain(module, title)
    terms = Terms(module, plan)
    where = terms.function_place()
    lines = [f"{title}{f' ({where})' if where else ''}: {_summary(terms, plan)}"]
    lines += _logged(terms, plan)
    lines += [_skipped(terms, s) for s in plan.skipped]
    top = [s for s in plan.slots.values() if s.group is None]
    if top:
        lines.append(f"  per call, in its record ({human_size(plan.record_size)}, the caller's; no allocation):")
        lines += _slots(terms, sorted(top, key=lambda s: s.offset), "    ")
    for g in plan.groups:
        inner = "" if len(g.members) == 1 else \
            f", with the {len(g.members) - 1} loop(s) inside it whose trip counts are known then"
        if g.kind != INDEXED:
            how = f"{terms.loop(g.root)} (trip count known only when it ends): a buffer growing as it runs"
        elif g.in_record is not None:
            how = f"{terms.loop(g.root)}: constant trip counts, so in the record at byte {g.in_record}{inner}"
        else:
            how = f"{terms.loop(g.root)}: one buffer, allocated before it starts{inner}"
        lines.append(f"  {how}")
        for member, per in _per_iteration(g):
            lines.append(f"    per iteration of {terms.loop(member)} ({human_size(per)}):")
            lines += _slots(terms, [s for s in g.slots if s.scope is member], "      ", {c.key for c in plan.copied})
    return "\n".join(lines)


def _skipped(terms: Terms, skip) -> str:
    """A loop the forward sweep skips (plan/discarded.py)."""
    when = "at every run" if skip.around is None else f"in the last iteration of {terms.loop(skip.around)}"
    return (f"  skips {terms.loop(skip.loop)} {when}: it writes only memory whose values the caller discards "
            "(duponly), and nothing reads them after it (its adjoint still runs)")


def _summary(terms: Terms, plan: CachePlan) -> str:
    """`stores 48 B per call, 8 B per iteration of the loop at kernels.c:51; recomputes 5 values`."""
    recomputed = len({k for k in plan.recomputed if k.kind == VALUE})
    again = f"recomputes {recomputed} value{'s' if recomputed != 1 else ''}"
    if plan.stores_nothing():
        return f"stores nothing; {again}"
    stored = [f"{human_size(plan.record_size)} per call"] + [
        f"{human_size(per)} per iteration of {terms.loop(member)}" for g in plan.groups for member, per in
        _per_iteration(g)]
    return f"stores {', '.join(stored)}; {again}"


def _per_iteration(group: Group) -> list[tuple]:
    """The loops of a group that store something, with their bytes per iteration."""
    found = []
    for member in group.members:
        slots = [s for s in group.slots if s.scope is member]
        if slots:
            found.append((member, sum(s.size for s in slots) if group.kind == INDEXED else group.stride))
    return found


def _logged(terms: Terms, plan: CachePlan) -> list[str]:
    """The writes the reverse sweep undoes through the undo log, instead of storing what they
    overwrite."""
    if not plan.logged:
        return []
    lines = [f"  undone through the undo log (the bytes a store overwrites each time it runs, and {LOG_RUN_HEADER} "
             "more where it does not write right after the store logged before it), so that what they "
             "overwrite is read again, not stored:"]
    copies: dict[str, int] = {}  # (a store the optimizer copied, as loop versioning does: one line)
    for inst in plan.logged:
        if inst.opcode == "call":
            place, what, quoted = terms.call(inst)
            what += ", which undoes its own writes"
        else:
            (place, what), quoted = terms.store(inst), True
            what += _checked(terms, plan, inst)
        line = _line(Entry(place, what, "", terms.code(place, not quoted)), "", "    ")
        copies[line] = copies.get(line, 0) + 1
    for line, n in copies.items():
        first, *code = line.split("\n")
        lines.append("\n".join([first + (f" ({n} copies of it in the optimized code)" if n > 1 else "")] + code))
    return lines


def _checked(terms: Terms, plan: CachePlan, store) -> str:
    """Where a logged store's run-time check is made (plan/undo.py)."""
    guards = plan.keys.guards
    if id(store) not in guards:
        return ", every time"
    loop = guards[id(store)]
    if loop is None:
        return ", where it may overwrite what is read again (checked where it runs)"
    return f", where it may overwrite what is read again (checked before {terms.loop(loop)})"


def _slots(terms: Terms, slots: list[CacheSlot], indent: str, copied: set = frozenset()) -> list[str]:
    """A line per stored thing, those the optimizer copied (as loop versioning does) as one,
    with their bytes together; `copied`: loads stored as one copy before their loop."""
    found: dict[tuple, tuple[Entry, list[CacheSlot]]] = {}
    for slot in slots:
        entry = terms.entry(slot.key, slot.scope)
        if slot.key in copied:
            entry = Entry(entry.place, entry.what, f"{entry.why}; stored by one copy before the loop, not in "
                          "each iteration (nothing in the loop writes that memory)", entry.code)
        found.setdefault((entry.place and str(entry.place), entry.what, entry.why, tuple(entry.code)),
                         (entry, []))[1].append(slot)
    lines = []
    for entry, same in found.values():
        if len(same) > 1:
            entry = Entry(entry.place, entry.what, f"{entry.why} ({len(same)} copies of it in the optimized code)",
                          entry.code)
        lines.append(_line(entry, f"{human_size(sum(s.size for s in same)):>7}  ", indent))
    return lines


def _line(entry: Entry, size: str, indent: str) -> str:
    place = f"{entry.place}  " if entry.place is not None else ""
    why = f": {entry.why}" if entry.why else ""
    return "\n".join([f"{indent}{size}{place}{entry.what}{why}"] + [_CODE + code for code in entry.code])
