"""Reads the Rust functions annotated with `// @diff(...)` (specs/annotations.md, "Rust sources")
with the Lark grammar rust.lark, and gives each its *C view*: the prototype of the same
function as C sees it at the machine level, which the rest of adgen (checks, the ABI, stubs,
kernels) works on. A slice `&[f64]` is two C parameters, the pointer and `x_len`; a reference or
raw pointer is a C pointer; scalars are C scalars; the #[repr(C)] structs pointed to become C
typedefs of the same layout. What has no C view (generics, `self`, slices of slices, structs and
arrays by value, tuples, trait objects, `String`, `Vec`...) is a located error."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from adgen.base.parsers import cached_lark
from adgen.frontend.annotations import Annotation, Entry, Word, following
from adgen.frontend.comments import closing, find_rust_comments
from adgen.frontend.ctype import CType
from adgen.base.diagnostics import Collector, Diagnostic, SourceFile, Span, error, note
from adgen.frontend.languages import is_rust
from adgen.frontend.local_type import LocalType
from adgen.frontend.model import ACTIVITY_WORDS, Activity, Derivation
from adgen.frontend.prototypes import Prototype, Param, Unit

# Rust scalars: their C spelling, size, whether floating, and how ctypes passes them.
SCALARS = {
    "f64": ("double", 8, True, "double"), "f32": ("float", 4, True, "float"),
    "i8": ("signed char", 1, False, "int8"), "u8": ("unsigned char", 1, False, "uint8"),
    "i16": ("short", 2, False, "int16"), "u16": ("unsigned short", 2, False, "uint16"),
    "i32": ("int", 4, False, "int32"), "u32": ("unsigned int", 4, False, "uint32"),
    "i64": ("long long", 8, False, "int64"), "u64": ("unsigned long long", 8, False, "uint64"),
    "isize": ("long", 8, False, "int64"), "usize": ("unsigned long", 8, False, "uint64"),
    "i128": ("__int128", 16, False, ""), "u128": ("unsigned __int128", 16, False, ""),
    "bool": ("_Bool", 1, False, "bool"),
}
VOID = CType("()", True, False, False, False, None, (), portable="void")


@dataclass(frozen=True)
class RType:
    """A Rust type as written, read enough to lay it out in C."""

    kind: str  # scalar unit reference pointer slice array named (a #[repr(C)] struct of the file) vec object other
    text: str  # as written
    span: Span
    name: str = ""  # scalar or struct name
    mutable: bool = False  # &mut, *mut
    elem: "RType | None" = None  # pointee, slice or array element
    count: int = 0  # array length


@dataclass(frozen=True)
class RParam:
    name: str
    type: RType
    span: Span

    @property
    def by_value(self) -> bool:
        """A struct, tuple, array or `()` passed by value (Rust's calling convention for them is
        not C's: a function of adgen's own takes its address instead, `RFunction.shim`)."""
        return self.type.kind in _AGGREGATES


@dataclass(frozen=True)
class RFunction:
    """A Rust function as its wrappers see it, beside its C view."""

    name: str
    params: tuple[RParam, ...]
    returns: RType | None
    span: Span
    owner: str = ""  # a method's: the type of its `impl` (its wrappers are methods of it too)
    generic: "Generic | None" = None  # an instantiation's: the generic function it is of
    lifetimes: tuple[str, ...] = ()  # its lifetime parameters (`'a`)
    mutable_self: bool = False  # a method of `&mut self`
    unsafe: bool = False  # an `unsafe fn`: its wrappers are too
    visibility: str = "pub"  # its wrappers': a free function's own (`pub(crate)`, "" for private), a method's `pub`
    dynamic: tuple[str, str] = ()  # an instantiation of a function of a trait object (DynTemplate): (the
    # parameter, its trait)
    closure: object = None  # an instance of a function taking a closure: its rust_closures.Closure

    @property
    def outcome(self) -> str:
        """"option" or "result" where it returns `Option<f64>` or `Result<f64, E>` (its shim
        returns the float, the outcome through a last parameter), else ""."""
        return self.returns.kind if self.returns is not None and self.returns.kind in ("option", "result") else ""

    @property
    def shim(self) -> str:
        """Where it takes a value of an aggregate type (or `()`), the function adgen
        differentiates in its place: one taking the value's address (`__adgen_by_value_f`, of
        `rust_shims`); else ""."""
        if not any(p.by_value for p in self.params) and not self.outcome and not self.dynamic:
            return ""
        return BY_VALUE + re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_",
                                                                f"{self.owner}_{self.name}".strip("_"))).strip("_")


@dataclass(frozen=True)
class Generic:
    """A generic function an instantiation is of: its generic parameters (lifetimes; type and
    const parameters, in order, as a trait declares them), its signature as written, and the
    arguments of this instantiation."""

    name: str
    lifetimes: tuple[str, ...]
    params: tuple[str, ...]  # `T`, `const N: usize`
    names: tuple[str, ...]  # `T`, `N`
    written: RFunction
    arguments: tuple[str, ...]


@dataclass
class RustUnit(Unit):
    """A Rust source's Unit: the C views of its annotated functions (`functions`), their Rust
    signatures by name, and the C typedefs of the #[repr(C)] structs they point to."""

    rust: dict[str, RFunction] = field(default_factory=dict)
    c_types: list[LocalType] = field(default_factory=list)
    unreadable: set[int] = field(default_factory=set)  # where functions whose signatures are in `errors` start
    # an instantiation's entries: the C name of each derived function -> the name its Rust wrapper has
    generic_names: dict[str, str] = field(default_factory=dict)
    generic_shapes: dict = field(default_factory=dict)  # (owner, wrapper name) -> the first entry's shape, where
    # std::autodiff's `Dualv` on a slice: its N tangents one after another in one slice (lane k the k-th
    # block), which the wrapper passes as adgen's N separate lanes (`dual`); by (derived name, parameter)
    blocked: set = field(default_factory=set)
    # `const` `&mut` float data (rust_source._scratch_type): passed with a scratch shadow the wrapper makes, by
    # (derived name, parameter)
    scratch: set = field(default_factory=set)
    symbol_tag: str = ""  # what its derived functions' C names end with (generate._symbols), which Rust's lack
    # integers given a derivative's activity, by derived name: ({parameter: activity}, the result's or None)
    ghosts: dict = field(default_factory=dict)
    remarks: list = field(default_factory=list)  # (warnings: Diagnostic.render's text)
    by_hand: list = field(default_factory=list)  # its checked @derivative annotations (checks.Custom), in order
    # where the crate's targets call each derived function of a closure: derived name -> [(file, line, column)],
    # instance k's at k - 1 (rust_closures.py); None where the source is built on its own, not a crate's
    closure_calls: dict | None = None

    def rust_name(self, name: str) -> str:
        """The Rust name of a C function of its derivatives (`grad__adgen_safe_forward` -> `grad_forward`)."""
        return name.replace(self.symbol_tag, "", 1) if self.symbol_tag else name


@cache
def _parser(start: str) -> Lark:
    grammar = (Path(__file__).with_name("rust.lark")).read_text()
    return cached_lark(grammar, start=start, parser="lalr", propagate_positions=True)


