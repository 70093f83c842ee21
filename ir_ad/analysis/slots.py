"""Stack slots: the allocas a function uses only to hold a value, which carry derivatives only
where a value stored into them does. Both activity analyses ask, so that a slot holding a
pointer to memory without derivatives (a `const` array) needs no shadow: OpenMP's outlined
regions take every captured variable through such a slot (ir/parallel.py), the const arrays
among them."""

from __future__ import annotations

from adgen.ir_ad.calls import DEFINED, IGNORED, INACTIVE, kind_of
from adgen.ir_ad.ir import Function, Instruction, Module, Operand


def slots(module: Module, fn: Function) -> dict[str, list[Operand]]:
    """The function's allocas used only as slots, each with the values stored into it: loaded,
    stored into, passed to a call that carries no derivatives or to a function of the sources
    that only reads through that argument (LLVM's `readonly`), itself or at an address computed
    from it (`getelementptr`: an array, `(MPI_Datatype[]){MPI_DOUBLE, MPI_INT}` passed to
    MPI_Type_create_struct). Any other use (an address kept, stored, compared, passed where it
    may be written) makes it memory like any other, which always has a shadow."""
    within = _addresses(fn)
    stored: dict[str, list[Operand]] = {i.result: [] for i in fn.instructions() if i.opcode == "alloca"}

    def escapes(name: str) -> None:
        if name in within:
            stored.pop(within[name], None)

    for inst in fn.instructions():
        if not stored:
            break
        if inst.opcode == "load" or (inst.opcode == "getelementptr" and inst.result in within):
            continue
        if inst.opcode == "store":
            value, ptr = inst.operands
            escapes(value.value)  # its address kept somewhere
            if within.get(ptr.value) in stored:
                stored[within[ptr.value]].append(value)
            continue
        if inst.opcode == "call":
            for k, arg in enumerate(inst.operands):
                if not _only_read(module, inst, k):
                    escapes(arg.value)
            continue
        for name in _used(inst):
            escapes(name)
    return stored


def _addresses(fn: Function) -> dict[str, str]:
    """Each alloca, and each address `getelementptr` computes from one (at any depth) -> the alloca."""
    within = {i.result: i.result for i in fn.instructions() if i.opcode == "alloca"}
    geps = [i for i in fn.instructions() if i.opcode == "getelementptr"]
    grown = True
    while grown:  # (a block may come before the one defining what it uses)
        grown = False
        for inst in geps:
            if inst.result not in within and inst.operands[0].value in within:
                within[inst.result] = within[inst.operands[0].value]
                grown = True
    return within


def _only_read(module: Module, call: Instruction, k: int) -> bool:
    kind = kind_of(module, call)
    if kind == INACTIVE or kind in IGNORED:
        return True
    target = module.functions.get(call.callee)
    if kind != DEFINED or target is None or target.declaration or k >= len(target.params):
        return False
    attrs = target.params[k].attrs
    return "readonly" in attrs or "readnone" in attrs


def _used(inst: Instruction) -> set[str]:
    names = {o.value for o in inst.operands} | {v.value for v, _ in inst.incoming}
    return names | inst.mentions() if inst.type.kind == "other" else names
