"""Edits of IR text that stays text: the rewrites the stages make of a module between LLVM's
passes (renaming locals for a later level, retargeting a branch, replacing calls, exporting a
function, making globals weak or external), and the few questions they ask of a text they do
not read into a `Module` (which functions it defines, whether a body mentions a name, what a
global holds). The regular expressions over IR text live here, beside the reader."""

from __future__ import annotations

import re
from typing import Callable, Iterator

from adgen.ir_ad.ir.functions import Header, defined_name, parse_header
from adgen.ir_ad.ir.instructions import strip_metadata
from adgen.ir_ad.ir.tokens import Cursor
from adgen.ir_ad.ir.types import parse_type

_NAME_CHARS = r"[-a-zA-Z$._0-9]"
_WHOLE = r"(?![-\w$.\"'])"  # after a name: it does not go on (`%a` is not in `%ab`)
_LOCAL = re.compile(r'%(?:"([^"]*)"|(' + _NAME_CHARS + r'+))|"[^"]*"')  # a local name, or a string to pass
_LABEL = re.compile(r'^(?:"([^"]*)"|(' + _NAME_CHARS + r'+)):', re.M)
_SIMPLE_NAME = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*\Z")
_GLOBAL_DEFINITION = re.compile(r'^@("[^"]+"|[-\w.$]+) = (?:(?:internal|private|dso_local|common|weak|linkonce_odr|'
                                r'weak_odr|linkonce|external) )*(?:(?:unnamed_addr|local_unnamed_addr) )?'
                                r'(global|constant) (.*)$')
_C_STRING = re.compile(r'c"((?:[^"\\]|\\[0-9A-Fa-f]{2})*)\\00"')
_INT_AS_POINTER = re.compile(r"inttoptr \(i64 (\d+) to ptr\)")
_CONSTANT_ADDRESS = re.compile(r"inttoptr \( ?i64 (\d+) to ptr ?\)")
_DECLARATION_TAIL = re.compile(r"\)( #\d+)?( !dbg ![0-9]+)?$")
_ATTRIBUTE_GROUP = re.compile(r" (#\d+)(?= |$)")  # (parameters' attributes are never groups)


# ---------------------------------------------------------------------------- names
def rename_locals(text: str, rename: Callable[[str], str | None]) -> str:
    """The text with each local name (a value's `%x`, a block's label `x:`) renamed to
    `rename(x)`, quoted where the new name needs it; a name for which it gives None stays, and
    so do strings (`c"%d"`, `@"name"`)."""

    def renamed(m: re.Match, sigil: str, end: str) -> str:
        name = m.group(1) if m.group(1) is not None else m.group(2)
        new = rename(name) if name is not None else None
        return m.group(0) if new is None else sigil + _quoted(new) + end

    text = _LOCAL.sub(lambda m: renamed(m, "%", ""), text)
    return _LABEL.sub(lambda m: renamed(m, "", ":"), text)


def retarget(terminator: str, old: str, new: str) -> str:
    """A terminator's text branching to label `new` (`%name`) where it branched to `old`."""
    return re.sub(re.escape(old) + _WHOLE, new, terminator)


def rename_incoming(phi: str, old: str, new: str) -> str:
    """A phi's text taking from block `new` (`%name`) what it took from block `old`."""
    return re.sub(r"(,\s*)" + re.escape(old) + _WHOLE + r"(\s*\])", lambda m: m.group(1) + new + m.group(2), phi)


def mentions(text: str, name: str) -> bool:
    """Whether the text names `name` (`%x`, `@f`) whole, not as the start of a longer name."""
    return name in text and re.search(re.escape(name) + _WHOLE, text) is not None


def body_mentions(definition: str, name: str) -> bool:
    """Whether a function definition's body (past its `define` line, which names every
    parameter) mentions `name`."""
    return mentions(definition.split("\n", 1)[1], name)


def _quoted(name: str) -> str:
    return name if _SIMPLE_NAME.match(name) else f'"{name}"'


