"""The safe Rust wrappers of `<stem>.adgen.rs` (specs/abi.md, "Rust"): for each derived function,
what its Rust signature takes and returns, in the shape of `std::autodiff`'s generated functions
(a slice's shadow a slice of the same length, checked; the gradients of active scalars after the
primal result in a tuple; N shadows at width N), and how each parameter of the C function it
calls is passed. The template (templates/wrappers.rs.j2) prints what this decides, in the
spelling the user's rustc takes (`unsafe_spellings`): `render_rust`, beside the C header's
renderer, whose templates it shares."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from typing import Callable

from adgen.frontend.abi import Signature, shadow_names, signature
from adgen.frontend.annotations import Entry, Word
from adgen.base.diagnostics import AdgenError, Collector, error, note
from adgen.frontend.prototypes import Prototype
from adgen.frontend.model import Activity, Mode
from adgen.frontend.render import c_environment
from adgen.frontend.rust_closures import CLOSURE, PLACEHOLDER
from adgen.frontend.rust_source import BY_VALUE, OUTCOME, RFunction, RParam, RType, RustUnit, split_arguments
from adgen.base.naming import PROGRAMS_ADDRESS
from adgen.base.toolchain import select_rustc

_SEPARATE = {Activity.DUP, Activity.DUPONLY, Activity.DUAL, Activity.DUALONLY}
_INTERLEAVED = {Activity.DUPV, Activity.DUALV}


@dataclass(frozen=True)
class RustParam:
    name: str
    type: str  # as the wrapper declares it


@dataclass(frozen=True)
class FfiArg:
    """One parameter of the C function: its Rust FFI type, and how the wrapper passes it."""

    name: str
    type: str
    how: str  # value, slice_ptr, slice_mut_ptr, slice_len, ref_ptr, ref_mut_ptr, object_ptr, object_mut_ptr, reserved
    source: str  # the wrapper's parameter it comes from
    pointee: str = ""  # object_ptr's: the Rust type it points to, which C sees as bytes


@dataclass(frozen=True)
class LengthCheck:
    shadow: str
    primal: str
    times: int  # the shadow holds this many times the primal's elements (N lanes interleaved)


@dataclass(frozen=True)
class Wrapper:
    name: str
    summary: str
    primal: str
    params: tuple[RustParam, ...]
    ffi: tuple[FfiArg, ...]
    checks: tuple[LengthCheck, ...]
    result_struct: str | None
    fields: tuple[tuple[str, str], ...]  # (name, Rust type) of the C result, in order
    returns: str | None  # the wrapper's Rust result type; None for ()
    unsafe: bool  # the primal is an `unsafe fn`: so is its wrapper (one taking raw pointers, as safe as it)
    owner: str = ""  # a method's wrappers are methods of its type too (in an `impl` of their own)
    locals: tuple[tuple[str, str, str], ...] = ()  # (name, Rust type, first value): gradients of values passed by
    # value (zeroed), and the outcome the C function writes
    outputs: tuple[tuple[str, str], ...] = ()  # (expression, Rust type) of what it returns, in order
    lifetimes: tuple[str, ...] = ()  # the primal's, which its parameters' types name
    visibility: str = "pub"  # the primal's (a method's wrappers `pub`)
    outcome: str = ""  # "option", "result": the outputs wrapped (Some, Ok) as the local OUTCOME says
    rust_name: str = ""  # the Rust function's name where it is not the C function's (`beside`)
    vectors: tuple[LengthCheck, ...] = ()  # a `&mut Vec`'s shadows: as much room as the vector (which may
    # grow in the call, within its capacity), their lengths its own after it

    @property
    def uses_result(self) -> bool:
        """Whether what it returns is made of the C function's result (`r`)."""
        return any(re.search(r"\br\b", e) for e, _ in self.outputs)


@dataclass(frozen=True)
class Dispatch:
    """A generic function's derived function, at the instantiations its entries name: one Rust
    function of the generic signature (`loss_grad<T>`), which calls the instantiation's through a
    trait implemented once per instantiation (`impl __adgen_loss_grad<f64> for ()`), each calling
    its C function (`loss_grad__f64`). `self` is `this` in the trait's functions."""

    name: str
    trait: str
    owner: str
    lifetimes: tuple[str, ...]
    params: tuple[str, ...]  # the trait's generic parameters, declared (`T`, `const N: usize`)
    names: tuple[str, ...]  # and as arguments (`T`, `N`)
    signature: Wrapper  # its parameters and result as written (`x: &[T]`)
    instances: tuple[tuple[str, Wrapper], ...]  # (the arguments, `f64`; the instantiation's wrapper)
    dynamic: tuple[str, str, str] = ()  # a function of a trait object: (its parameter, the trait object's
    # type, `dyn Model`, the trait); its wrapper tells the instances apart by TypeId
    shadows: tuple[tuple[str, bool], ...] = ()  # and the trait object's shadows: (name, mutable)
    closure: "ClosureGlue | None" = None  # a function of a closure: instances by where the wrapper is called
    # (`instances`' first: the file as a Rust literal, the line, the column)


@dataclass(frozen=True)
class ClosureGlue:
    """What a function taking a closure adds to its wrapper (rust_closures.py): the shim in its
    place, generic over the closure and taking it by reference (`__adgen_closure_F`, which each
    instance derives as its caller's compile instantiates it), and the placeholder, the
    wrappers' own call of the wrapper with a closure never run (instance c0)."""

    param: str
    by_reference: bool
    type_name: str  # the closure's type as the wrapper and shim declare it (`F`)
    shim: str
    shim_params: tuple[tuple[str, str], ...]
    shim_returns: str | None
    shim_call: str
    placeholder: str
    placeholder_params: tuple[RustParam, ...]
    placeholder_call: str


@dataclass(frozen=True)
class Split:
    """A split-mode entry's Rust API: its forward sweep a function returning (with the primal's
    result) a tape, a value of a type of its own that borrows the shadows until its `reverse`
    consumes it, and whose drop releases what it holds (`NAME_free`, which does nothing on a
    tape reversed). The tape's memory is a `Vec` of 16-byte aligned chunks, `NAME_tape_size()`
    bytes."""

    tape: str  # the tape's type (`ChainSplitTape`)
    forward: Wrapper  # `NAME_forward`, its shadows borrowed for the tape's lifetime `'t`
    reverse: Wrapper  # `NAME_reverse`: its parameters the seeds (the tape is `self`)
    free: Wrapper
    size: Wrapper


