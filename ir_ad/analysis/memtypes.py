"""The floating type of the memory a pointer points into, and whether memory holds floats at all:
what the reverse sweep asks of a load of an integer and of a copy (`memcpy`) between memory with
derivatives, from the C prototypes (passed down through calls), the function's loads and stores
through the same base, their TBAA, and the types of the objects the bytes lie in (typed_bytes.py)."""

from __future__ import annotations

from adgen.ir_ad.analysis import typed_bytes
from adgen.ir_ad.analysis.flow import CFG, Memory
from adgen.ir_ad.calls import inlined_from
from adgen.ir_ad.ir import PTR, Function, Instruction, Module, Operand, Type, float_type, floating
from adgen.ir_ad.shadows import points_nowhere

# The floating types whose values C++ code may move as integers of their size, which TBAA still
# names by the floating type (libc++'s `std::stable_sort` of doubles, a radix sort by their bits).
_FLOAT_BITS = {64: "double", 32: "float"}
# TBAA's names of scalar types that hold no floating data (pointers are "any pointer", "p1 float"...).
NOT_FLOATING = {"int", "long", "long long", "short", "_Bool", "bool", "any pointer", "unsigned int", "unsigned long"}


def _not_floating(name: str) -> bool:
    """Whether a TBAA scalar type name is an integer's or a pointer's ("p1 float": a `float *`)."""
    return name in NOT_FLOATING or name.startswith("p") and " " in name


