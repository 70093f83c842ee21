"""What adgen needs to know of a C type: how to spell it in a declaration, whether it is a
float/double scalar or a pointer to floating data, how its shadow is spelled, and which
files declare the names it uses (so the generated header can include them)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from clang.cindex import Cursor, CursorKind, Type, TypeKind, conf

_FLOATING = (TypeKind.FLOAT, TypeKind.DOUBLE)
_ARRAYS = (TypeKind.CONSTANTARRAY, TypeKind.INCOMPLETEARRAY, TypeKind.VARIABLEARRAY, TypeKind.DEPENDENTSIZEDARRAY)
_SUGAR = (TypeKind.ELABORATED, TypeKind.TYPEDEF)
_REFERENCES = (TypeKind.LVALUEREFERENCE, TypeKind.RVALUEREFERENCE)
_POINTERS = (TypeKind.POINTER, *_REFERENCES)
_FUNCTIONS = (TypeKind.FUNCTIONPROTO, TypeKind.FUNCTIONNOPROTO)
_STRUCTS = (CursorKind.STRUCT_DECL, CursorKind.CLASS_DECL)  # (C++ classes hold floats as structs do)


@dataclass(frozen=True)
class DeclRef:
    """Where a named type is declared: its file and the extent of its declaration."""

    name: str
    file: str
    start: tuple[int, int]  # (line, byte column), as clang counts
    end: tuple[int, int]
    namespaces: tuple[str, ...] = ()  # C++: the namespaces it is declared in, outermost first


@dataclass(frozen=True)
class CType:
    spelling: str  # as the source names it, e.g. "const vec3 *restrict"
    is_void: bool
    is_floating: bool  # a float or double scalar
    is_pointer: bool  # a pointer, a typedef of one, or an array parameter
    points_to_floating: bool  # pointee holds float/double data, directly or in structs/arrays
    shadow_spelling: str | None  # for pointers: the same type with the pointee's const dropped
    decls: tuple["DeclRef", ...]  # the typedefs/structs/enums it names, outermost only
    element_float: str = ""  # "double" or "float" when a pointer's pointee (a struct by value) holds only that
    ffi: str = ""  # how Python's ctypes passes it: "double", "int", "ptr:double", "ptr", "" (not at all)
    element_size: int = 0  # for pointers: the pointee's size in bytes (a struct, a row `double [3]`), 0 if unknown
    # A struct or complex number passed by value: adgen passes it by pointer inside (whatever
    # the target's ABI does with it), and its derivative is a value of the same type.
    by_value: bool = False
    size: int = 0  # bytes, 0 if unknown (void, an incomplete type)
    holds_floating: bool = False  # a float/double scalar, or an aggregate by value holding them (and no
    # pointer to floating data: `pointing_by_value`)
    fields: tuple = ()  # a struct by value: (name, ffi, count, fields) each, for adgen.load
    # Spellings for generated declarations when the type names the source's own typedefs,
    # structs or enums ("" when `spelling` will do), and the struct tags to declare ahead.
    portable: str = ""
    portable_shadow: str = ""
    ahead: tuple[str, ...] = ()
    reference: bool = False  # a C++ reference (a pointer to one element, to adgen)
    through_pointers: bool = False  # a pointer to a struct reaching its floating data through pointers (a std::vector)
    # A struct by value with a field pointing to floating data: the derivatives of what it points to have no place
    # in a gradient or tangent of its type, so it is not `active` or `dual` (it may be `const`).
    pointing_by_value: bool = False

    @property
    def declared(self) -> str:
        """How the generated header spells it: compilable in any file that includes the header."""
        return self.portable or self.spelling

    @property
    def declared_shadow(self) -> str | None:
        return self.portable_shadow or self.shadow_spelling

    def declare(self, name: str) -> str:
        return declare(self.spelling, name)


def shadow_ctype(t: CType) -> CType:
    """A pointer's shadow as a type of its own: the pointee's const dropped."""
    if t.shadow_spelling is None:
        return t
    return replace(t, spelling=t.shadow_spelling, portable=t.portable_shadow)


def pointer_ctype(t: CType) -> CType:
    """`const T *` for a float or double T (the N tangents of a scalar dualv)."""
    bare = drop_const(t.declared)
    return CType(f"const {bare} *", False, False, True, True, f"{bare} *", t.decls, element_float=t.ffi,
                 ffi=f"ptr:{t.ffi}", element_size=t.size, size=8)


def declare(spelling: str, name: str) -> str:
    """A declaration of `name` with a type spelled as clang spells types: `double *x`,
    `double x[3]`, `double (*f)(double)`, `double (*m)[3]`."""
    if "(*" in spelling:
        close = spelling.index(")", spelling.index("(*"))
        sep = "" if spelling[close - 1] == "*" else " "
        return spelling[:close] + sep + name + spelling[close:]
    if "[" in spelling:
        at = spelling.index("[")
        return spelling[:at].rstrip() + " " + name + spelling[at:]
    return spelling + name if spelling.endswith(("*", "&")) else f"{spelling} {name}"


def pointer_to(spelling: str) -> str:
    if "[" in spelling:
        at = spelling.index("[")
        return spelling[:at].rstrip() + " (*)" + spelling[at:]
    return spelling + "*" if spelling.endswith("*") else spelling + " *"


def drop_const(spelling: str) -> str:
    """The spelling of a const-qualified type without its top-level const."""
    if spelling.endswith(" const"):
        return spelling[: -len(" const")]
    return re.sub(r"^const\s+", "", spelling, count=1)


def from_clang(t: Type, parameter: bool = False, local=None) -> CType:
    """`local(decl)`: whether a declaration is the source's own, which the header cannot see."""
    ctype = _from_clang(t, parameter)
    if local is None or not any(local(d) for d in ctype.decls):
        return ctype
    spelled = _portable(t, ctype, parameter)
    if spelled is None:  # an anonymous struct by value: the header needs its definition
        return ctype
    spelling, shadow, ahead = spelled
    return replace(ctype, portable=spelling, portable_shadow=shadow, ahead=ahead,
                   decls=tuple(d for d in ctype.decls if not local(d)))