def render_rust(unit: RustUnit, signatures: list[Signature], version: str) -> str:
    """A Rust source's `<stem>.adgen.rs`: the C functions' declarations and safe wrappers."""
    stem = unit.source.path.stem
    every = wrappers(unit, signatures)
    dispatched = dispatches(unit, signatures, every)
    ffi = "__adgen_ffi_" + re.sub(r"[^A-Za-z0-9_]", "_", stem)
    return c_environment().get_template("wrappers.rs.j2").render(
        version=version, source=unit.source.path.name, stem=stem, wrappers=every,
        shims=render_shims(unit, [s.derivation.primal.name for s in signatures]),
        plain=[replace(w, rust_name=BESIDE + unit.rust_name(w.name)) if beside(unit, s) else
               replace(w, rust_name=unit.rust_name(w.name)) for s, w in zip(signatures, every)
               if unit.rust_name(s.name) not in unit.generic_names and not s.part],
        by_hand=glue(unit), beside=BESIDE,
        splits=splits(unit, signatures, every),
        dispatches=dispatched, closure_shims=list({d.closure.shim: d for d in dispatched if d.closure}.values()),
        unsafe_spellings=unsafe_spellings(),
        instances=list(dict.fromkeys(_path(unit.rust[s.derivation.primal.name]) for s in signatures
                                     if not s.derivation.primal.name.startswith((BY_VALUE, CLOSURE))
                                     and s.derivation.inner is None)),
        addresses=addresses(unit, signatures), ffi=ffi,
        reserved=any(a.how == "reserved" for w in every for a in w.ffi))


_FREE_FUNCTION = re.compile(r"^(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?fn\s+([A-Za-z_]\w*)\s*\(([^)]*)\)\s*"
                            r"(?:->\s*([^{;]+?))?\s*\{", re.M)


def addresses(unit: RustUnit, signatures: list[Signature]) -> list[tuple[str, str]]:
    """Where an annotated function takes a function pointer (`f: fn(f64) -> f64`, const): the
    functions of the source's own module (at its top level, not generic) of that type, each with
    the name of a static holding its address, which the wrappers define so that a derivative
    knows the program's pointer to it (ir_ad/dispatch.py). (name, static's symbol) each."""
    wanted = {_fn_type(m.group(1), m.group(2)) for s in signatures if s.derivation.primal.name in unit.rust
              for p in unit.rust[s.derivation.primal.name].params if p.type.kind == "fn"
              if (m := re.fullmatch(r"\s*fn\s*\((.*)\)\s*(?:->\s*(.+?))?\s*", p.type.text, re.S))}
    if not wanted:
        return []
    place = hashlib.sha1(str(unit.source.path.resolve()).encode()).hexdigest()[:8]  # (two sources of one name)
    tag = unit.symbol_tag or f'{re.sub(r"[^A-Za-z0-9_]", "_", unit.source.path.stem)}.{place}'
    found = []
    for m in _FREE_FUNCTION.finditer(unit.source.text):
        if _fn_type(m.group(2), m.group(3)) in wanted:
            line = unit.source.text.count("\n", 0, m.start()) + 1
            found.append((m.group(1), f"{PROGRAMS_ADDRESS}{tag}.{line}.{m.group(1)}"))
    return found


def _fn_type(params: str, returns: str | None) -> str:
    """A function's type as `fn(T, U) -> R`, from its parameters (names dropped: `x: T`, or a
    pointer type's `fn(x: T)`) and result, spaced alike for comparison."""
    types = [re.sub(r"^\s*(?:mut\s+)?[A-Za-z_]\w*\s*:(?!:)", "", part) for part in split_arguments(params)]
    return _spaced(f"fn({', '.join(types)})" + (f" -> {returns}" if returns and returns.strip() != "()" else ""))


def _spaced(text: str) -> str:
    """A type's text spaced one way (none around punctuation, one after `->`), for comparison."""
    return re.sub(r"\s*([(),:<>\[\];&*])\s*", r"\1", re.sub(r"\s+", " ", text.strip())).replace("->", " -> ")


BESIDE = "__adgen_"  # (the wrapper's name, before a method std::autodiff's attribute derives: `__adgen_df`)


def beside(unit: RustUnit, sig: Signature) -> bool:
    """Whether std::autodiff's attribute derives a method (not generic): as std::autodiff's does,
    adgen's crate of attributes then puts the derived method beside it, in its `impl` block (so a
    trait may declare it), calling the wrapper, named `__adgen_NAME`; adgen's own compile puts it
    there likewise (`methods_beside`)."""
    d = sig.derivation
    rf = unit.rust.get(d.primal.name)
    return (d.entry.trailing_return and d.inner is None and not sig.part and rf is not None and bool(rf.owner)
            and rf.generic is None)


def methods_beside(unit: RustUnit, signatures: list[Signature]) -> dict[int, str]:
    """The derived methods adgen's crate of attributes puts beside the methods std::autodiff's
    attributes derive, as adgen's own compile of the source has them in place of the attribute:
    by where its entry's name is in the source, the method's text."""
    out = {}
    for s, w in zip(signatures, wrappers(unit, signatures)):
        if beside(unit, s):
            params = ", ".join("self: " + p.type if p.name == "self" else f"{p.name}: {p.type}" for p in w.params)
            name = unit.rust_name(w.name)
            call = f"Self::{BESIDE}{name}({', '.join(p.name for p in w.params)})"
            out[s.derivation.entry.name.span.offset] = (  # (private: adgen's compile calls it in the file only)
                f"{'unsafe ' if w.unsafe else ''}fn {name}({params})"
                f"{' -> ' + w.returns if w.returns else ''} {{ {'unsafe { ' + call + ' }' if w.unsafe else call} }}")
    return out


