"""An in-memory model of the LLVM IR that clang emits for numeric C, read from llvmlite's
textual module: types, functions, blocks and instructions with parsed operands, and the
debug locations that let errors name a C `file:line`.

Only what the AD core reads is parsed; every instruction keeps its text, so the primal
computation is copied into derivative functions verbatim."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>c?"[^"]*")
  | (?P<local>%(?:"[^"]*"|[-a-zA-Z$._0-9]+))
  | (?P<global>@(?:"[^"]*"|[-a-zA-Z$._0-9]+))
  | (?P<meta>!(?:"[^"]*"|[-a-zA-Z$._0-9]+)|!)
  | (?P<attr>\#[0-9]+)
  | (?P<num>-?(?:0x[KLMHR]?[0-9A-Fa-f]+|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?))
  | (?P<word>[A-Za-z_][A-Za-z_0-9.]*)
  | (?P<dots>\.\.\.)
  | (?P<punct>[(){}\[\]<>,=*:])
""", re.X)

FLOAT_BITS = {"half": 16, "bfloat": 16, "float": 32, "double": 64, "x86_fp80": 80, "fp128": 128}
CONSTANT_WORDS = {"true", "false", "null", "none", "undef", "poison", "zeroinitializer"}
CONSTANT_EXPRS = {"getelementptr", "bitcast", "ptrtoint", "inttoptr", "addrspacecast", "trunc", "zext", "sext",
                  "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp", "add", "sub", "mul", "shl", "xor",
                  "blockaddress", "dso_local_equivalent", "no_cfi", "splat", "ptrauth"}
# Parameter and return attributes that may stand between a type and its value.
_ATTRS = {"noundef", "nonnull", "noalias", "nocapture", "readonly", "writeonly", "readnone", "signext", "zeroext",
          "inreg", "returned", "nofree", "immarg", "nest", "allocalign", "allocptr", "swiftself", "swifterror",
          "swiftasync", "noundef", "dead_on_unwind", "dead_on_return", "writable", "noext", "inalloca"}
_ATTRS_WITH_ARGS = {"align", "dereferenceable", "dereferenceable_or_null", "byval", "sret", "byref",
                    "preallocated", "elementtype", "range", "captures", "initializes", "nofpclass", "alignstack",
                    "memory"}


class IRError(Exception):
    pass


# ----------------------------------------------------------------------------------------------- types

@dataclass(frozen=True)
class Type:
    text: str
    kind: str  # void float int ptr vector array struct named label metadata token other
    bits: int = 0
    elems: tuple["Type", ...] = ()
    count: int = 0

    def __str__(self) -> str:
        return self.text


VOID = Type("void", "void")
PTR = Type("ptr", "ptr")
I1, I8, I32, I64 = Type("i1", "int", 1), Type("i8", "int", 8), Type("i32", "int", 32), Type("i64", "int", 64)


def int_type(bits: int) -> Type:
    return Type(f"i{bits}", "int", bits)


def float_type(name: str) -> Type:
    return Type(name, "float", FLOAT_BITS[name])


def vector(elem: Type, n: int) -> Type:
    return Type(f"<{n} x {elem.text}>", "vector", elem.bits, (elem,), n)


def array(elem: Type, n: int) -> Type:
    return Type(f"[{n} x {elem.text}]", "array", 0, (elem,), n)


def struct(*elems: Type) -> Type:
    return Type("{ " + ", ".join(e.text for e in elems) + " }", "struct", 0, tuple(elems), len(elems))


