"""Which writes the reverse sweep undoes, so that the loads before them can be read again where
the reverse sweep needs them rather than stored (specs/abi.md, "Stores undone"). Undoing a
store costs its old value, once per time it runs; storing the loads it overwrites costs their
values, once per time *they* run: a store in a loop overwriting what a deeper loop read (the
output of a matrix product written once per row, after the inner loop read the inputs) is far
cheaper to undo.

- From the record: stores outside every loop into arguments or globals, each run at most once
  per call.
- Through the undo log (templates/undo_log.ll.j2), where the log is on (derivatives no later level
  differentiates again): stores inside loops that overwrite what a load in a deeper loop, or a call
  before them, read; and calls to functions of the sources that undo their own writes, where
  those may overwrite what was read before the call. A function asked to undo its writes (its
  caller's call is such a call) logs every store into memory it did not allocate.
A function that logs anything logs all the stores it undoes, so that they are written again in
order with the others when the log is closed.

Whether a logged store is logged is decided at run time, where it can be checked: before the
innermost loop around it over whose run its bytes can be bounded (analysis/ranges.py), with the
loads inside that loop that may read what it writes, and no call in it to a function whose
reverse sweep reads memory again; a store outside loops is checked where it runs. Where it writes
nothing the reverse sweep reads again (the ranges the log keeps, templates/undo_log.ll.j2, and
those loads), it is not logged (sweeps/guards.py writes the checks)."""

from __future__ import annotations

from dataclasses import dataclass, field

from adgen.ir_ad.analysis.flow import CFG, Memory
from adgen.ir_ad.analysis.loops import Loop, LoopForest
from adgen.ir_ad.analysis.ranges import Ranges
from adgen.ir_ad.analysis.uses import unread_values
from adgen.ir_ad.ir import Function, Instruction, Module

# The types a logged store may write, and their sizes (a pointer's: the target's).
LOGGED = (("float", 4), ("double", 8), ("i8", 1), ("i16", 2), ("i32", 4), ("i64", 8), ("ptr", None))
_LOGGED_TYPES = {t for t, _ in LOGGED}
# Bytes of a run's header in the log (templates/undo_log.ll.j2): stores to consecutive addresses
# share one, each adding the bytes it overwrites.
LOG_RUN_HEADER = 16


@dataclass
class Undo:
    stores: list[Instruction] = field(default_factory=list)  # the stores the reverse sweep undoes
    calls: list[Instruction] = field(default_factory=list)  # calls whose callee undoes its writes
    logs_stores: bool = False  # some of `stores` need the log (inside loops, or every write asked for)
    guards: dict[int, Loop | None] = field(default_factory=dict)  # logged stores (by id) checked at run time:
    # before the loop where the check is made, or (None) where the store runs; the others are always logged
    overwritten: dict[int, set[int]] = field(default_factory=dict)  # loads (by id) that checked stores (ids)
    # certainly overwrite: what the reverse sweep needs of them is stored instead (see _certainly_overwritten)

    @property
    def logged(self) -> bool:
        """All of them through the log (else `stores` from the record, redone at the reverse sweep's exit)."""
        return self.logs_stores or bool(self.calls)

    @property
    def writes(self) -> list[Instruction]:
        """Everything undone, stores and calls."""
        return self.stores + self.calls


def plan_undo(fn: Function, module: Module, cfg: CFG, loops: LoopForest, memory: Memory, outliving: set[str],
              every_write: bool, from_record: bool = True, on_heap: set[str] = frozenset()) -> Undo:
    """What the reverse sweep of `fn` undoes. `outliving`: the pointer arguments whose memory
    outlives the outermost derivative call, into which stores may be logged (with globals; the
    log writes them again when that call ends, and none is freed by then); none where the log
    is off. `every_write`: the caller asked for every write to be undone. `from_record`: stores
    outside loops are undone from the record (not by the functions an OpenMP team runs).
    `on_heap`: the local arrays the forward sweep moves to the heap."""
    log = bool(outliving) or every_write
    undo = Undo()
    outside = []
    unread = unread_values(fn) if log else set()
    for inst in fn.instructions():
        doomed = cfg.block_of_inst(inst) in cfg.doomed  # (the program stops there: nothing to log)
        if inst.opcode == "store" and _plain(inst):
            base = memory.base(inst.operands[1].value)
            in_loop = loops.loop_of[cfg.block_of_inst(inst)] is not None
            if not in_loop and base.kind in ("arg", "global"):
                if from_record or every_write:
                    outside.append(inst)
            elif log and not doomed and _loggable(inst) and lives_on(memory, inst.operands[1].value, outliving, on_heap) and \
                    (every_write or _worth_logging(inst, fn, module, cfg, loops, memory, unread)):
                undo.stores.append(inst)
        elif log and not doomed and inst.opcode == "call" and \
                _undoes_calls_writes(inst, fn, module, cfg, memory, every_write):
            undo.calls.append(inst)
    undo.logs_stores = bool(undo.stores) or every_write
    if undo.logged:  # then those outside loops too, where the log may write them again at its end
        outside = [s for s in outside if _loggable(s) and lives_on(memory, s.operands[1].value, outliving, on_heap)
                   and cfg.block_of_inst(s) not in cfg.doomed]
    undo.stores = [s for s in fn.instructions() if s in outside or s in undo.stores]
    if undo.logged:
        ranges = Ranges(cfg, loops)
        for store in undo.stores:
            where = _guard(store, fn, module, cfg, loops, memory, ranges)
            if where is not False:
                undo.guards[id(store)] = where
                for load in _certainly_overwritten(store, where, fn, cfg, loops):
                    undo.overwritten.setdefault(id(load), set()).add(id(store))
    return undo