def dispatches(unit: RustUnit, signatures: list[Signature], every: list[Wrapper]) -> list[Dispatch]:
    """The generic derived functions, each with its instantiations' wrappers, in the order first derived."""
    groups: dict[tuple[str, str], list] = {}
    for sig, w in zip(signatures, every):
        if unit.rust_name(sig.name) in unit.generic_names:
            groups.setdefault((w.owner, unit.generic_names[unit.rust_name(sig.name)]), []).append((sig, w))
    out = []
    for (owner, name), members in groups.items():
        sig, _ = members[0]
        g = unit.rust[sig.derivation.primal.name].generic
        written = replace(_wrapper(g.written, sig), name=name,
                          summary=sig.summary().replace(f"of {sig.derivation.primal.name}", f"of {g.name}"))
        rf = unit.rust[sig.derivation.primal.name]
        if rf.closure is not None:
            out.append(_closure_dispatch(unit, name, owner, g, written, members))
            continue
        dynamic, shadows = (), ()
        if rf.dynamic:  # (the trait object's type as written, and its shadows, which the wrapper casts too)
            param, trait = rf.dynamic
            t = next(p.type for p in g.written.params if p.name == param)
            dynamic = (param, t.elem.text, trait)
            shadows = tuple((p.name, p.type.startswith("&mut")) for p in written.params
                            if p.name != param and p.name.startswith(sig.derivation.prefix + param) and "dyn" in p.type)
        out.append(Dispatch(name, f"__adgen_{owner + '_' if owner else ''}{name}", owner, g.lifetimes, g.params,
                            g.names, written,
                            tuple((", ".join(unit.rust[s.derivation.primal.name].generic.arguments),
                                   w if dynamic else _this(w)) for s, w in members), dynamic, shadows))
    return out


def _closure_dispatch(unit: RustUnit, name: str, owner: str, g, written: Wrapper, members: list) -> Dispatch:
    """A function of a closure's wrapper: its instances (but c0) by where the crate's targets call
    it, each a wrapper passing the closure as bytes of its type; the shim and the placeholder."""
    c = unit.rust[members[0][0].derivation.primal.name].closure
    calls = (unit.closure_calls or {}).get(name, [])
    arms = []
    for s, w in members:
        k = unit.rust[s.derivation.primal.name].closure.index
        if 0 < k <= len(calls):
            file, line, column = calls[k - 1]
            w = replace(w, ffi=tuple(replace(a, pointee=c.type_name) if a.source == c.param else a for a in w.ffi))
            arms.append(((_rust_literal(file), line, column), w))
    shim_params = tuple((p.name, f"&{c.type_name}" if p.name == c.param else p.type.text) for p in g.written.params)
    args = ", ".join(("unsafe { ::core::ptr::read(" + p.name + ") }" if not c.by_reference else p.name)
                     if p.name == c.param else p.name for p in g.written.params)
    returns = g.written.returns.text if g.written.returns is not None and g.written.returns.kind != "unit" else None
    call = f"{'unsafe { ' if written.unsafe else ''}{g.name}({args}){' }' if written.unsafe else ''}"
    never = "|" + ", ".join("_" * c.arguments) + "| unreachable!()" if c.arguments else "|| unreachable!()"
    placeholder_args = ", ".join(("&" if c.by_reference else "") + never if p.name == c.param else p.name
                                 for p in written.params)
    call_wrapper = f"{name}({placeholder_args})"
    glue = ClosureGlue(c.param, c.by_reference, c.type_name, c.shim, shim_params, returns, call,
                       f"{PLACEHOLDER}{name}", tuple(p for p in written.params if p.name != c.param),
                       f"unsafe {{ {call_wrapper} }}" if written.unsafe else call_wrapper)
    return Dispatch(name, "", owner, g.lifetimes, g.params, g.names, written, tuple(arms), closure=glue)


def _rust_literal(text: str) -> str:
    """A Rust string literal of `text`."""
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{{{ord(c):x}}}" for c in text) + '"'


def _this(w: Wrapper) -> Wrapper:
    """A method's wrapper as a function of a trait: its `self` called `this`."""
    rename = {"self": "this"}
    return replace(w, params=tuple(replace(p, name=rename.get(p.name, p.name)) for p in w.params),
                   ffi=tuple(replace(a, source=rename.get(a.source, a.source)) for a in w.ffi))


def _path(rf: RFunction) -> str:
    """How Rust code of the module names a function, or an instantiation (`Model::loss::<f64>`)."""
    owner = f"{rf.owner}::" if rf.owner else ""
    return owner + (rf.generic.name + "::<" + ", ".join(rf.generic.arguments) + ">" if rf.generic else rf.name)


def unsafe_spellings() -> bool:
    """Whether `<stem>.adgen.rs` declares its C functions in an `unsafe extern "C"` block, as edition
    2024 requires, or in a plain `extern "C"` one, which 1.63 (editions up to 2021) needs: what the
    rustc adgen uses takes (the one cargo gives build scripts, which compiles the crate too); with
    none to ask, today's."""
    try:
        return select_rustc().unsafe_spellings
    except AdgenError:
        return True


def wrappers(unit: RustUnit, signatures: list[Signature]) -> list[Wrapper]:
    """One per C function (a split-mode entry's four parts each): how Rust declares and calls it."""
    return [_of(unit, s) if s.derivation.inner is not None else
            _wrapper(unit.rust[s.derivation.primal.name], s, {p for n, p in unit.blocked if n == unit.rust_name(s.name)},
                     {p for n, p in unit.scratch if n == unit.rust_name(s.name)},
                     unit.ghosts.get(unit.rust_name(s.name), ({}, None)))
            if not s.part else _part(unit.rust[s.derivation.primal.name], s, unit.rust_name(s.derivation.name))
            for s in signatures]