# ---------------------------------------------------------------------------- functions
def defined_functions(text: str) -> set[str]:
    """The IR names of the functions the text defines."""
    return {parse_header(line).name for line in text.split("\n") if line.startswith("define ")}


def define_line(text: str, name: str) -> str | None:
    """The `define` line of function `name` in a module's text; None where the text does not
    define it."""
    m = re.search(r"^define [^\n]*" + re.escape(name) + r"\(.*$", text, re.M)
    return m.group(0) if m else None


def without_tail_calls(text: str) -> str:
    """The text with tail calls off in the functions differentiation made (their `define`
    lines end in `) {`; the sources' own carry attribute groups or debug locations): LLVM 22's
    code generation turns `ret (extractvalue (call))` into a jump to a callee that returns a
    struct too large for registers (a forward[4] derivative's five doubles, returned through
    memory), and the caller then returns whatever the register held (tests/fuzz_regressions/
    f793_dispatch_tail_call.c: a NaN tangent)."""
    return re.sub(r"^(define [^\n]*\)) \{$", r'\1 "disable-tail-calls"="true" {', text, flags=re.M)


def make_external(text: str, name: str) -> str:
    """The text with the internal function `name` made visible outside the module."""
    return re.sub(r"^define internal ([^\s(]+ " + re.escape(name) + r"\()", r"define \1", text, flags=re.M)


def lines_by_function(text: str) -> Iterator[tuple[str | None, str]]:
    """Each line of a module's text, with the IR name of the function whose definition it is
    part of (from its `define` line to its closing `}`), None for a line outside definitions."""
    inside = None
    for line in text.split("\n"):
        if line.startswith("define "):
            inside = parse_header(line).name
        yield inside, line
        if line == "}":
            inside = None


def edit_declarations(text: str, edit: Callable[[Header, str], str]) -> str:
    """The text with each `declare` line replaced by `edit(its header, the line)` (which may
    make it a definition)."""
    return "\n".join(edit(parse_header(line), line) if line.startswith("declare ") else line
                     for line in text.split("\n"))


def with_attributes(declaration: str, attributes: str) -> str:
    """A `declare` line with `attributes` after its parameters, in place of its attribute group
    (`#N`) and `!dbg`; a line with other words after its parameters stays as it is."""
    return _DECLARATION_TAIL.sub(lambda _: ") " + attributes, declaration, count=1)


def with_function_attribute(text: str, names: set[str], attribute: str) -> str:
    """The text with `attribute` among the function attributes of the definitions of `names`
    (IR names: `@f`, `@"f g"`), before their attribute group (`#N`); a definition without one
    stays as it is."""
    if not names:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("define ") and defined_name(line) in names:
            lines[i] = _ATTRIBUTE_GROUP.sub(lambda m: f" {attribute} {m.group(1)}", line, count=1)
    return "\n".join(lines)


# ---------------------------------------------------------------------------- instructions
def replace_instructions(text: str, replacements: dict[str, dict[str, str]]) -> str:
    """The text with instructions replaced, by function: `replacements[f]` maps the text of an
    instruction of function `f` (without its metadata, which stays) to the text it becomes."""
    out = []
    for fn, line in lines_by_function(text):
        given = replacements.get(fn, {}) if fn is not None else {}
        instruction = strip_metadata(line)[0].strip()
        out.append(line.replace(instruction, given[instruction], 1) if instruction in given else line)
    return "\n".join(out)


def drop_dead_loads(text: str, values: dict[str, set[str]], global_prefix: str) -> str:
    """The text without the loads, of globals whose names start with `global_prefix`, that
    define values nothing uses: `values[f]` names the candidates of function `f` (`%x`; others
    are not loads)."""
    out: list[str] = []
    start = 0
    for fn, line in lines_by_function(text):
        if line.startswith("define "):
            start = len(out)
        out.append(line)
        if fn is not None and line == "}" and fn in values:
            out[start:] = _without_dead_loads(out[start:], values[fn], global_prefix)
    return "\n".join(out)


