"""The writer of one forward derivative function: its frame (signature, blocks, phis, return),
the tangents of operands, and the dispatch of each instruction to its rule (forward/arithmetic.py,
forward/memory.py, forward/call_sites.py)."""

from __future__ import annotations

from adgen.ir_ad.ir.builder import PRIMAL, Builder, V
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.ir import PTR, Function, Instruction, Operand
from adgen.ir_ad.analysis.flow import returned_params, returns_fresh
from adgen.ir_ad.analysis.forward_activity import TangentFlow
from adgen.ir_ad.forward.arithmetic import ArithmeticRules
from adgen.ir_ad.forward.call_sites import CallRules
from adgen.ir_ad.forward.derived import Derived
from adgen.ir_ad.forward.memory import MemoryRules
from adgen.ir_ad.shadows import MIXED_POINTER, VECTOR_VALUES, Layout, Shadow, points_nowhere, self_shadow, self_shadowed

# What may use a pointer whose shadow is behind a mask (see FunctionWriter.guarded).
_MASKABLE = {"load", "store", "getelementptr", "phi", "select", "freeze", "bitcast", "icmp", "ptrtoint"}


class FunctionWriter(ArithmeticRules, MemoryRules, CallRules):
    """Writes one forward derivative function."""

    def __init__(self, mode, fn: Function, derived: Derived, layout: Layout):
        self.mode, self.fn, self.derived, self.layout = mode, fn, derived, layout  # mode: a ForwardMode
        self.n = derived.pattern.width
        self.lines: list[str] = []
        self.b = Builder(mode.decls, self.lines)
        self.flow = TangentFlow(mode.module, fn, derived.pattern.active, layout, derived.pattern.runtime)
        self.active, self.maybe = self.flow.active, self.flow.maybe
        self._on, self.mask = self.flow.on, self.flow.mask
        self.inst: Instruction | None = None

    def guarded(self, op: Operand, lanes: Shadow, store: bool) -> Shadow:
        """Shadow addresses safe to use: the real ones where the pointer has a shadow, else zeros
        to read or a sink to write (where it may be its own shadow, runtime activity: shadows.py)."""
        itself = self.itself(op, lanes)
        if op.value not in self.maybe and itself is None:
            return lanes
        other = "%\"adgen'sink\"" if store else "@\"adgen.zeros\""
        self.mode.uses_zeros = True
        if itself is not None:
            return tuple(self.b.value(PTR, f"select {itself}, ptr {other}, {p}") for p in lanes)
        return tuple(self.b.value(PTR, f"select i1 {self.mask(op)}, {p}, ptr {other}") for p in lanes)

    def itself(self, op: Operand, lanes: Shadow) -> V | None:
        """i1: whether a pointer is its own shadow, where it may be (runtime activity, shadows.py);
        None where it is not."""
        return self_shadow(self.b, lanes, V(PTR, op.value)) if self.flow.may_be_itself(op) else None

    # ------------------------------------------------------------------ values
    def shadow(self, op: Operand) -> Shadow | None:
        """The derivative of an operand: its own, a zero for inactive data, None when there is none."""
        t = self.flow.lanes_as_integers.get(op.value, op.type)  # (floats loaded as integer lanes: their type's)
        if self.layout.part_type(t) is None:
            return None
        if op.value in self.active:
            return self.layout.named(op.value, t)
        if op.type.kind == "ptr":
            if points_nowhere(op, self.flow.defs):
                return self.layout.zero(PTR)
            if self_shadowed(self.mode.module, op.value, self.flow.defs) or self.flow.runtime:  # (shadows.py)
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
            if index == 0 and (self.maybe or self.flow.runtime):
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
            raise Unsupported(self.fn.name, inst, MIXED_POINTER, shadowless=True)
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
        if s is None and _only_inactive_returned(self.mode.module, self.fn, self.derived.pattern.active):
            s = self.layout.zero(value.type)  # (read by no caller: forward_activity.py)
        if s is None:
            raise Unsupported(self.fn.name, inst, "a returned pointer into memory adgen keeps no derivatives of",
                              shadowless=True)
        out = self.b.value(d.ret_type, f"insertvalue {d.ret_type.text} poison, {value}, 0")
        for k, part in enumerate(s):
            out = self.b.value(d.ret_type, f"insertvalue {out}, {part}, {k + 1}")
        self.b.emit(f"ret {out}")

    def op_br(self, inst):
        self.copy(inst)

    op_switch = op_unreachable = op_br


def _only_inactive_returned(module, fn: Function, active: tuple[bool, ...]) -> bool:
    """Whether the pointer `fn` returns points only into the memory of arguments without
    tangents (returned_params): its callers take it for a pointer without one (libstdc++'s
    `map::at` on a `const` map, its key a local string that has a shadow)."""
    params = returned_params(module, fn)
    return params is not None and not returns_fresh(module, fn) and \
        not any(active[k] for k in params if k < len(active))
