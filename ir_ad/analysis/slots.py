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
    that only reads through that argument (LLVM's `readonly`). Any other use (an address
    computed from it, stored, compared, passed where it may be written) makes it memory like any
    other, which always has a shadow."""
    stored: dict[str, list[Operand]] = {i.result: [] for i in fn.instructions() if i.opcode == "alloca"}
    for inst in fn.instructions():
        if not stored:
            break
        if inst.opcode == "load":
            continue
        if inst.opcode == "store":
            value, ptr = inst.operands
            stored.pop(value.value, None)  # its address kept somewhere
            if ptr.value in stored:
                stored[ptr.value].append(value)
            continue
        if inst.opcode == "call":
            for k, arg in enumerate(inst.operands):
                if arg.value in stored and not _only_read(module, inst, k):
                    del stored[arg.value]
            continue
        for name in _used(inst):
            stored.pop(name, None)
    return stored


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