def _of(unit: RustUnit, sig: Signature) -> Wrapper:
    """The wrapper of a derivative of a derived function (`of INNER`): INNER's wrapper's
    parameters, each followed by its shadows or tangents (of its own type, `&mut` in reverse
    mode, `d2_x`...) where the entry says, then the seeds; its C function's parameters in their
    order, INNER's passed as INNER's wrapper passes them, their shadows as those of the Rust
    parameter they come from."""
    d, inner = sig.derivation, _inner_wrapper(unit, sig.derivation.inner)
    n, reverse = d.width, d.mode.family is Mode.REVERSE
    own = {"self" if a.name == "self_" else a.name: a for a in inner.ffi}  # (by C names: `self_` is Rust's)
    acts = dict(zip(own, d.activities))
    rust = {p.name: p for p in inner.params}
    params, ffi, checks = [], [], list(inner.checks)  # (INNER's own lengths, which its C function assumes)
    for p in inner.params:
        params.append(p)
        c = next(name for name, a in own.items() if a.source == p.name and a.how != "slice_len")
        if acts[c] in _SEPARATE or acts[c] in _INTERLEAVED:
            times = n if acts[c] in _INTERLEAVED else 1
            for lane in shadow_names(p.name, 1 if times > 1 else n, d.prefix):
                params.append(RustParam(lane, _shadow_text(p.type, reverse, times)))
                if p.type.lstrip("&").lstrip().startswith(("[", "mut [")) and ";" not in p.type:
                    checks.append(LengthCheck(lane, p.name, times))
    for slot in sig.params:
        if slot.name in own:
            ffi.append(own[slot.name])
        elif slot.role.startswith("seed"):
            r = inner.returns or "f64"
            params.append(RustParam(slot.name, r))
            ffi.append(FfiArg(slot.name, r, "value", slot.name))
        else:  # a shadow or tangent of INNER's parameter: the Rust shadow of where it comes from
            of = re.match(r"\w+ of (\w+)", slot.role).group(1)
            c = own[of]
            lane = next(q.name for q in params if q.name == slot.name or q.name == f"{d.prefix}{rust[c.source].name}"
                        + slot.name.removeprefix(f"{d.prefix}{of}"))
            mutable = reverse or c.how in ("slice_mut_ptr", "ref_mut_ptr", "object_mut_ptr")
            how = {"slice_ptr": "slice_mut_ptr", "ref_ptr": "ref_mut_ptr", "object_ptr": "object_mut_ptr"}.get(c.how, c.how) \
                if mutable else c.how
            ffi.append(FfiArg(slot.name, c.type.replace("*const", "*mut") if mutable else c.type, how, lane, c.pointee))
    r = inner.returns or "()"
    at = d.entry.name.span
    written = RFunction(inner.name, tuple(RParam(p.name, RType("other", p.type, at), at) for p in inner.params),
                        RType("other", r, at) if inner.returns else None, at)
    fields = _fields(written, sig, r)
    outputs = _outputs(written, d.prefix, fields, sig.result_struct, {})
    return Wrapper(sig.name, sig.summary(), inner.name, tuple(params), tuple(ffi), tuple(checks), sig.result_struct,
                   tuple(fields), _result(outputs), inner.unsafe, inner.owner, (), tuple(outputs), inner.lifetimes,
                   inner.visibility)


def _shadow_text(t: str, reverse: bool, times: int) -> str:
    """The type of a shadow of a wrapper's parameter of type `t` (as written there)."""
    m = re.match(r"&(?:'\w+\s+)?(mut\s+)?(.*)$", t.strip())
    if m is None:  # a scalar: its tangent (N of them interleaved: an array)
        return f"&[{t}; {times}]" if times > 1 else t
    inner = m.group(2)
    if times > 1 and not inner.startswith("["):
        inner = f"[{inner}; {times}]"
    return f"&{'mut ' if reverse or m.group(1) else ''}{inner}"


def _inner_wrapper(unit: RustUnit, inner) -> Wrapper:
    """The wrapper of the derived function an `of` entry derives."""
    sig = signature(inner)
    return _of(unit, sig) if inner.inner is not None else _wrapper(unit.rust[inner.primal.name], sig)


def nested_entry(entry: Entry, inner, unit: RustUnit, problems: Collector) -> Entry | None:
    """An `of INNER` entry of a Rust source made one of INNER's C function: one activity per
    parameter of INNER's wrapper (its slices' lengths, which its C function takes after their
    shadows, `const`), or None after errors."""
    rf = unit.rust.get(inner.primal.name) if inner.inner is None else None
    if inner.inner is None and (rf is None or rf.shim or rf.generic is not None or
                                any(n == inner.name for n, _ in unit.blocked | unit.scratch)):
        problems.add(error(f"'{entry.name.text}' derives '{inner.name}', a derivative of a generic function, of trait "
                           "objects or of values by value: its wrapper dispatches in Rust, which derivatives do not "
                           "follow (derive an entry of a function of references and floats)", entry.of.span))
        return None
    w = _inner_wrapper(unit, inner)
    if len(entry.activities) != len(w.params):
        problems.add(error(f"'{entry.name.text}' lists {len(entry.activities)} activities, but '{inner.name}' takes "
                           f"{len(w.params)} parameters ({', '.join(p.name for p in w.params)})", entry.params_span,
                           [note(f"'{inner.name}' is made here", inner.entry.name.span)]))
        return None
    by_param = dict(zip((p.name for p in w.params), entry.activities))
    return replace(entry, activities=tuple(Word("const", entry.params_span) if a.how == "slice_len"
                                           else by_param[a.source] for a in w.ffi))


_TAPE = "__adgen_tape"  # the forward sweep's tape, a local of its wrapper


def by_hand(unit: RustUnit) -> Callable[[Signature, Prototype], str | None]:
    """For `@derivative` in Rust: None where the function written by hand has the signature of
    the entry's wrapper (its parameters' types and result, whatever their names); else that
    signature, said."""
    def expected(sig: Signature, function: Prototype) -> str | None:
        w = _wrapper(unit.rust[sig.derivation.primal.name], sig)
        g = unit.rust[function.name]
        got = [p.type.text for p in g.params] + [g.returns.text if g.returns is not None else "()"]
        want = [p.type for p in w.params] + [w.returns or "()"]
        if [_plain(t) for t in got] == [_plain(t) for t in want]:
            return None
        return f"fn {g.name}({', '.join(f'{p.name}: {p.type}' for p in w.params)})" + \
            (f" -> {w.returns}" if w.returns else "")
    return expected


