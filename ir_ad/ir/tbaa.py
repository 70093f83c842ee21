"""Reading clang's type-based alias analysis tags (`!tbaa`): the C types a load or store
accesses, which tell a `double` from an `int` that can never overlap. Each reader takes the
module's metadata nodes; `Module` offers them as queries."""

from __future__ import annotations

import re


def tbaa_types(metadata: dict[str, str], tag: str | None) -> tuple[str, ...]:
    """The scalar type an access tag names and the types above it, nearest first
    ("double", "omnipotent char", ...); empty when unknown."""
    refs = re.findall(r"![0-9]+", metadata.get(tag or "", ""))
    if len(refs) < 2:
        return ()
    chain, at = [], refs[1]  # the access type
    for _ in range(16):
        m = re.match(r'!\{!"([^"]*)"(?:, (![0-9]+))?', metadata.get(at, ""))
        if not m:
            break
        chain.append(m.group(1))
        if not m.group(2):
            break
        at = m.group(2)
    return tuple(chain)


def tbaa_scalars(metadata: dict[str, str], tag: str | None) -> list[str] | None:
    """The scalar types of the struct an access tag's struct path starts at, its nested
    structs flattened ("int", "p1 float", "double"...); None for a scalar access tag or
    one adgen cannot read. An array member is listed as its element type."""
    refs = re.findall(r"![0-9]+", metadata.get(tag or "", ""))
    if len(refs) < 2 or refs[0] == refs[1]:
        return None
    return _members(metadata, refs[0], 0)


def tbaa_struct_types(metadata: dict[str, str], node: str | None) -> list[str] | None:
    """The scalar types of the fields a copy of an aggregate moves, by its `!tbaa.struct`
    (offset, size and access tag per field: clang's for a struct's copy, libstdc++'s relocation
    of a vector's elements); None without one, or with a field of no type named."""
    fields = re.findall(r"i64 [0-9]+, i64 [0-9]+, (![0-9]+)", metadata.get(node or "", ""))
    named = [tbaa_types(metadata, tag)[:1] for tag in fields]
    return [n[0] for n in named] if named and all(named) else None


def _members(metadata: dict[str, str], node: str, depth: int) -> list[str] | None:
    m = re.match(r'!\{!"([^"]*)"(.*)\}$', metadata.get(node, ""))
    if m is None or depth > 16:
        return None
    members = re.findall(r"(![0-9]+), i64 [0-9]+", m.group(2))
    if len(members) <= 1 and re.fullmatch(r", ![0-9]+(, i64 0)?", m.group(2)):
        return [m.group(1)]  # a scalar type node: name, parent, offset
    out: list[str] = []
    for member in members:
        inner = _members(metadata, member, depth + 1)
        if inner is None:
            return None
        out += inner
    return out


def tbaa_scalar_members(metadata: dict[str, str], node: str, depth: int = 0) -> list[str] | None:
    """The scalar types of a TBAA type node, a C++ class's flattened (its members', their
    classes' too); an empty class's none. A class's node is named by its mangled type
    (`_ZTS...`), so one of a single member at offset 0 is told from a scalar's (name, parent,
    offset 0); an enum's, which is named so too, gives its parent ("omnipotent char"). None
    for a node adgen cannot read."""
    m = re.match(r'!\{!"([^"]*)"(.*)\}$', metadata.get(node, ""))
    if m is None or depth > 16:
        return None
    if not m.group(1).startswith("_ZTS"):
        return [m.group(1)]
    out: list[str] = []
    for member in re.findall(r"(![0-9]+), i64 [0-9]+", m.group(2)):
        inner = tbaa_scalar_members(metadata, member, depth + 1)
        if inner is None:
            return None
        out += inner
    return out


def ir_class_name(ir_name: str) -> str:
    """`Eigen::MapBase` for `%"class.Eigen::MapBase.115.61"`: a class's qualified name without
    template arguments, as clang names its IR types (numbered apart)."""
    name = ir_name.lstrip("%").strip('"')
    name = re.sub(r"^(class|struct)\.", "", name)
    return re.sub(r"(\.[0-9]+)+$", "", name)


def class_descriptors(metadata: dict[str, str]):
    """The struct-path TBAA type descriptors named by a class's mangled type-info name
    (`_ZTS...`): each as that name and its members' (descriptor node, offset) pairs."""
    for text in metadata.values():
        m = re.match(r'!\{!"(_ZTS[^"]*)"((?:, ![0-9]+, i64 [0-9]+)*)\}$', text)
        if m is not None:
            yield m.group(1), [(ref, int(at)) for ref, at in re.findall(r"(![0-9]+), i64 ([0-9]+)", m.group(2))]
