"""Forward mode's tangents of values computed from values: primitives with a derivative rule
(rules.py), select, casts, aggregates, and the integer operations that carry none. A part of
the forward writer (forward/function.py), kept apart."""

from __future__ import annotations

from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.ir.builder import V
from adgen.ir_ad.ir import PTR, Instruction, Operand
from adgen.ir_ad import vectors
from adgen.ir_ad.analysis.flow import addresses_in
from adgen.ir_ad.rules import divides_one_by, rule_for


class ArithmeticRules:
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
        if rule.choice is not None and inst.type.kind != "vector":  # a select by the choice (rules.Rule.choice)
            zero = self.layout.zero(inst.type)
            t0, t1 = (self.shadow(a) if self._on(a) else zero for a in args)
            first = rule.choice(self.b, x, V(inst.type, inst.result))
            return self.bind(inst, self.layout.select(self.b, first, t0, t1))
        if inst.opcode == "call" and divides_one_by(self.fn, inst):  # (the code's 1 / r shared: sqrt's, rules.py)
            self.b.divides = lambda v: v.ref == inst.result
        self.b.at_hand = lambda v: v.ref == inst.result  # (the primal computes it here)
        try:
            partials = rule.partials(self.b, x, V(inst.type, inst.result))
        finally:
            self.b.divides = self.b.at_hand = None
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

    # the lanes of vector values (vectors.py) --------------------------------
    def _lanes(self, inst):
        self.copy(inst)
        if inst.result in self.active:
            self.bind(inst, vectors.tangent(self.b, inst, lambda o: V(o.type, o.value),
                                            lambda o: self.shadow(o) or self.layout.zero(o.type)))

    op_extractelement = op_insertelement = op_shufflevector = _lanes

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
        if inst.operands[0].value in self.flow.lanes_as_integers:  # (its tangent already of this type)
            self.copy(inst)
            if inst.result in self.active:
                self.bind(inst, self.shadow(inst.operands[0]))
            return
        self._cast(inst)

    def op_freeze(self, inst):
        self.copy(inst)
        if inst.result in self.active:
            self.bind(inst, self.shadow(inst.operands[0]))

    def op_inttoptr(self, inst):
        """A pointer made of an integer that carries no derivative (an alignment, Rust's
        `NonNull::dangling`) points at no derivatives: its shadow is null, as a null pointer's
        is. One made of an integer that does (the bits of a float), or of the address of memory
        with derivatives (an address aligned or tagged: addresses_in), is refused."""
        moved = addresses_in(self.flow.defs, inst.operands[0])
        if self._on(inst.operands[0]) or any(self._on(Operand(PTR, p)) for p in moved):
            raise self.fail("an integer turned into a pointer (inttoptr): adgen cannot follow derivatives through it")
        self.copy(inst)
        if inst.result in self.active:
            self.bind(inst, self.layout.zero(PTR))

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
                raise Unsupported(self.fn.name, inst, "a pointer into memory adgen keeps no derivatives of, put into "
                                  "an aggregate", shadowless=True)
            idx = ", ".join(str(i) for i in inst.indices)
            t = self.layout.part_type(inst.type)
            self.bind(inst, tuple(self.b.value(t, f"insertvalue {a}, {v}, {idx}") for a, v in zip(agg, val)))

    # no tangents: comparisons, integers, conversions to and from them -------
    def _passive(self, inst):
        self.copy(inst)

    op_fcmp = op_icmp = op_ptrtoint = op_sitofp = op_uitofp = op_fptosi = op_fptoui = _passive
    op_add = op_sub = op_mul = op_udiv = op_sdiv = op_urem = op_srem = op_shl = op_lshr = op_ashr = _passive
    op_and = op_or = op_xor = op_trunc = op_zext = op_sext = _passive
