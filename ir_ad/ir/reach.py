"""What the functions and global variables of a module's text reach, read once from the text
without reading it into a `Module` (a lowered module of thousands of functions is tens of
megabytes): each definition's size and the globals it names, for the build to split its
derived functions into batches, each differentiated and compiled from a module of only what it
reaches (commands/build/batches.py).

Names here are bare: without `@` and quotes, as llvmlite's `.name` gives them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from adgen.ir_ad.ir.functions import parse_header
from adgen.ir_ad.ir.instructions import parse_instruction
from adgen.ir_ad.ir.text import may_call_through_pointer

REFERENCE = re.compile(r'@("(?:[^"\\]|\\[0-9A-Fa-f]{2})*"|[-a-zA-Z$._0-9]+)')  # a global's name as text spells it
# a function's definition (its header line, then its body up to the line `}`) or a global's line
_TOP = re.compile(r"^define [^\n]*|^@[^\n]*|^\}$", re.M)
_LOCAL_DEFINE = re.compile(r"define (?:internal|private) ")
_CALL_LINE = re.compile(r"^  [^\n]*\bcall\b[^\n]*\s%[-\w.$\"]+\([^\n]*", re.M)
_GLOBAL_LINKAGE = re.compile(r' = (?:(private|internal|linkonce|linkonce_odr|available_externally|extern_weak|'
                             r'external)\b)?')
_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2})")
_PLAIN = re.compile(r"[-a-zA-Z._][-a-zA-Z._0-9]*")  # (what LLVM prints unquoted: not `$`, Rust's mangling has it)


@dataclass
class Definition:
    """A function the text defines (`function`) or a global variable, alias or ifunc."""

    name: str
    function: bool
    local: bool  # internal or private: dropped where nothing names it
    kept: bool  # a global that stays where nothing names it (external linkage, llvm.used...)
    size: int  # a function's instructions (its body's indented lines)
    names: tuple[str, ...]  # the globals its body or initializer names, its own name left out
    pointer_calls: tuple[tuple, ...] = ()  # the types of its calls through pointers (`Key`s)
    type: tuple | None = None  # a function's type, as `pointer_calls` has them (not variadic ones')


Key = tuple  # a function's type: its result's type and its parameters' types, as text


def bare(reference: str) -> str:
    """`@f`, `@"f g"` -> `f`, `f g` (escapes decoded)."""
    name = reference.lstrip("@")
    if name.startswith('"'):
        return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), name[1:-1])
    return name


def spelled(name: str) -> str:
    """A bare name as IR text spells it: `@f`, or quoted where it holds other characters."""
    if _PLAIN.fullmatch(name):
        return "@" + name
    return '@"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\{ord(c):02X}" for c in name) + '"'


def definitions(text: str) -> dict[str, Definition]:
    """The module's defined functions and globals by bare name (declarations left out)."""
    out: dict[str, Definition] = {}
    start = None  # where the function being read starts
    for m in _TOP.finditer(text):
        line = m.group()
        if line == "}":
            if start is not None:
                header_end = text.index("\n", start)
                header = text[start:header_end]
                name = bare(REFERENCE.search(header, header.index("@")).group())
                body = text[header_end:m.end()]
                names = tuple(n for n in dict.fromkeys(bare(r) for r in REFERENCE.findall(text, start, m.end()))
                              if n != name)
                local = _LOCAL_DEFINE.match(header) is not None
                out[name] = Definition(name, True, local, False, body.count("\n  "), names,
                                       _pointer_calls(body) if may_call_through_pointer(body) else (),
                                       None if local else _type(header))
            start = None
        elif line.startswith("define "):
            start = m.start()
        elif start is None:  # a global's definition (`@name = ...`)
            head = REFERENCE.match(line)
            name = bare(head.group())
            rest = line[head.end():]
            linkage = _GLOBAL_LINKAGE.match(rest)
            if linkage is None or linkage.group(1) in ("external", "extern_weak"):
                continue  # a declaration
            names = tuple(n for n in dict.fromkeys(bare(r) for r in REFERENCE.findall(rest)) if n != name)
            out[name] = Definition(name, False, linkage.group(1) in ("private", "internal"), linkage.group(1) is None,
                                   0, names)
    return out


def _pointer_calls(body: str) -> tuple[Key, ...]:
    """The types of a body's calls through pointers, as ir_ad/dispatch.py tells the functions
    they may call (a call naming its function type, as of a variadic function, is not one)."""
    keys = {}
    for line in _CALL_LINE.findall(body):
        inst = parse_instruction(line)
        if inst.opcode == "call" and inst.callee.startswith("%") and "(" not in inst.type.text:
            keys[(inst.type.text, tuple(a.type.text for a, _ in inst.call_args))] = None
    return tuple(keys)


def _type(header: str) -> Key | None:
    h = parse_header(header)
    return None if h.variadic else (h.ret.text, tuple(p.type.text for p in h.params))


def reached(defs: dict[str, Definition], roots: set[str], through_pointers: dict[Key, list[str]]) -> set[str]:
    """The definitions `roots` reach by naming them, directly or not (LLVM's dead code
    elimination keeps no more); a function calling through a pointer of a type reaches the
    functions `through_pointers` gives for it besides (see batches.py)."""
    seen, work = set(), [r for r in roots if r in defs]
    seen.update(work)
    followed: set[Key] = set()
    while work:
        d = defs[work.pop()]
        names = d.names
        for key in d.pointer_calls:
            if key not in followed:
                followed.add(key)
                names = (*names, *through_pointers.get(key, ()))
        for name in names:
            if name not in seen and name in defs:
                seen.add(name)
                work.append(name)
    return seen
