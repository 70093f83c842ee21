"""OpenMP's captured variables passed by value: clang passes every variable a parallel region
shares to its outlined function by address (`fork(loc, n, outlined, &inp, &n, ...)`), the
caller's stack slot, which the outlined function loads from. Where the slot only holds the
value for the region (the caller stores into it, loads from it, and passes it to forks alone)
and the outlined function only loads from it, the region gets the value instead (a pointer as
it is, an integer widened to i64, as the runtime passes its arguments in pointer-sized slots),
as LLVM's argument promotion would.

Why: reverse mode differentiates an outlined function as a function of its own (its derivative
then forks as the primal does, specs/openmp.md), and what it may recompute in its reverse sweep
depends on what its caller says of its arguments (`RevPattern.overwritten`): an array reached
through a slot is memory the caller may write after the call for all the outlined function
knows, so every load from it would be stored; an array passed as an argument is known not to
be written again where the caller does not."""

from __future__ import annotations

import re

from adgen.ir_ad.ir.edit import lines_by_function, mentions
from adgen.ir_ad.ir.functions import parse_header
from adgen.ir_ad.ir.instructions import parse_instruction, strip_metadata
from adgen.ir_ad.ir.model import Instruction
from adgen.ir_ad.ir.parallel import FORK, names_region, region_call

_PROMOTED = "adgen.omp.capture."  # the caller's loads of a slot before the fork, numbered


def _uses(lines: list[str], name: str) -> list[int]:
    """The lines (by index) naming local `name` whole, debug records left out."""
    return [i for i, line in enumerate(lines) if mentions(line, name) and not line.lstrip().startswith("#dbg_")]


def _slot_type(caller: list[str], slot: str, fork_lines: set[int]) -> tuple[str | None, list[tuple[int, str]]]:
    """The type a caller's alloca `slot` holds, where it is used only as the region's slot
    (stores into it, loads of that type, lifetime markers, and the forks), and its stores (line,
    value)."""
    held, stores = None, []
    for i in _uses(caller, slot):
        line = caller[i]
        if i in fork_lines:
            continue
        inst = parse_instruction(strip_metadata(line)[0])
        if inst.result == slot and inst.opcode == "alloca":
            held = inst.source_type.text if inst.count is None else None
            continue
        if inst.opcode == "store" and inst.operands[1].value == slot and inst.operands[0].value != slot:
            stores.append((i, inst.operands[0].value))
            continue
        if inst.opcode == "load" and inst.operands[0].value == slot:
            stores.append((i, None))  # (read: the slot stays)
            continue
        if inst.opcode == "call" and inst.callee.startswith("@llvm.lifetime."):
            continue
        return None, []
    return held, stores


def _stored_before(lines: list[str], stores: list[tuple[int, str]], fork: int) -> str | None:
    """The value a slot holds at the fork on line `fork`, where its one store is in the entry
    block or earlier in the fork's own block (so that the value is at hand there), else None."""
    if len(stores) != 1 or stores[0][1] is None:
        return None
    at, value = stores[0]
    entry_end = next((i for i in range(1, len(lines)) if _is_label(lines[i])), len(lines))
    block_start = max((i for i in range(at, fork) if _is_label(lines[i])), default=None)
    return value if at < fork and (at < entry_end or block_start is None) else None


def _is_label(line: str) -> bool:
    return bool(line) and not line.startswith(" ") and line.rstrip().split(";")[0].rstrip().endswith(":")


def _loaded_type(body: list[str], param: str) -> str | None:
    """The type the outlined function loads from parameter `param`, where it does nothing else."""
    types = set()
    for i in _uses(body, param):
        if i == 0:
            continue  # the define line
        inst = parse_instruction(strip_metadata(body[i])[0])
        if inst.opcode != "load" or inst.operands[0].value != param:
            return None
        types.add(inst.type.text)
    return types.pop() if len(types) == 1 else None


def promote_captures(text: str) -> str:
    """The module's text with the captured variables of its parallel regions passed by value
    where that changes nothing (see the module's docstring): at their forks, or at the calls of
    the regions serialization made (ir/parallel.py; after LLVM's optimization, which leaves
    the slots, their addresses passed to an external function)."""
    promotion = _Promotion(text)
    for outlined, forks in promotion.sites().items():
        if outlined in promotion.functions:
            promotion.promote(outlined, forks)
    return promotion.text()


