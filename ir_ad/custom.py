"""Derivatives written by hand in Enzyme's conventions, for `adgen cc`: a function registered
with `__enzyme_register_derivative_F = {f, df}` (forward mode) or `__enzyme_register_gradient_F
= {f, augmented, gradient}` (reverse mode) is never differentiated; the derived functions both
modes call for it are thin wrappers around the user's, in adgen's internal conventions (the
`Derived` of forward/derived.py, the `RevDerived` pair of reverse/types.py), the tape of the augmented
function kept in the caller's record.

Enzyme's conventions, as its integration tests use them: after each floating or pointer
parameter of f comes its shadow in forward mode, and after each pointer parameter its shadow
in reverse mode (floating parameters are active: their gradients come back from `gradient`).
`df` returns { f's result, its tangent } (nothing for a void f). `augmented` returns the tape
(any scalar), { tape, f's result }, f's result alone, or nothing; f itself gives the result
where `augmented` does not. `gradient` takes the parameters, then the adjoint of a floating
result, then the tape, and returns the gradients of f's floating parameters: one value, a
struct of them in order, or nothing.

adgen's own convention (`@derivative` with `dup` pointers, `ReverseByHand`): one function G with
the reverse-mode ABI of abi.md; the augmented forward sweep calls f itself, the reverse sweep
calls G (through C glue that stores the gradients of active scalars through pointers) with f's
arguments, their shadows and the seed. G reads f's memory then, so a call whose memory may be
overwritten between the two sweeps is refused (`reverse_refusal`): adgen does not know how much
memory f reads, so it cannot keep a copy."""

from __future__ import annotations

from dataclasses import dataclass

from adgen.ir_ad.ir.builder import local
from adgen.ir_ad.mpi import LANES_RULE, RECORD, rule_names
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.shadows import INTERLEAVED, LANES
from adgen.ir_ad.ir import VOID, Function, Instruction, Module, Type, struct


@dataclass(frozen=True)
class ReverseByHand:
    """A reverse derivative written by hand in adgen's own ABI (`@derivative` with dup pointers)."""

    glue: str  # IR name of the C function calling it (lowering.c.j2)
    name: str  # its C name, for messages
    activities: tuple[str, ...]  # per parameter of f: "const", "active" or "dup"
    params: tuple[str, ...]  # f's parameter names, for messages
    seeded: bool  # it takes a seed: f's result is active


@dataclass(frozen=True)
class HandDerivatives:
    """The derivatives written by hand of one function (IR names, "" where none is given)."""

    function: str
    forward: str = ""
    augmented: str = ""
    gradient: str = ""
    reverse: ReverseByHand | None = None
    communication: tuple[int, ...] | None = None  # MPI's: the positions of the buffers its rules take (mpi.py)

    @property
    def reverses(self) -> bool:
        """Whether reverse mode calls the user's code for it (or MPI's rules)."""
        return bool(self.gradient) or self.reverse is not None or self.communication is not None

    @property
    def forwards(self) -> bool:
        """Whether forward mode calls a wrapper for it (the user's derivative, or MPI's rule)."""
        return bool(self.forward) or self.communication is not None


@dataclass(frozen=True)
class FixedRecord:
    """The record of a pair of wrappers: the tape the augmented function returned, or nothing."""

    record_size: int


def _fail(fn: Function, what: str, inst: Instruction | None = None) -> Unsupported:
    return Unsupported(fn.name, inst, what)


def _user(module: Module, name: str, custom: HandDerivatives, what: str) -> Function:
    user = module.functions.get(name)
    if user is None:
        raise _fail(module.functions[custom.function], f"the {what} registered for it ('{name.lstrip('@')}'), "
                                                         "which the file does not declare")
    return user


