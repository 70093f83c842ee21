"""Forward mode's calls, by their callee's kind (ir_ad/calls.py): intrinsics copied as they
are, memory and allocation handed to forward/memory.py, a libm function by its derivative rule,
a function of the sources by its own forward derivative. A part of the forward writer
(forward/function.py), kept apart."""

from __future__ import annotations

from adgen.ir_ad.ir.builder import V
from adgen.ir_ad.calls import (ALLOCATE, COPIES, DEFINED, FREE, IGNORED, INACTIVE, MOVE, REALLOCATE, RULE, SET,
                               callee_name, every_rank, kind_of, library_objects, no_derivative)
from adgen.ir_ad.custom import forward_refusal
from adgen.ir_ad.forward.derived import Pattern
from adgen.ir_ad.ir import Function
from adgen.ir_ad.shadows import BY_HAND_ITSELF, own_copies, points_nowhere


class CallRules:
    def op_call(self, inst):
        module = self.mode.module
        kind = kind_of(module, inst)
        if kind in IGNORED:
            return self.copy(inst)
        if kind in COPIES:
            return self.copy_memory(inst, move=kind == MOVE)
        if kind == SET:
            return self.set_memory(inst)
        if kind == ALLOCATE:
            return self.allocate(inst)
        if kind == REALLOCATE:
            return self.reallocate(inst)
        if kind == FREE:
            return self.release(inst)
        if (not any(self._on(a) for a in inst.operands) and inst.result not in self.active and
                not every_rank(module, inst)) or kind == INACTIVE:
            self.copy(inst)  # nothing flows in (nor memory allocated), or nothing flows out
            return self.own_shadows(inst)
        if kind == RULE:  # a libm function, or one with a derivative written by hand
            return self.elementwise(inst, inst.callee, inst.operands)
        if kind == DEFINED:
            return self.call_derivative(inst, module.functions[inst.callee])
        raise self.fail(no_derivative(inst))

    def own_shadows(self, inst) -> None:
        """The shadows of the C++ library's objects a call wrote made their copies (shadows.own_copies)."""
        own_copies(self.b, self.layout, [(o, n) for o, n in library_objects(inst) if self._on(o)], self.shadow)

    def call_derivative(self, inst, target: Function):
        if target.variadic:
            raise self.fail(f"a call to variadic function '{callee_name(inst)}'")
        refused = forward_refusal(self.mode.module, target.name)  # (by hand in reverse mode)
        if refused is not None:
            raise self.fail(refused)
        if any(a.type.kind == "vector" and self._on(a) for a in inst.operands):
            raise self.fail(f"a call to '{callee_name(inst)}' passing a vector value carrying derivatives (vector "
                            "values are differentiated within a function: let it be inlined)")
        by_hand = target.name in self.mode.module.custom  # (whose own activities decide)
        if by_hand and any(self.flow.may_be_itself(a) for a in inst.operands):
            raise self.fail(BY_HAND_ITSELF)
        active = tuple((self._on(a) or (points_nowhere(a, self.flow.defs) and not by_hand)) and  # (shadows.NOWHERE)
                       self.layout.part_type(a.type) is not None for a in inst.operands)
        d = self.mode.derive(Pattern(target.name, active, self.n, self.layout.kind, self.derived.pattern.runtime))
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
