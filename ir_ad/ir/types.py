"""The IR's types: what a value is (`double`, `ptr`, `<4 x double>`, `{ i32, double }`), made
by adgen or read from IR text, and the alignment derivative code may assume of them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from adgen.ir_ad.ir.tokens import Cursor, IRError

FLOAT_BITS = {"half": 16, "bfloat": 16, "float": 32, "double": 64, "x86_fp80": 80, "fp128": 128}


@dataclass(frozen=True)
class Type:
    text: str
    kind: str  # void float int ptr vector array struct named label metadata token other
    bits: int = 0
    elems: tuple["Type", ...] = ()
    count: int = 0

    def __str__(self) -> str:
        return self.text


VOID = Type("void", "void")
PTR = Type("ptr", "ptr")
I1, I8, I32, I64 = Type("i1", "int", 1), Type("i8", "int", 8), Type("i32", "int", 32), Type("i64", "int", 64)


def int_type(bits: int) -> Type:
    return Type(f"i{bits}", "int", bits)


def float_type(name: str) -> Type:
    return Type(name, "float", FLOAT_BITS[name])


def vector(elem: Type, n: int) -> Type:
    return Type(f"<{n} x {elem.text}>", "vector", elem.bits, (elem,), n)


def array(elem: Type, n: int) -> Type:
    return Type(f"[{n} x {elem.text}]", "array", 0, (elem,), n)


def struct(*elems: Type) -> Type:
    return Type("{ " + ", ".join(e.text for e in elems) + " }", "struct", 0, tuple(elems), len(elems))


def floating(t: Type) -> bool:
    """A float, or a vector of floats (`<2 x double>`: SIMD code's values, Eigen's packets)."""
    return t.kind == "float" or (t.kind == "vector" and t.elems[0].kind == "float")


def element_align(t: Type) -> int:
    """The most alignment derivative code assumes of memory holding a `t`: that of its scalars (a
    vector's or array's elements, a struct's widest field), at most 8, and 1 for a type it cannot
    see into. A caller's pointer promises no more (a `const double *` is 8-byte aligned, whatever
    LLVM's own alignment of `<4 x double>`, 32; specs/abi.md), nor do a cache record's slots."""
    if t.kind in ("vector", "array", "struct"):
        return max((element_align(e) for e in t.elems), default=1)
    if t.kind == "ptr":
        return 8
    if t.kind in ("int", "float"):
        return min(8, 1 << (max(1, (t.bits + 7) // 8) - 1).bit_length())
    return 1


def slot_size(t: Type) -> int:
    """The bytes a `t` takes in a cache record: LLVM's layout, each struct field at its
    `element_align` (the plan weighs keys by it; the sweeps lay records out by it)."""
    if t.kind in ("int", "float"):
        return max(1, (t.bits + 7) // 8)
    if t.kind in ("vector", "array"):
        return t.count * slot_size(t.elems[0])
    if t.kind == "struct":
        offset = 0
        for e in t.elems:
            a = element_align(e)
            offset = (offset + a - 1) // a * a + slot_size(e)
        a = element_align(t)
        return (offset + a - 1) // a * a or 1
    return 8


def parse_type(c: Cursor) -> Type:
    """The type starting at the cursor (a named struct stays its name: `Module.struct_type`)."""
    tok = c.next()
    if tok in FLOAT_BITS:
        t = float_type(tok)
    elif re.fullmatch(r"i\d+", tok):
        t = int_type(int(tok[1:]))
    elif tok == "ptr":
        t = PTR
        if c.peek() == "addrspace":
            c.next()
            space = c.balanced()
            t = Type(f"ptr addrspace{space.replace(' ', '')}", "ptr")
    elif tok in ("void", "label", "metadata", "token"):
        t = Type(tok, tok if tok != "token" else "other")
    elif tok == "<":
        t = _vector_or_packed(c)
    elif tok == "[":
        n = int(c.next())
        c.expect("x")
        e = parse_type(c)
        c.expect("]")
        t = array(e, n)
    elif tok == "{":
        c.i -= 1
        t = _struct_body(c)
    elif tok.startswith("%"):
        t = Type(tok, "named")
    else:
        raise IRError(f"unknown type {tok!r}")
    if c.peek() == "(":  # a function type, as in `call i32 (ptr, ...) @printf(...)`
        t = Type(f"{t.text} {c.balanced()}", "func", 0, (t,))
    return t


def _vector_or_packed(c: Cursor) -> Type:
    """`<4 x double>`, or a packed struct `<{ i8, i32 }>`, after its `<`."""
    if c.peek() == "{":
        inner = _struct_body(c)
        c.expect(">")
        return Type("<" + inner.text + ">", "struct", 0, inner.elems, inner.count)
    n = int(c.next())
    c.expect("x")
    e = parse_type(c)
    c.expect(">")
    return vector(e, n)


def _struct_body(c: Cursor) -> Type:
    c.expect("{")
    elems = []
    while c.peek() != "}":
        elems.append(parse_type(c))
        c.accept(",")
    c.expect("}")
    return struct(*elems)
