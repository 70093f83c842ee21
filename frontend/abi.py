"""The generated C ABI (specs/abi.md): the parameters a derived function takes and the values
it returns, computed from a checked Derivation. Templates only print what this decides."""

from __future__ import annotations

from dataclasses import dataclass

from .ctype import CType, declare, drop_const
from .model import Activity, Derivation, Mode

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

    def declaration(self) -> str:
        return declare(self.spelling, self.name + (f"[{self.count}]" if self.count > 1 else ""))


@dataclass(frozen=True)
class Signature:
    derivation: Derivation
    params: tuple[Slot, ...]
    fields: tuple[Slot, ...]  # the returned values, in order
    returns: str  # "void", a scalar C type, or the result struct's name
    result_struct: str | None

    @property
    def name(self) -> str:
        return self.derivation.name

    def prototype(self) -> str:
        params = ", ".join(p.declaration() for p in self.params) or "void"
        return declare(self.returns, f"{self.name}({params})")


def shadow_names(name: str, width: int) -> list[str]:
    return [f"d_{name}"] if width == 1 else [f"d_{name}_{k}" for k in range(width)]


def signature(d: Derivation) -> Signature:
    n = d.width
    params: list[Slot] = []
    fields: list[Slot] = []
    for p, act in zip(d.primal.params, d.activities):
        ffi = p.ctype.ffi
        params.append(Slot(p.name, p.ctype.declared, ffi=ffi))
        what = "shadow" if d.mode is Mode.REVERSE else "tangent"
        if act in _SHADOWED:
            spelling = p.ctype.declared_shadow if d.mode is Mode.REVERSE else p.ctype.declared
            names = shadow_names(p.name, n)
            params += [Slot(s, spelling, role=f"{what} of {p.name}" + (f", lane {k}" if n > 1 else ""), ffi=ffi)
                       for k, s in enumerate(names)]
        elif act in _INTERLEAVED:
            params.append(Slot(f"d_{p.name}", _interleaved(p.ctype, d.mode),
                               role=f"{what}s of {p.name}, {n} lanes interleaved" if n > 1 else f"{what} of {p.name}",
                               ffi=ffi if p.ctype.is_pointer else f"ptr:{ffi}"))
        elif act is Activity.ACTIVE:
            fields.append(Slot(f"d_{p.name}", p.ctype.declared, n, ffi=ffi))
    r = d.primal.returns
    if d.returns in (Activity.ACTIVE, Activity.ACTIVEONLY):
        params += [Slot(s, r.declared, role="seed: the adjoint of the return value" + (f", lane {k}" if n > 1 else ""),
                        ffi=r.ffi)
                   for k, s in enumerate(shadow_names("ret", n))]
    head: list[Slot] = []
    if d.returns in (Activity.CONST, Activity.ACTIVE, Activity.DUAL):
        head.append(Slot("ret", r.declared, ffi=r.ffi))
    if d.returns in (Activity.DUAL, Activity.DUALONLY):
        head.append(Slot("d_ret", r.declared, n, ffi=r.ffi))
    fields = head + fields
    if not fields:
        returns, struct = "void", None
    elif len(fields) == 1 and fields[0].count == 1:
        returns, struct = fields[0].spelling, None
    else:
        returns = struct = f"{d.name}_result"
    return Signature(d, tuple(params), tuple(fields), returns, struct)


def _interleaved(t: CType, mode: Mode) -> str:
    if not t.is_pointer:  # a scalar dualv: a pointer to its N tangents
        return f"const {drop_const(t.declared)} *"
    return t.declared_shadow if mode is Mode.REVERSE else t.declared