class _Promotion:
    """The module's functions by lines, and the edits promotion makes of them."""

    def __init__(self, text: str):
        self.source = text
        self.order: list[tuple[str | None, str]] = list(lines_by_function(text))
        self.functions: dict[str, list[str]] = {}
        for fn, line in self.order:
            if fn is not None:
                self.functions.setdefault(fn, []).append(line)
        self.edits: dict[str, dict[int, list[str]]] = {}  # function -> line index -> its lines instead
        self.dead: dict[str, set[str]] = {}  # function -> the slots no call reads any more
        self.kept: dict[str, set[str]] = {}  # ... and those some call still reads
        self.count = 0  # the values loaded before a call, numbered

    def sites(self) -> dict[str, list[tuple[str, int, Instruction]]]:
        """The forks and serialized calls of each outlined function: (caller, line, call)."""
        sites: dict[str, list[tuple[str, int, Instruction]]] = {}
        for fn, body in self.functions.items():
            for i, line in enumerate(body):
                if not line.startswith("  ") or " call " not in line or not names_region(line):
                    continue
                inst = parse_instruction(strip_metadata(line)[0])
                if inst.opcode != "call":
                    continue
                if inst.callee == FORK and len(inst.operands) > 2 and inst.operands[2].value.startswith("@"):
                    sites.setdefault(inst.operands[2].value, []).append((fn, i, inst))
                elif region_call(inst):
                    sites.setdefault(inst.callee, []).append((fn, i, inst))
        return sites

    def promote(self, outlined: str, forks: list[tuple[str, int, Instruction]]) -> None:
        """Promotes what it can of one outlined function's captures, at all its calls."""
        body = self.functions[outlined]
        captures = parse_header(body[0]).params[2:]
        first = {i: 3 if inst.callee == FORK else 2 for _, i, inst in forks}  # where the captures start
        if any(len(inst.operands) != first[i] + len(captures) for _, i, inst in forks):
            return
        promoted: dict[int, str] = {}  # capture index -> the type passed
        values: dict[tuple[int, int], str] = {}  # (site, capture index) -> the value the slot holds, where known
        restrict: set[int] = set()  # captures whose values are the callers' `noalias` (restrict) parameters
        for k, param in enumerate(captures):
            held = _loaded_type(body, param.name) if param.type.kind == "ptr" else None
            if held is None or not (held == "ptr" or re.fullmatch(r"i(8|16|32|64)", held)):
                continue
            found = self._slots(forks, first, k, held)
            if found is None:
                continue
            promoted[k] = held
            noalias = held == "ptr"
            for site, (caller, slot, value) in enumerate(found):
                if value is not None:
                    values[site, k] = value
                    self.dead.setdefault(caller, set()).add(slot)
                else:
                    self.kept.setdefault(caller, set()).add(slot)
                params = {p.name: p for p in parse_header(self.functions[caller][0]).params}
                noalias = noalias and value in params and "noalias" in params[value].attrs
            if noalias:
                restrict.add(k)
        if promoted:
            for site, (caller, i, inst) in enumerate(forks):
                self._call(caller, i, inst, first[i], promoted, {k: v for (s, k), v in values.items() if s == site})
            self._outlined(outlined, captures, promoted, restrict)

    def _slots(self, forks, first: dict[int, int], k: int, held: str) -> list[tuple[str, str, str | None]] | None:
        """Capture `k`'s slot at each call, with the value it holds there where known; None
        where some call's is not a slot of that type."""
        found = []
        for caller, i, inst in forks:
            slot = inst.operands[first[i] + k].value
            lines = self.functions[caller]
            fork_lines = {j for c, j, _ in forks if c == caller}
            slot_type, stores = _slot_type(lines, slot, fork_lines) if slot.startswith("%") else (None, [])
            if slot_type != held:
                return None
            found.append((caller, slot, _stored_before(lines, stores, i)))
        return found

    def _call(self, caller: str, i: int, inst: Instruction, first: int, promoted: dict[int, str],
              values: dict[int, str]) -> None:
        """A fork or call passing the promoted captures' values (widened to i64 where narrower)."""
        line = self.functions[caller][i]
        before, args = [], []
        for k, a in enumerate(inst.operands[first:]):
            if k not in promoted:
                args.append(f"{a.type.text} {a.value}")
                continue
            self.count += 1
            value, wide = f'%"{_PROMOTED}{self.count}"', f'%"{_PROMOTED}{self.count}.wide"'
            if k in values:
                value = values[k]
            else:
                before.append(f"  {value} = load {promoted[k]}, ptr {a.value}")
            if promoted[k] in ("ptr", "i64"):
                args.append(f"{promoted[k]} {value}")
            else:
                before.append(f"  {wide} = zext {promoted[k]} {value} to i64")
                args.append(f"i64 {wide}")
        head = strip_metadata(line)[0]
        attached = line[len(head):]
        if inst.callee == FORK:
            loc, n, fn_op = inst.operands[:3]
            call = (f"  call void (ptr, i32, ptr, ...) {FORK}({loc.type.text} {loc.value}, {n.type.text} "
                    f"{n.value}, ptr {fn_op.value}" + "".join(", " + a for a in args) + f"){attached}")
        else:
            ids = [f"{a.type.text} {a.value}" for a in inst.operands[:2]]
            call = f"  call void {inst.callee}(" + ", ".join(ids + args) + f"){attached}"
        self.edits.setdefault(caller, {})[i] = before + [call]

    def _outlined(self, outlined: str, captures, promoted: dict[int, str], restrict: set[int]) -> None:
        """The outlined function taking the values: its loads of the slots become the values."""
        body = self.functions[outlined]
        changes: dict[int, list[str]] = {}
        names = {captures[k].name: t for k, t in promoted.items()}
        loaded: dict[str, list[str]] = {}  # promoted pointer parameter -> the values its loads defined
        for j, line in enumerate(body):
            if j == 0:
                continue
            if line.lstrip().startswith("#dbg_") and any(mentions(line, n) for n in names):
                changes[j] = []  # (the variable's location is the slot no more)
                continue
            if not line.startswith("  ") or " = load " not in line:
                continue
            inst = parse_instruction(strip_metadata(line)[0])
            if inst.opcode == "load" and inst.operands[0].value in names:
                p, t = inst.operands[0].value, names[inst.operands[0].value]
                loaded.setdefault(p, []).append(inst.result)
                dbg = re.search(r", !dbg ![0-9]+", line)
                tail = dbg.group(0) if dbg else ""
                changes[j] = [f"  {inst.result} = getelementptr i8, ptr {p}, i64 0{tail}" if t == "ptr" else
                              f"  {inst.result} = or i64 {p}, 0{tail}" if t == "i64" else
                              f"  {inst.result} = trunc i64 {p} to {t}{tail}"]
        parsed = [parse_instruction(strip_metadata(line)[0]) for line in body[1:]
                  if line.startswith("  ") and not line.lstrip().startswith("#dbg_")]
        read_only = {k for k, t in promoted.items() if t == "ptr" and
                     _only_read(parsed, loaded.get(captures[k].name, []) + [captures[k].name])}
        changes[0] = [_promoted_header(body[0], [c.name for c in captures], promoted, restrict, read_only)]
        self.edits.setdefault(outlined, {}).update(changes)

    def text(self) -> str:
        """The module's text, edited, the slots no call reads any more gone."""
        for caller, slots in self.dead.items():
            lines = self.functions[caller]
            for slot in slots - self.kept.get(caller, set()):
                for j in _uses(lines, slot) + [j for j, line in enumerate(lines)
                                               if line.lstrip().startswith("#dbg_") and mentions(line, slot)]:
                    self.edits.setdefault(caller, {}).setdefault(j, [])
        if not self.edits:
            return self.source
        out: list[str] = []
        seen: dict[str, int] = {}
        for fn, line in self.order:
            if fn is None:
                out.append(line)
                continue
            i = seen.get(fn, 0)
            seen[fn] = i + 1
            replaced = self.edits.get(fn, {}).get(i)
            out.extend([line] if replaced is None else replaced)
        return "\n".join(out)