def _certainly_overwritten(store: Instruction, where: Loop | None, fn: Function, cfg: CFG,
                           loops: LoopForest) -> list[Instruction]:
    """The loads of the very address a checked store writes, before it in the loop where it is
    checked (an update in place: `h[i] = h[i] > 0 ? h[i] : 0.01f * h[i]`): its check would always
    find them, and the store would be logged every time; the reverse sweep stores what it needs of
    them instead (a comparison, say), and the check leaves them out."""
    pointer = store.operands[1].value
    out = []
    for inst in fn.instructions():
        if inst.opcode != "load" or inst.operands[0].value != pointer or inst.type != store.operands[0].type:
            continue
        home = loops.loop_of[cfg.block_of_inst(inst)]
        if (where is None or where.contains(home)) and cfg.may_follow(inst, store):
            out.append(inst)
    return out


def _guard(store: Instruction, fn: Function, module: Module, cfg: CFG, loops: LoopForest, memory: Memory,
           ranges: Ranges) -> Loop | None | bool:
    """Where a logged store's run-time check is made: the innermost loop around it (None: outside
    loops, where it runs) whose run bounds its bytes and those of the loads in it that may read
    them, and in which no call reads memory again in its reverse sweep; False: nowhere (always
    logged). The innermost, so that what one iteration of an outer loop writes and then reads
    (a row of attention weights) is not taken as what the next one overwrites."""
    home = loops.loop_of[cfg.block_of_inst(store)]
    if home is None:
        return None
    base = memory.base(store.operands[1].value)
    for loop in reversed(home.ancestors()):
        if loops.entry_block(loop) is None or ranges.access(store, loop) is None:
            continue
        inside = [i for b in loop.body for i in loops.block(b).instructions]
        if any(i.opcode == "load" and memory.may_alias(memory.base(i.operands[0].value), base)
               and memory.types_may_alias(i, store) and ranges.access(i, loop) is None for i in inside):
            continue
        if any(i.opcode == "call" and _may_reread(module, memory, i, base) for i in inside):
            continue
        return loop
    return False


def _may_reread(module: Module, memory: Memory, call: Instruction, base) -> bool:
    """Whether a call's reverse sweep may read again memory a store into `base` writes: a
    function of the sources (or one called through a pointer) that may read that memory, through
    its arguments or otherwise."""
    if call.callee.startswith("@") and not _defined(module, call):
        return False
    effects = module.memory_effects(module.functions[call.callee]) if call.callee.startswith("@") else None
    if effects is None or any(not part.strip().startswith(("argmem:", "none")) and "read" in part
                              for part in effects.split(",")):
        return True
    return any(memory.may_alias(memory.base(a.value), base) for a in call.operands if a.type.kind == "ptr")


def undoes_all_writes(module: Module, fn: Function, seen: frozenset[str] = frozenset()) -> bool:
    """Whether the reverse sweep of `fn`, asked to, can undo every write it makes to memory it did
    not allocate: its stores are of types the log keeps, and its calls write nothing or are to
    functions that can undo theirs too (a recursive call is assumed to)."""
    if fn.name in seen:
        return True
    cfg = CFG(fn)
    memory = Memory(fn, cfg, module)
    for inst, base in memory.writes:
        if base.kind == "fresh" or cfg.block_of_inst(inst) in cfg.doomed:
            continue
        if inst.opcode == "store" and _loggable(inst):
            continue
        if inst.opcode != "call" or not _reversed_callee(module, inst.callee) or \
                not undoes_all_writes(module, module.functions[inst.callee], seen | {fn.name}):
            return False
    return True


