"""The augmented forward sweep of reverse mode: the primal code, plus what the cache plan says
to store (written by `CacheWrites`, where the plan says).

Besides the primal instructions it computes the shadows of pointers the forward sweep needs
(pointers stored in or loaded from shadowed memory, shadows of allocations). Calls to functions
of the sources call their own augmented forward sweep, whose record is kept where the plan put
it; `free` of memory with shadows moves to the reverse sweep, and local arrays whose shadow the
forward sweep needs move to the heap."""

from __future__ import annotations

from adgen.ir_ad.ir.builder import PRIMAL, Builder, V, bare
from adgen.ir_ad.reverse.sweeps.skips import skip_branch
from adgen.ir_ad.reverse.sweeps.cache_writes import CacheWrites
from adgen.ir_ad.reverse.sweeps.guards import Guards
from adgen.ir_ad.ir import I1, I64, PTR, VOID, Instruction, Operand
from adgen.ir_ad.reverse.plan.keys import CAME, CHOICE, GUARD, LOG, LOG_OWNER, MASK, OLD, RETURNS, SHADOW, VALUE, Key, \
    came_type, instruction_key
from adgen.ir_ad.reverse.types import ReverseFacts, size_global
from adgen.ir_ad.rules import rule_for
from adgen.ir_ad.calls import ALLOCATE, COPIES, FREE, LIFETIME, MOVE, REALLOCATE, allocation_size, kind_of, \
    frees_characters, library_objects, reallocated
from adgen.ir_ad.analysis.flow import addresses_in
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.reverse.sweeps.sites import SINK
from adgen.ir_ad.shadows import (INTERLEAVED, MIXED_POINTER, SELF_STORE, Shadow, mask_name, own_copies, points_nowhere,
                                 self_shadow, self_shadowed)


def write_augmented(d: ReverseFacts) -> str:
    return AugmentedWriter(d).write()