def from_clang_cxx(t: Type, parameter: bool, local) -> CType:
    """A C++ type, spelled with its namespaces (`const geo::vec3 &`), which the generated files
    name outside them; a class the source defines itself (`local(decl)`), which they cannot see,
    is declared ahead in its namespaces (`namespace geo { struct vec3; }`): what references and
    pointers need."""
    ctype = _from_clang(t, parameter, qualified=True)
    if not any(local(d) for d in ctype.decls) or ctype.by_value:  # (by value: only its definition will do)
        return ctype
    declared = _ahead_cxx(t)
    if declared is None:
        return ctype  # (a nested class, a template: the header needs its definition)
    return replace(ctype, ahead=(declared,), decls=tuple(d for d in ctype.decls if not local(d)))


def object_cxx(record: Type, const: bool, local) -> CType:
    """The object of a C++ member function as its first parameter: a pointer to its class (`const`
    for a const member function), whose shadow is a pointer to an object of the same class."""
    name = record.get_canonical().spelling
    decls = tuple(dict.fromkeys(_decls(record)))
    ahead = _ahead_cxx(record) if any(local(d) for d in decls) else None
    return CType(
        spelling=f"{'const ' if const else ''}{name} *", is_void=False, is_floating=False, is_pointer=True,
        points_to_floating=_reached(record) != "", shadow_spelling=f"{name} *",
        decls=tuple(d for d in decls if not local(d)) if ahead else decls, element_float=_uniform_float(record),
        ffi="ptr", element_size=max(record.get_canonical().get_size(), 0), size=8, ahead=(ahead,) if ahead else (),
        through_pointers=_reached(record) == "through pointers")