def lives_on(memory: Memory, pointer: str, outliving: set[str], on_heap: set[str] = frozenset()) -> bool:
    """Whether the memory `pointer` points into is still there when the undo log is closed (at the
    end of the reverse sweep of the outermost call that logs), so that stores into it may be
    logged: a global; an argument's, where the caller says so (`outliving`); memory of the heap,
    however reached: allocated by this function or a callee, or through a pointer loaded from
    memory (while a log is alive, memory the code frees waits for it: adgen.free.later in
    templates/undo_log.ll.j2), and local arrays the forward sweep moves there (`on_heap`). Not a
    local variable of this function's frame, which ends first; one reached through a pointer in
    memory is refused by the log at run time."""
    seen: set[str] = set()
    work = [pointer]
    while work:
        value = work.pop()
        if value in seen or value.startswith("@") or value in ("null", "poison", "undef"):
            continue
        seen.add(value)
        if value in memory.params:
            if value not in outliving:
                return False
            continue
        inst = memory.cfg.defs.get(value)
        if inst is None or (inst.opcode == "alloca" and value not in on_heap):
            return False
        if inst.opcode == "alloca":
            continue
        if inst.opcode in ("getelementptr", "bitcast", "addrspacecast", "freeze"):
            work.append(inst.operands[0].value)
        elif inst.opcode == "select":
            work += [inst.operands[1].value, inst.operands[2].value]
        elif inst.opcode == "phi":
            work += [v.value for v, _ in inst.incoming]
        elif inst.opcode not in ("load", "call", "inttoptr"):
            return False
    return True


def _plain(store: Instruction) -> bool:
    """A store of a scalar (a float, an integer, a pointer), neither atomic nor volatile: one the
    reverse sweep can put back."""
    return store.operands[0].type.kind in ("float", "int", "ptr") and " atomic " not in store.text and \
        "volatile" not in store.text.split()


def _loggable(store: Instruction) -> bool:
    """A plain store of a type the log keeps (8 bytes at most)."""
    return _plain(store) and store.operands[0].type.text in _LOGGED_TYPES


def _depth(loops: LoopForest, cfg: CFG, inst: Instruction) -> int:
    loop = loops.loop_of[cfg.block_of_inst(inst)]
    return loop.depth if loop else 0


def _worth_logging(store: Instruction, fn: Function, module: Module, cfg: CFG, loops: LoopForest,
                   memory: Memory, unread: set[str] = frozenset()) -> bool:
    """A store inside a loop is logged when it may overwrite what was read before it more often
    than it runs: by a load in a deeper loop whose value the reverse sweep may read (not one of
    `unread`), or by a call to a function of the sources (whose loops are taken as deeper:
    otherwise it would store what it reads, in every iteration of them, for a store that may not
    overwrite any of it)."""
    base = memory.base(store.operands[1].value)
    depth = _depth(loops, cfg, store)
    for inst in fn.instructions():
        if not cfg.may_follow(inst, store):
            continue
        if inst.opcode == "load" and inst.result not in unread and _depth(loops, cfg, inst) > depth and \
                memory.may_alias(memory.base(inst.operands[0].value), base) and memory.types_may_alias(inst, store):
            return True
        if inst.opcode == "call" and _defined(module, inst) and \
                any(memory.may_alias(memory.base(a.value), base) for a in inst.operands if a.type.kind == "ptr"):
            return True
    return False


def _defined(module: Module, call: Instruction) -> bool:
    target = module.functions.get(call.callee)
    return target is not None and not target.declaration


def _reversed_callee(module: Module, name: str) -> bool:
    """A function of the sources whose reverse sweep adgen writes (not @inactive, not by hand)."""
    target = module.functions.get(name)
    return target is not None and not target.declaration and name not in module.inactive and \
        name not in module.custom


def _undoes_calls_writes(call: Instruction, fn: Function, module: Module, cfg: CFG, memory: Memory,
                         every_write: bool) -> bool:
    """A call to a function of the sources has its callee undo its writes where they may
    overwrite what was read before the call (or the caller must undo all of its own), and the
    callee can."""
    if not _reversed_callee(module, call.callee) or call.callee == fn.name:
        return False
    written = [base for inst, base in memory.writes if inst is call and base.kind != "fresh"]
    if not written:
        return False
    if not every_write:
        read_before = [memory.base(i.operands[0].value) for i in fn.instructions()
                       if i.opcode == "load" and cfg.may_follow(i, call)] + \
            [memory.base(a.value) for i in fn.instructions() if i.opcode == "call" and cfg.may_follow(i, call)
             for a in i.operands if a.type.kind == "ptr"] + \
            [memory.base(a.value) for a in call.operands if a.type.kind == "ptr" and cfg.may_follow(call, call)]
        if not any(memory.may_alias(r, w) for r in read_before for w in written):
            return False
    return undoes_all_writes(module, module.functions[call.callee])
