"""A module's text read into the model (its functions, named types, globals, metadata and
attribute groups), and the queries the AD core asks of a module: types of named structs and
their members, function attributes, TBAA tags and debug locations."""

from __future__ import annotations

import re
from collections.abc import MutableMapping

import adgen.ir_ad.ir.debuginfo as debuginfo
import adgen.ir_ad.ir.tbaa as tbaa
from adgen.ir_ad.ir.debuginfo import Location
from adgen.ir_ad.ir.functions import declaration, defined_name, parse_function, parse_header
from adgen.ir_ad.ir.model import Function
from adgen.ir_ad.ir.tokens import Cursor
from adgen.ir_ad.ir.types import Type, parse_type


_CONTINUED = re.compile(r"\n[ \t]+(to label )")


class Functions(MutableMapping):
    """A module's functions by IR name, in the text's order, each definition parsed the first
    time it is asked for: a C++ file's module holds thousands of functions of the headers it
    includes (a JSON library's), of which a build looks into a few."""

    def __init__(self, parse):
        self._parse = parse
        self._items: dict[str, Function | None] = {}
        self._lines: dict[str, list[str]] = {}  # definitions not parsed yet -> their lines

    def add_text(self, name: str, lines: list[str]) -> None:
        self._items[name] = None
        self._lines[name] = lines

    def text(self, name: str) -> str:
        """A definition's text as the module has it, without parsing it (its instructions as
        printed, where it has been parsed)."""
        lines = self._lines.get(name)
        return "\n".join(lines) if lines is not None else self[name].text

    def signature(self, name: str) -> Function:
        """A function's name, linkage, return and parameter types (its blocks not read where it has
        not been parsed: a Function without blocks, not kept)."""
        lines = self._lines.get(name)
        if lines is None:
            return self[name]
        header = parse_header(lines[0])
        return Function(header.name, header.ret, header.params, [], False, header.dbg, "", header.variadic,
                        header.linkage)

    def instruction_count(self, name: str) -> int:
        lines = self._lines.get(name)
        if lines is None:
            return sum(len(b.instructions) for b in self[name].blocks)
        return sum(1 for line in lines[1:-1] if line.startswith("  ") and line.strip()
                   and not line.lstrip().startswith((";", "#dbg_")))

    def __getitem__(self, name: str) -> Function:
        fn = self._items[name]
        if fn is None:
            fn = self._items[name] = self._parse(self._lines.pop(name))
        return fn

    def __setitem__(self, name: str, fn: Function) -> None:
        self._items[name] = fn
        self._lines.pop(name, None)

    def __delitem__(self, name: str) -> None:
        del self._items[name]
        self._lines.pop(name, None)

    def __contains__(self, name) -> bool:
        return name in self._items

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class Module:
    """The functions, named types, globals and debug locations of a module's text."""

    def __init__(self, text: str):
        self.inactive: set[str] = set()  # functions marked @inactive, by IR name (set by the build)
        self.custom: dict = {}  # functions with derivatives written by hand in Enzyme's conventions (custom.py)
        self.allocators: dict[str, int] = {}  # functions allocating like malloc -> their size parameter's index
        self.mpi_handles: dict[str, str] = {}  # MPI's predefined datatypes as the IR spells them (mpi.handles)
        self.checkpointed: dict = {}  # loop functions outlined for checkpointing (reverse/checkpoint/) by IR name
        text = _CONTINUED.sub(r" \1", text)  # an `invoke`'s labels, printed on a line of their own
        self.text = text
        self.functions = Functions(lambda lines: parse_function(lines, self.member_type))
        self.named_types: dict[str, str] = {}
        self.globals: dict[str, str] = {}
        self.metadata: dict[str, str] = {}
        self.attributes: dict[str, str] = {}  # attribute group ("0" for #0) -> its text
        lines = text.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("%") and " = type " in line:
                name, body = line.split(" = type ", 1)
                self.named_types[name] = body
            elif line.startswith("@"):
                self.globals[line.split(" ", 1)[0]] = line
            elif line.startswith("!"):
                key, _, value = line.partition(" = ")
                self.metadata[key] = value
            elif line.startswith("attributes #"):
                key, _, value = line.partition(" = ")
                self.attributes[key.split("#")[1].strip()] = value
            elif line.startswith("declare"):
                fn = declaration(line)
                self.functions[fn.name] = fn
            elif line.startswith("define"):
                j = i
                while lines[j].rstrip() != "}":
                    j += 1
                self.functions.add_text(defined_name(line), lines[i:j + 1])
                i = j
            i += 1

    def struct_type(self, t: Type) -> Type:
        """A named struct's body, parsed."""
        if t.kind != "named":
            return t
        body = self.named_types.get(t.text, "")
        if body.strip() == "opaque" or not body:
            return Type(t.text, "other")
        return parse_type(Cursor(body))

    def instruction_count(self) -> int:
        """Its functions' instructions (those not parsed yet counted from their text)."""
        return sum(self.functions.instruction_count(name) for name in self.functions)

    def member_type(self, t: Type, indices: list[int]) -> Type:
        for i in indices:
            t = self.struct_type(t)
            t = t.elems[0] if t.kind in ("array", "vector") else t.elems[i]
        return t

    def noreturn(self, callee: str) -> bool:
        """Whether a function never returns (a panic, abort, exit), by its attributes."""
        fn = self.functions.get(callee)
        if fn is None:
            return False
        header = fn.text.split("{", 1)[0] if not fn.declaration else fn.text
        if re.search(r"\)[^(]*\bnoreturn\b", header):
            return True
        return any("noreturn" in self.attributes.get(group, "").split() for group in re.findall(r"#(\d+)", header))

    def memory_effects(self, fn: Function) -> str | None:
        """What LLVM inferred a function may do to memory, its attributes' `memory(...)`
        ("none", "read", "argmem: readwrite"...); None where they say nothing (anything)."""
        found = re.search(r"memory\(([^)]*)\)", " ".join(self.attributes.get(g, "") for g in fn.attribute_groups))
        return found.group(1) if found else None

    def tbaa_types(self, tag: str | None) -> tuple[str, ...]:
        """See `tbaa.tbaa_types`."""
        return tbaa.tbaa_types(self.metadata, tag)

    def tbaa_struct_types(self, node: str | None) -> list[str] | None:
        """See `tbaa.tbaa_struct_types`."""
        return tbaa.tbaa_struct_types(self.metadata, node)

    def tbaa_scalars(self, tag: str | None) -> list[str] | None:
        """See `tbaa.tbaa_scalars`."""
        return tbaa.tbaa_scalars(self.metadata, tag)

    def location(self, dbg: str | None) -> Location | None:
        """The C file, line and column of a !DILocation."""
        return debuginfo.location(self.metadata, dbg)

    def inlined_at(self, dbg: str | None) -> str | None:
        """The !DILocation where the code at `dbg` was inlined, if it was."""
        return debuginfo.inlined_at(self.metadata, dbg)

    def inline_chain(self, dbg: str | None) -> list[tuple[Location | None, str]]:
        """A debug location and those it was inlined at, innermost first: (location, !DILocation)."""
        chain = []
        while dbg and len(chain) < 64:
            chain.append((self.location(dbg), dbg))
            dbg = self.inlined_at(dbg)
        return chain

    def subprogram(self, dbg: str) -> str | None:
        """The source name of the function the code at a debug location belongs to."""
        return debuginfo.subprogram(self.metadata, dbg)