@dataclass(frozen=True)
class ByHand:
    """The glue through which derivative code calls a derivative written by hand in Rust
    (`BY_HAND` + its number, in the wrappers' module): of the C signature the pipeline calls
    (specs/annotations.md, `@derivative`), it makes the Rust arguments of the function the
    user wrote (the entry's wrapper's), as the wrapper makes C arguments of Rust ones, but
    backwards. Of scalars: `(F's C parameters..., which)` -> the partial derivative with
    respect to F's `which`-th active parameter (a seed of 1, or tangents 1 for it and 0 for
    the others). Of arrays: `(the entry's C parameters..., where each active scalar's gradient
    goes...)`."""

    name: str
    params: tuple[tuple[str, str], ...]  # (name, Rust FFI type)
    returns: str | None
    cases: tuple[tuple[str, str], ...]  # (the call of the function written by hand, what of its result)
    arrays: bool = False
    outputs: tuple[str, ...] = ()  # of arrays: the gradients, each written to the pointer after the parameters


BY_HAND = "__adgen_by_hand_"


def glue(unit: RustUnit) -> list[ByHand]:
    """The glue of each `@derivative` of the source, in order."""
    out = []
    for k, c in enumerate(unit.by_hand):
        rf, d = unit.rust[c.primal.name], c.derivation
        w = _wrapper(rf, c.signature)
        g = unit.rust[c.function.name]
        primal = {p.name for p in rf.params}
        seeds = {p.name for p in c.signature.params if p.role.startswith("seed")}
        r = rf.returns.text if rf.returns is not None else "f64"

        def call(lit: str) -> str:
            args = []
            for p in w.params:
                if p.name in primal or c.of_arrays:  # (of arrays: all as the derivative code gives them)
                    args.append(_from_c(w, p))
                elif p.name in seeds:
                    args.append("1.0")
                else:  # the tangent of a dual scalar: 1 for the one, 0 for the others
                    args.append("1.0" if p.name == f"{d.prefix}{lit}" else "0.0")
            return f"{g.name}({', '.join(args)})"

        def part(expr: str) -> str:  # (where the wrapper's result holds what it holds at `expr` of the C one's)
            at = [e for e, _ in w.outputs]
            return "r" if len(at) == 1 else f"r.{at.index(expr)}"

        name = f"{BY_HAND}{k}"
        actives = [p.name for p, a in zip(rf.params, _per_param(rf, d)) if a is Activity.ACTIVE or a is Activity.DUAL]
        field = (lambda n: f"r.{n}") if w.result_struct else (lambda n: "r")
        if c.of_arrays:
            params = tuple((a.name, a.type) for a in w.ffi)
            grads = tuple(part(field(f"{d.prefix}{p}")) for p in actives)
            outs = tuple((f"__adgen_d{i}", f"*mut {_param_type(rf, p)}") for i, p in enumerate(actives))
            out.append(ByHand(name, params + outs, None, ((call(""), ""),), True, grads))
            continue
        params = tuple((a.name, a.type) for a in w.ffi if a.source in primal or a.how == "slice_len")
        cases = tuple((call(p), part(field(f"{d.prefix}{p}" if d.mode is Mode.REVERSE else f"{d.prefix}ret")))
                      for p in actives)
        out.append(ByHand(name, params + (("which", "i32"),), r, cases))
    return out


def _per_param(rf: RFunction, d) -> list[Activity]:
    """The entry's activity of each Rust parameter (a slice's length, which has its own, skipped)."""
    acts, out = iter(d.activities), []
    for p in rf.params:
        out.append(next(acts))
        if p.type.kind == "reference" and p.type.elem is not None and p.type.elem.kind == "slice":
            next(acts)
    return out


def _from_c(w: Wrapper, p: RustParam) -> str:
    """The wrapper's parameter `p` made again of the C arguments the wrapper makes of it."""
    a = next(a for a in w.ffi if a.source == p.name and a.how != "slice_len")
    if a.how in ("slice_ptr", "slice_mut_ptr"):
        check = next((c for c in w.checks if c.shadow == p.name), None)
        of = check.primal if check else p.name
        length = next(x.name for x in w.ffi if x.how == "slice_len" and x.source == of)
        length = f"{check.times} * {length}" if check and check.times > 1 else length
        mutable = "_mut" if a.how == "slice_mut_ptr" else ""
        return f"unsafe {{ core::slice::from_raw_parts{mutable}({a.name}, {length}) }}"
    if a.how in ("ref_ptr", "ref_mut_ptr"):
        return f"unsafe {{ &{'mut ' if a.how == 'ref_mut_ptr' else ''}*{a.name} }}"
    if a.how in ("object_ptr", "object_mut_ptr"):
        mutable = a.how == "object_mut_ptr"
        return f"unsafe {{ &{'mut ' if mutable else ''}*({a.name} as *{'mut' if mutable else 'const'} {a.pointee}) }}"
    return a.name


def _plain(t: str) -> str:
    """A type's text without lifetimes and spaces, to compare."""
    return re.sub(r"\s+", "", re.sub(r"'\w+\s*", "", t))


def _tape_type(name: str) -> str:
    """`chain_split` -> `ChainSplitTape`: the Rust type of a split entry's tapes."""
    return "".join(w[:1].upper() + w[1:] for w in name.split("_") if w) + "Tape"


def _part(rf: RFunction, sig: Signature, name: str) -> Wrapper:
    """A split-mode part: the forward sweep as the reverse-mode wrapper without the seeds (its
    shadows borrowed for the tape's lifetime `'t`), then the tape; the reverse sweep taking the
    tape and the seeds; what frees a tape; the tape's size."""
    d = sig.derivation
    tape = FfiArg("tape", "*mut u8", "value", f"{_TAPE}.bytes()" if sig.part == "forward" else "self.bytes()")
    if sig.part == "forward":
        w = _wrapper(rf, sig)
        tape_type = _tape_type(name) + "<'t>"
        primal = {p.name for p in rf.params}
        params = tuple(p if p.name in primal else replace(p, type=re.sub(r"^&(?:'\w+\s+)?", "&'t ", p.type))
                       for p in w.params)
        outputs = w.outputs + ((_TAPE, tape_type),)
        return replace(w, params=params, ffi=w.ffi + (tape,), locals=w.locals + ((_TAPE, tape_type,
                                                                                  f"{_tape_type(name)}::new()"),),
                       outputs=outputs, returns=_result(outputs), lifetimes=("'t",) + rf.lifetimes)
    r = rf.returns.text if rf.returns is not None else "()"
    seeds = [p.name for p in sig.params if p.role.startswith("seed")]
    fields = [(f.name, "usize") for f in sig.fields] if sig.part == "tape_size" else _fields(rf, sig, r)
    outputs = _outputs(rf, d.prefix, fields, sig.result_struct, {}) if sig.part == "reverse" else []
    return Wrapper(sig.name, sig.summary(), rf.name, tuple(RustParam(n, r) for n in seeds),
                   (() if sig.part == "tape_size" else (tape,)) + tuple(FfiArg(n, r, "value", n) for n in seeds), (),
                   sig.result_struct, tuple(fields), _result(outputs), rf.unsafe, rf.owner, outputs=tuple(outputs),
                   visibility=rf.visibility)


