"""Forward mode: for a function and a pattern of which arguments carry derivatives, a new
function computing the primal and, alongside it, N directional derivatives (tangents).

A value's tangent has the parts `shadows.Layout` describes: with separate shadows (`dual`) N
values of the value's own type, one scalar stream per lane, so that loops vectorize across
iterations as the primal does; with the interleaved layout (`dualv`) one `<N x T>` vector.
Pointers into memory that holds derivatives have shadows of the same layout.

Integers loaded from shadowed memory carry the shadow's bits, so `memcpy`-like copies that the
optimizer turned into i64 loads and stores move tangents too; integer arithmetic drops them."""

from __future__ import annotations

from dataclasses import dataclass

from adgen.ir_ad.ir.builder import PRIMAL, Builder, Declarations, V, bare, local
from adgen.ir_ad.custom import forward_wrapper
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.ir import I64, PTR, Function, Instruction, Module, Operand, Type, struct
from adgen.ir_ad.analysis.forward_activity import TangentFlow
from adgen.ir_ad.forward.memory import MemoryCalls
from adgen.ir_ad.rules import rule_for
from adgen.ir_ad.shadows import (IGNORED_INTRINSICS, is_allocator, MIXED_POINTER, VECTOR_VALUES,
                      Layout, Shadow, callee_name, carries, inactive_call, no_derivative)

# What may use a pointer whose shadow is behind a mask (see _FunctionWriter.guarded).
_MASKABLE = {"load", "store", "getelementptr", "phi", "select", "freeze", "bitcast", "icmp", "ptrtoint"}
ZEROS = '@"adgen.zeros" = internal constant [64 x i64] zeroinitializer, align 64'  # 512 bytes to read

__all__ = ["ForwardMode", "Pattern", "Derived", "ZEROS"]


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
    ret_type: Type  # the derivative function's return type: the primal's, or { primal, tangent parts... }


class ForwardMode:
    """Generates forward-mode derivative functions into `self.definitions`, memoized by pattern."""

    def __init__(self, module: Module, decls: Declarations, level: int = 1):
        self.module = module
        self.decls = decls
        self.tag = "" if level == 1 else str(level)  # in names: apart from an earlier level's, still in the module
        self.memo: dict[Pattern, Derived] = {}
        self.definitions: list[str] = []
        self.uses_zeros = False
        self.uses_runtime = False  # adgen's runtime (templates/runtime.ll.j2): shadows that realloc moves

    def derive(self, pattern: Pattern) -> Derived:
        if pattern in self.memo:
            return self.memo[pattern]
        fn = self.module.functions[pattern.function]
        custom = self.module.custom.get(pattern.function)
        if custom is not None and custom.forward:  # written by hand: a wrapper calls it
            name = "@" + local(f"{bare(fn.name)}'fwd{self.tag}.custom.{len(self.memo)}")[1:]
            text, ret, returns_tangent = forward_wrapper(self.module, custom, fn, name, pattern.active, pattern.width)
            self.memo[pattern] = derived = Derived(name, pattern, returns_tangent, ret)
            self.definitions.append(text)
            return derived
        layout = Layout(self.module, pattern.width, pattern.kind)
        ret_part = layout.part_type(fn.ret) if carries(self.module, fn.ret) else None
        ret_type = struct(fn.ret, *[ret_part] * layout.parts) if ret_part else fn.ret
        mask = "".join("d" if a else "c" for a in pattern.active)
        name = local(f"{bare(fn.name)}'fwd{self.tag}.{mask}.{pattern.kind[0]}{pattern.width}")
        derived = Derived("@" + name[1:], pattern, ret_part is not None, ret_type)
        self.memo[pattern] = derived
        self.definitions.append(_FunctionWriter(self, fn, derived, layout).write())
        return derived


