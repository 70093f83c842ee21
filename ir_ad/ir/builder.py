"""Writes LLVM IR text: typed values, fresh names, arithmetic on scalars and `<N x T>` vectors,
and the declarations of the intrinsics and libm functions the derivative code calls."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from adgen.ir_ad.ir.types import I1, I64, PTR, Type, element_align, vector

# LLVM intrinsics for math functions (anything else is called in libm by its C name).
INTRINSIC_MATH = {"sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "pow",
                  "exp", "exp2", "exp10", "log", "log10", "log2", "fabs", "copysign", "floor", "ceil", "trunc",
                  "rint", "nearbyint", "round", "roundeven", "minnum", "maxnum", "fma", "fmuladd"}
_PIECES = re.compile(r'%(?:"[^"]*"|[-a-zA-Z$._0-9]+)|c?"[^"]*"|[^%"c]+|.')  # local names, strings, the rest
_SIMPLE_NAME = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*\Z")


def renamed(text: str, names: dict[str, str]) -> str:
    """IR text with the local names in `names` replaced, token by token (%a not inside %ab)."""
    return "".join(names.get(piece, piece) for piece in _PIECES.findall(text)) if names else text


def sliced(lines: list[str], roots: set[str]) -> list[str]:
    """Of a Builder's `lines`, those computing the values `roots`, and those defining no value
    (they may have effects), in order."""
    defined = {line.split("=", 1)[0].strip(): k for k, line in enumerate(lines) if line.lstrip().startswith("%")}
    keep, work = set(), [r for r in roots if r in defined]
    while work:
        k = defined[work.pop()]
        if k not in keep:
            keep.add(k)
            work += [piece for piece in _PIECES.findall(lines[k].split("=", 1)[1]) if piece in defined]
    return [line for k, line in enumerate(lines) if k in keep or not line.lstrip().startswith("%")]


def local(name: str) -> str:
    """`%name`, quoted when the name needs it."""
    return "%" + (name if _SIMPLE_NAME.match(name) else '"' + name + '"')


def bare(ref: str) -> str:
    """The name inside a `%name` or `%"name"` reference."""
    name = ref[1:]
    return name[1:-1] if name.startswith('"') else name


@dataclass(frozen=True)
class V:
    """A typed IR value: a reference or a constant."""

    type: Type
    ref: str

    def __str__(self) -> str:
        return f"{self.type.text} {self.ref}"


def float_const(value: float, t: Type) -> str:
    """An exact IR spelling of a floating constant (hex for doubles, also valid for floats
    when the value is exactly representable, which holds for every constant we use)."""
    import struct as _struct

    if t.text == "float":
        value = _struct.unpack("<f", _struct.pack("<f", value))[0]
    return "0x%016X" % _struct.unpack("<Q", _struct.pack("<d", value))[0]


PRIMAL, SHADOW, CACHE = "primal", "shadow", "cache"


class AliasScopes:
    """Tells LLVM what the derivative code knows and alias analysis cannot see: primal memory,
    shadow memory and the cache plan's storage never overlap, and neither do the N lanes of a
    shadow (each is its own memory by the ABI's contract; the storage is adgen's own). Each load
    and store the derivative code makes is tagged with the one it touches, so that loops over
    primal and shadow arrays vectorize without runtime checks, values carried in memory become
    registers, and the lanes of a derivative are scheduled freely. Scopes are numbered after the
    module's own metadata, in the order they are first used."""

    def __init__(self, first: int):
        self.first = first
        self.kinds: list[str] = []

    def tag(self, kind: str) -> str:
        if kind not in self.kinds:
            self.kinds.append(kind)
        base = self.first + 1 + 3 * self.kinds.index(kind)
        return f", !alias.scope !{base + 1}, !noalias !{base + 2}"

    def definitions(self) -> list[str]:
        if not self.kinds:
            return []
        f = self.first
        out = [f"!{f} = distinct !{{!{f}, !\"adgen\"}}"]
        scope = lambda i: f"!{f + 1 + 3 * i}"
        for i, kind in enumerate(self.kinds):
            base = f + 1 + 3 * i
            others = ", ".join(scope(j) for j in range(len(self.kinds)) if j != i)
            out += [f"!{base} = distinct !{{!{base}, !{f}, !\"adgen {kind}\"}}", f"!{base + 1} = !{{!{base}}}",
                    f"!{base + 2} = !{{{others}}}"]
        return out


class Declarations:
    """The functions the module declares or defines, the declarations to add, and the alias
    scopes of the derivative code (numbered after the module's own metadata)."""

    def __init__(self, known: set[str], first_metadata: int = 1_000_000, tag: str = ""):
        self.known = set(known)
        self.added: list[str] = []
        self.scopes = AliasScopes(first_metadata)
        # In the names of new values: apart from those an earlier level wrote into the code being
        # differentiated again ("" at level 1).
        self.tag = tag

    def need(self, name: str, ret: Type, params: list[Type]) -> None:
        if name not in self.known:
            self.known.add(name)
            self.added.append(f"declare {ret.text} {name}({', '.join(p.text for p in params)})")


