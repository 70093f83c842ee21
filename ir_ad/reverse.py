"""Reverse mode: for a function and a pattern of which arguments carry derivatives, two
functions sharing a tape (see templates/runtime.ll.j2):

- the augmented forward sweep (`aug`) runs the primal code, computes the shadows of
  pointers, allocates shadow memory, and pushes on the tape what the reverse sweep needs and
  cannot recompute;
- the reverse sweep (`rev`) walks the CFG backwards, block by block, accumulating adjoints:
  `<N x T>` vectors (N seeds at once) kept in slots that the optimizer turns into registers.

Values the reverse sweep needs are, in order of preference: arguments and constants; cheap
pure instructions and loads from memory nothing overwrites later, recomputed where needed;
values computed once per call (outside every loop), stored in a frame on the tape; and the
rest, pushed at the end of each block whose reverse needs them and popped at its start. A
block with several predecessors pushes which one it came from, so any control flow, loops
whose trip count is known or not, can be walked back. Calls to functions of the sources are
differentiated into their own aug/rev pair on the same tape; `free` moves to the reverse
sweep, and stack arrays live on the heap until the reverse sweep is done with them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .analysis import PURE, CFG, Memory
from .builder import Builder, Declarations, V, bare, local, prime
from .diagnose import Unsupported
from .forward import (ALLOCATORS, IGNORED_INTRINSICS, INACTIVE_CALLS, INTERLEAVED, LANES, MIXED_POINTER, ShadowTypes,
                      callee_name)
from .ir import I64, PTR, Function, Instruction, Module, Operand, Type, float_type, struct, vector
from .rules import rule_for

RECOMPUTE_LIMIT = 12  # instructions at most to recompute one value in the reverse sweep
# Intrinsics cheap enough to recompute rather than keep (transcendental functions are kept).
CHEAP_CALLS = re.compile(r"@llvm\.(fmuladd|fma|fabs|copysign|minnum|maxnum|minimum|maximum|minimumnum|maximumnum|"
                         r"floor|ceil|trunc|round|rint|nearbyint|roundeven|smax|smin|umax|umin|abs)\.")
VOID = Type("void", "void")
I8 = Type("i8", "int", 8)
# What the tape and adjoint helpers of templates/runtime.ll.j2 call.
RUNTIME_DECLARATIONS = [
    ("@realloc", PTR, [PTR, I64]), ("@abort", VOID, []), ("@malloc", PTR, [I64]), ("@free", VOID, [PTR]),
    ("@llvm.umax.i64", I64, [I64, I64]), ("@llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, Type("i1", "int", 1)]),
    ("@llvm.memset.p0.i64", VOID, [PTR, I8, I64, Type("i1", "int", 1)]),
]


@dataclass(frozen=True)
class RevPattern:
    function: str
    active: tuple[bool, ...]  # per argument: an active float, or a pointer with a shadow
    ret_active: bool
    width: int
    kind: str  # LANES or INTERLEAVED
    memtypes: tuple[str, ...]  # per pointer argument: "double"/"float" when its memory holds only that


@dataclass
class RevDerived:
    aug: str
    rev: str
    pattern: RevPattern
    aug_ret: Type
    rev_ret: Type
    scalars: list[int]  # the active float arguments, whose gradients `rev` returns in order


class ReverseMode:
    def __init__(self, module: Module, decls: Declarations):
        self.module, self.decls = module, decls
        self.memo: dict[RevPattern, RevDerived] = {}
        self.definitions: list[str] = []
        from adgen.frontend.render import render_text

        self.runtime = render_text("runtime.ll.j2")
        decls.known |= set(re.findall(r'^define internal \S+ (@"[^"]+")', self.runtime, re.M))

    def runtime_text(self) -> str:
        """The tape and adjoint helpers, with the declarations they need."""
        for name, ret, params in RUNTIME_DECLARATIONS:
            self.decls.need(name, ret, params)
        return self.runtime

    def derive(self, pattern: RevPattern) -> RevDerived:
        if pattern in self.memo:
            return self.memo[pattern]
        fn = self.module.functions[pattern.function]
        n = pattern.width
        scalars = [i for i, (p, on) in enumerate(zip(fn.params, pattern.active)) if on and p.type.kind == "float"]
        grads = [vector(fn.params[i].type, n) for i in scalars]
        mask = "".join("d" if a else "c" for a in pattern.active) + ("a" if pattern.ret_active else "")
        stem = f"{bare(fn.name)}'{mask}.{pattern.kind[0]}{n}"
        derived = RevDerived("@" + local(stem + ".aug")[1:], "@" + local(stem + ".rev")[1:], pattern, fn.ret,
                             struct(*grads) if grads else VOID, scalars)
        self.memo[pattern] = derived
        writer = _Writer(self, fn, derived)
        self.definitions += writer.write()
        return derived


@dataclass
class _Loop:
    """A loop whose reverse is counted: one way in (`pre`), one way back (`latch`). The forward
    sweep counts its iterations and records the count on leaving; the reverse sweep counts
    down instead of recording which way each iteration came, and recomputes the affine
    induction variables from the count."""

    header: str
    pre: str
    latch: str
    body: set[str]
    trip: tuple[Operand, Operand] | None = None  # (bound, start) when the trip count is bound - start

    def counter(self, suffix: str = "") -> str:
        return local(f"cnt'{bare(self.header)}{suffix}")


@dataclass
class _Block:
    """The reverse sweep's code for one primal block, and what it needs from the forward sweep."""

    label: str
    lines: list[str] = field(default_factory=list)
    popped: dict[str, V] = field(default_factory=dict)  # stack value -> its name in the reverse sweep
    order: list[str] = field(default_factory=list)  # the stack values, in the order they are pushed
    made: dict[str, V] = field(default_factory=dict)  # materialized values, reused within the block