class _FunctionWriter(MemoryCalls):
    """Writes one forward derivative function."""

    def __init__(self, mode: ForwardMode, fn: Function, derived: Derived, layout: Layout):
        self.mode, self.fn, self.derived, self.layout = mode, fn, derived, layout
        self.n = derived.pattern.width
        self.lines: list[str] = []
        self.b = Builder(mode.decls, self.lines)
        self.flow = TangentFlow(mode.module, fn, derived.pattern.active, layout)
        self.active, self.maybe = self.flow.active, self.flow.maybe
        self._on, self.mask = self.flow.on, self.flow.mask
        self.inst: Instruction | None = None

    def guarded(self, op: Operand, lanes: Shadow, store: bool) -> Shadow:
        """Shadow addresses safe to use: the real ones where the pointer has a shadow, else zeros
        to read or a sink to write."""
        if op.value not in self.maybe:
            return lanes
        other = "%\"adgen'sink\"" if store else "@\"adgen.zeros\""
        self.mode.uses_zeros = True
        return tuple(self.b.value(PTR, f"select i1 {self.mask(op)}, {p}, ptr {other}") for p in lanes)

    # ------------------------------------------------------------------ values
    def shadow(self, op: Operand) -> Shadow | None:
        """The derivative of an operand: its own, a zero for inactive data, None when there is none."""
        if self.layout.part_type(op.type) is None:
            return None
        if op.value in self.active:
            return self.layout.named(op.value, op.type)
        if op.type.kind == "ptr":
            if op.value in ("null", "undef", "poison"):
                return self.layout.zero(PTR)
            return None  # memory adgen keeps no derivatives of (a global, say)
        return self.layout.zero(op.type)

    def fail(self, what: str) -> Unsupported:
        return Unsupported(self.fn.name, self.inst, what)

    # ------------------------------------------------------------------ writing
    def write(self) -> str:
        fn, d = self.fn, self.derived
        params = [f"{p.type.text} {p.name}" for p in fn.params]
        for p, on in zip(fn.params, d.pattern.active):
            if on:
                params += [f"{self.layout.part_type(p.type).text} {n}" for n in self.layout.names(p.name)]
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
                if block.label in self.flow.doomed and inst.opcode != "ret":  # the program stops there
                    self.copy(inst)
                    continue
                if inst.opcode not in _MASKABLE and any(o.value in self.maybe for o in inst.operands):
                    raise self.fail(MIXED_POINTER)
                handler = getattr(self, "op_" + inst.opcode.replace("-", "_"), None)
                if handler is None:
                    self.other(inst)
                else:
                    handler(inst)
        return "\n".join([head, *self.lines, "}"])

    def copy(self, inst: Instruction) -> None:
        tag = self.b.tag(PRIMAL) if inst.opcode in ("load", "store") else ""
        self.lines.append("  " + inst.text + tag)

    def phi(self, inst: Instruction) -> None:
        if inst.result not in self.active:
            return
        pt = self.layout.part_type(inst.type)
        incoming = [(self.shadow(v) or self.layout.zero(inst.type), block) for v, block in inst.incoming]
        for k, name in enumerate(self.layout.names(inst.result)):
            parts = ", ".join(f"[ {s[k].ref}, {block} ]" for s, block in incoming)
            self.lines.append(f"  {name} = phi {pt.text} {parts}")
        if inst.result in self.maybe:
            masks = ", ".join(f"[ {self.mask(v)}, {block} ]" for v, block in inst.incoming)
            self.lines.append(f"  {self.mask(Operand(PTR, inst.result))} = phi i1 {masks}")

    def other(self, inst: Instruction) -> None:
        if any(self._on(o) for o in inst.operands) or inst.result in self.active or \
                any(v in self.active for v in inst.mentions()):
            vector = next((t for t in [inst.type, *(o.type for o in inst.operands)] if t.kind == "vector"), None)
            raise self.fail(f"the '{inst.opcode}' instruction" +
                            (f" on a vector value ('{vector.text}'): {VECTOR_VALUES}" if vector else ""))
        self.copy(inst)

    def bind(self, inst: Instruction, value: Shadow) -> None:
        self.layout.bind(self.b, inst.result, value)

    # arithmetic -----------------------------------------------------------
    def elementwise(self, inst: Instruction, rule_name: str, args: list[Operand]) -> None:
        """Any primitive with a rule: d_out = sum of partial_i * d_in_i over active args."""
        self.copy(inst)
        if inst.result not in self.active:
            return
        rule = rule_for(rule_name)
        if rule is None:
            raise self.fail(f"'{rule_name.lstrip('@')}', which has no derivative rule")
        if rule.refuse is not None and (why := rule.refuse([self._on(a) for a in args])):
            raise self.fail(why)
        x = [V(a.type, a.value) for a in args]
        partials = rule.partials(self.b, x, V(inst.type, inst.result))
        total = None
        for a, p in zip(args, partials):
            if p is None or not self._on(a):
                continue
            term = (self.layout.scale_masked if rule.masks else self.layout.scale)(self.b, p, self.shadow(a))
            total = term if total is None else self.layout.add(self.b, total, term)
        self.bind(inst, total or self.layout.zero(inst.type))

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
            zero = self.layout.zero(inst.type)
            a = self.shadow(inst.operands[1]) or zero
            c = self.shadow(inst.operands[2]) or zero
            cond = inst.operands[0]
            self.bind(inst, self.layout.select(self.b, V(cond.type, cond.value), a, c))
            if inst.result in self.maybe:
                self.b.emit(f"{self.mask(Operand(PTR, inst.result))} = select {cond}, i1 "
                            f"{self.mask(inst.operands[1])}, i1 {self.mask(inst.operands[2])}")

    def _cast(self, inst):
        self.copy(inst)
        if inst.result in self.active:
            self.bind(inst, self.layout.cast(self.b, inst.opcode, self.shadow(inst.operands[0]), inst.type))

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
        t = inst.type
        if t.kind not in ("float", "ptr", "int"):
            raise self.fail(f"a load of '{t.text}' from memory holding derivatives")
        ptr = inst.operands[0]
        if t.kind == "ptr" and ptr.value in self.maybe:
            raise self.fail(MIXED_POINTER)
        lanes = self.guarded(ptr, self.shadow(ptr), False)
        self.bind(inst, self.layout.load(self.b, t, lanes, inst.align))

    def op_store(self, inst):
        self.copy(inst)
        value, ptr = inst.operands
        if " atomic " in inst.text and self._on(value):
            raise self.fail("an atomic store of data carrying derivatives")
        if not self._on(ptr):
            if self._on(value) and carries(self.mode.module, value.type):
                raise self.fail("a store of a value carrying derivatives to memory adgen keeps no derivatives of "
                                "(a global variable, say)")
            return
        t = value.type
        if t.kind not in ("float", "ptr", "int"):
            if carries(self.mode.module, t):
                raise self.fail(f"a store of '{t.text}' into memory holding derivatives")
            return
        s = self.shadow(value) if t.kind != "int" or self._on(value) else None
        if s is None:
            if t.kind == "ptr":
                raise self.fail("a pointer into memory adgen keeps no derivatives of, stored where derivatives are kept")
            s = self.layout.zero(t)
        if value.value in self.maybe:
            raise self.fail(MIXED_POINTER)
        self.layout.store(self.b, s, self.guarded(ptr, self.shadow(ptr), True), inst.align)

    def op_getelementptr(self, inst):
        self.copy(inst)
        if inst.result in self.active:
            self.bind(inst, self.layout.gep(self.b, inst, self.shadow(inst.operands[0]), lambda o: V(o.type, o.value)))

    def op_alloca(self, inst):
        self.copy(inst)
        count = V(inst.count.type, inst.count.value) if inst.count else V(I64, "1")
        if count.type.text != "i64":
            count = self.b.cast("zext", count, I64)
        self.bind(inst, self.layout.allocate(self.b, self.b.size_of(inst.source_type, count), on_stack=True))

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
        if is_allocator(self.mode.module, name):
            return self.allocate(inst)
        if name == "realloc":
            return self.reallocate(inst)
        if name == "free":
            return self.release(inst)
        if (not any(self._on(a) for a in args) and inst.result not in self.active) or \
                inactive_call(self.mode.module, inst):
            return self.copy(inst)  # nothing flows in (nor memory allocated), or nothing flows out
        if rule_for(inst.callee) is not None:  # a libm function, or one with a derivative written by hand
            return self.elementwise(inst, inst.callee, args)
        if target is not None and (not target.declaration or inst.callee in self.mode.module.custom):
            return self.call_derivative(inst, target)
        raise self.fail(no_derivative(inst))

    def call_derivative(self, inst, target: Function):
        if target.variadic:
            raise self.fail(f"a call to variadic function '{callee_name(inst)}'")
        active = tuple(self._on(a) and self.layout.part_type(a.type) is not None for a in inst.operands)
        d = self.mode.derive(Pattern(target.name, active, self.n, self.layout.kind))
        args = [str(V(a.type, a.value)) for a in inst.operands]
        for a, on in zip(inst.operands, active):
            if on:
                args += [str(x) for x in self.shadow(a)]
        call = f"call {d.ret_type.text} {d.name}({', '.join(args)})"
        if inst.result is None:
            self.b.emit(call)
        elif d.returns_shadow:
            both = self.b.value(d.ret_type, call)
            self.lines.append(f"  {inst.result} = extractvalue {both}, 0")
            if inst.result in self.active:
                parts = tuple(self.b.value(d.ret_type.elems[k + 1], f"extractvalue {both}, {k + 1}")
                              for k in range(self.layout.parts))
                self.bind(inst, parts)
        else:
            self.lines.append(f"  {inst.result} = {call}")

    # aggregates ------------------------------------------------------------
    def op_extractvalue(self, inst):
        self.copy(inst)
        if inst.result in self.active:
            idx = ", ".join(str(i) for i in inst.indices)
            t = self.layout.part_type(inst.type)
            self.bind(inst, tuple(self.b.value(t, f"extractvalue {a}, {idx}") for a in self.shadow(inst.operands[0])))

    def op_insertvalue(self, inst):
        self.copy(inst)
        if inst.result in self.active:
            agg = self.shadow(inst.operands[0]) or self.layout.zero(inst.type)
            val = self.shadow(inst.operands[1])
            if val is None:
                raise self.fail("a pointer into memory adgen keeps no derivatives of, put into an aggregate")
            idx = ", ".join(str(i) for i in inst.indices)
            t = self.layout.part_type(inst.type)
            self.bind(inst, tuple(self.b.value(t, f"insertvalue {a}, {v}, {idx}") for a, v in zip(agg, val)))

    # control flow ----------------------------------------------------------
    def op_ret(self, inst):
        d = self.derived
        if not d.returns_shadow:
            return self.copy(inst)
        value = inst.operands[0]
        s = self.shadow(value)
        if s is None:
            raise self.fail("a returned pointer into memory adgen keeps no derivatives of")
        out = self.b.value(d.ret_type, f"insertvalue {d.ret_type.text} poison, {value}, 0")
        for k, part in enumerate(s):
            out = self.b.value(d.ret_type, f"insertvalue {out}, {part}, {k + 1}")
        self.b.emit(f"ret {out}")

    def op_br(self, inst):
        self.copy(inst)

    op_switch = op_unreachable = op_br

    def _passive(self, inst):
        self.copy(inst)

    op_fcmp = op_icmp = op_ptrtoint = op_sitofp = op_uitofp = op_fptosi = op_fptoui = _passive
    op_add = op_sub = op_mul = op_udiv = op_sdiv = op_urem = op_srem = op_shl = op_lshr = op_ashr = _passive
    op_and = op_or = op_xor = op_trunc = op_zext = op_sext = _passive
