"""The glue between the C ABI and the derivative functions: for each derived function, the
kernel its stub calls (`__adgen_kernel_NAME(out, params…)`). The kernel gathers the C-level
shadows into the derivative code's form (`<N x T>` tangents, `<N x ptr>` lane pointers),
calls the derivative function, and stores the returned values through `out`."""

from __future__ import annotations

from adgen.frontend.abi import Signature
from adgen.frontend.diagnostics import AdgenError, error
from adgen.frontend.model import Activity
from adgen.frontend.render import KERNEL_PREFIX

from .builder import Builder, Declarations, V, local
from .forward import ForwardMode, Pattern
from .ir import PTR, Function, Module, Type, array, struct, vector
from .reverse import RevDerived, RevPattern, ReverseMode
from .shadows import INTERLEAVED, LANES

_DUAL = {Activity.DUAL, Activity.DUALONLY}
_DUP = {Activity.DUP, Activity.DUPONLY}


def kernel_name(sig: Signature) -> str:
    return "@" + KERNEL_PREFIX + sig.name


def check_primal(module: Module, sig: Signature, primal: str) -> Function:
    """The primal's IR must take the C parameters one to one (no by-value structs)."""
    d = sig.derivation
    fn = module.functions.get(primal)
    if fn is None or fn.declaration:
        raise AdgenError(error(f"'{d.primal.name}' is declared but not defined in the sources given to adgen build, "
                               f"so '{sig.name}' cannot be made: pass the file that defines it too", d.entry.name.span))
    by_value = [p.name for p in fn.params if "byval" in p.attrs or "sret" in p.attrs]
    if len(fn.params) != len(d.primal.params) or by_value or fn.ret.kind in ("struct", "array", "named"):
        raise AdgenError(error(f"'{d.primal.name}' passes or returns a struct by value, which adgen cannot "
                               f"differentiate yet; pass a pointer instead", d.entry.name.span))
    return fn


def _start(module: Module, decls: Declarations, sig: Signature) -> tuple[list[V], V | None, Builder]:
    """The kernel's parameters as the stub declares them (the result pointer apart) and a builder."""
    kdecl = module.functions[kernel_name(sig)]
    params = [V(p.type, local(f"k{i}")) for i, p in enumerate(kdecl.params)]
    out = params.pop(0) if sig.returns != "void" else None
    return params, out, Builder(decls, [])


def _finish(sig: Signature, params: list[V], out: V | None, b: Builder) -> str:
    head = f"define internal void {kernel_name(sig)}({', '.join(str(p) for p in ([out] if out else []) + params)}) {{"
    return "\n".join([head, "entry:", *b.lines, "  ret void", "}"])


def forward_kernel(mode: ForwardMode, decls: Declarations, sig: Signature, fn: Function) -> str:
    d = sig.derivation
    n = d.width
    params, out, b = _start(mode.module, decls, sig)
    primal_args, tangents, active = [], [], []
    slots = iter(zip(sig.params, params))
    kind = INTERLEAVED if any(act is Activity.DUALV and p.ctype.is_pointer
                              for p, act in zip(d.primal.params, d.activities)) else LANES
    for p, act in zip(d.primal.params, d.activities):
        _, value = next(slots)
        primal_args.append(value)
        if act in _DUAL:  # N separate tangents: a vector of them where the lanes go together
            lanes = [next(slots)[1] for _ in range(n)]
            tangents += [b.gather(lanes)] if kind == INTERLEAVED and not p.ctype.is_pointer else lanes
        elif act is Activity.DUALV:  # one tangent holding the N lanes: apart where they go apart
            (_, given) = next(slots)
            if p.ctype.is_pointer:
                tangents.append(given)
            else:
                lanes = b.load(vector(value.type, n), given)
                tangents += [lanes] if kind == INTERLEAVED else [b.extract(lanes, k) for k in range(n)]
        active.append(act is not Activity.CONST)
    derived = mode.derive(Pattern(fn.name, tuple(active), n, kind))
    call_args = ", ".join(str(a) for a in primal_args + tangents)
    call = f"call {derived.ret_type.text} {derived.name}({call_args})"
    result = b.value(derived.ret_type, call) if derived.ret_type.kind != "void" else b.emit(call)
    if out is not None:
        values: dict[str, V | list[V]] = {}
        if derived.returns_shadow:
            values["ret"] = b.value(fn.ret, f"extractvalue {result}, 0")
            parts = [b.value(t, f"extractvalue {result}, {k + 1}") for k, t in enumerate(derived.ret_type.elems[1:])]
            values["d_ret"] = parts[0] if len(parts) == 1 else parts
        else:
            values["ret"] = result
        _store_result(b, sig, out, values, fn, n)
    return _finish(sig, params, out, b)