def _arguments(fn: Function, active: tuple[bool, ...], shadows: dict[int, list[str]], floats_too: bool,
               what: str) -> list[str]:
    """The user function's arguments: each parameter, then its shadow where the convention has
    one (pointers; floats too in forward mode)."""
    out = []
    for i, p in enumerate(fn.params):
        out.append(f"{p.type.text} {p.name}")
        if p.type.kind == "ptr" or (floats_too and p.type.kind == "float"):
            if i in shadows:
                out += [f"{p.type.text} {s}" for s in shadows[i]]
            elif p.type.kind == "float":
                out.append(f"{p.type.text} 0.0")
            else:
                raise _fail(fn, f"a call with a constant pointer as parameter {i + 1}, where the {what} written by "
                                "hand takes its shadow")
    return out


def _check_arity(fn: Function, user: Function, args: list[str], what: str) -> None:
    if len(user.params) != len(args):
        raise _fail(fn, f"the {what} written by hand, '{user.name.lstrip('@')}', which takes {len(user.params)} "
                        f"parameters where Enzyme's convention for '{fn.name.lstrip('@')}' gives {len(args)}")


def forward_wrapper(module: Module, custom: HandDerivatives, fn: Function, name: str, active: tuple[bool, ...],
                    width: int, kind: str = LANES) -> tuple[str, Type, bool]:
    """A forward-mode derived function of `fn` calling `df`: its text, return type, and whether
    it returns a tangent of the result (`kind`: how a width above 1 lays its tangents out)."""
    if custom.communication is not None:
        return communication_forward(fn, custom.communication, name, active, width, kind), fn.ret, False
    if width != 1:
        raise _fail(fn, "a derivative written by hand at width > 1 (Enzyme's convention takes one shadow each)")
    user = _user(module, custom.forward, custom, "derivative")
    tangents = {i: [local(bare_name(p.name) + "'")] for i, (p, on) in enumerate(zip(fn.params, active)) if on}
    args = _arguments(fn, active, tangents, True, "derivative")
    _check_arity(fn, user, args, "derivative")
    params = [f"{p.type.text} {p.name}" for p in fn.params] + \
        [f"{p.type.text} {tangents[i][0]}" for i, p in enumerate(fn.params) if i in tangents]
    returns_tangent = fn.ret.kind == "float"
    ret = struct(fn.ret, fn.ret) if returns_tangent else fn.ret
    body = [f"define internal {ret.text} {name}({', '.join(params)}) {{", "entry:"]
    call = f"call {user.ret.text} {user.name}({', '.join(args)})"
    if user.ret == ret:
        body += [f"  %r = {call}", f"  ret {ret.text} %r"] if ret.kind != "void" else [f"  {call}", "  ret void"]
    elif returns_tangent and user.ret == fn.ret:  # the tangent alone: f gives the result
        primal = ", ".join(f"{p.type.text} {p.name}" for p in fn.params)
        body += [f"  %t = {call}", f"  %p = call {fn.ret.text} {fn.name}({primal})",
                 f"  %a = insertvalue {ret.text} poison, {fn.ret.text} %p, 0",
                 f"  %b = insertvalue {ret.text} %a, {fn.ret.text} %t, 1", f"  ret {ret.text} %b"]
    else:
        raise _fail(fn, f"the derivative written by hand, '{user.name.lstrip('@')}', which returns "
                        f"'{user.ret.text}' where Enzyme's convention gives '{ret.text}'")
    return "\n".join(body + ["}"]), ret, returns_tangent


@dataclass(frozen=True)
class ReversePair:
    aug: str
    rev: str
    free: str
    aug_ret: Type
    rev_ret: Type
    scalars: list[int]
    record: FixedRecord


def _communication_refusal(custom: HandDerivatives, width: int) -> str | None:
    if custom.communication is not None and width != 1:
        return (f"MPI's '{bare_name(custom.function)}' in a reverse derivative of width {width} (reverse mode "
                "differentiates MPI's calls one adjoint at a time; forward mode takes any width)")
    return None


def forward_refusal(module: Module, callee: str) -> str | None:
    """Why forward mode cannot differentiate a call to `callee`: when its derivative written by
    hand is reverse mode's (of arrays), forward mode of those is not built. (MPI's calls take any
    width: communication_forward.)"""
    custom = module.custom.get(callee)
    if custom is None or custom.reverse is None or custom.forward:
        return None
    return (f"a call to '{bare_name(callee)}' in forward mode, whose derivative written by hand "
            f"('{custom.reverse.name}') is a reverse derivative of arrays (forward mode of those is not built)")


