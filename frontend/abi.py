"""The generated C ABI (specs/abi.md): the parameters a derived function takes and the values
it returns, computed from a checked Derivation. Templates only print what this decides."""

from __future__ import annotations

from dataclasses import dataclass

from adgen.frontend.ctype import CType, declare, pointer_ctype, pointer_to, shadow_ctype
from adgen.frontend.model import Activity, Derivation, Mode
from adgen.frontend.prototypes import Prototype, Param
from adgen.base.naming import CXX_ENTRY_PREFIX

KERNEL_OUT = "__adgen_out_"  # the kernel's parameters for the returned values: this and the field's name
_SHADOWED = {Activity.DUP, Activity.DUPONLY, Activity.DUAL, Activity.DUALONLY}
_INTERLEAVED = {Activity.DUPV, Activity.DUALV}


@dataclass(frozen=True)
class Slot:
    """A parameter of the derived function, or a field of its result."""

    name: str
    spelling: str  # the C type
    count: int = 1  # >1: an array of that many (result fields only)
    role: str = ""  # what it is, for the header's comment; "" for the primal's own parameters
    ffi: str = ""  # how ctypes passes it (see CType.ffi), for the manifest
    by_value: bool = False  # a struct or complex number: the kernel takes its address
    fields: tuple = ()  # a struct's fields (CType.fields), for the manifest
    ctype: CType | None = None  # its type, for an entry deriving this derived function (`of`)

    def declaration(self) -> str:
        return declare(self.spelling, self.name + (f"[{self.count}]" if self.count > 1 else ""))

    def kernel_declaration(self) -> str:
        """As the kernel takes it: a struct by value by its address, a C++ rvalue reference as an
        lvalue one (the stub passes the parameter by its name, an lvalue)."""
        if self.by_value:
            return declare(pointer_to(self.spelling), self.name)
        if self.spelling.endswith("&&"):
            return declare(self.spelling[:-2].rstrip() + " &", self.name)
        return self.declaration()


@dataclass(frozen=True)
class Signature:
    derivation: Derivation
    params: tuple[Slot, ...]
    fields: tuple[Slot, ...]  # the returned values, in order
    returns: str  # "void", a scalar C type, or the result struct's name
    result_struct: str | None
    part: str = ""  # split mode: "forward", "reverse", "free" or "tape_size", a function each

    @property
    def name(self) -> str:
        """adgen's name for it: unique in the build (its kernel's, the manifest's for C)."""
        return self.derivation.name + (f"_{self.part}" if self.part else "")

    @property
    def linker_name(self) -> str:
        """The name the object defines it by, with C linkage: where the derived function is
        declared with C++ linkage, the header's inline definition calls this (specs/cxx.md)."""
        return CXX_ENTRY_PREFIX + self.name if self.cxx_linkage else self.name

    @property
    def declared_name(self) -> str:
        """The name it is declared by: C++ overloads share one."""
        return (self.derivation.declared or self.derivation.name) + (f"_{self.part}" if self.part else "")

    @property
    def cxx_linkage(self) -> bool:
        """Declared with C++ linkage in its primal's namespaces (specs/cxx.md), not `extern "C"`."""
        return self.derivation.primal.cxx_linkage

    @property
    def qualified(self) -> str:
        """Its name with the namespaces it is declared in (`nbody::simulate_grad`)."""
        scope = self.derivation.primal.scope if self.cxx_linkage else ()
        return "::".join((*scope, self.declared_name))

    def summary(self) -> str:
        """What it is, for the header's comment."""
        d = self.derivation
        what = f"{d.mode.value} mode, width {d.width}, of {d.primal.name}"
        return f"{_PARTS[self.part].format(primal=d.primal.name)} ({d.name}: {what})" if self.part else what

    def as_function(self) -> Prototype:
        """The derived function as a prototype, for entries that derive it again (`of NAME`). Its
        result is one scalar or nothing: a derived function returning a struct is not derived again."""
        d = self.derivation
        returns = self.fields[0].ctype if self.fields else CType("void", True, False, False, False, None, ())
        return Prototype(self.qualified, tuple(Param(p.name, p.ctype) for p in self.params), returns, False,
                         d.primal.start, d.entry.name.span, cxx_linkage=d.primal.cxx_linkage, scope=d.primal.scope)

    def prototype(self, name: str = "") -> str:
        """Its declaration, by the name it is declared by, or `name`."""
        params = ", ".join(p.declaration() for p in self.params) or "void"
        return declare(self.returns, f"{name or self.declared_name}({params})")

    def forwarded(self) -> list[str]:
        """The arguments by which the header's C++ declaration passes its parameters on to the
        function of C linkage: a class by value or an rvalue reference moved."""
        return [f"static_cast<{p.spelling.removesuffix('&&').rstrip()} &&>({p.name})"
                if p.by_value or p.spelling.endswith("&&") else p.name for p in self.params]

    def parameter_types(self) -> str:
        """`(const double *, double *, int)`: what tells C++ overloads apart."""
        return "(" + ", ".join(p.spelling for p in self.params) + ")"

    def kernel_params(self) -> list[tuple[str, str]]:
        """The kernel the stub calls, as (declaration, argument) pairs: first the address of each
        returned value in the stub's `__adgen_out` (where the kernel stores it, or where the
        derivative code writes a struct), then the parameters, structs by their addresses."""
        out = []
        for f in self.fields:
            where = f"__adgen_out.{f.name}" if self.result_struct else "__adgen_out"
            out.append((declare(pointer_to(f.spelling), KERNEL_OUT + f.name), where if f.count > 1 else "&" + where))
        return out + [(p.kernel_declaration(), ("&" if p.by_value else "") + p.name) for p in self.params]


