"""What the reverse sweep may ask of the forward sweep, and how each can be had again.

A `Key` names one such thing: a primal value, the shadow of a pointer, the mask of a pointer
that may lack a shadow, which predecessor a block was entered from, how many iterations a loop
ran before an exit, which argument of a minimum or maximum won, and the records the cache plan
itself adds (a callee's record, a loop group's descriptor, the old value of memory a store
overwrote). Its `Def` says where the
forward sweep has it, its type, and whether and from which other keys it can be recomputed;
when it cannot, why (for `--explain`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from adgen.ir_ad.analysis.activity import ActivityAnalysis
from adgen.ir_ad.analysis.flow import PURE, CFG, Memory
from adgen.ir_ad.ir import (I1, I64, PTR, Instruction, Module, Operand, Type, element_align, int_type, intrinsic_family,
                           slot_size)
from adgen.ir_ad.analysis.loops import Induction, Loop, LoopForest
from adgen.base.units import human_size
from adgen.ir_ad.calls import is_intrinsic
from adgen.ir_ad.diagnose import called
from adgen.ir_ad.rules import rule_for
from adgen.ir_ad.reverse.plan.costs import copied, expensive
from adgen.ir_ad.shadows import INTERLEAVED, Layout

VALUE, SHADOW, MASK, CAME, EXIT, BLOB, DESC, OLD, CHOICE, LOG, GUARD, AGAIN = (
    "value", "shadow", "mask", "came", "exit", "blob", "desc", "old", "choice", "log", "guard", "again")
LOG_OWNER = "%<log>"  # the key of the undo log a call opened (null where one was open)
RETURNS = "%<return>"  # the pseudo-block after every return: its CAME says which return was taken
OVERWRITTEN = "its memory may be overwritten before the reverse sweep runs"  # (a load's why: --explain names the store)
# Intrinsics that are pure (no memory, no side effects) and so can be recomputed, by family.
PURE_INTRINSICS = frozenset({
    "fmuladd", "fma", "fabs", "copysign", "minnum", "maxnum", "minimum", "maximum", "minimumnum", "maximumnum",
    "floor", "ceil", "trunc", "round", "rint", "nearbyint", "roundeven", "smax", "smin", "umax", "umin", "abs", "sqrt",
    "powi", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "exp2", "exp10", "log",
    "log2", "log10", "pow", "ldexp", "is.fpclass", "ctpop", "ctlz", "cttz", "bswap", "fshl", "fshr"})


class Key(NamedTuple):
    """(A tuple: the plan hashes and compares keys some 400,000 times on a program of real size,
    bench/programs/gpt2.c, where a dataclass's Python-level hash cost a fifth of its time.)"""

    kind: str
    name: str  # the value, block, loop header or instruction the key is about
    sub: str = ""  # EXIT: the exit block

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}" + (f"@{self.sub}" if self.sub else "")


@dataclass
class Def:
    key: Key
    types: tuple[Type, ...]  # its parts, as stored
    block: str | None  # the block of the forward sweep that has it (None: the function's arguments)
    operands: tuple[Key, ...] = ()  # what it is recomputed from
    recomputable: bool = False
    why: str = ""  # why it must be stored, when it must
    inst: Instruction | None = None  # the instruction it comes from, for its C line
    loop_bound: Loop | None = None  # recomputable only inside this loop, from its iteration count
    shifted: Key | None = None  # recomputed from this key as it was one iteration of loop_bound earlier
    storable: bool = True  # False: the forward sweep does not have it (a shadow of the reverse sweep's own)
    clobbers: frozenset = frozenset()  # writes the reverse sweep undoes that may overwrite this load's memory
    # after it: it can be repeated only where none of them is in effect (see Keys.clobbered)
    copy: Instruction | None = None  # a phi recomputed as this instruction, which each incoming value copies

    @property
    def bytes(self) -> int:
        return sum(slot_size(t) for t in self.types)


def align_of(t: Type) -> int:
    """The alignment a stored value gets: its elements' (at most 8, what a record's slots guarantee)."""
    return element_align(t)


def came_type(choices: int) -> Type:
    """The smallest integer that tells `choices` predecessors apart."""
    return I1 if choices <= 2 else int_type(8) if choices <= 256 else int_type(32)


