"""The augmented forward sweep of reverse mode: the primal code, plus what the cache plan says
to store, where the plan says to store it.

Besides the primal instructions it keeps an iteration counter per loop (which the optimizer
folds into the induction variables), the shadows of pointers the forward sweep needs (pointers
stored in or loaded from shadowed memory, shadows of allocations), and for each group of the
plan its buffer: allocated once before an indexed nest starts, grown while a loop of unknown
trip count runs. Calls to functions of the sources call their own augmented forward sweep,
whose record is kept where the plan put it; `free` of memory with shadows moves to the reverse
sweep, and local arrays whose shadow the forward sweep needs move to the heap."""

from __future__ import annotations

import re

from . import storage
from .builder import CACHE, PRIMAL, Builder, V, bare, local
from .cache_plan import GROWABLE, INDEXED, Group, Slot, descriptor_types
from .ir import I1, I8, I64, PTR, Instruction, Operand
from .keys import BLOB, CAME, CHOICE, DESC, EXIT, MASK, OLD, RETURNS, SHADOW, VALUE, Key, came_type, instruction_key
from .rules import rule_for
from .loops import Loop
from .reverse import Derivation, size_global
from .shadows import ALLOCATORS, INTERLEAVED, MIXED_POINTER, VOID, Shadow, callee_name


def write_augmented(d: Derivation) -> str:
    return AugmentedWriter(d).write()


