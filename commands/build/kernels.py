"""The glue between the C ABI and the derivative functions: for each derived function, the
kernel its stub calls (`__adgen_kernel_NAME(&out.field…, params…)`). The kernel gathers the
C-level shadows into the derivative code's form (`<N x T>` tangents, `<N x ptr>` lane
pointers), calls the derivative function, and stores the returned values through their
addresses. Structs by value arrive by address and are memory to the derivative code: a
gradient or tangent of a struct is written in place, in the stub's result."""

from __future__ import annotations

from adgen.frontend.abi import Signature
from adgen.base.diagnostics import AdgenError, error
from adgen.frontend.model import Activity
from adgen.base.naming import KERNEL_PREFIX

from adgen.ir_ad.ir.builder import Builder, Declarations, V, local
from adgen.ir_ad.forward.mode import ForwardMode, Pattern
from adgen.ir_ad.ir import I1, I8, I64, PTR, VOID, Function, Module, Type, vector
from adgen.ir_ad.reverse.mode import ReverseMode
from adgen.ir_ad.reverse.types import RevDerived, RevPattern
from adgen.ir_ad.shadows import INTERLEAVED, LANES

_DUAL = {Activity.DUAL, Activity.DUALONLY}
_DUP = {Activity.DUP, Activity.DUPONLY}


def kernel_name(sig: Signature) -> str:
    return "@" + KERNEL_PREFIX + sig.name


def check_primal(module: Module, sig: Signature, primal: str) -> Function:
    """The primal's IR must take the C parameters one to one: a function passing structs by
    value is differentiated through its wrapper taking them by address (the result last)."""
    d = sig.derivation
    fn = module.functions.get(primal)
    if fn is None or fn.declaration:
        raise AdgenError(error(f"'{d.primal.name}' is declared but not defined in the sources given to adgen build, "
                               f"so '{sig.name}' cannot be made: pass the file that defines it too", d.entry.name.span))
    expected = len(d.primal.params) + (1 if d.primal.returns.by_value else 0)
    if len(fn.params) != expected or fn.ret.kind in ("struct", "array", "named") or \
            any("byval" in p.attrs or "sret" in p.attrs for p in fn.params):
        raise AdgenError(error(f"'{d.primal.name}' passes a parameter in a way adgen does not recognize "
                               f"(its IR takes {len(fn.params)} parameters, not {expected})", d.entry.name.span))
    return fn


class _Kernel:
    """The kernel's parameters as the stub declares them (specs/abi.md): the address of each
    returned value, then the derived function's parameters (structs by address)."""

    def __init__(self, module: Module, decls: Declarations, sig: Signature):
        self.sig = sig
        kdecl = module.functions[kernel_name(sig)]
        self.params = [V(p.type, local(f"k{i}")) for i, p in enumerate(kdecl.params)]
        self.out = dict(zip((f.name for f in sig.fields), self.params))
        self.slots = iter(self.params[len(sig.fields):])
        self.b = Builder(decls, [])

    def take(self, count: int = 1) -> list[V]:
        return [next(self.slots) for _ in range(count)]

    def result_memory(self, field: str, size: int, lane: int = 0) -> V:
        """Where a struct-typed result is written: its field of the result, lane `lane` of an
        array (structs of `size` bytes), or scratch memory for a result nobody asked for."""
        if field not in self.out:
            return self.b.value(PTR, f"alloca [{size} x i8], align 16")
        base = self.out[field]
        return self.b.gep(I8, base, V(I64, str(lane * size))) if lane else base

    def store(self, values: dict[str, V | list[V]], types: dict[str, Type]) -> None:
        """Stores the returned scalars through their addresses (lanes into the field's array)."""
        b = self.b
        for f in self.sig.fields:
            if f.by_value:  # written in place by the derivative code
                continue
            value, where = values[f.name], self.out[f.name]
            if isinstance(value, list):  # lanes apart: one element of the array each
                for j, lane in enumerate(value):
                    b.store(lane, b.gep(types[f.name], where, V(I64, str(j))) if j else where)
                continue
            if value.type.kind == "vector" and f.count == 1:
                value = b.extract(value, 0)
            b.store(value, where)

    def text(self) -> str:
        head = f"define internal void {kernel_name(self.sig)}({', '.join(str(p) for p in self.params)}) {{"
        return "\n".join([head, "entry:", *self.b.lines, "  ret void", "}"])


