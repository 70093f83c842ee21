"""The reverse of OpenMP's synchronization, in a function a team runs (specs/openmp.md): a
barrier where the forward sweep met one, and the critical sections reversed one at a time, in
the opposite order of the forward sweep's (templates/openmp.ll.j2 keeps the turns); and of its
atomic updates."""

from __future__ import annotations

from adgen.ir_ad.calls import callee_name
from adgen.ir_ad.ir import I32, I64, VOID, Instruction, Operand, atomic_operation
from adgen.ir_ad.ir.builder import Builder


def reverse_synchronization(inst: Instruction, value, sharing, b: Builder) -> None:
    """The reverse of a call of `calls.SYNCHRONIZATION`; `value(operand)`: a primal value as the
    reverse sweep has it; `sharing` (or None): the thread's private adjoints, added to the shared
    ones before a barrier (the phase before it reads them)."""
    name = callee_name(inst)
    if name == "__kmpc_barrier":
        if sharing is not None:
            sharing.flush(b, release=False)
        loc = value(inst.operands[0])
        b.call("@__kmpc_barrier", VOID, [loc, b.call("@__kmpc_global_thread_num", I32, [loc])])
    elif name == "__adgen_omp_end_critical":  # leaving: wait for the turn of the section its ticket numbers
        b.call('@"adgen.omp.critical.reversed"', VOID, [value(Operand(I64, inst.result))])
    elif name == "__kmpc_critical":  # entering: the turn passes to the section left before
        b.call('@"adgen.omp.entered.reversed"', VOID, [])


def reverse_atomic_update(adjoints, inst: Instruction, site, b: Builder) -> None:
    """The reverse of an atomic addition (subtraction) into memory with derivatives, its old
    value unused (analysis/uses.py): the memory's adjoint, which the update leaves as it is,
    added to (subtracted from) the value's. Read without atomics: in a phase of a race-free
    program no thread reads what threads update atomically, so no adjoint is added to it."""
    ptr, value = inst.operands
    activity, needs = adjoints.activity, adjoints.needs
    if not activity.active(value.value):
        return
    if ptr.value not in activity.pointers:
        raise adjoints.d.fail("an atomic update carrying derivatives of memory adgen keeps no derivatives of")
    p = needs.guard(ptr, needs.shadow(ptr, site), site, b)
    now = adjoints.layout.load(b, activity.floaty[value.value], p, inst.align)
    if atomic_operation(inst) == "fsub":
        now = tuple(b.value(x.type, f"fneg {x}") for x in now)
    adjoints.add(b, value.value, now)