def reverse_refusal(module: Module, pattern) -> str | None:
    """Why reverse mode cannot call the derivative of arrays written by hand for a call with
    this pattern (see RevPattern), or None: a width other than 1, derivatives flowing into a
    parameter it takes as const, a dup pointer without a shadow, a result it takes no seed for,
    or memory of the call that may be overwritten before the reverse sweep (G reads it then)."""
    custom = module.custom.get(pattern.function)
    if custom is not None and (refused := _communication_refusal(custom, pattern.width)):
        return refused
    if custom is None or custom.reverse is None:
        return None
    hand, f = custom.reverse, bare_name(pattern.function)
    said = f"a call to '{f}', whose derivative written by hand ('{hand.name}')"
    if pattern.width != 1:
        return f"{said} takes one shadow per pointer, at width {pattern.width} (batches of those are not built)"
    for name, activity, on in zip(hand.params, hand.activities, pattern.active):
        if on and activity == "const":
            return f"{said} takes '{name}' as const, but a derivative flows into it here"
        if not on and activity == "dup":
            return (f"{said} takes a shadow of '{name}', but no derivative flows through it here (give it a "
                    f"shadow, or copy it into memory that has one)")
    if pattern.ret_active and not hand.seeded:
        return f"{said} takes no seed, but a derivative flows from its result here"
    params = module.functions[pattern.function].params
    for name, p, over in zip(hand.params, params, pattern.overwritten):
        if over and p.type.kind == "ptr":
            return (f"{said} reads '{name}' in the reverse sweep, but the memory it points to may be overwritten "
                    f"after the call (adgen keeps no copy: it cannot know how much of it '{f}' reads; pass "
                    f"memory that nothing writes afterwards)")
    return None


def adgen_reverse_wrappers(fn: Function, hand: ReverseByHand, names: tuple[str, str, str], pattern
                           ) -> tuple[list[str], ReversePair]:
    """The pair for `fn` with a reverse derivative of arrays written by hand (checked by
    `reverse_refusal`): `aug` calls `fn`, `rev` calls the glue with the arguments, their shadows,
    the seed (0 where the result is not active here) and a slot per active scalar, whose
    gradients it returns for the parameters active at this call."""
    aug_name, rev_name, free_name = names
    shadows = {i: local(bare_name(p.name) + "'") for i, (p, on) in enumerate(zip(fn.params, pattern.active))
               if on and p.type.kind == "ptr"}
    params = [f"{p.type.text} {p.name}" for p in fn.params] + [f"ptr {shadows[i]}" for i in sorted(shadows)]
    primal = ", ".join(f"{p.type.text} {p.name}" for p in fn.params)
    aug_ret = fn.ret if pattern.ret_needed and fn.ret.kind != "void" else VOID
    call = f"call {fn.ret.text} {fn.name}({primal})"
    returned = [f"  %r = {call}", f"  ret {fn.ret.text} %r"] if aug_ret.kind != "void" else [f"  {call}", "  ret void"]
    aug = [f"define internal {aug_ret.text} {aug_name}({', '.join(params + ['ptr %rec'])}) {{", "entry:", *returned,
           "}"]
    slots = [i for i, a in enumerate(hand.activities) if a == "active"]
    scalars = [i for i in slots if pattern.active[i]]
    rev_ret = struct(*[fn.params[i].type for i in scalars]) if scalars else VOID
    seed = [f"{fn.ret.text} %seed"] if pattern.ret_active else []
    args = []
    for i, p in enumerate(fn.params):
        args.append(f"{p.type.text} {p.name}")
        if i in shadows:
            args.append(f"ptr {shadows[i]}")
    if hand.seeded:
        args.append(seed[0] if seed else f"{fn.ret.text} 0.0")
    rev = [f"define internal {rev_ret.text} {rev_name}({', '.join(params + seed + ['ptr %rec'])}) {{", "entry:"]
    rev += [f"  %slot{i} = alloca {fn.params[i].type.text}" for i in slots]
    rev.append(f"  call void {hand.glue}({', '.join(args + [f'ptr %slot{i}' for i in slots])})")
    out = "poison"
    for k, i in enumerate(scalars):
        t = fn.params[i].type.text
        rev += [f"  %g{k} = load {t}, ptr %slot{i}", f"  %o{k} = insertvalue {rev_ret.text} {out}, {t} %g{k}, {k}"]
        out = f"%o{k}"
    rev += [f"  ret {rev_ret.text} {out}" if scalars else "  ret void", "}"]
    free = [f"define internal void {free_name}({', '.join(params + ['ptr %rec'])}) {{", "entry:", "  ret void", "}"]
    pair = ReversePair(aug_name, rev_name, free_name, aug_ret, rev_ret, scalars, FixedRecord(0))
    return ["\n".join(aug), "\n".join(rev), "\n".join(free)], pair