def enclosing_namespaces(decl: Cursor) -> tuple[str, ...]:
    """The named namespaces a declaration stands in, outermost first, through `extern "C"`
    blocks and enclosing classes (an anonymous namespace is left out: its names are no one
    else's, and a copy or a declaration outside it is as good)."""
    names = []
    parent = decl.semantic_parent
    while parent is not None and parent.kind in (CursorKind.NAMESPACE, CursorKind.LINKAGE_SPEC, *_STRUCTS):
        if parent.kind == CursorKind.NAMESPACE and parent.spelling:
            names.append(parent.spelling)
        parent = parent.semantic_parent
    return tuple(reversed(names))


def _ahead_cxx(t: Type) -> str | None:
    """`namespace a { namespace b { struct name; } }` for the class `t` names (through pointers
    and references), None where it cannot be declared so."""
    c = t.get_canonical()
    while c.kind in _POINTERS or c.kind in _ARRAYS:
        inner = c.element_type if c.kind in _ARRAYS else c.get_pointee()
        c = inner.get_canonical()
    decl = c.get_declaration()
    if c.kind != TypeKind.RECORD or decl.kind not in _STRUCTS or not decl.spelling or "<" in c.spelling:
        return None
    text = f"{'class' if decl.kind == CursorKind.CLASS_DECL else 'struct'} {decl.spelling};"
    parent = decl.semantic_parent
    while parent is not None and parent.kind != CursorKind.TRANSLATION_UNIT:
        if parent.kind != CursorKind.NAMESPACE or not parent.spelling:
            return None
        text = f"namespace {parent.spelling} {{ {text} }}"
        parent = parent.semantic_parent
    return text


def _from_clang(t: Type, parameter: bool, qualified: bool = False) -> CType:
    """`qualified`: spelled with namespaces (clang's canonical spelling), for C++."""
    canonical = t.get_canonical()
    kind = canonical.kind
    spell = (lambda ty: ty.get_canonical().spelling) if qualified else (lambda ty: ty.spelling)
    is_array_param = parameter and kind in _ARRAYS
    is_pointer = kind in _POINTERS or is_array_param  # (a C++ reference, lvalue or rvalue, is a pointer to
    # adgen: its shadow an lvalue reference of the same type, the pointee's const dropped)
    pointee = _pointee(t) if is_pointer else None
    spelling = pointer_to(spell(pointee)) if is_array_param else spell(t)  # C adjusts them so
    shadow = None
    if pointee is not None and kind in _REFERENCES:
        shadow = drop_const(spell(pointee)) + " &"
    elif pointee is not None:
        if _const_data(pointee):
            shadow = pointer_to(drop_const(spell(pointee)))
            if t.is_restrict_qualified():  # (C++ has no `restrict`, only clang's and gcc's `__restrict`)
                word = "__restrict" if qualified else "restrict"
                shadow += word if shadow.endswith("*") else " " + word
        else:
            shadow = spelling
    by_value = not is_pointer and kind in (TypeKind.RECORD, TypeKind.COMPLEX)
    pointing = by_value and _points_to_floating(canonical)
    return CType(
        spelling=spelling,
        is_void=kind == TypeKind.VOID,
        is_floating=kind in _FLOATING,
        is_pointer=is_pointer,
        points_to_floating=pointee is not None and _reached(pointee) != "",
        shadow_spelling=shadow,
        element_float=_uniform_float(pointee) if pointee is not None else _uniform_float(t) if by_value else "",
        decls=tuple(dict.fromkeys(_decls(t))),
        ffi=_ffi(canonical, pointee),
        element_size=max(pointee.get_canonical().get_size(), 0) if pointee is not None else 0,
        by_value=by_value,
        size=max(canonical.get_size(), 0) if not is_array_param else 8,
        holds_floating=(kind in _FLOATING or by_value) and holds_floating(t) and not pointing,
        pointing_by_value=pointing,
        fields=(_fields(canonical) or ()) if by_value else (),
        reference=kind in _REFERENCES,
        through_pointers=pointee is not None and _reached(pointee) == "through pointers",
    )