class Builder:
    """Appends instructions to `lines`, naming results with a prefix no C value can have."""

    def __init__(self, decls: Declarations, lines: list[str] | None = None, prefix: str = "t"):
        self.decls = decls
        self.lines = lines if lines is not None else []
        self.prefix = prefix
        self.count = 0
        # a value the code already has for a libm call on these arguments, or None (math())
        self.known: Callable[[str, tuple[V, ...]], V | None] | None = None
        # whether the code divides 1 by this value where it computes it (rules.divides_one_by): a
        # partial of the form C / v is then C * (1 / v), that one division shared
        self.divides: Callable[[V], bool] | None = None
        # whether this value is at hand where the partial is computed at no cost (a primitive's
        # result: forward mode computes it there; the reverse sweep where other partials of the same
        # site asked for it): a partial may then be written with it (fdiv's, -r / b)
        self.at_hand: Callable[[V], bool] | None = None

    def fresh(self, hint: str = "") -> str:
        self.count += 1
        return local(f"{self.prefix}'{self.decls.tag}{hint}{self.count}")

    def emit(self, text: str) -> None:
        self.lines.append("  " + text)

    def reemit(self, inst, refs: dict[str, str]) -> V:
        """A copy of a pure instruction, with some of its operands (by name) replaced."""
        text = renamed(inst.text.split("=", 1)[1].strip(), refs)
        return self.value(inst.type, text + (self.tag(PRIMAL) if inst.opcode == "load" else ""))

    def value(self, t: Type, text: str, hint: str = "") -> V:
        name = self.fresh(hint)
        self.emit(f"{name} = {text}")
        return V(t, name)

    # constants
    def const(self, t: Type, value: float) -> V:
        if t.kind == "vector":
            return V(t, f"splat ({t.elems[0].text} {float_const(value, t.elems[0])})")
        return V(t, float_const(value, t))

    def zero(self, t: Type) -> V:
        if t.kind == "float":
            return V(t, float_const(0.0, t))
        if t.kind == "ptr":
            return V(t, "null")
        if t.kind == "int":
            return V(t, "0")
        return V(t, "zeroinitializer")

    # arithmetic on scalars or vectors of the same type
    def binary(self, op: str, a: V, b: V) -> V:
        """`a op b`; where `op` is an integer operation and one operand its identity (x + 0,
        x * 1, x & -1), the other operand, unwritten: the IR LLVM optimizes
        after differentiation is that much smaller (on bench/programs/gpt2.c's gradient, 1,265
        of 23,474 instructions were such, most of them the rebuilt induction variables of
        reverse sweeps, start + i * 1)."""
        if a.type.kind == "int" and op.split(" ", 1)[0] in _IDENTITIES:
            left, right = _IDENTITIES[op.split(" ", 1)[0]]
            if integer(b.ref, a.type.bits) == integer(right, a.type.bits):
                return a
            if left is not None and integer(a.ref, a.type.bits) == integer(left, a.type.bits):
                return b
        return self.value(a.type, f"{op} {a}, {b.ref}")

    def fadd(self, a: V, b: V) -> V:
        return self.binary("fadd", a, b)

    def fsub(self, a: V, b: V) -> V:
        return self.binary("fsub", a, b)

    def fmul(self, a: V, b: V) -> V:
        return self.binary("fmul", a, b)

    def fdiv(self, a: V, b: V) -> V:
        return self.binary("fdiv", a, b)

    def fneg(self, a: V) -> V:
        return self.value(a.type, f"fneg {a}")

    def fcmp(self, pred: str, a: V, b: V) -> V:
        return self.value(I1 if a.type.kind != "vector" else vector(I1, a.type.count), f"fcmp {pred} {a}, {b.ref}")

    def select(self, cond: V, a: V, b: V) -> V:
        return self.value(a.type, f"select {cond}, {a}, {b}")

    def cast(self, op: str, a: V, to: Type) -> V:
        return self.value(to, f"{op} {a} to {to.text}")

    def math(self, name: str, *args: V) -> V:
        """A libm function or its LLVM intrinsic, on float or double scalars, or on vectors of them
        (the intrinsic's vector form, `llvm.sqrt.v2f64`)."""
        if self.known is not None and (had := self.known(name, args)) is not None:
            return had
        t = args[0].type
        if name in INTRINSIC_MATH:
            callee = f"@llvm.{name}.{_mangled(t)}"
        else:
            callee = f"@{name}" + ("f" if t.text == "float" else "")
        return self.call(callee, t, list(args))

    def powi(self, x: V, n: V) -> V:
        return self.call(f"@llvm.powi.{_mangled(x.type)}.{n.type.text}", x.type, [x, n])

    def call(self, callee: str, ret: Type, args: list[V]) -> V | None:
        self.decls.need(callee, ret, [a.type for a in args])
        text = f"call {ret.text} {callee}({', '.join(str(a) for a in args)})"
        if ret.kind == "void":
            self.emit(text)
            return None
        return self.value(ret, text)

    # vectors
    def splat(self, x: V, n: int) -> V:
        t = vector(x.type, n)
        if not x.ref.startswith("%"):
            return V(t, f"splat ({x})")
        one = self.value(t, f"insertelement {t.text} poison, {x}, i64 0")
        return self.value(t, f"shufflevector {one}, {t.text} poison, <{n} x i32> zeroinitializer")

    def extract(self, vec: V, k: int) -> V:
        return self.value(vec.type.elems[0], f"extractelement {vec}, i64 {k}")

    def insert(self, vec: V, x: V, k: int) -> V:
        return self.value(vec.type, f"insertelement {vec}, {x}, i64 {k}")

    def gather(self, elems: list[V]) -> V:
        t = vector(elems[0].type, len(elems))
        out = V(t, "poison")
        for k, e in enumerate(elems):
            out = self.insert(out, e, k)
        return out

    # memory
    def load(self, t: Type, ptr: V, align: int | None = None, memory: str | None = None) -> V:
        """`align`: what is known of the address (the primal access's alignment); `memory`:
        PRIMAL, SHADOW or CACHE, the memory it reads (see AliasScopes)."""
        return self.value(t, f"load {t.text}, {ptr}, align {_align(t, align)}" + self.tag(memory))

    def store(self, v: V, ptr: V, align: int | None = None, memory: str | None = None) -> None:
        self.emit(f"store {v}, {ptr}, align {_align(v.type, align)}" + self.tag(memory))

    def tag(self, memory: str | None) -> str:
        return self.decls.scopes.tag(memory) if memory else ""

    def gep(self, source: Type, base: V, *indices: V, flags: str = "") -> V:
        """A pointer, or a vector of pointers when the base or an index is a vector."""
        lanes = [v.type.count for v in (base, *indices) if v.type.kind == "vector"]
        t = vector(PTR, lanes[0]) if lanes else PTR
        idx = "".join(f", {i}" for i in indices)
        return self.value(t, f"getelementptr {flags + ' ' if flags else ''}{source.text}, {base}{idx}")

    def size_of(self, t: Type, count: V | None = None) -> V:
        """sizeof(t) * count as i64, folded by the optimizer."""
        end = self.gep(t, V(PTR, "null"), count or V(I64, "1"))
        return self.cast("ptrtoint", end, I64)

    def memset0(self, ptr: V, size: V) -> None:
        self.call("@llvm.memset.p0.i64", Type("void", "void"), [ptr, V(Type("i8", "int", 8), "0"), size, V(I1, "false")])

    def memcpy(self, dst: V, src: V, size: V, move: bool = False) -> None:
        name = "@llvm.memmove.p0.p0.i64" if move else "@llvm.memcpy.p0.p0.i64"
        self.call(name, Type("void", "void"), [dst, src, size, V(I1, "false")])


