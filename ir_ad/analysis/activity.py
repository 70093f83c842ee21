"""Activity analysis for reverse mode: which values of a function carry adjoints (floating values
that depend on an active input), which pointers have shadows, which pointers may lack one (a
select or phi between shadowed and unshadowed memory), which adjoints can reach an output at
all (`useful`), and the floating type of the memory a pointer points into (memtypes.py)."""

from __future__ import annotations


from adgen.ir_ad.analysis.flow import CFG, Memory, returned_params, returns_fresh
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.ir import Function, Instruction, Module, Operand, Type, float_type, floating
from adgen.ir_ad.analysis.masked import masked_slice
from adgen.ir_ad.analysis.slots import slots
from adgen.ir_ad.analysis.memtypes import NOT_FLOATING, MemoryTypes
from adgen.ir_ad.analysis.uses import atomic_update_refusal, floats_as_integer_vectors, floats_as_wide_integers, \
    unread_shadows
from adgen.ir_ad.rules import rule_for
from adgen.ir_ad.calls import DEFINED, allocates, callee_name, every_rank, kind_of, refused
from adgen.ir_ad.shadows import carries, mask_name, points_nowhere, wide_integer
from adgen.ir_ad.vectors import LANE_OPS


def scalar_type(t: Type, memtype: str) -> Type | None:
    """The float type of an active scalar argument's adjoint: its own, or for an integer that
    carries a float's bits (a double passed on as an `unsigned long long`), the float's."""
    if t.kind == "float":
        return t
    if t.kind == "int" and memtype and float_type(memtype).bits == t.bits:
        return float_type(memtype)
    return None