def reverse_wrappers(module: Module, custom: HandDerivatives, fn: Function, names: tuple[str, str, str], pattern
                     ) -> tuple[list[str], ReversePair]:
    """The augmented forward sweep, reverse sweep and release of `fn` as adgen's reverse mode
    calls them (see ReverseMode.aug_params and rev_params), calling the user's pair."""
    if custom.communication is not None:
        return communication_reverse(fn, custom.communication, names, pattern)
    if custom.reverse is not None:  # (a call was checked at the call: this is an entry of f itself, split mode's)
        refused = reverse_refusal(module, pattern)
        if refused is not None:
            raise _fail(fn, refused)
        return adgen_reverse_wrappers(fn, custom.reverse, names, pattern)
    if pattern.width != 1:
        raise _fail(fn, "a gradient written by hand at width > 1 (Enzyme's convention takes one shadow each)")
    if pattern.ret_shadow:
        raise _fail(fn, "a gradient written by hand of a function returning a pointer with a shadow")
    aug_user = _user(module, custom.augmented, custom, "augmented forward function")
    rev_user = _user(module, custom.gradient, custom, "gradient")
    aug_name, rev_name, free_name = names
    shadows = {i: [local(bare_name(p.name) + "'")] for i, (p, on) in enumerate(zip(fn.params, pattern.active))
               if on and p.type.kind == "ptr"}
    args = _arguments(fn, pattern.active, shadows, False, "gradient")
    _check_arity(fn, aug_user, args, "augmented forward function")
    params = [f"{p.type.text} {p.name}" for p in fn.params] + \
        [f"ptr {shadows[i][0]}" for i, p in enumerate(fn.params) if i in shadows]
    tape, has_primal = _augmented_returns(fn, aug_user)
    aug_ret = fn.ret if pattern.ret_needed else VOID
    aug = [f"define internal {aug_ret.text} {aug_name}({', '.join(params + ['ptr %rec'])}) {{", "entry:"]
    call = f"call {aug_user.ret.text} {aug_user.name}({', '.join(args)})"
    aug.append(f"  %r = {call}" if aug_user.ret.kind != "void" else f"  {call}")
    if tape is not None:
        value = "%r" if not has_primal else "%tape"
        if has_primal:
            aug.append(f"  %tape = extractvalue {aug_user.ret.text} %r, 0")
        aug.append(f"  store {tape.text} {value}, ptr %rec")
    if aug_ret.kind != "void":
        result = "%r"
        if has_primal and tape is not None:
            aug.append(f"  %p = extractvalue {aug_user.ret.text} %r, 1")
            result = "%p"
        elif not has_primal:  # f gives its result itself
            primal = ", ".join(f"{p.type.text} {p.name}" for p in fn.params)
            aug.append(f"  %p = call {fn.ret.text} {fn.name}({primal})")
            result = "%p"
        aug.append(f"  ret {fn.ret.text} {result}")
    else:
        aug.append("  ret void")
    aug.append("}")
    floats = [i for i, p in enumerate(fn.params) if p.type.kind == "float"]
    scalars = [i for i in floats if pattern.active[i]]
    rev_ret = struct(*[fn.params[i].type for i in scalars]) if scalars else VOID
    seed = [f"{fn.ret.text} %seed"] if pattern.ret_active else []
    rev_args = list(args)
    if fn.ret.kind == "float":
        rev_args.append(seed[0] if seed else f"{fn.ret.text} 0.0")
    rev = [f"define internal {rev_ret.text} {rev_name}({', '.join(params + seed + ['ptr %rec'])}) {{", "entry:"]
    if tape is not None:
        rev.append(f"  %tape = load {tape.text}, ptr %rec")
        rev_args.append(f"{tape.text} %tape")
    _check_arity(fn, rev_user, rev_args, "gradient")
    call = f"call {rev_user.ret.text} {rev_user.name}({', '.join(rev_args)})"
    rev.append(f"  %g = {call}" if rev_user.ret.kind != "void" else f"  {call}")
    rev += _gradients(fn, rev_user, floats, scalars, rev_ret)
    free = [f"define internal void {free_name}({', '.join(params + ['ptr %rec'])}) {{", "entry:", "  ret void", "}"]
    record = FixedRecord(_size(tape) if tape is not None else 0)
    pair = ReversePair(aug_name, rev_name, free_name, aug_ret, rev_ret, scalars, record)
    return ["\n".join(aug), "\n".join(rev), "\n".join(free)], pair