# An integer operation's identities: (on the left, on the right), None where there is none.
_IDENTITIES = {"add": (0, 0), "or": (0, 0), "xor": (0, 0), "and": (-1, -1), "mul": (1, 1), "sub": (None, 0),
               "shl": (None, 0), "lshr": (None, 0), "ashr": (None, 0)}


def integer(ref: str | int | None, bits: int | None = None) -> int | None:
    """An integer constant's value (`true` is 1), None for any other value; given `bits`, its
    bits in that width (so i1's `true` is also its -1)."""
    if isinstance(ref, str) and ref in ("true", "false"):
        value = int(ref == "true")
    elif isinstance(ref, str) and ref and (ref.isdigit() or ref[0] == "-" and ref[1:].isdigit()):
        value = int(ref)
    elif isinstance(ref, int):
        value = ref
    else:
        return None
    return value & ((1 << bits) - 1) if bits else value


def _mangled(t: Type) -> str:
    """A floating type as an overloaded intrinsic's name spells it: f64, f32, v2f64..."""
    if t.kind == "vector":
        return f"v{t.count}{_mangled(t.elems[0])}"
    return {"double": "f64", "float": "f32", "half": "f16", "x86_fp80": "f80", "fp128": "f128"}.get(t.text, t.text)


def _align(t: Type, known: int | None) -> int:
    """Every access adgen writes states its alignment, the element's at most (ir.element_align):
    one without would get LLVM's alignment of the type, 32 for a `<4 x double>`, which the
    caller's memory need not have."""
    return min(known, element_align(t)) if known else element_align(t)