def _portable(t: Type, ctype: CType, parameter: bool):
    """The type and its shadow spelled without the source's own names: typedefs by what they
    stand for, a struct or union by its tag (declared ahead), an enum by its integer type, a
    pointer to an anonymous struct as a pointer to void. None where that cannot be done (a
    struct by value, function pointers): the header then keeps the source's names."""
    ahead: list[str] = []
    canonical = t.get_canonical()
    if ctype.by_value and canonical.kind == TypeKind.RECORD:  # by value: only its definition will do
        return None
    if not ctype.is_pointer:
        spelling = _spell(canonical, ahead)
        return None if spelling is None else (spelling, "", tuple(ahead))
    pointee = canonical.element_type if parameter and canonical.kind in _ARRAYS else canonical.get_pointee()
    inner = _spell(pointee, ahead)
    if inner is None:
        if pointee.get_canonical().kind != TypeKind.RECORD:  # function pointers: their typedef names
            return None
        inner = "const void" if pointee.is_const_qualified() else "void"

    def qualified(pointer: str) -> str:
        if not (canonical.is_restrict_qualified() or t.is_restrict_qualified()):
            return pointer
        return pointer + ("restrict" if pointer.endswith("*") else " restrict")

    spelling = qualified(pointer_to(inner))
    shadow = qualified(pointer_to(drop_const(inner))) if _const_data(pointee) else spelling
    return spelling, shadow, tuple(ahead)


def _spell(t: Type, ahead: list[str]) -> str | None:
    """`t` spelled without typedefs; a struct's tag goes to `ahead`; None for an anonymous struct
    or a function type."""
    c = t.get_canonical()
    const = "const " if c.is_const_qualified() else ""
    if c.kind == TypeKind.RECORD:
        decl = c.get_declaration()
        tag = f"{'union' if decl.kind == CursorKind.UNION_DECL else 'struct'} {decl.spelling}"
        if tag not in c.spelling:  # `typedef struct { ... } name;`: no tag to name it by
            return None
        ahead.append(tag)
        return const + tag
    if c.kind == TypeKind.ENUM:
        return const + c.get_declaration().enum_type.get_canonical().spelling
    if c.kind in _FUNCTIONS:  # declarators inside out: not composed here
        return None
    if c.kind == TypeKind.POINTER:
        inner = _spell(c.get_pointee(), ahead)
        if inner is None:
            return None
        return pointer_to(inner) + (" const" if c.is_const_qualified() else "")
    if c.kind == TypeKind.CONSTANTARRAY:
        inner = _spell(c.element_type, ahead)
        return None if inner is None or "(" in inner or "[" in inner else f"{inner}[{c.element_count}]"
    return c.spelling


def _pointee(t: Type) -> Type:
    """The pointee of a pointer or array-parameter type, keeping typedef names where it can."""
    while t.kind in _SUGAR:
        if t.kind == TypeKind.ELABORATED:
            t = t.get_named_type()
        else:
            t = t.get_declaration().underlying_typedef_type
    if t.kind in _ARRAYS:
        return t.element_type
    return t.get_pointee()


def _const_data(t: Type) -> bool:
    """Whether `t` is const, or an array of const elements (`const double [3]`)."""
    if t.is_const_qualified():
        return True
    if t.kind in _ARRAYS:
        return _const_data(t.element_type)
    c = t.get_canonical()
    return c.kind in _ARRAYS and _const_data(c.element_type)


_FFI_SCALARS = {
    TypeKind.DOUBLE: "double", TypeKind.FLOAT: "float", TypeKind.LONGDOUBLE: "longdouble", TypeKind.BOOL: "bool",
    TypeKind.CHAR_S: "byte", TypeKind.SCHAR: "byte", TypeKind.UCHAR: "ubyte", TypeKind.CHAR_U: "ubyte",
    TypeKind.SHORT: "short", TypeKind.USHORT: "ushort", TypeKind.INT: "int", TypeKind.UINT: "uint",
    TypeKind.LONG: "long", TypeKind.ULONG: "ulong", TypeKind.LONGLONG: "longlong", TypeKind.ULONGLONG: "ulonglong",
    TypeKind.ENUM: "int",
}


