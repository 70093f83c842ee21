"""Checks annotations against the C prototypes they sit on and turns each entry into a
Derivation, or into located errors: unknown words, arity, activity against type and mode,
return activities, widths, and the derived names."""

from __future__ import annotations

import re
from typing import Callable
from dataclasses import dataclass, replace

from adgen.frontend.abi import Signature, signature, signatures
from adgen.frontend.annotations import Annotation, Entry, Word, following, size_items
from adgen.base.diagnostics import Collector, Span, error, note
from adgen.base.units import BINARY
from adgen.frontend.model import ACTIVITY_WORDS, MAX_WIDTH, MODE_WORDS, Activity, Derivation, Mode
from adgen.frontend.prototypes import Prototype, Unit, describe_declared

C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn
_Static_assert _Thread_local alignas alignof bool constexpr false nullptr static_assert
thread_local true typeof typeof_unqual _BitInt _Decimal32 _Decimal64 _Decimal128
""".split())
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def attach(unit: Unit, annotations: list[Annotation], problems: Collector) -> list[tuple[Annotation, Entry | None,
                                                                                      Prototype]]:
    """Pairs each entry with the function its annotation stands before (with the annotation,
    whose marker says what the entry means); an `@inactive` annotation has no entry."""
    text = unit.source.text
    by_start = {f.start: f for f in reversed(unit.functions)}  # first declaration at a position
    skipped = getattr(unit, "skipped", ())
    pairs = []
    for a in annotations:
        if any(start <= a.span.offset < end for start, end in skipped):
            continue  # in an `#if` branch the build does not take (its function may be the other branch's)
        at = following(text, a.comment.end, annotations)
        function = by_start.get(at)
        if function is None and at in getattr(unit, "unreadable", ()):
            continue  # a Rust function whose signature has been reported already
        template = getattr(unit, "templates", {}).get(at)
        if not _ascii_name(a, function or template, problems):
            continue
        if function is None and template is not None:
            pairs += _instances(unit, a, template, problems)
            continue
        if function is None and at in getattr(unit, "refused", {}):
            problems.add(error(
                f"{a.marker} annotations stand before functions and member functions: {unit.refused[at]} cannot be "
                "differentiated directly yet (annotate a function that calls it)", a.span,
                [note("it is declared here", Span(unit.source, at))]))
            continue
        if function is None:
            problems.add(error(
                f"{a.marker} annotation is not followed by a function declaration (only whitespace and "
                "other @diff comments may stand between them)", a.span,
                [note("what follows it is here", Span(unit.source, at))] if at < len(text) else []))
            continue
        for e in a.entries:
            if e.template_args is not None:
                kind = "generic" if hasattr(unit, "rust") else "template"
                problems.add(error(f"'{function.name}' is not {_GENERIC[hasattr(unit, 'rust')]}: its entries name "
                                   f"no {kind} arguments", e.template_args.span,
                                   [note("it is declared here", function.span)]))
        pairs += [(a, e, function) for e in a.entries] or [(a, None, function)]
    return pairs


_GENERIC = {False: "a function template", True: "generic"}


def _ascii_name(a: Annotation, function, problems: Collector) -> bool:
    """Whether the function an annotation stands before has an ASCII name: C11 allows others
    (`féλ`), but the build cannot yet find such a function in the compiled code (LLVM escapes its
    name). (The names an annotation writes are ASCII: its grammar's.)"""
    if function is None or function.name.isascii():
        return True
    problems.add(error(f"{a.marker} annotations stand before functions whose names are ASCII: '{function.name}' is "
                       "not, and adgen cannot yet find it in the compiled code (rename it, or annotate a function "
                       "with an ASCII name that calls it)", a.span,
                       [note(f"'{function.name}' is declared here", function.span)]))
    return False


def _instances(unit: Unit, a: Annotation, template, problems: Collector) -> list:
    """The entries of an annotation before a C++ function template (a generic Rust function),
    each with the instantiation its template arguments name (`norm_grad_d<double>: ...`)."""
    pairs = []
    entries = []
    for e in a.entries:  # (an entry naming none derives those the template says: `unnamed`)
        derived = template.unnamed(e) if e.template_args is None else []
        entries += [replace(e, template_args=w) for w in derived] or [e]
    for e in entries:
        if e.template_args is None:
            problems.add(error(f"'{template.name}' is a {template.kind}: name the instantiation each entry "
                               f"derives, as `{e.name.text}{template.example}: ...`", e.name.span,
                               [note("it is declared here", template.span)]))
            continue
        made = template.instantiate(unit, e.template_args.text)
        if isinstance(made, str):
            problems.add(error(f"cannot instantiate '{template.name}{e.template_args.text}': {made}",
                               e.template_args.span, [note("it is declared here", template.span)]))
            continue
        pairs.append((a, e, made))
    return pairs


def check_entry(entry: Entry, f: Prototype, problems: Collector) -> Derivation | None:
    """The Derivation an entry asks for, or None after adding what is wrong to `problems`."""
    before = len(problems.diagnostics)
    name = entry.name.text
    if not _IDENTIFIER.match(name):
        problems.add(error(f"derived name '{name}' is not a C identifier", entry.name.span))
    elif name in C_KEYWORDS:
        problems.add(error(f"derived name '{name}' is a C keyword", entry.name.span))
    mode = _word(entry.mode, MODE_WORDS, "mode", problems) if entry.mode else None
    width = 1
    if entry.width is not None:
        width = int(entry.width.text)
        if not 1 <= width <= MAX_WIDTH:
            problems.add(error(f"width must be between 1 and {MAX_WIDTH}, not {width}", entry.width.span))
    acts = [_word(w, ACTIVITY_WORDS, "activity", problems) for w in entry.activities]
    ret = _word(entry.returns, ACTIVITY_WORDS, "activity", problems) if entry.returns else None
    if len(problems.diagnostics) > before:
        return None
    declared_at = note(f"'{f.name}' is declared here", f.span)
    if f.variadic:
        problems.add(error(f"'{name}' derives from variadic function '{f.name}', which adgen cannot "
                           "differentiate", entry.name.span, [declared_at]))
        return None
    if len(acts) != len(f.params):
        problems.add(error(f"'{name}' lists {_count(len(acts), 'activity', 'activities')}, but '{f.name}' "
                           f"takes {_count(len(f.params), 'parameter', 'parameters')}",
                           entry.params_span, [declared_at]))
        return None
    mode = _mode(entry, mode, acts, ret, problems)
    if mode is None:
        return None
    for word, act, p in zip(entry.activities, acts, f.params):
        rule = act.value.param
        if rule is None:
            problems.add(error(f"'{act.word}' is a return activity; it cannot describe parameter "
                               f"'{p.name}'", word.span))
        elif not rule.accepts(p.ctype):
            problems.add(error(f"activity '{act.word}' needs {rule.wants}, but parameter '{p.name}' has "
                               f"type '{p.ctype.spelling}'{_POINTING if p.ctype.pointing_by_value else ''}", word.span,
                               [declared_at]))
    _check_layouts(entry, acts, f, problems)
    if mode is Mode.SPLIT and f.by_value:
        what = "its result" if f.returns.by_value else \
            "parameter '" + next(p.name for p in f.params if p.ctype.by_value) + "'"
        problems.add(error(f"split mode takes no struct or complex number by value ({what} of '{f.name}'): its "
                           "tape keeps pointers and scalars; pass it by pointer", entry.name.span, [declared_at]))
    rtype = f.returns
    if rtype.is_void and ret is not None:
        problems.add(error(f"'{f.name}' returns void, so '{name}' takes no return activity",
                           entry.returns.span, [declared_at]))
    elif not rtype.is_void and ret is None:
        problems.add(error(f"'{f.name}' returns '{rtype.spelling}', so '{name}' needs a return activity "
                           f"('-> const' or a {mode.value}-mode one)", entry.params_span, [declared_at]))
    elif ret is not None:
        rule = ret.value.returns
        if rule is None:
            allowed = ", ".join(a.word for a in Activity if a.value.returns and mode in a.value.modes)
            problems.add(error(f"'{ret.word}' cannot be a return activity; in {mode.value} mode use one of "
                               f"{allowed}", entry.returns.span))
        elif not rule.accepts(rtype):
            problems.add(error(f"return activity '{ret.word}' needs {rule.wants}, but '{f.name}' returns "
                               f"'{rtype.spelling}'{_POINTING if rtype.pointing_by_value else ''}", entry.returns.span,
                               [declared_at]))
    budget = _budget(entry.budget, mode, problems) if entry.budget else None
    if len(problems.diagnostics) > before:
        return None
    sizes = _declared_sizes(entry.name.span.source.text, f) if budget is not None else ()
    return Derivation(name, f, mode, width, tuple(acts), ret, entry, budget=budget, sizes=sizes)


def _declared_sizes(text: str, f: Prototype) -> tuple[tuple[int, int | str, int], ...]:
    """The lengths `@size(p=n)` in the source gives `f`'s pointer parameters (file-wide, as for
    `adgen check`; names that are not `f`'s are another function's)."""
    params = {p.name: k for k, p in enumerate(f.params)}
    out = {}
    for item in size_items(text):
        name, _, value = (part.strip() for part in item.partition("="))
        k = params.get(name)
        if k is None or not f.params[k].ctype.is_pointer or not f.params[k].ctype.element_size:
            continue
        if value.isdigit():
            out[k] = (k, int(value), f.params[k].ctype.element_size)
        elif value in params and not f.params[params[value]].ctype.is_pointer:
            out[k] = (k, f"#{params[value]}", f.params[k].ctype.element_size)
    return tuple(out.values())


_UNITS = {"": 1, "B": 1, **dict(BINARY), "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12}


def _budget(word: Word, mode: Mode, problems: Collector) -> int | None:
    """`within SIZE`: bytes, for reverse mode (specs/annotations.md, "Memory budgets")."""
    m = re.fullmatch(r"([0-9]+)([A-Za-z]*)", word.text)
    if m is None or m.group(2) not in _UNITS or int(m.group(1)) == 0:
        problems.add(error(f"'{word.text}' is not a memory size: write a positive number of bytes with a unit, "
                           "such as 64MiB, 512KiB or 2GiB", word.span))
        return None
    if mode is Mode.FORWARD:
        problems.add(error("a memory budget is for reverse mode, but this entry is forward mode: forward mode keeps "
                           "nothing for later", word.span))
        return None
    return int(m.group(1)) * _UNITS[m.group(2)]


def check_nested(pending: list[tuple[Entry, Unit]], derived: list[tuple[Derivation | None, Entry, Unit]],
                 problems: Collector, adapt: Callable | None = None) -> list[tuple[Derivation, Unit]]:
    """The entries deriving another entry's derived function (`of NAME`, any depth), each once
    the one it derives is checked; NAME must be an entry of the same file, and no cycle. `adapt`
    (entry, inner derivation, unit) makes an entry one of the derived function's C view, or None
    after errors (a Rust wrapper's parameters are not its C function's)."""
    known = {(id(u), e.name.text): d for d, e, u in derived}
    out = []
    while pending:
        ready = [(e, u) for e, u in pending if (id(u), e.of.text) in known]
        if not ready:
            break
        for entry, unit in ready:
            pending.remove((entry, unit))
            inner = known[(id(unit), entry.of.text)]
            if inner is not None and inner.budget is not None:
                problems.add(error(f"'{entry.name.text}' derives '{entry.of.text}', whose loops are checkpointed "
                                   "within a memory budget: such a gradient cannot be differentiated again yet "
                                   f"(give '{entry.of.text}' no budget, or derive another entry without one)",
                                   entry.of.span))
                inner = None
            if inner is not None and adapt is not None:
                adapted = adapt(entry, inner, unit)
                entry, inner = (adapted, inner) if adapted is not None else (entry, None)
            d = _check_of(entry, inner, problems) if inner is not None else None
            known[(id(unit), entry.name.text)] = d
            if d is not None:
                out.append((d, unit))
    for entry, unit in pending:
        waiting = {e.name.text: e for e, u in pending if u is unit}
        if entry.of.text in waiting:
            problems.add(error(f"'{entry.name.text}' derives '{entry.of.text}', which derives '{entry.name.text}' "
                               f"again, directly or not: derived functions cannot derive each other in a cycle",
                               entry.of.span))
        else:
            problems.add(error(f"'{entry.name.text}' derives '{entry.of.text}', but no @diff entry of this file "
                               f"makes a function of that name", entry.of.span))
    return out


def _check_of(entry: Entry, inner: Derivation, problems: Collector) -> Derivation | None:
    if inner.mode is Mode.SPLIT:
        problems.add(error(f"'{entry.name.text}' derives '{inner.name}', a split-mode entry, whose functions "
                           "share a tape: derive a reverse-mode entry instead", entry.of.span))
        return None
    sig = signature(inner)
    if sig.result_struct is not None:
        problems.add(error(f"'{entry.name.text}' derives '{inner.name}', which returns a struct "
                           f"('{sig.result_struct}'); a derived function can be derived again when it returns one "
                           "value or nothing (make its scalars dup pointers, or its return dualonly or activeonly)",
                           entry.of.span, [note(f"'{inner.name}' is made here", inner.entry.name.span)]))
        return None
    d = check_entry(entry, sig.as_function(), problems)
    return None if d is None else replace(d, inner=inner)


_INTERLEAVED = {Activity.DUPV, Activity.DUALV}


def _check_layouts(entry: Entry, acts, f: Prototype, problems: Collector) -> None:
    """Pointer shadows are either all separate (dup, dual) or all interleaved (dupv, dualv):
    the derivative code follows one memory layout. A struct by value is memory to it, with
    separate derivatives."""
    pointers = [(w, a, p) for w, a, p in zip(entry.activities, acts, f.params)
                if (p.ctype.is_pointer or p.ctype.by_value) and a.value.param is not None and a is not Activity.CONST]
    interleaved = [x for x in pointers if x[1] in _INTERLEAVED]
    separate = [x for x in pointers if x[1] not in _INTERLEAVED]
    if interleaved and separate:
        (iw, ia, ip), (sw, sa, sp) = interleaved[0], separate[0]
        later = iw if iw.span.offset > sw.span.offset else sw
        problems.add(error(f"'{entry.name.text}' mixes interleaved and separate pointer shadows: '{ip.name}' is "
                           f"'{ia.word}', '{sp.name}' is '{sa.word}'; use one layout for all pointers", later.span))


def _word(word: Word, table: dict, what: str, problems: Collector):
    found = table.get(word.text.lower())
    if found is None:
        choices = ", ".join(dict.fromkeys(v.value if isinstance(v, Mode) else v.word for v in table.values()))
        problems.add(error(f"unknown {what} '{word.text}'; expected one of {choices}", word.span))
    return found


def _mode(entry: Entry, mode: Mode | None, acts, ret, problems: Collector) -> Mode | None:
    words = list(entry.activities) + ([entry.returns] if entry.returns else [])
    used = list(zip(words, acts + ([ret] if ret else [])))
    if mode is None:
        forward = [(w, a) for w, a in used if Mode.REVERSE not in a.value.modes]
        reverse = [(w, a) for w, a in used if Mode.FORWARD not in a.value.modes]
        if forward and reverse:
            (fw, fa), (rw, ra) = forward[0], reverse[0]
            later = fw if fw.span.offset > rw.span.offset else rw
            problems.add(error(f"forward and reverse activities mixed in '{entry.name.text}': '{fa.word}' is "
                               f"forward mode, '{ra.word}' is reverse mode", later.span))
            return None
        return Mode.FORWARD if forward else Mode.REVERSE
    bad = [(w, a) for w, a in used if mode not in a.value.modes]
    for w, a in bad:
        other = "forward" if Mode.FORWARD in a.value.modes else "reverse"
        problems.add(error(f"'{a.word}' is a {other}-mode activity, but '{entry.name.text}' is "
                           f"{mode.value} mode", w.span))
    return None if bad else mode


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


_POINTING = (", a struct by value holding a pointer to floating data: the derivatives of what it points to have "
             "no place in a gradient or tangent of its type (pass it by pointer or reference, or make it const)")


def check_overloads(derived: list[tuple[Derivation, Unit]], problems: Collector) -> list[tuple[Derivation, Unit]]:
    """C++ overloads (specs/cxx.md): entries of functions with C++ linkage in the same namespaces
    may share a derived name where their derived functions' parameter types differ. adgen tells
    the second and later apart as `NAME__2`...; they are declared by the shared name. What
    shares a name otherwise is left to check_names (used twice); an `of` entry naming a shared
    name is an error."""
    groups: dict[tuple, list[int]] = {}
    for i, (d, unit) in enumerate(derived):
        if d.primal.cxx_linkage and d.inner is None:
            groups.setdefault((id(unit), d.primal.scope, d.name), []).append(i)
    out = list(derived)
    shared: dict[tuple[int, str], Derivation] = {}
    for (unit_id, _, name), at in groups.items():
        kinds = [signature(derived[i][0]).parameter_types() for i in at]
        if len(at) < 2 or len(set(kinds)) < len(kinds):
            continue
        shared[(unit_id, name)] = derived[at[0]][0]
        for k, i in enumerate(at[1:], start=2):
            d, unit = derived[i]
            out[i] = (replace(d, name=f"{name}__{k}", declared=name), unit)
    for d, unit in derived:
        first = shared.get((id(unit), d.inner.name)) if d.inner is not None else None
        if first is not None:
            problems.add(error(f"'{d.inner.name}' names C++ overloads, derived from different functions: give the "
                               f"one '{d.name}' derives a name of its own", d.entry.of.span,
                               [note("one of them is made here", first.entry.name.span)]))
    return out


def check_names(derived: list[tuple[Derivation, Unit]], problems: Collector) -> list[Signature]:
    """Derived names are C identifiers no one else uses, and the names each signature makes
    up (shadows, seeds, result fields) do not clash."""
    seen: dict[str, Derivation] = {}
    out = []
    for d, unit, sig in ((d, unit, sig) for d, unit in derived for sig in signatures(d)):
        for name in filter(None, (sig.name, sig.result_struct)):
            first = seen.get(name)
            if first is not None:
                problems.add(error(f"derived name '{name}' is used twice", d.entry.name.span,
                                   [note("first used here", first.entry.name.span)]))
                break
            if name in unit.declared:
                problems.add(error(f"derived name '{name}' is already declared as a "
                                   f"{unit.declared[name].kind}", d.entry.name.span,
                                   [describe_declared(name, unit.declared[name], unit)]))
                break
            seen[name] = d
        for slots, what in ((sig.params, "parameter"), (sig.fields, "result field")):
            names = [s.name for s in slots]
            for clash in sorted({n for n in names if names.count(n) > 1}):
                problems.add(error(f"'{d.name}' would have two {what}s named '{clash}'; rename the "
                                   f"parameter of '{d.primal.name}' that clashes", d.entry.name.span,
                                   [note(f"'{d.primal.name}' is declared here", d.primal.span)]))
        out.append(sig)
    return out


@dataclass(frozen=True)
class Custom:
    """A derivative written by hand: `function` is `primal`'s derivative as `derivation` says,
    with exactly the signature adgen would generate for it (`signature`)."""

    primal: Prototype
    function: Prototype
    derivation: Derivation
    signature: Signature

    @property
    def active(self) -> tuple[bool, ...]:
        return tuple(a is not Activity.CONST for a in self.derivation.activities)

    @property
    def of_arrays(self) -> bool:
        """A reverse derivative of a function of arrays (`dup` pointers): adgen's reverse sweep
        calls it in place of the reverse function it would make, instead of reading partials."""
        return Activity.DUP in self.derivation.activities

    def partials(self) -> list[tuple[list[str], str]]:
        """How to get the partial derivative of the result with respect to each active parameter
        from the hand-written function: its arguments (a seed of 1, or tangents 1 for that
        parameter and 0 for the others) and the field of its result holding the partial."""
        sig, d = self.signature, self.derivation
        actives = [p.name for p, on in zip(d.primal.params, self.active) if on]

        def args(lit: str) -> list[str]:
            out = []
            for slot in sig.params:
                if not slot.role:
                    out.append(slot.name)
                elif slot.role.startswith("seed"):
                    out.append("1")
                else:  # "tangent of P"
                    out.append("1" if slot.role.split(" of ", 1)[1] == lit else "0")
            return out

        if d.mode is Mode.REVERSE:
            return [(args(""), self._field(f"d_{p}")) for p in actives]
        return [(args(p), self._field("d_ret")) for p in actives]

    def gradients(self) -> list[tuple[str, str]]:
        """For a derivative of arrays: the type and the field of its result holding the gradient
        of each active scalar parameter, in order."""
        d = self.derivation
        return [(p.ctype.spelling, self._field(f"d_{p.name}"))
                for p, a in zip(d.primal.params, d.activities) if a is Activity.ACTIVE]

    def _field(self, name: str) -> str:
        return f"__adgen_r.{name}" if self.signature.result_struct else "__adgen_r"


_CUSTOM_ACTIVITIES = {Activity.CONST, Activity.ACTIVE, Activity.DUAL}
_ARRAY_ACTIVITIES = {Activity.CONST, Activity.ACTIVE, Activity.DUP}


def check_custom(entry: Entry, function: Prototype, unit: Unit, problems: Collector,
                 expected: Callable[[Signature, Prototype], str | None] | None = None) -> Custom | None:
    """`@derivative(f: ...)` above `function`: f must be declared, the activities must suit f
    (as for @diff), and `function` must have the signature adgen would give that entry:
    `expected` says, where it has not, which it should have (by default, C's)."""
    before = len(problems.diagnostics)
    if entry.of is not None:
        problems.add(error("a derivative written by hand is of a C function, not of a derived function ('of')",
                           entry.of.span))
        return None
    primal = next((f for f in unit.functions if f.name == entry.name.text), None)
    if primal is None:
        problems.add(error(f"@derivative names '{entry.name.text}', which is not a function declared in this file "
                           "(declare it before the derivative)", entry.name.span))
        return None
    named = Entry(Word(function.name, entry.name.span), entry.mode, entry.width, entry.activities, entry.returns,
                  entry.params_span)
    d = check_entry(named, primal, problems)
    if d is None:
        return None
    where = [note(f"'{primal.name}' is declared here", primal.span)]
    if d.width != 1:
        problems.add(error("a derivative written by hand has width 1 (adgen calls it once per lane)",
                           entry.width.span))
    if {Activity.DUP, Activity.DUPONLY, Activity.DUPV} & set(d.activities):
        _check_of_arrays(entry, d, primal, where, problems)
    else:
        _check_of_scalars(entry, d, primal, where, problems)
    if len(problems.diagnostics) > before:
        return None
    sig = signature(d)
    wanted = (expected or _c_signature)(sig, function)
    if wanted is not None:
        problems.add(error(f"'{function.name}' is declared as the derivative of '{primal.name}', but its signature is "
                           f"not the one adgen gives that entry: {wanted}", function.span, where))
        return None
    return Custom(primal, function, d, sig)


def _check_of_scalars(entry: Entry, d: Derivation, primal: Prototype, where: list, problems: Collector) -> None:
    """A derivative adgen reads partials off: scalars of one floating type in, one out."""
    floating = {p.ctype.spelling for p, a in zip(primal.params, d.activities) if a is not Activity.CONST}
    for word, act, p in zip(entry.activities, d.activities, primal.params):
        if act is Activity.DUAL and p.ctype.is_pointer:
            problems.add(error(f"a derivative written by hand in forward mode takes floating scalars by value: "
                               f"forward mode of a function of arrays is not built, not 'dual' on "
                               f"'{p.ctype.spelling} {p.name}' (write its reverse derivative, with 'dup')",
                               word.span, where))
        elif act not in _CUSTOM_ACTIVITIES or p.ctype.by_value or (act is not Activity.CONST
                                                                   and not p.ctype.is_floating):
            problems.add(error(f"a derivative written by hand takes parameters as const, active or dup (reverse "
                               f"mode) or dual (forward mode), floating ones by value, not '{act.word}' on "
                               f"'{p.ctype.spelling} {p.name}'", word.span, where))
    if d.returns in (None, Activity.CONST) or not primal.returns.is_floating:
        problems.add(error("a derivative written by hand is of a function returning float or double, with an "
                           "active or dual return (or of one with dup pointers)",
                           entry.returns.span if entry.returns else entry.params_span, where))
    elif len(floating | {primal.returns.spelling}) > 1:
        problems.add(error(f"a derivative written by hand needs the function's floating parameters and result of "
                           f"one type, not {' and '.join(sorted(floating | {primal.returns.spelling}))}",
                           entry.params_span, where))


def _check_of_arrays(entry: Entry, d: Derivation, primal: Prototype, where: list, problems: Collector) -> None:
    """A reverse derivative of a function of arrays: pointers dup or const, floating scalars
    active or const, a floating result active (or activeonly) or const, or none."""
    for word, act, p in zip(entry.activities, d.activities, primal.params):
        if act not in _ARRAY_ACTIVITIES or p.ctype.by_value or (act is Activity.ACTIVE and not p.ctype.is_floating):
            problems.add(error(f"a derivative written by hand with dup pointers takes parameters as dup "
                               f"(pointers), active (float or double scalars) or const, not '{act.word}' on "
                               f"'{p.ctype.spelling} {p.name}'", word.span, where))
    if primal.returns.by_value:
        problems.add(error("a derivative written by hand with dup pointers is of a function returning a float, a "
                           "double or nothing", entry.returns.span if entry.returns else entry.params_span, where))


def _c_signature(sig: Signature, f: Prototype) -> str | None:
    """None where `f` has the C signature of `sig`; else that signature, said."""
    if _same_signature(sig, f):
        return None
    return sig.prototype() + (f", with {sig.returns} a struct of {', '.join(x.declaration() for x in sig.fields)}"
                              if sig.result_struct else "")


def _same_signature(sig: Signature, f: Prototype) -> bool:
    def same(a: str, b: str) -> bool:
        norm = lambda s: re.sub(r"\s+", " ", re.sub(r"\brestrict\b", "", s)).replace(" *", "*").strip()
        return norm(a) == norm(b)

    if len(sig.params) != len(f.params) or not all(same(s.spelling, p.ctype.declared)
                                                   for s, p in zip(sig.params, f.params)):
        return False
    if sig.result_struct is None:
        return same(sig.returns, f.returns.declared)
    fields = f.returns.fields
    return f.returns.by_value and len(fields) == len(sig.fields) and all(
        name == s.name and count == s.count and ffi == s.ffi for (name, ffi, count, _), s in zip(fields, sig.fields))
