"""Closures passed in (specs/annotations.md, "Closures"): a function taking one
(`f: impl Fn(f64) -> f64`, `f: F` with `F: Fn(f64) -> f64`, or a reference to one) is
differentiated at each closure its crate passes to the derived function, found where the
crate's targets call it (commands/build/closures.py), as a generic function is at each
instantiation an entry names.

Each instance is adgen's function in the primal's place, generic over the closure's type,
`__adgen_closure_F(f: &C, ...)` (rust_wrappers.closure_shims), instantiated by the caller's
compile: its C view takes the closure as a `const` reference to bytes of Rust's layout. The
wrapper, generic over the closure, tells the instances apart by where it is called
(`#[track_caller]`). Instance `c0` is the wrappers' own call with a closure that is never
run: it gives the wrapper its signature before any caller is compiled."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from lark import Token, Tree

from adgen.base.diagnostics import Collector, error
from adgen.frontend.annotations import Entry, Word
from adgen.frontend.prototypes import Prototype
from adgen.frontend.rust_source import OPAQUE, Generic, RustTemplate, _written, impl_owner, split_arguments

CLOSURE = "__adgen_closure_"  # (the prefix of the shim in a function's place)
PLACEHOLDER = "__adgen_placeholder_"  # (the wrappers' own call of a wrapper, instance c0)
_FN = re.compile(r"^(?:for\s*<[^>]*>\s*)?(?:(?:::)?(?:std|core)::ops::)?Fn(?:Mut|Once)?\s*\(")


@dataclass(frozen=True)
class Closure:
    """The closure parameter of an instance: its name, whether it is a reference (`&F`), the
    closure's type as the wrapper declares it (the generic parameter's name, or adgen's for an
    `impl Fn`), its bounds (`Fn(f64) -> f64`), the shim's name, and where the instance's
    calls are (file, line, column; none for c0)."""

    param: str
    by_reference: bool
    type_name: str
    bounds: str
    shim: str
    derived: str = ""  # the derived function's (Rust) name this is an instance of
    index: int = 0

    @property
    def arguments(self) -> int:
        """How many arguments the closure takes (its `Fn(...)`'s), for c0's closure."""
        inner = re.search(r"Fn(?:Mut|Once)?\s*\((.*?)\)\s*(?:->|$|\+)", self.bounds)
        return len(split_arguments(inner.group(1))) if inner else 0


def closure_parameter(reader, tree: Tree, at: int):
    """The parameter of a function signature that takes a closure: (its name, whether by
    reference, the generic parameter's name or "", the bounds as written, the type's span),
    or None. A trait object (`&dyn Fn`) is not one (DynTemplate refuses it)."""
    bounds = _fn_bounds(reader, tree, at)
    for p in (k for k in tree.children if isinstance(k, Tree) and k.data == "named_param"):
        t = p.children[-1]
        by_reference = isinstance(t, Tree) and t.data == "reference"
        if by_reference and any(isinstance(k, Token) and k.type == "MUT" for k in t.children):
            continue  # (`&mut impl FnMut`: a generic parameter's error, as other `impl Trait`s)
        inner = t.children[-1] if by_reference else t
        name = next(k.value for k in p.children if isinstance(k, Token) and k.type == "NAME")
        if isinstance(inner, Tree) and inner.data == "impl_trait":
            written = reader.text(inner, at).strip()[4:].strip()
            if _FN.match(written):
                return name, by_reference, "", written, reader.span(t, at)
        elif isinstance(inner, Tree) and inner.data == "named":
            written = reader.text(inner, at).strip()
            if written in bounds:
                return name, by_reference, written, bounds[written], reader.span(t, at)
    return None


def _fn_bounds(reader, tree: Tree, at: int) -> dict[str, str]:
    """The generic type parameters bounded by a closure trait, with all their bounds (in the
    parameter list and the `where` clause), as written."""
    found: dict[str, list[str]] = {}
    generics = next((k for k in tree.children if isinstance(k, Tree) and k.data == "generics"), None)
    for g in (generics.children if generics is not None else ()):
        if isinstance(g, Tree) and g.data == "type_param":
            name, _, bounds = reader.text(g, at).partition(":")
            found.setdefault(name.strip(), []).extend([bounds.strip()] if bounds.strip() else [])
    where = next((k for k in tree.children if isinstance(k, Tree) and k.data == "where_clause"), None)
    for w in (where.children if where is not None else ()):
        if isinstance(w, Tree):
            name, _, bounds = reader.text(w, at).partition(":")
            if name.strip() in found and bounds.strip():
                found[name.strip()].append(bounds.strip())
    return {n: " + ".join(b) for n, b in found.items() if any(_FN.match(x.strip()) for x in
                                                              re.split(r"\+(?![^()<>]*[)>])", " + ".join(b)))}


class ClosureTemplate(RustTemplate):
    """A function taking a closure: derived at the closures the crate's targets pass to the
    derived function (`instances`, by derived name: each call's place), and at c0."""

    kind = "function taking a closure"
    example = ""

    def __init__(self, reader, tree: Tree, at: int, start: int, found, instances: dict | None):
        super().__init__(reader, tree, at, start)
        self.param, self.by_reference, self.generic, self.bounds, self.type_span = found
        self.instances = instances  # None: not a crate's build (no caller can be compiled)

    def readable(self, problems: Collector) -> bool:
        others = [n for n in self.names if n != self.generic]
        if self.instances is None:
            written = self.type_span.source.text[self.type_span.offset:self.type_span.offset + self.type_span.length]
            problems.add(error(f"a closure passed in ('{written}') is differentiated "
                               "by `cargo adgen build`, at the calls of the derived function in its crate's "
                               "targets, which a compile of one file does not see (build the crate with "
                               "`cargo adgen build`, or differentiate the function that makes the closure)",
                               self.type_span))
        elif others:
            problems.add(error(f"'{self.name}' takes a closure and has other generic parameters "
                               f"({', '.join(others)}): adgen differentiates a function of one closure whose "
                               "other types are concrete", self.span))
        elif impl_owner(self.reader.source.text, self.start):
            problems.add(error(f"'{self.name}' is a method taking a closure: adgen differentiates free functions "
                               "taking one (write a free function, taking the object as a parameter)", self.span))
        elif len([p for p in self.tree.children if isinstance(p, Tree) and p.data.endswith("_param")
                  for t in p.iter_subtrees_topdown() if t.data in ("impl_trait", "dyn_trait")]) > 1:
            problems.add(error(f"'{self.name}' takes more than one closure or trait object: adgen "
                               "differentiates a function of one", self.span))
        else:
            return True
        return False

    def unnamed(self, entry: Entry) -> list[Word]:
        """c0, then one instance for each place the crate's targets call the derived function."""
        known = (self.instances or {}).get(entry.name.text, [])
        return [Word(f"<c{k}:{entry.name.text}>", entry.name.span) for k in range(1 + len(known))]

    def instantiate(self, unit, arguments: str) -> Prototype | str:
        m = re.fullmatch(r"<c(\d+):(\w+)>", arguments.strip())
        if m is None:
            return ("its instances are the closures the crate passes to the derived function, which "
                    "`cargo adgen build` finds: name none")
        k, derived = int(m.group(1)), m.group(2)
        problems = Collector()
        reader = self.reader.instantiated({self.generic: OPAQUE} if self.generic else {}, problems)
        reader.closure = self.param
        made = reader.function(self.tree, self.at, self.start)
        if made is None:
            return problems.diagnostics[0].message if problems.diagnostics else "adgen cannot read it"
        prototype, rf = made
        type_name = self.generic or "__AdgenF"
        closure = Closure(self.param, self.by_reference, type_name, self.bounds, CLOSURE + self.name, derived, k)
        written = _written(self.reader, self.tree, self.at, self.start)
        written = replace(written, params=tuple(
            replace(p, type=replace(p.type, kind="other", text=("&" if self.by_reference else "") + type_name))
            if p.name == self.param else p for p in written.params))
        params = tuple(f"{type_name}: {self.bounds}" if n == self.generic else p
                       for n, p in zip(self.names, self.params)) or (f"{type_name}: {self.bounds}",)
        name = f"{CLOSURE}{self.name}__{derived}__c{k}"
        unit.rust[name] = replace(rf, name=f"{self.name}<c{k}>", closure=closure, generic=Generic(
            self.name, self.lifetimes, params, (type_name,), written, (f"c{k}",)))
        return replace(prototype, name=name)


def closure_template(reader, tree: Tree, at: int, start: int, calls: dict | None) -> ClosureTemplate | None:
    """The template of a function taking a closure (for rust_source.read_rust_unit), or None."""
    found = closure_parameter(reader, tree, at)
    return ClosureTemplate(reader, tree, at, start, found, calls) if found is not None else None