def read_rust_unit(source: SourceFile, annotations: list[Annotation], closure_calls: dict | None = None,
                   closure_template=None) -> RustUnit:
    """The functions the annotations stand before; what cannot be read is in `errors`.
    `closure_calls`: for a crate's source, where its targets call the derived functions of
    closures (RustUnit.closure_calls); `closure_template(reader, tree, at, start, calls)`, the
    template of a function taking a closure, or None (rust_closures.py, which builds on this
    module's templates)."""
    unit = RustUnit(source, [], {}, {}, [], closure_calls=closure_calls)
    problems = Collector()
    structs = _structs(source, problems)
    reader = _Types(source, structs, problems)
    seen = set()
    for a in annotations:
        at = following(source.text, a.comment.end, annotations)
        if at in seen or at >= len(source.text):
            continue
        seen.add(at)
        before = len(problems.diagnostics)
        parsed = _signature(source, at, problems)
        template = closure_template(reader, *parsed, closure_calls) if parsed and closure_template else None
        if template is not None:
            if template.readable(problems):
                unit.templates[at] = template
            else:
                unit.unreadable.add(at)
            continue
        dyn = _trait_object(reader, *parsed) if parsed is not None and not _generic_parameters(parsed[0]) else None
        if dyn is not None:
            template = DynTemplate(reader, *parsed, *dyn)
            if template.readable(problems):
                unit.templates[at] = template
            else:
                unit.unreadable.add(at)
            continue
        if parsed is not None and _generic_parameters(parsed[0]):
            template = RustTemplate(reader, *parsed)
            if template.readable(problems):
                unit.templates[at] = template
            else:
                unit.unreadable.add(at)
            continue
        fn = reader.function(*parsed, by_hand=a.marker == "@derivative") if parsed is not None else None
        if fn is not None:
            unit.rust[fn[0].name] = fn[1]
            unit.functions.append(fn[0])
        elif len(problems.diagnostics) > before:
            unit.unreadable.add(at)
    for a in annotations:  # the functions derivatives written by hand are of, wherever the file defines them
        for e in a.entries if a.marker == "@derivative" else ():
            start = _defined(source.text, e.name.text) if e.name.text not in unit.rust else None
            parsed = _signature(source, start, problems) if start is not None else None
            fn = reader.function(*parsed) if parsed is not None and not _generic_parameters(parsed[0]) else None
            if fn is not None:
                unit.rust[fn[0].name] = fn[1]
                unit.functions.append(fn[0])
    unit.errors = problems.diagnostics
    unit.c_types = [LocalType(name, text, 0) for name, text in reader.typedefs.items()]
    return unit


def _defined(text: str, name: str) -> int | None:
    """Where the file's free function `name` starts (its attributes' first line), or None."""
    for m in re.finditer(r"(?m)^[ \t]*((?:(?:pub(?:\([^)]*\))?|const|async|unsafe|extern\s+\"[^\"]*\")\s+)*fn\s+"
                         + re.escape(name) + r"\b)", _plain_text(text)):
        if not impl_owner(text, m.start(1)):
            return m.start(1)
    return None


def _signature(source: SourceFile, start: int, problems: Collector):
    """The item's parsed signature, from past its attributes (at `start`) to its body."""
    text, at = source.text, start
    while text.startswith("#[", at) or text.startswith("#![", at):
        at = closing(text, text.index("[", at))
        while at < len(text) and text[at].isspace():
            at += 1
        at = _skip_comments(text, at)
    end, depth = at, 0
    while end < len(text) and not (depth == 0 and text[end] in "{;"):
        depth += (text[end] in "([") - (text[end] in ")]")
        end += 1
    if not re.match(r"(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe|extern(?:\s+\"[^\"]*\")?)\s+)*fn\b",
                    text[at:end]):
        return None  # not a function: attach() says so
    try:
        tree = _parser("signature").parse(text[at:end])
    except UnexpectedInput as exc:
        bad = at + getattr(exc, "pos_in_stream", 0) if getattr(exc, "pos_in_stream", None) is not None else at
        token = getattr(exc, "token", None)
        if token is not None and getattr(token, "start_pos", None) is not None:
            bad = at + token.start_pos
        problems.add(error("adgen cannot read this Rust function signature here", Span(source, bad)))
        return None
    return tree, at, start


def _skip_comments(text: str, at: int) -> int:
    while text.startswith("//", at) or text.startswith("/*", at):
        at = text.find("\n", at) if text.startswith("//", at) else text.find("*/", at) + 2
        at = len(text) if at < 0 else at
        while at < len(text) and text[at].isspace():
            at += 1
    return at


def _array_length(expression: str, subst: dict[str, str], text: str) -> int:
    """An array's length (`3`, `4usize`, `N * N` with `const N: usize = 32;` in the file's
    `text`, a const generic's argument), or 0 where it cannot be read."""
    for _ in range(8):
        named = re.search(r"\b([A-Za-z_]\w*)\b", re.sub(r"\b[0-9][0-9_]*(?:usize|u32|u64|i32|i64)?\b", "", expression))
        if named is None:
            break
        name = named.group(1)
        value = subst.get(name) or _constant(text, name)
        if value is None:
            return 0
        expression = re.sub(rf"\b{name}\b", f"({value})", expression)
    expression = re.sub(r"([0-9][0-9_]*)(?:usize|u32|u64|i32|i64)", r"\1", expression).replace("_", "")
    if not re.fullmatch(r"[0-9+\-*/() {}]*", expression):
        return 0
    try:
        python = expression.replace("{", "(").replace("}", ")").replace("/", "//")  # (digits and operators only)
        return max(int(eval(python, {"__builtins__": {}})), 0)
    except (SyntaxError, ZeroDivisionError, TypeError, ValueError):
        return 0


def _constant(text: str, name: str) -> str | None:
    """The expression a `const NAME: TYPE = ...;` of the file gives, or None."""
    m = re.search(rf"\bconst\s+{re.escape(name)}\s*:\s*[\w:]+\s*=\s*([^;]+);", text)
    return m.group(1) if m else None


def _defined_types(text: str) -> tuple[set[str], set[str]]:
    """The structs, enums and unions the file defines, and those of them that derive Copy."""
    defined, copied = set(), set()
    for m in re.finditer(r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|union)\s+([A-Za-z_]\w*)", text):
        defined.add(m.group(2))
        if re.search(r"#\[\s*derive\s*\([^)]*\bCopy\b", m.group(1)):
            copied.add(m.group(2))
    return defined, copied