def shadow_names(name: str, width: int, prefix: str = "d_") -> list[str]:
    return [f"{prefix}{name}"] if width == 1 else [f"{prefix}{name}_{k}" for k in range(width)]


def signature(d: Derivation) -> Signature:
    n, dn = d.width, d.prefix
    params: list[Slot] = []
    fields: list[Slot] = []
    for p, act in zip(d.primal.params, d.activities):
        ffi, value = p.ctype.ffi, dict(by_value=p.ctype.by_value, fields=p.ctype.fields)
        params.append(Slot(p.name, p.ctype.declared, ffi=ffi, ctype=p.ctype, **value))
        what = "shadow" if d.mode.family is Mode.REVERSE else "tangent"
        if act in _SHADOWED:
            t = shadow_ctype(p.ctype) if d.mode.family is Mode.REVERSE else p.ctype
            names = shadow_names(p.name, n, dn)
            params += [Slot(s, t.declared, role=f"{what} of {p.name}" + (f", lane {k}" if n > 1 else ""), ffi=ffi,
                            ctype=t, **value) for k, s in enumerate(names)]
        elif act in _INTERLEAVED:
            t = _interleaved(p.ctype, d.mode)
            params.append(Slot(f"{dn}{p.name}", t.declared,
                               role=f"{what}s of {p.name}, {n} lanes interleaved" if n > 1 else f"{what} of {p.name}",
                               ffi=t.ffi, ctype=t))
        elif act is Activity.ACTIVE:
            fields.append(Slot(f"{dn}{p.name}", p.ctype.declared, n, ffi=ffi, ctype=p.ctype, **value))
    r = d.primal.returns
    rvalue = dict(ffi=r.ffi, by_value=r.by_value, fields=r.fields, ctype=r)
    if d.returns in (Activity.ACTIVE, Activity.ACTIVEONLY):
        params += [Slot(s, r.declared, role="seed: the adjoint of the return value" + (f", lane {k}" if n > 1 else ""),
                        **rvalue)
                   for k, s in enumerate(shadow_names("ret", n, dn))]
    head: list[Slot] = []
    if d.returns in (Activity.CONST, Activity.ACTIVE, Activity.DUAL):
        head.append(Slot("ret", r.declared, **rvalue))
    if d.returns in (Activity.DUAL, Activity.DUALONLY):
        head.append(Slot(f"{dn}ret", r.declared, n, **rvalue))
    return _signature(d, params, head + fields)


def _signature(d: Derivation, params: list[Slot], fields: list[Slot], part: str = "") -> Signature:
    name = d.name + (f"_{part}" if part else "")
    if not fields:
        returns, struct = "void", None
    elif len(fields) == 1 and fields[0].count == 1:
        returns, struct = fields[0].spelling, None
    else:
        returns = struct = f"{name}_result"
    return Signature(d, tuple(params), tuple(fields), returns, struct, part)


TAPE = Slot("tape", "void *", role="NAME_tape_size() bytes, 16-byte aligned, the caller's", ffi="ptr")
_PARTS = {
    "forward": "the forward sweep: runs {primal} and keeps on the tape what the reverse sweep needs",
    "reverse": "the reverse sweep: accumulates the gradients and releases what the tape holds",
    "free": "releases what a tape that is never reversed holds",
    "tape_size": "the bytes a tape takes, known when adgen builds",
}


def signatures(d: Derivation) -> list[Signature]:
    """The functions an entry makes: one, or in split mode four (specs/abi.md): the forward
    sweep (the parameters and shadows, then the tape), the reverse sweep (the tape, then the
    seeds; the gradients of active scalars), what releases a tape never reversed, and the
    tape's size."""
    whole = signature(d)
    if d.mode is not Mode.SPLIT:
        return [whole]
    seeds = [p for p in whole.params if p.role.startswith("seed")]
    tape = Slot(TAPE.name, TAPE.spelling, role=TAPE.role.replace("NAME", d.name), ffi=TAPE.ffi)
    size = Slot("ret", "size_t", ffi="ulong")
    return [_signature(d, [p for p in whole.params if p not in seeds] + [tape],
                       [f for f in whole.fields if f.name == "ret"], "forward"),
            _signature(d, [tape] + seeds, [f for f in whole.fields if f.name != "ret"], "reverse"),
            _signature(d, [tape], [], "free"),
            _signature(d, [], [size], "tape_size")]


def _interleaved(t: CType, mode: Mode) -> CType:
    if not t.is_pointer:  # a scalar dualv: a pointer to its N tangents
        return pointer_ctype(t)
    return shadow_ctype(t) if mode.family is Mode.REVERSE else t