def _communication_parameters(fn: Function, buffers: tuple[int, ...], active: tuple[bool, ...],
                              lanes: int = 1) -> tuple[list[str], list[str], list[str], list[str]]:
    """A wrapper's parameters for MPI's call `fn` (its own, then the shadows of each parameter that
    has them: `lanes` of them, separate lanes at a width above 1), the call's arguments, the shadows
    of its buffers in order (null where a buffer has none: the rule takes zeros, and drops the
    adjoint that comes back; with separate lanes, an array of them), and the lines making those
    arrays."""
    own = [f"{p.type.text} %a{i}" for i, p in enumerate(fn.params)]
    parts = [""] if lanes == 1 else [f".{k}" for k in range(lanes)]
    shadows = [f"ptr %d{i}{part}" for i, (p, on) in enumerate(zip(fn.params, active)) if on and p.type.kind == "ptr"
               for part in parts]
    arrays = []
    for i in (i for i in buffers if active[i] and lanes > 1):
        arrays.append(f"  %d{i} = alloca [{lanes} x ptr]")
        for k in range(lanes):
            arrays += [f"  %d{i}.at{k} = getelementptr inbounds ptr, ptr %d{i}, i64 {k}",
                       f"  store ptr %d{i}.{k}, ptr %d{i}.at{k}"]
    return own + shadows, own, [f"ptr %d{i}" if active[i] else "ptr null" for i in buffers], arrays


def communication_forward(fn: Function, buffers: tuple[int, ...], name: str, active: tuple[bool, ...],
                          width: int, kind: str = LANES) -> str:
    """Forward mode's derived function of MPI's call `fn`: its rule (mpi.py), the call's result
    returned. At a width above 1 the rule is told before it how many tangents each buffer has and
    how they come (templates/mpi_rules.c.j2, "lanes"): separate lanes as an array of the shadows,
    interleaved ones (dualv) as the one shadow."""
    lanes = width if kind == LANES else 1
    params, args, shadows, arrays = _communication_parameters(fn, buffers, active, lanes)
    forward = rule_names(bare_name(fn.name))[0]
    say = [f"  call void @{LANES_RULE}(i32 {width}, i32 {int(kind == INTERLEAVED)})"] if width > 1 else []
    back = [f"  call void @{LANES_RULE}(i32 1, i32 0)"] if width > 1 else []
    return "\n".join([f"define internal {fn.ret.text} {name}({', '.join(params)}) {{", "entry:", *arrays, *say,
                      f"  %r = call {fn.ret.text} {forward}({', '.join(args + shadows)})", *back,
                      f"  ret {fn.ret.text} %r", "}"])


