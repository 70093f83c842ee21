"""The writer of one forward derivative function: its frame (signature, blocks, phis, return),
the tangents of operands, and the dispatch of each instruction to its rule (forward/arithmetic.py,
forward/memory.py, forward/call_sites.py)."""

from __future__ import annotations

from adgen.ir_ad.ir.builder import PRIMAL, Builder
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.ir import PTR, Function, Instruction, Operand
from adgen.ir_ad.analysis.forward_activity import TangentFlow
from adgen.ir_ad.forward.arithmetic import ArithmeticRules
from adgen.ir_ad.forward.call_sites import CallRules
from adgen.ir_ad.forward.derived import Derived
from adgen.ir_ad.forward.memory import MemoryRules
from adgen.ir_ad.shadows import MIXED_POINTER, VECTOR_VALUES, Layout, Shadow, self_shadowed

# What may use a pointer whose shadow is behind a mask (see FunctionWriter.guarded).
_MASKABLE = {"load", "store", "getelementptr", "phi", "select", "freeze", "bitcast", "icmp", "ptrtoint"}


class FunctionWriter(ArithmeticRules, MemoryRules, CallRules):
    """Writes one forward derivative function."""

    def __init__(self, mode, fn: Function, derived: Derived, layout: Layout):
        self.mode, self.fn, self.derived, self.layout = mode, fn, derived, layout  # mode: a ForwardMode
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
            if self_shadowed(self.mode.module, op.value, self.flow.defs):
                return self.layout.itself(op.value)
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
                self.instruction(inst)
        return "\n".join([head, *self.lines, "}"])

    def instruction(self, inst: Instruction) -> None:
        """The instruction and its tangent, by the rule for its opcode (`op_<opcode>`)."""
        if inst.opcode not in _MASKABLE and any(o.value in self.maybe for o in inst.operands):
            raise self.fail(MIXED_POINTER)
        handler = getattr(self, "op_" + inst.opcode.replace("-", "_"), None)
        if handler is None:
            self.other(inst)
        else:
            handler(inst)

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

    # ------------------------------------------------------------------ control flow
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