def _fields(rf: RFunction, sig: Signature, r: str) -> list[tuple[str, str]]:
    """The C result's fields as Rust types: the result's (`r`) and the parameters' gradients'."""
    prefix, out = sig.derivation.prefix, []
    for f in sig.fields:
        base = r if f.name in ("ret", f"{prefix}ret") else _param_type(rf, f.name[len(prefix):])
        out.append((f.name, f"[{base}; {f.count}]" if f.count > 1 else base))
    return out


def _result(outputs: list | tuple) -> str | None:
    """A wrapper's result type: nothing, one value's, or a tuple of them."""
    return None if not outputs else outputs[0][1] if len(outputs) == 1 else "(" + ", ".join(t for _, t in outputs) + ")"


def splits(unit: RustUnit, signatures: list[Signature], every: list[Wrapper]) -> list[Split]:
    """The split-mode entries' Rust APIs, each of its four parts' wrappers."""
    parts: dict[str, dict[str, Wrapper]] = {}
    for sig, w in zip(signatures, every):
        if sig.part:
            parts.setdefault(unit.rust_name(sig.derivation.name), {})[sig.part] = w
    return [Split(_tape_type(name), replace(p["forward"], rust_name=unit.rust_name(p["forward"].name)), p["reverse"],
                  p["free"], p["tape_size"]) for name, p in parts.items()]


def _wrapper(rf: RFunction, sig: Signature, blocked: set[str] = frozenset(),
             scratch: set[str] = frozenset(), ghosts: tuple = ({}, None)) -> Wrapper:
    """`ghosts`: the integers given a derivative's activity (RustUnit.ghosts), which take
    std::autodiff's shadows and seeds and pass them to none."""
    ghosts, ghost_return = ghosts
    d = sig.derivation
    n, reverse = d.width, d.mode.family is Mode.REVERSE
    params, ffi, checks, locals_, gradients, vectors = [], [], [], [], {}, []
    acts = iter(d.activities)
    for rp in rf.params:
        t = rp.type
        params.append(RustParam(rp.name, t.text))
        if t.kind == "unit":
            continue  # (no C parameter: adgen's function in its place passes `()`)
        act = next(acts)
        if rp.by_value:  # by its address; its gradient a value of its type, zeroed here, returned
            _by_value(rp, act, d, params, ffi, locals_, gradients)
            continue
        slice_ = t.kind == "reference" and t.elem is not None and t.elem.kind == "slice"
        vec = t.kind == "reference" and t.elem is not None and t.elem.kind == "vec"
        if slice_:
            next(acts)  # the length's, always const
        ffi.append(FfiArg("self_" if rp.name == "self" else rp.name, _ffi_type(t), _how(t), rp.name, _pointee(t)))
        if rp.name in blocked and n > 1:  # (one slice of N blocks: lane k its k-th, `x.len()` long)
            _blocked(rp, d, reverse, params, ffi, checks)
            continue
        if rp.name in scratch:  # (`const`: its shadows the wrapper's own, zeroed; rust_source._scratch_type)
            for lane in shadow_names(rp.name, n, d.prefix):
                locals_.append((lane, *_scratch(t, rp.name)))
                if t.kind == "pointer":  # (in the middle of the address space reserved)
                    ffi.append(FfiArg(lane, _ffi_type(t), "reserved", lane))
                else:
                    ffi.append(FfiArg(lane, _ffi_type(t), _how(t), lane if slice_ else f"&mut {lane}", _pointee(t)))
        elif ghosts.get(rp.name) is Activity.ACTIVE:  # (an integer: its gradient zero, std::autodiff's shape)
            gradients[rp.name] = "0" if n == 1 else f"[0; {n}]"
        elif ghosts.get(rp.name, act) in _SEPARATE or ghosts.get(rp.name, act) in _INTERLEAVED:
            ghost, act = rp.name in ghosts, ghosts.get(rp.name, act)  # (a ghost's shadows taken, passed to none)
            lanes = shadow_names(rp.name, 1 if act in _INTERLEAVED else n, d.prefix)
            shadow = _shadow(t, reverse, n if act in _INTERLEAVED else 1, slice_)
            for lane in lanes:
                params.append(RustParam(("_" if ghost else "") + lane, shadow.text))
                if ghost:
                    continue
                ffi.append(FfiArg(lane, _ffi_type(shadow), _how(shadow), lane, _pointee(shadow)))
                if slice_ or vec:
                    checks.append(LengthCheck(lane, rp.name, n if act in _INTERLEAVED else 1))
                if vec and t.mutable and shadow.mutable:
                    vectors.append(checks[-1])
        if slice_:
            ffi.append(FfiArg(f"{rp.name}_len", "usize", "slice_len", rp.name))
    if rf.outcome:  # (whether a value came, or the error: a local the C function writes)
        _outcome(rf, ffi, locals_)
    seeds = [p for p in sig.params if p.role.startswith("seed")]
    r = rf.returns.elem.text if rf.outcome else rf.returns.text if rf.returns is not None else "()"
    for s in seeds:
        params.append(RustParam(s.name, r))
        ffi.append(FfiArg(s.name, r, "value", s.name))
    if ghost_return in (Activity.ACTIVE, Activity.ACTIVEONLY):  # (an integer result's seeds, passed to none)
        params += [RustParam("_" + name, r) for name in shadow_names("ret", n, d.prefix)]
    fields = _fields(rf, sig, r)
    outputs = _outputs(rf, d.prefix, fields, sig.result_struct, gradients)
    if ghost_return is not None:  # (its tangents zero, where the C function returns the result alone)
        outputs = _ghost_result(outputs, ghost_return, n, r)
    returns = _result(outputs)
    if rf.outcome == "option":
        returns = f"Option<{returns or '()'}>"
    elif rf.outcome == "result":
        returns = f"Result<{returns or '()'}, {rf.returns.name}>"
    return Wrapper(sig.name, sig.summary(), rf.name, tuple(params), tuple(ffi), tuple(checks), sig.result_struct,
                   tuple(fields), returns, rf.unsafe, rf.owner, tuple(locals_),
                   tuple(outputs), rf.lifetimes, rf.visibility, rf.outcome, vectors=tuple(vectors))