class AugmentedWriter:
    def __init__(self, d: ReverseFacts):
        self.d, self.fn, self.layout = d, d.fn, d.layout
        self.activity = d.activity
        self.cache = CacheWrites(d)
        self.guards = Guards(d)
        self.skips = {s.entry: s for s in d.plan.skipped}  # (plan/discarded.py)
        self.out: list[str] = []

    def fail(self, what: str):
        return self.d.fail(what)

    def write(self) -> str:
        d, fn = self.d, self.fn
        derived = d.derived
        self.out = [f"define internal {derived.aug_ret.text} {derived.aug}({', '.join(d.aug_params())}) {{"]
        order = d.cfg.order + [b.label for b in fn.blocks if b.label not in set(d.cfg.order)]
        blocks = {b.label: b for b in fn.blocks}
        for index, block in enumerate(blocks[label] for label in order):  # dominators first
            self.block = block
            self.out.append(f"{block.label[1:]}:")
            b = Builder(d.decls, self.out, prefix=f"f{bare(block.label)}.")
            if index == 0:
                if d.pattern.runtime:  # (runtime activity's scratch: shadows.py)
                    self.out.append(f"  {SINK.ref} = alloca [64 x i64], align 64")
                self.cache.entry(b)
                if d.logged:  # (the undo log: opened by the outermost call that logs)
                    self.log_owner = b.call('@"adgen.log.open"', PTR, [])
                    self.cache.keep(Key(LOG, LOG_OWNER), b, self.log_owner)
            phis = [i for i in block.instructions if i.opcode == "phi"]
            for inst in phis:
                self.out.append("  " + self.cache.relabeled(inst, block.label))
                d.inst = inst
                self._phi_shadow(inst, b)
            self.cache.control(block, b)
            for inst in phis:
                self.cache.keep(Key(VALUE, inst.result), b)
                if inst.result in self.activity.pointers:
                    self.cache.keep(Key(SHADOW, inst.result), b)
                    self.cache.keep(Key(MASK, inst.result), b)
            for inst in block.instructions[len(phis):-1]:
                d.inst = inst
                if block.label in d.cfg.doomed:  # the program stops there: its code as it is
                    if not (inst.opcode == "call" and kind_of(d.activity.module, inst) == LIFETIME):
                        self.out.append("  " + inst.text)  # (local arrays may have moved to the heap)
                    continue
                self.forward(inst, b)
                if inst.result:
                    self.cache.keep(Key(VALUE, inst.result), b)
                    if Key(CHOICE, inst.result) in self.cache.stores:
                        rule = rule_for(inst.callee)
                        self.cache.keep(Key(CHOICE, inst.result), b, rule.choice(
                            b, [V(o.type, o.value) for o in inst.operands], V(inst.type, inst.result)))
                    if inst.result in self.activity.pointers:
                        self.cache.keep(Key(SHADOW, inst.result), b)
                        self.cache.keep(Key(MASK, inst.result), b)
            term = block.instructions[-1]
            d.inst = term
            for store, flag in self.guards.at_end(block.label, b):
                self.cache.keep(Key(GUARD, instruction_key(fn, store)), b, flag)
            self.cache.before_branch(block, b)
            if term.opcode == "ret":
                self.cache.keep(Key(CAME, RETURNS), b, V(came_type(len(d.keys.returns)), str(d.keys.returns.index(block.label))))
                if d.logged:
                    b.call('@"adgen.log.detach"', VOID, [self.log_owner])
                if derived.aug_ret.kind == "void":
                    self.out.append("  ret void")
                    continue
                if d.pattern.ret_shadow:
                    self._return_with_shadow(term, b)
                    continue
            if block.label in self.skips:
                self.out.append("  " + skip_branch(d, self.skips[block.label], b))
                continue
            self.out.append("  " + self.cache.split_edges(block, term, b))
        self.out += self.cache.after
        self.out.append("}")
        return "\n".join(self.out)

    def _copy_pointer_shadows(self, inst: Instruction, b: Builder) -> None:
        """A copy of memory holding pointers and integers only (a struct of them, by its TBAA):
        the pointers' shadows are copied with them, which the callees the copy reaches need.
        Memory holding floating data keeps its shadow: there it holds adjoints, for the reverse
        sweep."""
        dst, src, size = inst.operands[:3]
        activity = self.activity
        if dst.value not in activity.pointers or activity.memtype(dst.value) or activity.memtype(src.value) or \
                not activity.holds_no_floats(dst.value, src.value, length=size, copy=inst):
            return
        length = V(size.type, size.value)
        if length.type.text != "i64":
            length = b.cast("zext", length, I64)
        if self.layout.kind == INTERLEAVED:
            raise self.fail("a copy of memory holding pointers with interleaved (dupv) derivatives")
        if activity.may_be_itself(dst):  # (runtime activity: none to write where it is its own, shadows.py)
            itself = self_shadow(b, self.shadow(dst), V(PTR, dst.value))
            if src.value in activity.pointers:
                lost = b.value(I1, f"xor {self_shadow(b, self.shadow(src), V(PTR, src.value))}, true")
                b.call(SELF_STORE, VOID, [b.binary("and", itself, lost)])
            length = b.select(itself, V(I64, "0"), length)
        if src.value not in activity.pointers and not activity.runtime:
            return self.layout.zero_memory(b, self.shadow(dst), length)
        for d, s in zip(self.shadow(dst), self.shadow(src)):  # (runtime activity: its pointers their own shadows)
            b.memcpy(d, s, length, move=kind_of(activity.module, inst) == MOVE)

    def _checked(self, ptr: Operand, b: Builder, value: Shadow | None = None, pointer: Operand | None = None) -> Shadow:
        """The shadow of a pointer a store writes through, where it may be its own (runtime
        activity, shadows.py): a scratch sink there, and the program aborts (SELF_STORE) where
        what is stored carries derivatives: a float with an adjoint (`value` None), or a
        `pointer` whose shadow `value` is not itself."""
        if not self.activity.may_be_itself(ptr):
            return self.shadow(ptr)
        shadow = self.shadow(ptr)
        itself = self_shadow(b, shadow, V(PTR, ptr.value))
        if value is None:
            lost = itself
        elif pointer.value in self.activity.pointers:
            lost = b.binary("and", itself, b.value(I1, f"xor {self_shadow(b, value, V(PTR, pointer.value))}, true"))
        else:
            lost = None  # (its own shadow too)
        if lost is not None:
            b.call(SELF_STORE, VOID, [lost])
        return tuple(b.select(itself, SINK, x) for x in shadow)

    def shadow(self, op: Operand, missing_ok: bool = False) -> Shadow:
        """The forward sweep's shadow of a pointer operand (by its canonical names)."""
        if op.value in self.activity.pointers:
            return self.layout.named(op.value, PTR)
        if points_nowhere(op, self.activity.cfg.defs) or missing_ok:
            return self.layout.zero(PTR)
        if (self_shadowed(self.activity.module, op.value, self.activity.cfg.defs) or self.activity.runtime) and \
                self.layout.itself(op.value):  # (runtime activity: its own, shadows.py)
            return self.layout.itself(op.value)
        raise Unsupported(self.fn.name, self.d.inst, MIXED_POINTER, shadowless=True)

    def _return_with_shadow(self, term: Instruction, b: Builder) -> None:
        """A returned pointer, with its shadow: the caller needs both."""
        value = term.operands[0]
        if value.value not in self.activity.pointers and not points_nowhere(value, self.activity.cfg.defs) and \
                not self.activity.runtime:
            raise Unsupported(self.fn.name, self.d.inst, "a returned pointer into memory without derivatives, where "
                              "the caller needs them (return memory this function allocates, or reaches from an "
                              "argument with derivatives)", shadowless=True)
        both = V(self.d.derived.aug_ret, "poison")
        for k, part in enumerate((V(PTR, value.value),) + self.shadow(value)):
            both = b.value(both.type, f"insertvalue {both}, {part}, {k}")
        b.emit(f"ret {both}")

    def _phi_shadow(self, inst: Instruction, b: Builder) -> None:
        if inst.result not in self.activity.pointers:
            return
        maybe = inst.result in self.activity.maybe
        names = self.layout.names(inst.result)
        pt = self.layout.part_type(PTR)
        for k, name in enumerate(names):
            parts = self.cache.entries([(self.shadow(v, maybe)[k].ref, frm) for v, frm in inst.incoming], self.block.label)
            b.emit(f"{name} = phi {pt.text} {parts}")
        if maybe:
            masks = self.cache.entries([(self.activity.mask(v), frm) for v, frm in inst.incoming], self.block.label)
            b.emit(f"{mask_name(inst.result)} = phi i1 {masks}")

    def forward(self, inst: Instruction, b: Builder) -> None:
        op = inst.opcode
        activity = self.activity
        if any(o.value in activity.maybe for o in inst.operands) and (
                op not in ("load", "store", "getelementptr", "select", "freeze", "bitcast", "icmp", "ptrtoint")
                or (op == "load" and inst.type.kind == "ptr") or (op == "store" and inst.operands[0].type.kind == "ptr")):
            raise Unsupported(self.fn.name, inst, MIXED_POINTER, shadowless=True)
        if op == "inttoptr" and any(p in activity.pointers for p in addresses_in(activity.cfg.defs, inst.operands[0])):
            raise self.fail("an integer turned into a pointer (inttoptr) from the address of memory with derivatives: "
                            "adgen cannot follow derivatives through it")
        if op == "alloca" and inst.result in self.d.heap:
            return self._heap_alloca(inst, b)
        if op == "call":
            return self.forward_call(inst, b)
        flag = self.guards.before(inst, b)
        if flag is not None:
            self.cache.keep(Key(GUARD, instruction_key(self.fn, inst)), b, flag)
        if op == "store" and inst in self.d.undoable:
            if self.d.logged and inst.operands[0].type.kind == "vector":
                raise self.fail(f"a store of a vector ('{inst.operands[0].type.text}') that the undo log would keep: "
                                "it keeps scalars")
            if self.d.logged:
                b.call(f'@"adgen.log.push.{inst.operands[0].type.text}"', VOID,
                       [V(PTR, inst.operands[1].value), self.guards.flag(inst)])
            else:
                self.cache.keep(Key(OLD, instruction_key(self.fn, inst)), b,
                                b.load(inst.operands[0].type, V(PTR, inst.operands[1].value), memory=PRIMAL))
        self.out.append("  " + inst.text + (b.tag(PRIMAL) if op in ("load", "store") else ""))
        if op == "alloca" and inst.result in self.d.reverse_local:
            self.layout.bind(b, inst.result, self.layout.zero(PTR))  # never used: the reverse sweep has its own
            return
        if inst.result not in activity.pointers:
            if op == "store" and inst.operands[0].type.kind == "ptr" and activity.on(inst.operands[1]):
                if self.layout.kind == INTERLEAVED:
                    raise self.fail("a pointer stored into memory with interleaved (dupv) derivatives")
                value = self.shadow(inst.operands[0])
                self.layout.store(b, value, self._checked(inst.operands[1], b, value, inst.operands[0]), inst.align)
            elif op == "store" and activity.active(inst.operands[0].value) and activity.may_be_itself(inst.operands[1]):
                self._checked(inst.operands[1], b)
            return
        if op == "getelementptr":
            made = self.layout.gep(b, inst, self.shadow(inst.operands[0]), lambda o: V(o.type, o.value))
        elif op in ("bitcast", "freeze", "addrspacecast"):
            made = self.shadow(inst.operands[0])
        elif op == "select":
            cond = inst.operands[0]
            maybe = inst.result in activity.maybe
            made = self.layout.select(b, V(cond.type, cond.value), self.shadow(inst.operands[1], maybe),
                                      self.shadow(inst.operands[2], maybe))
            if maybe:
                b.emit(f"{mask_name(inst.result)} = select {cond}, i1 {self.activity.mask(inst.operands[1])}, "
                       f"i1 {self.activity.mask(inst.operands[2])}")
        elif op == "load":
            if self.layout.kind == INTERLEAVED:
                raise self.fail("a pointer loaded from memory with interleaved (dupv) derivatives")
            made = self.layout.load(b, PTR, self.shadow(inst.operands[0]), inst.align)
        else:
            raise self.fail(f"a pointer made by '{op}' where derivatives are needed")
        self.layout.bind(b, inst.result, made)

    def _heap_alloca(self, inst: Instruction, b: Builder) -> None:
        """A local array whose shadow the forward sweep needs: on the heap, with its shadow,
        until the reverse sweep frees them."""
        count = V(inst.count.type, inst.count.value) if inst.count else V(I64, "1")
        if count.type.text != "i64":
            count = b.cast("zext", count, I64)
        size = b.size_of(inst.source_type, count)
        self.out.append(f"  {inst.result} = call ptr @\"adgen.alloc\"({size})")
        self._shadow_memory(inst.result, size, b)

    def _shadow_memory(self, name: str, size: V, b: Builder) -> None:
        self.layout.bind(b, name, self.layout.allocate(b, size, on_stack=False, tracked=True))

    def forward_call(self, inst: Instruction, b: Builder) -> None:
        kind = kind_of(self.activity.module, inst)
        args = inst.operands
        if kind == LIFETIME:
            return  # local arrays may move to the heap, and the reverse sweep reads some after these would end
        if kind == ALLOCATE and inst.result in self.activity.pointers:
            self.out.append("  " + inst.text)
            size = allocation_size(self.activity.module, inst, b)
            return self._shadow_memory(inst.result, size, b)
        if kind == REALLOCATE and inst.result in self.activity.pointers:
            primal, size = (V(a.type, a.value) for a in reallocated(inst))
            return self.layout.bind(b, inst.result, self.layout.reallocate(
                b, inst.result, primal, self.shadow(args[0], missing_ok=True), size))
        if kind in COPIES:
            self.out.append("  " + inst.text)
            return self._copy_pointer_shadows(inst, b)
        if kind == FREE and args[0].value in self.activity.pointers:  # the reverse sweep frees it
            drop = '@"adgen.shadow.drop.text"' if frees_characters(self.activity.module, inst) else '@"adgen.shadow.drop"'
            return b.call(drop, VOID, [V(PTR, args[0].value), self.shadow(args[0])[0]])
        if kind == FREE:  # (kept while an undo log may write it again)
            return b.call('@"adgen.free.later"', VOID, [V(PTR, args[0].value)])
        if kind == REALLOCATE:
            primal, size = (V(a.type, a.value) for a in reallocated(inst))
            return b.emit(f"{inst.result} = call ptr @\"adgen.realloc.later\"({primal}, {size}, i64 -1)")
        if id(inst) not in self.d.calls:
            self.out.append("  " + inst.text)
            shadowed = [(o, n) for o, n in library_objects(inst) if o.value in self.activity.pointers]
            own_copies(b, self.layout, shadowed, self.shadow)  # (the C++ library's objects: shadows their copies)
            return
        call = self.d.calls[id(inst)]
        callee = call.derived
        module = self.activity.module
        if self.d.registers and (call.indirect or callee.pattern.function in module.custom or
                                 callee.pattern.function in module.checkpointed):
            b.call('@"adgen.log.poison"', VOID, [])  # its reverse sweep reads what the log does not know of
        slot = self.cache.slot_of(call.blob, self.d.loops.loop_of[self.block.label])
        at = self.cache.address(slot, b)
        if call.indirect:
            size = b.load(I64, V(PTR, size_global(callee)))
            record = b.call('@"adgen.stack.alloc"', PTR, [size])
            b.store(record, at, 8)
        else:
            record = at
        text = ", ".join([str(V(a.type, a.value)) for a in args] +
                         [str(x) for a, on in zip(args, callee.pattern.active) if on and a.type.kind == "ptr"
                          for x in self.shadow(a)] + [str(record)])
        call_text = f"call {callee.aug_ret.text} {callee.aug}({text})"
        if callee.pattern.ret_shadow:
            both = b.value(callee.aug_ret, call_text)
            self.out.append(f"  {inst.result} = extractvalue {both}, 0")
            self.layout.bind(b, inst.result, tuple(b.value(t, f"extractvalue {both}, {k}")
                                                   for k, t in enumerate(callee.aug_ret.elems[1:], 1)))
        elif inst.result and callee.aug_ret.kind != "void":
            self.out.append(f"  {inst.result} = {call_text}")
        else:
            b.emit(call_text)