def _ffi(canonical: Type, pointee: Type | None) -> str:
    """The ctypes spelling adgen.load uses: a scalar, a pointer to one, an opaque pointer, a
    struct (its `fields`), a complex number, or "" (not at all)."""
    if pointee is not None:
        inner = _FFI_SCALARS.get(pointee.get_canonical().kind)
        return f"ptr:{inner}" if inner else "ptr"
    if canonical.kind == TypeKind.VOID:
        return "void"
    if canonical.kind == TypeKind.COMPLEX:
        inner = _FFI_SCALARS.get(canonical.element_type.get_canonical().kind)
        return f"complex:{inner}" if inner in ("double", "float") else ""
    if canonical.kind == TypeKind.RECORD:
        ok = canonical.get_declaration().kind == CursorKind.STRUCT_DECL and _fields(canonical) is not None
        return "struct" if ok else ""
    return _FFI_SCALARS.get(canonical.kind, "")


def _fields(c: Type) -> tuple | None:
    """A struct's fields as (name, ffi, count, fields), arrays flattened to a count; None when
    ctypes cannot spell one (a union, a bit-field, a pointer to a function...)."""
    if c.kind == TypeKind.COMPLEX:
        return ()
    out = []
    for f in c.get_fields():
        t, count = f.type.get_canonical(), 1
        while t.kind == TypeKind.CONSTANTARRAY:
            count *= t.element_count
            t = t.element_type.get_canonical()
        if f.is_bitfield():
            return None
        sub = _fields(t) if t.kind == TypeKind.RECORD else ()
        ffi = "ptr" if t.kind == TypeKind.POINTER else _ffi(t, None)
        if not ffi or sub is None:
            return None
        out.append((f.spelling, ffi, count, sub))
    return tuple(out)


def _uniform_float(t: Type) -> str:
    """"double" or "float" when every scalar of `t` is of that one type, else ""."""
    c = t.get_canonical()
    if c.kind == TypeKind.DOUBLE:
        return "double"
    if c.kind == TypeKind.FLOAT:
        return "float"
    if c.kind in _ARRAYS or c.kind == TypeKind.COMPLEX:
        return _uniform_float(c.element_type)
    if c.kind == TypeKind.RECORD and c.get_declaration().kind in _STRUCTS:
        kinds = {_uniform_float(f.type) for f in c.get_fields()}
        return kinds.pop() if len(kinds) == 1 else ""
    return ""


def holds_floating(t: Type) -> bool:
    c = t.get_canonical()
    if c.kind in _FLOATING:
        return True
    if c.kind in _ARRAYS or c.kind == TypeKind.COMPLEX:
        return holds_floating(c.element_type)
    if c.kind == TypeKind.RECORD:
        decl = c.get_declaration()
        return decl.kind in _STRUCTS and any(holds_floating(f.type) for f in c.get_fields())
    return False


def _reached(t: Type) -> str:
    """How floating data is reached from what a pointer points to: "held" (floats, or structs and
    arrays holding them), "through pointers" (a struct or class with a pointer to floating data
    among its fields, a `std::vector<double>`, a `struct { double *data; int n; }`: `dup` passes
    it with a shadow whose pointers point to the shadows of that data), or "" (not at all)."""
    if holds_floating(t):
        return "held"
    c = t.get_canonical()
    return "through pointers" if _points_to_floating(c) or _unseen_instance_of_floats(c) else ""


def _unseen_instance_of_floats(c: Type) -> bool:
    """A class template's instance whose fields libclang does not show (an implicit
    instantiation: Eigen's `Matrix<double, -1, 1>`), with a floating type among its template
    arguments: taken to reach floating data, its shadow an object of the same type."""
    if c.kind != TypeKind.RECORD or c.get_declaration().kind not in _STRUCTS or any(True for _ in c.get_fields()):
        return False
    n = c.get_num_template_arguments()
    return any(c.get_template_argument_type(k).get_canonical().kind in _FLOATING for k in range(max(n, 0)))