def _without_dead_loads(lines: list[str], candidates: set[str], global_prefix: str) -> list[str]:
    for value in candidates:
        if not value.startswith("%"):
            continue
        uses = [i for i, line in enumerate(lines) if mentions(line, value)]
        if len(uses) == 1 and re.match(r"\s*" + re.escape(value) + r" = load \S+, ptr " + re.escape(global_prefix),
                                       lines[uses[0]]):
            del lines[uses[0]]
    return lines


# ---------------------------------------------------------------------------- globals and attributes
def define_weak_globals(text: str, prefix: str) -> str:
    """The text with the integer globals it declares external (`@x = external global i32`),
    of names starting with `prefix` (`@enzyme_`), defined weak and 0: the program's own
    definition, where it has one, is the one that links."""
    return re.sub(r"^(" + re.escape(prefix) + r"\w+) = external global ([^,\s]+)", r"\1 = weak global \2 0", text,
                  flags=re.M)


def declare_globals(text: str, names: set[str]) -> str:
    """The text with its definitions of the global variables `names` (bare names; constants
    stay) made external declarations of the same type and alignment, so that the code binds
    to another module's definitions of them."""
    out = []
    for line in text.split("\n"):
        m = _GLOBAL_DEFINITION.match(line)
        if m and m.group(1).strip('"') in names and m.group(2) == "global":
            t = parse_type(Cursor(m.group(3))).text
            align = re.search(r", align (\d+)", line)
            line = f"@{m.group(1)} = external global {t}" + (f", align {align.group(1)}" if align else "")
        out.append(line)
    return "\n".join(out)


def c_string(global_line: str) -> str | None:
    """The C string a global holds (`c"log1p\\00"` -> "log1p", escapes as IR writes them)."""
    m = _C_STRING.search(global_line)
    return m.group(1) if m else None


def int_as_pointer(global_line: str) -> int | None:
    """The first integer a global's initializer holds as a pointer (`inttoptr (i64 1 to ptr)`)."""
    m = _INT_AS_POINTER.search(global_line)
    return int(m.group(1)) if m else None


def constant_address(operand: str) -> int | None:
    """The address a pointer constant is made of (`inttoptr (i64 8 to ptr)`, as the reader
    spells an operand: `inttoptr ( i64 8 to ptr )`), or None."""
    m = _CONSTANT_ADDRESS.fullmatch(operand)
    return int(m.group(1)) if m else None


def string_attribute(text: str, key: str) -> str | None:
    """The value of a string attribute (`"target-cpu"="x86-64"`) where the text first gives it."""
    m = re.search('"' + re.escape(key) + '"="([^"]*)"', text)
    return m.group(1) if m else None


_POISON_BASE = re.compile(r"insertelement (<\d+ x [^>]+>) (?:poison|undef),")
_SHUFFLE = re.compile(r"shufflevector (<(\d+) x [^>]+>) ([^,]+), (<\d+ x [^>]+>) (poison|undef), "
                      r"(<\d+ x i32>) (<[^>]*>|poison|undef)")


def without_poison_lanes(text: str) -> str:
    """The text with the lanes a vector operation leaves undefined made zeros: a vector built
    from `poison` (`insertelement <2 x double> poison, ...`) and a shuffle's `poison` lanes
    (`<i32 1, i32 poison>`, of a second operand that is poison) start from zeros, which any value
    refines. Reverse mode multiplies the adjoints of lanes nothing reads, zeros, by such lanes'
    values: by poison, that made the whole adjoint poison (a wrong gradient)."""
    text = _POISON_BASE.sub(r"insertelement \1 zeroinitializer,", text)

    def shuffle(m: re.Match) -> str:
        n, mask = int(m.group(2)), m.group(7)
        if mask in ("poison", "undef"):
            count = int(m.group(6)[1:].split(" x ")[0])
            lanes = ", ".join([f"i32 {n}"] * count)
        else:
            lanes = re.sub(r"i32 (?:poison|undef)", f"i32 {n}", mask[1:-1])
        return f"shufflevector {m.group(1)} {m.group(3)}, {m.group(4)} zeroinitializer, {m.group(6)} <{lanes}>"

    return _SHUFFLE.sub(shuffle, text)