class AugmentedWriter:
    def __init__(self, d: Derivation):
        self.d, self.fn, self.plan, self.layout = d, d.fn, d.plan, d.layout
        self.activity = d.activity
        self.params = {p.name for p in d.fn.params}
        self.descriptors: dict[int, tuple[V, ...]] = {}  # indexed group -> its descriptor, made before it
        self.stores: dict[Key, list[Slot]] = {}
        for slot in self.plan.slots.values():
            self.stores.setdefault(slot.key, []).append(slot)
        self.out: list[str] = []
        self.after: list[str] = []  # blocks written after the function's own: the exit edges
        self.split = self._edges()

    def fail(self, what: str):
        return self.d.fail(what)

    # ------------------------------------------------------------------ the function
    def write(self) -> str:
        d, fn = self.d, self.fn
        derived = d.derived
        self.out = [f"define internal {derived.aug_ret.text} {derived.aug}({', '.join(d.mode.aug_params(fn, derived))}) {{"]
        order = d.cfg.order + [b.label for b in fn.blocks if b.label not in set(d.cfg.order)]
        blocks = {b.label: b for b in fn.blocks}
        for index, block in enumerate(blocks[label] for label in order):  # dominators first
            self.block = block
            self.out.append(f"{bare(block.label)}:")
            b = Builder(d.decls, self.out, prefix=f"f{bare(block.label)}.")
            self.b = b
            if index == 0:
                self._entry(b)
            phis = [i for i in block.instructions if i.opcode == "phi"]
            for inst in phis:
                self.out.append("  " + self._relabeled(inst, block.label))
                d.inst = inst
                self._phi_shadow(inst, b)
            self._control(block, b)
            for inst in phis:
                self._keep(Key(VALUE, inst.result), b)
                if inst.result in self.activity.pointers:
                    self._keep(Key(SHADOW, inst.result), b)
                    self._keep(Key(MASK, inst.result), b)
            for inst in block.instructions[len(phis):-1]:
                d.inst = inst
                self.forward(inst, b)
                if inst.result:
                    self._keep(Key(VALUE, inst.result), b)
                    if Key(CHOICE, inst.result) in self.stores:
                        rule = rule_for(inst.callee)
                        self._keep(Key(CHOICE, inst.result), b, rule.choice(
                            b, [V(o.type, o.value) for o in inst.operands], V(inst.type, inst.result)))
                    if inst.result in self.activity.pointers:
                        self._keep(Key(SHADOW, inst.result), b)
                        self._keep(Key(MASK, inst.result), b)
            term = block.instructions[-1]
            d.inst = term
            self._before_branch(block, b)
            if term.opcode == "ret":
                self._keep(Key(CAME, RETURNS), b, V(came_type(len(d.keys.returns)), str(d.keys.returns.index(block.label))))
                if derived.aug_ret.kind == "void":
                    self.out.append("  ret void")
                    continue
            self.out.append("  " + self._split_edges(block, term, b))
        self.out += self.after
        self.out.append("}")
        return "\n".join(self.out)

    # ------------------------------------------------------------------ edges that store exit counts
    def _edges(self) -> dict[tuple[str, str], list[Key]]:
        """The edges leaving loops whose iteration counts the plan stores: each gets a block of
        its own, where the count is stored once per exit (the block after it may be a loop
        header, which would see it every iteration)."""
        found = {}
        for p, succs in self.d.cfg.succs.items():
            for e in succs:
                keys = [Key(EXIT, l.header, e) for l in self.d.loops.exited(p, e) if Key(EXIT, l.header, e) in self.stores]
                if keys:
                    found[(p, e)] = keys
        return found

    def via(self, p: str, block: str) -> str:
        """The label a phi of `block` names for predecessor `p` (its exit edge block, if split)."""
        return local(f"xe'{bare(p)}'{bare(block)}") if (p, block) in self.split else p

    def _relabeled(self, inst: Instruction, block: str) -> str:
        if not any((frm, block) in self.split for _, frm in inst.incoming):
            return inst.text
        parts = list(dict.fromkeys(f"[ {v.value}, {self.via(frm, block)} ]" for v, frm in inst.incoming))
        return f"{inst.result} = phi {inst.type.text} {', '.join(parts)}"

    def _split_edges(self, block, term: Instruction, b: Builder) -> str:
        """The terminator, branching to the exit edge blocks instead; writes those blocks."""
        text = term.text
        for succ in self.d.cfg.succs[block.label]:
            if (block.label, succ) not in self.split:
                continue
            edge = self.via(block.label, succ)
            text = re.sub(re.escape(succ) + r"(?![-\w$.\"'])", edge, text)
            self.after.append(f"{edge[1:]}:")
            eb = Builder(self.d.decls, self.after, prefix=f"xe{bare(block.label)}.{bare(succ)}.")
            for key in self.split[(block.label, succ)]:
                loop = self.d.loops.by_header[key.name]
                for slot in self.stores[key]:
                    eb.store(V(I64, _count(loop)), self._address(slot, eb), memory=CACHE)
            eb.emit(f"br label {succ}")
        return text

    def _entry(self, b: Builder) -> None:
        """Slots for the growable buffers, in the entry block."""
        for g in self.plan.groups:
            if g.kind == GROWABLE:
                b.emit(f"{_buffer(g).ref} = alloca ptr, align 8")
                b.emit(f"{_capacity(g).ref} = alloca i64, align 8")
                b.store(V(PTR, "null"), _buffer(g), 8)
                b.store(V(I64, "0"), _capacity(g), 8)

    def _control(self, block, b: Builder) -> None:
        """At the top of a block: its loop's counter, which way it was entered and how many
        iterations the loops it leaves ran (where the plan stores them), a growable buffer's room."""
        d = self.d
        preds = d.cfg.preds[block.label]
        loop = d.loops.by_header.get(block.label)
        if loop is not None:
            parts = [f"[ 0, {self.via(p, block.label)} ]" for p in loop.entries] + \
                [f"[ {_count(loop, '.next')}, {p} ]" for p in loop.latches]
            b.emit(f"{_count(loop)} = phi i64 {', '.join(parts)}")
        kept = []
        if len(preds) > 1 and Key(CAME, block.label) in self.stores:
            t = came_type(len(preds))
            came = local(f"came'{bare(block.label)}")
            b.emit(f"{came} = phi {t.text} " + ", ".join(f"[ {i}, {self.via(p, block.label)} ]"
                                                          for i, p in enumerate(preds)))
            kept.append((Key(CAME, block.label), V(t, came)))
        for key, value in kept:  # after every phi
            self._keep(key, b, value)
        if loop is not None:
            group = self.plan.group_of(loop)
            if group is not None and group.kind == GROWABLE and group.root is loop:
                desc = self._address(self._slot_of(group.desc, loop.parent), b)
                b.call('@"adgen.grow"', VOID, [_buffer(group), _capacity(group), V(I64, _count(loop)),
                                               V(I64, str(group.stride)), desc])

    def _before_branch(self, block, b: Builder) -> None:
        """At the end of a block: latches count, and the buffers of the loops it enters are made."""
        d = self.d
        for loop in d.loops.loops:
            if block.label in loop.latches:
                b.emit(f"{_count(loop, '.next')} = add i64 {_count(loop)}, 1")
        for succ in d.cfg.succs[block.label]:
            loop = d.loops.by_header.get(succ)
            group = self.plan.group_of(loop) if loop is not None and block.label in loop.entries else None
            if group is None or group.root is not loop:
                continue
            if group.kind == INDEXED:
                self._allocate(group, b)
            else:
                b.store(V(PTR, "null"), _buffer(group), 8)
                b.store(V(I64, "0"), _capacity(group), 8)

    def _allocate(self, group: Group, b: Builder) -> None:
        """An indexed group's buffer, before its root loop starts: every member's trip count
        computed from values known here, one allocation, the descriptor stored around it."""
        memo: dict[str, V] = {}
        trips = []
        for loop in group.members:
            start, bound = (self._hoist(o, group.root, b, memo) for o in loop.trip.operands)
            trips.append(storage.trip_count(b, loop.trip, start, bound))
        if group.in_record is not None:  # small and of constant size: in the record
            buffer = b.gep(I8, V(PTR, "%rec"), V(I64, str(group.in_record)))
        else:
            _, size = storage.array_bases(b, group, V(PTR, "null"), trips)
            buffer = b.call('@"adgen.alloc"', PTR, [size])
        desc = (buffer, *trips)
        self.descriptors[id(group)] = desc
        self._keep(group.desc, b, *desc)

    def _hoist(self, op: Operand, root: Loop, b: Builder, memo: dict[str, V]) -> V:
        """A value computed inside a loop from values known before it, computed before it."""
        cfg = self.d.cfg
        if not op.is_local or op.value not in cfg.defs or cfg.block_of[op.value] not in root.body:
            return V(op.type, op.value)
        if op.value not in memo:
            inst = cfg.defs[op.value]
            refs = {o.value: self._hoist(o, root, b, memo).ref for o in inst.operands if o.is_local}
            memo[op.value] = b.reemit(inst, refs)
        return memo[op.value]

    # ------------------------------------------------------------------ storing
    def _slot_of(self, key: Key, scope: Loop | None) -> Slot:
        return next(s for s in self.stores[key] if s.scope is scope)

    def _keep(self, key: Key, b: Builder, *value: V) -> None:
        """Stores a key's value (its own name, unless given) in every slot the plan has for it."""
        for slot in self.stores.get(key, []):
            if key.kind == BLOB:
                continue
            parts = value or self._value_of(key)
            types = descriptor_types(self._group(key)) if key.kind == DESC else self.d.keys[key].types
            at = self._address(slot, b)
            for v, t, p in zip(parts, types, storage.parts_at(b, types, at)):
                b.store(v, p, memory=CACHE)

    def _group(self, key: Key) -> Group:
        return next(g for g in self.plan.groups if g.desc == key)

    def _value_of(self, key: Key) -> tuple[V, ...]:
        if key.kind == VALUE:
            return (V(self.d.keys[key].types[0], key.name),)
        if key.kind == SHADOW:
            return self.layout.named(key.name, PTR)
        if key.kind == MASK:
            return (V(I1, self.mask(Operand(PTR, key.name))),)
        raise AssertionError(key)

    def _address(self, slot: Slot, b: Builder) -> V:
        counters = {id(l): V(I64, _count(l)) for l in (slot.scope.ancestors() if slot.scope else [])}
        return storage.address(b, slot, V(PTR, "%rec"), counters, lambda g: self._descriptor(g, b))

    def _descriptor(self, group: Group, b: Builder) -> tuple[V, ...]:
        if group.kind == INDEXED:
            return self.descriptors[id(group)]
        return (b.load(PTR, _buffer(group), 8),)

    # ------------------------------------------------------------------ instructions
    def shadow(self, op: Operand, missing_ok: bool = False) -> Shadow:
        """The forward sweep's shadow of a pointer operand (by its canonical names)."""
        if op.value in self.activity.pointers:
            return self.layout.named(op.value, PTR)
        if op.value in ("null", "undef", "poison") or missing_ok:
            return self.layout.zero(PTR)
        raise self.fail(MIXED_POINTER)

    def mask(self, op: Operand) -> str:
        if op.value in self.activity.maybe:
            return _mask_name(self.activity.mask_root(op.value).result)
        return "true" if op.value in self.activity.pointers else "false"

    def _phi_shadow(self, inst: Instruction, b: Builder) -> None:
        if inst.result not in self.activity.pointers:
            return
        maybe = inst.result in self.activity.maybe
        names = self.layout.names(inst.result)
        pt = self.layout.part_type(PTR)
        for k, name in enumerate(names):
            parts = ", ".join(dict.fromkeys(f"[ {self.shadow(v, maybe)[k].ref}, {self.via(frm, self.block.label)} ]"
                                            for v, frm in inst.incoming))
            b.emit(f"{name} = phi {pt.text} {parts}")
        if maybe:
            masks = ", ".join(dict.fromkeys(f"[ {self.mask(v)}, {self.via(frm, self.block.label)} ]"
                                            for v, frm in inst.incoming))
            b.emit(f"{_mask_name(inst.result)} = phi i1 {masks}")

    def forward(self, inst: Instruction, b: Builder) -> None:
        op = inst.opcode
        activity = self.activity
        if any(o.value in activity.maybe for o in inst.operands) and (
                op not in ("load", "store", "getelementptr", "select", "freeze", "bitcast", "icmp", "ptrtoint")
                or (op == "load" and inst.type.kind == "ptr") or (op == "store" and inst.operands[0].type.kind == "ptr")):
            raise self.fail(MIXED_POINTER)
        if op == "alloca" and inst.result in self.d.heap:
            return self._heap_alloca(inst, b)
        if op == "call":
            return self.forward_call(inst, b)
        if op == "store" and inst in self.d.undoable:
            self._keep(Key(OLD, instruction_key(self.fn, inst)), b,
                       b.load(inst.operands[0].type, V(PTR, inst.operands[1].value), memory=PRIMAL))
        self.out.append("  " + inst.text + (b.tag(PRIMAL) if op in ("load", "store") else ""))
        if op == "alloca" and inst.result in self.d.reverse_local:
            self.layout.bind(b, inst.result, self.layout.zero(PTR))  # never used: the reverse sweep has its own
            return
        if inst.result not in activity.pointers:
            if op == "store" and inst.operands[0].type.kind == "ptr" and activity.on(inst.operands[1]):
                if self.layout.kind == INTERLEAVED:
                    raise self.fail("a pointer stored into memory with interleaved (dupv) derivatives")
                self.layout.store(b, self.shadow(inst.operands[0]), self.shadow(inst.operands[1]), inst.align)
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
                b.emit(f"{_mask_name(inst.result)} = select {cond}, i1 {self.mask(inst.operands[1])}, "
                       f"i1 {self.mask(inst.operands[2])}")
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
        self.layout.bind(b, name, self.layout.allocate(b, size, on_stack=False))

    def forward_call(self, inst: Instruction, b: Builder) -> None:
        name = callee_name(inst)
        args = inst.operands
        if name.startswith("llvm.lifetime."):
            return  # local arrays may move to the heap, and the reverse sweep reads some after these would end
        if name in ALLOCATORS and inst.result in self.activity.pointers:
            self.out.append("  " + inst.text)
            vals = [V(a.type, a.value) for a in args]
            size = vals[0] if name == "malloc" else vals[1] if name == "aligned_alloc" else b.binary("mul", *vals)
            return self._shadow_memory(inst.result, size, b)
        if name == "free" and self.d.memory.base(args[0].value).name in self.d.deferred:
            return  # the reverse sweep frees it
        if id(inst) not in self.d.calls:
            self.out.append("  " + inst.text)
            return
        call = self.d.calls[id(inst)]
        callee = call.derived
        slot = self._slot_of(call.blob, self.d.loops.loop_of[self.block.label])
        at = self._address(slot, b)
        if call.indirect:
            size = b.load(I64, V(PTR, size_global(callee)))
            record = b.call('@"adgen.alloc"', PTR, [size])
            b.store(record, at, 8)
        else:
            record = at
        text = ", ".join([str(V(a.type, a.value)) for a in args] +
                         [str(x) for a, on in zip(args, callee.pattern.active) if on and a.type.kind == "ptr"
                          for x in self.shadow(a)] + [str(record)])
        call_text = f"call {callee.aug_ret.text} {callee.aug}({text})"
        if inst.result and callee.aug_ret.kind != "void":
            self.out.append(f"  {inst.result} = {call_text}")
        else:
            b.emit(call_text)


def _count(loop: Loop, suffix: str = "") -> str:
    return local(f"cnt'{bare(loop.header)}{suffix}")


def _buffer(group: Group) -> V:
    return V(PTR, local(f"buf'{bare(group.root.header)}"))


def _capacity(group: Group) -> V:
    return V(PTR, local(f"cap'{bare(group.root.header)}"))


def _mask_name(value: str) -> str:
    return local(bare(value) + "'mask")