def _only_read(body: list[Instruction], roots: list[str]) -> bool:
    """Whether memory is only read through pointers `roots` and those computed from them
    (getelementptr, phi, select): loaded from, compared; not stored through nor into, nor passed
    to calls. `body`: the function's instructions."""
    users: dict[str, list[Instruction]] = {}
    for inst in body:
        for name in {o.value for o in inst.operands} | {v.value for v, _ in inst.incoming}:
            users.setdefault(name, []).append(inst)
    derived, work = set(roots), list(roots)
    while work:
        for inst in users.get(work.pop(), ()):
            if inst.opcode in ("getelementptr", "phi", "select", "bitcast"):
                if inst.result not in derived:
                    derived.add(inst.result)
                    work.append(inst.result)
            elif inst.opcode == "load" and inst.operands[0].value in derived:
                continue
            elif inst.opcode in ("icmp", "ptrtoint"):
                continue
            elif inst.opcode == "call" and inst.callee.startswith(("@llvm.lifetime.", "@llvm.prefetch")):
                continue
            else:
                return False  # (a store through it or of it, a call taking it: may write)
    return True


def _promoted_header(line: str, names: list[str], promoted: dict[int, str], restrict: set[int],
                     read_only: set[int]) -> str:
    """The outlined function's `define` line with the promoted parameters' types, and no
    attributes (what clang knew of the slot, `dereferenceable(8)` say, is not true of the value)
    but `noalias` where every caller passes its own `noalias` parameter (C's `restrict`, which
    holds while the region runs), and `readonly` where the region only reads through it."""
    for k, t in promoted.items():
        name = re.escape(names[k])
        typed = ("ptr " + "noalias " * (k in restrict) + "readonly " * (k in read_only)) if t == "ptr" else "i64 "
        line = re.sub(r"ptr(?: [\w.]+(?:\([^)]*\))?)*? " + name + r"(?=[,)])", typed + names[k], line, count=1)
    return line
