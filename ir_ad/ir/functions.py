"""Reading a function's text: its header (`define`/`declare` line) and its body's blocks."""

from __future__ import annotations

import re
from typing import Callable, NamedTuple

from adgen.ir_ad.ir.instructions import parse_instruction
from adgen.ir_ad.ir.model import Argument, Block, Function
from adgen.ir_ad.ir.tokens import Cursor, IRError
from adgen.ir_ad.ir.types import VOID, Type, parse_type

_DEFINE = re.compile(r"^(define|declare)\b(.*?)(@(?:\"[^\"]*\"|[-a-zA-Z$._0-9]+))\((.*)$")


def defined_name(line: str) -> str:
    """The IR name of the function a `define` or `declare` line names, without reading the rest."""
    m = _DEFINE.match(line)
    if not m:
        raise IRError(f"cannot read function header {line[:80]!r}")
    return m.group(3)


class Header(NamedTuple):
    """What a `define` or `declare` line says of its function."""

    name: str  # "@f"
    ret: Type
    params: list[Argument]
    variadic: bool
    dbg: str | None  # "!N", its DISubprogram
    linkage: str  # the words before the return type ("internal", "dso_local"...)


def parse_header(line: str) -> Header:
    m = _DEFINE.match(line)
    if not m:
        raise IRError(f"cannot read function header {line[:80]!r}")
    _, before, name, rest = m.groups()
    ret, linkage = _return_type(Cursor(before).tokens)
    c = Cursor("(" + rest)
    c.expect("(")
    params, variadic = [], False
    while c.peek() != ")":
        if c.peek() == "...":
            c.next()
            variadic = True
            continue
        t = parse_type(c)
        attrs = c.skip_attributes()
        pname = c.next() if c.peek().startswith("%") else f"%{len(params)}"
        params.append(Argument(t, pname, attrs))
        c.accept(",")
    c.expect(")")
    dbg = re.search(r"!dbg (![0-9]+)", c.rest())
    return Header(name, ret, params, variadic, dbg.group(1) if dbg else None, linkage)


def _return_type(tokens: list[str]) -> tuple[Type, str]:
    """The return type, the last type among the header's words before the name (read from
    each position in turn), and the words before it."""
    for start in range(len(tokens)):
        try:
            sub = Cursor(" ".join(tokens[start:]))
            sub.skip_attributes()
            t = parse_type(sub)
            sub.skip_attributes()
            if sub.done():
                return t, " ".join(tokens[:start])
        except (IRError, ValueError, IndexError):
            continue
    return VOID, ""


def parse_function(lines: list[str], member_type: Callable[[Type, list[int]], Type]) -> Function:
    """A definition, from its `define` line to its closing `}`. `member_type`: the module's
    types of aggregate members (an extractvalue's result type)."""
    header = parse_header(lines[0])
    blocks: list[Block] = []
    current: Block | None = None
    pending = ""
    for raw in lines[1:-1]:
        if not raw.strip() or raw.lstrip().startswith(("#dbg_", ";")):
            continue
        if not raw.startswith(" ") and raw.rstrip().split(";")[0].rstrip().endswith(":"):
            current = Block("%" + raw.split(":", 1)[0].strip(), [])
            blocks.append(current)
            continue
        if current is None:  # an entry block without a label
            current = Block(f"%{len(header.params)}", [])
            blocks.append(current)
        pending = (pending + " " + raw.strip()) if pending else raw.strip()
        if pending.startswith("switch ") and pending.count("[") != pending.count("]") or \
                pending.startswith("switch ") and "[" not in pending:
            continue  # a switch spans lines until its case list closes
        inst = parse_instruction(pending)
        if inst.opcode == "extractvalue":
            inst.type = member_type(inst.operands[0].type, inst.indices)
        current.instructions.append(inst)
        pending = ""
    return Function(header.name, header.ret, header.params, blocks, False, header.dbg, "\n".join(lines),
                    header.variadic, header.linkage)


def declaration(line: str) -> Function:
    """A function declared, from its `declare` line."""
    h = parse_header(line)
    return Function(h.name, h.ret, h.params, [], True, h.dbg, line, h.variadic, h.linkage)
