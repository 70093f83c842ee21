"""The derivatives of SIMD code's lane operations, for both modes: `extractelement`,
`insertelement` and `shufflevector`. Each is linear in its vector operands, so a tangent goes
through the same operation, and an adjoint back through its transpose. Arithmetic on vectors (fadd, fmul, the intrinsics' vector
forms) is elementwise and takes the rules of rules.py as scalars do; a derivative's part is then
a vector of the same type (specs/abi.md, "Vector values").

`value(operand)` gives a primal operand as the mode has it (a lane index that is not a constant);
`shadow(operand)` its derivative's parts (zeros where it has none)."""

from __future__ import annotations

from typing import Callable

from adgen.ir_ad.ir.builder import Builder, V
from adgen.ir_ad.ir import Instruction, Operand, Type, shuffle_mask
from adgen.ir_ad.shadows import Shadow

LANE_OPS = ("extractelement", "insertelement", "shufflevector")


def tangent(b: Builder, inst: Instruction, value: Callable[[Operand], V],
            shadow: Callable[[Operand], Shadow]) -> Shadow:
    """The tangent of a lane operation: the operation on the operands' tangents."""
    ops = inst.operands
    if inst.opcode == "extractelement":
        at = value(ops[1])
        return tuple(b.value(inst.type, f"extractelement {v}, {at}") for v in shadow(ops[0]))
    if inst.opcode == "insertelement":
        at = value(ops[2])
        return tuple(b.value(inst.type, f"insertelement {v}, {x}, {at}")
                     for v, x in zip(shadow(ops[0]), shadow(ops[1])))
    mask = ops[2]
    return tuple(b.value(inst.type, f"shufflevector {x}, {y}, {mask.type.text} {mask.value}")
                 for x, y in zip(shadow(ops[0]), shadow(ops[1])))


def adjoints(b: Builder, inst: Instruction, dr: Shadow, value: Callable[[Operand], V],
             active: Callable[[Operand], bool]) -> list[tuple[int, Shadow]]:
    """What the adjoint `dr` of a lane operation's result gives each of its active operands (by
    position): the transpose of the operation."""
    ops = inst.operands
    out: list[tuple[int, Shadow]] = []
    if inst.opcode == "extractelement":
        if active(ops[0]):
            at, t = value(ops[1]), ops[0].type
            out.append((0, tuple(b.value(t, f"insertelement {_zero(t)}, {x}, {at}") for x in dr)))
    elif inst.opcode == "insertelement":
        at = value(ops[2])
        if active(ops[0]):
            out.append((0, tuple(b.value(inst.type, f"insertelement {x}, {_zero(ops[1].type)}, {at}") for x in dr)))
        if active(ops[1]):
            out.append((1, tuple(b.value(ops[1].type, f"extractelement {x}, {at}") for x in dr)))
    else:
        mask, n = shuffle_mask(inst), ops[0].type.count
        for k in (0, 1):
            if active(ops[k]):
                taken = [(j, m - k * n) for j, m in enumerate(mask) if m >= 0 and k * n <= m < (k + 1) * n]
                out.append((k, tuple(_gather(b, ops[k].type, x, taken) for x in dr)))
    return out


def _gather(b: Builder, t: Type, dr: V, taken: list[tuple[int, int]]) -> V:
    """A vector of type `t` whose lane i sums the lanes j of `dr` that a shuffle took from lane i
    (`taken`: (j, i) pairs)."""
    out, written = V(t, "zeroinitializer"), set()
    for j, i in taken:
        lane = b.value(t.elems[0], f"extractelement {dr}, i64 {j}")
        if i in written:
            lane = b.binary("fadd", b.value(t.elems[0], f"extractelement {out}, i64 {i}"), lane)
        out = b.value(t, f"insertelement {out}, {lane}, i64 {i}")
        written.add(i)
    return out


def _zero(t: Type) -> str:
    return f"{t.text} zeroinitializer" if t.kind == "vector" else f"{t.text} 0.000000e+00"