def _scalar_types(sig: Signature, fn: Function) -> dict[str, Type]:
    dn = sig.derivation.prefix
    types = {"ret": fn.ret, f"{dn}ret": fn.ret}
    for p, ir_param in zip(sig.derivation.primal.params, fn.params):
        types[f"{dn}{p.name}"] = ir_param.type
    return types


def forward_kernel(mode: ForwardMode, decls: Declarations, sig: Signature, fn: Function) -> str:
    d = sig.derivation
    n = d.width
    k = _Kernel(mode.module, decls, sig)
    b = k.b
    primal_args, tangents, active = [], [], []
    kind = INTERLEAVED if any(act is Activity.DUALV and p.ctype.is_pointer
                              for p, act in zip(d.primal.params, d.activities)) else LANES
    for p, act in zip(d.primal.params, d.activities):
        (value,) = k.take()
        primal_args.append(value)
        if act in _DUAL:  # N separate tangents: a vector of them where the lanes go together
            lanes = k.take(n)
            scalar = not (p.ctype.is_pointer or p.ctype.by_value)
            tangents += [b.gather(lanes)] if kind == INTERLEAVED and scalar else lanes
        elif act is Activity.DUALV:  # one tangent holding the N lanes: apart where they go apart
            (given,) = k.take()
            if p.ctype.is_pointer:
                tangents.append(given)
            else:
                lanes = b.load(vector(value.type, n), given)
                tangents += [lanes] if kind == INTERLEAVED else [b.extract(lanes, j) for j in range(n)]
        active.append(act is not Activity.CONST)
    r = d.primal.returns
    if r.by_value:  # the wrapper's last parameter: where the struct goes, its tangents beside
        primal_args.append(k.result_memory("ret", r.size))
        dual = d.returns in _DUAL
        tangents += [k.result_memory(f"{d.prefix}ret", r.size, j) for j in range(n)] if dual else []
        active.append(dual)
    derived = mode.derive(Pattern(fn.name, tuple(active), n, kind))
    call_args = ", ".join(str(a) for a in primal_args + tangents)
    call = f"call {derived.ret_type.text} {derived.name}({call_args})"
    result = b.value(derived.ret_type, call) if derived.ret_type.kind != "void" else b.emit(call)
    values: dict[str, V | list[V]] = {}
    if derived.returns_shadow:
        values["ret"] = b.value(fn.ret, f"extractvalue {result}, 0")
        parts = [b.value(t, f"extractvalue {result}, {j + 1}") for j, t in enumerate(derived.ret_type.elems[1:])]
        values[f"{d.prefix}ret"] = parts[0] if len(parts) == 1 else parts
    elif result is not None:
        values["ret"] = result
    k.store(values, _scalar_types(sig, fn))
    return k.text()


def _reverse_args(k: _Kernel, d) -> tuple[list[V], list[V], list[bool], list[str], str]:
    """The primal arguments and shadows the kernel's parameters give, in the derived pair's
    order, which arguments are active, the float type of each shadowed one's memory, the layout."""
    n = d.width
    primal_args, shadow_args = [], []
    for p, act in zip(d.primal.params, d.activities):
        primal_args += k.take()
        if act in _DUP:
            shadow_args += k.take(n)
        elif act is Activity.DUPV:
            shadow_args += k.take()
        elif act is Activity.ACTIVE and p.ctype.by_value:  # its gradient accumulates in the result
            shadow_args += [k.result_memory(f"{d.prefix}{p.name}", p.ctype.size, j) for j in range(n)]
    return (primal_args, shadow_args, [act is not Activity.CONST for act in d.activities], _memtypes(d),
            INTERLEAVED if Activity.DUPV in d.activities else LANES)


def _memtypes(d) -> list[str]:
    """Per parameter, the float type of the memory its shadow covers (when only one)."""
    return [p.ctype.element_float if act in _DUP | {Activity.DUPV} or p.ctype.by_value else ""
            for p, act in zip(d.primal.params, d.activities)]