def reverse_kernel(mode: ReverseMode, decls: Declarations, sig: Signature, fn: Function) -> tuple[str, RevDerived]:
    """Runs the augmented forward sweep then the reverse sweep, their record on the stack; also
    gives the derived pair it calls (several annotations may share one)."""
    d = sig.derivation
    n = d.width
    params, out, b = _start(mode.module, decls, sig)
    slots = iter(params)
    primal_args, shadow_args, active, memtypes = [], [], [], []
    kind = LANES
    for p, act in zip(d.primal.params, d.activities):
        primal_args.append(next(slots))
        if act in _DUP:
            shadow_args += [next(slots) for _ in range(n)]
        elif act is Activity.DUPV:
            kind = INTERLEAVED
            shadow_args.append(next(slots))
        active.append(act is not Activity.CONST)
        memtypes.append(p.ctype.element_float if act in _DUP | {Activity.DUPV} else "")
    ret_active = d.returns in (Activity.ACTIVE, Activity.ACTIVEONLY)
    seeds = [next(slots) for _ in range(n)] if ret_active else []
    if seeds and kind == INTERLEAVED:
        seeds = [b.gather(seeds)]
    returns = any(f.name == "ret" for f in sig.fields)
    derived = mode.derive(RevPattern(fn.name, tuple(active), ret_active, n, kind, tuple(memtypes),
                                     tuple(False for _ in active), False, returns))
    record = V(PTR, "null")
    if derived.record_size:
        record = b.value(PTR, f"alloca [{derived.record_size} x i8], align 16")
    aug_args = ", ".join(str(a) for a in primal_args + shadow_args + [record])
    primal = None
    if derived.aug_ret.kind == "void":
        b.emit(f"call void {derived.aug}({aug_args})")
    else:
        primal = b.value(derived.aug_ret, f"call {derived.aug_ret.text} {derived.aug}({aug_args})")
    rev_args = ", ".join(str(a) for a in primal_args + shadow_args + seeds + [record])
    grads = None
    if derived.rev_ret.kind == "void":
        b.emit(f"call void {derived.rev}({rev_args})")
    else:
        grads = b.value(derived.rev_ret, f"call {derived.rev_ret.text} {derived.rev}({rev_args})")
    if out is not None:
        values: dict[str, V | list[V]] = {}
        if primal is not None:
            values["ret"] = primal
        parts = 1 if kind == INTERLEAVED else n
        for k, i in enumerate(derived.scalars):
            lanes = [b.value(derived.rev_ret.elems[k * parts + j], f"extractvalue {grads}, {k * parts + j}")
                     for j in range(parts)]
            values[f"d_{d.primal.params[i].name}"] = lanes[0] if parts == 1 else lanes
        _store_result(b, sig, out, values, fn, n)
    return _finish(sig, params, out, b), derived


def _store_result(b: Builder, sig: Signature, out: V, values: dict[str, V], fn: Function, n: int) -> None:
    """Stores the named values in the C layout of the result (struct or single scalar)."""
    types = {"ret": fn.ret, "d_ret": fn.ret}
    for p, ir_param in zip(sig.derivation.primal.params, fn.params):
        types[f"d_{p.name}"] = ir_param.type
    field_types = [array(types[f.name], n) if f.count > 1 else types[f.name] for f in sig.fields]
    layout = struct(*field_types)
    i32 = Type("i32", "int", 32)
    for k, f in enumerate(sig.fields):
        value = values[f.name]
        where = out if sig.result_struct is None else b.gep(layout, out, V(i32, "0"), V(i32, str(k)))
        if isinstance(value, list):  # lanes apart: one element of the array each
            for j, lane in enumerate(value):
                b.store(lane, b.gep(field_types[k], where, V(i32, "0"), V(i32, str(j))) if j else where)
            continue
        if value.type.kind == "vector" and f.count == 1:
            value = b.extract(value, 0)
        b.store(value, where, max(1, types[f.name].bits // 8) if value.type.kind == "vector" else None)
