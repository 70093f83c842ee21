"""What the optimizer's code says of values before the activity analyses decide: pointers whose
shadows nothing reads, floats whose values no derivative reads (terms of sums stored: the undo
log need not protect them), integers holding floats' bits that neither mode follows, and atomic
updates whose old value nothing reads (the ones both modes differentiate).

Pointers whose shadows nothing reads: a function pointer loaded from an object's virtual
table and only called through (adgen calls through the primal pointer: a dispatcher takes it
first and compares it, dispatch.py), the table's address it was loaded through, and pointers
only compared or turned into integers. Both activity analyses give them no shadow, so a virtual
call on an object whose shadow's table nothing wrote (one a library's constructor made, which
carries no derivatives) reads nothing from that shadow."""

from __future__ import annotations

from adgen.ir_ad.calls import LIBRARY_IO
from adgen.ir_ad.ir import Function, Instruction, Type, atomic_operation, floating

_THROUGH = ("getelementptr", "bitcast", "addrspacecast", "phi", "select")


def uses_of(fn: Function) -> dict[str, list[tuple[Instruction, int]]]:
    """Each value's uses in the function: (instruction, operand index), a phi's by incoming."""
    uses: dict[str, list[tuple[Instruction, int]]] = {}
    for inst in fn.instructions():
        values = [v for v, _ in inst.incoming] if inst.opcode == "phi" else inst.operands
        for k, o in enumerate(values):
            uses.setdefault(o.value, []).append((inst, k))
    return uses


def unread_shadows(fn: Function) -> set[str]:
    """The function's pointer values every use of which is one needing no shadow."""
    uses = uses_of(fn)
    candidates = [inst.result for inst in fn.instructions()
                  if inst.result and inst.type.kind == "ptr" and inst.opcode in (*_THROUGH, "load")]
    free: set[str] = set()
    changed = True
    while changed:
        changed = False
        for value in candidates:
            if value not in free and value in uses and all(_needs_none(inst, k, free) for inst, k in uses[value]):
                free.add(value)
                changed = True
    return free


def _needs_none(inst: Instruction, k: int, free: set[str]) -> bool:
    """Whether this use (operand k of inst) reads no shadow of its operand."""
    op = inst.opcode
    if op in ("icmp", "ptrtoint"):
        return True
    if op in ("call", "invoke"):
        name = inst.callee.lstrip("@").strip('"')
        return k == 0 and name.startswith(("adgen.dispatch.", LIBRARY_IO)) and \
            all(o.value != inst.operands[0].value for o in inst.operands[1:])
    if op == "load":  # the address of a loaded pointer that needs none itself
        return inst.type.kind == "ptr" and inst.result in free
    if op in ("getelementptr", "bitcast", "addrspacecast"):
        return k == 0 and inst.result in free
    if op in ("phi", "select"):
        return (op == "phi" or k > 0) and inst.result in free
    return False


# Uses through which a float's value reaches no derivative: terms of a sum (`out[j] = out[j] +
# ltri[k] * x[i]`: the reverse sweep adds the adjoint to each term, whatever they hold), the
# addend of a fused multiply-add, a negation, merges; and stores of it (into memory, whose
# loads are values of their own).
_SUMMED = ("fadd", "fsub", "fneg", "phi", "select")
_FUSED = ("@llvm.fmuladd.", "@llvm.fma.")


def unread_values(fn: Function) -> set[str]:
    """The floating loads of `fn` whose values the reverse sweep never reads: every use of them,
    and of what they are summed into, is a term of a sum (a select's condition excepted) or a
    stored value. A store overwriting them need not be undone for their sake (the cache plan
    still stores any it finds it needs: this only spares the undo log its work)."""
    uses = uses_of(fn)

    def passes(inst: Instruction, k: int) -> bool:  # (a use that needs no value, its result aside)
        if inst.opcode == "select":
            return k > 0
        return inst.opcode in _SUMMED or (inst.opcode == "call" and inst.callee.startswith(_FUSED) and k == 2)

    unread = {i.result for i in fn.instructions() if i.result and floating(i.type)}
    changed = True
    while changed:  # (the largest set closed under its uses: sums in loops, through phis, included)
        changed = False
        for value in list(unread):
            if any(not (inst.opcode == "store" and k == 0) and
                   (not passes(inst, k) or inst.result not in unread) for inst, k in uses.get(value, [])):
                unread.discard(value)
                changed = True
    return {i.result for i in fn.instructions() if i.opcode == "load" and i.result in unread}


