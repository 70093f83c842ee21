"""The memory a checkpointed loop's snapshot holds (specs/abi.md, "Memory budgets"): for each
base pointer the loop writes through, the bytes between the lowest and the highest address its
stores and loads through that base reach over the loop's run (analysis/ranges.py), as
expressions of values known before the loop, evaluated at run time. A snapshot copies them;
running iterations again from it needs nothing else of memory, except what the loop only
reads, which the caller may write after the loop: those reads are added where the caller's
pattern says so (`Extents.needed`). Memory allocated inside an iteration is that iteration's
own and is not kept."""

from __future__ import annotations

from dataclasses import dataclass

from adgen.ir_ad.analysis.flow import CFG, Base, Memory
from adgen.ir_ad.analysis.loops import Loop, LoopForest
from adgen.ir_ad.analysis.ranges import Node, Ranges, known_values
from adgen.ir_ad.calls import RULE, callee_name, kind_of
from adgen.ir_ad.mpi import communicating_call
from adgen.ir_ad.ir import I8, I64, PTR, Function, Instruction, Module, Operand, Type, array
from adgen.ir_ad.ir.builder import local
from adgen.ir_ad.ir.names import intrinsic_family

STATE = local("ck'state")  # the step's and the loop function's first parameter (outline.py)
_COPIES = {"memcpy", "memmove", "memcpy.inline"}


class NotCheckpointed(Exception):
    """A loop that cannot be checkpointed: `inst` and `what` say why."""

    def __init__(self, inst: Instruction | None, what: str):
        super().__init__(what)
        self.inst, self.what = inst, what


@dataclass(frozen=True)
class Extent:
    """Bytes [address, address + size) over the loop's run; `size` a type or a byte count."""

    address: Node
    size: Type | Node
    inst: Instruction | None


@dataclass
class Extents:
    """The extents of one loop, by base: those its writes need kept, and those of its reads
    from bases it does not write (None where a read cannot be bounded)."""

    written: dict[Base, list[Extent]]
    read_only: dict[Base, list[tuple[Instruction, Extent | None]]]

    def needed(self, params: set[str], overwritten: set[str], later_writes: bool) -> list[list[Extent]]:
        """The regions a snapshot keeps (each a list of extents whose hull it copies): those of
        the written bases, and those read from bases the loop does not write, where the caller
        may write that memory after the loop: through a parameter of the loop function in
        `overwritten`, or (`later_writes`) through anything else. A read that cannot be bounded
        is an error wherever the caller writes memory after the loop."""
        kept = [e for extents in self.written.values() for e in extents]
        for reads in self.read_only.values():
            for inst, extent in reads:
                if extent is None:
                    if overwritten or later_writes:
                        raise unbounded(inst, "a load, of memory that may be written after the loop, whose addresses")
                    continue
                for address in _alternatives(extent.address):
                    pointer = _root(address)
                    if pointer in overwritten or pointer not in params and later_writes:
                        kept.append(Extent(address, extent.size, extent.inst))
        return by_pointer(kept)


def by_pointer(extents: list[Extent]) -> list[list[Extent]]:
    """The extents grouped by the pointer their addresses are offsets of (a region each), those
    whose pointer is one of several (a select, pointers swapped each iteration) split into one
    per pointer: a region never spans the bytes between two objects."""
    groups: dict[str, list[Extent]] = {}
    for e in extents:
        for address in _alternatives(e.address):
            groups.setdefault(_root(address), []).append(Extent(address, e.size, e.inst))
    return list(groups.values())


def _alternatives(node: Node) -> list[Node]:
    if node.kind == "hull":
        return [alt for arg in node.args for alt in _alternatives(arg)]
    if node.kind == "gep":
        return [Node("gep", (alt,) + node.args[1:], inst=node.inst, bits=node.bits)
                for alt in _alternatives(node.args[0])]
    return [node]


def _root(node: Node) -> str:
    while node.kind == "gep":
        node = node.args[0]
    return node.operand.value if node.kind == "leaf" else repr(node)


def state_extent(size: int) -> Extent:
    return Extent(Node("leaf", operand=Operand(PTR, STATE)), array(I8, size), None)


