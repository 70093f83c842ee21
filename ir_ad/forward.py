"""Forward mode: for a function and a pattern of which arguments carry derivatives, a new
function computing the primal and, alongside it, N directional derivatives (tangents).

Tangents of floating values are `<N x T>` vectors. Pointers into memory that holds
derivatives have a *shadow*: memory of the same layout holding the tangents. With separate
shadows per lane (`dual`), a pointer's shadow is `<N x ptr>`, one pointer per lane; with the
interleaved layout (`dualv`), it is one pointer into memory where the N lanes of the scalar at
primal byte offset o lie contiguously at byte offset N*o, so a lane vector is one load.

Integers loaded from shadowed memory carry the shadow's bits, so `memcpy`-like copies that the
optimizer turned into i64 loads and stores move tangents too; integer arithmetic drops them."""

from __future__ import annotations

from dataclasses import dataclass

from .builder import Builder, Declarations, V, bare, local, prime
from .diagnose import Unsupported
from .ir import I64, PTR, Function, Instruction, Module, Operand, Type, array, int_type, struct, vector
from .rules import rule_for

LANES, INTERLEAVED = "lanes", "interleaved"
# What may use a pointer whose shadow is behind a mask (see _FunctionWriter.guarded).
_MASKABLE = {"load", "store", "getelementptr", "phi", "select", "freeze", "bitcast", "icmp", "ptrtoint"}
ZEROS = '@"adgen.zeros" = internal constant [64 x i64] zeroinitializer, align 64'  # 512 bytes to read
# Calls that neither read nor write derivatives, whatever their arguments.
INACTIVE_CALLS = {"printf", "fprintf", "puts", "fputs", "putchar", "fflush", "abort", "exit", "_exit", "rand", "srand",
                  "time", "clock", "__assert_fail", "assert", "perror", "fwrite", "sprintf", "snprintf"}
IGNORED_INTRINSICS = ("llvm.dbg.", "llvm.lifetime.", "llvm.assume", "llvm.experimental.noalias.scope.decl",
                      "llvm.invariant.", "llvm.prefetch", "llvm.donothing", "llvm.sideeffect", "llvm.stacksave",
                      "llvm.stackrestore", "llvm.pseudoprobe", "llvm.var.annotation")
ALLOCATORS = {"malloc", "calloc", "aligned_alloc"}
# Both modes refuse a pointer whose shadow is known only on some paths; this says what to do instead.
MIXED_POINTER = ("a pointer that may point both into memory holding derivatives and into memory adgen keeps none of"
                 " (a 'const' argument or a global): give that argument a shadow too, or copy its data into a local array")


def callee_name(inst: Instruction) -> str:
    return inst.callee.lstrip("@").strip('"')


@dataclass(frozen=True)
class Pattern:
    """What a derivative function is specialized for."""

    function: str  # "@f"
    active: tuple[bool, ...]  # which arguments carry derivatives
    width: int
    kind: str  # LANES or INTERLEAVED


@dataclass
class Derived:
    name: str  # "@..." of the derivative function
    pattern: Pattern
    returns_shadow: bool
    ret_type: Type  # the derivative function's return type


class ShadowTypes:
    def __init__(self, module: Module, width: int, kind: str):
        self.module, self.width, self.kind = module, width, kind

    def of(self, t: Type) -> Type | None:
        """The type of a value's derivative, or None when it has none."""
        n = self.width
        if t.kind == "float":
            return vector(t, n)
        if t.kind == "ptr":
            return vector(PTR, n) if self.kind == LANES else PTR
        if t.kind == "int" and t.bits in (32, 64):
            return vector(t, n)  # the bits of floating data moved as integers
        if t.kind == "named":
            return self.of(self.module.struct_type(t))
        if t.kind == "struct":
            elems = [self.of(e) or vector(int_type(8), n) for e in t.elems]
            return struct(*elems) if any(self.of(e) for e in t.elems) else None
        if t.kind == "array":
            e = self.of(t.elems[0])
            return array(e, t.count) if e else None
        return None

    def carries(self, t: Type) -> bool:
        """Whether values of this type carry derivatives of their own (ints only when loaded)."""
        if t.kind in ("float", "ptr"):
            return True
        if t.kind == "named":
            return self.carries(self.module.struct_type(t))
        if t.kind in ("struct", "array"):
            return any(self.carries(e) for e in t.elems)
        return False


