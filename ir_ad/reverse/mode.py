"""Reverse mode: for a function and a pattern of which arguments carry derivatives, two
functions that share a *record*:

- the augmented forward sweep (`aug`, augmented.py) runs the primal code and stores what the
  cache plan says the reverse sweep cannot recompute;
- the reverse sweep (`rev`, reverse_sweep.py) walks the function backwards, accumulating
  adjoints, recomputing or reading back the primal values its rules need.

The record is a fixed number of bytes, known at build time, that the caller provides: the
kernel keeps it on its stack, and a caller keeps a callee's record in its own storage (the
callee's record is part of the caller's). Everything is decided first, in this order: the
analyses (loops, memory, activity), the reverse sweep's needs, the cache plan (cache_plan.py),
then the two functions are written from the plan. This module drives those stages; what they
share (the pattern, the pair, the facts about the function) is in types.py."""

from __future__ import annotations

import os
from dataclasses import replace

from adgen.base.templates import render_text
from adgen.ir_ad.analysis.activity import ActivityAnalysis, scalar_type
from adgen.ir_ad.analysis.flow import CFG, Memory
from adgen.ir_ad.ir.builder import Declarations, bare, local
from adgen.ir_ad.reverse.plan.cache_plan import CachePlan, make_plan
from adgen.ir_ad.reverse.plan.discarded import skipped_loops, written_discarded
from adgen.ir_ad.custom import HandDerivatives, reverse_refusal, reverse_wrappers
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.ir import I1, I8, I32, I64, PTR, VOID, Function, Instruction, Module, struct
from adgen.ir_ad.ir.edit import body_mentions, defined_functions
from adgen.ir_ad.ir.parallel import region_call
from adgen.ir_ad.reverse.plan.costs import expensive, forward_live
from adgen.ir_ad.reverse.plan.keys import (BLOB, GUARD, LOG, LOG_OWNER, OLD, PURE_INTRINSICS, SHADOW, VALUE, Key, Keys,
                                           instruction_key)
from adgen.ir_ad.reverse.plan.undo import LOGGED, lives_on, plan_undo
from adgen.ir_ad.analysis.loops import Irreducible, LoopForest
from adgen.ir_ad.reverse.plan.mincut import NoCut
from adgen.ir_ad.reverse.sweeps.augmented import write_augmented
from adgen.ir_ad.reverse.sweeps.guards import Guards
from adgen.ir_ad.reverse.sweeps.reverse_sweep import ReverseSweep
from adgen.ir_ad.reverse.sweeps.sharing import Sharing
from adgen.ir_ad.reverse.teams import on_teams, openmp_reverse_text, openmp_runtime, region_pair
from adgen.ir_ad.reverse.types import CallSite, ReverseFacts, RevDerived, RevPattern, size_global
from adgen.ir_ad.reverse.checkpoint.outline import outline
from adgen.ir_ad.reverse.checkpoint.regions import NotCheckpointed
from adgen.ir_ad.reverse.checkpoint.pair import RECORD, Checkpointed, step_pattern, write_pair
from adgen.ir_ad.calls import COPIES, FREE, callee_name, kind_of
from adgen.ir_ad.shadows import (BY_HAND_ITSELF, INTERLEAVED, VECTOR_VALUES, Layout, at_once, points_nowhere,
                                 with_runtime_activity)