def _discarded(d) -> tuple[bool, ...]:
    """Per parameter, whether the caller discards its memory's primal values (`duponly`)."""
    return tuple(act is Activity.DUPONLY for act in d.activities)


def _store_gradients(k: _Kernel, d, derived: RevDerived, grads: V | None, kind: str, values: dict) -> None:
    parts = 1 if kind == INTERLEAVED else d.width
    for j, i in enumerate(derived.scalars):
        lanes = [k.b.value(derived.rev_ret.elems[j * parts + m], f"extractvalue {grads}, {j * parts + m}")
                 for m in range(parts)]
        values[f"{d.prefix}{d.primal.params[i].name}"] = lanes[0] if parts == 1 else lanes


def reverse_kernel(mode: ReverseMode, decls: Declarations, sig: Signature, fn: Function) -> tuple[str, RevDerived]:
    """Runs the augmented forward sweep then the reverse sweep, their record on the stack; also
    gives the derived pair it calls (several annotations may share one)."""
    d = sig.derivation
    n = d.width
    k = _Kernel(mode.module, decls, sig)
    b = k.b
    primal_args, shadow_args, active, memtypes, kind = _reverse_args(k, d)
    ret_active = d.returns in (Activity.ACTIVE, Activity.ACTIVEONLY)
    seeds = k.take(n) if ret_active else []
    r = d.primal.returns
    if r.by_value:  # the wrapper's last parameter, whose shadow holds the seed
        primal_args.append(k.result_memory("ret", r.size))
        shadow_args += seeds
        active.append(ret_active)
        memtypes.append(r.element_float)
        seeds, ret_active = [], False
    if seeds and kind == INTERLEAVED:
        seeds = [b.gather(seeds)]
    returns = any(f.name == "ret" for f in sig.fields) and not r.by_value
    if d.budget is not None:  # its loops checkpointed (ir_ad/reverse/checkpoint/)
        fn = mode.within_budget(fn, d.budget, d.sizes)
    derived = mode.derive(RevPattern(fn.name, tuple(active), ret_active, n, kind, tuple(memtypes),
                                     tuple(False for _ in active), False, returns,
                                     outliving=tuple(True for _ in active),  # the caller's memory
                                     budget=d.budget or 0, logged=mode.log, discarded=_discarded(d)))
    record = V(PTR, "null")
    if derived.record_size:
        record = b.value(PTR, f"alloca [{derived.record_size} x i8], align 16")
    aug_args = ", ".join(str(a) for a in primal_args + shadow_args + [record])
    values: dict[str, V | list[V]] = {}
    if derived.stacks:  # the sweeps' storage on a stack (templates/runtime.ll.j2)
        b.emit('call void @"adgen.arena.enter"()')
    saved_log = b.value(PTR, "alloca [2 x ptr], align 8") if derived.pattern.logged else None  # a gradient of its own
    if saved_log is not None:
        b.call('@"adgen.log.enter"', VOID, [saved_log])
    if derived.aug_ret.kind == "void":
        b.emit(f"call void {derived.aug}({aug_args})")
    else:
        values["ret"] = b.value(derived.aug_ret, f"call {derived.aug_ret.text} {derived.aug}({aug_args})")
    rev_args = ", ".join(str(a) for a in primal_args + shadow_args + seeds + [record])
    grads = None
    if derived.rev_ret.kind == "void":
        b.emit(f"call void {derived.rev}({rev_args})")
    else:
        grads = b.value(derived.rev_ret, f"call {derived.rev_ret.text} {derived.rev}({rev_args})")
    if saved_log is not None:
        b.call('@"adgen.log.leave"', VOID, [saved_log])
    if derived.stacks:
        b.emit('call void @"adgen.arena.leave"()')
    _store_gradients(k, d, derived, grads, kind, values)
    k.store(values, _scalar_types(sig, fn))
    return k.text(), derived


