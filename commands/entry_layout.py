"""An entry of an `adgen.load` library as a pure function, which is what the framework bridges
(`adgen.jax`, `adgen.tensorflow`) call: its parameters fall into three kinds (`layout`): what
the call reads (arrays and float scalars), what it writes (shadows, and the tangents of shadows
in a derivative of a derivative: results, zeroed first, as adgen's derivatives add into them)
and integers (fixed when a framework traces a program). The return value's fields are results
after the written arrays. An array the C function may write (a pointer to non-const) is passed
a copy: a framework's arrays are not the function's to change."""

from __future__ import annotations

import math
from dataclasses import dataclass


FLOATS = {"double": ("double", "F64", "float64"), "float": ("float", "F32", "float32")}


@dataclass(frozen=True)
class Param:
    """One C parameter of an entry, as a bridge passes it."""
    name: str
    kind: str  # "in", "out" or "int"
    ctype: str  # the C type the handler passes: "double", "const double *", "int"...
    float: str = ""  # "double" or "float": the element type of an array or float scalar
    array: bool = False
    owner: str = ""  # an array's or scalar's primal parameter (itself, for a primal parameter)
    lanes: int = 1  # interleaved lanes (a width-N entry's shadows and tangents)
    copy: bool = False  # an array the C function may write into: passed a copy
    lane: int = -1  # a width-N entry's scalar of one lane (a scalar's tangent, a seed): which


@dataclass(frozen=True)
class Layout:
    """An entry as a pure function: its parameters, its return value's fields (name, float, count)."""
    entry: str
    symbol: str
    params: tuple[Param, ...]
    returns: tuple[tuple[str, str, int], ...]
    result_struct: str  # the C struct the entry returns, "" for a scalar

    @property
    def inputs(self) -> list[Param]:
        return [p for p in self.params if p.kind == "in"]

    @property
    def outputs(self) -> list[Param]:
        return [p for p in self.params if p.kind == "out"]

    @property
    def integers(self) -> list[Param]:
        return [p for p in self.params if p.kind == "int"]


_INTEGERS = {"int": "int", "uint": "unsigned int", "long": "long", "ulong": "unsigned long",
             "longlong": "long long", "ulonglong": "unsigned long long", "short": "short",
             "ushort": "unsigned short", "byte": "signed char", "ubyte": "unsigned char", "bool": "_Bool"}


class Unsupported(ValueError):
    """A parameter or return the bridge cannot pass (a struct, a pointer to integers...)."""


def layout(specs: dict, entry: str, primal: str) -> Layout:
    """How `entry` (a function of `specs`, the library's manifest, derived from `primal` at
    some depth) is called as a pure function."""
    spec = specs[entry]
    own = {p["name"]: p for p in specs[primal]["params"]}
    inner_shadows = _shadows_of_inner(specs, spec)
    params, outs = [], set()
    for p in spec["params"]:
        role, ffi = p["role"], p["ffi"]
        owner = role.split(" of ", 1)[1].split(",")[0] if " of " in role else p["name"]
        lanes = int(role.split(", ", 1)[1].split()[0]) if "lanes interleaved" in role else 1
        lane = int(role.rsplit(", lane ", 1)[1]) if ", lane " in role else -1
        if ffi in _INTEGERS and not role:
            params.append(Param(p["name"], "int", _INTEGERS[ffi]))
            continue
        element = ffi.removeprefix("ptr:")
        if element not in FLOATS:
            raise Unsupported(f"'{p['name']}' of {entry} is passed as {ffi}: the framework bridges pass arrays and "
                              "scalars of float or double, and integers")
        array = ffi.startswith("ptr:")
        writes = role.startswith("shadow") or p["name"] in inner_shadows or \
            (role.startswith("tangent") and owner in outs)
        if writes:
            outs.add(p["name"])
            owner = inner_shadows.get(owner, owner) if not role.startswith("shadow") else owner
        primal_param = own.get(owner, {})
        copy = array and not writes and not primal_param.get("element", {}).get("const", False)
        ctype = FLOATS[element][0]
        params.append(Param(p["name"], "out" if writes else "in",
                            (ctype + " *" if writes or copy else f"const {ctype} *") if array else ctype,
                            element, array, owner if owner in own else "", lanes, copy, lane))
    returns = spec["returns"]
    fields = returns.get("fields") or ([returns] if returns["ffi"] != "void" else [])
    out = []
    for f in fields:
        if f["ffi"] not in FLOATS:
            raise Unsupported(f"{entry} returns {f.get('name', 'its value')} as {f['ffi']}: the framework bridges take "
                              "float or double results")
        out.append((f.get("name", "ret"), f["ffi"], f.get("count", 1)))
    return Layout(entry, spec.get("symbol", entry), tuple(params), tuple(out), returns.get("struct", ""))


def _shadows_of_inner(specs: dict, spec: dict) -> dict[str, str]:
    """For a derivative of a derivative: the inner entry's shadow parameters (plain parameters
    here, which the call writes), each with its primal."""
    inner = specs.get(spec.get("of", ""), {})
    if inner.get("kind") != "derived":
        return {}
    return {p["name"]: p["role"].split(" of ", 1)[1].split(",")[0]
            for p in inner["params"] if p["role"].startswith("shadow")}


def output_shape(p: Param, shapes: dict) -> tuple:
    """The shape of an array the call writes: its primal's, or its primal's elements times the
    lanes interleaved."""
    return (int(math.prod(shapes[p.owner])) * p.lanes,) if p.lanes > 1 else tuple(shapes[p.owner])