# What the helpers of templates/runtime.ll.j2 call.
RUNTIME_DECLARATIONS = [
    ("@realloc", PTR, [PTR, I64]), ("@abort", VOID, []), ("@malloc", PTR, [I64]), ("@free", VOID, [PTR]),
    ("@llvm.umax.i64", I64, [I64, I64]), ("@llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1]),
    ("@llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1]), ("@calloc", PTR, [I64, I64]),
    ("@write", I64, [I32, PTR, I64]), ("@llvm.umin.i64", I64, [I64, I64]), ("@llvm.smin.i64", I64, [I64, I64]),
    ("@llvm.smax.i64", I64, [I64, I64]), ("@llvm.memmove.p0.p0.i64", VOID, [PTR, PTR, I64, I1]),
    ("@malloc_usable_size", I64, [PTR]), ("@llvm.stacksave.p0", PTR, []),
]


_STACK = ('@"adgen.stack.alloc"', '@"adgen.grow"')  # what takes storage from the gradient's stack (runtime.ll.j2)


class ReverseMode:
    """The reverse-mode pairs of one module, each pattern derived once, with their definitions."""

    def __init__(self, module: Module, decls: Declarations, level: int = 1, releases: bool = False,
                 log: bool = True):
        self.module, self.decls = module, decls
        self.releases = releases  # also write each pair's `free` function (split mode needs them)
        self.log = log  # the entries made next may undo stores in loops through the undo log (RevPattern.logged)
        self.tag = "" if level == 1 else str(level)  # in names: apart from an earlier level's, still in the module
        self.memo: dict[RevPattern, RevDerived] = {}
        self.definitions: list[str] = []
        self.explained: list[tuple[RevDerived, CachePlan]] = []
        self.checkpoints: list[tuple[RevDerived, Checkpointed]] = []  # the checkpointed loops' pairs
        self.budgeted_copies: dict[tuple, Function] = {}  # (function, budget, sizes) -> its checkpointed copy
        self.budgeted: set[str] = set()  # the names of those copies
        self.regions: dict[str, RevDerived] = {}  # the pairs of parallel regions' calls, by their team pair's `aug`
        self._depth = 0  # derivations under way: the outermost is an entry's (see derive)

        self.runtime = render_text("runtime.ll.j2") + render_text("undo_log.ll.j2", LOGGED=LOGGED)
        self.checkpoint_runtime = render_text("checkpoint_runtime.ll.j2")
        decls.known |= defined_functions(self.runtime) | defined_functions(self.checkpoint_runtime) | \
            defined_functions(openmp_reverse_text())

    def runtime_text(self) -> str:
        """The storage and adjoint helpers, with the declarations they need."""
        for name, ret, params in RUNTIME_DECLARATIONS:
            self.decls.need(name, ret, params)
        runtime = self.runtime + (openmp_runtime(self.module, self.decls) if any(p.team for p in self.memo) else "")
        if not self.checkpoints:
            return runtime
        self.decls.need("@getenv", PTR, [PTR])
        variadic = "" if "@dprintf" in self.decls.known else "declare i32 @dprintf(i32, ptr, ...)\n"
        self.decls.known.add("@dprintf")
        return runtime + variadic + self.checkpoint_runtime

    def derive(self, pattern: RevPattern) -> RevDerived:
        """The pair for a pattern, written once: analyses, the reverse sweep's needs, the cache
        plan, then the reverse sweep and the augmented forward sweep from the plan. A derivation
        (the pair of an entry, and those of its callees) that meets a pointer without a shadow
        where it needs one is made again with runtime activity (shadows.py), what the first try
        made undone."""
        if pattern.discarded:  # (() where it changes nothing: `dup` then shares the pair)
            pattern = replace(pattern, discarded=written_discarded(self.module, pattern))
        if pattern in self.memo:
            return self.memo[pattern]
        if self._depth:
            return self._derive(pattern)
        before = _state(self)
        return with_runtime_activity(self, pattern, lambda: _restore(self, before))

    def _derive(self, pattern: RevPattern) -> RevDerived:
        if pattern in self.memo:
            return self.memo[pattern]
        fn = self.module.functions[pattern.function]
        if pattern.function in self.module.checkpointed:
            return self._checkpointed(fn, self.module.checkpointed[pattern.function], pattern)
        custom = self.module.custom.get(pattern.function)
        if custom is not None and custom.reverses:  # (no loops of its own to checkpoint: whatever its budget)
            return self._by_hand(fn, custom, pattern)
        if pattern.budget and pattern.function not in self.budgeted:  # the copy with its loops outlined
            derived = self.derive(replace(pattern, function=self.within_budget(fn, pattern.budget).name))
            self.memo[pattern] = derived
            return derived
        layout = Layout(self.module, pattern.width, pattern.kind)
        derived = self._pair(fn, pattern, layout)
        self.memo[pattern] = derived
        d = self._analyze(fn, derived, layout)
        derived.undoes_writes = pattern.undo_writes and _undoes_all(d)
        on_teams(d)
        sweep = ReverseSweep(d)
        sharing = Sharing(d) if pattern.forked else None
        if sharing is not None and sharing.arrays:  # a region's threads: their adds their own where they can
            fallback = "@" + local(bare("%" + derived.rev[1:]) + ".atomic")[1:]
            sweep = ReverseSweep(d, sharing=sharing, fallback=fallback)
            atomic = ReverseSweep(d, sharing=sharing.bystander(), name=fallback)
            d.plan = _plan(d, _merged(sweep.collect(), atomic.collect()))
            rev = sweep.write(d.plan) + "\n" + atomic.write(d.plan)
            derived.shared_arrays = len(sharing.arrays)
        else:
            d.plan = _plan(d, sweep.collect())
            if any(pattern.discarded):
                d.plan.skipped = skipped_loops(d, set(d.plan.needs) | d.plan.recomputed, {k for k, _ in d.plan.slots},
                                               [m for g in d.plan.groups for m in g.members], Guards(d).told_in())
            rev = sweep.write(d.plan)
        derived.atomic_in_loops = sweep.adjoints.atomic_in_loops or any(
            c.derived.atomic_in_loops for c in d.calls.values())
        if self.releases:
            releaser = ReverseSweep(d, release_only=True)
            releaser.collect()
            self.definitions.append(releaser.write(d.plan) if pattern.logged else at_once(releaser.write(d.plan)))
        aug = write_augmented(d)
        if not pattern.logged:  # (no log alive while it runs; a later level differentiates it: shadows.at_once)
            aug, rev = at_once(aug), at_once(rev)
        derived.stacks = any(call in text for call in _STACK for text in (aug, rev)) or pattern.team or any(
            c.indirect or c.derived.plan is None or c.derived.stacks for c in d.calls.values())
        derived.plan = d.plan
        derived.rev_uses = tuple(body_mentions(rev, p.name) for p in fn.params)
        derived.aug_uses = tuple(any(body_mentions(aug, n) for n in layout.names(p.name)) for p in fn.params)
        self.definitions += [aug, rev, f"{size_global(derived)} = internal constant i64 {d.plan.record_size}"]
        self.explained.append((derived, d.plan))
        return derived

    def within_budget(self, fn: Function, budget: int, sizes: tuple = ()) -> Function:
        """A copy of `fn` whose outermost loops are checkpointed to keep reverse mode within
        `budget` bytes (reverse/checkpoint/): the function to derive instead of `fn`, with the
        same budget, which its calls pass on (a callee's loops are checkpointed too; the calls
        of an iteration are not: one iteration's storage is freed before the next's). `sizes`:
        the lengths `@size` gives its pointer parameters (`Derivation.sizes`)."""
        key = (fn.name, budget, sizes)
        if key in self.budgeted_copies:
            return self.budgeted_copies[key]
        name = "@" + local(f"{bare(fn.name)}'checkpointed.{len(self.budgeted_copies)}")[1:]
        try:
            new, loops = outline(self.module, fn, name, sizes)
        except NotCheckpointed as exc:
            raise Unsupported(fn.name, exc.inst, exc.what) from None
        self.module.functions[new.name] = new
        self.budgeted_copies[key] = new
        self.budgeted.add(new.name)
        self.definitions.append(new.text)
        for o, extents in loops:
            for f in (o.step, o.loop_fn):
                self.module.functions[f.name] = f
                self.definitions.append(f.text)
            where = _loop_line(self.module, o.step)
            self.module.checkpointed[o.loop_fn.name] = Checkpointed(
                o, extents, budget, f"{os.path.basename(where.file)}:{where.line}" if where else "", fn.name)
        return new

    def _checkpointed(self, fn: Function, ck: Checkpointed, pattern: RevPattern) -> RevDerived:
        """The pair of a checkpointed loop function: the step's pair, and the schedule around it.
        It never undoes its writes (its reverse sweep leaves memory as it found it), so a caller
        asking for that gets the same pair and refuses it."""
        plain = replace(pattern, undo_writes=False)
        if plain in self.memo:
            self.memo[pattern] = self.memo[plain]
            return self.memo[plain]
        step = self.derive(step_pattern(pattern, ck.outlined.step.name))
        stem = f"{bare(fn.name)}'{len(self.memo)}{self.tag}"
        names = tuple("@" + local(f"{stem}.{part}")[1:] for part in ("aug", "rev", "free"))
        try:
            text, derived = write_pair(self.module, fn, ck, pattern, names, step, self.decls)
        except NotCheckpointed as exc:
            raise Unsupported(ck.function, exc.inst, exc.what) from None
        self.memo[pattern] = self.memo[plain] = derived
        self.definitions += [text, f"{size_global(derived)} = internal constant i64 {RECORD}"]
        self.checkpoints.append((derived, ck))
        derived.serial_only = True
        return derived

    def _by_hand(self, fn: Function, custom: HandDerivatives, pattern: RevPattern) -> RevDerived:
        """The pair for a function with a gradient written by hand: wrappers calling it."""
        stem = f"{bare(fn.name)}'custom{self.tag}.{len(self.memo)}"
        names = tuple("@" + local(f"{stem}.{part}")[1:] for part in ("aug", "rev", "free"))
        texts, pair = reverse_wrappers(self.module, custom, fn, names, pattern)
        every = tuple(True for _ in fn.params)
        derived = RevDerived(pair.aug, pair.rev, pattern, pair.aug_ret, pair.rev_ret, pair.scalars, pair.record,
                             pair.free, every, every, serial_only=True)
        self.memo[pattern] = derived
        self.definitions += texts + [f"{size_global(derived)} = internal constant i64 {pair.record.record_size}"]
        return derived

    def _pair(self, fn: Function, pattern: RevPattern, layout: Layout) -> RevDerived:
        """The names and return types of the pair, before anything is written (a recursive call
        needs them)."""
        scalars = [i for i, (p, on) in enumerate(zip(fn.params, pattern.active))
                   if on and scalar_type(p.type, pattern.memtypes[i])]
        grads = [t for i in scalars for t in [layout.part_type(scalar_type(fn.params[i].type,
                                                                           pattern.memtypes[i]))] * layout.parts]
        mask = "".join("d" if a else "c" for a in pattern.active) + ("a" if pattern.ret_active else "") + \
            ("s" if pattern.ret_shadow else "")
        stem = f"{bare(fn.name)}'{mask}{self.tag}.{pattern.kind[0]}{pattern.width}.{len(self.memo)}"
        aug_ret = struct(fn.ret, *[layout.part_type(PTR)] * layout.parts) if pattern.ret_shadow else \
            fn.ret if pattern.ret_needed else VOID
        return RevDerived("@" + local(stem + ".aug")[1:], "@" + local(stem + ".rev")[1:], pattern,
                          aug_ret, struct(*grads) if grads else VOID, scalars, free="@" + local(stem + ".free")[1:])

    def _analyze(self, fn: Function, derived: RevDerived, layout: Layout) -> ReverseFacts:
        """The analyses of `fn`, the calls it makes to other pairs (derived first), and where
        its local arrays and their shadows live."""
        pattern = derived.pattern
        cfg = CFG(fn)
        loops = LoopForest(fn, cfg)
        try:
            loops.check_reducible()
        except Irreducible as exc:
            block = next(b for b in fn.blocks if b.label == exc.block)
            raise Unsupported(fn.name, block.instructions[0], "a loop with more than one way in (irreducible "
                              "control flow, from a goto into a loop)", irreducible=True)
        overwritten = frozenset(p.name for p, o in zip(fn.params, pattern.overwritten) if o)
        memory = Memory(fn, cfg, self.module, overwritten, pattern.later_writes)
        activity = ActivityAnalysis(fn, self.module, cfg, memory, pattern.active, pattern.ret_active, pattern.memtypes,
                                    pattern.ret_masked, pattern.runtime)
        if layout.kind == INTERLEAVED:
            vector = next((v for v, t in activity.floaty.items() if t.kind == "vector"), None)
            if vector is not None:
                raise Unsupported(fn.name, cfg.defs.get(vector), f"a vector value ('{activity.floaty[vector].text}') "
                                  f"carrying derivatives: {VECTOR_VALUES}")
        outliving = {p.name for p, o in zip(fn.params, pattern.outliving) if o}
        on_heap = {name for name in _pointer_traffic(fn, cfg, activity, memory)
                   if name in cfg.defs and cfg.defs[name].opcode == "alloca" and name in activity.pointers}
        # (a team's threads undo stores through their logs only: templates/openmp.ll.j2)
        undo = plan_undo(fn, self.module, cfg, loops, memory, outliving if pattern.logged else set(), pattern.undo_writes,
                         from_record=not pattern.team, on_heap=on_heap)
        while True:  # again without the calls whose callee turned out not to undo its writes
            d = ReverseFacts(self.module, self.decls, fn, derived, layout, cfg, loops, memory, activity)
            d.heap = set(on_heap)
            d.undoable, d.logged, d.guards = undo.writes, undo.logged, undo.guards
            d.registers = pattern.logged
            refused = self._calls(d, undo)
            if not refused:
                break
            undo.calls = [c for c in undo.calls if c not in refused]
        _classify_allocas(d)
        d.keys = Keys(fn, self.module, cfg, loops, memory, activity, layout, _ignored(d), d.stack, d.reverse_local,
                      {id(s) for s in d.undoable}, d.guards, undo.overwritten)
        return d

    def _calls(self, d: ReverseFacts, undo) -> list[Instruction]:
        """Derives the calls `d.fn` makes to other pairs; returns those asked to undo their writes
        that cannot."""
        fn = d.fn
        ignored = _ignored(d)
        used = {o.value for i in fn.instructions() for o in i.operands} | \
            {v.value for i in fn.instructions() for v, _ in i.incoming}
        refused = []
        for inst in fn.instructions():
            d.inst = inst
            target = d.activity.derived_callee(inst)
            if target is not None:
                d.calls[id(inst)] = site = self._call(d, inst, target, ignored, inst.result in used,
                                                      inst in undo.calls)
                if inst in undo.calls and (site.derived.plan is None or not site.derived.undoes_writes):
                    refused.append(inst)
            elif inst in undo.calls:  # not reversed at all: its writes stay
                refused.append(inst)
        d.inst = None
        return refused

    def _call(self, d: ReverseFacts, inst: Instruction, target: Function, ignored: set[int], used: bool,
              undo_writes: bool = False) -> CallSite:
        name = callee_name(inst)
        if target.variadic:
            raise d.fail(f"a call to variadic function '{name}'")
        activity = d.activity
        args = inst.operands
        after, later = d.memory.written_after(inst, ignored)
        memtypes = tuple((activity.memtype(a.value).text if a.type.kind == "ptr" and activity.on(a)
                          and activity.memtype(a.value) else activity.floaty[a.value].text
                          if a.type.kind == "int" and a.value in activity.floaty else "") for a in args)
        overwritten = tuple(a.type.kind == "ptr" and (d.memory.arg_overwritten(a.value, after) or _on_stack(d, a.value))
                            for a in args)
        ret_active = inst.result is not None and activity.active(inst.result)
        budget = d.pattern.budget if d.fn.name in self.budgeted else 0  # (outside the loops: they are outlined)
        by_hand = target.name in self.module.custom  # (whose own activities decide)
        if by_hand and any(activity.may_be_itself(a) for a in args):
            raise d.fail(BY_HAND_ITSELF)
        nowhere = not by_hand and not region_call(inst)  # (a region's null array stays const: its threads'
        # shared adds would span addresses from null, which no guard of the primal's stops)
        active = tuple(activity.on(a) or (nowhere and points_nowhere(a, d.cfg.defs))  # (shadows.NOWHERE)
                       for a in args)
        pattern = RevPattern(target.name, active, ret_active, d.pattern.width,
                             d.pattern.kind, memtypes, overwritten, later, used, inst.result in activity.pointers,
                             undo_writes, tuple(a.type.kind == "ptr" and _outliving(d, a.value) for a in args),
                             budget, ret_active and inst.result in activity.masked, d.pattern.team,
                             runtime=d.pattern.runtime, logged=d.pattern.logged)
        refused = reverse_refusal(self.module, pattern)  # a derivative of arrays written by hand
        if refused is not None:
            raise d.fail(refused)
        if region_call(inst) and not d.pattern.team:  # (a region in one: one thread)
            team = self.derive(replace(pattern, team=True, forked=True))
            alone = team.plan is not None and not team.serial_only and not team.atomic_in_loops
            serial = None if alone else self.derive(pattern)  # (alone: the team's pair, on one thread too)
            if team.plan is not None and not team.serial_only and (serial is None or serial.plan is not None):
                if team.aug not in self.regions:
                    self.regions[team.aug], text = region_pair(self.module, self.decls, team, serial, self.releases)
                    self.definitions.append(text)
                return CallSite(self.regions[team.aug], Key(BLOB, instruction_key(d.fn, inst)), False)
            derived = serial or self.derive(pattern)
        else:
            derived = self.derive(pattern)  # no plan yet: a recursive call, whose record goes on the heap
        return CallSite(derived, Key(BLOB, instruction_key(d.fn, inst)), derived.plan is None)


def _classify_allocas(d: ReverseFacts) -> None:
    """Local arrays stay in the forward sweep's frame; the shadow of a fixed-size one is the
    reverse sweep's own local array, unless the forward sweep needs it too: then, like
    variable-size arrays with shadows, primal and shadow move to the heap until the reverse
    sweep frees them; so do those whose own memory a callee's reverse sweep reaches (a store it
    puts back while it runs), which the forward sweep's frame no longer holds by then."""
    entry = d.fn.blocks[0].label
    forward_uses = _forward_shadow_uses(d) | _reverse_primal_uses(d)
    for inst in d.fn.instructions():
        if inst.opcode != "alloca":
            continue
        fixed = d.cfg.block_of[inst.result] == entry and (inst.count is None or inst.count.is_constant)
        if inst.result not in d.activity.pointers:
            d.stack.add(inst.result)
        elif fixed and inst.result not in forward_uses:
            d.stack.add(inst.result)
            d.reverse_local.add(inst.result)
        else:
            d.heap.add(inst.result)


def _state(self: ReverseMode) -> tuple:
    """What a derivation adds to, to undo a failed one."""
    return (dict(self.memo), len(self.definitions), len(self.explained), len(self.checkpoints),
            dict(self.budgeted_copies), set(self.budgeted), dict(self.regions), dict(self.module.checkpointed),
            dict(self.module.functions))

def _restore(self: ReverseMode, state: tuple) -> None:
    memo, definitions, explained, checkpoints, copies, budgeted, regions, checkpointed, functions = state
    self.memo, self.budgeted_copies, self.budgeted, self.regions = memo, copies, budgeted, regions
    del self.definitions[definitions:], self.explained[explained:], self.checkpoints[checkpoints:]
    self.module.checkpointed.clear()
    self.module.checkpointed.update(checkpointed)
    self.module.functions.clear()
    self.module.functions.update(functions)


def _plan(d: ReverseFacts, needs: dict[Key, set]) -> CachePlan:
    """The cache plan for what the reverse sweep needs; the records of calls and the values of
    undone stores are always stored."""
    forced = [c.blob for c in d.calls.values()] + ([Key(LOG, LOG_OWNER)] if d.logged else
                                                   [Key(OLD, instruction_key(d.fn, s)) for s in d.undoable])
    forced += [Key(GUARD, instruction_key(d.fn, s)) for s in d.undoable if id(s) in d.guards]
    sizes = {c.blob: 8 if c.indirect else c.derived.record_size for c in d.calls.values()}
    try:
        plan = make_plan(d.fn.name, d.keys, d.loops, needs, forced, sizes, d.undoable if d.logged else ())
        # time against memory: the expensive calls the forward sweep computes anyway, stored
        live = {name for name in forward_live(d.fn, d.cfg, {k.name for k, _ in plan.cut if k.kind == VALUE},
                                              d.pattern.ret_needed, PURE_INTRINSICS)
                if expensive(d.cfg, name, d.activity.active)}
        if not live & {k.name for k in plan.recomputed if k.kind == VALUE}:
            return plan
        d.keys.live, d.keys.defs = live, {}
        return make_plan(d.fn.name, d.keys, d.loops, needs, forced, sizes, d.undoable if d.logged else ())
    except NoCut as exc:
        key, _ = exc.node
        what = f"the shadow of {key.name}" if key.kind == SHADOW else key.name
        raise Unsupported(d.fn.name, d.keys[key].inst, f"{what}, a value the reverse sweep needs but can neither "
                          "store nor recompute") from None


def _merged(*needs: dict[Key, set]) -> dict[Key, set]:
    """What several reverse sweeps of one plan need, together."""
    out: dict[Key, set] = {}
    for each in needs:
        for key, sites in each.items():
            out.setdefault(key, set()).update(sites)
    return out


def _loop_line(module: Module, step: Function):
    """Where an outlined loop stands: its first line in the function's own code (a rotated
    loop's header holds code of its body; code inlined into it stands where it was called)."""
    lines = []
    for inst in (i for b in step.blocks for i in b.instructions if i.dbg):
        where = module.inline_chain(inst.dbg)[-1][0]  # (the outermost)
        if where is not None and where.line > 0:
            lines.append(where)
    return min(lines, key=lambda w: w.line, default=None)


def _on_stack(d: ReverseFacts, pointer: str) -> bool:
    """Whether a pointer points into a local variable without derivatives, which stays in the
    forward sweep's frame (_classify_allocas): gone when a callee's reverse sweep runs, which must
    not read it again (an OpenMP region's shared `double c`, read through the caller's slot)."""
    base = d.memory.base(pointer)
    return base.kind == "fresh" and d.cfg.defs[base.name].opcode == "alloca" and base.name not in d.activity.pointers


def _outliving(d: ReverseFacts, pointer: str) -> bool:
    """Whether memory a pointer points into is still there when the undo log is closed
    (plan/undo.py's lives_on): stores into it may be logged."""
    outliving = {p.name for p, o in zip(d.fn.params, d.pattern.outliving) if o}
    return lives_on(d.memory, pointer, outliving, d.heap)


def _ignored(d: ReverseFacts) -> set[int]:
    """The writes (by id) that do not overwrite what the reverse sweep reads again: those it
    undoes, and frees of memory with derivatives (only marked by the forward sweep)."""
    return {id(s) for s in d.undoable} | {id(i) for i in d.fn.instructions() if _frees(i, d)}


def _undoes_all(d: ReverseFacts) -> bool:
    """Whether the reverse sweep undoes every write of `d.fn` to memory it did not allocate."""
    undone = {id(s) for s in d.undoable}
    for inst, base in d.memory.writes:
        if base.kind == "fresh" or d.cfg.block_of_inst(inst) in d.cfg.doomed:
            continue
        call = d.calls.get(id(inst))
        if id(inst) not in undone or (inst.opcode == "call" and (call is None or not call.derived.undoes_writes)):
            return False
    return True


def _frees(inst: Instruction, d: ReverseFacts) -> bool:
    """A free of memory with derivatives: the forward sweep only marks it (adgen.shadow.drop)."""
    return inst.opcode == "call" and kind_of(d.activity.module, inst) == FREE and \
        inst.operands[0].value in d.activity.pointers


def _reverse_primal_uses(d: ReverseFacts) -> set[str]:
    """The local arrays passed to calls whose reverse sweep reads the argument itself."""
    used = set()
    for inst in d.fn.instructions():
        if id(inst) in d.calls:
            uses = d.calls[id(inst)].derived.rev_uses
            used |= {d.memory.base(a.value).name for j, a in enumerate(inst.operands)
                     if a.type.kind == "ptr" and (not uses or uses[j])}
    return used


def _forward_shadow_uses(d: ReverseFacts) -> set[str]:
    """The local arrays whose shadow the forward sweep itself uses (pointers stored into or
    loaded from shadowed memory, shadows passed to calls, merged by a phi or select, whose
    shadow may have to be stored): those keep their shadow on the heap."""
    used = _pointer_traffic(d.fn, d.cfg, d.activity, d.memory)
    for inst in d.fn.instructions():
        if id(inst) in d.calls and d.cfg.block_of_inst(inst) not in d.cfg.doomed:
            uses = d.calls[id(inst)].derived.aug_uses
            used |= {d.memory.base(a.value).name for j, a in enumerate(inst.operands)
                     if a.type.kind == "ptr" and (not uses or uses[j]) and a.value in d.activity.pointers}
    return used


def _pointer_traffic(fn: Function, cfg: CFG, activity: ActivityAnalysis, memory: Memory) -> set[str]:
    """The bases of shadowed pointers stored into or loaded from memory, merged by a phi or a
    select, or of memory a copy without a float type moves (whose shadow the forward sweep copies
    where the bytes are pointers: a Rust `Vec`'s header moved between locals): local arrays among
    them move to the heap whatever the calls (known before they are derived, so that a callee may
    log stores into them: _outliving)."""
    used = set()
    for inst in fn.instructions():
        if cfg.block_of_inst(inst) in cfg.doomed:
            continue
        ops = []
        if inst.opcode == "call" and kind_of(activity.module, inst) in COPIES:
            dst, src = inst.operands[:2]
            if dst.value in activity.pointers and not activity.memtype(dst.value) and not activity.memtype(src.value):
                ops = [dst, src]
        elif inst.opcode == "phi" and inst.type.kind == "ptr":
            ops = [v for v, _ in inst.incoming]
        elif inst.opcode == "select" and inst.type.kind == "ptr":
            ops = inst.operands[1:]
        elif inst.opcode == "store" and inst.operands[0].type.kind == "ptr":
            ops = inst.operands
        elif inst.opcode == "load" and inst.type.kind == "ptr":
            ops = inst.operands[:1]
        used |= {memory.base(op.value).name for op in ops if op.value in activity.pointers}
    return used


__all__ = ["ReverseMode"]
