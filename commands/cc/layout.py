"""The C layout of values (x86-64 and AArch64, LP64): how many bytes a type takes, and its
alignment, as the adapters of Enzyme's calls and the reader of structs by value need them."""

from __future__ import annotations

from adgen.ir_ad.ir import Module, Type


def _size(module: Module, t: Type) -> int:
    return _size_align(module, t)[0]


def _size_align(module: Module, t: Type) -> tuple[int, int]:
    """A type's size and alignment under the C layout of x86-64 and AArch64 (LP64)."""
    t = module.struct_type(t)
    if t.kind in ("float", "int"):
        n = max(1, (t.bits + 7) // 8)
        return (16, 16) if t.text == "x86_fp80" else (n, n)
    if t.kind == "ptr":
        return 8, 8
    if t.kind in ("array", "vector"):
        size, align = _size_align(module, t.elems[0])
        if t.kind == "vector":
            total = size * t.count
            return total, min(total, 64) if total & (total - 1) == 0 else align
        return size * t.count, align
    if t.kind == "struct":
        offset, most = 0, 1
        for e in t.elems:
            size, align = _size_align(module, e)
            offset = -(-offset // align) * align + size
            most = max(most, align)
        return -(-offset // most) * most, most
    raise ValueError(f"no layout for {t.text}")