def declared_extents(fn: Function, sizes: tuple[tuple[int, int | str, int], ...]) -> dict[str, Extent]:
    """The bytes `@size(p=n)` gives pointer parameters of `fn`, by parameter (`Derivation.sizes`)."""
    out = {}
    for k, count, element in sizes:
        p = fn.params[k]
        n = Node("leaf", operand=Operand(I64, str(count))) if isinstance(count, int) else \
            Node("leaf", operand=Operand(fn.params[int(count[1:])].type, fn.params[int(count[1:])].name))
        out[p.name] = Extent(Node("leaf", operand=Operand(p.type, p.name)), Node("scale", (n,), step=element), None)
    return out


def leaves(extent: Extent) -> set[str]:
    """The local values an extent's bounds are computed from."""
    found, todo = set(), [extent.address] + ([extent.size] if isinstance(extent.size, Node) else [])
    while todo:
        node = todo.pop()
        if node.kind == "leaf" and node.operand.is_local:
            found.add(node.operand.value)
        todo += list(node.args)
    return found


def loop_extents(module: Module, fn: Function, cfg: CFG, loops: LoopForest, loop: Loop,
                 declared: dict[str, Extent]) -> Extents:
    """The extents of `loop` of `fn` (before outlining: the analyses are `fn`'s); where an access
    through a pointer parameter cannot be bounded, the bytes `declared` gives it (`@size`)."""
    memory = Memory(fn, cfg, module)
    ranges = _Bounded(cfg, loops)
    inside = [i for b in fn.blocks if b.label in loop.body for i in b.instructions]
    own = {i.result for i in inside if i.result}

    def fresh_here(base: Base) -> bool:  # allocated in the iteration itself
        return base.kind == "fresh" and base.name in own

    lengths = _Lengths(memory, cfg, declared)
    given, whole = lengths.given, lengths.whole

    written: dict[Base, list[Extent]] = {}
    reads: dict[Base, list[tuple[Instruction, Extent | None]]] = {}
    for inst in inside:
        talks = communicating_call(module, inst) if inst.opcode in ("call", "invoke") else None
        if talks:
            raise NotCheckpointed(inst, f"MPI's '{talks}' in a loop checkpointed to keep the gradient within its memory "
                                  "budget (its iterations would run again on this rank alone, communicating again: "
                                  "specs/mpi.md)")
        targets = [t for t in memory.written_by(inst) if not fresh_here(t)]
        if inst.opcode == "call" and kind_of(module, inst) == RULE and all(a.type.kind != "ptr" for a in inst.operands):
            targets = []  # a math function of numbers: what it writes (errno, signgam) it writes again alike
        if inst.opcode == "store" and targets:
            if inst.operands[0].type.kind == "ptr":
                raise NotCheckpointed(inst, "a pointer stored into memory in a loop checkpointed to keep the gradient "
                                      "within its memory budget (a snapshot would not hold its shadow)")
            access = ranges.access(inst, loop)
            extent = Extent(access.address, access.size, inst) if access else given(inst.operands[1].value)
            if extent is None:
                raise unbounded(inst, "a store whose addresses")
            written.setdefault(targets[0], []).append(extent)
        elif inst.opcode == "call" and intrinsic_family(callee_name(inst)) in _COPIES | {"memset"}:
            dst, length = inst.operands[0], inst.operands[2]
            base = memory.base(dst.value)
            if not fresh_here(base):
                extent = _span(ranges, loop, dst, length, inst) or given(dst.value)
                if extent is None:
                    raise unbounded(inst, "a copy whose bytes")
                written.setdefault(base, []).append(extent)
            if intrinsic_family(callee_name(inst)) in _COPIES:
                src = inst.operands[1]
                reads.setdefault(memory.base(src.value), []).append(
                    (inst, _span(ranges, loop, src, length, inst) or given(src.value)))
        elif inst.opcode == "call" and targets and all(whole(t) is not None for t in targets):
            for t in targets:  # a call writing through parameters whose lengths `@size` gives, or local arrays
                written.setdefault(t, []).append(whole(t))
            for a in inst.operands:  # (and reading through any pointer it is given)
                if a.type.kind == "ptr" and not fresh_here(memory.base(a.value)):
                    reads.setdefault(memory.base(a.value), []).append((inst, given(a.value)))
        elif targets:
            what = f"a call to '{callee_name(inst)}', which may write memory," if inst.opcode == "call" \
                else f"an instruction ('{inst.opcode}') writing memory"
            raise NotCheckpointed(inst, f"{what} in a loop checkpointed to keep the gradient within its memory budget "
                                  "(adgen bounds the memory a loop's own stores and copies write, and a call's "
                                  "where it writes only local arrays and through pointer parameters whose lengths "
                                  "`// @size(p=n)` gives)")
        if inst.opcode == "load":
            base = memory.base(inst.operands[0].value)
            if not fresh_here(base):
                access = ranges.access(inst, loop)
                reads.setdefault(base, []).append((inst, given(inst.operands[0].value) if access is None else
                                                   Extent(access.address, access.size, inst)))
    for base, extents in reads.items():
        if base in written:
            for inst, extent in extents:
                if extent is None:
                    raise unbounded(inst, "a load, from memory the loop writes, whose addresses")
                written[base].append(extent)
    return Extents(written, {b: r for b, r in reads.items() if b not in written})


