"""Reading one instruction line into an `Instruction`: its result, opcode, operands and types,
read by a small reader per instruction family, and its `!dbg` and `!tbaa` attachments."""

from __future__ import annotations

import re
from typing import Callable

from adgen.ir_ad.ir.model import Instruction, Operand
from adgen.ir_ad.ir.tokens import Cursor
from adgen.ir_ad.ir.types import I1, PTR, VOID, Type, parse_type, struct, vector

CONSTANT_EXPRS = {"getelementptr", "bitcast", "ptrtoint", "inttoptr", "addrspacecast", "trunc", "zext", "sext",
                  "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp", "add", "sub", "mul", "shl", "xor",
                  "blockaddress", "dso_local_equivalent", "no_cfi", "splat", "ptrauth"}
BINARY = {"fadd", "fsub", "fmul", "fdiv", "frem", "add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl",
          "lshr", "ashr", "and", "or", "xor"}
# What an integer is computed through from others (arithmetic, casts, merges): the steps along which an
# integer keeps being the address, or the alignment, it was made of (analysis/flow.addresses_in, shadows.py)
INTEGER_STEPS = frozenset({"add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr", "trunc", "zext", "sext",
                           "freeze", "phi", "select", "udiv", "sdiv", "urem", "srem"})
CASTS = {"trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp", "ptrtoint",
         "inttoptr", "bitcast", "addrspacecast"}
_FLAGS = {"nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc", "fast", "nuw", "nsw", "exact", "disjoint",
          "nneg", "samesign", "inbounds", "nusw", "volatile", "tail", "musttail", "notail", "atomic"}
_CALL_MARKERS = {"fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc", "cc", "ccc", "fastcc", "coldcc"}
_ASM_MARKERS = {"sideeffect", "alignstack", "inteldialect", "unwind"}
UNKNOWN = Type("?", "other")  # the result type of what adgen does not read


def parse_value(c: Cursor) -> str:
    """A value's text: a local or global name, a constant, or a constant expression."""
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


def parse_operand(c: Cursor) -> Operand:
    """A typed value (`double %x`), past the attributes between type and value."""
    t = parse_type(c)
    c.skip_attributes()
    return Operand(t, parse_value(c))


def strip_metadata(line: str) -> tuple[str, str | None]:
    """The instruction without its `, !kind !N` attachments (and comments), and its !dbg."""
    dbg = None
    m = re.search(r",\s*!dbg\s+(![0-9]+)", line)
    if m:
        dbg = m.group(1)
    cut = re.search(r",\s*![A-Za-z_.][-A-Za-z_.0-9]*\s+!", line)
    if cut:
        line = line[: cut.start()]
    return line.rstrip(), dbg


def parse_instruction(line: str) -> Instruction:
    """One instruction, as printed in a function's body; an opcode adgen does not read gets
    type `UNKNOWN` (activity analysis refuses it where derivatives reach it)."""
    text, dbg = strip_metadata(line)
    tbaa = re.search(r",\s*!tbaa\s+(![0-9]+)", line)
    fields = re.search(r",\s*!tbaa\.struct\s+(![0-9]+)", line)
    c = Cursor(text)
    result = None
    if c.peek().startswith("%") and c.peek(1) == "=":
        result = c.next()
        c.next()
    while c.peek() in ("tail", "musttail", "notail"):
        c.next()
    op = c.next()
    inst = Instruction(text.strip(), result, op, VOID, dbg=dbg, tbaa=tbaa.group(1) if tbaa else None,
                       tbaa_struct=fields.group(1) if fields else None)
    _READERS.get(op, _unknown)(c, inst)
    return inst


def _skip_flags(c: Cursor) -> None:
    while c.peek() in _FLAGS:
        c.next()


def _binary(c: Cursor, inst: Instruction) -> None:
    _skip_flags(c)
    a = parse_operand(c)
    c.expect(",")
    inst.type, inst.operands = a.type, [a, Operand(a.type, parse_value(c))]


