"""The reverse-mode pair of a checkpointed loop function (outline.py), from
templates/checkpoint.ll.j2: the forward sweep keeps a snapshot of the loop's regions
(regions.py) at its start and runs the loop; the reverse sweep reverses the iterations from the
last, each by the step's own pair (derived like any function's), running iterations again from
the nearest snapshot as Griewank's binomial schedule says, within the budget."""

from __future__ import annotations

from dataclasses import dataclass, replace

from adgen.base.templates import render_text
from adgen.base.units import exact_size, human_size
from adgen.ir_ad.diagnose import source_name, user_location
from adgen.ir_ad.custom import FixedRecord
from adgen.ir_ad.ir import I1, I8, I64, PTR, VOID, Function, Module, struct
from adgen.ir_ad.analysis.ranges import Node
from adgen.ir_ad.ir.builder import Builder, Declarations, V, bare, local
from adgen.ir_ad.reverse.checkpoint.outline import Outlined
from adgen.ir_ad.reverse.checkpoint.regions import Extent, Extents, NotCheckpointed, by_pointer, state_extent
from adgen.ir_ad.reverse.sweeps.guards import Intervals
from adgen.ir_ad.reverse.types import RevDerived, RevPattern, aug_params
from adgen.ir_ad.shadows import Layout

RECORD = 16  # the iterations the loop ran, the snapshot of its start
REGIONS, BYTES = "%\"c'regions\"", "%\"c'bytes\""  # what the template's code reads of the regions' code


@dataclass
class Checkpointed:
    """A loop function, with what its pair needs: the outlined loop, its extents, the budget."""

    outlined: Outlined
    extents: Extents
    budget: int
    where: str  # the loop's source line, for --explain
    function: str  # the function it was outlined from, for messages
    step_record: int = 0  # bytes of one iteration's record, once its pair is written

    def explain(self, module: Module, title: str) -> str:
        """`--explain`'s account of the loop: what a snapshot holds, and the schedule."""
        regions = []
        for extents in by_pointer([e for group in self.extents.written.values() for e in group]):
            lines = sorted({w.line for e in extents if e.inst is not None
                            for w in [user_location(module, e.inst.dbg)] if w is not None and w.line > 0})
            regions.append(f"line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}" if lines else
                           f"in {source_name(self.function)}")
        holds = f"  a snapshot holds the values it carries ({human_size(self.outlined.state_size)})"
        if regions:
            holds += (" and the memory it writes: for each pointer it writes through, the bytes from the lowest to "
                      "the highest address its accesses through it reach, as the loop's bounds give them when it "
                      f"starts ({len(regions)} such: {'; '.join(regions)})")
        else:
            holds += ": it writes no memory"
        return "\n".join([
            f"{title}: the loop {f'at {self.where}' if self.where else f'in {source_name(self.function)}'}, "
            f"checkpointed within {exact_size(self.budget)}:", holds,
            "  the forward sweep keeps a snapshot of the loop's start and counts the iterations; the reverse sweep "
            "reverses them from the last, running each again from the nearest snapshot before it, snapshots taken "
            "by Griewank's binomial rule: with s snapshots (as many as the budget holds, at least 1) of T "
            "iterations, each runs again at most r times, r the least with C(s + r, s) >= T",
            f"  at most the budget in snapshots, plus one iteration's record ({human_size(self.step_record)}) and the "
            "buffers of its loops (below); ADGEN_CHECKPOINTS=1 in the environment prints each reverse sweep's "
            "iterations, snapshots and iterations run again"])


def write_pair(module: Module, fn: Function, ck: Checkpointed, pattern: RevPattern, names: tuple[str, str, str],
               step: RevDerived, decls: Declarations) -> tuple[str, RevDerived]:
    """The pair's text and its description; `step` is the step function's pair for the same pattern."""
    layout = Layout(module, pattern.width, pattern.kind)
    params = aug_params(fn, pattern.active, layout)
    overwritten = {p.name for p, o in zip(fn.params, pattern.overwritten) if o}
    regions = [[state_extent(ck.outlined.state_size)]] + ck.extents.needed({p.name for p in fn.params}, overwritten,
                                                                           pattern.later_writes)
    code, count = _regions(regions, decls)
    fixup = _shadow_pointers(fn, ck, pattern, layout, decls)
    primal = ", ".join(f"{p.type.text} {p.name}" for p in fn.params)
    aug_ret = fn.ret if pattern.ret_needed else VOID
    aug, rev, free = names
    raw = ck.where.encode()
    where = "".join(chr(c) if 32 <= c < 127 and chr(c) not in '"\\' else f"\\{c:02X}" for c in raw)
    text = render_text("checkpoint.ll.j2", aug=aug, rev=rev, free=free, advance=_beside(aug, "advance"),
                       shadows_fn=_beside(aug, "shadows"), where_global=_beside(rev, "where"),
                       step=ck.outlined.step.name, primal=primal, params=", ".join(params), aug_ret=aug_ret.text,
                       regions=code, count=count, budget=ck.budget, shadows=fixup, where=where, where_bytes=len(raw),
                       step_record=max(step.record_size, 16), step_aug=step.aug, step_rev=step.rev,
                       step_aug_ret=step.aug_ret.text, step_args=", ".join(params[:-1]), rev_ret=step.rev_ret.text,
                       rev_elems=[t.text for t in step.rev_ret.elems])
    ck.step_record = step.record_size
    derived = RevDerived(aug, rev, pattern, aug_ret, step.rev_ret, step.scalars, FixedRecord(RECORD), free,
                         tuple(True for _ in fn.params), tuple(True for _ in fn.params))
    return text, derived