def _points_to_floating(c: Type, depth: int = 0) -> bool:
    """Whether a struct or class holds a pointer to floating data: among its fields, those of the
    structs it holds, or its base classes' (Eigen's `Matrix` holds it in its base's storage)."""
    if depth > 8 or c.kind != TypeKind.RECORD or c.get_declaration().kind not in _STRUCTS:
        return False
    for f in c.get_fields():
        ft = f.type.get_canonical()
        if (ft.kind == TypeKind.POINTER and holds_floating(ft.get_pointee())) or _points_to_floating(ft, depth + 1):
            return True
    return any(_points_to_floating(b.type.get_canonical(), depth + 1) for b in _bases(c))


def _bases(c: Type):
    """The base classes of a class, by its type: an implicit instantiation's too, whose
    declaration libclang shows without them (libstdc++'s `std::vector<double>` holds its pointers
    in its bases' `_Vector_impl_data`)."""
    try:
        return list(c.get_bases())
    except AttributeError:  # (a libclang without clang_visitCXXBaseClasses)
        return [b for b in c.get_declaration().get_children() if b.kind == CursorKind.CXX_BASE_SPECIFIER]


def _template_family(decl: Cursor) -> list[Cursor]:
    """For an instance of a class template, the template's declarations and its partial and
    explicit specializations beside it, in their order: what the instance's own declaration
    (one of them) needs to be read. Empty for a class no template made."""
    primary, seen = decl, set()
    while primary.hash not in seen:
        seen.add(primary.hash)
        made_from = _made_from(primary)
        if made_from is None:
            break
        primary = made_from
    if primary is decl or primary.kind != CursorKind.CLASS_TEMPLATE or primary.semantic_parent is None:
        return []
    usr = primary.get_usr()
    family = []
    for c in primary.semantic_parent.get_children():
        if c.kind == CursorKind.CLASS_TEMPLATE and c.get_usr() == usr:
            family.append(c)
        elif c.kind in (CursorKind.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, *_STRUCTS):
            made_from = _made_from(c)
            if made_from is not None and made_from.get_usr() == usr:
                family.append(c)
    return family


def _made_from(c: Cursor) -> Cursor | None:
    """The template a class (or a partial specialization) was made from; None for none (libclang's
    bindings differ in how they return a null cursor)."""
    made_from = conf.lib.clang_getSpecializedCursorTemplate(c)
    if made_from is None or made_from == conf.lib.clang_getNullCursor():
        return None
    made_from._tu = c._tu  # (what the bindings' own methods set: its translation unit)
    return made_from


def _decls(t: Type):
    """The declarations of the named types `t` mentions: the outermost name is enough, since its
    declaration must see whatever it is built from."""
    if t.kind in _SUGAR or t.kind in (TypeKind.RECORD, TypeKind.ENUM) or \
            (t.kind == TypeKind.UNEXPOSED and t.get_canonical().kind == TypeKind.RECORD):  # (an instance, in libclang 22)
        decl = t.get_declaration()
        if decl.kind != CursorKind.NO_DECL_FOUND and decl.location.file is not None:
            for d in _template_family(decl) or (decl,):
                start, end = d.extent.start, d.extent.end
                yield DeclRef(d.spelling, d.location.file.name, (start.line, start.column), (end.line, end.column),
                              enclosing_namespaces(d))
            return
        if t.kind == TypeKind.ELABORATED:
            yield from _decls(t.get_named_type())
        return
    if t.kind in _POINTERS:
        yield from _decls(t.get_pointee())
    elif t.kind in _ARRAYS:
        yield from _decls(t.element_type)
    elif t.kind == TypeKind.FUNCTIONPROTO:
        yield from _decls(t.get_result())
        for a in t.argument_types():
            yield from _decls(a)