class _Writer:
    def __init__(self, mode: ReverseMode, fn: Function, derived: RevDerived):
        self.mode, self.fn, self.derived = mode, fn, derived
        self.pattern = derived.pattern
        self.n, self.kind = self.pattern.width, self.pattern.kind
        self.shadows = ShadowTypes(mode.module, self.n, self.kind)
        self.cfg = CFG(fn)
        self.memory = Memory(fn, self.cfg, mode.module.functions, mode.module.attributes)
        self.params = {p.name: i for i, p in enumerate(fn.params)}
        self.inst: Instruction | None = None
        self.floaty: dict[str, Type] = {}  # values with adjoints -> their float type
        self.pointers: set[str] = set()  # pointer values with shadows
        self.useful: set[str] = set()
        self.frame: dict[str, int] = {}  # value -> slot in the frame
        self.deferred_frees: set[str] = set()  # allocations whose free moves to the reverse sweep
        self.calls: dict[int, RevDerived] = {}
        self._recompute_cost: dict[str, tuple[int, frozenset] | None] = {}
        self.counted: dict[str, _Loop] = {}  # header -> loop
        self.maybe: set[str] = set()  # pointers whose shadow may be missing (see guard)
        self.exits: dict[str, list[_Loop]] = {}  # exit block -> the counted loops it leaves
        self.affine: dict[str, tuple[_Loop, Operand, int]] = {}  # induction variable -> (loop, start, step)
        self._memtypes: dict[str, Type | None] = {}

    def fail(self, what: str) -> Unsupported:
        return Unsupported(self.fn.name, self.inst, what)

    # ================================================================== analysis
    def _find_counted_loops(self) -> None:
        for header, body in self.cfg.loops.items():
            preds = self.cfg.preds[header]
            outside = [p for p in preds if p not in body]
            inside = [p for p in preds if p in body]
            if len(outside) != 1 or len(inside) != 1:
                continue
            loop = self.counted[header] = _Loop(header, outside[0], inside[0], body)
            for b in sorted(body, key=self.cfg.blocks.index):
                for succ in self.cfg.succs[b]:
                    if succ not in body and loop not in self.exits.setdefault(succ, []):
                        self.exits[succ].append(loop)
            for inst in next(blk for blk in self.fn.blocks if blk.label == header).instructions:
                if inst.opcode != "phi" or inst.type.kind != "int" or len(inst.incoming) != 2:
                    continue
                start = next(v for v, frm in inst.incoming if frm == loop.pre)
                step_from = next(v for v, frm in inst.incoming if frm == loop.latch)
                nxt = self.cfg.defs.get(step_from.value)
                if nxt is None or nxt.opcode not in ("add", "sub") or nxt.operands[0].value != inst.result:
                    continue
                try:
                    step = int(nxt.operands[1].value)
                except ValueError:
                    continue
                if start.is_constant or start.value in self.params:
                    self.affine[inst.result] = (loop, start, step if nxt.opcode == "add" else -step)
                    self._find_trip(loop, inst.result, nxt.result, start, step if nxt.opcode == "add" else -step)

    def _find_trip(self, loop: _Loop, iv: str, nxt: str, start: Operand, step: int) -> None:
        """The trip count of a loop whose latch exits on comparing its induction variable with a
        bound fixed before the loop, so the forward sweep can reserve its records at once."""
        term = next(blk for blk in self.fn.blocks if blk.label == loop.latch).instructions[-1]
        cond = self.cfg.defs.get(term.operands[0].value) if term.opcode == "br" and term.operands else None
        if step != 1 or cond is None or cond.opcode != "icmp":
            return
        a, bound = cond.operands
        if a.value not in (iv, nxt):
            a, bound = bound, a
        if a.value not in (iv, nxt):
            return
        if bound.is_local and bound.value not in self.params and self.cfg.block_of.get(bound.value) in loop.body:
            return
        loop.trip = (bound, start)

    def analyze(self) -> None:
        self._find_counted_loops()
        for p, on in zip(self.fn.params, self.pattern.active):
            if on and p.type.kind == "float":
                self.floaty[p.name] = p.type
            elif on and p.type.kind == "ptr":
                self.pointers.add(p.name)
        changed = True
        while changed:
            changed = False
            for inst in self.fn.instructions():
                if not inst.result or inst.result in self.floaty or inst.result in self.pointers:
                    continue
                self.inst = inst
                kind = self._varies(inst)
                if kind == "ptr":
                    self.pointers.add(inst.result)
                    changed = True
                elif kind is not None:
                    self.floaty[inst.result] = kind
                    changed = True
        self._find_maybe()
        self._find_useful()
        for inst in self.fn.instructions():
            self.inst = inst
            if inst.opcode == "call" and any(self._on(a) for a in inst.operands):
                target = self.mode.module.functions.get(inst.callee)
                if target is not None and not target.declaration and not callee_name(inst).startswith("llvm."):
                    self.calls[id(inst)] = self._derive_call(inst, target)
        for inst in self.fn.instructions():
            if inst.opcode == "call" and callee_name(inst) == "free" and inst.operands[0].value in self.pointers:
                base = self.memory.base(inst.operands[0].value)
                if base.kind == "fresh":
                    self.deferred_frees.add(base.name)

    def _on(self, op: Operand) -> bool:
        return op.value in self.floaty or op.value in self.pointers

    def _has_shadow(self, op: Operand) -> bool:
        return op.value in self.pointers or (op.value in self.params and self.pattern.active[self.params[op.value]])

    def _find_maybe(self) -> None:
        """Pointers that may point into memory without a shadow (a select or phi between an
        argument with derivatives and a const one): their shadows are used behind a mask."""
        def shadowless(o: Operand) -> bool:
            return not self._has_shadow(o) and o.value not in ("null", "undef", "poison")

        changed = True
        while changed:
            changed = False
            for inst in self.fn.instructions():
                if inst.result not in self.pointers or inst.result in self.maybe:
                    continue
                if inst.opcode == "phi":
                    found = any(shadowless(v) or v.value in self.maybe for v, _ in inst.incoming)
                elif inst.opcode == "select":
                    found = any(shadowless(o) or o.value in self.maybe for o in inst.operands[1:])
                else:
                    found = inst.opcode in ("getelementptr", "freeze", "bitcast") and \
                        inst.operands[0].value in self.maybe
                if found:
                    self.maybe.add(inst.result)
                    changed = True

    def mask_name(self, value: str) -> str:
        return local(bare(value) + "'mask")

    def mask_root(self, value: str) -> Instruction:
        inst = self.cfg.defs[value]
        while inst.opcode not in ("phi", "select"):
            inst = self.cfg.defs[inst.operands[0].value]
        return inst

    def forward_mask(self, op: Operand) -> str:
        """The mask of a pointer in the forward sweep: an i1 value, or true/false."""
        if op.value in self.maybe:
            return self.mask_name(self.mask_root(op.value).result)
        return "true" if self._has_shadow(op) else "false"

    def mask_value(self, op: Operand, blk: "_Block", b: Builder) -> V:
        """The same in the reverse sweep: recomputed through selects, kept for phis."""
        if op.value not in self.maybe:
            return V(Type("i1", "int", 1), "true" if self._has_shadow(op) else "false")
        root = self.mask_root(op.value)
        key = self.mask_name(root.result)
        if key in blk.made:
            return blk.made[key]
        if root.opcode == "select":
            cond = self.value(root.operands[0], blk, b)
            made = b.select(cond, self.mask_value(root.operands[1], blk, b), self.mask_value(root.operands[2], blk, b))
        elif not self.cfg.in_loop(self.cfg.block_of[root.result]):
            made = self._from_frame(key, Type("i1", "int", 1), b)
        else:
            made = self._pop(key, Type("i1", "int", 1), blk)
        blk.made[key] = made
        return made

    def guard(self, op: Operand, p: V, blk: "_Block", b: Builder) -> V:
        """A shadow address safe to use: the real one, or a scratch sink where there is none."""
        if op.value not in self.maybe:
            return p
        sink = V(PTR, "%\"adgen'sink\"")
        other = sink if p.type.kind != "vector" else b.splat(sink, self.n)
        return b.select(self.mask_value(op, blk, b), p, other)

    def _varies(self, inst: Instruction):
        """None, "ptr" (a pointer with a shadow) or the float type of a value with an adjoint."""
        op, ops, t = inst.opcode, inst.operands, inst.type
        if t.kind == "ptr":
            if op == "getelementptr" and self._on(ops[0]):
                return "ptr"
            if op == "alloca" or (op == "call" and callee_name(inst) in ALLOCATORS):
                return "ptr"
            if op == "phi" and any(v.value in self.pointers for v, _ in inst.incoming):
                return "ptr"
            if op == "select" and (ops[1].value in self.pointers or ops[2].value in self.pointers):
                return "ptr"
            if op == "load" and self._on(ops[0]):
                return "ptr"
            if op == "call" and any(self._on(o) for o in ops) and inst.callee in self.mode.module.functions \
                    and not self.mode.module.functions[inst.callee].declaration:
                raise self.fail(f"a call to '{callee_name(inst)}', which returns a pointer (supported in forward "
                                "mode only)")
            return None
        float_t = t if t.kind == "float" else None
        if op == "load" and self._on(ops[0]):
            if float_t:
                return float_t
            if t.kind == "int" and t.bits in (32, 64):  # float data moved as integer bits
                mt = self.memtype(ops[0].value)
                if mt is not None and mt.bits == t.bits:
                    return mt
            return None
        if op == "phi":
            kinds = {self.floaty[v.value] for v, _ in inst.incoming if v.value in self.floaty}
            return kinds.pop() if kinds else None
        if op == "select":
            kinds = {self.floaty[o.value] for o in ops[1:] if o.value in self.floaty}
            return kinds.pop() if kinds else None
        if op == "bitcast" and ops[0].value in self.floaty:
            return float_t or self.floaty[ops[0].value]
        if op == "freeze" and ops[0].value in self.floaty:
            return self.floaty[ops[0].value]
        if float_t is None:
            if op == "extractvalue" or op == "insertvalue" or (op == "call" and any(self._on(o) for o in ops)
                                                               and self.shadows.carries(t)):
                if any(self._on(o) for o in ops):
                    raise self.fail(f"a value of type '{t.text}' carrying derivatives (aggregates are supported in "
                                    "forward mode only)")
            return None
        if op in ("fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "fpext", "fptrunc"):
            return float_t if any(o.value in self.floaty for o in ops) else None
        if op == "call":
            if not any(self._on(o) for o in ops):
                return None
            target = self.mode.module.functions.get(inst.callee)
            if (target is not None and not target.declaration) or rule_for(inst.callee) is not None:
                return float_t
        return None

    def memtype(self, pointer: str) -> Type | None:
        """The float type of the memory a pointer points into: from the C prototypes (passed down
        through calls) or from how this function loads and stores through the same base."""
        base = self.memory.base(pointer)
        if base.name in self._memtypes:
            return self._memtypes[base.name]
        found = None
        if base.kind == "arg" and self.pattern.memtypes[self.params[base.name]]:
            found = float_type(self.pattern.memtypes[self.params[base.name]])
        else:
            kinds = set()
            for inst in self.fn.instructions():
                if inst.opcode in ("load", "store"):
                    value_t = inst.type if inst.opcode == "load" else inst.operands[0].type
                    ptr = inst.operands[0] if inst.opcode == "load" else inst.operands[1]
                    if value_t.kind == "float" and self.memory.base(ptr.value) == base:
                        kinds.add(value_t.text)
            if len(kinds) == 1:
                found = float_type(kinds.pop())
        self._memtypes[base.name] = found
        return found

    def _find_useful(self) -> None:
        """Values whose adjoint can reach an output: the returned value, stores into shadowed
        memory, and the arguments of differentiated calls; then backwards through operands."""
        work: list[str] = []
        if self.pattern.ret_active:
            for inst in self.fn.instructions():
                if inst.opcode == "ret" and inst.operands and inst.operands[0].value in self.floaty:
                    work.append(inst.operands[0].value)
        for inst in self.fn.instructions():
            if inst.opcode == "store" and inst.operands[1].value in self.pointers:
                work.append(inst.operands[0].value)
            elif inst.opcode == "call" and any(self._on(o) for o in inst.operands):
                target = self.mode.module.functions.get(inst.callee)
                if target is not None and not target.declaration:
                    work += [o.value for o in inst.operands if o.value in self.floaty]
        while work:
            v = work.pop()
            if v in self.useful or v not in self.floaty:
                continue
            self.useful.add(v)
            inst = self.cfg.defs.get(v)
            if inst is None:
                continue
            if inst.opcode == "phi":
                work += [x.value for x, _ in inst.incoming]
            elif inst.opcode != "load":
                work += [o.value for o in inst.operands]

    def _derive_call(self, inst: Instruction, target: Function) -> RevDerived:
        name = callee_name(inst)
        if target.variadic:
            raise self.fail(f"a call to variadic function '{name}'")
        args = inst.operands
        active = tuple(self._on(a) for a in args)
        memtypes = tuple((self.memtype(a.value).text if a.type.kind == "ptr" and self._on(a)
                          and self.memtype(a.value) else "") for a in args)
        ret_active = inst.result is not None and self.active(inst.result)
        return self.mode.derive(RevPattern(target.name, active, ret_active, self.n, self.kind, memtypes))

    def active(self, value: str) -> bool:
        return value in self.floaty and value in self.useful

    # ================================================================== materializing
    def recompute_cost(self, name: str, depth: int = 0) -> int | None:
        """Instructions needed to recompute `name` in the reverse sweep, or None if it must be
        kept instead: phis, calls, loads of memory written later, long chains, and values that
        would need more than one kept (loop-varying) operand."""
        plan = self._plan(name, depth)
        return plan[0] if plan is not None else None

    def _plan(self, name: str, depth: int = 0) -> tuple[int, frozenset] | None:
        """(instructions to recompute, the kept values it reads), or None."""
        if name in self._recompute_cost:
            return self._recompute_cost[name]
        self._recompute_cost[name] = None  # cycles through phis are not recomputable
        inst = self.cfg.defs.get(name)
        plan = None
        if name in self.affine:
            plan = (2, frozenset())
        elif inst is not None and depth < 32 and (
                (inst.opcode in PURE and inst.opcode != "inttoptr")
                or (inst.opcode == "call" and CHEAP_CALLS.match(inst.callee))
                or (inst.opcode == "load" and " atomic " not in inst.text and "volatile" not in inst.text.split()
                    and self.memory.unchanged_after(inst))):
            cost, kept = 1, frozenset()
            for o in inst.operands:
                if o.is_local and o.value not in self.params:
                    sub = self._plan(o.value, depth + 1)
                    if sub is None:
                        kept |= {o.value}
                    else:
                        cost, kept = cost + sub[0], kept | sub[1]
            if cost <= RECOMPUTE_LIMIT and len(kept) <= 1:
                plan = (cost, kept)
        self._recompute_cost[name] = plan
        return plan

    def value(self, op: Operand, blk: _Block, b: Builder) -> V:
        """A primal operand as the reverse sweep of `blk` can use it."""
        if not op.is_local or op.value in self.params:
            return V(op.type, op.value)
        return self._named(op.value, op.type, blk, b)

    def _named(self, name: str, t: Type, blk: _Block, b: Builder) -> V:
        if name in blk.made:
            return blk.made[name]
        inst = self.cfg.defs[name]
        if name in self.affine:
            loop, start, step = self.affine[name]
            if blk.label in loop.body:
                count = b.load(I64, V(PTR, loop.counter("'slot")))
                if t.text != "i64":
                    count = b.cast("trunc", count, t)
                made = b.binary("add", b.binary("mul", count, V(t, str(step))), V(t, start.value))
            elif not self.cfg.in_loop(self.cfg.block_of[name]):
                made = self._from_frame(name, t, b)
            else:
                made = self._pop(name, t, blk)
        elif self.recompute_cost(name) is not None:
            text = inst.text.split("=", 1)[1].strip()
            for o in inst.operands:
                if o.is_local and o.value not in self.params:
                    text = re.sub(re.escape(o.value) + r"(?![-\w$.\"'])", self._named(o.value, o.type, blk, b).ref,
                                  text)
            made = b.value(t, text)
        elif not self.cfg.in_loop(self.cfg.block_of[name]):
            made = self._from_frame(name, t, b)
        else:
            made = self._pop(name, t, blk)
        blk.made[name] = made
        return made

    def _from_frame(self, name: str, t: Type, b: Builder) -> V:
        slot = self.frame.setdefault(name, len(self.frame))
        at = b.gep(I8, V(PTR, "%frame"), V(I64, str(8 * slot)))
        return b.load(t, at, 8)

    def _pop(self, name: str, t: Type, blk: _Block) -> V:
        if name not in blk.popped:
            blk.popped[name] = V(t, local(f"{bare(name)}'pop.{bare(blk.label)}"))
            blk.order.append(name)
        return blk.popped[name]

    def shadow(self, op: Operand, blk: _Block, b: Builder) -> V:
        """The shadow of a pointer operand in the reverse sweep."""
        t = self.shadows.of(PTR)
        if op.value in self.params and self.pattern.active[self.params[op.value]]:
            return V(t, prime(op.value))
        if op.value not in self.pointers:
            raise self.fail("a pointer into memory adgen keeps no derivatives of, where derivatives are needed")
        key = prime(op.value)
        if key in blk.made:
            return blk.made[key]
        inst = self.cfg.defs[op.value]
        if inst.opcode == "getelementptr" and inst.operands[0].value in self.pointers | set(self.params):
            base = self.shadow(inst.operands[0], blk, b)
            made = self._shadow_gep(inst, base, lambda o: self.value(o, blk, b), b)
        elif not self.cfg.in_loop(self.cfg.block_of[op.value]):
            made = self._from_frame(key, t, b)
        else:
            made = self._pop(key, t, blk)
        blk.made[key] = made
        return made

    def _shadow_gep(self, inst: Instruction, base: V, value, b: Builder) -> V:
        if self.kind == INTERLEAVED:
            primal, origin = value(Operand(PTR, inst.result)), value(inst.operands[0])
            offset = b.binary("sub", b.cast("ptrtoint", primal, I64), b.cast("ptrtoint", origin, I64))
            return b.gep(I8, base, b.binary("mul", offset, V(I64, str(self.n))))
        indices = [value(o) for o in inst.operands[1:]]
        return b.gep(inst.source_type, base, *indices)

    # ================================================================== memory through shadows
    def load_shadow(self, b: Builder, t: Type, p: V, align: int | None) -> V:
        if self.kind == INTERLEAVED:
            return b.load(vector(t, self.n), p, align)
        return b.gather([b.load(t, b.extract(p, k), align) for k in range(self.n)])

    def store_shadow(self, b: Builder, v: V, p: V, align: int | None) -> None:
        if self.kind == INTERLEAVED:
            return b.store(v, p, align)
        for k in range(self.n):
            b.store(b.extract(v, k), b.extract(p, k), align)

    # ================================================================== writing
    def write(self) -> list[str]:
        self.analyze()
        rev = self.write_reverse()
        aug = self.write_forward()
        return [aug, rev]

    def slot(self, name: str) -> V:
        return V(PTR, local(bare(name) + "'adj"))

    def adjoint_type(self, name: str) -> Type:
        return vector(self.floaty[name], self.n)

    def empty(self, t: Type) -> V:
        """An adjoint with nothing in it yet: -0.0, so that adding to it folds away (x + -0.0 is x
        exactly, x + 0.0 is not for x = -0.0)."""
        return V(t, f"splat ({t.elems[0].text} -0.000000e+00)")

    def take(self, b: Builder, name: str) -> V:
        """Reads the adjoint of `name` and clears it (its definition is being reversed)."""
        t = self.adjoint_type(name)
        value = b.load(t, self.slot(name))
        b.store(self.empty(t), self.slot(name))
        return value

    def add(self, b: Builder, name: str, value: V) -> None:
        if not self.active(name):
            return
        t = self.adjoint_type(name)
        if value.type != t:
            value = b.cast("fpext" if value.type.elems[0].bits < t.elems[0].bits else "fptrunc", value, t)
        old = b.load(t, self.slot(name))
        b.store(b.fadd(old, value), self.slot(name))

    # ------------------------------------------------------------------ the reverse sweep
    def write_reverse(self) -> str:
        fn, d = self.fn, self.derived
        blocks = self.blocks = {blk.label: _Block(blk.label) for blk in fn.blocks}
        for block in fn.blocks:
            self._reverse_block(block, blocks[block.label])
        params = [f"{p.type.text} {p.name}" for p in fn.params]
        params += [f"{self.shadows.of(p.type).text} {prime(p.name)}" for p, on in zip(fn.params, self.pattern.active)
                   if on and p.type.kind == "ptr"]
        if self.pattern.ret_active:
            params.append(f"{vector(fn.ret, self.n).text} %\"ret'seed\"")
        params.append("ptr %tape")
        out = [f"define internal {d.rev_ret.text} {d.rev}({', '.join(params)}) {{", "entry:"]
        if self.maybe:
            out.append("  %\"adgen'sink\" = alloca [64 x i64], align 64")
        b = Builder(self.mode.decls, out, prefix="e")
        for name in sorted(self.floaty):
            if self.active(name):
                t = self.adjoint_type(name)
                b.emit(f"{self.slot(name).ref} = alloca {t.text}")
                b.store(self.empty(t), self.slot(name))
        for loop in self.counted.values():
            b.emit(f"{loop.counter(chr(39) + 'slot')} = alloca i64")
        if self.frame:
            off = b.load(I64, b.call('@"adgen.tape.pop"', PTR, [V(PTR, "%tape"), V(I64, "8")]))
            b.emit(f"%frame.off = select i1 true, {off}, {off}")
            b.emit('%frame = call ptr @"adgen.tape.at"(ptr %tape, i64 %frame.off)')
        returns = [blk for blk in fn.blocks if blk.instructions[-1].opcode == "ret"]
        if not returns:
            raise self.fail("a function that never returns")
        if len(returns) > 1:
            exit_id = b.load(I64, b.call('@"adgen.tape.pop"', PTR, [V(PTR, "%tape"), V(I64, "8")]))
            cases = " ".join(f"i64 {i}, label %\"seed'{bare(r.label)}\"" for i, r in enumerate(returns))
            b.emit(f"switch {exit_id}, label %\"seed'{bare(returns[0].label)}\" [ {cases} ]")
        else:
            b.emit(f"br label %\"seed'{bare(returns[0].label)}\"")
        for r in returns:
            out.append(f"\"seed'{bare(r.label)}\":")
            ret = r.instructions[-1]
            if self.pattern.ret_active and ret.operands and self.active(ret.operands[0].value):
                self.add(b, ret.operands[0].value, V(vector(fn.ret, self.n), "%\"ret'seed\""))
            b.emit(f"br label %\"rev'{bare(r.label)}\"")
        for block in fn.blocks:
            blk = blocks[block.label]
            out.append(f"\"rev'{bare(block.label)}\":")
            for name, v, at in self._record_slots(b, block, '@"adgen.tape.pop"'):
                b.emit(f"{v.ref} = load {v.type.text}, {at}, align 8")
            for loop in self.exits.get(block.label, []):
                b.store(V(I64, loop.counter(f"'at'{bare(block.label)}'pop")), V(PTR, loop.counter("'slot")))
            out += blk.lines
        out.append("\"rev'exit\":")
        grads = [b.fadd(b.load(self.adjoint_type(fn.params[i].name), self.slot(fn.params[i].name)),
                        V(self.adjoint_type(fn.params[i].name), "zeroinitializer"))  # -0.0 becomes 0.0
                 if self.active(fn.params[i].name) else V(self.adjoint_type(fn.params[i].name), "zeroinitializer")
                 for i in d.scalars]
        if self.frame:
            b.emit('call void @"adgen.tape.cut"(ptr %tape, i64 %frame.off)')
        if grads:
            agg = V(d.rev_ret, "poison")
            for k, g in enumerate(grads):
                agg = b.value(d.rev_ret, f"insertvalue {agg}, {g}, {k}")
            b.emit(f"ret {agg}")
        else:
            b.emit("ret void")
        out.append("}")
        return "\n".join(out)

    def has_derived_calls(self, block) -> bool:
        return any(id(i) in self.calls for i in block.instructions)

    def came_in_record(self, block) -> bool:
        """Which predecessor a block came from is part of its record, unless calls in the block
        push records of their own in between (then it is pushed first, on its own)."""
        return len(self.cfg.preds[block.label]) > 1 and not self.has_derived_calls(block) \
            and block.label not in self.counted

    def record(self, block) -> list[tuple[str, V, int]]:
        """What a block pushes at its end and its reverse pops at its start, in layout order:
        (forward name, reverse name, bytes)."""
        blk = self.blocks[block.label]
        layout = []
        if self.came_in_record(block):
            layout.append((f"%\"came'{bare(block.label)}\"", V(I64, f"%\"came'{bare(block.label)}'pop\""), 8))
        for loop in self.exits.get(block.label, []):
            at = f"'at'{bare(block.label)}"
            layout.append((loop.counter(at), V(I64, loop.counter(at + "'pop")), 8))
        for name in blk.order:
            v = blk.popped[name]
            layout.append((name, v, 8 * (v.type.count or 1) if v.type.kind == "vector" else 8))
        return layout

    def _record_slots(self, b: Builder, block, operation: str):
        """Pushes (or pops) a block's record and yields each entry with its address."""
        layout = self.record(block)
        if not layout:
            return
        rec = b.call(operation, PTR, [V(PTR, "%tape"), V(I64, str(sum(size for _, _, size in layout)))])
        offset = 0
        for name, v, size in layout:
            yield name, v, (b.gep(I8, rec, V(I64, str(offset))) if offset else rec)
            offset += size

    def _reverse_block(self, block, blk: _Block) -> None:
        b = Builder(self.mode.decls, blk.lines, prefix=f"r{bare(block.label)}.")
        phis = [i for i in block.instructions if i.opcode == "phi"]
        for inst in reversed(block.instructions[len(phis):]):
            self.inst = inst
            self.reverse(inst, blk, b)
        phi_adjoints = {}
        for inst in phis:
            if self.active(inst.result):
                phi_adjoints[inst.result] = self.take(b, inst.result)
        preds = self.cfg.preds[block.label]
        if not preds:
            b.emit("br label %\"rev'exit\"")
            return
        edges = []
        for p in preds:
            lines: list[str] = [f"\"edge'{bare(p)}'{bare(block.label)}\":"]
            eb = Builder(self.mode.decls, lines, prefix=f"x{bare(p)}.{bare(block.label)}.")
            for inst in phis:
                if inst.result in phi_adjoints:
                    for v, frm in inst.incoming:
                        if frm == p and v.is_local:
                            self.add(eb, v.value, phi_adjoints[inst.result])
            eb.emit(f"br label %\"rev'{bare(p)}\"")
            edges.append(lines)
        loop = self.counted.get(block.label)
        if loop is not None:
            count = b.load(I64, V(PTR, loop.counter("'slot")))
            first = b.value(Type("i1", "int", 1), f"icmp eq {count}, 0")
            back = local(f"back'{bare(block.label)}")
            b.emit(f"br {first}, label %\"edge'{bare(loop.pre)}'{bare(block.label)}\", label {back}")
            blk.lines.append(f"{back[1:]}:")
            b.store(b.binary("sub", count, V(I64, "1")), V(PTR, loop.counter("'slot")))
            b.emit(f"br label %\"edge'{bare(loop.latch)}'{bare(block.label)}\"")
        elif len(preds) == 1:
            b.emit(f"br label %\"edge'{bare(preds[0])}'{bare(block.label)}\"")
        else:
            if self.came_in_record(block):
                came = V(I64, f"%\"came'{bare(block.label)}'pop\"")
            else:
                came = b.load(I64, b.call('@"adgen.tape.pop"', PTR, [V(PTR, "%tape"), V(I64, "8")]))
            cases = " ".join(f"i64 {i}, label %\"edge'{bare(p)}'{bare(block.label)}\"" for i, p in enumerate(preds))
            b.emit(f"switch {came}, label %\"edge'{bare(preds[0])}'{bare(block.label)}\" [ {cases} ]")
        for lines in edges:
            blk.lines += lines

    def reverse(self, inst: Instruction, blk: _Block, b: Builder) -> None:
        """The reverse of one instruction, into `b`."""
        op = inst.opcode
        if op in ("br", "switch", "ret", "unreachable") or inst.opcode in ("fcmp", "icmp"):
            return
        if op == "call":
            return self.reverse_call(inst, blk, b)
        if op == "alloca":
            self._release(inst.result, blk, b)
            return
        if op == "store":
            return self.reverse_store(inst, blk, b)
        if op == "load":
            return self.reverse_load(inst, blk, b)
        if inst.result is None or not self.active(inst.result):
            return
        dr = self.take(b, inst.result)
        ops = inst.operands
        if op in ("fpext", "fptrunc", "bitcast", "freeze"):
            return self.add(b, ops[0].value, dr) if ops[0].value in self.floaty else None
        if op == "select":
            cond = self.value(ops[0], blk, b)
            zero = V(dr.type, "zeroinitializer")
            if self.active(ops[1].value):
                self.add(b, ops[1].value, b.select(cond, dr, zero))
            if self.active(ops[2].value):
                self.add(b, ops[2].value, b.select(cond, zero, dr))
            return
        if op in ("fadd", "fsub", "fmul", "fdiv", "frem", "fneg"):
            return self.reverse_rule(inst, op, ops, dr, blk, b)
        raise self.fail(f"the '{op}' instruction in reverse mode")

    def reverse_rule(self, inst, name, args, dr, blk, b) -> None:
        rule = rule_for(name)
        if rule is None:
            raise self.fail(f"'{name.lstrip('@')}', which has no derivative rule")
        lazy = [_Lazy(a.type, lambda a=a: self.value(a, blk, b)) for a in args]
        result = _Lazy(inst.type, lambda: self.value(Operand(inst.type, inst.result), blk, b))
        for a, partial in zip(args, rule.partials(b, lazy, result)):
            if partial is not None and self.active(a.value):
                self.add(b, a.value, b.fmul(b.splat(partial, self.n), dr))

    def reverse_load(self, inst, blk, b) -> None:
        if inst.result is None or not self.active(inst.result):
            return
        dr = self.take(b, inst.result)
        p = self.guard(inst.operands[0], self.shadow(inst.operands[0], blk, b), blk, b)
        t = self.floaty[inst.result]
        align = inst.align
        old = self.load_shadow(b, t, p, align)
        self.store_shadow(b, b.fadd(old, dr), p, align)

    def reverse_store(self, inst, blk, b) -> None:
        value, ptr = inst.operands
        if ptr.value not in self.pointers and ptr.value not in self.params:
            if value.value in self.floaty and value.value in self.useful:
                raise self.fail("a store of a value carrying derivatives to memory adgen keeps no derivatives of "
                                "(a global variable, say)")
            return
        if ptr.value in self.params and not self.pattern.active[self.params[ptr.value]]:
            if self.active(value.value):
                raise self.fail("a store of a value carrying derivatives through a 'const' pointer argument")
            return
        t = value.type if value.type.kind == "float" else self.floaty.get(value.value) or (
            self.memtype(ptr.value) if value.type.kind == "int" and value.type.bits in (32, 64) else None)
        if t is None or (value.type.kind == "int" and t.bits != value.type.bits):
            return  # integers and pointers: nothing flows back
        p = self.guard(ptr, self.shadow(ptr, blk, b), blk, b)
        align = inst.align
        dv = self.load_shadow(b, t, p, align)
        self.store_shadow(b, V(vector(t, self.n), "zeroinitializer"), p, align)
        if ptr.value in self.maybe:  # the sink holds nothing to pass on
            dv = b.select(self.mask_value(ptr, blk, b), dv, V(dv.type, "zeroinitializer"))
        if self.active(value.value):
            self.add(b, value.value, dv)

    def reverse_call(self, inst, blk, b) -> None:
        name = callee_name(inst)
        args = inst.operands
        if any(a.value in self.maybe for a in args) and not name.startswith(IGNORED_INTRINSICS):
            raise self.fail(MIXED_POINTER)
        if name.startswith(IGNORED_INTRINSICS):
            return
        if name.startswith(("llvm.memcpy", "llvm.memmove")) or name in ("memcpy", "memmove"):
            return self.reverse_copy(inst, blk, b, move="memmove" in name)
        if name.startswith("llvm.memset") or name == "memset":
            return self.reverse_set(inst, blk, b)
        if name in ALLOCATORS:
            return self._release(inst.result, blk, b)
        if name == "free":
            return
        target = self.mode.module.functions.get(inst.callee)
        if not any(self._on(a) for a in args):
            return
        if target is not None and not target.declaration:
            return self.reverse_derived_call(inst, blk, b)
        if rule_for(inst.callee) is not None:
            if inst.result is None or not self.active(inst.result):
                return
            return self.reverse_rule(inst, inst.callee, args, self.take(b, inst.result), blk, b)
        if name in INACTIVE_CALLS:
            return
        raise self.fail(f"a call to '{name}', which is not defined in the sources and has no derivative rule")

    def reverse_derived_call(self, inst, blk, b) -> None:
        d = self.calls[id(inst)]
        args = [self.value(a, blk, b) for a in inst.operands]
        shadows = [self.shadow(a, blk, b) for a, on in zip(inst.operands, d.pattern.active)
                   if on and a.type.kind == "ptr"]
        extra = []
        if d.pattern.ret_active:
            extra.append(self.take(b, inst.result))
        call_args = ", ".join(str(a) for a in args + shadows + extra + [V(PTR, "%tape")])
        if d.rev_ret.kind == "void":
            b.emit(f"call void {d.rev}({call_args})")
            return
        grads = b.value(d.rev_ret, f"call {d.rev_ret.text} {d.rev}({call_args})")
        for k, i in enumerate(d.scalars):
            g = b.value(d.rev_ret.elems[k], f"extractvalue {grads}, {k}")
            self.add(b, inst.operands[i].value, g)

    def reverse_copy(self, inst, blk, b, move: bool) -> None:
        dst, src, size = inst.operands[0], inst.operands[1], inst.operands[2]
        if dst.value not in self.pointers and not (dst.value in self.params and self._on(dst)):
            return
        t = self.memtype(dst.value) or self.memtype(src.value)
        d = self.shadow(dst, blk, b)
        length = self.value(size, blk, b)
        if length.type.text != "i64":
            length = b.cast("zext", length, I64)
        src_on = src.value in self.pointers or (src.value in self.params and self._on(src))
        if t is None:
            if not src_on:
                return self._zero_shadow(b, d, length)
            raise self.fail("a copy between memory holding derivatives whose element type adgen cannot deduce "
                            "(give the pointers a float or double type in C)")
        count = b.binary("udiv", length, V(I64, str(t.bits // 8)))
        if not src_on:
            return self._zero_shadow(b, d, length)
        s = self.shadow(src, blk, b)
        helper = f'@"adgen.adjoint.{"move" if move else "copy"}.{t.text}"'
        if self.kind == INTERLEAVED:
            b.call(helper, VOID, [d, s, b.binary("mul", count, V(I64, str(self.n)))])
        else:
            for k in range(self.n):
                b.call(helper, VOID, [b.extract(d, k), b.extract(s, k), count])

    def reverse_set(self, inst, blk, b) -> None:
        dst, size = inst.operands[0], inst.operands[2]
        if dst.value not in self.pointers and not (dst.value in self.params and self._on(dst)):
            return
        length = self.value(size, blk, b)
        if length.type.text != "i64":
            length = b.cast("zext", length, I64)
        self._zero_shadow(b, self.shadow(dst, blk, b), length)

    def _zero_shadow(self, b, d: V, length: V) -> None:
        if self.kind == INTERLEAVED:
            b.memset0(d, b.binary("mul", length, V(I64, str(self.n))))
        else:
            for k in range(self.n):
                b.memset0(b.extract(d, k), length)

    def _release(self, name: str, blk: _Block, b: Builder) -> None:
        """Frees an allocation (and its shadow) once the reverse sweep is done with it: stack
        arrays, which the forward sweep moved to the heap, and malloc'd memory it freed."""
        inst = self.cfg.defs[name]
        if inst.opcode == "call" and name not in self.deferred_frees:
            return
        primal = self.value(Operand(PTR, name), blk, b)
        shadow = self.shadow(Operand(PTR, name), blk, b)
        b.call("@free", VOID, [primal])
        b.call("@free", VOID, [shadow if self.kind == INTERLEAVED else b.extract(shadow, 0)])

    # ------------------------------------------------------------------ the augmented forward sweep
    def write_forward(self) -> str:
        fn, d = self.fn, self.derived
        params = [f"{p.type.text} {p.name}" for p in fn.params]
        params += [f"{self.shadows.of(p.type).text} {prime(p.name)}" for p, on in zip(fn.params, self.pattern.active)
                   if on and p.type.kind == "ptr"]
        params.append("ptr %tape")
        out = [f"define internal {d.aug_ret.text} {d.aug}({', '.join(params)}) {{"]
        returns = [blk.label for blk in fn.blocks if blk.instructions[-1].opcode == "ret"]
        for index, block in enumerate(fn.blocks):
            out.append(f"{bare(block.label)}:")
            b = Builder(self.mode.decls, out, prefix=f"f{bare(block.label)}.")
            if index == 0 and self.frame:
                b.emit('%frame.off = call i64 @"adgen.tape.mark"(ptr %tape)')
                b.call('@"adgen.tape.push"', PTR, [V(PTR, "%tape"), V(I64, str(8 * len(self.frame)))])
            phis = [i for i in block.instructions if i.opcode == "phi"]
            for inst in phis:
                out.append("  " + inst.text)
                if inst.result in self.pointers:
                    maybe = inst.result in self.maybe
                    parts = []
                    for v, frm in inst.incoming:
                        parts.append(f"[ {self._forward_shadow(v, b, maybe).ref}, {frm} ]")
                    out.append(f"  {prime(inst.result)} = phi {self.shadows.of(PTR).text} {', '.join(parts)}")
                    if maybe:
                        masks = ", ".join(f"[ {self.forward_mask(v)}, {frm} ]" for v, frm in inst.incoming)
                        out.append(f"  {self.mask_name(inst.result)} = phi i1 {masks}")
            preds = self.cfg.preds[block.label]
            loop = self.counted.get(block.label)
            if loop is not None:
                out.append(f"  {loop.counter()} = phi i64 [ 0, {loop.pre} ], [ {loop.counter('.next')}, {loop.latch} ]")
            for left in self.exits.get(block.label, []):
                parts = ", ".join(f"[ {left.counter() if p in left.body else '0'}, {p} ]" for p in preds)
                out.append(f"  {left.counter(chr(39) + 'at' + chr(39) + bare(block.label))} = phi i64 {parts}")
            if len(preds) > 1 and loop is None:
                ids = ", ".join(f"[ {i}, {p} ]" for i, p in enumerate(preds))
                out.append(f"  %\"came'{bare(block.label)}\" = phi i64 {ids}")
                if not self.came_in_record(block):
                    self._push(b, V(I64, f"%\"came'{bare(block.label)}\""))
            for inst in phis:
                self._keep(inst.result, b)
                if inst.result in self.pointers:
                    self._keep(prime(inst.result), b)
                if inst.result in self.maybe:
                    self._keep(self.mask_name(inst.result), b)
            body = block.instructions[len(phis):]
            for inst in body[:-1]:
                self.inst = inst
                self.forward(inst, b)
                self._keep(inst.result, b)
                if inst.result in self.pointers:
                    self._keep(prime(inst.result), b)
            term = body[-1]
            self.inst = term
            for loop in self.counted.values():
                if loop.latch == block.label:
                    b.emit(f"{loop.counter('.next')} = add i64 {loop.counter()}, 1")
                if loop.pre == block.label and loop.trip is not None:
                    self._reserve(loop, b)
            for name, v, at in self._record_slots(b, block, '@"adgen.tape.push"'):
                b.store(V(v.type, name), at, 8)
            if term.opcode == "ret":
                if len(returns) > 1:
                    self._push(b, V(I64, str(returns.index(block.label))))
                if self.frame:
                    self._push(b, V(I64, "%frame.off"))
            out.append("  " + term.text)
        out.append("}")
        return "\n".join(out)

    def _reserve(self, loop: _Loop, b: Builder) -> None:
        """Reserves a loop's records on the tape before it starts (trip count times the bytes its
        blocks push per iteration), instead of growing the tape while it runs."""
        per_iteration = sum(size for blk in self.fn.blocks if blk.label in loop.body
                            for _, _, size in self.record(blk))
        if per_iteration == 0:
            return
        bound, start = loop.trip
        wide = [b.cast("sext", V(o.type, o.value), I64) if o.type.text != "i64" else V(I64, o.value)
                for o in (bound, start)]
        trip = b.binary("sub", wide[0], wide[1])
        sane = b.value(Type("i1", "int", 1), f"icmp ult {trip}, 1073741824")  # negative ones are huge
        records = b.select(sane, b.binary("mul", trip, V(I64, str(per_iteration))), V(I64, "0"))
        mark = b.call('@"adgen.tape.mark"', I64, [V(PTR, "%tape")])
        b.call('@"adgen.tape.reserve"', VOID, [V(PTR, "%tape"), b.binary("add", mark, records)])

    def _push(self, b: Builder, v: V) -> None:
        size = 8 * (v.type.count or 1) if v.type.kind == "vector" else 8
        at = b.call('@"adgen.tape.push"', PTR, [V(PTR, "%tape"), V(I64, str(size))])
        b.store(v, at, 8)

    def _keep(self, name: str | None, b: Builder) -> None:
        """Stores a once-per-call value in the frame, right after it is computed."""
        if name is None or name not in self.frame:
            return
        t = self._frame_type(name)
        at = b.gep(I8, b.call('@"adgen.tape.at"', PTR, [V(PTR, "%tape"), V(I64, "%frame.off")]),
                   V(I64, str(8 * self.frame[name])))
        b.store(V(t, name), at, 8)

    def _frame_type(self, name: str) -> Type:
        if name.endswith("'mask\""):
            return Type("i1", "int", 1)
        if name.endswith("'\"") or name.endswith("'"):
            return self.shadows.of(PTR)
        return self.cfg.defs[name].type

    def _forward_shadow(self, op: Operand, b: Builder, missing_ok: bool = False) -> V:
        t = self.shadows.of(PTR)
        if op.value in self.pointers or op.value in self.params and self._on(op):
            return V(t, prime(op.value))
        if op.value in ("null", "undef", "poison") or missing_ok:
            return V(t, "zeroinitializer" if self.kind == LANES else "null")
        raise self.fail(MIXED_POINTER)

    def forward(self, inst: Instruction, b: Builder) -> None:
        op = inst.opcode
        out = b.lines
        if any(o.value in self.maybe for o in inst.operands) and (
                op not in ("load", "store", "getelementptr", "select", "freeze", "bitcast", "icmp", "ptrtoint")
                or (op == "load" and inst.type.kind == "ptr") or (op == "store" and inst.operands[0].type.kind == "ptr")):
            raise self.fail(MIXED_POINTER)
        if op == "alloca" and inst.result in self.pointers:
            return self._heap_alloca(inst, b)
        if op == "call":
            return self.forward_call(inst, b)
        out.append("  " + inst.text)
        if inst.result not in self.pointers:
            if op == "store" and inst.operands[0].type.kind == "ptr" and self._on(inst.operands[1]):
                s = self._forward_shadow(inst.operands[0], b)
                p = V(self.shadows.of(PTR), prime(inst.operands[1].value))
                if self.kind == INTERLEAVED:
                    raise self.fail("a pointer stored into memory with interleaved (dupv) derivatives")
                self.store_shadow(b, s, p, inst.align)
            return
        if op == "getelementptr":
            base = self._forward_shadow(inst.operands[0], b)
            made = self._shadow_gep(inst, base, lambda o: V(o.type, o.value), b)
        elif op == "select":
            cond = inst.operands[0]
            maybe = inst.result in self.maybe
            made = b.select(V(cond.type, cond.value), self._forward_shadow(inst.operands[1], b, maybe),
                            self._forward_shadow(inst.operands[2], b, maybe))
            if maybe:
                b.emit(f"{self.mask_name(inst.result)} = select {cond}, i1 {self.forward_mask(inst.operands[1])}, "
                       f"i1 {self.forward_mask(inst.operands[2])}")
                self._keep(self.mask_name(inst.result), b)
        elif op == "load":
            if self.kind == INTERLEAVED:
                raise self.fail("a pointer loaded from memory with interleaved (dupv) derivatives")
            p = self._forward_shadow(inst.operands[0], b)
            made = b.gather([b.load(PTR, b.extract(p, k), inst.align) for k in range(self.n)])
        else:
            raise self.fail(f"a pointer made by '{op}' where derivatives are needed")
        b.emit(f"{prime(inst.result)} = select i1 true, {made}, {made}")

    def _heap_alloca(self, inst: Instruction, b: Builder) -> None:
        """A stack array the reverse sweep reads: on the heap until the reverse sweep frees it."""
        count = V(inst.count.type, inst.count.value) if inst.count else V(I64, "1")
        if count.type.text != "i64":
            count = b.cast("zext", count, I64)
        size = b.size_of(inst.source_type, count)
        b.lines.append(f"  {inst.result} = call ptr @malloc({size})")
        self.mode.decls.need("@malloc", PTR, [I64])
        shadow = b.call("@calloc", PTR, [V(I64, str(self.n)), size])
        self._bind_allocation(inst.result, shadow, size, b)

    def _bind_allocation(self, name: str, memory: V, size: V, b: Builder) -> None:
        if self.kind == INTERLEAVED:
            made = memory
        else:
            steps = b.gather([V(I64, str(k)) for k in range(self.n)])
            made = b.gep(I8, memory, b.binary("mul", steps, b.splat(size, self.n)))
        b.emit(f"{prime(name)} = select i1 true, {made}, {made}")

    def forward_call(self, inst: Instruction, b: Builder) -> None:
        name = callee_name(inst)
        args = inst.operands
        if name.startswith("llvm.lifetime."):
            return  # stack arrays move to the heap, and the reverse sweep reads them after these would end
        if name in ALLOCATORS:
            b.lines.append("  " + inst.text)
            vals = [V(a.type, a.value) for a in args]
            size = vals[0] if name == "malloc" else vals[1] if name == "aligned_alloc" else b.binary("mul", *vals)
            shadow = b.call("@calloc", PTR, [V(I64, str(self.n)), size])
            return self._bind_allocation(inst.result, shadow, size, b)
        if name == "free":
            ptr = args[0].value
            if ptr in self.pointers and self.memory.base(ptr).name in self.deferred_frees:
                return  # the reverse sweep frees it
            b.lines.append("  " + inst.text)
            return
        if id(inst) not in self.calls:
            b.lines.append("  " + inst.text)
            return
        d = self.calls[id(inst)]
        active = d.pattern.active
        call_args = [str(V(a.type, a.value)) for a in args]
        call_args += [str(self._forward_shadow(a, b)) for a, on in zip(args, active) if on and a.type.kind == "ptr"]
        call_args.append("ptr %tape")
        text = f"call {d.aug_ret.text} {d.aug}({', '.join(call_args)})"
        b.lines.append(f"  {inst.result} = {text}" if inst.result else f"  {text}")


class _Lazy(V):
    """A primal value the reverse sweep materializes only if a rule's partial uses it."""

    def __init__(self, t: Type, make):
        object.__setattr__(self, "type", t)
        object.__setattr__(self, "_make", make)
        object.__setattr__(self, "_made", None)

    @property
    def ref(self) -> str:  # type: ignore[override]
        if self._made is None:
            object.__setattr__(self, "_made", self._make())
        return self._made.ref

    def __str__(self) -> str:
        return f"{self.type.text} {self.ref}"
