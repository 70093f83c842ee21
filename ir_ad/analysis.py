"""Analyses of a function that the reverse sweep relies on: the CFG, dominators, natural
loops, reachability, the memory object each pointer is based on, and which instructions
may write which objects (to decide whether a load can be repeated in the reverse sweep)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .ir import Function, Instruction

PURE = {"fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl",
        "lshr", "ashr", "and", "or", "xor", "trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi",
        "uitofp", "sitofp", "ptrtoint", "inttoptr", "bitcast", "getelementptr", "icmp", "fcmp", "select",
        "extractvalue", "insertvalue", "freeze"}
FRESH_ALLOCATORS = {"malloc", "calloc", "aligned_alloc"}


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
        for b in fn.blocks:
            term = b.instructions[-1]
            self.succs[b.label] = list(dict.fromkeys(term.targets))
            for i, inst in enumerate(b.instructions):
                self.index_in_block[id(inst)] = (b.label, i)
                if inst.result:
                    self.defs[inst.result] = inst
                    self.block_of[inst.result] = b.label
        for b, ss in self.succs.items():
            for s in ss:
                self.preds[s].append(b)
        self.entry = self.blocks[0]

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
    def loop_depth(self) -> dict[str, int]:
        depth = {b: 0 for b in self.blocks}
        for body in self.loops.values():
            for b in body:
                depth[b] += 1
        return depth

    def in_loop(self, block: str) -> bool:
        return self.loop_depth.get(block, 0) > 0

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

    def may_follow(self, first: Instruction, later: Instruction) -> bool:
        """Whether `later` can execute after `first` in the same call."""
        b1, i1 = self.index_in_block[id(first)]
        b2, i2 = self.index_in_block[id(later)]
        return (b1 == b2 and i2 > i1) or b2 in self.reachable[b1]


class Memory:
    """Pointer bases and writes, for deciding whether a load may be repeated later."""

    def __init__(self, fn: Function, cfg: CFG, functions: dict[str, Function], attributes: dict[str, str]):
        self.fn, self.cfg, self.functions, self.attributes = fn, cfg, functions, attributes
        self.params = {p.name: p for p in fn.params}
        self._bases: dict[str, Base] = {}
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
            if inst.opcode == "alloca" or (inst.opcode == "call" and inst.callee.lstrip("@") in FRESH_ALLOCATORS):
                result = Base("fresh", value)
            elif inst.opcode == "getelementptr" or inst.opcode in ("bitcast", "addrspacecast", "freeze"):
                result = self.base(inst.operands[0].value, depth + 1)
            elif inst.opcode in ("phi", "select"):
                incoming = [v.value for v, _ in inst.incoming] if inst.opcode == "phi" else \
                    [inst.operands[1].value, inst.operands[2].value]
                self._bases[value] = Base("unknown", value)  # cycles through phis
                bases = {self.base(v, depth + 1) for v in incoming if v not in ("null", "poison", "undef")}
                result = bases.pop() if len(bases) == 1 else Base("unknown", value)
        self._bases[value] = result
        return result

    def may_alias(self, a: Base, b: Base) -> bool:
        if a == b or "unknown" in (a.kind, b.kind):
            return True
        if "fresh" in (a.kind, b.kind):
            return False
        if a.kind == "global" and b.kind == "global":
            return False
        return not any(self.params[x.name].attrs.get("noalias") is not None
                       for x in (a, b) if x.kind == "arg")

    def _written(self, inst: Instruction) -> list[Base]:
        op = inst.opcode
        if op == "store":
            return [self.base(inst.operands[1].value)]
        if op in ("atomicrmw", "cmpxchg"):
            return [self.base(inst.operands[0].value)]
        if op != "call":
            return []
        name = inst.callee.lstrip("@").strip('"')
        if name.startswith(("llvm.memcpy", "llvm.memmove", "llvm.memset")) or name in ("memcpy", "memmove", "memset"):
            return [self.base(inst.operands[0].value)]
        if name.startswith("llvm.") or name in ("free", "malloc", "calloc", "printf", "puts", "fprintf"):
            return []
        target = self.functions.get(inst.callee)
        if target is not None and _reads_only(target, self.attributes):
            return []
        pointers = [self.base(a.value) for a in inst.operands if a.type.kind == "ptr"]
        if target is None or target.declaration:
            return pointers + [Base("unknown", inst.callee)]
        return pointers + [Base("global", "*")]  # a defined callee may write globals too

    def unchanged_after(self, load: Instruction) -> bool:
        """Whether the memory `load` reads is never written after it in this call."""
        base = self.base(load.operands[0].value)
        for inst, target in self.writes:
            if self.may_alias(base, target) and self.cfg.may_follow(load, inst):
                return False
        return True


def _reads_only(fn: Function, attributes: dict[str, str]) -> bool:
    """From the function attributes LLVM inferred: memory(none) or memory(read...)."""
    import re

    groups = re.findall(r"#(\d+)", fn.text.split("\n", 1)[0].split(")")[-1])
    text = " ".join(attributes.get(g, "") for g in groups)
    m = re.search(r"memory\(([^)]*)\)", text)
    if not m:
        return False
    return "write" not in m.group(1)