def _structs(source: SourceFile, problems: Collector) -> dict[str, tuple[bool, list, Span]]:
    """The file's structs with named fields: whether #[repr(C)], their (name, type tree) fields."""
    found = {}
    pattern = re.compile(r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?struct\s+([A-Za-z_][A-Za-z0-9_]*)\s*(<)?")
    for m in pattern.finditer(source.text):
        brace = source.text.find("{", m.end())
        if m.group(3) or brace < 0 or source.text[m.end():brace].strip():
            continue  # generic, tuple or unit structs: never pointed to by a function adgen reads
        end = source.text.find("}", brace)
        try:
            tree = _parser("struct_body").parse(source.text[brace:end + 1])
        except UnexpectedInput:
            continue
        repr_c = re.search(r"#\[\s*repr\s*\(\s*C\b", m.group(1)) is not None
        fields = [(f.children[-3].value, f.children[-1], brace) for f in tree.children if isinstance(f, Tree)]
        found[m.group(2)] = (repr_c, fields, Span(source, m.start(2), len(m.group(2))))
    return found


class _Types:
    """Rust types to RTypes and C types."""

    def __init__(self, source: SourceFile, structs: dict, problems: Collector, subst: dict[str, str] | None = None):
        self.source, self.structs, self.problems = source, structs, problems
        self.defined, self.copied = _defined_types(source.text)
        self.typedefs: dict[str, str] = {}  # struct name -> its C typedef
        self.subst = subst or {}  # an instantiation's: generic parameter -> its argument, as written
        self.closure = ""  # a closure instance's: the closure parameter, read as a reference to bytes
        self._generic = re.compile(r"(?<![\w'])(" + "|".join(map(re.escape, self.subst)) + r")(?!\w)") \
            if self.subst else None

    def instantiated(self, subst: dict[str, str], problems: Collector) -> "_Types":
        """This reader with generic parameters read as the arguments an instantiation names."""
        other = _Types(self.source, self.structs, problems, subst)
        other.typedefs = self.typedefs
        return other

    def substituted(self, text: str) -> str:
        return self._generic.sub(lambda m: self.subst[m.group(1)], text) if self._generic else text

    def span(self, node, base: int) -> Span:
        if isinstance(node, Token):
            return Span(self.source, base + node.start_pos, len(node))
        return Span(self.source, base + node.meta.start_pos, node.meta.end_pos - node.meta.start_pos)

    def text(self, node, base: int) -> str:
        span = self.span(node, base)
        return self.source.text[span.offset:span.offset + span.length]

    def rtype(self, node, base: int) -> RType:
        span, text = self.span(node, base), self.substituted(self.text(node, base))
        if isinstance(node, Token):
            return RType("other", text, span)
        kind = node.data
        written = self.text(node, base).strip()
        if kind in ("named", "dyn_trait") and written in self.subst:  # a generic parameter (a trait
            # object's type, DynTemplate's): its argument, where it is used
            argument = _Types(SourceFile(self.source.path, self.subst[written]), self.structs, self.problems)
            try:
                tree = _parser("type").parse(self.subst[written])
            except UnexpectedInput:
                return RType("other", text, span)
            return _respan(argument.rtype(tree, 0), span)
        kids = [k for k in node.children if k is not None]
        if kind == "reference" or kind == "raw_pointer":
            inner = self.rtype(kids[-1], base)
            mutable = any(isinstance(k, Token) and k.type == "MUT" for k in kids)
            return RType("reference" if kind == "reference" else "pointer", text, span, mutable=mutable, elem=inner)
        if kind == "slice":
            return RType("slice", text, span, elem=self.rtype(kids[1], base))
        if kind == "array":  # its length: a constant expression of numbers and the file's constants, else 0 (unknown)
            count = _array_length(self.text(kids[3], base), self.subst, self.source.text)
            return RType("array", text, span, elem=self.rtype(kids[1], base), count=count)
        if kind == "fn_pointer":
            return RType("fn", text, span)
        if kind == "dyn_trait":  # (its trait: the first bound's last segment, `dyn geo::Model + Send` -> Model)
            return RType("dyn", text, span, name=re.split(r"\s*\+\s*", written[3:].strip())[0].split("<")[0]
                         .split("::")[-1].strip())
        if kind == "unit":
            return RType("unit", text, span)
        if kind == "tuple":
            return RType("tuple", text, span)
        if kind == "named" and all(len(segment.children) == 1 for segment in kids[0].children
                                   if isinstance(segment, Tree)):  # a path without type arguments
            name = text.split("::")[-1].strip()
            if name in SCALARS:
                return RType("scalar", text, span, name=name)
            if name in self.structs and self.structs[name][0]:
                return RType("named", text, span, name=name)
        if kind == "type" and kids:
            return self.rtype(kids[1], base) if len(kids) == 3 else self.rtype(kids[0], base)
        outcome = _OUTCOME.fullmatch(text.strip())
        if outcome:  # Option<f64>, Result<f64, E>: a float, or none (the error E)
            value = RType("scalar", outcome.group(2), span, name=outcome.group(2))
            return RType(outcome.group(1).lower(), text, span, name=(outcome.group(3) or "").strip(), elem=value)
        vector = _VEC.fullmatch(text.strip())
        if vector:  # Vec<f64>, Vec<f32>: behind a reference, an object holding a pointer to its floats
            return RType("vec", text, span, elem=RType("scalar", vector.group(1), span, name=vector.group(1)))
        if kind == "named" and text.strip().split("<")[0].split("::")[-1].strip() not in _UNSIZED:
            # any other type by path (a struct of Rust's layout, of this file or another module, an
            # enum, a generic type's instance): behind a reference, an object C sees as bytes
            return RType("object", text, span, name=text.split("<")[0].split("::")[-1].strip())
        return RType("other", text, span)

    def function(self, tree: Tree, at: int, start: int, by_hand: bool = False):
        """The C view and the Rust signature of a parsed function, or None after errors. One
        `by_hand` (a derivative written by hand) is compared as Rust (its result, a tuple say,
        has no C view)."""
        before = len(self.problems.diagnostics)
        kids = tree.children
        name_tok = next(k for k in kids if isinstance(k, Token) and k.type == "NAME")
        name_span = self.span(name_tok, at)
        declared = [k for k in kids if isinstance(k, Tree) and k.data.endswith("_param")]
        # `impl Trait` parameters: each an anonymous type parameter, which no instantiation names
        # (a function with type or const parameters is a RustTemplate's, instantiated).
        generic = [t for p in declared if not _named(p, self.closure) for t in p.iter_subtrees_topdown()
                   if t.data == "impl_trait"]
        for g in generic:
            self.problems.add(error(_impl_trait(name_tok.value, self.text(g, at)), self.span(g, at)))
        where = next((k for k in kids if isinstance(k, Tree) and k.data == "where_clause"), None)
        if where is not None and self.subst:
            where = None  # (its bounds are rustc's to check, at the instantiation)
        elif where is not None:
            self.problems.add(error(f"'{name_tok.value}' has a where clause: adgen differentiates functions of "
                                    "concrete types", self.span(where, at)))
        params: list[RParam] = []
        owner = ""
        for p in declared:
            if p.data == "self_param":
                owner = self.receiver(name_tok.value, p, at, start, params)
                continue
            pname = next(k for k in p.children if isinstance(k, Token) and k.type in ("NAME", "UNDERSCORE")).value
            if pname == "_":
                pname = f"arg{len(params)}"
            span = self.span(p.children[-1], at)
            params.append(RParam(pname, RType("reference", f"&{OPAQUE}", span, elem=RType("object", OPAQUE, span,
                                                                                          name=OPAQUE))
                                 if _named(p, self.closure) else self.rtype(p.children[-1], at), self.span(p, at)))
        ret_tree = next((k for k in kids if isinstance(k, Tree) and k.data == "returns"), None)
        returns = self.rtype(ret_tree.children[-1], at) if ret_tree is not None else None
        if generic or where is not None:
            return None  # its types are not all known: what they would be in C is beside the point
        c_params = []
        for p in params:
            for c_name, ctype in self.c_params(p):
                c_params.append(Param(c_name, ctype))
        c_returns = VOID if by_hand and returns is not None and returns.kind == "tuple" else self.c_return(returns)
        if returns is not None and returns.kind in ("option", "result"):  # (whether a value came: its shim's
            # last parameter; a Result's error may hold values carrying derivatives, written to its shadow)
            c_params.append(Param(OUTCOME, CType("*mut u8", False, False, True, returns.kind == "result", "void *", (),
                                                 ffi="ptr", size=8, portable="void *", portable_shadow="void *")))
        if len(self.problems.diagnostics) > before:
            return None
        name = name_tok.value + (f"<{', '.join(self.subst.values())}>" if self.subst else "")
        generics = next((k for k in kids if isinstance(k, Tree) and k.data == "generics"), None)
        lifetimes = tuple(str(g.children[0]) for g in (generics.children if generics is not None else ())
                          if isinstance(g, Tree) and g.data == "lifetime_param")
        mutable_self = bool(params) and params[0].name == "self" and params[0].type.mutable
        unsafe = any(isinstance(q, Tree) and q.data == "qualifier" and any(
            isinstance(t, Token) and t.type == "UNSAFE" for t in q.children) for q in kids)
        vis = next((k for k in kids if isinstance(k, Tree) and k.data == "visibility"), None)
        visibility = "pub" if owner else re.sub(r"\s+", "", self.text(vis, at)).replace("pub(in", "pub(in ") \
            if vis is not None else ""
        rf = RFunction(name, tuple(params), returns, name_span, owner, lifetimes=lifetimes, mutable_self=mutable_self,
                       unsafe=unsafe, visibility=visibility)
        if rf.shim:  # (adgen's function taking the values' addresses, in the module: a free function)
            return Prototype(rf.shim, tuple(c_params), c_returns, False, start, name_span), rf
        return Prototype(name, tuple(c_params), c_returns, False, start, name_span,
                         scope=(owner,) if owner else ()), rf



    def receiver(self, name: str, p: Tree, at: int, start: int, params: list[RParam]) -> str:
        """A method's `&self`, `&mut self` or `self`: a parameter `self`, a reference to the type
        of its `impl` (a #[repr(C)] struct of the file, as any reference's) or a value of it, and
        that type's name; else an error, and ""."""
        kids = [k for k in p.children if isinstance(k, Token)]
        span = self.span(p, at)
        owner = impl_owner(self.source.text, start)
        if any(k.type == "COLON" for k in kids):
            self.problems.add(error(f"'{name}' takes self as a type (`self: Type`): adgen differentiates methods "
                                    "taking &self, &mut self or self", span))
            return ""
        if not owner:
            self.problems.add(error(f"'{name}' takes self outside an impl block adgen can read", span))
            return ""
        if not any(k.type == "AMP" for k in kids):  # by value: as any value passed so (RParam.by_value), Copy
            kind = "named" if owner in self.structs and self.structs[owner][0] else "object"
            params.append(RParam("self", RType(kind, owner, span, name=owner), span))
            return owner
        mutable = any(k.type == "MUT" for k in kids)
        text = f"&{'mut ' if mutable else ''}{owner}"
        kind = "named" if owner in self.structs and self.structs[owner][0] else "object"
        params.append(RParam("self", RType("reference", text, span, mutable=mutable,
                                           elem=RType(kind, owner, span, name=owner)), span))
        return owner

    # ------------------------------------------------------------------ the C view
    def c_params(self, p: RParam) -> list[tuple[str, CType]]:
        t = p.type
        if t.kind == "scalar":
            return [(p.name, self.scalar(t))]
        if t.kind in ("reference", "pointer") and t.elem is not None and t.elem.kind == "slice":
            if t.kind == "pointer":
                return self.refuse(t, "a raw pointer to a slice: pass a reference to it, or the pointer and length")
            return [(p.name, self.pointer(t, t.elem.elem)), (f"{p.name}_len", self.scalar(
                RType("scalar", "usize", t.span, name="usize")))]
        if t.kind in ("reference", "pointer") and t.elem is not None:
            return [(p.name, self.pointer(t, t.elem))]
        if t.kind == "unit":
            return []  # (no bytes: no parameter of the C view, nor of the code compiled)
        if t.kind == "fn":  # (the program's compile of a function: known by a static of the wrappers', dispatch.py)
            return [(p.name, CType(t.text, False, False, True, False, None, (), ffi="ptr", size=8,
                                   portable="const void *"))]
        if t.kind in ("named", "object") and (t.name in self.defined and t.name not in self.copied or
                                              t.name in _NOT_COPY):
            return self.refuse(t, f"a struct by value ('{t.text}') that is not Copy: adgen passes it by its address, "
                                  f"copying it (#[derive(Clone, Copy)] it, or pass a reference, &{t.text})")
        if t.kind in _AGGREGATES:  # by its address, to adgen's function in its place (RFunction.shim)
            return [(p.name, self.pointer(RType("reference", "&" + t.text, t.span, elem=t), t))]
        if t.kind == "vec":
            return self.refuse(t, f"a Vec by value ('{t.text}'): pass it by reference (&{t.text}, &mut "
                                  f"{t.text}), or a slice")
        return self.refuse(t, f"the type '{t.text}', which has no C counterpart adgen can differentiate "
                              "(use f64, f32, integers, references, slices, raw pointers and #[repr(C)] structs)")

    def c_return(self, t: RType | None) -> CType:
        if t is None or t.kind == "unit":
            return VOID
        if t.kind == "scalar":
            return self.scalar(t)
        if t.kind in ("option", "result") and t.elem is not None:
            return self.scalar(t.elem)
        if t.kind == "pointer" and t.elem is not None and t.elem.kind != "slice":
            return self.pointer(t, t.elem)
        self.refuse(t, f"a result of type '{t.text}': return a float, an integer or nothing (results through a "
                       "&mut parameter)")
        return VOID

    def refuse(self, t: RType, what: str) -> list:
        self.problems.add(error(f"adgen cannot pass {what}", t.span))
        return []

    def scalar(self, t: RType) -> CType:
        c, size, floating, ffi = SCALARS[t.name]
        return CType(t.text, False, floating, False, False, None, (), ffi=ffi, size=size, holds_floating=floating,
                     portable=c)

    def pointer(self, t: RType, pointee: RType) -> CType:
        """A pointer to a scalar, an array of them, or a #[repr(C)] struct: the C pointer type."""
        c, size, floats = self.c_pointee(pointee)
        if not c:
            return CType(t.text, False, False, True, False, None, ())
        const = "" if t.mutable else "const "
        uniform = floats[0] if len(set(floats)) == 1 and floats[0] else ""
        shadow = t.text if t.mutable else ("&mut " + t.text[1:].lstrip() if t.kind == "reference" else
                                           t.text.replace("*const", "*mut", 1))
        ffi = f"ptr:{uniform}" if uniform and pointee.kind == "scalar" else "ptr"
        floating = any(floats) or pointee.kind in ("object", "tuple")  # (what an object holds, its code says)
        return CType(t.text, False, False, True, floating, shadow, (), element_float=uniform, ffi=ffi,
                     element_size=size, size=8, portable=f"{const}{c} *", portable_shadow=f"{c} *")

    def c_pointee(self, t: RType, depth: int = 0) -> tuple[str, int, list[str]]:
        """A pointee's C spelling, size and the float types of its scalars ("" for non-floats)."""
        if t.kind == "scalar":
            c, size, floating, _ = SCALARS[t.name]
            return c, size, [t.name.replace("f64", "double").replace("f32", "float") if floating else ""]
        if t.kind == "array" and t.elem is not None:
            c, size, floats = self.c_pointee(t.elem, depth + 1)
            if t.count and c and "[" not in c:
                return c, size * t.count, floats  # a pointer to its first element: the same to the machine
        if t.kind == "named" and t.name in self.structs and depth < 8:
            return self.struct(t, depth)
        if t.kind in ("reference", "pointer"):
            return "void *", 8, [""]
        if t.kind == "vec" and t.elem is not None:  # (its layout is Rust's: an opaque object to C)
            return "void", 24, [t.elem.name.replace("f64", "double").replace("f32", "float")]
        if t.kind in ("object", "tuple") and depth == 0:  # (likewise: bytes of a size and layout C does not know)
            return "void", 0, [""]
        if t.kind == "dyn":  # (one is differentiated at each type implementing its trait: DynTemplate)
            self.refuse(t, f"a trait object ('{t.text}') here: adgen differentiates a function of one trait object, "
                           "not generic, at each type of the file implementing its trait")
            return "", 0, []
        self.refuse(t, f"a pointer to '{t.text}' (pointers to floats, integers, arrays of them, structs, "
                       "Vec<f64> and other sized types by path are)")
        return "", 0, []

    def struct(self, t: RType, depth: int) -> tuple[str, int, list[str]]:
        repr_c, fields, _ = self.structs[t.name]
        if not repr_c:
            self.refuse(t, f"a pointer to '{t.name}', which is not #[repr(C)]: Rust may reorder its fields "
                           "(add #[repr(C)])")
            return "", 0, []
        members, floats, offset, most = [], [], 0, 1
        for fname, ftree, base in fields:
            ft = self.rtype(ftree, base)
            count = 1
            while ft.kind == "array" and ft.elem is not None:
                count *= max(ft.count, 1)
                ft = ft.elem
            if ft.kind == "scalar":
                c, size, floating, _ = SCALARS[ft.name]
                floats += [ft.name.replace("f64", "double").replace("f32", "float") if floating else ""] * count
            elif ft.kind == "named" and ft.name in self.structs:
                c, size, inner = self.struct(ft, depth + 1)
                floats += inner * count
            elif ft.kind in ("reference", "pointer"):
                c, size = "void *", 8
                floats.append("")
            else:
                self.refuse(ft, f"a struct field of type '{ft.text}'")
                return "", 0, []
            align = min(size, 8)
            offset = -(-offset // align) * align + size * count
            most = max(most, align)
            members.append(f"{c} {fname}" + (f"[{count}]" if count > 1 else ""))
        self.typedefs[t.name] = f"typedef struct {{ {'; '.join(members)}; }} {t.name}"
        return t.name, -(-offset // most) * most, floats


class RustTemplate:
    """A generic Rust function: an entry names an instantiation (`loss_grad<f64>: ...`), whose
    types are the generic parameters read as the arguments (checked by rustc when it compiles it)."""

    kind = "generic function"
    example = "<f64>"

    def __init__(self, reader: _Types, tree: Tree, at: int, start: int):
        self.reader, self.tree, self.at, self.start = reader, tree, at, start
        name = next(k for k in tree.children if isinstance(k, Token) and k.type == "NAME")
        self.name, self.span = name.value, reader.span(name, at)
        generics = next((k for k in tree.children if isinstance(k, Tree) and k.data == "generics"), None)
        self.lifetimes = tuple(str(g.children[0]) for g in (generics.children if generics is not None else ())
                               if isinstance(g, Tree) and g.data == "lifetime_param")
        self.params, self.names = [], []
        for g in _generic_parameters(tree):
            pname = next(k.value for k in g.children if isinstance(k, Token) and k.type == "NAME")
            self.names.append(pname)
            if g.data == "const_param":
                kind = next(k for k in g.children if isinstance(k, Tree) or
                            (isinstance(k, Token) and k.type not in ("CONST", "NAME", "COLON", "EQUAL")))
                self.params.append(f"const {pname}: {reader.text(kind, at).strip()}")
            else:
                self.params.append(pname)

    def unnamed(self, entry: Entry) -> list[Word]:
        """The instantiations an entry naming none derives: for std::autodiff's spelling, the
        generic arguments of the file's calls of the derived function that name them
        (`d_square::<f64>(...)`), each once; for adgen's, none (an error says to name them)."""
        if not entry.trailing_return:
            return []
        name = entry.name.text
        found: dict[str, Word] = {}
        text = self.reader.source.text
        for m in re.finditer(rf"\b{re.escape(name)}\s*::\s*(<(?:[^<>()]|<[^<>()]*>)*>)\s*\(", text):
            found.setdefault(re.sub(r"\s+", "", m.group(1)),
                             Word(m.group(1), Span(self.reader.source, m.start(1), len(m.group(1)))))
        return list(found.values())

    def readable(self, problems: Collector) -> bool:
        """Whether what no instantiation can name (`impl Trait` parameters) is absent; else errors."""
        impl_traits = [t for p in self.tree.children if isinstance(p, Tree) and p.data.endswith("_param")
                       for t in p.iter_subtrees_topdown() if t.data == "impl_trait"]
        for t in impl_traits:
            problems.add(error(_impl_trait(self.name, self.reader.text(t, self.at)), self.reader.span(t, self.at)))
        return not impl_traits

    def instantiate(self, unit: RustUnit, arguments: str) -> Prototype | str:
        """The instantiation `name<arguments>` (`<f64>`, `::<f64, 3>`) as a function of the source,
        its RFunction in `unit.rust`; or what is wrong, as a message."""
        args = split_arguments(arguments.removeprefix("::").strip()[1:-1])
        if len(args) != len(self.names):
            return (f"'{self.name}' takes {len(self.names)} generic argument{'' if len(self.names) == 1 else 's'} "
                    f"({', '.join(self.names)}), not {len(args)}")
        problems = Collector()
        reader = self.reader.instantiated(dict(zip(self.names, args)), problems)
        made = reader.function(self.tree, self.at, self.start)
        if made is None:
            return problems.diagnostics[0].message if problems.diagnostics else "adgen cannot read it"
        prototype, rf = made
        unit.rust[prototype.name] = replace(rf, generic=Generic(self.name, self.lifetimes, tuple(self.params),
                                                                tuple(self.names),
                                                                _written(self.reader, self.tree, self.at, self.start),
                                                                tuple(args)))
        unit.c_types = [LocalType(name, text, 0) for name, text in self.reader.typedefs.items()]
        return prototype


class DynTemplate(RustTemplate):
    """A function taking a trait object (`m: &dyn Model`), differentiated at each type of the file
    implementing the trait as if generic over it (`loss<Linear>`: `m: &Linear`), through a
    function of adgen's in its place taking the concrete reference and passing it on (its shim,
    where the trait object's table is a constant of adgen's compile: its calls are made direct,
    dispatch.py); the wrapper tells the types apart by their TypeId, so the trait must have
    `Any` as a supertrait."""

    kind = "function of trait objects"

    def __init__(self, reader: _Types, tree: Tree, at: int, start: int, param: RParam, written: str):
        super().__init__(reader, tree, at, start)
        self.param, self.trait = param, param.type.elem.name
        self.names, self.params = [written], [written]
        self.implementors = _implementors(reader.source.text, self.trait)

    def readable(self, problems: Collector) -> bool:
        """Whether the trait is the file's, with `Any` as a supertrait and implementations in it."""
        if not super().readable(problems):
            return False
        t = self.param.type.elem
        bounds = _supertraits(self.reader.source.text, self.trait)
        if _CLOSURE.match(t.text):
            problems.add(error(CLOSURES.format(t.text), t.span))
        elif bounds is None:
            problems.add(error(f"adgen cannot pass a trait object of '{self.trait}', which this file does not "
                               "declare: adgen differentiates it at the types of the file implementing it", t.span))
        elif not re.search(r"(?:^|[\s+:])Any\b", bounds):
            problems.add(error(f"adgen tells trait objects apart by the TypeId of their types: declare "
                               f"`trait {self.trait}: std::any::Any` (its implementations then own their data, "
                               "'static)", t.span))
        elif not self.implementors:
            problems.add(error(f"no type of this file implements '{self.trait}' (`impl {self.trait} for Type`): "
                               "adgen differentiates a trait object at those", t.span))
        else:
            return True
        return False

    def unnamed(self, entry: Entry) -> list[Word]:
        """Every type of the file implementing the trait (an entry names none)."""
        return [Word(f"<{x}>", entry.name.span) for x in self.implementors]

    def instantiate(self, unit: RustUnit, arguments: str) -> Prototype | str:
        made = super().instantiate(unit, arguments)
        if not isinstance(made, str):
            rf = unit.rust.pop(made.name)
            rf = replace(rf, dynamic=(self.param.name, self.trait))
            made = replace(made, name=rf.shim)
            unit.rust[made.name] = rf
        return made


def _trait_object(reader: _Types, tree: Tree, at: int, start: int) -> tuple[RParam, str] | None:
    """A function's parameter that is a reference to a trait object, and the trait object's
    type as written (`dyn Model`); None without one (more than one is refused, when its C view is
    read: `dyn` there has none)."""
    for p in (k for k in tree.children if isinstance(k, Tree) and k.data in ("named_param", "unnamed_param")):
        t = p.children[-1]
        if isinstance(t, Tree) and t.data == "reference" and isinstance(t.children[-1], Tree) and \
                t.children[-1].data == "dyn_trait":
            pname = next(k for k in p.children if isinstance(k, Token) and k.type in ("NAME", "UNDERSCORE")).value
            problems, reader.problems = reader.problems, Collector()
            try:
                rp = RParam(pname, reader.rtype(t, at), reader.span(p, at))
            finally:
                reader.problems = problems
            others = [q for q in tree.iter_subtrees_topdown() if q.data == "dyn_trait" and q is not t.children[-1]]
            return None if others else (rp, reader.text(t.children[-1], at).strip())
    return None


def _plain_text(text: str) -> str:
    """The file with its comments (but attributes) blanked, offsets kept."""
    plain = list(text)
    for c in find_rust_comments(text):
        if not c.attribute:
            plain[c.start:c.end] = " " * (c.end - c.start)
    return "".join(plain)


def _supertraits(text: str, trait: str) -> str | None:
    """The bounds of the file's `trait NAME: ...` ("" with none), or None where it declares none."""
    m = re.search(rf"\btrait\s+{re.escape(trait)}\b\s*(?:<[^{{]*?>)?\s*(?::([^{{]*?))?(?:\bwhere\b[^{{]*)?\{{",
                  _plain_text(text))
    return None if m is None else (m.group(1) or "")


def _implementors(text: str, trait: str) -> list[str]:
    """The types the file implements `trait` for (`impl Model for Linear`), each once, in order;
    not generic ones (`impl<T> Model for W<T>`), which no instantiation names."""
    found = []
    for m in re.finditer(rf"\bimpl\s*(<[^{{]*?>)?\s*(?:[\w:]+::)?{re.escape(trait)}\s+for\s+([\w:]+(?:\s*<[^{{]*?>)?)"
                         r"\s*(?:\{|\bwhere\b)", _plain_text(text)):
        if m.group(1) is None and re.sub(r"\s+", "", m.group(2)) not in found:
            found.append(re.sub(r"\s+", "", m.group(2)))
    return found


def _named(p: Tree, name: str) -> bool:
    """Whether a parameter is named `name` (a closure instance's closure, `_Types.closure`)."""
    return bool(name) and p.data == "named_param" and any(
        isinstance(k, Token) and k.type == "NAME" and k.value == name for k in p.children)


def _written(reader: "_Types", tree: Tree, at: int, start: int) -> RFunction:
    """A generic function's signature as written (its types as RTypes, no C view)."""
    kids = tree.children
    name_tok = next(k for k in kids if isinstance(k, Token) and k.type == "NAME")
    params: list[RParam] = []
    problems, reader.problems = reader.problems, Collector()
    try:
        owner = ""
        for p in (k for k in kids if isinstance(k, Tree) and k.data.endswith("_param")):
            if p.data == "self_param":
                owner = reader.receiver(name_tok.value, p, at, start, params)
                continue
            pname = next(k for k in p.children if isinstance(k, Token) and k.type in ("NAME", "UNDERSCORE")).value
            params.append(RParam(f"arg{len(params)}" if pname == "_" else pname,
                                 reader.rtype(p.children[-1], at), reader.span(p, at)))
        ret_tree = next((k for k in kids if isinstance(k, Tree) and k.data == "returns"), None)
        returns = reader.rtype(ret_tree.children[-1], at) if ret_tree is not None else None
    finally:
        reader.problems = problems
    return RFunction(name_tok.value, tuple(params), returns, reader.span(name_tok, at), owner)


def _generic_parameters(tree: Tree) -> list[Tree]:
    """A function's type and const parameters (not its lifetimes)."""
    generics = next((k for k in tree.children if isinstance(k, Tree) and k.data == "generics"), None)
    return [g for g in (generics.children if generics is not None else ())
            if isinstance(g, Tree) and g.data in ("type_param", "const_param")]


def split_arguments(text: str) -> list[str]:
    """What a comma-separated list holds at its top level (a generic's arguments, a function's
    parameters), each stripped."""
    out, depth, current = [], 0, ""
    for ch in text:
        depth += (ch in "<([") - (ch in ">)]")
        if ch == "," and depth == 0:
            out.append(current.strip())
            current = ""
        else:
            current += ch
    return [a for a in [*out, current.strip()] if a]


def _respan(t: RType, span: Span) -> RType:
    """A type read from an instantiation's arguments, located where the generic parameter is used."""
    return replace(t, span=span, elem=_respan(t.elem, span) if t.elem is not None else None)


def _written_by_hand(g: RFunction, entry: Entry, unit: RustUnit, problems: Collector) -> RFunction | None:
    """The function a derivative `g` written by hand is of (`@derivative(F: ...)`), or None after errors."""
    if g.owner or g.generic is not None:
        problems.add(error(f"a derivative written by hand is a free function, not generic: '{g.name}' is "
                           + ("a method" if g.owner else "generic"), g.span))
        return None
    primal = unit.rust.get(entry.name.text)
    if primal is None:
        problems.add(error(f"@derivative names '{entry.name.text}', which is not a free function of this file "
                           "adgen can read (a generic function, a method, or none)", entry.name.span))
        return None
    if primal.shim:
        problems.add(error(f"a derivative written by hand is of a function of floats, references and slices: "
                           f"'{primal.name}' takes values by value or returns Option or Result", entry.name.span,
                           [note(f"'{primal.name}' is declared here", primal.span)]))
        return None
    return primal


def rust_entry(annotation: Annotation, entry: Entry | None, function: Prototype, unit: RustUnit,
               problems: Collector) -> Entry | None:
    """An entry of a Rust function made an entry of its C view: each slice's activity followed
    by `const` for its length. What Rust sources do not take yet is an error here."""
    if entry is None:
        return None
    if entry.of is not None:
        return entry  # (its activities are of the derived function's wrapper: rust_wrappers.nested_entry)
    rf = unit.rust[function.name]
    if annotation.marker == "@derivative":  # (the entry's activities are of the function it names)
        rf = _written_by_hand(rf, entry, unit, problems)
        if rf is None:
            return None
    if entry.mode is not None and entry.mode.text.lower() == "split" and (rf.shim or rf.generic is not None):
        what = "a generic function's instantiation" if rf.generic is not None else \
            "a function returning Option or Result" if rf.outcome else "a function taking values by value"
        problems.add(error(f"split mode of {what} is not built (its tape's Rust type would be generic, or its "
                           "values adgen's copies): write a function of references for it", entry.mode.span))
        return None
    if entry.trailing_return and entry.returns is None and rf.returns is not None and rf.returns.kind != "unit" \
            and len(entry.activities) == len(rf.params) + 1:  # (std::autodiff's: the result's activity last)
        entry = replace(entry, activities=entry.activities[:-1], returns=entry.activities[-1])
    if len(entry.activities) != len(rf.params):
        problems.add(error(f"'{entry.name.text}' lists {len(entry.activities)} activit"
                           f"{'y' if len(entry.activities) == 1 else 'ies'}, but '{rf.name}' takes "
                           f"{len(rf.params)} parameter{'' if len(rf.params) == 1 else 's'}", entry.params_span,
                           [note(f"'{rf.name}' is declared here", rf.span)]))
        return None
    made = _c_words(entry, rf, unit, problems)
    if made is None:
        return None
    words, scratch, ghosts = made
    if scratch and _writes_only_scratch(entry, rf, scratch):
        problems.add(error(f"'{entry.name.text}' has no output carrying derivatives: its result is const or none, "
                           f"and what it writes ({', '.join(repr(n) for n in scratch)}) is const; mark an output "
                           "dup, or the result active", entry.name.span))
        return None
    entry, ret = _integer_result(replace(entry, activities=tuple(words)), rf, unit)
    if rf.generic is not None:
        entry = _instantiation(entry, rf, unit, problems)
        if entry is None:
            return None
    unit.scratch.update((entry.name.text, name) for name in scratch)  # (by the C function's name)
    unit.ghosts[entry.name.text] = (ghosts, ret)
    return entry


def _c_words(entry: Entry, rf: RFunction, unit: RustUnit, problems: Collector) -> tuple[list, list, dict] | None:
    """The C view's activities of an entry's Rust ones (a slice's length `const` after it; a
    value by value's as its address's), the `const` buffers given scratch shadows, and the
    integers given derivatives' activities (RustUnit.scratch, RustUnit.ghosts); None after an error."""
    words, scratch, ghosts = [], [], {}
    mode = entry.mode.text.lower() if entry.mode is not None else "reverse"
    for word, p in zip(entry.activities, rf.params):
        act = ACTIVITY_WORDS.get(word.text.lower())
        if act not in (None, Activity.CONST) and _integers(p.type):
            ghosts[p.name] = act  # (no derivative: the wrapper takes its shadows, std::autodiff's shape, as it is)
            unit.remarks.append(_warning(f"'{p.name}' holds integers", act, word.span))
            word = Word("const", word.span)
        if word.text.lower() == "const" and mode in ("reverse", "forward") and _scratch_type(p.type):
            scratch.append(p.name)  # (derivatives may flow through its memory within the call: kept in a scratch
            word = Word("dup" if mode == "reverse" else "dual", word.span)  # shadow, which the wrapper makes)
        if entry.trailing_return and word.text.lower() == "dualv" and p.type.kind == "reference" and \
                p.type.elem is not None and p.type.elem.kind == "slice":  # (std::autodiff's lanes: blocks)
            unit.blocked.add((entry.name.text, p.name))
            word = Word("dual", word.span)
        if p.by_value:
            act = ACTIVITY_WORDS.get(word.text.lower())
            if act not in _BY_VALUE:
                problems.add(error(f"'{p.name}' is passed by value: its activity is active (its gradient, a value of "
                                   "its type, is returned), dual or dualonly (its tangent a value of its type) or "
                                   "const", word.span))
                return None
            if p.type.kind != "unit":  # (which has no C parameter)
                words.append(Word(_BY_VALUE[act], word.span))
            continue
        words.append(word)
        if p.type.kind == "reference" and p.type.elem is not None and p.type.elem.kind == "slice":
            words.append(Word("const", word.span))  # its length
    if any(p.by_value and ACTIVITY_WORDS.get(w.text.lower()) is Activity.ACTIVE
           for w, p in zip(entry.activities, rf.params)) and entry.width is not None and entry.width.text != "1":
        problems.add(error("a value passed by value is active at width 1 only (its gradient is one value of its type)",
                           entry.width.span))
        return None
    if rf.outcome:  # (the outcome's parameter of the shim: an error's shadow beside it)
        words.append(Word("dup" if rf.outcome == "result" and mode != "forward"
                          else "dual" if rf.outcome == "result" else "const", entry.params_span))
    return words, scratch, ghosts


def _writes_only_scratch(entry: Entry, rf: RFunction, scratch: list[str]) -> bool:
    """A reverse entry whose result is const or none and whose only written parameters are
    `const` buffers (scratch shadows): its gradient would be zero whatever the code."""
    if entry.mode is not None and entry.mode.text.lower() != "reverse" or \
            entry.returns is not None and entry.returns.text.lower() != "const":
        return False
    return not any(p.type.mutable and p.name not in scratch and ACTIVITY_WORDS.get(w.text.lower()) in (
        Activity.DUP, Activity.DUPONLY, Activity.DUPV) for w, p in zip(entry.activities, rf.params))


def _integer_result(entry: Entry, rf: RFunction, unit: RustUnit) -> tuple[Entry, Activity | None]:
    """An integer result given a derivative's activity made `const`, with a warning, and that
    activity (the wrapper's shape, RustUnit.ghosts); else the entry as it is and None."""
    ret = ACTIVITY_WORDS.get(entry.returns.text.lower()) if entry.returns is not None else None
    if ret in (None, Activity.CONST) or rf.returns is None or not _integers(rf.returns):
        return entry, None
    unit.remarks.append(_warning(f"'{rf.name}' returns an integer", ret, entry.returns.span))
    return replace(entry, returns=Word("const", entry.returns.span)), ret


def _instantiation(entry: Entry, rf: RFunction, unit: RustUnit, problems: Collector) -> Entry | None:
    """An instantiation's derived function: a C function of its own name (`loss_grad__f64`), which
    the one generic Rust wrapper of that name dispatches to, by the arguments (rust_wrappers.py)."""
    shape = (rf.owner, entry.mode and entry.mode.text.lower(), entry.width and entry.width.text,
             tuple(w.text.lower() for w in entry.activities), entry.returns and entry.returns.text.lower())
    first = unit.generic_shapes.setdefault((rf.owner, entry.name.text), (shape, entry.name.span))
    if first[0] != shape:
        problems.add(error(f"'{entry.name.text}' is derived at several instantiations: each must have the same mode, "
                           "width and activities (the Rust function dispatching to them has one signature)",
                           entry.name.span, [note("the first is here", first[1])]))
        return None
    suffix = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", "_".join(rf.generic.arguments))).strip("_")
    c_name = f"{entry.name.text}__{suffix}"
    unit.generic_names[c_name] = entry.name.text
    return replace(entry, name=Word(c_name, entry.name.span))


def _warning(what: str, act: Activity, span: Span) -> str:
    return Diagnostic("warning", f"{what}, and integers carry no derivative: activity '{act.word}' is taken as "
                      "std::autodiff takes it (the wrapper takes the shadows and seeds it has and leaves them as they "
                      "are; the derivatives are zero)", span).render()


def _integers(t: RType) -> bool:
    """An integer, or a reference or pointer to integers (one, an array or slice of them)."""
    while t.kind in ("reference", "pointer", "array", "slice") and t.elem is not None:
        t = t.elem
    return t.kind == "scalar" and t.name in SCALARS and not SCALARS[t.name][2] and t.name != "bool"


def _scratch_type(t: RType) -> bool:
    """A `&mut` reference to floats (one, an array or slice of them, a `Vec`), or a `*mut` pointer
    to floats: `const`, it gets a zeroed shadow of its own, made by the wrapper, so that
    derivatives stored in its memory and read again within the call are kept, while none comes in
    or goes out (std::autodiff's `Const` of a buffer the function writes, as ADBench's LSTM state;
    a pointer's, whose length no one knows, address space reserved around it: rust_wrappers)."""
    if t.kind == "pointer" and t.mutable and t.elem is not None:
        return t.elem.kind == "scalar" and t.elem.name in ("f32", "f64")
    if t.kind != "reference" or not t.mutable or t.elem is None:
        return False
    e = t.elem
    while e.kind in ("array", "slice", "vec") and e.elem is not None:
        e = e.elem
    return e.kind == "scalar" and e.name in ("f32", "f64")


__all__ = ["read_rust_unit", "rust_entry", "unclashing", "RustUnit", "RustTemplate", "DynTemplate", "Generic", "RFunction", "RParam", "RType",
           "is_rust", "SCALARS"]


BY_VALUE = "__adgen_by_value_"  # (the prefix of a shim's name)
_NOT_COPY = {"String", "Vec", "Box", "Rc", "Arc", "HashMap", "BTreeMap", "HashSet", "BTreeSet", "VecDeque", "Cell",
             "RefCell", "Mutex"}  # (the standard library's types that are not Copy)
_AGGREGATES = ("named", "object", "tuple", "array", "unit")
_BY_VALUE = {Activity.ACTIVE: "dup", Activity.DUAL: "dual", Activity.DUALONLY: "dualonly", Activity.CONST: "const"}
_IMPL_TRAIT = "'{}' takes an `impl Trait` parameter, which no instantiation can name: write a generic parameter for it"
_CLOSURE = re.compile(r"(?:impl|dyn)\s+(?:(?:std|core)::ops::)?Fn(?:Mut|Once)?\s*\(")
CLOSURES = ("adgen cannot pass a closure as a trait object ('{}'): it tells closures apart by their types (take "
            "`f: impl Fn(...)`, `f: F` with `F: Fn(...)`, or a reference to one, which `cargo adgen build` derives at "
            "each closure its crate passes; or differentiate the function that makes the closure)")


def _impl_trait(name: str, written: str) -> str:
    """What to say of an `impl Trait` parameter: a closure's, or another."""
    return CLOSURES.format(written.strip()) if _CLOSURE.match(written.strip()) else _IMPL_TRAIT.format(name)
_UNSIZED = {"str", "Path", "OsStr", "CStr", "Self"}  # (behind a reference, two words: a pointer and a length)
OPAQUE = "__AdgenClosure"  # what a closure instance's C view reads the closure's type as (bytes: rust_closures)
OUTCOME = "__adgen_outcome"  # the shim's parameter saying whether a value came (Option) or the error (Result)
_OUTCOME = re.compile(r"(?:(?:std|core)::(?:option|result)::)?(Option|Result)\s*<\s*(f64|f32)\s*(?:,(.+))?>")
_VEC = re.compile(r"(?:(?:std|alloc)::vec::)?Vec\s*<\s*(f64|f32)\s*>")
_IMPL = re.compile(r"(?:^|[;{}])\s*(?:(?:pub(?:\([^)]*\))?|unsafe|default)\s+)*impl\b\s*(?:<(?:[^<>]|<[^<>]*>)*>)?\s*"
                   r"(?:(?:[\w:]+(?:<(?:[^<>]|<[^<>]*>)*>)?)\s+for\s+)?&?\s*(?:[\w]+::)*(\w+)\s*"
                   r"(?:<(?:[^<>]|<[^<>]*>)*>)?\s*(?:where\b[^{]*)?$")


def unclashing(d: Derivation) -> Derivation:
    """`d` with derivatives named by a prefix no parameter's name starts (`d_`, else `dd_`...):
    a Rust wrapper's parameters are positional, so a parameter `d_u` beside `u` (std::autodiff's
    tests name them so) need not be renamed, as a C function's must."""
    names = {p.name for p in d.primal.params} | {"ret"}
    prefix = d.prefix
    while any(n.startswith(prefix) for n in names):
        prefix = "d" + prefix
    return d if prefix == d.prefix else replace(d, shadows=prefix)


def impl_owner(text: str, at: int) -> str:
    """The type whose `impl` block (inherent, or of a trait) holds the item at `at` directly, or
    "": the innermost block open there, its header read with comments and literals blanked."""
    plain = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\'', lambda m: " " * len(m.group()), _plain_text(text[:at]))
    opened: list[int] = []
    for i, ch in enumerate(plain):
        if ch == "{":
            opened.append(i)
        elif ch == "}" and opened:
            opened.pop()
    if not opened:
        return ""
    brace = opened[-1]
    header_start = max(plain.rfind(";", 0, brace), plain.rfind("}", 0, brace), plain.rfind("{", 0, brace))
    m = _IMPL.search(plain[max(header_start, 0):brace].rstrip() if header_start >= 0 else plain[:brace].rstrip())
    return m.group(1) if m else ""
