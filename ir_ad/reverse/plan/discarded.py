"""Loops of the augmented forward sweep that write only memory the caller discards, skipped where
nothing reads what they write: part of the plan, printed by `--explain`.

`duponly` (Enzyme's `enzyme_dupnoneed`) says that the primal memory an argument points to is
unspecified after the call (specs/abi.md): the caller wants its derivatives, not its values. An
integrator's last update of its state (`y[i] += h * k[i]` at the end of each step) is then
computed for nothing in the last step: only the next step reads it. Such a loop is skipped in the
last iteration of the loop around it (the latch's condition, computed again before it, says
whether this iteration is the last), or at every run where nothing ever reads what it writes.
Only its primal stores are skipped: the reverse sweep still runs its adjoint, which needs nothing
of it (the loop may not be where the plan stores anything, nor hold a load the reverse sweep
reads again of memory it writes).

A loop qualifies when it has one way in (a block that only branches to it) and one way out (to a
block with no other predecessor, no phi, in the same loops as the way in); when its instructions
are arithmetic, loads, calls of pure math functions, and stores of numbers into memory based on
discarded arguments (none undone by the undo log); and when none of its values is used after it.
What may read the memory it writes (a load that may alias it, a copy from it, any call but the
C library's allocation, freeing and math) must be unreachable from its way out, once the back
edges of the loop around it are removed (for `always`: with every edge there)."""

from __future__ import annotations

from dataclasses import dataclass

from adgen.ir_ad.analysis.flow import CFG, PURE, Base, Memory
from adgen.ir_ad.analysis.loops import Loop
from adgen.ir_ad.analysis.uses import uses_of
from adgen.ir_ad.calls import ALLOCATE, COPIES, FREE, IGNORED, RULE, SET, kind_of
from adgen.ir_ad.ir import Instruction
from adgen.ir_ad.reverse.plan.keys import VALUE, Key
from adgen.ir_ad.reverse.types import ReverseFacts, RevPattern

_HARMLESS = (ALLOCATE, FREE, SET, *IGNORED)  # calls that read no memory they are not given to write


@dataclass(frozen=True)
class Skipped:
    """A loop the forward sweep skips: `entry` branches past it to `exit` in the last iteration
    of `around` (None: always)."""

    loop: Loop
    entry: str
    exit: str
    around: Loop | None


def written_discarded(module, pattern: RevPattern) -> tuple[bool, ...]:
    """`pattern.discarded` for the arguments the function itself stores through (only such stores
    are skipped), else (): `dup` and `duponly` then share one derivative."""
    fn = module.functions[pattern.function]
    if fn.declaration or not any(pattern.discarded):
        return ()
    memory = Memory(fn, CFG(fn), module)
    stored = {memory.base(i.operands[1].value) for i in fn.instructions() if i.opcode == "store"}
    flags = tuple(gone and Base("arg", p.name) in stored for p, gone in zip(fn.params, pattern.discarded))
    return flags if any(flags) else ()


def skipped_loops(d: ReverseFacts, needed: set[Key], stored: set[Key], members: list[Loop],
                  told: set[str]) -> tuple[Skipped, ...]:
    """The loops to skip. `needed`: the keys the reverse sweep reads or recomputes; `stored`: the
    keys the plan stores; `members`: the loops of its storage groups; `told`: the blocks where
    the forward sweep tells the undo log what the reverse sweep reads again."""
    pattern = d.pattern
    discarded = [p.name for p, gone in zip(d.fn.params, pattern.discarded) if gone]
    if not discarded or pattern.team or pattern.forked or pattern.runtime or pattern.budget:
        return ()
    finder = _Finder(d, {d.memory.base(name) for name in discarded}, needed, stored, members, told)
    found: list[Skipped] = []
    for loop in d.loops.loops:  # (outer loops first: one skipped takes the loops inside it along)
        if any(s.loop.contains(loop) for s in found):
            continue
        skip = finder.skipped(loop)
        if skip is not None:
            found.append(skip)
    return tuple(found)


