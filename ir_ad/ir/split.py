"""A module's text cut into parts that clang compiles at the same time, one process each
(ir_ad/parts.py decides which function goes where): each part defines its own functions and
declares the others; small functions called directly are copied into every part, so that each
can inline them; a global variable is defined in one part and declared in the others.

What one part defines and another uses is made visible outside its object under a name of
its own (`@"f.adgen.3f9a…"`, hidden: objects joined into one see each other's, a program
linking several derivative objects does not mix them up); everything else keeps its linkage.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from adgen.ir_ad.ir.tokens import Cursor
from adgen.ir_ad.ir.types import parse_type

_REFERENCE = re.compile(r'@("[^"]*"|[-a-zA-Z$._0-9]+)(\()?')
_GLOBAL = re.compile(r'^@("[^"]*"|[-a-zA-Z$._0-9]+) = ((?:[a-z_]+(?:\([^)]*\))? )*?)(global|constant) (.*)$')
_INTERNAL = re.compile(r"^(define|declare) (internal|private) ")
_MEMORY = re.compile(r"\s+(store |%\S+ = (load|getelementptr) )")
_ATTRIBUTE_GROUP = re.compile(r"#\d+")
LINKAGES = {"private", "internal", "available_externally", "linkonce", "weak", "common", "appending", "extern_weak",
             "linkonce_odr", "weak_odr", "external"}
# what a module's text may hold that a part cannot copy or split: such a module is compiled whole
_WHOLE_ONLY = re.compile(r'^(module asm |\$[-\w.$"]+ = comdat |@[^=]+= [^"]*\b(alias|ifunc)\b|@llvm\.)', re.M)
_WHOLE_ONLY_WORDS = ("blockaddress", "dso_local_equivalent", "no_cfi")
_WHOLE_ONLY_ANYWHERE = re.compile(r'\b(blockaddress|dso_local_equivalent|no_cfi) ')


@dataclass
class Piece:
    """A top-level entity of a module's text: a function's definition (`kind` "define"), a
    global variable ("global"), or anything else, copied into every part ("other")."""

    kind: str
    name: str | None
    lines: list[str]
    references: dict[str, None] = field(default_factory=dict)  # the globals it names ("@name"), in order
    called: dict[str, int] = field(default_factory=dict)  # those of them it calls directly: how many times
    addressed: set[str] = field(default_factory=set)  # those it names other than as a call's callee
    size: int = 0  # a function's instructions
    memory: int = 0  # of which loads, stores and address arithmetic (getelementptr)

    @property
    def cost(self) -> float:
        """About what optimizing a function costs, in instructions: memory accesses and address
        arithmetic count half (on bench/programs/gpt2.c's derivative, made of loads and addresses
        in reverse sweeps, of arithmetic and run-time checks in forward sweeps, this was within
        15% of each function's time alone; the instruction count alone was 30-50% off)."""
        return self.size - self.memory / 2

    @property
    def internal(self) -> bool:
        return _INTERNAL.match(self.lines[0]) is not None if self.kind == "define" else \
            " internal " in self.lines[0] or " private " in self.lines[0]


def splittable(text: str) -> bool:
    """Whether the text holds nothing a part cannot have a copy of or a declaration for
    (module assembly, comdats, aliases, `@llvm.*` arrays such as constructors, the address of a
    block or the identity of a function in another module)."""
    if any(word in text for word in _WHOLE_ONLY_WORDS) and _WHOLE_ONLY_ANYWHERE.search(text):
        return False  # (a search for the words first: one regex over megabytes of text took 0.1 s)
    return _WHOLE_ONLY.search(text) is None


def read_pieces(text: str) -> list[Piece]:
    """The module's top-level entities, in order; each function's references read from its
    body, each global's from its initializer."""
    pieces: list[Piece] = []
    current: Piece | None = None
    for line in text.split("\n"):
        if current is not None:
            current.lines.append(line)
            if line.startswith("  ") and not line.startswith("  ;"):
                current.size += 1
                if _MEMORY.match(line):
                    current.memory += 1
            if "@" in line:
                _note_references(current, line)
            if line == "}":
                current = None
            continue
        if line.startswith("define "):
            current = Piece("define", _defined_name(line), [line])
            pieces.append(current)
            continue
        m = _GLOBAL.match(line)
        if m:
            piece = Piece("global", "@" + m.group(1), [line])
            _note_references(piece, m.group(4))
            pieces.append(piece)
            continue
        piece = Piece("other", None, [line])
        if "@" in line and line.startswith("!"):  # metadata naming functions (`!callees`): kept with them
            _note_references(piece, line)
        pieces.append(piece)
    return pieces


def _defined_name(line: str) -> str:
    return "@" + _REFERENCE.search(line[line.index("@"):]).group(1)


def _note_references(piece: Piece, line: str) -> None:
    for m in _REFERENCE.finditer(line):
        name = "@" + m.group(1)
        piece.references.setdefault(name)
        if m.group(2) and re.search(r"\b(call|invoke)\b", line[:m.start()]):
            piece.called[name] = piece.called.get(name, 0) + 1
        else:
            piece.addressed.add(name)


def live(pieces: list[Piece]) -> list[Piece]:
    """The pieces without the internal functions and globals nothing visible reaches (what
    LLVM's first global optimization would drop: no part need read them)."""
    by_name = {p.name: p for p in pieces if p.name is not None}
    reached, work = set(), [p for p in pieces if p.name is None or not p.internal]
    while work:
        for name in work.pop().references:
            if name in by_name and name not in reached:
                reached.add(name)
                work.append(by_name[name])
    return [p for p in pieces if p.name is None or not p.internal or p.name in reached]


def part_texts(pieces: list[Piece], owner: dict[str, int], copied: set[str], parts: int, tag: str) -> list[str]:
    """The text of each part: the functions `owner` gives it defined, the other functions it
    owns declared, the functions in `copied` defined in every part (internal each), each
    global variable defined in part 0 and declared in the others. A name one part defines and
    another refers to is renamed with `tag` and made hidden (see the module's docstring)."""
    by_name = {p.name: p for p in pieces if p.name is not None}
    home = {p.name: owner.get(p.name, 0) for p in pieces if p.kind == "define" and p.name not in copied}
    home |= {p.name: 0 for p in pieces if p.kind == "global"}
    crossing = set()
    for p in pieces:  # (what every part copies names its references in every part: metadata, say `!callees`)
        every = p.name is None or p.name in copied or p.kind == "global" and _copyable(p)
        where = set(range(parts)) if every else {home[p.name]}
        for name in p.references:
            if name in home and by_name[name].internal and (where - {home[name]}):
                crossing.add(name)
    crossing -= {p.name for p in pieces if p.kind == "global" and _copyable(p)}
    renamed = {name: _tagged(name, tag) for name in crossing}
    out = []
    for k in range(parts):
        lines: list[str] = []
        for p in pieces:
            if p.kind == "define" and p.name not in copied and home[p.name] != k:
                if p.name in crossing or not p.internal:  # (an internal one no other part names is left out)
                    lines.append(declaration(p.lines[0], p.name in crossing))
            elif p.kind == "define":
                lines += [_promoted(p.lines[0]) if p.name in crossing else p.lines[0], *p.lines[1:]]
            elif p.kind == "global" and not _copyable(p) and k != 0:
                lines.append(global_declaration(p))
            elif p.kind == "global" and p.name in crossing:
                lines.append(_promoted(p.lines[0]))
            else:
                lines += p.lines
        out.append(_rename("\n".join(lines), renamed))
    return out


def tag_of(text: str) -> str:
    """A short digest of the module's text (less its file name, a temporary one): the same build
    names its crossing symbols alike."""
    kept = "\n".join(line for line in text.split("\n") if not line.startswith(("; ModuleID", "source_filename")))
    return hashlib.sha1(kept.encode()).hexdigest()[:12]


def _copyable(p: Piece) -> bool:
    """A global whose copies no program can tell apart: a constant whose address is not
    significant (`unnamed_addr`, as C's string literals)."""
    head = p.lines[0].split(" = ", 1)[1]
    return " constant " in f" {head}" and "unnamed_addr" in head.split(" constant ", 1)[0] + " "


def _tagged(name: str, tag: str) -> str:
    bare = name[1:].strip('"')
    return f'@"{bare}.adgen.{tag}"'


def _rename(text: str, renamed: dict[str, str]) -> str:
    if not renamed:
        return text
    return _REFERENCE.sub(lambda m: renamed.get("@" + m.group(1), "@" + m.group(1)) + (m.group(2) or ""), text)


def _promoted(line: str) -> str:
    """A definition made visible to the other parts' objects, hidden beyond them."""
    if line.startswith("define "):
        return _INTERNAL.sub(r"\1 hidden ", line, count=1)
    return re.sub(r" = (internal|private) ", " = hidden ", line, count=1)


def declaration(define: str, crossing: bool) -> str:
    """A `declare` line for a function defined in another part: its `define` line up to its
    parameters' closing parenthesis, with its attribute groups."""
    head = define[len("define "):]
    start = head.index("@")
    start += len(_REFERENCE.match(head, start).group(0)) - 1  # at the parameters' `(`
    depth, quoted, end = 0, False, start
    for end in range(start, len(head)):
        c = head[end]
        if c == '"':
            quoted = not quoted
        elif not quoted and c == "(":
            depth += 1
        elif not quoted and c == ")":
            depth -= 1
            if depth == 0:
                break
    groups = " ".join(_ATTRIBUTE_GROUP.findall(head[end + 1:].split("{")[0]))
    words = [w for w in head[:start].split(" ") if w not in LINKAGES]
    if crossing:  # (hidden is local to the link: no preemption to state)
        words = ["hidden", *(w for w in words if w not in ("default", "protected", "dso_local", "dso_preemptable"))]
    return f"declare {' '.join(words)}{head[start:end + 1]}{' ' + groups if groups else ''}"


def global_declaration(p: Piece) -> str:
    """A global variable defined in part 0, as the other parts refer to it."""
    m = _GLOBAL.match(p.lines[0])
    words = [w for w in m.group(2).split() if w in ("thread_local", "externally_initialized") or
             w.startswith("thread_local(") or w.startswith("addrspace(")]
    kind = m.group(3)
    t = parse_type(Cursor(m.group(4))).text
    align = re.search(r", align (\d+)", p.lines[0])
    visibility = "hidden " if p.internal else ""
    return (f"@{m.group(1)} = external {visibility}{' '.join(words) + ' ' if words else ''}{kind} {t}" +
            (f", align {align.group(1)}" if align else ""))