class Keys:
    """The `Def` of every key of one function, made on demand."""

    def __init__(self, fn, module: Module, cfg: CFG, loops: LoopForest, memory: Memory, activity: ActivityAnalysis,
                 layout: Layout, ignored: set[int], stack: set[str], reverse_local: set[str],
                 undoable: set[int] = frozenset(), guards: dict | None = None, overwritten: dict | None = None):
        self.fn, self.module, self.cfg, self.loops, self.memory = fn, module, cfg, loops, memory
        self.activity, self.layout, self.ignored, self.stack = activity, layout, ignored, stack
        self.reverse_local = reverse_local  # allocas whose shadow the reverse sweep allocates itself
        self.undoable = undoable  # ids of the stores the reverse sweep undoes
        self.guards = guards or {}  # logged stores checked at run time (plan/undo.py): id -> loop or None
        self.overwritten = overwritten or {}  # loads -> checked stores that certainly overwrite them (plan/undo.py)
        self.params = {p.name for p in fn.params}
        self.returns = [b.label for b in fn.blocks if b.instructions[-1].opcode == "ret"]
        self.numbered = {f"#{k}": inst for k, inst in enumerate(fn.instructions())}
        self.by_id = {id(inst): inst for inst in self.numbered.values()}
        self.defs: dict[Key, Def] = {}
        self._previous: dict[str, set[str]] = {}
        self.live: set[str] = set()  # expensive calls the forward sweep computes anyway: stored (costs.py)

    def __getitem__(self, key: Key) -> Def:
        if key not in self.defs:
            self.defs[key] = getattr(self, "_" + key.kind)(key)
        return self.defs[key]

    def value(self, op: Operand | str) -> Key | None:
        """The key of a primal operand, or None for arguments and constants (always at hand)."""
        name = op if isinstance(op, str) else op.value
        if not name.startswith("%") or name in self.params:
            return None
        return Key(VALUE, name)

    def previous(self, loop: Loop) -> set[str]:
        """The header phis of a loop recomputable from its latch one iteration earlier (carried_over)."""
        if loop.header not in self._previous:
            self._previous[loop.header] = carried_over(self.cfg, self.loops, loop)
        return self._previous[loop.header]

    def shadow(self, op: Operand) -> tuple[Key, ...]:
        """The key of a pointer operand's shadow; none for arguments (always at hand)."""
        return () if op.value in self.params else (Key(SHADOW, op.value),)

    def _operands(self, ops) -> tuple[Key, ...]:
        return tuple(k for k in (self.value(o) for o in ops) if k is not None)

    # ------------------------------------------------------------------ primal values
    def _value(self, key: Key) -> Def:
        inst = self.cfg.defs[key.name]
        d = Def(key, (inst.type,), self.cfg.block_of[key.name], inst=inst)
        op = inst.opcode
        loop = self.loops.loop_of[d.block]
        if op == "phi":
            if loop is not None and loop.header == d.block and key.name in loop.inductions:
                ind = loop.inductions[key.name]
                d.loop_bound, d.recomputable = loop, True
                d.operands = self._operands([ind.start, ind.step])
            elif loop is not None and loop.header == d.block and key.name in self.previous(loop):
                entry = next(v for v, frm in inst.incoming if frm == loop.entries[0])
                latch = next(v for v, frm in inst.incoming if frm == loop.latches[0])
                d.loop_bound, d.recomputable = loop, True
                d.operands, d.shifted = self._operands([entry]), self.value(latch)
            elif (copy := copied(self.cfg, inst)) is not None:
                d.recomputable, d.operands, d.copy = True, self._operands(copy.operands), copy
            elif loop is not None and loop.header == d.block:
                d.why = "it is carried from one iteration to the next: going backwards, the reverse sweep cannot " \
                    "compute it again"
            else:
                d.why = "it is merged from branches, and the reverse sweep does not recompute which one ran"
        elif op in PURE and op != "inttoptr":
            d.recomputable, d.operands = True, self._operands(inst.operands)
        elif op == "call" and (intrinsic_family(inst.callee) in PURE_INTRINSICS or
                               (rule_for(inst.callee) is not None and not is_intrinsic(inst.callee)
                                and rule_for(inst.callee).recompute
                                and not any(o.type.kind == "ptr" for o in inst.operands))):  # frexp writes
            if key.name in self.live and expensive(self.cfg, key.name, self.activity.active):  # (time against memory)
                d.why = (f"recomputing it would take about {rule_for(inst.callee).cost} instructions (a call "
                         f"to {called(inst.callee)}); storing it takes {human_size(slot_size(inst.type))}")
            else:
                d.recomputable, d.operands = True, self._operands(inst.operands)
        elif op == "load":
            base = self.memory.base(inst.operands[0].value)
            if " atomic " in inst.text or " volatile " in f" {inst.text} ":
                d.why = "it is an atomic or volatile read, which must not be repeated"
            elif base.kind == "fresh" and base.name in self.stack:
                d.why = "it is read from a local variable of the function, gone when the reverse sweep runs"
            elif id(inst) in self.overwritten and not self.memory.unchanged_after(
                    inst, self.ignored - self.overwritten[id(inst)]):
                d.why = "a store after it overwrites its memory in place (and is not undone through the undo log)"
            elif not self.memory.unchanged_after(inst, self.ignored):
                d.why = OVERWRITTEN
            else:
                d.recomputable, d.operands = True, self._operands(inst.operands)
                d.clobbers = frozenset(id(w) for w in self.memory.clobbering(inst, self.undoable))
        elif op == "call":
            d.why = "the reverse sweep needs the storage it gave" if called(inst.callee).startswith("adgen.") else \
                f"the reverse sweep does not call {called(inst.callee)} again (it may not give the same)"
        elif op == "alloca":
            d.why = "the reverse sweep needs the same memory"
        else:
            d.why = "the reverse sweep cannot compute it again"
        return d

    # ------------------------------------------------------------------ shadows and masks
    def _shadow(self, key: Key) -> Def:
        pt = self.layout.part_type(PTR)
        types = (pt,) * self.layout.parts
        inst = self.cfg.defs[key.name]
        d = Def(key, types, self.cfg.block_of[key.name], inst=inst)
        d.storable = self.memory.base(key.name).name not in self.reverse_local
        op = inst.opcode
        shadowed = [o for o in inst.operands if o.value in self.activity.pointers]
        if op == "getelementptr":
            d.recomputable = True
            extra = [Operand(PTR, key.name), inst.operands[0]] if self.layout.kind == INTERLEAVED else []
            d.operands = self.shadow(inst.operands[0]) + self._operands(inst.operands[1:] + extra)
        elif op in ("bitcast", "freeze", "addrspacecast"):
            d.recomputable, d.operands = True, self.shadow(inst.operands[0])
        elif op == "select":
            d.recomputable = True
            d.operands = self._operands(inst.operands[:1]) + tuple(k for o in shadowed for k in self.shadow(o))
            if self.activity.runtime:  # (a pointer without a shadow is its own: shadows.py)
                d.operands += self._operands([o for o in inst.operands[1:] if o not in shadowed])
        elif op == "alloca" and key.name in self.reverse_local:
            d.recomputable = True  # the reverse sweep's own local array
        elif op == "phi" and (ind := self._pointer_induction(key.name)) is not None:
            d.loop_bound, d.recomputable = self.loops.loop_of[d.block], True  # its start's, stepped as it is
            d.operands = self.shadow(ind.start) if ind.start.value in self.activity.pointers else \
                self._operands([ind.start]) if self.activity.runtime else ()  # (no shadow: null, or its own)
        else:
            d.why = {"phi": "a pointer carried from one iteration to the next, or merged from branches",
                     "load": "a pointer read from memory, which may change",
                     "call": "allocated along with it; the reverse sweep reads the derivatives there, then frees it",
                     "alloca": "allocated along with it; the reverse sweep reads the derivatives there"
                     }.get(op, "the reverse sweep cannot compute it again")
        return d

    def _pointer_induction(self, name: str) -> Induction | None:
        """The progression of a pointer phi that steps through memory by a constant (its shadow
        steps with it, but for interleaved shadows, which step by their width)."""
        loop = self.loops.loop_of[self.cfg.block_of[name]]
        if loop is None or loop.header != self.cfg.block_of[name] or self.layout.kind == INTERLEAVED:
            return None
        ind = loop.inductions.get(name)
        return ind if ind is not None and ind.pointer else None

    def _mask(self, key: Key) -> Def:
        root = self.activity.mask_root(key.name)
        d = Def(key, (I1,), self.cfg.block_of[root.result], inst=root)
        if root.result != key.name:
            d.recomputable, d.operands = True, (Key(MASK, root.result),)
        elif root.opcode == "select":
            d.recomputable = True
            d.operands = self._operands(root.operands[:1]) + tuple(
                Key(MASK, o.value) for o in root.operands[1:] if o.value in self.activity.maybe)
        else:
            d.why = ("a pointer carried from one iteration to the next, or merged from branches, may point to "
                     "memory without derivatives")
        return d

    def _choice(self, key: Key) -> Def:
        """Which piece of a piecewise primitive applied (see rules.Rule.choice)."""
        inst = self.cfg.defs[key.name]
        return Def(key, (I1,), self.cfg.block_of[key.name], self._operands(inst.operands) + (Key(VALUE, key.name),),
                   recomputable=True, inst=inst)

    # ------------------------------------------------------------------ control flow
    def _came(self, key: Key) -> Def:
        preds = self.returns if key.name == RETURNS else self.cfg.preds[key.name]
        d = Def(key, (came_type(len(preds)),), key.name if key.name != RETURNS else None)
        split = self.splitting_branch(key.name)
        if split is not None:
            cond, _ = split
            d.recomputable, d.operands = True, self._operands([cond])
        else:
            d.why = "the reverse sweep goes back the same way, and no condition it can recompute tells which"
        return d

    def splitting_branch(self, block: str) -> tuple[Operand, list[int]] | None:
        """A conditional branch that decides which predecessor `block` is entered from: (its
        condition, the predecessor index for true and for false). For the merge after an if."""
        preds = self.returns if block == RETURNS else self.cfg.preds[block]
        if len(preds) != 2:
            return None
        if block == RETURNS:
            top = preds[0]
            while not self.cfg.dominates(top, preds[1]):
                top = self.cfg.idom[top]
        else:
            if self.loops.loop_of.get(block) is not None and self.loops.loop_of[block].header == block:
                return None
            top = self.cfg.idom.get(block)
        if top is None:
            return None
        term = next(b for b in self.fn.blocks if b.label == top).instructions[-1]
        if term.opcode != "br" or len(term.targets) != 2 or term.targets[0] == term.targets[1]:
            return None
        sides = []
        for target in term.targets:
            owned = [i for i, p in enumerate(preds) if
                     (target == block and p == top) or (target != block and self._edge_dominates(top, target, p))]
            if len(owned) != 1:
                return None
            sides.append(owned[0])
        if sides[0] == sides[1]:
            return None
        return term.operands[0], sides

    def _edge_dominates(self, top: str, target: str, block: str) -> bool:
        """Whether every path from `top` to `block` leaves `top` by its edge to `target` (which
        may start a loop: `target`'s other predecessors are inside what it dominates)."""
        cfg = self.cfg
        return (cfg.dominates(target, block) and not cfg.dominates(target, top) and cfg.preds[target].count(top) == 1
                and all(q == top or cfg.dominates(target, q) for q in cfg.preds[target]))

    def _exit(self, key: Key) -> Def:
        loop = self.loops.by_header[key.name]
        d = Def(key, (I64,), key.sub)
        if loop.trip is not None and len(loop.exits) == 1 and loop.exits[0][1] == key.sub:
            d.recomputable, d.operands = True, self._operands(loop.trip.operands)
        else:
            d.why = "its trip count is not known when it starts"
        return d

    # ------------------------------------------------------------------ the plan's own records
    def _blob(self, key: Key) -> Def:
        inst = self.instruction(key.name)
        return Def(key, (), self.cfg.index_in_block[id(inst)][0], inst=inst, why="what its reverse sweep needs")

    def _desc(self, key: Key) -> Def:
        """Stored around its loop: its block is the header of the loop around it."""
        loop = self.loops.by_header[key.name]
        return Def(key, (), loop.parent.header if loop.parent else None, why="its buffer's address")

    def _old(self, key: Key) -> Def:
        inst = self.instruction(key.name)
        block = self.cfg.index_in_block[id(inst)][0]
        return Def(key, (inst.operands[0].type,), block, inst=inst,
                   why="the store overwrites it; the reverse sweep puts it back")

    def _guard(self, key: Key) -> Def:
        inst = self.instruction(key.name)
        loop = self.guards[id(inst)]
        block = self.loops.entry_block(loop) if loop is not None else self.cfg.block_of_inst(inst)
        return Def(key, (I1,), block, inst=inst,
                   why="its run-time check said whether it may overwrite what is read again")

    def _again(self, key: Key) -> Def:
        """The value an undone store wrote, read back from its address where the reverse sweep
        reverses the store, before undoing it (see sweeps/reverse_sweep.py): only there, and
        only where nothing that is not undone may write that memory after it. Never stored."""
        inst = self.instruction(key.name)
        d = Def(key, (inst.operands[0].type,), self.cfg.block_of_inst(inst), inst=inst, storable=False)
        if self.memory.unchanged_after(inst, self.ignored):
            d.recomputable, d.operands = True, self._operands(inst.operands[1:])
            d.clobbers = frozenset(id(w) for w in self.memory.clobbering(inst, self.undoable))
        else:
            d.why = "memory written after the store is not undone"
        return d

    def _log(self, key: Key) -> Def:
        return Def(key, (PTR,), self.fn.blocks[0].label,
                   why="the log this call opened, if none was open: the reverse sweep closes it")

    def clobbered(self, key: Key, before: frozenset, shifted: bool, site_loop: Loop | None) -> bool:
        """Whether a load cannot be repeated at a site in `site_loop`, given the undone writes in
        effect there: `before` holds (write, None) for a write earlier in the site's iteration of
        the loops around it, and (write, loop) for its runs in earlier iterations of a loop around
        both. A write in effect overwrote the load's memory if it ran after the load: in the same
        iteration, a write that may follow it there (one before it in that iteration, such as the
        store of what a later part of a loop's body reads, only wrote what the load then read); in
        earlier iterations of a loop, only where the load ran before that loop started (a load
        inside it ran after those). A load from an earlier iteration (`shifted`) is taken as
        overwritten by any of them. The value an undone store wrote (AGAIN) is there only where
        that store is in effect, in the same iteration."""
        d = self[key]
        if key.kind == AGAIN and (shifted or (id(d.inst), None) not in before):
            return True
        if not d.clobbers:
            return False
        home = self.loops.loop_of[self.cfg.block_of_inst(d.inst)] if d.inst is not None else None
        for write, loop in before:
            if write not in d.clobbers:
                continue
            if shifted or (loop is not None and not loop.contains(home)):
                return True
            if loop is None and self.cfg.may_follow_in_iteration(d.inst, self.by_id[write], site_loop):
                return True
        return False

    def instruction(self, name: str) -> Instruction:
        """The instruction a BLOB, OLD, GUARD or AGAIN key names ("#<index>" in the function's
        instruction order)."""
        return self.numbered[name]