class ActivityAnalysis:
    """Which values of one function carry adjoints, and which pointers carry shadows."""

    def __init__(self, fn: Function, module: Module, cfg: CFG, memory: Memory, active: tuple[bool, ...],
                 ret_active: bool, memtypes: tuple[str, ...], ret_masked: bool = False, runtime: bool = False):
        """`ret_masked`: a caller may mask the result (masked.py); `runtime`: pointers without
        shadows are their own where one is needed (runtime activity, shadows.py), so none is
        behind a mask."""
        self.fn, self.module, self.cfg, self.memory = fn, module, cfg, memory
        self.runtime = runtime
        self.params = {p.name: i for i, p in enumerate(fn.params)}
        self.arg_active, self.ret_active, self.arg_memtypes = active, ret_active, memtypes
        self.inst: Instruction | None = None
        self.floaty: dict[str, Type] = {}  # values with adjoints -> their float type
        self.pointers: set[str] = set()  # pointer values with shadows
        self.maybe: set[str] = set()  # pointers whose shadow may be missing
        self.useful: set[str] = set()  # values whose adjoint can reach an output
        self.types = MemoryTypes(fn, module, cfg, memory, memtypes)
        self.slots = slots(module, fn)
        self.unread = unread_shadows(fn)
        self.wide = floats_as_wide_integers(fn)
        self.lanes_as_integers = floats_as_integer_vectors(fn)  # loads of floats as integer lanes -> their type
        for inst in fn.instructions():
            why = refused(module, inst)
            if why is not None:
                raise Unsupported(fn.name, inst, why)
        for i, (p, on) in enumerate(zip(fn.params, active)):
            if on and scalar_type(p.type, memtypes[i] if i < len(memtypes) else ""):
                self.floaty[p.name] = scalar_type(p.type, memtypes[i] if i < len(memtypes) else "")
            elif on and p.type.kind == "ptr":
                self.pointers.add(p.name)
        changed = True
        while changed:
            changed = False
            for inst in fn.instructions():
                if not inst.result or inst.result in self.floaty or inst.result in self.pointers or \
                        cfg.block_of[inst.result] in cfg.doomed:
                    continue
                self.inst = inst
                kind = self._varies(inst)
                if kind == "ptr":
                    self.pointers.add(inst.result)
                    changed = True
                elif kind is not None:
                    self.floaty[inst.result] = kind
                    changed = True
        if not runtime:
            self._find_maybe()
        self._find_useful()
        # values whose partials take a strong zero
        self.masked = masked_slice(fn, cfg, memory, self.floaty, module, ret_masked)
        self.inst = None

    def fail(self, what: str) -> Unsupported:
        return Unsupported(self.fn.name, self.inst, what)

    # ------------------------------------------------------------------ queries
    def on(self, op: Operand) -> bool:
        """Whether an operand carries a derivative (an adjoint or a shadow)."""
        return op.value in self.floaty or op.value in self.pointers

    def active(self, value: str) -> bool:
        """Whether a value's adjoint is worth keeping: it carries one and it can reach an output."""
        return value in self.floaty and value in self.useful

    def has_shadow(self, op: Operand) -> bool:
        return op.value in self.pointers

    def derived_callee(self, inst: Instruction) -> Function | None:
        """The function of the sources a call differentiates into, when derivatives flow into it."""
        if inst.opcode != "call" or not (any(self.on(a) for a in inst.operands) or inst.result in self.pointers or
                                         every_rank(self.module, inst)):
            return None
        return self._source_callee(inst)

    def _source_callee(self, inst: Instruction) -> Function | None:
        return self.module.functions[inst.callee] if kind_of(self.module, inst) == DEFINED else None

    def _returns_shadow(self, inst: Instruction) -> bool:
        """A call returning a pointer with a shadow: into memory with derivatives that the caller
        passed (an argument carries one, among those whose memory it may return: see
        returned_params), or memory the callee allocated (see returns_fresh)."""
        target = self._source_callee(inst)
        if target is None:
            return False
        if returns_fresh(self.module, target):
            return True
        params = returned_params(self.module, target)
        args = inst.operands if params is None else [inst.operands[k] for k in params if k < len(inst.operands)]
        return any(self.on(a) for a in args)

    # ------------------------------------------------------------------ the fixpoint
    def _pointer_varies(self, inst: Instruction) -> bool:
        """Whether a pointer has a shadow."""
        op, ops = inst.opcode, inst.operands
        if inst.result in self.unread:  # (a function pointer only called through, say)
            return False
        if op == "alloca":  # (a slot only where what is stored into it carries a derivative)
            return inst.result not in self.slots or any(self.on(v) for v in self.slots[inst.result])
        if op == "phi":
            return any(v.value in self.pointers for v, _ in inst.incoming)
        if op == "select":
            return ops[1].value in self.pointers or ops[2].value in self.pointers
        if op in ("getelementptr", "load", "freeze", "bitcast", "addrspacecast"):
            return self.on(ops[0])
        return op == "call" and (allocates(self.module, inst) or self._returns_shadow(inst))

    def _varies(self, inst: Instruction):
        """None, "ptr" (a pointer with a shadow) or the float type of a value with an adjoint."""
        op, ops, t = inst.opcode, inst.operands, inst.type
        if op in ("atomicrmw", "cmpxchg") and any(self.on(o) for o in ops):  # (OpenMP's `atomic`, say)
            why = atomic_update_refusal(self.fn, inst)
            if why is not None:
                raise self.fail(why)
            return None  # (an update: its old value unused)
        if t.kind == "ptr":
            return "ptr" if self._pointer_varies(inst) else None
        float_t = t if floating(t) else None
        if t.kind == "other" and any(v in self.floaty or v in self.pointers for v in inst.mentions()):
            raise self.fail(f"the '{op}' instruction")
        if op in LANE_OPS:  # (vector values: vectors.py)
            return float_t if any(o.value in self.floaty for o in ops[:2]) else None
        if op == "bitcast" and ops[0].value in self.floaty and self.floaty[ops[0].value].kind == "vector" \
                and t != self.floaty[ops[0].value]:  # (but floats loaded as integer lanes, taken back)
            raise self.fail(f"a vector carrying derivatives ('{ops[0].type.text}') taken as another type "
                            f"('{t.text}'): adgen cannot follow derivatives through its bits")
        if op == "load" and self.on(ops[0]):
            if inst.result in self.wide:
                raise self.fail(wide_integer(t))
            if inst.result in self.lanes_as_integers:
                return self.lanes_as_integers[inst.result]
            if float_t:
                return float_t
            if t.kind == "int" and t.bits in (32, 64) and \
                    self.module.tbaa_types(inst.tbaa)[:1] not in [(n,) for n in NOT_FLOATING]:  # float data
                mt = self.memtype(ops[0].value)  # moved as integer bits (not an `int` of C's: its TBAA says so)
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
            if op in ("extractvalue", "insertvalue") or (op == "call" and any(self.on(o) for o in ops)
                                                         and carries(self.module, t)):
                if op == "call" and any(self.on(o) for o in ops):
                    raise self.fail(f"a call to '{callee_name(inst)}', which returns a struct by value ('{t.text}') "
                                    "and could not be inlined (noinline, or recursive; reverse mode has no "
                                    "adjoints of struct values, so let it write its result through a pointer)")
                if any(self.on(o) for o in ops):
                    raise self.fail(f"a value of type '{t.text}' carrying derivatives (aggregates are supported in "
                                    "forward mode only)")
            return None
        if op in ("fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "fpext", "fptrunc"):
            return float_t if any(o.value in self.floaty for o in ops) else None
        if op == "call":
            if not any(self.on(o) for o in ops):
                return None
            if self.derived_callee(inst) is not None and any(o.type.kind == "vector" and self.on(o) for o in ops):
                raise self.fail(f"a call to '{callee_name(inst)}' passing a vector value carrying derivatives "
                                "(vector values are differentiated within a function: let it be inlined)")
            if self.derived_callee(inst) is not None or rule_for(inst.callee) is not None:
                return float_t
        return None

    def _find_maybe(self) -> None:
        """Pointers that may point into memory without a shadow (a select or phi between an
        argument with derivatives and a const one): their shadows are used behind a mask."""
        def shadowless(o: Operand) -> bool:
            return not self.has_shadow(o) and not points_nowhere(o, self.cfg.defs)

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

    def may_be_itself(self, op: Operand) -> bool:
        """Whether a pointer with a shadow may be its own shadow at run time (runtime activity,
        shadows.py): any but one into this function's own allocations."""
        return self.runtime and op.value in self.pointers and self.memory.base(op.value).kind != "fresh"

    def mask(self, op: Operand) -> str:
        """The i1 saying whether a pointer operand has a real shadow ("true"/"false" when known)."""
        if op.value in self.maybe:
            return mask_name(self.mask_root(op.value).result)
        return "true" if op.value in self.pointers else "false"

    def mask_root(self, value: str) -> Instruction:
        """The select or phi a maybe-shadowed pointer comes from."""
        inst = self.cfg.defs[value]
        while inst.opcode not in ("phi", "select"):
            inst = self.cfg.defs[inst.operands[0].value]
        return inst

    def _find_useful(self) -> None:
        """Values whose adjoint can reach an output: the returned value, stores into shadowed
        memory, and the arguments of differentiated calls; then backwards through operands."""
        work: list[str] = []
        if self.ret_active:
            for inst in self.fn.instructions():
                if inst.opcode == "ret" and inst.operands and inst.operands[0].value in self.floaty:
                    work.append(inst.operands[0].value)
        for inst in self.fn.instructions():
            if self.cfg.block_of_inst(inst) in self.cfg.doomed:
                continue
            if inst.opcode == "store" and inst.operands[1].value in self.pointers:
                work.append(inst.operands[0].value)
            elif inst.opcode == "atomicrmw" and inst.operands[0].value in self.pointers:
                work.append(inst.operands[1].value)
            elif self.derived_callee(inst) is not None:
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

    def holds_no_floats(self, *pointers: str, length: Operand | None = None, copy: Instruction | None = None) -> bool:
        """See MemoryTypes.holds_no_floats."""
        return self.types.holds_no_floats(*pointers, length=length, copy=copy)

    def memtype(self, pointer: str) -> Type | None:
        """See MemoryTypes.memtype."""
        return self.types.memtype(pointer)