def split_kernel(mode: ReverseMode, decls: Declarations, sig: Signature, fn: Function) -> tuple[str, RevDerived]:
    """One of split mode's four functions (specs/abi.md). The tape is the caller's memory: a
    state word (1 while it holds a forward sweep's results), the forward sweep's arguments and
    shadows (8 bytes each), then the record, 16-byte aligned. The derived pair assumes the
    caller may change any memory between the two sweeps; what it allocates is released by the
    reverse sweep, or by the free function, which walks the reverse sweep's control flow only."""
    d = sig.derivation
    n = d.width
    k = _Kernel(mode.module, decls, sig)
    b = k.b
    kind = INTERLEAVED if Activity.DUPV in d.activities else LANES
    shadows = [n if act in _DUP else 1 if act is Activity.DUPV else 0 for act in d.activities]
    ret_active = d.returns in (Activity.ACTIVE, Activity.ACTIVEONLY)
    if d.budget is not None:  # its loops checkpointed (ir_ad/reverse/checkpoint/)
        fn = mode.within_budget(fn, d.budget, d.sizes)
    derived = mode.derive(RevPattern(fn.name, tuple(a is not Activity.CONST for a in d.activities), ret_active, n,
                                     kind, tuple(_memtypes(d)), tuple(True for _ in fn.params), True,
                                     d.returns is not Activity.ACTIVEONLY, budget=d.budget or 0, logged=mode.log,
                                     discarded=_discarded(d)))
    saved = _saved(fn, derived)
    record_at = _record_at(saved)
    if sig.part == "tape_size":
        b.store(V(I64, str(tape_size(fn, derived))), k.out["ret"])
        return k.text(), derived
    args = []
    if sig.part == "forward":  # the C order (each parameter, then its shadows) to the derived pair's
        given = [(k.take()[0], k.take(count)) for count in shadows]
        args = [value for value, _ in given] + [x for _, lanes in given for x in lanes]
    (tape,) = k.take()
    slots = [b.gep(I8, tape, V(I64, str(8 + 8 * j))) for j in range(len(saved))]
    record = b.gep(I8, tape, V(I64, str(record_at))) if derived.record_size else V(PTR, "null")
    values: dict = {}
    if sig.part == "forward":
        b.store(V(I64, "1"), tape, 8)
        for value, at in zip(args, slots):
            b.store(value, at, 8)
        call = f"call {derived.aug_ret.text} {derived.aug}({', '.join(str(a) for a in args + [record])})"
        if derived.aug_ret.kind == "void":
            b.emit(call)
        else:
            values["ret"] = b.value(derived.aug_ret, call)
        k.store(values, _scalar_types(sig, fn))
        return k.text(), derived
    args = [b.load(t, at, 8) for t, at in zip(saved, slots)]
    if sig.part == "reverse":
        seeds = k.take(n) if ret_active else []
        if seeds and kind == INTERLEAVED:
            seeds = [b.gather(seeds)]
        call = f"call {derived.rev_ret.text} {derived.rev}({', '.join(str(a) for a in args + seeds + [record])})"
        grads = b.value(derived.rev_ret, call) if derived.rev_ret.kind != "void" else b.emit(call)
        _store_gradients(k, d, derived, grads, kind, values)
        b.store(V(I64, "0"), tape, 8)
        k.store(values, _scalar_types(sig, fn))
        return k.text(), derived
    held = b.value(I1, f"icmp ne i64 {b.load(I64, tape, 8).ref}, 0")  # "free": only a tape still holding
    b.emit(f"br {held}, label %release, label %done")
    b.lines.append("release:")
    b.emit(f"call void {derived.free}({', '.join(str(a) for a in args + [record])})")
    b.store(V(I64, "0"), tape, 8)
    b.emit("br label %done")
    b.lines.append("done:")
    return k.text(), derived


def _saved(fn: Function, derived: RevDerived) -> list[Type]:
    """What a split-mode tape keeps of the forward sweep's arguments: the derived pair's
    arguments, in its order (the parameters, then the shadows of the pointers with one)."""
    p = derived.pattern
    parts = p.width if p.kind == LANES else 1
    shadows = sum(parts for q, on in zip(fn.params, p.active) if on and q.type.kind == "ptr")
    return [q.type for q in fn.params] + [PTR] * shadows


def _record_at(saved: list[Type]) -> int:
    """Where the record starts on a tape: after the state word and the saved arguments."""
    return -(-(8 + 8 * len(saved)) // 16) * 16


def tape_size(fn: Function, derived: RevDerived) -> int:
    """The bytes of a split-mode entry's tape (its NAME_tape_size())."""
    return _record_at(_saved(fn, derived)) + derived.record_size