_BIT_MOVES = ("trunc", "lshr", "ashr", "shl", "zext", "or", "and", "xor", "bitcast", "freeze", "shufflevector",
              "extractelement", "insertelement")


def floats_as_integer_vectors(fn: Function) -> dict[str, Type]:
    """Loads of a vector of integers every use of which is a `bitcast` of the whole vector to
    one vector of floats of its size, by the loaded value: SIMD code's floats moved as integer
    lanes (Eigen's broadcast of packed doubles without SSE3, `_mm_shuffle_epi32` of
    `_mm_castpd_si128`, which the optimizer makes a `load <4 x i32>` and a `bitcast` to
    `<2 x double>`). Both modes take such a load as one of the vector of floats: its derivative
    is of that type, and each bitcast passes it on."""
    users: dict[str, list[Instruction]] = {}
    for inst in fn.instructions():
        for o in (v for v, _ in inst.incoming) if inst.opcode == "phi" else inst.operands:
            users.setdefault(o.value, []).append(inst)
    found: dict[str, Type] = {}
    for inst in fn.instructions():
        t = inst.type
        if inst.opcode != "load" or t.kind != "vector" or t.elems[0].kind != "int" or not users.get(inst.result):
            continue
        targets = {u.type for u in users[inst.result]
                   if u.opcode == "bitcast" and floating(u.type) and u.type.kind == "vector"}
        if len(targets) == 1 and all(u.opcode == "bitcast" for u in users[inst.result]):
            target = targets.pop()
            if target.count * target.elems[0].bits == t.count * t.elems[0].bits:
                found[inst.result] = target
    return found


def floats_as_wide_integers(fn: Function) -> set[str]:
    """Loads of an integer wider than a double, or of a vector of integers (but those of
    floats_as_integer_vectors), whose bits become floating-point values (through shifts,
    truncations and lane moves to a `bitcast`): the optimizer's copy of several floats at once
    (`load i128` of two doubles a `memcpy` moved). Neither mode follows derivatives through
    such bits, so where the memory holds derivatives both refuse them, at the load."""
    users: dict[str, list[Instruction]] = {}
    for inst in fn.instructions():
        for o in inst.operands:
            users.setdefault(o.value, []).append(inst)
    found = set()
    whole = floats_as_integer_vectors(fn)
    for inst in fn.instructions():
        if inst.opcode != "load" or inst.result in whole or not (
                (inst.type.kind == "int" and inst.type.bits > 64) or
                (inst.type.kind == "vector" and inst.type.elems[0].kind == "int")):
            continue
        work, seen = [inst.result], set()
        while work:
            value = work.pop()
            for user in users.get(value, ()):
                if user.opcode == "bitcast" and floating(user.type):
                    found.add(inst.result)
                    work = []
                    break
                if user.opcode in _BIT_MOVES and user.result and user.result not in seen:
                    seen.add(user.result)
                    work.append(user.result)
    return found


ATOMIC_UPDATES = ("fadd", "fsub")  # the atomic updates of data with derivatives both modes differentiate


def atomic_update_refusal(fn: Function, inst: Instruction) -> str | None:
    """Why an atomic instruction on data carrying derivatives cannot be differentiated, or None:
    an addition or subtraction (OpenMP's `atomic` update) whose old value nothing uses is (its
    tangent added atomically too; in reverse, the updated memory's adjoint passed to the value
    added), any other (`capture`, an exchange, a minimum, `cmpxchg`) not."""
    if inst.opcode != "atomicrmw":
        return f"the '{inst.opcode}' instruction on data carrying derivatives"
    operation = atomic_operation(inst)
    if operation not in ATOMIC_UPDATES:
        return f"an atomic '{operation}' of data carrying derivatives (adgen differentiates atomic additions and " \
               "subtractions)"
    used = {o.value for i in fn.instructions() for o in i.operands} | \
        {v.value for i in fn.instructions() for v, _ in i.incoming}
    if inst.result in used:
        return "an atomic update whose old value is used (OpenMP's `atomic capture`): adgen differentiates " \
               "atomic updates whose old value nothing reads"
    return None