def element_align(t: Type) -> int:
    """The most alignment derivative code assumes of memory holding a `t`: that of its scalars (a
    vector's or array's elements, a struct's widest field), at most 8, and 1 for a type it cannot
    see into. A caller's pointer promises no more (a `const double *` is 8-byte aligned, whatever
    LLVM's own alignment of `<4 x double>`, 32; specs/abi.md), nor do a cache record's slots."""
    if t.kind in ("vector", "array", "struct"):
        return max((element_align(e) for e in t.elems), default=1)
    if t.kind == "ptr":
        return 8
    if t.kind in ("int", "float"):
        return min(8, 1 << (max(1, (t.bits + 7) // 8) - 1).bit_length())
    return 1


# ----------------------------------------------------------------------------------------------- tokens


class Cursor:
    """Walks the tokens of one line of IR."""

    def __init__(self, text: str):
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                raise IRError(f"cannot read IR at {text[pos:pos + 40]!r}")
            if m.lastgroup != "ws":
                self.tokens.append(m.group())
            pos = m.end()
        self.i = 0

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else ""

    def next(self) -> str:
        tok = self.peek()
        self.i += 1
        return tok

    def accept(self, *words: str) -> str | None:
        if self.peek() in words:
            return self.next()
        return None

    def expect(self, tok: str) -> None:
        got = self.next()
        if got != tok:
            raise IRError(f"expected {tok!r}, found {got!r} in {' '.join(self.tokens)}")

    def done(self) -> bool:
        return self.i >= len(self.tokens)

    def balanced(self) -> str:
        """The tokens of a bracketed group starting here, as text."""
        opening = self.next()
        closing = {"(": ")", "[": "]", "{": "}", "<": ">"}[opening]
        depth, out = 1, [opening]
        while depth:
            tok = self.next()
            if tok == "":
                raise IRError("unbalanced brackets")
            if tok == opening:
                depth += 1
            elif tok == closing:
                depth -= 1
            out.append(tok)
        return " ".join(out)

    def skip_attributes(self) -> dict[str, str]:
        found = {}
        while True:
            tok = self.peek()
            if tok in _ATTRS:
                found[self.next()] = ""
            elif tok in _ATTRS_WITH_ARGS:
                self.next()
                if tok == "align" and self.peek() != "(":
                    found[tok] = self.next()
                elif self.peek() == "(":
                    found[tok] = self.balanced()[1:-1].strip()
                else:
                    found[tok] = ""
            else:
                return found


def parse_type(c: Cursor, named: dict[str, "Type"] | None = None) -> Type:
    tok = c.next()
    if tok in FLOAT_BITS:
        t = float_type(tok)
    elif re.fullmatch(r"i\d+", tok):
        t = int_type(int(tok[1:]))
    elif tok == "ptr":
        t = PTR
        if c.peek() == "addrspace":
            c.next()
            space = c.balanced()
            t = Type(f"ptr addrspace{space.replace(' ', '')}", "ptr")
    elif tok in ("void", "label", "metadata", "token"):
        t = Type(tok, tok if tok != "token" else "other")
    elif tok == "<":
        if c.peek() == "{":
            inner = _struct_body(c, named)
            c.expect(">")
            t = Type("<" + inner.text + ">", "struct", 0, inner.elems, inner.count)
        else:
            n = int(c.next())
            c.expect("x")
            e = parse_type(c, named)
            c.expect(">")
            t = vector(e, n)
    elif tok == "[":
        n = int(c.next())
        c.expect("x")
        e = parse_type(c, named)
        c.expect("]")
        t = array(e, n)
    elif tok == "{":
        c.i -= 1
        t = _struct_body(c, named)
    elif tok.startswith("%"):
        t = Type(tok, "named")
    else:
        raise IRError(f"unknown type {tok!r}")
    if c.peek() == "(":  # a function type, as in `call i32 (ptr, ...) @printf(...)`
        t = Type(f"{t.text} {c.balanced()}", "func", 0, (t,))
    return t


def _struct_body(c: Cursor, named) -> Type:
    c.expect("{")
    elems = []
    while c.peek() != "}":
        elems.append(parse_type(c, named))
        c.accept(",")
    c.expect("}")
    return struct(*elems)


def parse_value(c: Cursor) -> str:
    tok = c.peek()
    if tok in ("<", "[", "{"):
        return c.balanced()
    if tok in CONSTANT_EXPRS or tok == "c":
        c.next()
        rest = []
        while c.peek() in ("inbounds", "nuw", "nusw", "inrange", "nneg", "nsw", "exact"):
            rest.append(c.next())
            if c.peek() == "(" and rest[-1] == "inrange":
                rest.append(c.balanced())
        return " ".join([tok, *rest, c.balanced()])
    return c.next()


@dataclass(frozen=True)
class Operand:
    type: Type
    value: str  # "%x", "@g", or a constant's text

    @property
    def is_local(self) -> bool:
        return self.value.startswith("%")

    @property
    def is_constant(self) -> bool:
        return not self.value.startswith(("%", "@"))

    def __str__(self) -> str:
        return f"{self.type.text} {self.value}"


def parse_operand(c: Cursor, named=None) -> Operand:
    t = parse_type(c, named)
    c.skip_attributes()
    return Operand(t, parse_value(c))


# ----------------------------------------------------------------------------------------------- instructions

BINARY = {"fadd", "fsub", "fmul", "fdiv", "frem", "add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl",
          "lshr", "ashr", "and", "or", "xor"}
CASTS = {"trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp", "ptrtoint",
         "inttoptr", "bitcast", "addrspacecast"}
_FLAGS = {"nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc", "fast", "nuw", "nsw", "exact", "disjoint",
          "nneg", "samesign", "inbounds", "nusw", "volatile", "tail", "musttail", "notail", "atomic"}


@dataclass(eq=False)  # one instruction is not another with the same text (peeled loops copy code)
class Instruction:
    text: str  # the line as printed, metadata attachments removed
    result: str | None  # "%x" or None
    opcode: str
    type: Type  # the result type (void when none)
    operands: list[Operand] = field(default_factory=list)
    predicate: str = ""  # fcmp/icmp
    source_type: Type | None = None  # gep source element type, alloca/load type
    indices: list[int] = field(default_factory=list)  # extractvalue/insertvalue
    incoming: list[tuple[Operand, str]] = field(default_factory=list)  # phi: (value, block)
    targets: list[str] = field(default_factory=list)  # br/switch labels
    cases: list[tuple[Operand, str]] = field(default_factory=list)  # switch
    callee: str = ""  # "@name" for direct calls
    call_args: list[tuple[Operand, dict]] = field(default_factory=list)
    dbg: str | None = None  # "!N"
    count: Operand | None = None  # alloca count
    tbaa: str | None = None  # "!N", the access tag of a load or store

    def mentions(self) -> set[str]:
        """The local values its text names: all there is to go on for an opcode not parsed."""
        return set(re.findall(r"%[-\w.$]+", self.text))

    @property
    def name(self) -> str | None:
        return self.result

    @property
    def align(self) -> int | None:
        """The `align N` of a load or store, kept when adgen writes its shadow twin."""
        m = re.search(r"align (\d+)", self.text)
        return int(m.group(1)) if m else None


def parse_instruction(line: str) -> Instruction:
    text, dbg = _strip_metadata(line)
    tbaa = re.search(r",\s*!tbaa\s+(![0-9]+)", line)
    c = Cursor(text)
    result = None
    if c.peek().startswith("%") and c.peek(1) == "=":
        result = c.next()
        c.next()
    while c.peek() in ("tail", "musttail", "notail"):
        c.next()
    op = c.next()
    inst = Instruction(text.strip(), result, op, VOID, dbg=dbg, tbaa=tbaa.group(1) if tbaa else None)
    flags = lambda: [c.next() for _ in iter(lambda: c.peek() in _FLAGS, False)]
    if op in BINARY:
        flags()
        a = parse_operand(c)
        c.expect(",")
        b = Operand(a.type, parse_value(c))
        inst.type, inst.operands = a.type, [a, b]
    elif op == "fneg" or op == "freeze":
        flags()
        a = parse_operand(c)
        inst.type, inst.operands = a.type, [a]
    elif op in ("fcmp", "icmp"):
        flags()
        inst.predicate = c.next()
        a = parse_operand(c)
        c.expect(",")
        b = Operand(a.type, parse_value(c))
        inst.operands = [a, b]
        inst.type = I1 if a.type.kind != "vector" else vector(I1, a.type.count)
    elif op in CASTS:
        flags()
        a = parse_operand(c)
        c.expect("to")
        inst.type, inst.operands = parse_type(c), [a]
    elif op == "select":
        flags()
        cond = parse_operand(c)
        c.expect(",")
        a = parse_operand(c)
        c.expect(",")
        b = parse_operand(c)
        inst.type, inst.operands = a.type, [cond, a, b]
    elif op == "phi":
        flags()
        t = parse_type(c)
        inst.type = t
        while c.peek() == "[":
            c.next()
            v = Operand(t, parse_value(c))
            c.expect(",")
            block = c.next()
            c.expect("]")
            inst.incoming.append((v, block))
            c.accept(",")
    elif op == "load":
        flags()
        t = parse_type(c)
        c.expect(",")
        p = parse_operand(c)
        inst.type, inst.source_type, inst.operands = t, t, [p]
    elif op == "store":
        flags()
        v = parse_operand(c)
        c.expect(",")
        p = parse_operand(c)
        inst.operands = [v, p]
    elif op == "getelementptr":
        flags()
        inst.source_type = parse_type(c)
        while c.accept(","):
            if c.peek() == "inrange":
                c.next()
                c.balanced()
            inst.operands.append(parse_operand(c))
        base = inst.operands[0]
        inst.type = base.type if base.type.kind == "vector" else PTR
    elif op == "alloca":
        flags()
        inst.source_type, inst.type = parse_type(c), PTR
        while c.accept(","):
            if c.peek() == "align":
                c.next()
                c.next()
            elif c.peek() == "addrspace":
                c.next()
                c.balanced()
            else:
                inst.count = parse_operand(c)
    elif op == "call":
        flags()
        while c.peek() in ("fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc", "cc", "ccc",
                           "fastcc", "coldcc") or c.peek().startswith("cc"):
            c.next()
        c.skip_attributes()
        ret = parse_type(c)
        inst.type = ret.elems[0] if ret.kind == "func" else ret
        inst.callee = c.next()
        c.expect("(")
        while c.peek() != ")":
            t = parse_type(c)
            attrs = c.skip_attributes()
            inst.call_args.append((Operand(t, parse_value(c)), attrs))
            c.accept(",")
        inst.operands = [a for a, _ in inst.call_args]
    elif op == "ret":
        if c.peek() != "void":
            inst.operands = [parse_operand(c)]
    elif op == "br":
        if c.peek() == "label":
            c.next()
            inst.targets = [c.next()]
        else:
            cond = parse_operand(c)
            c.expect(",")
            c.expect("label")
            t1 = c.next()
            c.expect(",")
            c.expect("label")
            inst.operands, inst.targets = [cond], [t1, c.next()]
    elif op == "switch":
        cond = parse_operand(c)
        c.expect(",")
        c.expect("label")
        inst.operands, inst.targets = [cond], [c.next()]
        c.expect("[")
        while c.peek() != "]":
            v = parse_operand(c)
            c.expect(",")
            c.expect("label")
            label = c.next()
            inst.cases.append((v, label))
            inst.targets.append(label)
        c.expect("]")
    elif op in ("extractvalue", "insertvalue"):
        agg = parse_operand(c)
        inst.operands = [agg]
        c.expect(",")
        if op == "insertvalue":
            inst.operands.append(parse_operand(c))
            c.expect(",")
        inst.indices.append(int(c.next()))
        while c.accept(","):
            inst.indices.append(int(c.next()))
        inst.type = agg.type if op == "insertvalue" else None
    elif op in ("extractelement", "insertelement", "shufflevector"):
        inst.operands = [parse_operand(c)]
        while c.accept(","):
            inst.operands.append(parse_operand(c))
        vec = inst.operands[0].type
        if op == "extractelement":
            inst.type = vec.elems[0] if vec.elems else Type("?", "other")
        elif op == "insertelement":
            inst.type = vec
        else:
            inst.type = vector(vec.elems[0], inst.operands[2].type.count) if vec.elems else Type("?", "other")
    elif op == "unreachable":
        pass
    else:  # unsupported opcodes: activity analysis refuses them where derivatives reach them
        inst.type = Type("?", "other")
    return inst


def _strip_metadata(line: str) -> tuple[str, str | None]:
    """The instruction without its `, !kind !N` attachments (and comments), and its !dbg."""
    dbg = None
    m = re.search(r",\s*!dbg\s+(![0-9]+)", line)
    if m:
        dbg = m.group(1)
    cut = re.search(r",\s*![A-Za-z_.][-A-Za-z_.0-9]*\s+!", line)
    if cut:
        line = line[: cut.start()]
    return line.rstrip(), dbg


# ----------------------------------------------------------------------------------------------- functions

@dataclass
class Block:
    label: str  # "%bb" as referenced
    instructions: list[Instruction]


@dataclass
class Param:
    type: Type
    name: str  # "%arg"
    attrs: dict[str, str]


@dataclass
class Function:
    name: str  # "@f"
    ret: Type
    params: list[Param]
    blocks: list[Block]
    declaration: bool
    dbg: str | None
    text: str  # the definition or declaration, as printed
    variadic: bool = False
    linkage: str = ""

    def instructions(self):
        for b in self.blocks:
            yield from b.instructions


_DEFINE = re.compile(r"^(define|declare)\b(.*?)(@(?:\"[^\"]*\"|[-a-zA-Z$._0-9]+))\((.*)$")


def _header(line: str, named) -> tuple[str, Type, list[Param], bool, str | None, str]:
    m = _DEFINE.match(line)
    if not m:
        raise IRError(f"cannot read function header {line[:80]!r}")
    kind, before, name, rest = m.groups()
    pre = Cursor(before)
    linkage = ""
    toks = pre.tokens
    # the return type is the last type in `before`; find it by parsing from each position
    ret = VOID
    for start in range(len(toks)):
        try:
            sub = Cursor(" ".join(toks[start:]))
            sub.skip_attributes()
            t = parse_type(sub, named)
            sub.skip_attributes()
            if sub.done():
                ret = t
                linkage = " ".join(toks[:start])
                break
        except (IRError, ValueError, IndexError):
            continue
    c = Cursor("(" + rest)
    c.expect("(")
    params, variadic = [], False
    k = 0
    while c.peek() != ")":
        if c.peek() == "...":
            c.next()
            variadic = True
            continue
        t = parse_type(c, named)
        attrs = c.skip_attributes()
        pname = c.next() if c.peek().startswith("%") else f"%{k}"
        params.append(Param(t, pname, attrs))
        k += 1
        c.accept(",")
    c.expect(")")
    dbg = None
    tail = " ".join(c.tokens[c.i:])
    m2 = re.search(r"!dbg (![0-9]+)", tail)
    if m2:
        dbg = m2.group(1)
    return name, ret, params, variadic, dbg, linkage


@dataclass
class Location:
    file: str
    line: int
    column: int


class Module:
    """The functions, named types, globals and debug locations of a module's text."""

    def __init__(self, text: str):
        self.inactive: set[str] = set()  # functions marked @inactive, by IR name (set by the build)
        self.custom: dict = {}  # functions with derivatives written by hand in Enzyme's conventions (custom.py)
        self.allocators: dict[str, int] = {}  # functions allocating like malloc -> their size parameter's index
        self.text = text
        self.functions: dict[str, Function] = {}
        self.named_types: dict[str, str] = {}
        self.globals: dict[str, str] = {}
        self.metadata: dict[str, str] = {}
        self.attributes: dict[str, str] = {}
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
                name, ret, params, variadic, dbg, linkage = _header(line, None)
                self.functions[name] = Function(name, ret, params, [], True, dbg, line, variadic, linkage)
            elif line.startswith("define"):
                j = i
                while lines[j].rstrip() != "}":
                    j += 1
                self.functions.update({f.name: f for f in [self._function(lines[i:j + 1])]})
                i = j
            i += 1

    def _function(self, lines: list[str]) -> Function:
        name, ret, params, variadic, dbg, linkage = _header(lines[0], None)
        blocks: list[Block] = []
        current: Block | None = None
        pending = ""
        for raw in lines[1:-1]:
            if not raw.strip() or raw.lstrip().startswith(("#dbg_", ";")):
                continue
            if not raw.startswith(" ") and raw.rstrip().split(";")[0].rstrip().endswith(":"):
                label = raw.split(":", 1)[0].strip()
                current = Block("%" + label, [])
                blocks.append(current)
                continue
            if current is None:  # an entry block without a label
                current = Block(f"%{len(params)}", [])
                blocks.append(current)
            pending = (pending + " " + raw.strip()) if pending else raw.strip()
            if pending.startswith("switch ") and pending.count("[") != pending.count("]") or \
                    pending.startswith("switch ") and "[" not in pending:
                continue  # a switch spans lines until its case list closes
            inst = parse_instruction(pending)
            if inst.opcode == "extractvalue":
                inst.type = self.member_type(inst.operands[0].type, inst.indices)
            current.instructions.append(inst)
            pending = ""
        return Function(name, ret, params, blocks, False, dbg, "\n".join(lines), variadic, linkage)

    def struct_type(self, t: Type) -> Type:
        """A named struct's body, parsed."""
        if t.kind != "named":
            return t
        body = self.named_types.get(t.text, "")
        if body.strip() == "opaque" or not body:
            return Type(t.text, "other")
        return parse_type(Cursor(body))

    def instruction_count(self) -> int:
        return sum(len(b.instructions) for f in self.functions.values() for b in f.blocks)

    def member_type(self, t: Type, indices: list[int]) -> Type:
        for i in indices:
            t = self.struct_type(t)
            t = t.elems[0] if t.kind in ("array", "vector") else t.elems[i]
        return t

    def tbaa_types(self, tag: str | None) -> tuple[str, ...]:
        """The scalar type an access tag names and the types above it, nearest first
        ("double", "omnipotent char", ...); empty when unknown."""
        node = self.metadata.get(tag or "", "")
        refs = re.findall(r"![0-9]+", node)
        if len(refs) < 2:
            return ()
        chain, at = [], refs[1]  # the access type
        for _ in range(16):
            m = re.match(r'!\{!"([^"]*)"(?:, (![0-9]+))?', self.metadata.get(at, ""))
            if not m:
                break
            chain.append(m.group(1))
            if not m.group(2):
                break
            at = m.group(2)
        return tuple(chain)

    def noreturn(self, callee: str) -> bool:
        """Whether a function never returns (a panic, abort, exit), by its attributes."""
        fn = self.functions.get(callee)
        if fn is None:
            return False
        header = fn.text.split("{", 1)[0] if not fn.declaration else fn.text
        if re.search(r"\)[^(]*\bnoreturn\b", header):
            return True
        return any("noreturn" in self.attributes.get(group, "").split() for group in re.findall(r"#(\d+)", header))

    def tbaa_scalars(self, tag: str | None) -> list[str] | None:
        """The scalar types of the struct an access tag's struct path starts at, its nested
        structs flattened ("int", "p1 float", "double"...); None for a scalar access tag or
        one adgen cannot read. An array member is listed as its element type."""
        node = self.metadata.get(tag or "", "")
        refs = re.findall(r"![0-9]+", node)
        if len(refs) < 2 or refs[0] == refs[1]:
            return None
        return self._tbaa_members(refs[0], 0)

    def _tbaa_members(self, node: str, depth: int) -> list[str] | None:
        m = re.match(r'!\{!"([^"]*)"(.*)\}$', self.metadata.get(node, ""))
        if m is None or depth > 16:
            return None
        members = re.findall(r"(![0-9]+), i64 [0-9]+", m.group(2))
        if len(members) <= 1 and re.fullmatch(r", ![0-9]+(, i64 0)?", m.group(2)):
            return [m.group(1)]  # a scalar type node: name, parent, offset
        out: list[str] = []
        for member in members:
            inner = self._tbaa_members(member, depth + 1)
            if inner is None:
                return None
            out += inner
        return out

    def location(self, dbg: str | None) -> Location | None:
        """The C file, line and column of a !DILocation."""
        if not dbg or dbg not in self.metadata:
            return None
        loc = self.metadata[dbg]
        line = re.search(r"line: (\d+)", loc)
        col = re.search(r"column: (\d+)", loc)
        scope = re.search(r"scope: (![0-9]+)", loc)
        file = self._file_of(scope.group(1)) if scope else None
        if not line or not file:
            return None
        return Location(file, int(line.group(1)), int(col.group(1)) if col else 1)

    def _file_of(self, node: str, depth: int = 0) -> str | None:
        text = self.metadata.get(node, "")
        if text.startswith("!DIFile"):
            name = re.search(r'filename: "([^"]*)"', text)
            directory = re.search(r'directory: "([^"]*)"', text)
            if not name:
                return None
            fname = name.group(1)
            if directory and not fname.startswith("/"):
                fname = directory.group(1).rstrip("/") + "/" + fname
            return fname
        m = re.search(r"file: (![0-9]+)", text)
        if m and depth < 20:
            return self._file_of(m.group(1), depth + 1)
        m = re.search(r"scope: (![0-9]+)", text)
        if m and depth < 20:
            return self._file_of(m.group(1), depth + 1)
        return None