class ForwardMode:
    """Generates forward-mode derivative functions into `self.definitions`, memoized by pattern."""

    def __init__(self, module: Module, decls: Declarations):
        self.module = module
        self.decls = decls
        self.memo: dict[Pattern, Derived] = {}
        self.definitions: list[str] = []
        self.uses_zeros = False

    def derive(self, pattern: Pattern) -> Derived:
        if pattern in self.memo:
            return self.memo[pattern]
        fn = self.module.functions[pattern.function]
        shadows = ShadowTypes(self.module, pattern.width, pattern.kind)
        ret_shadow = shadows.of(fn.ret) if shadows.carries(fn.ret) else None
        ret_type = struct(fn.ret, ret_shadow) if ret_shadow else fn.ret
        mask = "".join("d" if a else "c" for a in pattern.active)
        name = local(f"{bare(fn.name)}'fwd.{mask}.{pattern.kind[0]}{pattern.width}")
        derived = Derived("@" + name[1:], pattern, ret_shadow is not None, ret_type)
        self.memo[pattern] = derived
        self.definitions.append(_FunctionWriter(self, fn, derived, shadows).write())
        return derived


class _FunctionWriter:
    """Writes one forward derivative function."""

    def __init__(self, mode: ForwardMode, fn: Function, derived: Derived, shadows: ShadowTypes):
        self.mode, self.fn, self.derived, self.shadows = mode, fn, derived, shadows
        self.n = derived.pattern.width
        self.kind = derived.pattern.kind
        self.lines: list[str] = []
        self.b = Builder(mode.decls, self.lines)
        self.active: set[str] = set()
        self.maybe: set[str] = set()
        self.cfg_defs = {i.result: i for i in fn.instructions() if i.result}
        self.inst: Instruction | None = None

    # ------------------------------------------------------------------ analysis
    def analyze(self) -> None:
        """Which values carry derivatives: a fixpoint, since phis see values from later blocks."""
        for p, on in zip(self.fn.params, self.derived.pattern.active):
            if on:
                self.active.add(p.name)
        changed = True
        while changed:
            changed = False
            for inst in self.fn.instructions():
                if inst.result and inst.result not in self.active and self._carries(inst):
                    self.active.add(inst.result)
                    changed = True
        # Pointers that may point into memory without shadow (a select or phi between an active
        # pointer and a const one): their shadow is used only behind a mask.
        changed = True
        while changed:
            changed = False
            for inst in self.fn.instructions():
                if inst.result in self.active and inst.result not in self.maybe and inst.type.kind == "ptr" \
                        and self._maybe(inst):
                    self.maybe.add(inst.result)
                    changed = True

    def _on(self, op: Operand) -> bool:
        return op.value in self.active

    def _shadowless(self, op: Operand) -> bool:
        return op.value not in self.active and op.value not in ("null", "undef", "poison")

    def _maybe(self, inst: Instruction) -> bool:
        if inst.opcode == "phi":
            return any(self._shadowless(v) or v.value in self.maybe for v, _ in inst.incoming)
        if inst.opcode == "select":
            return any(self._shadowless(o) or o.value in self.maybe for o in inst.operands[1:])
        if inst.opcode in ("getelementptr", "freeze", "bitcast"):
            return inst.operands[0].value in self.maybe
        return False

    def mask(self, op: Operand) -> str:
        """An i1 telling whether a pointer has a real shadow ("true"/"false" when known)."""
        if op.value in self.maybe:
            inst = self.cfg_defs[op.value]
            if inst.opcode in ("phi", "select"):
                return local(bare(op.value) + "'mask")
            return self.mask(inst.operands[0])
        return "true" if op.value in self.active else "false"

    def empty(self, t: Type) -> V:
        """The shadow of a pointer that has none: null, only ever used behind a mask."""
        return V(t, "zeroinitializer" if t.kind == "vector" else "null")

    def guarded(self, op: Operand, lane: V | None, store: bool) -> V:
        """A shadow address safe to use: the real one where the pointer has a shadow, else zeros
        to read or a sink to write."""
        p = lane if lane is not None else self.shadow(op)
        if op.value not in self.maybe:
            return p
        other = "%\"adgen'sink\"" if store else "@\"adgen.zeros\""
        self.mode.uses_zeros = True
        return self.b.value(PTR, f"select i1 {self.mask(op)}, {p}, ptr {other}")

    def _carries(self, inst: Instruction) -> bool:
        op = inst.opcode
        ops = inst.operands
        if op == "phi":
            return any(v.value in self.active for v, _ in inst.incoming)
        if op == "select":
            return self._on(ops[1]) or self._on(ops[2])
        if op in ("fadd", "fsub", "fmul", "fdiv", "frem", "fneg"):
            return any(self._on(o) for o in ops)
        if op in ("fpext", "fptrunc", "bitcast", "freeze"):
            return self._on(ops[0]) and self.shadows.of(inst.type) is not None
        if op == "load":
            return self._on(ops[0]) and self.shadows.of(inst.type) is not None
        if op == "getelementptr":
            return self._on(ops[0])
        if op == "alloca":
            return True
        if op == "extractvalue":
            return self._on(ops[0]) and self.shadows.carries(inst.type)
        if op == "insertvalue":
            return self._on(ops[0]) or self._on(ops[1])
        if op == "call":
            name = callee_name(inst)
            if name in ALLOCATORS:
                return True
            if not any(self._on(o) for o in ops):
                return False
            target = self.mode.module.functions.get(inst.callee)
            if target is not None and not target.declaration:
                return self.shadows.carries(inst.type)
            return rule_for(inst.callee) is not None
        return False

    # ------------------------------------------------------------------ values
    def shadow(self, op: Operand) -> V | None:
        """The derivative of an operand: its own, a zero for inactive data, None when there is none."""
        t = self.shadows.of(op.type)
        if t is None:
            return None
        if op.value in self.active:
            return V(t, prime(op.value))
        if op.type.kind == "ptr":
            if op.value == "null" or op.value in ("undef", "poison"):
                return self.b.zero(t) if self.kind == INTERLEAVED else V(t, "zeroinitializer")
            return None  # memory adgen keeps no derivatives of (a global, say)
        return V(t, "zeroinitializer")

    def fail(self, what: str) -> Unsupported:
        return Unsupported(self.fn.name, self.inst, what)

    # ------------------------------------------------------------------ writing
    def write(self) -> str:
        self.analyze()
        fn, d = self.fn, self.derived
        params = [f"{p.type.text} {p.name}" for p in fn.params]
        for p, on in zip(fn.params, d.pattern.active):
            if on:
                params.append(f"{self.shadows.of(p.type).text} {prime(p.name)}")
        head = f"define internal {d.ret_type.text} {d.name}({', '.join(params)}) {{"
        for p in fn.params:
            if "byval" in p.attrs or "inalloca" in p.attrs or "preallocated" in p.attrs:
                self.inst = None
                raise self.fail(f"a by-value struct parameter ({p.name})")
        for index, block in enumerate(fn.blocks):
            self.lines.append(f"{block.label[1:]}:")
            if index == 0 and self.maybe:
                self.lines.append("  %\"adgen'sink\" = alloca [64 x i64], align 64")
            phis = [i for i in block.instructions if i.opcode == "phi"]
            for inst in phis:
                self.lines.append("  " + inst.text)
            for inst in phis:
                self.inst = inst
                self.phi(inst)
            for inst in block.instructions[len(phis):]:
                self.inst = inst
                if inst.opcode not in _MASKABLE and any(o.value in self.maybe for o in inst.operands):
                    raise self.fail(MIXED_POINTER)
                handler = getattr(self, "op_" + inst.opcode.replace("-", "_"), None)
                if handler is None:
                    self.other(inst)
                else:
                    handler(inst)
        return "\n".join([head, *self.lines, "}"])

    def copy(self, inst: Instruction) -> None:
        self.lines.append("  " + inst.text)

    def phi(self, inst: Instruction) -> None:
        if inst.result not in self.active:
            return
        t = self.shadows.of(inst.type)
        parts = []
        for v, block in inst.incoming:
            s = self.shadow(v) or self.empty(t)
            parts.append(f"[ {s.ref}, {block} ]")
        self.lines.append(f"  {prime(inst.result)} = phi {t.text} {', '.join(parts)}")
        if inst.result in self.maybe:
            masks = ", ".join(f"[ {self.mask(v)}, {block} ]" for v, block in inst.incoming)
            self.lines.append(f"  {self.mask(Operand(PTR, inst.result))} = phi i1 {masks}")

    def other(self, inst: Instruction) -> None:
        if any(self._on(o) for o in inst.operands) or (inst.result in self.active):
            raise self.fail(f"the '{inst.opcode}' instruction")
        self.copy(inst)

    # arithmetic -----------------------------------------------------------
    def elementwise(self, inst: Instruction, rule_name: str, args: list[Operand]) -> None:
        """Any primitive with a rule: d_out = sum of splat(partial_i) * d_in_i over active args."""
        self.copy(inst)
        if inst.result not in self.active:
            return
        rule = rule_for(rule_name)
        if rule is None:
            raise self.fail(f"'{rule_name.lstrip('@')}', which has no derivative rule")
        x = [V(a.type, a.value) for a in args]
        partials = rule.partials(self.b, x, V(inst.type, inst.result))
        total = None
        for a, p in zip(args, partials):
            if p is None or not self._on(a):
                continue
            term = self.b.fmul(self.b.splat(p, self.n), V(self.shadows.of(a.type), prime(a.value)))
            total = term if total is None else self.b.fadd(total, term)
        self.bind(inst, total or V(self.shadows.of(inst.type), "zeroinitializer"))

    def bind(self, inst: Instruction, value: V) -> None:
        self.b.emit(f"{prime(inst.result)} = {_move(value)}")

    def op_fadd(self, inst):
        self.elementwise(inst, "fadd", inst.operands)

    op_fsub = lambda self, inst: self.elementwise(inst, "fsub", inst.operands)
    op_fmul = lambda self, inst: self.elementwise(inst, "fmul", inst.operands)
    op_fdiv = lambda self, inst: self.elementwise(inst, "fdiv", inst.operands)
    op_frem = lambda self, inst: self.elementwise(inst, "frem", inst.operands)
    op_fneg = lambda self, inst: self.elementwise(inst, "fneg", inst.operands)

    def op_select(self, inst):
        self.copy(inst)
        if inst.result in self.active:
            t = self.shadows.of(inst.type)
            a = self.shadow(inst.operands[1]) or self.empty(t)
            b = self.shadow(inst.operands[2]) or self.empty(t)
            cond = inst.operands[0]
            self.bind(inst, self.b.select(V(cond.type, cond.value), a, b))
            if inst.result in self.maybe:
                self.b.emit(f"{self.mask(Operand(PTR, inst.result))} = select {cond}, i1 "
                            f"{self.mask(inst.operands[1])}, i1 {self.mask(inst.operands[2])}")

    def _cast(self, inst):
        self.copy(inst)
        if inst.result in self.active:
            src = self.shadow(inst.operands[0])
            self.bind(inst, self.b.cast(inst.opcode, src, self.shadows.of(inst.type)))

    op_fpext = op_fptrunc = _cast

    def op_bitcast(self, inst):
        self._cast(inst)

    def op_freeze(self, inst):
        self.copy(inst)
        if inst.result in self.active:
            self.bind(inst, self.shadow(inst.operands[0]))

    def op_inttoptr(self, inst):
        raise self.fail("an integer turned into a pointer (inttoptr): adgen cannot follow derivatives through it")

    # memory ----------------------------------------------------------------
    def op_load(self, inst):
        self.copy(inst)
        if inst.result not in self.active:
            return
        if " atomic " in inst.text:
            raise self.fail("an atomic load of data carrying derivatives")
        p = self.shadow(inst.operands[0])
        t = inst.type
        st = self.shadows.of(t)
        if t.kind not in ("float", "ptr", "int"):
            raise self.fail(f"a load of '{t.text}' from memory holding derivatives")
        align = inst.align
        ptr = inst.operands[0]
        if t.kind == "ptr" and ptr.value in self.maybe:
            raise self.fail(MIXED_POINTER)
        if self.kind == INTERLEAVED:
            if t.kind == "ptr":
                raise self.fail("a pointer loaded from memory with interleaved (dualv) derivatives")
            self.bind(inst, self.b.load(st, self.guarded(ptr, p, False), align))
        else:
            lanes = [self.b.load(t, self.guarded(ptr, self.b.extract(p, k), False), align) for k in range(self.n)]
            self.bind(inst, self.b.gather(lanes))

    def op_store(self, inst):
        self.copy(inst)
        value, ptr = inst.operands
        if " atomic " in inst.text and self._on(value):
            raise self.fail("an atomic store of data carrying derivatives")
        if not self._on(ptr):
            if self._on(value) and self.shadows.carries(value.type):
                raise self.fail("a store of a value carrying derivatives to memory adgen keeps no derivatives of "
                                "(a global variable, say)")
            return
        p = self.shadow(ptr)
        t = value.type
        if t.kind not in ("float", "ptr", "int"):
            if self.shadows.carries(t):
                raise self.fail(f"a store of '{t.text}' into memory holding derivatives")
            return
        s = self.shadow(value) if t.kind != "int" or self._on(value) else None
        if s is None:
            if t.kind == "ptr":
                raise self.fail("a pointer into memory adgen keeps no derivatives of, stored where derivatives are kept")
            s = V(self.shadows.of(t) or vector(t, self.n), "zeroinitializer")
        align = inst.align
        if value.value in self.maybe:
            raise self.fail(MIXED_POINTER)
        if self.kind == INTERLEAVED:
            if t.kind == "ptr":
                raise self.fail("a pointer stored into memory with interleaved (dualv) derivatives")
            self.b.store(s, self.guarded(ptr, p, True), align)
        else:
            for k in range(self.n):
                self.b.store(self.b.extract(s, k), self.guarded(ptr, self.b.extract(p, k), True), align)

    def op_getelementptr(self, inst):
        self.copy(inst)
        if inst.result not in self.active:
            return
        base = self.shadow(inst.operands[0])
        if self.kind == INTERLEAVED:
            offset = self.b.binary("sub", self.b.cast("ptrtoint", V(PTR, inst.result), I64),
                                   self.b.cast("ptrtoint", V(PTR, inst.operands[0].value), I64))
            scaled = self.b.binary("mul", offset, V(I64, str(self.n)))
            self.bind(inst, self.b.gep(Type("i8", "int", 8), base, scaled))
        else:
            flags = " ".join(w for w in inst.text.split("getelementptr", 1)[1].split()[:3]
                             if w in ("inbounds", "nuw", "nusw"))
            indices = [V(o.type, o.value) for o in inst.operands[1:]]
            self.bind(inst, self.b.gep(inst.source_type, base, *indices, flags=flags))

    def op_alloca(self, inst):
        self.copy(inst)
        count = V(inst.count.type, inst.count.value) if inst.count else V(I64, "1")
        if count.type.text != "i64":
            count = self.b.cast("zext", count, I64)
        total = self.b.binary("mul", count, V(I64, str(self.n)))
        memory = self.b.value(PTR, f"alloca {inst.source_type.text}, {total}, align 16")
        self.b.memset0(memory, self.b.size_of(inst.source_type, total))
        if self.kind == INTERLEAVED:
            self.bind(inst, memory)
        else:
            self.bind(inst, self._lanes(memory, self.b.size_of(inst.source_type, count)))

    def _lanes(self, base: V, stride: V) -> V:
        """<N x ptr>: base + k*stride bytes for each lane k."""
        steps = self.b.gather([V(I64, str(k)) for k in range(self.n)])
        offsets = self.b.binary("mul", steps, self.b.splat(stride, self.n))
        return self.b.gep(Type("i8", "int", 8), base, offsets)

    # calls -----------------------------------------------------------------
    def op_call(self, inst):
        name = callee_name(inst)
        target = self.mode.module.functions.get(inst.callee)
        args = inst.operands
        if name.startswith(IGNORED_INTRINSICS):
            return self.copy(inst)
        if name.startswith(("llvm.memcpy", "llvm.memmove")) or name in ("memcpy", "memmove"):
            return self.copy_memory(inst, move="memmove" in name)
        if name.startswith("llvm.memset") or name == "memset":
            return self.set_memory(inst)
        if name in ALLOCATORS:
            return self.allocate(inst)
        if name == "free":
            return self.release(inst)
        if not any(self._on(a) for a in args):
            return self.copy(inst)  # nothing flows in: an inactive call
        if target is not None and not target.declaration:
            return self.call_derivative(inst, target)
        if rule_for(inst.callee) is not None:
            return self.elementwise(inst, inst.callee, args)
        if name in INACTIVE_CALLS:
            return self.copy(inst)
        if name == "realloc":
            raise self.fail("realloc of memory holding derivatives")
        raise self.fail(f"a call to '{name}', which is not defined in the sources and has no derivative rule")

    def call_derivative(self, inst, target: Function):
        if target.variadic:
            raise self.fail(f"a call to variadic function '{callee_name(inst)}'")
        active = tuple(self._on(a) and self.shadows.of(a.type) is not None for a in inst.operands)
        d = self.mode.derive(Pattern(target.name, active, self.n, self.kind))
        args = [str(V(a.type, a.value)) for a in inst.operands]
        for a, on in zip(inst.operands, active):
            if on:
                args.append(str(self.shadow(a)))
        call = f"call {d.ret_type.text} {d.name}({', '.join(args)})"
        if inst.result is None:
            self.b.emit(call)
        elif d.returns_shadow:
            both = self.b.value(d.ret_type, call)
            self.lines.append(f"  {inst.result} = extractvalue {both}, 0")
            if inst.result in self.active:
                self.b.emit(f"{prime(inst.result)} = extractvalue {both}, 1")
        else:
            self.lines.append(f"  {inst.result} = {call}")

    def copy_memory(self, inst, move: bool):
        self.copy(inst)
        dst, src, size = inst.operands[0], inst.operands[1], inst.operands[2]
        if not self._on(dst):
            if self._on(src):
                raise self.fail("a copy from memory holding derivatives to memory adgen keeps none of")
            return
        d, s = self.shadow(dst), self.shadow(src) if self._on(src) else None
        length = V(size.type, size.value)
        if length.type.text != "i64":
            length = self.b.cast("zext", length, I64)
        if self.kind == INTERLEAVED:
            total = self.b.binary("mul", length, V(I64, str(self.n)))
            if s is None:
                self.b.memset0(d, total)
            else:
                self.b.memcpy(d, s, total, move)
            return
        for k in range(self.n):
            dk = self.b.extract(d, k)
            if s is None:
                self.b.memset0(dk, length)
            else:
                self.b.memcpy(dk, self.b.extract(s, k), length, move)

    def set_memory(self, inst):
        self.copy(inst)
        dst, size = inst.operands[0], inst.operands[2]
        if not self._on(dst):
            return
        d = self.shadow(dst)
        length = V(size.type, size.value)
        if length.type.text != "i64":
            length = self.b.cast("zext", length, I64)
        if self.kind == INTERLEAVED:
            self.b.memset0(d, self.b.binary("mul", length, V(I64, str(self.n))))
        else:
            for k in range(self.n):
                self.b.memset0(self.b.extract(d, k), length)

    def allocate(self, inst):
        """Shadow memory for malloc/calloc: zeroed, N times the size, freed with the primal."""
        self.copy(inst)
        name = callee_name(inst)
        args = [V(a.type, a.value) for a in inst.operands]
        size = args[0] if name == "malloc" else args[1] if name == "aligned_alloc" else self.b.binary("mul", *args)
        memory = self.b.call("@calloc", PTR, [V(I64, str(self.n)), size])
        if self.kind == INTERLEAVED:
            self.bind(inst, memory)
        else:
            self.bind(inst, self._lanes(memory, size))

    def release(self, inst):
        self.copy(inst)
        ptr = inst.operands[0]
        if self._on(ptr):
            s = self.shadow(ptr)
            base = s if self.kind == INTERLEAVED else self.b.extract(s, 0)
            self.b.call("@free", Type("void", "void"), [base])

    # aggregates ------------------------------------------------------------
    def op_extractvalue(self, inst):
        self.copy(inst)
        if inst.result in self.active:
            agg = self.shadow(inst.operands[0])
            idx = ", ".join(str(i) for i in inst.indices)
            self.b.emit(f"{prime(inst.result)} = extractvalue {agg}, {idx}")

    def op_insertvalue(self, inst):
        self.copy(inst)
        if inst.result in self.active:
            agg = self.shadow(inst.operands[0]) or V(self.shadows.of(inst.type), "zeroinitializer")
            val = self.shadow(inst.operands[1])
            if val is None:
                raise self.fail("a pointer into memory adgen keeps no derivatives of, put into an aggregate")
            idx = ", ".join(str(i) for i in inst.indices)
            self.b.emit(f"{prime(inst.result)} = insertvalue {agg}, {val}, {idx}")

    # control flow ----------------------------------------------------------
    def op_ret(self, inst):
        d = self.derived
        if not d.returns_shadow:
            return self.copy(inst)
        value = inst.operands[0]
        s = self.shadow(value)
        if s is None:
            raise self.fail("a returned pointer into memory adgen keeps no derivatives of")
        first = self.b.value(d.ret_type, f"insertvalue {d.ret_type.text} poison, {value}, 0")
        both = self.b.value(d.ret_type, f"insertvalue {first}, {s}, 1")
        self.b.emit(f"ret {both}")

    def op_br(self, inst):
        self.copy(inst)

    op_switch = op_unreachable = op_br

    def _passive(self, inst):
        self.copy(inst)

    op_fcmp = op_icmp = op_ptrtoint = op_sitofp = op_uitofp = op_fptosi = op_fptoui = _passive
    op_add = op_sub = op_mul = op_udiv = op_sdiv = op_urem = op_srem = op_shl = op_lshr = op_ashr = _passive
    op_and = op_or = op_xor = op_trunc = op_zext = op_sext = _passive


def _move(value: V) -> str:
    """An instruction whose result is `value` (so a derivative can be given its own name)."""
    if value.type.kind == "vector" and value.type.elems[0].kind == "float":
        return f"fadd {value}, splat ({value.type.elems[0].text} -0.000000e+00)"
    return f"select i1 true, {value}, {value}"