class _Finder:
    def __init__(self, d: ReverseFacts, bases: set[Base], needed: set[Key], stored: set[Key], members: list[Loop],
                 told: set[str]):
        self.d, self.cfg, self.memory, self.bases = d, d.cfg, d.memory, bases
        self.needed, self.stored, self.members, self.told = needed, stored, members, told
        self.blocks = {b.label: b for b in d.fn.blocks}
        self.uses = uses_of(d.fn)

    def skipped(self, loop: Loop) -> Skipped | None:
        d, cfg = self.d, self.cfg
        if len(loop.entries) != 1 or len(loop.exits) != 1:
            return None
        entry, (last, out) = loop.entries[0], loop.exits[0]
        into = self.blocks[entry].instructions[-1]
        parent = loop.parent
        if into.opcode != "br" or into.operands or cfg.preds[out] != [last] or cfg.edges[last, out] != 1 or \
                out in d.loops.by_header or d.loops.loop_of[entry] is not parent or d.loops.loop_of[out] is not parent \
                or any(i.opcode == "phi" for i in self.blocks[out].instructions):
            return None
        written = self._writes(loop)
        if not written or not self._planned_around(loop, written):
            return None
        arounds = [None] + [a for a in reversed(loop.ancestors()) if a is not loop]
        for around in arounds:
            if self._read_after(out, around):
                continue
            if around is None or latch_exit(d, around, entry) is not None:
                return Skipped(loop, entry, out, around)
        return None

    # ------------------------------------------------------------------ the loop itself
    def _writes(self, loop: Loop) -> list[Instruction] | None:
        """The stores of a loop that does nothing else that matters (None where it does)."""
        d, stores = self.d, []
        for label in loop.body:
            for inst in self.blocks[label].instructions:
                op = inst.opcode
                if inst.result and any(self.cfg.block_of_inst(user) not in loop.body
                                       for user, _ in self.uses.get(inst.result, ())):
                    return None  # (a value used after it)
                if op in PURE or op in ("phi", "br", "switch"):
                    continue
                if "volatile" in inst.text or " atomic " in inst.text:
                    return None
                if op == "load" and inst.type.kind != "ptr":
                    continue
                if op == "store" and _number(inst.operands[0].type) and \
                        self.memory.base(inst.operands[1].value) in self.bases and inst not in d.undoable and \
                        id(inst) not in d.guards:
                    stores.append(inst)
                    continue
                if op == "call" and _pure_call(d, inst):
                    continue
                return None
        return stores or None

    def _planned_around(self, loop: Loop, written: list[Instruction]) -> bool:
        """Whether the plan neither stores anything of the loop nor has the reverse sweep read again
        memory the loop writes, and the undo log is told nothing in it (sweeps/guards.py)."""
        if any(loop.contains(m) for m in self.members):
            return False
        for key in self.stored:
            if self._block_of(key) in loop.body or key.name in loop.body:
                return False
        targets = [self.memory.base(s.operands[1].value) for s in written]
        for key in self.needed:
            if key.kind != VALUE or self._block_of(key) not in loop.body:
                continue
            inst = self.cfg.defs[key.name]
            if inst.opcode == "load" and any(self.memory.may_alias(self.memory.base(inst.operands[0].value), t)
                                             for t in targets):
                return False
        return not self.told & loop.body

    def _block_of(self, key: Key) -> str | None:
        if key.name in self.cfg.block_of:
            return self.cfg.block_of[key.name]
        inst = self.d.keys.numbered.get(key.name)
        return self.cfg.index_in_block[id(inst)][0] if inst is not None else None

    # ------------------------------------------------------------------ what follows it
    def _read_after(self, out: str, around: Loop | None) -> bool:
        """Whether anything may read discarded memory once the loop is done, without going round
        `around` again (None: by any path)."""
        back = {(latch, around.header) for latch in around.latches} if around is not None else set()
        seen, work = {out}, [out]
        while work:
            label = work.pop()
            if any(self._reads(inst) for inst in self.blocks[label].instructions):
                return True
            for s in self.cfg.succs[label]:
                if s not in seen and (label, s) not in back:
                    seen.add(s)
                    work.append(s)
        return False

    def _reads(self, inst: Instruction) -> bool:
        op = inst.opcode
        if op == "load":
            return self._may_be_discarded(inst.operands[0].value)
        if op in ("atomicrmw", "cmpxchg"):
            return self._may_be_discarded(inst.operands[0].value)
        if op == "invoke":
            return True
        if op != "call":
            return False
        kind = kind_of(self.d.module, inst)
        if kind in COPIES:
            return self._may_be_discarded(inst.operands[1].value)
        return not (kind in _HARMLESS or _pure_call(self.d, inst))

    def _may_be_discarded(self, pointer: str) -> bool:
        base = self.memory.base(pointer)
        return any(self.memory.may_alias(base, b) for b in self.bases)


def latch_exit(d: ReverseFacts, around: Loop, at: str) -> tuple[Instruction, bool] | None:
    """The branch of `around`'s one latch, and whether its condition being true leaves the loop,
    where that condition can be computed again at the end of block `at` (from values defined
    there or before it, through arithmetic)."""
    if len(around.latches) != 1:
        return None
    term = d.loops.block(around.latches[0]).instructions[-1]
    if term.opcode != "br" or len(term.targets) != 2 or around.header not in term.targets:
        return None
    leaves = term.targets[0] if term.targets[1] == around.header else term.targets[1]
    if leaves in around.body or not _computable(d.cfg, term.operands[0].value, at, 0):
        return None
    return term, leaves == term.targets[0]


def _computable(cfg, value: str, at: str, depth: int) -> bool:
    if not value.startswith("%") or value not in cfg.defs or cfg.dominates(cfg.block_of[value], at):
        return True  # (a constant, a global, an argument, or defined there or before)
    inst = cfg.defs[value]
    return depth < 16 and inst.opcode in PURE and inst.opcode not in ("inttoptr", "ptrtoint") and \
        all(_computable(cfg, o.value, at, depth + 1) for o in inst.operands)


def _number(t) -> bool:
    """A number or a vector of them: no pointer, whose shadow the reverse sweep would read."""
    return t.kind in ("int", "float") or (t.kind == "vector" and t.elems[0].kind in ("int", "float"))


def _pure_call(d: ReverseFacts, inst: Instruction) -> bool:
    """A call of a math function (a derivative rule's, given numbers only), or one that does nothing
    to memory (a lifetime marker, an assumption)."""
    kind = kind_of(d.module, inst)
    return kind in IGNORED or (kind == RULE and not any(o.type.kind == "ptr" for o in inst.operands))
