"""What the IR's types say memory holds. clang gives a local object its class's type
(`alloca %"struct.Eigen::TensorEvaluator"`), so the bytes at a constant offset from one are
fields of known types: in the function itself or, through a pointer argument, at every call of
the function in the module (when its address is never taken, those are all its callers).

The sweeps ask this of a copy (`memcpy`) whose floating type no access in the function shows,
as a class's copy constructor makes: Eigen's evaluators copying the sizes and pointers of the
expressions they hold. Bytes of integers and pointers only carry no adjoints, and their
shadows are copied as pointers' are. A union or a type the module does not define answers no.

A byte array in a class's IR type is either a character array of the source (storage any
object may be built in) or the padding clang puts where it leaves out a member of an empty
class (Eigen's `variable_if_dynamic<Index, 1>`, the rows of a one-row block) or aligns the next
one. The class's struct-path TBAA type descriptors tell them apart: each lists the class's
members (of an empty class too, a character array as "omnipotent char") at their offsets. A
byte array answers yes where a descriptor of the class's name (of one of its instantiations:
the IR type's name has no template arguments) fits its IR type (each member with scalars at a
field of the IR type that is not a byte array: members' fields do not overlap, so only empty
classes start in the byte array), and no descriptor of that name has a member that may hold
floats starting there."""

from __future__ import annotations

import weakref

from adgen.base.cxx_names import demangle
from adgen.ir_ad.ir import Function, Instruction, Module, Type, global_addresses
from adgen.ir_ad.ir.tbaa import class_descriptors, ir_class_name, tbaa_scalar_members

_DEPTH = 8  # calls followed up from a pointer argument
_SITES: "weakref.WeakKeyDictionary[Module, dict]" = weakref.WeakKeyDictionary()
_DESCRIPTORS: "weakref.WeakKeyDictionary[Module, dict]" = weakref.WeakKeyDictionary()
# TBAA's names of scalar types that hold no floating data (pointers are "any pointer", "p1 float"...);
# a character ("omnipotent char") may be storage of anything.
_NOT_FLOATING = {"int", "long", "long long", "short", "_Bool", "bool", "any pointer", "unsigned int", "unsigned long",
                 "unsigned short", "unsigned long long", "__int128", "unsigned __int128"}


def holds_no_floats(module: Module, fn: Function, pointer: str, length: int) -> bool:
    """Whether the `length` bytes at `pointer` (a value of `fn`) are known from the types to
    hold integers and pointers only."""
    return _span(module, fn, pointer, 0, length, 0)


def _span(module: Module, fn: Function, value: str, offset: int, length: int, depth: int) -> bool:
    root = _root(module, fn, value)
    if root is None or depth > _DEPTH:
        return False
    name, shift = root
    offset += shift
    inst = _defs(fn).get(name)
    if inst is not None:
        if inst.opcode != "alloca" or inst.count is not None:
            return False
        t = inst.source_type
        if 0 <= offset and offset + length <= size_of(module, t) and _bytes(t):  # (rustc's locals: `[24 x i8]`)
            return plainly_accessed(module, fn, name)
        return 0 <= offset and offset + length <= size_of(module, t) and _plain(module, t, offset, length)
    params = [p.name for p in fn.params]
    if name not in params:
        return False
    k = params.index(name)
    sites = _call_sites(module).get(fn.name)
    return bool(sites) and all(k < len(call.operands) and
                               _span(module, caller, call.operands[k].value, offset, length, depth + 1)
                               for caller, call in sites)


_USES: "weakref.WeakKeyDictionary[Module, dict]" = weakref.WeakKeyDictionary()
_HARMLESS = ("llvm.lifetime.", "llvm.memset.", "llvm.assume", "llvm.dbg.", "llvm.prefetch", "llvm.invariant.")


def plainly_accessed(module: Module, fn: Function, pointer: str) -> bool:
    """Whether the memory a local (an alloca of bytes, as rustc types its locals) reaches is, by
    every access to it, integers and pointers only: loaded and stored as such (through addresses
    computed from it), written by copies of memory that is so too, passed only to functions of
    the module that access it so, its address kept only in locals whose loads are followed
    likewise (a `SetLenOnDrop` holding `&mut vec.len`), never returned or merged with other
    pointers. A `Vec`'s header (its capacity, buffer and length), moved by `v = ...collect()`,
    is such memory; its buffer, behind the pointer, is not this memory."""
    return _Plain(module).walk([(fn, pointer)])