# ---------------------------------------------------------------------------- addresses as integers
_INTTOPTR = re.compile(r"^(\s*)(%[-\w$.]+|%\"[^\"]*\") = inttoptr i64 (%[-\w$.]+|%\"[^\"]*\") to ptr")
_INT_DEF = re.compile(r"^\s*(%[-\w$.]+|%\"[^\"]*\") = (phi i64 (.*)|select i1 ([^,]+), i64 ([^,]+), i64 ([^,!]+)"
                      r"|ptrtoint ptr ([^ ]+) to i64)(?:,|$| !)")
_INCOMING = re.compile(r"\[ ([^,]+), ([^\]]+) \]")


def pointers_through_integers(text: str) -> str:
    """The text with each `inttoptr` of an integer that is, through phis and selects only, the
    `ptrtoint` of pointers or a constant, made a pointer phi or select of those pointers (the
    constants `inttoptr (i64 C to ptr)`): rustc's vectors make their buffer so, a fresh
    allocation's address or `NonNull::dangling`'s 8 merged as integers, and a pointer moved as
    an integer is one adgen cannot give a shadow. The integers stay, for their other uses."""
    out: list[str] = []
    body: list[str] = []
    for fn, line in lines_by_function(text):
        if fn is None:
            out += _pointer_phis(body) + [line] if body else [line]
            body = []
        else:
            body.append(line)
    return "\n".join(out + _pointer_phis(body))


def _pointer_phis(lines: list[str]) -> list[str]:
    if not any(" = inttoptr i64 %" in line for line in lines):
        return lines
    defs: dict[str, tuple[int, re.Match]] = {}
    for k, line in enumerate(lines):
        m = _INT_DEF.match(line)
        if m:
            defs[m.group(1)] = (k, m)

    def leaves_ok(name: str, seen: set[str]) -> bool:
        if not name.startswith("%"):
            return re.fullmatch(r"-?\d+", name) is not None
        if name in seen:
            return True
        seen.add(name)
        if name not in defs:
            return False
        m = defs[name][1]
        if m.group(7):
            return True
        if m.group(3) is not None:
            return all(leaves_ok(v.strip(), seen) for v, _ in _INCOMING.findall(m.group(3)))
        return leaves_ok(m.group(5).strip(), seen) and leaves_ok(m.group(6).strip(), seen)

    made: dict[str, str] = {}  # integer -> its pointer
    added: dict[int, list[str]] = {}

    def pointer(value: str) -> str:
        if not value.startswith("%"):
            return "null" if int(value) == 0 else f"inttoptr (i64 {value} to ptr)"
        if value in made:
            return made[value]
        k, m = defs[value]
        if m.group(7):
            made[value] = m.group(7)
            return made[value]
        name = value[:-1] + '.ptr"' if value.endswith('"') else value + ".ptr"
        made[value] = name
        if m.group(3) is not None:
            incoming = ", ".join(f"[ {pointer(v.strip())}, {b.strip()} ]" for v, b in _INCOMING.findall(m.group(3)))
            added.setdefault(k, []).append(f"  {name} = phi ptr {incoming}")
        else:
            added.setdefault(k, []).append(f"  {name} = select i1 {m.group(4)}, ptr {pointer(m.group(5).strip())}, "
                                           f"ptr {pointer(m.group(6).strip())}")
        return name

    replaced: dict[int, str] = {}
    for k, line in enumerate(lines):
        m = _INTTOPTR.match(line)
        if m and leaves_ok(m.group(3), set()) and m.group(3) in defs and not defs[m.group(3)][1].group(7):
            replaced[k] = f"{m.group(1)}{m.group(2)} = bitcast ptr {pointer(m.group(3))} to ptr" + \
                line[m.end():]
    if not replaced:
        return lines
    out = []
    for k, line in enumerate(lines):
        out.append(replaced.get(k, line))
        out += added.get(k, [])
    return out
