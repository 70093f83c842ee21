"""Reads a C or C++ file's function prototypes with libclang: names, parameter names and types,
where each declaration starts, every top-level name in scope, and which `#include` brought
each header in. A file that does not parse is reported with clang's own diagnostics. In C++,
the functions of namespaces, `extern "C"` blocks and classes are read too, by their qualified
names; function templates are noted where they start, for an entry to name an instantiation of
(`instantiate`), and so is what annotations cannot stand before yet (a constructor...), for the
error an annotation before it gets (specs/cxx.md)."""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from clang.cindex import CursorKind, TemplateArgumentKind, TranslationUnit, TypeKind

from adgen.frontend.annotations import MARKERS
from adgen.frontend.libclang import index
from adgen.frontend.ctype import CType, enclosing_namespaces, from_clang, from_clang_cxx, object_cxx
from adgen.frontend.languages import is_cxx
from adgen.frontend.skipped import skipped_ranges
from adgen.base.cxx_names import demangle
from adgen.base.diagnostics import AdgenError, SourceFile, Span, error, note

_GENERATED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]*\.adgen\.h)[>"]', re.M)
_INCLUDE = re.compile(r'#\s*include\s*([<"][^>"]+[>"])')


@dataclass(frozen=True)
class Param:
    name: str
    ctype: CType


@dataclass(frozen=True)
class Prototype:
    name: str
    params: tuple[Param, ...]
    returns: CType
    variadic: bool
    start: int  # offset where the declaration starts (attributes and specifiers included)
    span: Span  # the function's name in this declaration
    attributes: tuple[str, ...] = ()  # its GNU attributes as written, `enzyme_function_like("log1p")` say
    function_type: str = ""  # C++: its type (`double (const double *, int)`), to tell overloads apart
    symbol: str = ""  # C++: its mangled name, where it has one (not in `extern "C"`)
    member: bool = False  # C++: a member function, not static: its object is the first parameter, `self`
    cxx_linkage: bool = False  # C++ language linkage (not `extern "C"`): its derived functions have it too,
    scope: tuple[str, ...] = ()  # declared in these namespaces, outermost first (a member function's class's)

    @property
    def key(self) -> str:
        """What tells it apart from the other functions of its source: its name, and in C++ its
        parameter types too (overloads share a name)."""
        return self.name + self.function_type[self.function_type.index("("):] if self.function_type else self.name

    @property
    def address(self) -> str:
        """How generated C or C++ takes its address: in C++ cast to its type, which picks it
        among the overloads of its name."""
        if not self.function_type:
            return f"&{self.name}"
        at = self.function_type.index("(")
        return f"({self.function_type[:at].rstrip()} (*){self.function_type[at:]})&{self.name}"

    @property
    def by_value(self) -> bool:
        """Whether it passes or returns a struct (or complex number) by value: adgen then
        differentiates a wrapper taking them by address (see templates/lowering.c.j2)."""
        return self.returns.by_value or any(p.ctype.by_value for p in self.params)


@dataclass(frozen=True)
class Declared:
    kind: str  # "function", "variable", "type"
    file: str
    line: int
    column: int


@dataclass(frozen=True)
class Include:
    spelling: str  # '<math.h>' or '"vec.h"', as the source writes it
    path: str  # the file it resolved to
    line: int  # where the source includes it


@dataclass
class Unit:
    """What the frontend knows of one parsed C source."""

    source: SourceFile
    functions: list[Prototype]  # declared in the source itself, in order
    declared: dict[str, Declared]  # every top-level name, headers included
    includes: dict[str, Include]  # header path -> the source's own #include that brings it in
    errors: list  # clang's errors, rendered as Diagnostics
    # declared in the files it includes, not system headers, each located in its own file: what
    # `adgen cc` may differentiate in a unity build (a .c including other .c files)
    included: list[Prototype] = field(default_factory=list)
    cxx: bool = False  # read as C++
    refused: dict[int, str] = field(default_factory=dict)  # C++: where a declaration annotations cannot stand
    # before starts (a constructor, a member function template), and what it is
    templates: dict[int, "Template"] = field(default_factory=dict)  # C++: function templates, by where they start
    read_with: tuple[list[str], list] = ([], [])  # the flags and unsaved files it was read with (instantiate())
    skipped: list[tuple[int, int]] = field(default_factory=list)  # offsets of the `#if` branches not taken
    cxx_library: str | None = None  # C++: the C++ library it was read against (base/cxx_library.py)
    # the project's headers it includes (not system headers) that hold annotations, by real path
    headers: dict[str, "Header"] = field(default_factory=dict)
    # libclang's reading of it, kept for `instances_referenced` (not compared, not printed)
    tu: object = field(default=None, compare=False, repr=False)


@dataclass
class Header:
    """A header of the project holding annotations, as one source read it: the functions it
    declares (members in its classes too) and, for each, the real path of the file defining it
    (the source, the header itself where it is defined inline, or None: elsewhere)."""

    source: SourceFile
    functions: list[Prototype] = field(default_factory=list)
    defined_in: list[str | None] = field(default_factory=list)
    skipped: list[tuple[int, int]] = field(default_factory=list)  # as Unit's (an include guard's second time too)


@dataclass(frozen=True)
class Template:
    """A C++ function template of the source: an entry names an instantiation (`instantiate`)."""

    name: str  # qualified
    params: tuple[str, ...]  # its parameters' names
    start: int
    span: Span  # its name
    attributes: tuple[str, ...] = ()  # as Prototype's
    scope: tuple[str, ...] = ()  # as Prototype's
    kind = "function template"  # (as messages call it, and template arguments they show)
    example = "<double>"

    def instantiate(self, unit: "Unit", arguments: str) -> "Prototype | str":
        return instantiate(unit, self, arguments)

    def unnamed(self, entry) -> list:
        """The instantiations an entry naming none derives: none (C++ entries name theirs)."""
        return []

    def instantiates(self, symbol: str) -> bool:
        """Whether a mangled name (Itanium C++ ABI) is of an instantiation of this template:
        `_Z1fIdEvT_` of `f`, `_ZN2ns1fIdEEvT_` of `ns::f`."""
        parts = [p for p in self.name.split("::") if p]
        encoded = "".join(f"{len(p)}{p}" for p in parts)
        return symbol.startswith((f"_Z{encoded}I", f"_ZN{encoded}I") if len(parts) == 1 else f"_ZN{encoded}I")


@functools.lru_cache(maxsize=None)
def _real(path) -> str:
    """os.path.realpath, once per path while a unit is read (thousands of declarations name a
    few files; emptied by each read, which may follow a change of links)."""
    return os.path.realpath(path)


def read_unit(source: SourceFile, flags: list[str], made: frozenset[str] = frozenset(),
              generated_headers: dict[str, str] | None = None, included: frozenset[str] = frozenset()) -> Unit:
    """Parse `source`. `made`: the names of the `*.adgen.h` headers this run makes, whose includes
    are stood in for; `generated_headers` maps the spellings of those includes to the text they
    should have (empty on the first pass: the header being made cannot be read yet). A header an
    earlier run made for another source is read as it is. `included`: names (C's, or C++'s
    symbols) of functions whose prototypes are read where the files it includes declare them (not
    system headers; `adgen cc` looks for Enzyme's requests among them), with those of every
    function declared there with attributes (Enzyme's `enzyme_inactive`, say). Only those: a
    prototype's types take most of the reading where the declarations are many (mpi.h's 800
    functions, found through the MPI wrapper's -I: 0.3 s; llm.c's train_gpt2.c, included by a
    wrapper)."""
    _real.cache_clear()
    _bytes.cache_clear()
    flags = _absolute_includes(flags)  # clang looks for "DIR/name": the stand-ins must match
    cxx = is_cxx(source.path)
    library = None
    if cxx:
        from adgen.base.cxx_library import choose
        from adgen.base.toolchain import cxx_read_flags

        chosen = choose(flags)  # (the program's C++ library: base/cxx_library.py)
        library = chosen.name
        flags = [*cxx_read_flags(chosen), *flags]
    unsaved = _virtual_headers(source, flags, made, generated_headers or {})
    given = unsaved + _as_text(source.path)
    _given.clear()
    _given.update((path, text.encode()) for path, text in given)
    reader = index()  # (an error of its own where libclang is not libclang-ng's)
    try:
        tu = reader.parse(str(source.path.absolute()), args=["-x", "c++" if cxx else "c", *flags],
                          unsaved_files=given,
                          options=TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)  # (skipped_ranges)
    except Exception as exc:  # libclang raises a bare TranslationUnitLoadError
        raise AdgenError(error(f"libclang could not read {source.name}: {exc}"))
    main = _real(source.path)
    virtual = {_real(p) for p, _ in unsaved}
    files: dict[str, SourceFile] = {main: source}
    unit = Unit(source, [], {}, {}, [], cxx=cxx, read_with=(flags, unsaved), skipped=skipped_ranges(tu, source, main),
                cxx_library=library, tu=tu if cxx else None)
    for d in tu.diagnostics:
        if d.severity >= 3 and not (cxx and _in_system_header(d)):
            unit.errors.append(_clang_error(d, files))
    marked: dict[str, bool] = {}  # real path -> whether it is a header of the project holding annotations
    for cursor, kind, where, name in _declarations(tu.cursor, main, source, unit):
        if name is None or _real(name) in virtual:
            continue
        spelling = cursor.spelling
        if spelling and (spelling not in unit.declared or kind == CursorKind.TYPEDEF_DECL):
            what = {CursorKind.FUNCTION_DECL: "function", CursorKind.VAR_DECL: "variable"}.get(kind, "type")
            unit.declared[spelling] = Declared(what, name, where.line, where.column)
        if kind not in (CursorKind.FUNCTION_DECL, CursorKind.CXX_METHOD):
            continue
        path = _real(name)
        if path == main:
            unit.functions.append(_function(cursor, source, main))
        elif included and not where.is_in_system_header and (
                spelling in included or (cxx and cursor.mangled_name in included) or _spells_attribute(cursor)):
            if path not in files:
                files[path] = SourceFile(name)
            unit.included.append(_function(cursor, files[path], main))
        if path != main and (marked[path] if path in marked else
                             marked.setdefault(path, not where.is_in_system_header and _annotated(path))):
            header = unit.headers.get(path) or unit.headers.setdefault(path, Header(files.get(path) or SourceFile(name)))
            files.setdefault(path, header.source)
            definition = cursor.get_definition()
            header.functions.append(_function(cursor, header.source, main))
            header.defined_in.append(_real(definition.location.file.name) if definition is not None else None)
    unit.includes = _includes(tu, main, source, virtual)
    for path, header in unit.headers.items():
        header.skipped = skipped_ranges(tu, header.source, path)
    return unit


def _annotated(path: str) -> bool:
    """Whether a file holds an annotation's marker (its comments are read later); not a header
    adgen made (whose comments quote the annotations of its source)."""
    if path.endswith(".adgen.h"):
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return re.search(MARKERS, f.read()) is not None
    except OSError:
        return False


_SCOPES = (CursorKind.NAMESPACE, CursorKind.LINKAGE_SPEC, CursorKind.UNEXPOSED_DECL)
_CLASSES = (CursorKind.CLASS_DECL, CursorKind.STRUCT_DECL)
_REFUSED = {CursorKind.CONSTRUCTOR: "a constructor", CursorKind.DESTRUCTOR: "a destructor",
            CursorKind.FUNCTION_TEMPLATE: "a member function template",
            CursorKind.CONVERSION_FUNCTION: "a conversion function",
            CursorKind.CXX_METHOD: "a member function of a class template"}


def _declarations(cursor, main: str, source: SourceFile, unit: Unit, in_template: bool = False):
    """The top-level declarations, and in C++ those of namespaces and `extern "C"` blocks too,
    and the member functions of classes (not of class templates); what annotations cannot stand
    before (a constructor, a template...) is noted in `unit.refused` where the source declares it.
    Each as (cursor, its kind, its location, the name of its file or None): every property of a
    cursor is a call into libclang, asked once here of each of thousands of declarations."""
    in_class = cursor.kind in (*_CLASSES, CursorKind.CLASS_TEMPLATE)
    for child in cursor.get_children():
        kind = child.kind
        if unit.cxx and kind in _SCOPES:
            yield from _declarations(child, main, source, unit)
            continue
        where = child.location
        file = where.file
        name = file.name if file is not None else None
        ours = name is not None and _real(name) == main
        if kind == CursorKind.FUNCTION_TEMPLATE and ours and not in_class:
            start = child.extent.start
            at = source.offset(start.line, start.column)
            names = tuple(c.spelling for c in child.get_children() if c.kind == CursorKind.PARM_DECL)
            unit.templates.setdefault(at, Template(_qualified(child), names, at, Span(
                source, source.offset(where.line, where.column), len(child.spelling)),
                _attributes(child), enclosing_namespaces(child)))
            continue
        if ours and kind in _REFUSED and (kind != CursorKind.CXX_METHOD or in_template):
            start = child.extent.start
            unit.refused.setdefault(source.offset(start.line, start.column), _REFUSED[kind])
            continue
        if unit.cxx and kind in (*_CLASSES, CursorKind.CLASS_TEMPLATE):
            yield from _declarations(child, main, source, unit, in_template or kind == CursorKind.CLASS_TEMPLATE)
        yield child, kind, where, name


def _qualified(cursor) -> str:
    """A function's name with its namespaces and classes (`phys::energy`, `geo::Body::mass`); its
    name alone in C, and in an `extern "C"` block at file scope."""
    parts = [cursor.spelling]
    parent = cursor.semantic_parent
    while parent is not None and parent.kind in (CursorKind.NAMESPACE, CursorKind.LINKAGE_SPEC, *_CLASSES):
        if parent.kind != CursorKind.LINKAGE_SPEC:  # (`extern "C"` in a namespace: still its member)
            parts.append(parent.spelling)  # (an anonymous namespace's is empty: its names are its parent's)
        parent = parent.semantic_parent
    return "::".join(p for p in reversed(parts) if p)


def _function(cursor, source: SourceFile, main: str) -> Prototype:
    """A function declared in `source`, the file read (its real path `main`) or one it includes."""
    named = cursor.get_definition() or cursor  # parameter names: the definition's, if any

    def local(decl) -> bool:  # declared where the header cannot see it: the source itself, or a
        path = _real(decl.file)  # C file it includes (including that again defines its functions twice)
        return path == main or path.endswith(".c")

    cxx = is_cxx(source.path) or is_cxx(Path(main))
    read = (lambda t, parameter=False: from_clang_cxx(t, parameter, local)) if cxx else \
        (lambda t, parameter=False: from_clang(t, parameter=parameter, local=local))
    params = tuple(Param(arg.spelling or f"arg{i}", read(arg.type, True))
                   for i, arg in enumerate(named.get_arguments()))
    if cursor.type.kind != TypeKind.FUNCTIONPROTO:  # `double f()`: no prototype, no parameters
        params = ()
    member = cursor.kind == CursorKind.CXX_METHOD and not cursor.is_static_method()
    if member:  # (the object, as Enzyme passes `this`: a parameter with an activity of its own)
        params = (Param("self", object_cxx(cursor.semantic_parent.type, cursor.is_const_method(), local)), *params)
    start = cursor.extent.start
    return Prototype(
        name=_qualified(cursor) if cxx else cursor.spelling,
        params=params,
        returns=read(cursor.result_type),
        variadic=cursor.type.kind == TypeKind.FUNCTIONPROTO and cursor.type.is_function_variadic(),
        start=source.offset(start.line, start.column),
        span=Span(source, source.offset(cursor.location.line, cursor.location.column), len(cursor.spelling)),
        attributes=_attributes(cursor),
        function_type=cursor.type.get_canonical().spelling if cxx else "",
        symbol=cursor.mangled_name if cxx and cursor.mangled_name != _qualified(cursor) and not member else "",
        member=member,
        cxx_linkage=cxx and (member or cursor.mangled_name.startswith("_Z")),
        scope=enclosing_namespaces(cursor) if cxx else (),
    )


def instantiate(unit: Unit, template: Template, arguments: str) -> Prototype | str:
    """The instantiation `template<arguments>` as a function of the source, or clang's error: the
    source read again with its address taken after it, which instantiates it."""
    flags, unsaved = unit.read_with
    source = unit.source
    name = f"{template.name}{arguments}"
    text = source.text + f"\nauto *__adgen_instance = &{name};\n"
    tu = index().parse(str(source.path.absolute()), args=["-x", "c++", *flags],
                       unsaved_files=[*unsaved, (str(source.path.absolute()), text)])
    main = _real(source.path)
    problems = [d.spelling for d in tu.diagnostics if d.severity >= 3 and not _in_system_header(d)
                and d.location.file is not None and _real(d.location.file.name) == main
                and d.location.line > source.text.count("\n") + 1]
    var = next((c for c in tu.cursor.get_children() if c.spelling == "__adgen_instance"), None)
    if problems or var is None:
        return problems[0] if problems else "clang did not instantiate it"
    function = var.type.get_canonical().get_pointee()
    referenced = next((c.referenced for c in var.walk_preorder() if c.kind == CursorKind.DECL_REF_EXPR), None)

    def local(decl) -> bool:
        return _real(decl.file) == main

    types = list(function.argument_types())
    params = tuple(Param(template.params[i] if i < len(template.params) and template.params[i] else f"arg{i}",
                         from_clang_cxx(t, True, local)) for i, t in enumerate(types))
    return Prototype(name=name, params=params, returns=from_clang_cxx(function.get_result(), False, local),
                     variadic=function.is_function_variadic(), start=template.start, span=template.span,
                     function_type=function.spelling,
                     symbol=referenced.mangled_name if referenced is not None and referenced.mangled_name else "",
                     cxx_linkage=True, scope=template.scope)


def instances_referenced(unit: Unit, symbols: set[str]) -> dict[str, Prototype]:
    """The function template instantiations the source refers to by these mangled names (as
    `(void *)f<double>` in a call to Enzyme's API), each as a function of the source named with
    its template arguments as the reference spells them (`f<double>`): libclang lists them
    nowhere else, so its references to functions are walked (in libclang's reading of it, where
    the unit keeps it; else the source is read again)."""
    flags, unsaved = unit.read_with
    source = unit.source
    tu = unit.tu or index().parse(str(source.path.absolute()), args=["-x", "c++", *flags],
                                  unsaved_files=unsaved + _as_text(source.path))
    main = _real(source.path)
    found: dict[str, Prototype] = {}
    for c in _walked_in(tu, main):
        if c.kind != CursorKind.DECL_REF_EXPR or c.location.file is None or \
                _real(c.location.file.name) != main:
            continue
        r = c.referenced
        if r is None or r.kind != CursorKind.FUNCTION_DECL or r.mangled_name not in symbols or \
                r.mangled_name in found:
            continue
        arguments = _template_arguments(r)
        if arguments is None:  # (as the reference spells them)
            start, end = c.extent.start, c.extent.end
            written = source.text[source.offset(start.line, start.column):source.offset(end.line, end.column)]
            arguments = written[written.index("<"):] if "<" in written else ""
        declared = r.location.file.name if r.location.file is not None else source.path
        home = source if _real(declared) == main else SourceFile(declared)
        proto = _function(r, home, main)
        found[r.mangled_name] = replace(proto, name=proto.name + arguments, symbol=r.mangled_name)
    for symbol in symbols - set(found):  # named only inside another template: by its demangled name
        named = _demangled_instance(symbol)
        if named is None:
            continue
        template = next((t for t in unit.templates.values() if t.name == named[0]), None) or \
            Template(named[0], (), 0, Span(source, 0, 0))
        made = instantiate(unit, template, named[1])
        if isinstance(made, Prototype) and made.symbol == symbol:
            found[symbol] = made
    return found


def _walked_in(tu, main: str):
    """The cursors of the file read: its top-level declarations walked whole; those of the
    headers it includes are not walked (a C++ file including a large header has millions)."""
    for top in tu.cursor.get_children():
        file = top.location.file or top.extent.start.file
        if file is not None and _real(file.name) == main:
            yield from top.walk_preorder()


def _demangled_instance(symbol: str) -> tuple[str, str] | None:
    """A function template instantiation's qualified name and template arguments, as C++ source
    (`("enzyme::detail::call", "<double (*)(double), double>")`), from its mangled name; None for
    anything else (a lambda's type among the arguments cannot be spelled)."""
    text = demangle(symbol)
    if not text or "lambda" in text or "$_" in text:
        return None
    text = re.sub(r"\[abi:[^\]]*\]", "", text)
    text = re.sub(r"\)( const| volatile|&|&&)*$", ")", text)
    depth, k = 0, len(text) - 1
    while k >= 0:  # back to the parameters' '('
        depth += (text[k] == ")") - (text[k] == "(")
        if depth == 0:
            break
        k -= 1
    head = text[:k]
    if not head.endswith(">"):
        return None
    depth, j = 0, len(head) - 1
    while j >= 0:  # back to the template arguments' '<'
        depth += (head[j] == ">") - (head[j] == "<")
        if depth == 0:
            break
        j -= 1
    depth, start = 0, 0
    for i, ch in enumerate(head[:j]):  # the name begins after the return type's last top-level space
        depth += 1 if ch in "<(" else -1 if ch in ">)" else 0
        if ch == " " and depth == 0:
            start = i + 1
    return head[start:j], head[j:]


def _template_arguments(instance) -> str | None:
    """An instantiation's template arguments spelled so that they mean the same anywhere (`<double,
    3>`: canonical types, values), "" for a function that is not one, None where one of them is
    neither a type nor a value."""
    count = instance.get_num_template_arguments()
    if count <= 0:
        return ""
    spelled = []
    for k in range(count):
        kind = instance.get_template_argument_kind(k)
        if kind == TemplateArgumentKind.TYPE:
            spelled.append(instance.get_template_argument_type(k).get_canonical().spelling)
        elif kind == TemplateArgumentKind.INTEGRAL:
            spelled.append(str(instance.get_template_argument_value(k)))
        else:
            return None
    return "<" + ", ".join(spelled) + ">"


# The bytes of the files read, for a look at a declaration's text before its tokens are asked
# for (`_attributes`): what libclang is given in place of a file (unsaved), else the file's.
_given: dict[str, bytes] = {}


@functools.lru_cache(maxsize=None)
def _bytes(path: str) -> bytes | None:
    """A file's bytes, once per file while a unit is read (emptied by each read); None where it
    cannot be read."""
    if path in _given:
        return _given[path]
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def _spells_attribute(cursor) -> bool:
    """Whether a declaration's text may spell `__attribute__` (where it is not all in one file
    adgen can read, it may)."""
    extent = cursor.extent
    start, end = extent.start, extent.end
    if start.file is not None and end.file is not None and start.file.name == end.file.name:
        text = _bytes(start.file.name)
        if text is not None:
            return b"__attribute__" in text[start.offset:end.offset]
    return True


def _attributes(cursor) -> tuple[str, ...]:
    """The attributes in `__attribute__((...))` of a declaration, each as its tokens joined:
    clang drops those it does not know (Enzyme's plugin's `enzyme_inactive`) from the AST. A
    declaration whose text does not spell `__attribute__` has none, and its tokens (a function's
    body among them: all of a header's inline code, where a header is read) are not asked for."""
    if not _spells_attribute(cursor):
        return ()
    words: list[str] = []
    tokens = [t.spelling for t in cursor.get_tokens()]
    i = 0
    while i < len(tokens) and tokens[i] != "{":
        if tokens[i] == "__attribute__" and tokens[i + 1:i + 3] == ["(", "("]:
            depth, j, current = 2, i + 3, []
            while j < len(tokens) and depth:
                t = tokens[j]
                depth += (t == "(") - (t == ")")
                if depth == 1 and t == ",":
                    words.append("".join(current))
                    current = []
                elif depth >= 2:
                    current.append(t)
                j += 1
            words.append("".join(current))
            i = j
            continue
        i += 1
    return tuple(w for w in words if w)


def _as_text(path: Path) -> list[tuple[str, str]]:
    """The source as libclang is given it where its bytes are not all UTF-8 text (a Latin-1
    comment, a stray byte): each such byte a '?', in the same column, since libclang's Python
    binding cannot return their text (clang still rejects a '?' in code, in the user's file).
    Nothing where the file is UTF-8: libclang reads it itself."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
        return []
    except UnicodeDecodeError:
        text = re.sub("[\udc80-\udcff]", "?", data.decode("utf-8", errors="surrogateescape"))
        return [(str(path.absolute()), text)]


def _absolute_includes(flags: list[str]) -> list[str]:
    out = []
    for i, f in enumerate(flags):
        if f.startswith("-I") and len(f) > 2:
            f = "-I" + os.path.abspath(f[2:])
        elif i > 0 and flags[i - 1] == "-I":
            f = os.path.abspath(f)
        out.append(f)
    return out


def _virtual_headers(source: SourceFile, flags: list[str], made: frozenset[str],
                     texts: dict[str, str]) -> list[tuple[str, str]]:
    """Stand-ins for the `*.adgen.h` headers this run makes that the source includes, wherever
    clang may look."""
    dirs = [str(source.path.parent.absolute())] + [f[2:] for f in flags if f.startswith("-I") and len(f) > 2]
    dirs += [flags[i + 1] for i, f in enumerate(flags[:-1]) if f == "-I"]
    out = []
    for spelling in dict.fromkeys(_GENERATED_INCLUDE.findall(source.text)):
        if os.path.basename(spelling) not in made:
            continue
        for d in dict.fromkeys(dirs):
            out.append((os.path.join(d, spelling), texts.get(spelling, "")))
    return out


def _includes(tu, main: str, source: SourceFile, virtual: set[str]) -> dict[str, Include]:
    parent: dict[str, tuple[str, int]] = {}
    for inc in tu.get_includes():
        child = _real(inc.include.name)
        parent.setdefault(child, (_real(inc.source.name), inc.location.line))
    result: dict[str, Include] = {}
    for header in parent:
        top, seen = header, set()
        while parent.get(top, (main,))[0] != main and top not in seen:
            seen.add(top)
            top = parent[top][0]
        if top in parent and top not in virtual:
            m = _INCLUDE.search(source.line_text(parent[top][1]))
            if m:
                result[header] = Include(m.group(1), top, parent[top][1])
    return result


def _in_system_header(d) -> bool:
    """A C++ error inside the C++ library's headers: libclang's wheel (LLVM 18) does not know every
    builtin of the newer libc++ the bundled clang (LLVM 22) compiles with, and reads the rest of
    the file as well without it; the compiler itself then reports any real error."""
    return d.location.file is not None and d.location.is_in_system_header


def _clang_error(d, files: dict[str, SourceFile]):
    loc = d.location
    if loc.file is None:
        return error(f"clang: {d.spelling}")
    path = _real(loc.file.name)
    if path not in files:
        try:
            files[path] = SourceFile(loc.file.name)
        except OSError:
            return error(f"{loc.file.name}:{loc.line}:{loc.column}: {d.spelling}")
    sf = files[path]
    return error(d.spelling, Span(sf, sf.offset(loc.line, loc.column)))


def describe_declared(name: str, declared: Declared, unit: Unit):
    try:
        same = _real(declared.file) == _real(unit.source.path)
        sf = unit.source if same else SourceFile(declared.file)
        return note(f"'{name}' is declared here", Span(sf, sf.offset(declared.line, declared.column), len(name)))
    except OSError:
        return note(f"'{name}' is declared at {declared.file}:{declared.line}:{declared.column}")