class _Plain:
    """The walk of plainly_accessed: pointers into the memory, by function, followed through
    calls (to the callee's parameter), copies into it (their sources walked too: what else
    writes them decides, a copy back and forth included) and locals holding its address."""

    def __init__(self, module: Module):
        self.module, self.seen, self.steps = module, set(), 0

    def walk(self, work: list[tuple[Function, str]]) -> bool:
        while work:
            fn, value = work.pop()
            if (fn.name, value) in self.seen:
                continue
            self.seen.add((fn.name, value))
            self.steps += 1
            if self.steps > 4096:
                return False
            for inst in _uses(self.module, fn).get(value, ()):
                more = self.use(fn, inst, value)
                if more is None:
                    return False
                work += more
        return True

    def use(self, fn: Function, inst: Instruction, value: str) -> list | None:
        """What a use of a pointer into the memory adds to the walk, or None where it may put floats there."""
        op = inst.opcode
        if op in ("getelementptr", "bitcast", "addrspacecast") and inst.operands[0].value == value:
            return [(fn, inst.result)]
        if op == "load":
            return [] if inst.type.kind in ("int", "ptr") else None
        if op == "store":
            if inst.operands[0].type.kind not in ("int", "ptr"):
                return None
            return self.held(fn, inst.operands[1].value) if inst.operands[0].value == value else []
        if op in ("icmp", "ptrtoint"):
            return []
        if op in ("call", "invoke"):
            return self.passed(fn, inst, value)
        return None  # (phi, select, ret: its address goes where this does not follow)

    def passed(self, fn: Function, call: Instruction, value: str) -> list | None:
        name = call.callee.lstrip("@").strip('"')
        if name.startswith(_HARMLESS):
            return []
        args = [a.value for a, _ in call.call_args] if call.call_args else [o.value for o in call.operands]
        if name.startswith(("llvm.memcpy.", "llvm.memmove.")):
            if args[0] != value:
                return []  # (read from: nothing written here)
            root = _root(self.module, fn, args[1])
            return [(fn, root[0])] if root is not None and root[1] == 0 else None
        target = self.module.functions.get(call.callee)
        if target is None or target.declaration:
            return None
        params = [p.name for p in target.params]
        return [(target, params[k]) for k, a in enumerate(args) if a == value and k < len(params)]

    def held(self, fn: Function, holder: str) -> list | None:
        """The pointers loaded back from where in a local the address is stored, where they are
        used (in this function, or a callee it passes the local to)."""
        root = _root(self.module, fn, holder)
        inst = _defs(fn).get(root[0]) if root is not None else None
        if inst is None or inst.opcode != "alloca":
            return None
        return self.loads(fn, root[0], root[1], 0)

    def loads(self, fn: Function, base: str, offset: int, depth: int) -> list | None:
        """Loads of pointers from `offset` bytes into the memory at `base` in `fn`, or None where
        its bytes go where this does not follow (its address stored, merged, or passed to a
        function without a definition)."""
        if depth > _DEPTH:
            return None
        out = []
        for inst in fn.instructions():
            rooted = [(k, _root(self.module, fn, o.value)) for k, o in enumerate(inst.operands)
                      if o.type.kind == "ptr" and o.value.startswith("%")]
            mine = [(k, r) for k, r in rooted if r is not None and r[0] == base]
            if not mine:
                continue
            op = inst.opcode
            if op == "load":
                if inst.type.kind == "ptr" and mine[0][1][1] == offset:
                    out.append((fn, inst.result))
            elif op == "store":
                if any(k == 0 for k, _ in mine):
                    return None
            elif op in ("getelementptr", "bitcast", "addrspacecast", "icmp", "ptrtoint"):
                continue
            elif op in ("call", "invoke"):
                name = inst.callee.lstrip("@").strip('"')
                if name.startswith(_HARMLESS):
                    continue
                target = self.module.functions.get(inst.callee)
                if target is None or target.declaration:
                    return None
                args = [a.value for a, _ in inst.call_args] if inst.call_args else [o.value for o in inst.operands]
                for k, a in enumerate(args):
                    r = _root(self.module, fn, a) if a.startswith("%") else None
                    if r is not None and r[0] == base and k < len(target.params):
                        inner = self.loads(target, target.params[k].name, offset - r[1], depth + 1)
                        if inner is None:
                            return None
                        out += inner
            else:
                return None
        return out