class MemoryTypes:
    """What one function's memory holds, asked by base (ActivityAnalysis holds one)."""

    def __init__(self, fn: Function, module: Module, cfg: CFG, memory: Memory, arg_memtypes: tuple[str, ...]):
        self.fn, self.module, self.cfg, self.memory = fn, module, cfg, memory
        self.params = {p.name: i for i, p in enumerate(fn.params)}
        self.arg_memtypes = arg_memtypes
        self._memtypes: dict[str, Type | None] = {}

    def holds_no_floats(self, *pointers: str, length: Operand | None = None, copy: Instruction | None = None) -> bool:
        """Whether the memory at these pointers is known to hold no floating data: a `copy` of the
        C++ library's characters (its `char_traits`: a string's), a copy's
        fields (`!tbaa.struct`) all integers and pointers, the accesses through the same bases,
        none of a floating type, name (in their TBAA: a struct's members, or a scalar's type)
        integers and pointers only, or, for `length` bytes of a constant length, the types of
        the objects they lie in (typed_bytes.py). A copy between such memory has no adjoints to
        move."""
        if copy is not None and inlined_from(self.module, copy, "char_traits.h"):  # (a string's characters)
            return True
        named = self.module.tbaa_struct_types(copy.tbaa_struct if copy is not None else None)
        if named and all(_not_floating(n) for n in named) or self._tbaa_holds_no_floats(pointers):
            return True
        size = int(length.value) if length is not None and length.value.isdigit() else None
        return size is not None and any(typed_bytes.holds_no_floats(self.module, self.fn, p, size) for p in pointers)

    def _tbaa_holds_no_floats(self, pointers: tuple[str, ...]) -> bool:
        scalars: set[str] = set()
        bases = {self.memory.base(p).name for p in pointers if self.memory.base(p).name == p}
        for inst in self.fn.instructions():
            if inst.opcode in ("load", "store"):
                ptr = inst.operands[0] if inst.opcode == "load" else inst.operands[1]
                if self.memory.base(ptr.value).name not in bases:
                    continue
                if floating(inst.type if inst.opcode == "load" else inst.operands[0].type):
                    return False  # (whatever its tag says, or without one)
                if inst.tbaa:
                    found = self.module.tbaa_scalars(inst.tbaa)
                    if found is None:  # (a scalar's access: its type, an `int` of a `std::vector<int>`)
                        found = list(self.module.tbaa_types(inst.tbaa)[:1])
                    if not found:
                        return False
                    scalars |= set(found)
        return bool(scalars) and all(_not_floating(n) for n in scalars)

    def copied_type(self, fields: str | None) -> Type | None:
        """The float type of a copy whose fields (its `!tbaa.struct`) are all of one float type."""
        named = set(self.module.tbaa_struct_types(fields) or ())
        return float_type(named.pop()) if len(named) == 1 and next(iter(named)) in ("float", "double") else None

    def memtype(self, pointer: str) -> Type | None:
        """The float type of the memory a pointer points into: from the C prototypes (passed down
        through calls) or from how this function loads and stores through the same base; for a
        pointer into one of several objects (a phi or select of them: a merge from an array into
        a buffer and back, libstdc++'s `std::stable_sort`), the one type theirs agree on."""
        found = self._memtype_of_base(pointer)
        if found is None and self.memory.base(pointer).kind == "unknown":
            roots = self.memory.roots(pointer) - {pointer}
            kinds = {t.text: t for t in (self._memtype_of_base(r) for r in roots
                                         if not points_nowhere(Operand(PTR, r), self.cfg.defs)) if t is not None}
            found = kinds.popitem()[1] if len(kinds) == 1 else None
        return found

    def _memtype_of_base(self, pointer: str) -> Type | None:
        base = self.memory.base(pointer)
        if base.name in self._memtypes:
            return self._memtypes[base.name]
        found = None
        if base.kind == "arg" and self.arg_memtypes[self.params[base.name]]:
            found = float_type(self.arg_memtypes[self.params[base.name]])
        else:
            kinds = set()
            for inst in self.fn.instructions():
                if inst.opcode in ("load", "store"):
                    value_t = inst.type if inst.opcode == "load" else inst.operands[0].type
                    ptr = inst.operands[0] if inst.opcode == "load" else inst.operands[1]
                    if value_t.kind == "float" and self.memory.base(ptr.value) == base:
                        kinds.add(value_t.text)
                    elif value_t.kind == "int" and value_t.bits in _FLOAT_BITS and self.memory.base(ptr.value) == base \
                            and self.module.tbaa_types(inst.tbaa)[:1] == (_FLOAT_BITS[value_t.bits],):
                        kinds.add(_FLOAT_BITS[value_t.bits])  # (a double moved as its bits: libc++'s radix sort)
            if not kinds:  # (passed on: how the functions it is passed to access it, a Rust value's copy)
                kinds = {t for inst in self.fn.instructions() if inst.opcode == "call"
                         for k, a in enumerate(inst.operands) if a.type.kind == "ptr" and
                         self.memory.base(a.value) == base for t in _floats_through(self.module, inst, k, 0)}
            if len(kinds) == 1:
                found = float_type(kinds.pop())
            elif not kinds:
                found = self._pointee_by_tbaa(base.name)
        self._memtypes[base.name] = found
        return found

    def _pointee_by_tbaa(self, pointer: str) -> Type | None:
        """The float type a loaded pointer points to by its load's TBAA (clang's pointer types:
        a `float *` member is loaded as "p1 float")."""
        inst = self.cfg.defs.get(pointer)
        if inst is None or inst.opcode != "load" or not inst.tbaa:
            return None
        named = self.module.tbaa_types(inst.tbaa)[:1]
        return float_type(named[0][3:]) if named and named[0] in ("p1 float", "p1 double") else None


def _floats_through(module, call, k: int, depth: int) -> set[str]:
    """The float types a function of the module (and those it passes the pointer on to) loads
    and stores through its `k`-th parameter, at addresses computed from it."""
    target = module.functions.get(call.callee)
    if target is None or target.declaration or k >= len(target.params) or depth > 4:
        return set()
    derived, kinds = {target.params[k].name}, set()
    for inst in target.instructions():
        if inst.opcode in ("getelementptr", "bitcast", "addrspacecast") and inst.operands[0].value in derived:
            derived.add(inst.result)
        elif inst.opcode in ("load", "store"):
            value_t = inst.type if inst.opcode == "load" else inst.operands[0].type
            ptr = inst.operands[0] if inst.opcode == "load" else inst.operands[1]
            if ptr.value in derived and value_t.kind == "float":
                kinds.add(value_t.text)
        elif inst.opcode == "call":
            for j, a in enumerate(inst.operands):
                if a.value in derived:
                    kinds |= _floats_through(module, inst, j, depth + 1)
    return kinds