def _by_value(rp, act: Activity, d, params: list, ffi: list, locals_: list, gradients: dict) -> None:
    """A value by value: passed by its address; `active`, its gradient a local of its type, zeroed,
    which the wrapper returns; `dual`, its tangents values of its type, by their addresses."""
    t = rp.type
    ffi.append(FfiArg("self_" if rp.name == "self" else rp.name, "*const u8", "object_ptr", f"&{rp.name}", t.text))
    if act is Activity.DUP:
        locals_.append((f"{d.prefix}{rp.name}", t.text, "unsafe { core::mem::zeroed() }"))
        gradients[rp.name] = f"{d.prefix}{rp.name}"
        ffi.append(FfiArg(f"{d.prefix}{rp.name}", "*mut u8", "object_mut_ptr", f"&mut {d.prefix}{rp.name}", t.text))
    elif act in _SEPARATE:
        for lane in shadow_names(rp.name, d.width, d.prefix):
            params.append(RustParam(lane, t.text))
            ffi.append(FfiArg(lane, "*const u8", "object_ptr", f"&{lane}", t.text))


def _blocked(rp, d, reverse: bool, params: list, ffi: list, checks: list) -> None:
    """std::autodiff's `Dualv` slice: one slice of N blocks, lane k its k-th, `x.len()` long,
    passed as N raw pointers into it (one borrow each, each ended; its length checked)."""
    t, n = rp.type, d.width
    lane = RustParam(f"{d.prefix}{rp.name}", _shadow(t, reverse, 1, True).text)
    params.append(lane)
    checks.append(LengthCheck(lane.name, rp.name, n))
    mutable = lane.type.startswith("&mut")
    for k in range(n):
        source = f"{lane.name}.{'as_mut_ptr' if mutable else 'as_ptr'}().add({k} * {rp.name}.len())"
        ffi.append(FfiArg(f"{lane.name}_{k}", _ffi_type(t if not mutable else _shadow(t, True, 1, True)), "value",
                          source))
    ffi.append(FfiArg(f"{rp.name}_len", "usize", "slice_len", rp.name))


def _outcome(rf: RFunction, ffi: list, locals_: list) -> None:
    """An `Option` or `Result` result: whether a value came, or the error, a local the C function
    writes (and the error's shadow: bytes never read as a value, nor dropped)."""
    kind = "bool" if rf.outcome == "option" else f"Option<{rf.returns.name}>"
    locals_.append((OUTCOME, kind, "false" if rf.outcome == "option" else "None"))
    ffi.append(FfiArg(OUTCOME, "*mut u8", "object_mut_ptr", f"&mut {OUTCOME}", kind))
    if rf.outcome == "result":
        locals_.append((f"{OUTCOME}_shadow", f"core::mem::MaybeUninit<{kind}>", "core::mem::MaybeUninit::zeroed()"))
        ffi.append(FfiArg(f"{OUTCOME}_shadow", "*mut u8", "object_mut_ptr", f"&mut {OUTCOME}_shadow",
                          f"core::mem::MaybeUninit<{kind}>"))


def _outputs(rf: RFunction, prefix: str, fields: list, result_struct: str | None, gradients: dict) -> list:
    """What the wrapper returns, as (expression, type): the C function's result (`r`, or its
    fields `r.ret`...), the primal's result and tangents first, then each parameter's gradient in
    the order of the parameters (a by-value one's from its local)."""
    def field(name: str) -> str:
        return f"r.{name}" if result_struct else "r"

    by_name = dict(fields)
    out = [(field(name), t) for name, t in fields if name in ("ret", f"{prefix}ret")]
    lanes = re.fullmatch(r"\[(.+); (\d+)\]", by_name.get(f"{prefix}ret", ""))
    if len(out) == 2 and lanes and lanes.group(1) == by_name.get("ret"):  # forward[N] with the result: one array
        n = int(lanes.group(2))  # (of N + 1, the result first, as std::autodiff's)
        items = [field("ret")] + [f"{field(prefix + 'ret')}[{k}]" for k in range(n)]
        out = [(f"[{', '.join(items)}]", f"[{lanes.group(1)}; {n + 1}]")]
    for p in rf.params:
        if f"{prefix}{p.name}" in by_name:
            out.append((field(f"{prefix}{p.name}"), by_name[f"{prefix}{p.name}"]))
        elif p.name in gradients:
            out.append((gradients[p.name], p.type.text))
    done = {field("ret"), field(f"{prefix}ret")}
    return out + [(field(name), t) for name, t in fields if (field(name), t) not in out and field(name) not in done]


def _ghost_result(outputs: list, ret: Activity, n: int, r: str) -> list:
    """What a wrapper returns where the result is an integer given `ret` (RustUnit.ghosts): the
    C function's (the result first) with std::autodiff's tangents, zero, or without the result."""
    result, rest = outputs[0], outputs[1:]
    if ret is Activity.ACTIVEONLY:
        return rest
    if ret is Activity.ACTIVE:
        return outputs
    zeros = [("0", r)] if n == 1 else [("[0; %d]" % n, f"[{r}; {n}]")]
    if n > 1 and ret is Activity.DUAL:  # (forward[N] with the result: one array, the result first)
        return [(f"[{result[0]}{', 0' * n}]", f"[{r}; {n + 1}]")] + rest
    return (zeros if ret is Activity.DUALONLY else [result] + zeros) + rest