def carried_over(cfg: CFG, loops: LoopForest, loop: Loop) -> set[str]:
    """The header phis of a loop whose value at iteration k is what its latch computed at
    iteration k-1, recomputable as such because that does not depend on the phi itself (a load
    carried over from the previous iteration, say; not a running sum). The loop must leave
    through its latch only, so that every iteration computed its latch value. Nor may the latch
    value come from a loop inside (an inner loop's last value, carried into the next iteration):
    the iteration shift names the earlier iteration of this loop only, and the inner loop's values
    would be recomputed at the inner iteration the reverse sweep is at, not at the last one."""
    found: set[str] = set()
    if len(loop.entries) != 1 or len(loop.latches) != 1 or any(b != loop.latches[0] for b, _ in loop.exits):
        return found
    header = loops.block(loop.header)
    phis = {i.result: i for i in header.instructions if i.opcode == "phi" and i.result not in loop.inductions
            and len(i.incoming) == 2}
    reaches: dict[str, set[str]] = {}
    from_inner: set[str] = set()
    for name, phi in phis.items():
        latch = next(v for v, frm in phi.incoming if frm == loop.latches[0])
        seen, work, hit = set(), [latch.value], set()
        while work:
            v = work.pop()
            if v in seen or v not in cfg.defs or cfg.block_of[v] not in loop.body:
                continue
            seen.add(v)
            if loops.loop_of[cfg.block_of[v]] is not loop:
                from_inner.add(name)
            if v in phis:
                hit.add(v)
                continue
            inst = cfg.defs[v]
            work += [o.value for o in inst.operands] + [x.value for x, _ in inst.incoming]
        reaches[name] = hit
    for name in phis.keys() - from_inner:  # not on a cycle of phis feeding each other
        seen, work, cyclic = set(), list(reaches[name]), False
        while work:
            v = work.pop()
            if v == name:
                cyclic = True
                break
            if v not in seen:
                seen.add(v)
                work += reaches[v]
        if not cyclic:
            found.add(name)
    return found


def instruction_key(fn, inst: Instruction) -> str:
    """The name BLOB and OLD keys give an instruction that has no result of its own."""
    for k, i in enumerate(fn.instructions()):
        if i is inst:
            return f"#{k}"
    raise KeyError(inst.text)
