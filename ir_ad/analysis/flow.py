"""Analyses of a function that the reverse sweep relies on: the CFG, dominators, natural
loops, reachability, the memory object each pointer is based on, and which instructions
may write which objects (to decide whether a load can be repeated in the reverse sweep)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from adgen.ir_ad.calls import (ALLOCATE, FREE, allocates, callee_name, kind_by_name, writes_first_argument,
                               written_pointer_arguments)
from adgen.ir_ad.ir import PTR, Function, Instruction, Operand
from adgen.ir_ad.ir.instructions import INTEGER_STEPS
from adgen.ir_ad.shadows import points_nowhere

PURE = {"fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl",
        "lshr", "ashr", "and", "or", "xor", "trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi",
        "uitofp", "sitofp", "ptrtoint", "inttoptr", "bitcast", "getelementptr", "icmp", "fcmp", "select",
        "extractvalue", "insertvalue", "freeze", "extractelement", "insertelement", "shufflevector"}




def addresses_in(defs: dict[str, Instruction], value: Operand) -> set[str]:
    """The pointers whose addresses (`ptrtoint`) an integer is computed from, through integer
    arithmetic, casts, phis and selects: an `inttoptr` of it is one of those pointers moved (an
    address aligned, tagged), whose derivatives are where theirs are."""
    found, seen, work = set(), set(), [value.value]
    while work:
        inst = defs.get(work.pop())
        if inst is None or inst.result in seen or len(seen) > 4096:
            continue
        seen.add(inst.result)
        if inst.opcode == "ptrtoint":
            found.add(inst.operands[0].value)
        elif inst.opcode in INTEGER_STEPS:
            work += [o.value for o in inst.operands if o.value.startswith("%")]
    return found


def returns_fresh(module, fn: Function, seen: frozenset[str] = frozenset()) -> bool:
    """Whether a function of the sources may return memory it allocated (malloc or realloc, or
    from a call to such a function): its callers' pointer gets a shadow even when no argument
    carries a derivative (a constructor, a malloc wrapper)."""
    if fn.declaration or fn.ret.kind != "ptr" or fn.name in seen:
        return False
    defs = {i.result: i for i in fn.instructions() if i.result}
    work = [i.operands[0].value for i in fn.instructions() if i.opcode == "ret" and i.operands]
    visited: set[str] = set()
    while work:
        inst = defs.get(work.pop())
        if inst is None or inst.result in visited:
            continue
        visited.add(inst.result)
        if inst.opcode == "call":
            target = module.functions.get(inst.callee)
            if allocates(module, inst) or (target is not None and returns_fresh(module, target, seen | {fn.name})):
                return True
        elif inst.opcode in ("getelementptr", "bitcast", "addrspacecast", "freeze"):
            work.append(inst.operands[0].value)
        elif inst.opcode == "select":
            work += [inst.operands[1].value, inst.operands[2].value]
        elif inst.opcode == "phi":
            work += [v.value for v, _ in inst.incoming]
    return False


def returned_params(module, fn: Function, seen: frozenset[str] = frozenset()) -> frozenset[int] | None:
    """The parameters of a function of the sources whose memory the pointer it returns may point
    into: itself, an address computed from one, or a pointer loaded from memory one reaches (a
    node of the `std::map` its object holds: libstdc++'s `map::at`, not inlined, returns a
    pointer into its object, never into the key it compares). None where it may be any other
    (a global, a local, a call it cannot follow, or a pointer it stores: one argument's stored
    into another's memory would be returned as the other's). A call's result points into
    memory with derivatives only where one of these arguments has them (activity.py)."""
    if fn.declaration or fn.ret.kind != "ptr" or fn.name in seen:
        return None
    if any(i.opcode == "store" and i.operands[0].type.kind == "ptr" for i in fn.instructions()):
        return None
    params = {p.name: k for k, p in enumerate(fn.params)}
    defs = {i.result: i for i in fn.instructions() if i.result}
    work = [i.operands[0].value for i in fn.instructions() if i.opcode == "ret" and i.operands]
    found: set[int] = set()
    visited: set[str] = set()
    while work:
        value = work.pop()
        if value in visited or value in ("null", "undef", "poison"):
            continue
        visited.add(value)
        if value in params:
            found.add(params[value])
            continue
        inst = defs.get(value)
        if inst is None:  # a global, a constant expression
            return None
        if inst.opcode in ("getelementptr", "bitcast", "addrspacecast", "freeze", "load"):
            work.append(inst.operands[0].value)
        elif inst.opcode == "select":
            work += [inst.operands[1].value, inst.operands[2].value]
        elif inst.opcode == "phi":
            work += [v.value for v, _ in inst.incoming]
        elif inst.opcode == "call" and allocates(module, inst):
            continue  # (fresh memory: returns_fresh's)
        elif inst.opcode == "call" and inst.callee in module.functions:
            inner = returned_params(module, module.functions[inst.callee], seen | {fn.name})
            if inner is None:
                return None
            work += [inst.operands[k].value for k in inner if k < len(inst.operands)]
        else:
            return None
    return frozenset(found)


@dataclass(frozen=True)
class Base:
    """What a pointer points into: an argument, a fresh allocation, a global, or unknown."""

    kind: str  # "arg", "fresh", "global", "unknown"
    name: str  # the argument, alloca/malloc result or global


class CFG:
    def __init__(self, fn: Function):
        self.fn = fn
        self.blocks = [b.label for b in fn.blocks]
        self.block_of: dict[str, str] = {}
        self.index_in_block: dict[int, tuple[str, int]] = {}
        self.defs: dict[str, Instruction] = {}
        self.succs: dict[str, list[str]] = {}
        self.preds: dict[str, list[str]] = {b: [] for b in self.blocks}
        self.edges: dict[tuple[str, str], int] = {}  # (from, to): how many of from's branches go there (a switch's cases may share one)
        for b in fn.blocks:
            term = b.instructions[-1]
            self.succs[b.label] = list(dict.fromkeys(term.targets))
            for t in term.targets:
                self.edges[b.label, t] = self.edges.get((b.label, t), 0) + 1
            for i, inst in enumerate(b.instructions):
                self.index_in_block[id(inst)] = (b.label, i)
                if inst.result:
                    self.defs[inst.result] = inst
                    self.block_of[inst.result] = b.label
        for b, ss in self.succs.items():
            for s in ss:
                self.preds[s].append(b)
        self.entry = self.blocks[0]
        self._within: dict[tuple[str, int], set[str]] = {}  # see may_follow_in_iteration

    @cached_property
    def doomed(self) -> frozenset[str]:
        """The blocks from which no path returns: they end in a call that never returns (a
        panic, an abort). What they compute reaches no result, so it carries no derivatives:
        their code runs as it is, and the program stops there."""
        returning = {b.label for b in self.fn.blocks if b.instructions[-1].opcode == "ret"}
        work = list(returning)
        while work:
            for p in self.preds[work.pop()]:
                if p not in returning:
                    returning.add(p)
                    work.append(p)
        return frozenset(b for b in self.blocks if b not in returning)

    @cached_property
    def order(self) -> list[str]:
        """Reverse postorder from the entry."""
        seen, post = set(), []

        def visit(b):
            stack = [(b, iter(self.succs[b]))]
            seen.add(b)
            while stack:
                node, it = stack[-1]
                nxt = next((s for s in it if s not in seen), None)
                if nxt is None:
                    post.append(node)
                    stack.pop()
                else:
                    seen.add(nxt)
                    stack.append((nxt, iter(self.succs[nxt])))

        visit(self.entry)
        return post[::-1]

    @cached_property
    def idom(self) -> dict[str, str]:
        """Immediate dominators (Cooper, Harvey and Kennedy's iterative algorithm)."""
        order = self.order
        index = {b: i for i, b in enumerate(order)}
        idom = {self.entry: self.entry}
        changed = True
        while changed:
            changed = False
            for b in order[1:]:
                done = [p for p in self.preds[b] if p in idom]
                if not done:
                    continue
                new = done[0]
                for p in done[1:]:
                    a, c = p, new
                    while a != c:
                        while index[a] > index[c]:
                            a = idom[a]
                        while index[c] > index[a]:
                            c = idom[c]
                    new = a
                if idom.get(b) != new:
                    idom[b] = new
                    changed = True
        return idom

    def dominates(self, a: str, b: str) -> bool:
        while True:
            if a == b:
                return True
            parent = self.idom.get(b)
            if parent is None or parent == b:
                return False
            b = parent

    @cached_property
    def loops(self) -> dict[str, set[str]]:
        """Natural loops: header -> the blocks of the loop (all back edges to it merged)."""
        loops: dict[str, set[str]] = {}
        for tail in self.order:
            for head in self.succs[tail]:
                if self.dominates(head, tail):
                    body = loops.setdefault(head, {head})
                    work = [tail]
                    while work:
                        b = work.pop()
                        if b not in body:
                            body.add(b)
                            work.extend(self.preds[b])
        return loops

    @cached_property
    def reachable(self) -> dict[str, set[str]]:
        """Blocks reachable from each block by one or more edges."""
        out: dict[str, set[str]] = {}
        for b in self.blocks:
            seen, work = set(), list(self.succs[b])
            while work:
                s = work.pop()
                if s not in seen:
                    seen.add(s)
                    work.extend(self.succs[s])
            out[b] = seen
        return out

    def block_of_inst(self, inst: Instruction) -> str:
        return self.index_in_block[id(inst)][0]

    def may_follow(self, first: Instruction, later: Instruction) -> bool:
        """Whether `later` can execute after `first` in the same call."""
        b1, i1 = self.index_in_block[id(first)]
        b2, i2 = self.index_in_block[id(later)]
        return (b1 == b2 and i2 > i1) or b2 in self.reachable[b1]

    def may_follow_in_iteration(self, first: Instruction, later: Instruction, around) -> bool:
        """Whether `later` can execute after `first` without going back to the header of the
        loop `around` (an analysis.loops.Loop, or None) or of a loop around it: in the same
        iteration of each of them."""
        b1, i1 = self.index_in_block[id(first)]
        b2, i2 = self.index_in_block[id(later)]
        if b1 == b2 and i1 < i2:
            return True
        key = (b1, id(around))
        if key not in self._within:
            back = {(latch, loop.header) for loop in (around.ancestors() if around else []) for latch in loop.latches}
            seen, work = set(), [s for s in self.succs[b1] if (b1, s) not in back]
            while work:
                b = work.pop()
                if b not in seen:
                    seen.add(b)
                    work += [s for s in self.succs[b] if (b, s) not in back]
            self._within[key] = seen
        return b2 in self._within[key]


class Memory:
    """Pointer bases and writes, for deciding whether a load may be repeated later.

    `overwritten` names the pointer arguments whose memory the caller may write after this call
    returns, and `later_writes` says whether it may write anything at all (globals, memory
    reached through loaded pointers): a load from such memory cannot be repeated in the reverse
    sweep, which runs after the caller's writes."""

    def __init__(self, fn: Function, cfg: CFG, module, overwritten: frozenset[str] = frozenset(),
                 later_writes: bool = False):
        self.fn, self.cfg, self.module = fn, cfg, module
        self.functions = module.functions
        self.overwritten, self.later_writes = overwritten, later_writes
        self.params = {p.name: p for p in fn.params}
        self._bases: dict[str, Base] = {}
        self._escaping: dict[str, bool] = {}
        self._allocated: dict[str, set[str] | None] = {}
        self._users: dict[str, list[Instruction]] = {}  # value -> the instructions using it
        for inst in fn.instructions():
            for name in {o.value for o in inst.operands} | {v.value for v, _ in inst.incoming}:
                self._users.setdefault(name, []).append(inst)
        self.writes: list[tuple[Instruction, Base]] = []
        for inst in fn.instructions():
            for target in self._written(inst):
                self.writes.append((inst, target))

    def base(self, value: str, depth: int = 0) -> Base:
        if value in self._bases:
            return self._bases[value]
        result = Base("unknown", value)
        if value in self.params:
            result = Base("arg", value)
        elif value.startswith("@"):
            result = Base("global", value)
        elif depth < 64 and value in self.cfg.defs:
            inst = self.cfg.defs[value]
            if inst.opcode == "alloca" or (inst.opcode == "call" and
                                           kind_by_name(self.module, callee_name(inst)) == ALLOCATE):
                result = Base("fresh", value)
            elif inst.opcode == "getelementptr" or inst.opcode in ("bitcast", "addrspacecast", "freeze"):
                result = self.base(inst.operands[0].value, depth + 1)
            elif inst.opcode in ("phi", "select"):
                incoming = [v for v, _ in inst.incoming] if inst.opcode == "phi" else inst.operands[1:]
                pending = Base("unknown", value)
                self._bases[value] = pending  # cycles through phis: a pointer stepping from its own value
                bases = {self.base(v.value, depth + 1) for v in incoming if not points_nowhere(v, self.cfg.defs)}
                bases.discard(pending)
                result = bases.pop() if len(bases) == 1 else pending
                if result != pending:  # (what the cycle left pending is this base too)
                    for k, v in list(self._bases.items()):
                        if v == pending:
                            self._bases[k] = result
        self._bases[value] = result
        return result

    def may_alias(self, a: Base, b: Base) -> bool:
        if a == b:
            return True
        if "unknown" in (a.kind, b.kind):
            unknown, other = (a, b) if a.kind == "unknown" else (b, a)
            allocated = self.allocated_roots(unknown.name)
            if allocated is not None:  # (one of several allocations: a vector's buffer, made on two paths)
                if other.kind == "unknown":
                    theirs = self.allocated_roots(other.name)
                    return theirs is None or bool(allocated & theirs)
                return other.kind == "fresh" and other.name in allocated
            if other.kind == "fresh" and not self.escapes(other.name):  # (a local no pointer in memory reaches)
                return other.name in self.roots(unknown.name)
            return True
        if "fresh" in (a.kind, b.kind):
            return False
        if a.kind == "global" and b.kind == "global":
            return "*" in (a.name, b.name)  # "*": whatever globals a callee writes
        return not any(self.params[x.name].attrs.get("noalias") is not None
                       for x in (a, b) if x.kind == "arg")

    def escapes(self, fresh: str) -> bool:
        """Whether the address of memory this function allocated (an alloca, a malloc) may reach
        a pointer it does not compute from that address itself: stored into memory, returned,
        made an integer, or passed to a call that may keep it (not `captures(none)`). A loaded
        pointer, or one a call returns, then cannot point into memory that does not escape."""
        if fresh not in self._escaping:
            self._escaping[fresh] = self._escapes(fresh)
        return self._escaping[fresh]

    def _escapes(self, fresh: str) -> bool:
        seen, work = {fresh}, [fresh]
        while work:
            value = work.pop()
            for user in self._users.get(value, ()):
                op = user.opcode
                if op in ("getelementptr", "bitcast", "addrspacecast", "freeze", "phi", "select") and \
                        user.type.kind == "ptr":
                    if user.result not in seen:
                        seen.add(user.result)
                        work.append(user.result)
                elif op in ("load", "icmp") or (op == "store" and user.operands[0].value != value):
                    continue
                elif op == "call" and not self._call_keeps(user, value):
                    continue
                elif op == "ptrtoint" and self._only_differences(user.result):
                    continue  # (a size, `end - begin`)
                else:
                    return True
        return False

    def _only_differences(self, integer: str) -> bool:
        """Whether a pointer made an integer is only subtracted from (or subtracts) another, in a
        function that makes no integer a pointer: a size or a distance, not an address kept."""
        if self._makes_pointers_of_integers:
            return False
        seen, work = {integer}, [integer]
        while work:  # (through phis of integers: SROA's vector ends)
            for u in self._users.get(work.pop(), ()):
                if u.opcode == "phi" and u.result not in seen:
                    seen.add(u.result)
                    work.append(u.result)
                elif u.opcode not in ("sub", "phi"):
                    return False
        return True

    @cached_property
    def _makes_pointers_of_integers(self) -> bool:
        return any(i.opcode == "inttoptr" for i in self.fn.instructions())

    def _call_keeps(self, call: Instruction, value: str) -> bool:
        """Whether a call may keep a pointer it is passed as `value` (beyond the call): not an
        intrinsic, nor `free` (operator delete)."""
        if call.callee.lstrip("@").startswith("llvm.") or kind_by_name(self.module, callee_name(call)) == FREE:
            return False
        target = self.functions.get(call.callee)
        for k, (arg, attrs) in enumerate(call.call_args):
            if arg.value != value:
                continue
            declared = target.params[k].attrs if target is not None and k < len(target.params) else {}
            if not any(a.get("captures") == "none" or "nocapture" in a for a in (attrs, declared)):
                return True
        return False

    def allocated_roots(self, value: str) -> set[str] | None:
        """The allocations (allocas, malloc's) a pointer is computed from, where it is computed
        from nothing else (but null): it points into one of them, so into no argument's memory,
        no global and no other allocation. None where any of its roots is something else."""
        if value not in self._allocated:
            found = {r for r in self.roots(value) if not points_nowhere(Operand(PTR, r), self.cfg.defs)}
            self._allocated[value] = found if found and all(self.base(r).kind == "fresh" for r in found) else None
        return self._allocated[value]

    def roots(self, value: str) -> set[str]:
        """The values a pointer is computed from through getelementptr, casts, phis and selects."""
        seen, work, roots = {value}, [value], set()
        while work:
            v = work.pop()
            inst = self.cfg.defs.get(v)
            if inst is None or inst.opcode not in ("getelementptr", "bitcast", "addrspacecast", "freeze", "phi",
                                                   "select"):
                roots.add(v)
                continue
            nexts = [x.value for x, _ in inst.incoming] if inst.opcode == "phi" else \
                [inst.operands[1].value, inst.operands[2].value] if inst.opcode == "select" else [inst.operands[0].value]
            for n in nexts:
                if n not in seen:
                    seen.add(n)
                    work.append(n)
        return roots

    def types_may_alias(self, a: Instruction, b: Instruction) -> bool:
        """C's type rules (clang's TBAA tags): a double and an int never overlap."""
        ta, tb = self.module.tbaa_types(a.tbaa), self.module.tbaa_types(b.tbaa)
        return not ta or not tb or ta[0] in tb or tb[0] in ta

    def written_by(self, inst: Instruction) -> list[Base]:
        """The bases `inst` may write through (a call's: through its pointer arguments, and
        "unknown" or every global where the callee may write anything)."""
        return self._written(inst)

    def _written(self, inst: Instruction) -> list[Base]:
        op = inst.opcode
        if op == "store":
            return [self.base(inst.operands[1].value)]
        if op in ("atomicrmw", "cmpxchg"):
            return [self.base(inst.operands[0].value)]
        if op != "call" or self.module.noreturn(inst.callee):  # (after a call that does not return, no
            return []  # reverse sweep runs: a panic's, say, writes nothing it reads)
        first = writes_first_argument(self.module, inst)  # (free, realloc: the memory is gone or moved)
        if first is not None:
            return [self.base(inst.operands[0].value)] if first else []
        target = self.functions.get(inst.callee)
        if target is not None and _reads_only(self.module, target):
            return []
        if target is None or target.declaration:
            pointers = [self.base(a.value) for a in inst.operands if a.type.kind == "ptr"]
            written = written_pointer_arguments(inst)  # (OpenMP's bounds, MPI's calls)
            if written is not None:
                return [self.base(a.value) for a in written]
            return pointers + [Base("unknown", inst.callee)]
        pointers = [self.base(a.value) for a, p in zip(inst.operands, target.params)  # (LLVM's readonly: not through it)
                    if a.type.kind == "ptr" and "readonly" not in p.attrs and "readnone" not in p.attrs]
        if _writes_arguments_only(self.module, target):
            return pointers
        return pointers + [Base("global", "*")]  # a defined callee may write globals too

    def unchanged_after(self, load: Instruction, ignored: set[int] = frozenset()) -> bool:
        """Whether the memory `load` reads (or a store writes) holds the same value when the
        reverse sweep runs: no write in this call after it (but those in `ignored`, which the
        reverse sweep undoes or performs itself), nor in the caller after this call."""
        base = self.base(_address(load))
        if (base.kind == "arg" and base.name in self.overwritten) or \
                (base.kind in ("global", "unknown") and self.later_writes):
            return False
        for inst, target in self.writes:
            if id(inst) in ignored or not self.cfg.may_follow(load, inst) or not self.may_alias(base, target):
                continue
            if inst.opcode == "store" and not self.types_may_alias(load, inst):
                continue
            return False
        return True

    def first_accesses(self, active) -> set[int]:
        """The stores (and `memset`s) of values carrying no derivative (`active`: whether a value
        does), by id, into memory this function allocated (an alloca, a malloc) and nothing
        outside it can reach (it does not escape), before anything but such stores may have read
        or written it: in the reverse sweep, nothing after their adjoints reads that memory's
        shadow again, so those adjoints need not clear it (a vector's zeros, `std::fill` of a
        buffer just made)."""
        writes: dict[Base, list[Instruction]] = {}
        for inst in self.fn.instructions():
            if (inst.opcode == "store" and not active(inst.operands[0].value)) or \
                    (inst.opcode == "call" and callee_name(inst).startswith("llvm.memset")):
                base = self.base(inst.operands[0 if inst.opcode == "call" else 1].value)
                if base.kind == "fresh" and not self.escapes(base.name):
                    writes.setdefault(base, []).append(inst)
        found: set[int] = set()
        for base, candidates in writes.items():
            touching = [inst for inst in self.fn.instructions() if inst.result != base.name and self._touches(inst, base)]
            ok = {id(w) for w in candidates}
            while True:  # (the greatest set whose writes only such writes may precede)
                kept = {id(w) for w in candidates if id(w) in ok and
                        not any(x is not w and id(x) not in ok and self.cfg.may_follow(x, w) for x in touching)}
                if kept == ok:
                    break
                ok = kept
            found |= ok
        return found

    def _touches(self, inst: Instruction, base: Base) -> bool:
        """Whether an instruction may read or write memory of `base` (a call: through a pointer
        argument; not a lifetime marker)."""
        if inst.opcode in ("load", "store"):
            return self.may_alias(self.base(_address(inst)), base)
        if inst.opcode in ("atomicrmw", "cmpxchg"):
            return self.may_alias(self.base(inst.operands[0].value), base)
        if inst.opcode in ("call", "invoke") and not callee_name(inst).startswith("llvm.lifetime."):
            return any(o.type.kind == "ptr" and self.may_alias(self.base(o.value), base) for o in inst.operands)
        return False

    def clobbering(self, load: Instruction, among: set[int]) -> list[Instruction]:
        """The writes in `among` (by id) that may overwrite what `load` read (or a store
        wrote), after it."""
        base = self.base(_address(load))
        return [inst for inst, target in self.writes
                if id(inst) in among and self.cfg.may_follow(load, inst) and self.may_alias(base, target)
                and (inst.opcode != "store" or self.types_may_alias(load, inst))]

    def written_after(self, call: Instruction, ignored: set[int] = frozenset()) -> tuple[list[Base], bool]:
        """What this call's caller may write after `call`: the bases written, and whether anything
        at all is (for the callee's `Memory`)."""
        found = [t for inst, t in self.writes if id(inst) not in ignored and self.cfg.may_follow(call, inst)]
        return found, bool(found) or self.later_writes

    def arg_overwritten(self, value: str, after: list[Base]) -> bool:
        """Whether memory a pointer points into may be written after a call (see written_after)."""
        base = self.base(value)
        if base.kind == "arg" and base.name in self.overwritten:
            return True
        if base.kind in ("global", "unknown") and self.later_writes:
            return True
        return any(self.may_alias(base, t) for t in after)


def _address(access: Instruction) -> str:
    """The pointer a load reads or a store writes through."""
    return access.operands[1 if access.opcode == "store" else 0].value


def _writes_arguments_only(module, fn: Function) -> bool:
    """From the function attributes LLVM inferred: memory(argmem: ...), writing no global; else
    from its writes, which are all through its arguments or into memory of its own (an OpenMP
    region's outlined function, whose calls of the runtime LLVM cannot see through)."""
    effects = module.memory_effects(fn)
    if effects is not None and all(part.strip().startswith("argmem:") for part in effects.split(",")
                                   if "write" in part):
        return True
    known = module.__dict__.setdefault("_writes_arguments_only", {})  # (memoized per module)
    if fn.name not in known:
        known[fn.name] = False  # (while it is asked: a recursive call writes anything)
        memory = Memory(fn, CFG(fn), module)
        known[fn.name] = all(base.kind in ("arg", "fresh") for _, base in memory.writes)
    return known[fn.name]



def _reads_only(module, fn: Function) -> bool:
    """From the function attributes LLVM inferred: memory(none) or memory(read...)."""
    effects = module.memory_effects(fn)
    return effects is not None and "write" not in effects


def unshadowed_store(fn: Function, module, pointer: str) -> str:
    """What a store of a value carrying derivatives into memory without them is, in words: where
    that memory comes from, as the pointer's base says (a parameter, a global, or else)."""
    base = Memory(fn, CFG(fn), module).base(pointer)
    if base.kind == "arg":
        k = next(i for i, p in enumerate(fn.params) if p.name == base.name) + 1
        return (f"a store of a value carrying derivatives through parameter {k}, a pointer without a shadow (a "
                "'const' argument, or a pointer made from one: give that argument a shadow, dup)")
    if base.kind == "global":
        name = base.name[1:].strip('"')
        return f"a store of a value carrying derivatives to the global variable '{name}' (a global has no shadow)"
    return "a store of a value carrying derivatives to memory adgen keeps no derivatives of (a global variable, say)"