def _unary(c: Cursor, inst: Instruction) -> None:
    _skip_flags(c)
    a = parse_operand(c)
    inst.type, inst.operands = a.type, [a]


def _compare(c: Cursor, inst: Instruction) -> None:
    _skip_flags(c)
    inst.predicate = c.next()
    a = parse_operand(c)
    c.expect(",")
    inst.operands = [a, Operand(a.type, parse_value(c))]
    inst.type = I1 if a.type.kind != "vector" else vector(I1, a.type.count)


def _cast(c: Cursor, inst: Instruction) -> None:
    _skip_flags(c)
    a = parse_operand(c)
    c.expect("to")
    inst.type, inst.operands = parse_type(c), [a]


def _select(c: Cursor, inst: Instruction) -> None:
    _skip_flags(c)
    cond = parse_operand(c)
    c.expect(",")
    a = parse_operand(c)
    c.expect(",")
    inst.type, inst.operands = a.type, [cond, a, parse_operand(c)]


def _phi(c: Cursor, inst: Instruction) -> None:
    _skip_flags(c)
    inst.type = parse_type(c)
    while c.peek() == "[":
        c.next()
        v = Operand(inst.type, parse_value(c))
        c.expect(",")
        block = c.next()
        c.expect("]")
        inst.incoming.append((v, block))
        c.accept(",")


def _load(c: Cursor, inst: Instruction) -> None:
    _skip_flags(c)
    t = parse_type(c)
    c.expect(",")
    inst.type, inst.source_type, inst.operands = t, t, [parse_operand(c)]


def _store(c: Cursor, inst: Instruction) -> None:
    _skip_flags(c)
    v = parse_operand(c)
    c.expect(",")
    inst.operands = [v, parse_operand(c)]


def _getelementptr(c: Cursor, inst: Instruction) -> None:
    _skip_flags(c)
    inst.source_type = parse_type(c)
    while c.accept(","):
        if c.peek() == "inrange":
            c.next()
            c.balanced()
        inst.operands.append(parse_operand(c))
    base = inst.operands[0]
    inst.type = base.type if base.type.kind == "vector" else PTR


def _alloca(c: Cursor, inst: Instruction) -> None:
    _skip_flags(c)
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


def _call(c: Cursor, inst: Instruction) -> None:
    _skip_flags(c)
    while c.peek() in _CALL_MARKERS or c.peek().startswith("cc"):
        c.next()
    c.skip_attributes()
    ret = parse_type(c)
    inst.type = ret.elems[0] if ret.kind == "func" else ret
    inst.callee = c.next()
    if inst.callee == "asm":  # inline assembly: `asm sideeffect "text", "constraints"`, its callee "asm"
        while c.peek() in _ASM_MARKERS:
            c.next()
        c.next()
        c.expect(",")
        inst.asm = c.next().strip('"')
    c.expect("(")
    while c.peek() != ")":
        t = parse_type(c)
        attrs = c.skip_attributes()
        inst.call_args.append((Operand(t, parse_value(c)), attrs))
        c.accept(",")
    inst.operands = [a for a, _ in inst.call_args]


def _invoke(c: Cursor, inst: Instruction) -> None:
    """A call that may unwind (C++ with exceptions): read as a call, its labels the targets,
    normal first. (Only a program's own code has them: adgen lowers C++ without exceptions.)"""
    _call(c, inst)
    while not c.done():
        if c.next() == "label":
            inst.targets.append(c.next())


def _ret(c: Cursor, inst: Instruction) -> None:
    if c.peek() != "void":
        inst.operands = [parse_operand(c)]


def _br(c: Cursor, inst: Instruction) -> None:
    if c.peek() == "label":
        c.next()
        inst.targets = [c.next()]
        return
    cond = parse_operand(c)
    c.expect(",")
    c.expect("label")
    taken = c.next()
    c.expect(",")
    c.expect("label")
    inst.operands, inst.targets = [cond], [taken, c.next()]


