"""Which values of a function carry tangents in one forward derivative, and which pointers may
point into memory without a shadow (their shadow is used only behind a mask). Decided before
the forward writer emits anything."""

from __future__ import annotations

import weakref

from adgen.ir_ad.analysis.flow import CFG, Memory, returned_params, returns_fresh
from adgen.ir_ad.analysis.slots import slots
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.ir import Function, Instruction, Module, Operand, floating
from adgen.ir_ad.calls import ALLOCATE, DEFINED, INACTIVE, REALLOCATE, RULE, kind_of, refused
from adgen.ir_ad.shadows import VECTOR_VALUES, Layout, carries, mask_name, points_nowhere, wide_integer
from adgen.ir_ad.analysis.uses import floats_as_integer_vectors, floats_as_wide_integers, unread_shadows
from adgen.ir_ad.vectors import LANE_OPS


class TangentFlow:
    def __init__(self, module: Module, fn: Function, active_params: tuple[bool, ...], layout: Layout,
                 runtime: bool = False):
        """`runtime`: pointers without shadows are their own where one is needed (runtime
        activity, shadows.py), so none is behind a mask."""
        self.module, self.fn, self.layout = module, fn, layout
        self.runtime = runtime
        self._memory: Memory | None = None
        self.active: set[str] = set()
        self.maybe: set[str] = set()
        self.defs = {i.result: i for i in fn.instructions() if i.result}
        self.slots = slots(module, fn)
        self.unread = unread_shadows(fn)
        self.wide = floats_as_wide_integers(fn)
        self.lanes_as_integers = floats_as_integer_vectors(fn)  # loads of floats as integer lanes -> their type
        for inst in fn.instructions():
            why = refused(module, inst)
            if why is not None:
                raise Unsupported(fn.name, inst, why)
        self._analyze(active_params)

    def _analyze(self, active_params) -> None:
        """Which values carry derivatives: a fixpoint, since phis see values from later blocks.
        Values of blocks from which no path returns (a panic's) carry none (CFG.doomed)."""
        self.cfg = cfg = CFG(self.fn)
        self.doomed = cfg.doomed
        self.doomed_values = {v for v, b in cfg.block_of.items() if b in self.doomed}
        for p, on in zip(self.fn.params, active_params):
            if on:
                self.active.add(p.name)
        changed = True
        while changed:
            changed = False
            for inst in self.fn.instructions():
                if inst.result and inst.result in self.doomed_values:
                    continue
                if inst.result and inst.result not in self.active and self.has_tangent(inst):
                    self.active.add(inst.result)
                    changed = True
                elif floating(inst.type) and inst.type.kind == "vector" and any(self.on(o) for o in inst.operands) \
                        and self.layout.part_type(inst.type) is None:  # (interleaved lanes)
                    raise Unsupported(self.fn.name, inst, f"a vector value ('{inst.type.text}') carrying "
                                                          f"derivatives: {VECTOR_VALUES}")
        # Pointers that may point into memory without shadow (a select or phi between an active
        # pointer and a const one): their shadow is used only behind a mask.
        changed = not self.runtime
        while changed:
            changed = False
            for inst in self.fn.instructions():
                if inst.result in self.active and inst.result not in self.maybe and inst.type.kind == "ptr" \
                        and self._maybe(inst):
                    self.maybe.add(inst.result)
                    changed = True

    def on(self, op: Operand) -> bool:
        return op.value in self.active

    def may_be_itself(self, op: Operand) -> bool:
        """Whether a pointer with a shadow may be its own shadow at run time (runtime activity,
        shadows.py): any but one into this function's own allocations."""
        if not self.runtime or op.value not in self.active or op.type.kind != "ptr":
            return False
        if self._memory is None:
            self._memory = Memory(self.fn, self.cfg, self.module)
        return self._memory.base(op.value).kind != "fresh"

    def _shadowless(self, op: Operand) -> bool:
        return op.value not in self.active and not points_nowhere(op, self.defs)

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
            inst = self.defs[op.value]
            if inst.opcode in ("phi", "select"):
                return mask_name(op.value)
            return self.mask(inst.operands[0])
        return "true" if op.value in self.active else "false"

    def has_tangent(self, inst: Instruction) -> bool:
        """Whether an instruction's result has a tangent, given which operands do."""
        op = inst.opcode
        ops = inst.operands
        has = lambda t: self.layout.part_type(t) is not None
        if inst.result in self.unread:  # (a function pointer only called through, say)
            return False
        if op == "phi":
            return any(v.value in self.active for v, _ in inst.incoming)
        if op == "select":
            return self.on(ops[1]) or self.on(ops[2])
        if op in ("fadd", "fsub", "fmul", "fdiv", "frem", "fneg"):
            return any(self.on(o) for o in ops) and has(inst.type)
        if op in LANE_OPS:
            return any(self.on(o) for o in ops[:2]) and has(inst.type)
        if op == "bitcast" and self.on(ops[0]) and ops[0].type.kind == "vector" and \
                inst.type != self.lanes_as_integers.get(ops[0].value, ops[0].type):
            raise Unsupported(self.fn.name, inst, f"a vector carrying derivatives ('{ops[0].type.text}') taken as "
                                                  f"another type ('{inst.type.text}'): adgen cannot follow derivatives "
                                                  "through its bits")
        if op in ("fpext", "fptrunc", "bitcast", "freeze"):
            return self.on(ops[0]) and has(inst.type)
        if op == "load":
            if inst.result in self.wide and self.on(ops[0]):
                raise Unsupported(self.fn.name, inst, wide_integer(inst.type))
            return self.on(ops[0]) and has(self.lanes_as_integers.get(inst.result, inst.type))
        if op == "getelementptr":
            return self.on(ops[0])
        if op == "alloca":  # (a slot only where what is stored into it has a tangent)
            return inst.result not in self.slots or any(self.on(v) for v in self.slots[inst.result])
        if op == "extractvalue":
            return self.on(ops[0]) and carries(self.module, inst.type)
        if op == "insertvalue":
            return self.on(ops[0]) or self.on(ops[1])
        if op == "call":
            kind = kind_of(self.module, inst)
            if kind in (ALLOCATE, REALLOCATE):
                return True
            if kind == INACTIVE:
                return False
            target = self.module.functions.get(inst.callee)
            source = kind == DEFINED and not target.declaration
            if not any(self.on(o) for o in ops):  # a constructor: memory it allocates has tangents
                return source and returns_fresh(self.module, target)
            if source:
                if not carries(self.module, inst.type):
                    return False
                if inst.type.kind == "ptr" and inst.callee not in self.module.custom and \
                        not returns_fresh(self.module, target):  # (into the memory of which arguments: flow.py)
                    params = returned_params(self.module, target)
                    return params is None or any(self.on(ops[k]) for k in params if k < len(ops))
                if inst.callee in self.module.custom or inst.type.kind != "float":
                    return True
                active = tuple(self.on(o) and self.layout.part_type(o.type) is not None for o in ops)
                return returns_tangent(self.module, target, active, self.layout)
            return kind == RULE and has(inst.type)
        return False


_RETURNS_TANGENT: "weakref.WeakKeyDictionary[Module, dict]" = weakref.WeakKeyDictionary()  # by module, while it lives


def returns_tangent(module: Module, fn: Function, active: tuple[bool, ...], layout: Layout) -> bool:
    """Whether fn's returned value carries a tangent when the given parameters do (a callee that
    takes an active pointer may still return a value computed from constants only). A recursive
    call asks again while the answer is open: it is assumed to, which errs on the safe side."""
    memo = _RETURNS_TANGENT.setdefault(module, {})
    key = (fn.name, active, layout.width, layout.kind)
    if key not in memo:
        memo[key] = True
        flow = TangentFlow(module, fn, active, layout)
        memo[key] = any(i.opcode == "ret" and i.operands and flow.on(i.operands[0]) for i in fn.instructions())
    return memo[key]