def _uses(module: Module, fn: Function) -> dict[str, list[Instruction]]:
    """The instructions using each value of a function."""
    cache = _USES.setdefault(module, {})
    if fn.name not in cache or cache[fn.name][0] is not fn:
        found: dict[str, list[Instruction]] = {}
        for inst in fn.instructions():
            for o in inst.operands:
                if o.value.startswith("%"):
                    found.setdefault(o.value, []).append(inst)
        cache[fn.name] = (fn, found)
    return cache[fn.name][1]


def _root(module: Module, fn: Function, value: str) -> tuple[str, int] | None:
    """The value a pointer is a constant offset from (an alloca, an argument), and the offset."""
    offset, defs = 0, _defs(fn)
    for _ in range(64):
        inst = defs.get(value)
        if inst is None or inst.opcode not in ("getelementptr", "bitcast", "addrspacecast"):
            return value, offset
        if inst.opcode == "getelementptr":
            if inst.type.kind != "ptr":
                return None
            shift = _gep_offset(module, inst)
            if shift is None:
                return None
            offset += shift
        value = inst.operands[0].value
    return None


def _gep_offset(module: Module, inst: Instruction) -> int | None:
    indices = []
    for o in inst.operands[1:]:
        try:
            indices.append(int(o.value))
        except ValueError:
            return None
    if not indices:
        return 0
    t = inst.source_type
    offset = indices[0] * size_of(module, t)
    for i in indices[1:]:
        t = module.struct_type(t)
        if t.kind == "struct":
            offset += _field_offsets(module, t)[i]
            t = t.elems[i]
        elif t.kind in ("array", "vector"):
            t = t.elems[0]
            offset += i * size_of(module, t)
        else:
            return None
    return offset


def _plain(module: Module, t: Type, offset: int, length: int, depth: int = 0) -> bool:
    """Whether the bytes [offset, offset + length) of a `t` hold integers and pointers only."""
    if depth > 32:
        return False
    named = None
    if t.kind == "named":
        if t.text.startswith(('%union.', '%"union.')):
            return False
        named, t = t, module.struct_type(t)
    if t.kind in ("int", "ptr"):
        return True
    if t.kind == "struct":
        offsets = _field_offsets(module, t)
        for field, at in zip(t.elems, offsets):
            size = size_of(module, field)
            if at < offset + length and offset < at + size:
                lo, hi = max(offset, at), min(offset + length, at + size)
                if not _plain(module, field, lo - at, hi - lo, depth + 1) and \
                        not (named is not None and _bytes(field) and _padding(module, named, t, offsets, lo, hi)):
                    return False
        return True
    if t.kind == "array":
        e = t.elems[0]
        if e.kind == "int" and e.bits <= 8 and t.count > 1:
            return False  # storage any object may be built in
        return _plain(module, e, 0, size_of(module, e), depth + 1)
    return False  # floats, vectors of them, opaque types


def _bytes(t: Type) -> bool:
    return t.kind == "array" and t.elems[0].kind == "int" and t.elems[0].bits <= 8


def _padding(module: Module, named: Type, body: Type, offsets: list[int], lo: int, hi: int) -> bool:
    """Whether the bytes [lo, hi) of a class of IR type `named` (its `body` and the fields'
    offsets), which its IR type holds as a byte array, hold no floats by the TBAA type
    descriptors of the class's name (see the module's description)."""
    fields = {at for at, field in zip(offsets, body.elems) if not _bytes(field)}
    found = _descriptors(module).get(ir_class_name(named.text), ())
    return any(all(at in fields or not scalars for at, scalars in members) for members in found) and \
        all(_no_floats(scalars) for members in found for at, scalars in members if lo <= at < hi)