def step_pattern(pattern: RevPattern, step: str) -> RevPattern:
    """The step's pattern: its forward and reverse sweeps run one after the other, so nothing
    overwrites its memory between them; what it overwrites itself is not undone through the undo
    log, which would keep every iteration's entries until the gradient ends (and then write them
    again, over the memory the loop's reverse sweep put back); and no loop of it is checkpointed
    (one iteration's storage is freed before the next iteration's reverse)."""
    none = tuple(False for _ in pattern.active)
    return replace(pattern, function=step, overwritten=none, later_writes=False, ret_needed=True, undo_writes=False,
                   outliving=none, budget=0)


def _regions(regions: list[list[Extent]], decls: Declarations) -> tuple[str, int]:
    """The code filling `%regions` ({ address, bytes } each, the hull of its extents) and
    `%bytes`, their total, with the check that the bounds held."""
    lines: list[str] = []
    b = Builder(decls, lines, prefix="ck")
    iv = Intervals(b)
    b.emit(f"{REGIONS} = alloca [{len(regions)} x {{ i64, i64 }}], align 8")
    total = V(I64, "0")
    for k, extents in enumerate(regions):
        los, his = [], []
        for e in extents:
            lo, last = iv.bounds(e.address)
            if isinstance(e.size, Node):  # a byte count (a copy's, a length @size gives)
                hi = b.binary("add", last, iv.bounds(e.size)[1])
            else:
                hi = b.binary("add", last, b.size_of(e.size))
            los.append(lo)
            his.append(hi)
        lo, hi = iv.fold("@llvm.smin.i64", los), iv.fold("@llvm.smax.i64", his)
        length = b.call("@llvm.smax.i64", I64, [b.binary("sub", hi, lo), V(I64, "0")])
        at = b.gep(struct(I64, I64), V(PTR, REGIONS), V(I64, str(k)))
        b.store(lo, at, 8)
        b.store(length, b.gep(I64, at, V(I64, "1")), 8)
        total = b.binary("add", total, length)
    b.call('@"adgen.ckpt.check"', VOID, [iv.valid()])
    b.emit(f"{BYTES} = add i64 {total.ref}, 0")
    return "\n".join(lines), len(regions)


def _shadow_pointers(fn: Function, ck: Checkpointed, pattern: RevPattern, layout: Layout,
                     decls: Declarations) -> str:
    """The code giving the state's pointers their shadows again, where the state has shadows:
    the primal iterations the schedule runs do not write them. A pointer always one of the
    inputs (pointers swapped each iteration) gets the shadow of the input it equals; one computed
    in the loop cannot be checkpointed (yet)."""
    if not pattern.active[0] or not ck.outlined.pointers:
        return ""
    params = [p.name for p in fn.params]
    lines: list[str] = []
    b = Builder(decls, lines, prefix="cs")
    lanes = layout.names(fn.params[0].name)
    for offset, members in ck.outlined.pointers:
        if members is None:
            raise NotCheckpointed(None, "a pointer computed in the loop and carried from one iteration to the next, "
                                  "in a loop checkpointed to keep the gradient within its memory budget (pointers "
                                  "swapped each iteration are supported)")
        active = [pattern.active[params.index(m)] for m in members]
        if not any(active):
            continue
        if not all(active) or layout.part_type(PTR) != PTR:
            raise NotCheckpointed(None, "a pointer carried from one iteration to the next that is sometimes one "
                                  "with derivatives and sometimes not, in a loop checkpointed to keep the "
                                  "gradient within its memory budget")
        slot = b.gep(I8, V(PTR, fn.params[0].name), V(I64, str(offset)))
        pointer = b.load(PTR, slot, 8)
        for k, lane in enumerate(lanes):
            shadow = V(PTR, "null")
            for m in members:
                same = b.value(I1, f"icmp eq ptr {pointer.ref}, {m}")
                shadow = b.select(same, V(PTR, layout.names(m)[k]), shadow)
            b.store(shadow, b.gep(I8, V(PTR, lane), V(I64, str(offset))), 8)
    return "\n".join(lines)


def _beside(name: str, suffix: str) -> str:
    """The name of a function or global that goes with `name` (`@"f'3.aug"` -> `@"f'3.aug.advance"`)."""
    return "@" + local(f"{bare('%' + name[1:])}.{suffix}")[1:]
