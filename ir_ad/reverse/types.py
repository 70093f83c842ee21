"""What the stages of reverse mode share: the pattern a pair of derived functions is made for,
the pair itself, the calls into other pairs, and the facts gathered about one function being
differentiated. It imports no stage, so that every stage (plan, sweeps) and the driver
(mode.py) can import it."""

from __future__ import annotations

from functools import cached_property
from dataclasses import dataclass, field

from adgen.ir_ad.analysis.activity import ActivityAnalysis
from adgen.ir_ad.analysis.flow import CFG, Memory
from adgen.ir_ad.analysis.loops import LoopForest
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.ir import Function, Instruction, Module, Type
from adgen.ir_ad.ir.builder import Declarations, bare, local
from adgen.ir_ad.reverse.plan.cache_plan import CachePlan
from adgen.ir_ad.reverse.plan.keys import Key, Keys
from adgen.ir_ad.shadows import Layout


@dataclass(frozen=True)
class RevPattern:
    function: str
    active: tuple[bool, ...]  # per argument: an active float, or a pointer with a shadow
    ret_active: bool
    width: int
    kind: str  # LANES or INTERLEAVED
    memtypes: tuple[str, ...]  # per pointer argument: "double"/"float" when its memory holds only that; per
    # integer argument: the float type whose bits it carries, if it carries any
    overwritten: tuple[bool, ...] = ()  # per argument: memory the caller may write after the call
    later_writes: bool = False  # the caller may write memory (any) after the call
    ret_needed: bool = True  # the caller uses the primal result
    ret_shadow: bool = False  # a pointer result whose shadow `aug` returns beside it
    undo_writes: bool = False  # the caller needs every write undone by the reverse sweep (plan/undo.py)
    outliving: tuple[bool, ...] = ()  # per pointer argument: its memory is there until the undo log closes
    # (the caller's own, a global, the heap: plan/undo.py's lives_on): stores into it may be undone through the log
    budget: int = 0  # bytes: its outermost loops checkpointed within them (reverse/checkpoint/), 0 for none
    ret_masked: bool = False  # the caller may mask the result: its adjoint may be a masked zero (masked.py)
    team: bool = False  # runs on every thread of an OpenMP team (a parallel region's outlined function, or a
    # function it calls): adjoints added to memory other threads may add to are added atomically
    forked: bool = False  # ... the region's outlined function itself, which every thread of the team runs
    runtime: bool = False  # pointers without shadows are their own where one is needed, checked at each access
    # (runtime activity, shadows.py): its whole derivation is (its callees' patterns too)
    logged: bool = True  # stores in loops may be undone through the undo log; not where a later level
    # differentiates the derivative again (it would have to differentiate the log): its callees' patterns alike
    discarded: tuple[bool, ...] = ()  # per argument: memory whose primal content the caller discards (duponly):
    # the forward sweep may skip writing it where nothing reads it again (plan/discarded.py)


@dataclass
class RevDerived:
    aug: str
    rev: str
    pattern: RevPattern
    aug_ret: Type
    rev_ret: Type
    scalars: list[int]  # the active float arguments, whose gradients `rev` returns in order
    plan: CachePlan | None = None  # None while it is being written (a recursive call)
    free: str = ""  # split mode: releases what `aug` allocated, without reversing anything
    rev_uses: tuple[bool, ...] = ()  # which primal arguments `rev` reads
    aug_uses: tuple[bool, ...] = ()  # which arguments' shadows `aug` reads
    undoes_writes: bool = False  # its reverse sweep undoes every write to memory it did not allocate
    serial_only: bool = False  # its sweeps, or a callee's, cannot run on a team's threads at once (they put
    # back what stores overwrote from the record, or through logs between barriers, or add to adjoints in code
    # written by hand)
    logs: bool = False  # it, or a callee, undoes stores through the undo log
    synchronizes: bool = False  # it, or a callee, waits at barriers or enters critical sections (OpenMP's)
    atomic_in_loops: bool = False  # its reverse sweep, or a callee's, adds to shadow memory atomically in a loop
    shared_arrays: int = 0  # a region's team pair: the arrays whose accesses its threads compare (sharing.py)
    stacks: bool = True  # its sweeps, or a callee's, may take storage from the gradient's stack (adgen.stack.alloc):
    # a gradient of one that does not need not bracket its sweeps with the stack's (kernels.py)

    @property
    def record_size(self) -> int:
        return self.plan.record_size


def size_global(derived: RevDerived) -> str:
    """The constant holding a derived function's record size (for records allocated on the heap,
    which a recursive call may need before the size is known)."""
    return "@" + local(bare("%" + derived.aug[1:]) + ".size")[1:]


def aug_params(fn: Function, active: tuple[bool, ...], layout: Layout) -> list[str]:
    """The parameters of a pair's `aug` (and of `free`): the primal ones, the shadows of
    pointers with derivatives, the record."""
    params = [f"{p.type.text} {p.name}" for p in fn.params]
    params += [f"{layout.part_type(p.type).text} {n}" for p, on in zip(fn.params, active)
               if on and p.type.kind == "ptr" for n in layout.names(p.name)]
    return params + ["ptr %rec"]


@dataclass
class CallSite:
    """A call to a function of the sources that derivatives flow into."""

    derived: RevDerived
    blob: Key  # where its record is kept
    indirect: bool  # a recursive call: its record is allocated, the blob holds the pointer


@dataclass
class ReverseFacts:
    """Everything known about one function being differentiated, shared by the stages."""

    module: Module
    decls: Declarations
    fn: Function
    derived: RevDerived
    layout: Layout
    cfg: CFG
    loops: LoopForest
    memory: Memory
    activity: ActivityAnalysis
    calls: dict[int, CallSite] = field(default_factory=dict)
    undoable: list[Instruction] = field(default_factory=list)  # stores (and calls) the reverse sweep undoes
    logged: bool = False  # undone through the undo log (plan/undo.py), else from the record and redone at its exit
    guards: dict = field(default_factory=dict)  # logged stores checked at run time: id -> loop (or None), see plan/undo.py
    registers: bool = False  # adds what its reverse sweep reads again to the open log's ranges (the log is on)
    stack: set[str] = field(default_factory=set)  # fixed-size local arrays of the forward sweep
    reverse_local: set[str] = field(default_factory=set)  # ... whose shadow the reverse sweep allocates
    heap: set[str] = field(default_factory=set)  # local arrays with shadows, moved to the heap
    keys: Keys | None = None
    plan: CachePlan | None = None
    inst: Instruction | None = None

    @property
    def pattern(self) -> RevPattern:
        return self.derived.pattern

    @cached_property
    def first_writes(self) -> set[int]:
        """Stores whose adjoints need not clear the shadow they read (Memory.first_accesses)."""
        return self.memory.first_accesses(self.activity.active)

    def fail(self, what: str) -> Unsupported:
        return Unsupported(self.fn.name, self.inst, what)

    def aug_params(self) -> list[str]:
        """The parameters of `aug` (and of `free`)."""
        return aug_params(self.fn, self.pattern.active, self.layout)

    def rev_params(self) -> list[str]:
        """The parameters of `rev`: those of `aug`, with the seed of an active result before the record."""
        params = self.aug_params()[:-1]
        if self.pattern.ret_active:
            params += [f"{self.layout.part_type(self.fn.ret).text} {n}" for n in self.layout.names("%ret'seed")]
        return params + ["ptr %rec"]