def _no_floats(scalars: list[str]) -> bool:
    return all(n in _NOT_FLOATING or n.startswith("p") and " " in n for n in scalars)


def _descriptors(module: Module) -> dict[str, list[list[tuple[int, list[str]]]]]:
    """The module's struct-path TBAA type descriptors by their class's qualified name without
    template arguments: of each, its members' offsets and their scalar types (flattened)."""
    if module in _DESCRIPTORS:
        return _DESCRIPTORS[module]
    found: dict[str, list] = {}
    for typeinfo, fields in class_descriptors(module.metadata):
        shown = demangle(typeinfo)
        if shown is None or not shown.startswith("typeinfo name for "):
            continue
        members = []
        for ref, at in fields:
            scalars = tbaa_scalar_members(module.metadata, ref)
            if scalars is None:
                members = None
                break
            members.append((int(at), scalars))
        if members is not None:
            found.setdefault(_without_arguments(shown[len("typeinfo name for "):]), []).append(members)
    _DESCRIPTORS[module] = found
    return found


def _without_arguments(name: str) -> str:
    """`Eigen::MapBase` for `Eigen::MapBase<Eigen::Block<...>, 0>`."""
    out, depth = [], 0
    for c in name:
        depth += c == "<"
        if depth == 0:
            out.append(c)
        depth -= c == ">"
    return "".join(out)


def size_of(module: Module, t: Type) -> int:
    """A type's allocation size in bytes, as LLVM lays it out on 64-bit targets (natural
    alignment; a packed struct `<{ ... }>` without padding)."""
    t = module.struct_type(t)
    if t.kind == "struct":
        offsets = _field_offsets(module, t)
        end = offsets[-1] + size_of(module, t.elems[-1]) if t.elems else 0
        return _round(end, align_of(module, t))
    if t.kind == "array":
        return t.count * size_of(module, t.elems[0])
    if t.kind == "vector":
        return _round(t.count * max(1, t.elems[0].bits) // 8 or 1, align_of(module, t))
    return _round(_scalar_bytes(t), align_of(module, t))


def align_of(module: Module, t: Type) -> int:
    t = module.struct_type(t)
    if t.kind == "struct":
        return 1 if t.text.startswith("<") else max((align_of(module, e) for e in t.elems), default=1)
    if t.kind == "array":
        return align_of(module, t.elems[0])
    if t.kind == "vector":
        return min(64, _pow2(t.count * max(1, t.elems[0].bits) // 8 or 1))
    return min(16, _pow2(_scalar_bytes(t)))


def _field_offsets(module: Module, t: Type) -> list[int]:
    packed, at, out = t.text.startswith("<"), 0, []
    for e in t.elems:
        if not packed:
            at = _round(at, align_of(module, e))
        out.append(at)
        at += size_of(module, e)
    return out


def _scalar_bytes(t: Type) -> int:
    if t.kind == "ptr":
        return 8
    if t.text == "x86_fp80":
        return 10
    return max(1, (t.bits + 7) // 8) if t.kind in ("int", "float") else 1


def _pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def _round(n: int, align: int) -> int:
    return -(-n // align) * align


def _defs(fn: Function) -> dict[str, Instruction]:
    return {i.result: i for i in fn.instructions() if i.result}


def _call_sites(module: Module) -> dict[str, list[tuple[Function, Instruction]]]:
    """Each function's direct calls in the module; none for a function whose address is taken
    (stored, passed, in a global's initializer: it may be called from anywhere)."""
    if module in _SITES:
        return _SITES[module]
    sites: dict[str, list] = {}
    taken: set[str] = set()
    for fn in module.functions.values():
        for inst in fn.instructions():
            taken.update(global_addresses(inst.text))  # (`ptr @f` as a value; a direct call's callee is not one)
            if inst.opcode in ("call", "invoke") and inst.callee.startswith("@"):
                sites.setdefault(inst.callee, []).append((fn, inst))
    for line in module.globals.values():
        taken.update(global_addresses(line))
    result = {name: calls for name, calls in sites.items() if name not in taken}
    _SITES[module] = result
    return result