class _Bounded(Ranges):
    """The ranges of accesses, without those whose bounds are true and of no use to a snapshot:
    a mask of what nothing bounds (`i & 0xffffffff`, i unbounded), or indices known at build
    time to span more than `_WIDEST` (`(i + 2) % 5` as LLVM writes it for i < 5, `(i + select(i >
    2, 2^32 - 3, 2)) & (2^32 - 1)`, bounded by intervals that do not see the select's condition);
    nor those whose bounds would not hold: an extension or a quotient of what is known at build
    time to reach below zero (`zext(i + select(i > 2, -3, 2))`, for the same reason), where the
    snapshot's run-time check would stop the program."""

    def access(self, inst: Instruction, loop: Loop | None):
        found = super().access(inst, loop)
        return None if found is None or _loose(found.address) else found

    def value(self, op, loop: Loop, depth: int = 0) -> Node | None:
        found = super().value(op, loop, depth)
        return None if found is None or _loose(found) else found


_WIDEST = 1 << 26  # elements an index known at build time may span


def _loose(node: Node) -> bool:
    if node.kind == "mask" and not node.args:
        return True
    if node.kind in ("zext", "div", "rem"):  # valid where the operand is not negative: known not to be
        known = known_values(node.args[0])
        if known is not None and min(known) < 0:
            return True
    if node.kind == "gep":
        for index in node.args[1:]:
            known = known_values(index)
            if known is not None and max(known) - min(known) > _WIDEST:
                return True
    return any(_loose(a) for a in node.args)


class _Lengths:
    """Where an access cannot be bounded: its pointer parameter's length, if `@size` gives it,
    or its local array whole, if its size is fixed."""

    def __init__(self, memory: Memory, cfg: CFG, declared: dict[str, Extent]):
        self.memory, self.cfg, self.declared = memory, cfg, declared

    def given(self, pointer: str) -> Extent | None:
        return self.whole(self.memory.base(pointer))

    def whole(self, base: Base) -> Extent | None:
        if base.kind == "arg":
            return self.declared.get(base.name)
        array = self.cfg.defs.get(base.name) if base.kind == "fresh" else None
        if array is not None and array.opcode == "alloca" and array.source_type is not None and \
                (array.count is None or array.count.value == "1"):
            return Extent(Node("leaf", operand=Operand(PTR, base.name)), array.source_type, None)
        return None


def unbounded(inst: Instruction, what: str) -> NotCheckpointed:
    """The error for an access adgen cannot bound (`what`: "a store whose addresses", ...)."""
    return NotCheckpointed(inst, f"{what} adgen cannot bound over the loop's run, in a loop checkpointed to keep "
                           "the gradient within its memory budget (where it goes through a pointer parameter, "
                           "give its length: `// @size(p=n)`, n a number or an integer parameter)")


def _span(ranges: Ranges, loop: Loop, pointer: Operand, length: Operand, inst: Instruction) -> Extent | None:
    start, count = ranges.value(pointer, loop), ranges.value(length, loop)
    return None if start is None or count is None else Extent(start, count, inst)