def communication_reverse(fn: Function, buffers: tuple[int, ...], names: tuple[str, str, str], pattern
                          ) -> tuple[list[str], ReversePair]:
    """Reverse mode's pair for MPI's call `fn`: the augmented rule, which communicates and keeps what
    the adjoint communication needs in the call's record, and the reverse rule (mpi.py)."""
    if pattern.width != 1:  # (refused at the call first: reverse_refusal)
        raise _fail(fn, f"a communication at width {pattern.width} in reverse mode")
    params, args, shadows, _ = _communication_parameters(fn, buffers, pattern.active)
    aug_name, rev_name, free_name = names
    _, aug_rule, rev_rule = rule_names(bare_name(fn.name))
    aug_ret = fn.ret if pattern.ret_needed and fn.ret.kind != "void" else VOID
    called = ", ".join(args + shadows + ["ptr %rec"])
    aug = [f"define internal {aug_ret.text} {aug_name}({', '.join(params + ['ptr %rec'])}) {{", "entry:",
           f"  %r = call {fn.ret.text} {aug_rule}({called})",
           f"  ret {fn.ret.text} %r" if aug_ret.kind != "void" else "  ret void", "}"]
    seed = [f"{fn.ret.text} %seed"] if pattern.ret_active else []
    rev = [f"define internal void {rev_name}({', '.join(params + seed + ['ptr %rec'])}) {{", "entry:",
           f"  call void {rev_rule}({called})", "  ret void", "}"]
    free = [f"define internal void {free_name}({', '.join(params + ['ptr %rec'])}) {{", "entry:", "  ret void", "}"]
    pair = ReversePair(aug_name, rev_name, free_name, aug_ret, VOID, [], FixedRecord(RECORD))
    return ["\n".join(aug), "\n".join(rev), "\n".join(free)], pair


def _augmented_returns(fn: Function, user: Function) -> tuple[Type | None, bool]:
    """What the augmented function returns: the tape's type (or None), and whether f's result."""
    r = user.ret
    if r.kind == "void":
        return None, False
    if fn.ret.kind != "void" and r.kind == "struct" and len(r.elems) == 2 and r.elems[1] == fn.ret:
        return r.elems[0], True
    if fn.ret.kind != "void" and r == fn.ret:
        return None, True
    if r.kind in ("ptr", "int", "float"):
        return r, False
    raise _fail(fn, f"the augmented forward function written by hand, '{user.name.lstrip('@')}', which returns "
                    f"'{r.text}': Enzyme's convention is a tape, {{ tape, result }}, the result, or nothing")


def _gradients(fn: Function, user: Function, floats: list[int], scalars: list[int], rev_ret: Type) -> list[str]:
    """Returns, from what the user's gradient returned (one per floating parameter of f), those
    of the parameters active at this call."""
    r = user.ret
    if not floats:
        if r.kind != "void":
            raise _fail(fn, f"the gradient written by hand, '{user.name.lstrip('@')}', which returns '{r.text}' for "
                            "a function without floating parameters")
        return ["  ret void", "}"]
    lines: list[str] = []
    parts = {floats[0]: "%g"} if len(floats) == 1 and r == fn.params[floats[0]].type else None
    if parts is None and r.kind == "struct" and len(r.elems) == len(floats):
        parts = {}
        for k, i in enumerate(floats):
            lines.append(f"  %g{k} = extractvalue {r.text} %g, {k}")
            parts[i] = f"%g{k}"
    if parts is None:
        raise _fail(fn, f"the gradient written by hand, '{user.name.lstrip('@')}', which returns '{r.text}' where "
                        f"Enzyme's convention gives the gradients of the {len(floats)} floating parameters")
    if rev_ret.kind == "void":
        return lines + ["  ret void", "}"]
    out = "poison"
    for k, i in enumerate(scalars):
        lines.append(f"  %o{k} = insertvalue {rev_ret.text} {out}, {fn.params[i].type.text} {parts[i]}, {k}")
        out = f"%o{k}"
    return lines + [f"  ret {rev_ret.text} {out}", "}"]


def _size(t: Type) -> int:
    return 8 if t.kind == "ptr" else max(1, t.bits // 8)


def bare_name(name: str) -> str:
    body = name[1:]
    return body[1:-1] if body.startswith('"') else body