def _switch(c: Cursor, inst: Instruction) -> None:
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


def _aggregate(c: Cursor, inst: Instruction) -> None:
    """extractvalue, insertvalue; an extractvalue's type is left for the module to find
    (`Module.member_type`: it may be a named struct's member)."""
    agg = parse_operand(c)
    inst.operands = [agg]
    c.expect(",")
    if inst.opcode == "insertvalue":
        inst.operands.append(parse_operand(c))
        c.expect(",")
    inst.indices.append(int(c.next()))
    while c.accept(","):
        inst.indices.append(int(c.next()))
    inst.type = agg.type if inst.opcode == "insertvalue" else None


def _vector_element(c: Cursor, inst: Instruction) -> None:
    """extractelement, insertelement, shufflevector."""
    inst.operands = [parse_operand(c)]
    while c.accept(","):
        inst.operands.append(parse_operand(c))
    vec = inst.operands[0].type
    if inst.opcode == "extractelement":
        inst.type = vec.elems[0] if vec.elems else UNKNOWN
    elif inst.opcode == "insertelement":
        inst.type = vec
    else:
        inst.type = vector(vec.elems[0], inst.operands[2].type.count) if vec.elems else UNKNOWN


def shuffle_mask(inst: Instruction) -> list[int]:
    """The lanes a shufflevector takes, by result lane: an index into its two operands side by
    side, -1 for a lane left poison."""
    mask = inst.operands[2]
    if mask.value == "zeroinitializer":
        return [0] * mask.type.count
    if mask.value in ("poison", "undef"):
        return [-1] * mask.type.count
    return [-1 if lane in ("poison", "undef") else int(lane) for lane in re.findall(r"i32 (-?\d+|poison|undef)",
                                                                                    mask.value)]


def _unreachable(c: Cursor, inst: Instruction) -> None:
    pass


def _atomicrmw(c: Cursor, inst: Instruction) -> None:
    """`atomicrmw [volatile] OP ptr P, T V ...`: operands the pointer and the value, of type T."""
    c.accept("volatile")
    c.next()
    inst.operands = [parse_operand(c)]
    c.expect(",")
    inst.operands.append(parse_operand(c))
    inst.type = inst.operands[1].type


def atomic_operation(inst: Instruction) -> str:
    """The operation of an `atomicrmw` (`fadd`, `xchg`...)."""
    words = inst.text.split("atomicrmw", 1)[1].split()
    return words[1] if words[0] == "volatile" else words[0]


def _cmpxchg(c: Cursor, inst: Instruction) -> None:
    """`cmpxchg [weak] [volatile] ptr P, T CMP, T NEW ...`: a `{ T, i1 }`."""
    while c.peek() in ("weak", "volatile"):
        c.next()
    inst.operands = [parse_operand(c)]
    for _ in range(2):
        c.expect(",")
        inst.operands.append(parse_operand(c))
    inst.type = struct(inst.operands[1].type, I1)


def _unknown(c: Cursor, inst: Instruction) -> None:
    inst.type = UNKNOWN


_READERS: dict[str, Callable[[Cursor, Instruction], None]] = {
    **dict.fromkeys(BINARY, _binary), **dict.fromkeys(CASTS, _cast),
    "fneg": _unary, "freeze": _unary, "fcmp": _compare, "icmp": _compare, "select": _select, "phi": _phi,
    "load": _load, "store": _store, "getelementptr": _getelementptr, "alloca": _alloca, "call": _call,
    "invoke": _invoke,
    "atomicrmw": _atomicrmw, "cmpxchg": _cmpxchg,
    "ret": _ret, "br": _br, "switch": _switch, "extractvalue": _aggregate, "insertvalue": _aggregate,
    "extractelement": _vector_element, "insertelement": _vector_element, "shufflevector": _vector_element,
    "unreachable": _unreachable,
}