RESERVED = "__AdgenReserved"  # (the wrappers' type of a pointer's scratch shadow: wrappers.rs.j2)


def _scratch(t: RType, name: str) -> tuple[str, str]:
    """The type and first value of a scratch shadow of `name`, of type `t` (`&mut` floats): as
    many zeros as it holds; of a `*mut` pointer, whose length is unknown, address space reserved
    (RESERVED), each page zero where it is first touched."""
    if t.kind == "pointer":
        return RESERVED, f'{RESERVED}::new("{name}")'
    if t.elem.kind == "vec":  # (as much room as the vector, which may grow in the call within it)
        return t.elem.text, f"{{ let mut v = vec![0.0; {name}.capacity()]; v.truncate({name}.len()); v }}"
    if t.elem.kind == "slice":
        e = t.elem.elem
        zero = "0.0" if e.kind == "scalar" else f"unsafe {{ core::mem::zeroed::<{e.text}>() }}"
        return f"Vec<{t.elem.elem.text}>", f"vec![{zero}; {name}.len()]"
    return t.elem.text, "unsafe { core::mem::zeroed() }"


def _param_type(rf: RFunction, name: str) -> str:
    return next(p.type.text for p in rf.params if p.name == name)


def _how(t: RType) -> str:
    if t.kind == "reference" and t.elem is not None and t.elem.kind == "slice":
        return "slice_mut_ptr" if t.mutable else "slice_ptr"
    if _pointee(t):
        return "object_mut_ptr" if t.mutable else "object_ptr"
    if t.kind == "reference":
        return "ref_mut_ptr" if t.mutable else "ref_ptr"
    return "value"


def _pointee(t: RType) -> str:
    """A reference to a Vec or another object of Rust's layout: its type (passed to C as bytes); else ""."""
    return t.elem.text if t.kind == "reference" and t.elem is not None and t.elem.kind in ("vec", "object") else ""


def _ffi_type(t: RType) -> str:
    """How the C function's parameter is declared to Rust (a Vec as bytes: Rust's layout is no C type)."""
    if _pointee(t):
        return f"*{'mut' if t.mutable else 'const'} u8"
    if t.kind in ("reference", "pointer") and t.elem is not None:
        inner = t.elem.elem if t.elem.kind == "slice" and t.elem.elem is not None else t.elem
        return f"*{'mut' if t.mutable else 'const'} {inner.text}"
    return t.text


def _shadow(t: RType, reverse: bool, times: int, slice_: bool) -> RType:
    """The type of a parameter's shadow: writable in reverse mode (gradients accumulate into it);
    in forward mode as the parameter is; N interleaved lanes of a scalar or of what a reference
    (not to a slice, whose length the wrapper checks) points to, an array of N of them."""
    if t.kind == "scalar":
        if times > 1:
            return RType("reference", f"&[{t.text}; {times}]", t.span, elem=RType("array", f"[{t.text}; {times}]",
                                                                                  t.span, elem=t, count=times))
        return t
    mutable = t.mutable or reverse
    if t.kind == "reference" and t.elem is not None and times > 1 and not slice_:
        lanes = RType("array", f"[{t.elem.text}; {times}]", t.span, elem=t.elem, count=times)
        return RType("reference", f"&{'mut ' if mutable else ''}{lanes.text}", t.span, mutable=mutable, elem=lanes)
    if t.kind == "reference":
        inner = t.elem.text if t.elem is not None else "?"
        return RType("reference", f"&{'mut ' if mutable else ''}{inner}", t.span, mutable=mutable, elem=t.elem)
    if t.kind == "pointer":
        inner = t.elem.text if t.elem is not None else "?"
        return RType("pointer", f"*{'mut' if mutable else 'const'} {inner}", t.span, mutable=mutable, elem=t.elem)
    return t


@dataclass(frozen=True)
class Shim:
    """adgen's function in place of one taking values of aggregate types (RFunction.shim)."""

    name: str
    primal: str
    lifetimes: tuple[str, ...]
    params: tuple[tuple[str, str], ...]
    returns: str | None
    call: str


def shims(unit: RustUnit, names: list[str]) -> list[Shim]:
    """The shims of the functions of these prototype names that have one (each once)."""
    out, seen = [], set()
    for name in names:
        rf = unit.rust.get(name)
        if rf is None or not rf.shim or rf.shim in seen:
            continue
        seen.add(rf.shim)
        params, args = [], []
        for p in rf.params:
            if p.name == "self":
                params.append(("this", f"&{'mut ' if rf.mutable_self else ''}{rf.owner}"))
            elif p.type.kind == "unit":
                args.append("()")
            elif p.by_value:
                params.append((p.name, f"&{p.type.text}"))
                args.append(f"*{p.name}")
            else:
                params.append((p.name, p.type.text))
                args.append(p.name)
        base = rf.generic.name if rf.generic is not None else rf.name
        turbofish = f"::<{', '.join(rf.generic.arguments)}>" if rf.generic is not None and not rf.dynamic else ""
        call = f"this.{base}{turbofish}({', '.join(args)})" if rf.owner else f"{base}{turbofish}({', '.join(args)})"
        returns = rf.returns.text if rf.returns is not None and rf.returns.kind != "unit" else None
        if rf.outcome == "option":
            params.append((OUTCOME, "&mut bool"))
            call = (f"match {call} {{ Some(v) => {{ *{OUTCOME} = true; v }} None => {{ *{OUTCOME} = false; "
                    "Default::default() } }")
            returns = rf.returns.elem.text
        elif rf.outcome == "result":
            params.append((OUTCOME, f"&mut Option<{rf.returns.name}>"))
            call = f"match {call} {{ Ok(v) => v, Err(e) => {{ *{OUTCOME} = Some(e); Default::default() }} }}"
            returns = rf.returns.elem.text
        lifetimes = rf.generic.lifetimes if rf.generic is not None else rf.lifetimes
        out.append(Shim(rf.shim, rf.name, lifetimes, tuple(params), returns, call))
    return out


def render_shims(unit: RustUnit, names: list[str]) -> str:
    return c_environment().get_template("by_value.rs.j2").render(shims=shims(unit, names))
