"""The forward sweep's side of the cache plan: where each value the plan stores is written.

It keeps an iteration counter per loop (which the optimizer folds into the induction
variables), which way a block was entered and how many iterations a loop ran where the plan
stores them (an exit count on a block of its own on the exit edge), and each group's buffer:
allocated once before an indexed nest starts (or in the record, when small and of constant
size), grown while a loop of unknown trip count runs. `AugmentedWriter` calls it around the
primal instructions it writes."""

from __future__ import annotations

from adgen.ir_ad.reverse.sweeps import storage
from adgen.ir_ad.ir.builder import CACHE, Builder, V, bare, local
from adgen.ir_ad.reverse.plan.block_copies import BlockCopy
from adgen.ir_ad.reverse.plan.cache_plan import GROWABLE, INDEXED, CacheSlot, Group, descriptor_types, element_size
from adgen.ir_ad.ir import I1, I8, I64, PTR, VOID, Instruction, Operand
from adgen.ir_ad.ir.edit import retarget
from adgen.ir_ad.reverse.plan.keys import BLOB, CAME, DESC, EXIT, MASK, SHADOW, VALUE, Key, align_of, came_type
from adgen.ir_ad.analysis.loops import Loop
from adgen.ir_ad.reverse.types import ReverseFacts


class CacheWrites:
    def __init__(self, d: ReverseFacts):
        self.d, self.plan, self.layout = d, d.plan, d.layout
        self.descriptors: dict[int, tuple[V, ...]] = {}  # indexed group -> its descriptor, made before it
        self.offsets: dict[int, list[V]] = {}  # indexed group -> where its arrays start, made with it
        self.stores: dict[Key, list[CacheSlot]] = {}  # what the plan stores, and where
        for slot in self.plan.slots.values():
            self.stores.setdefault(slot.key, []).append(slot)
        self.copies = {c.key: c for c in self.plan.copied}  # loads stored as one copy before their loop
        self.after: list[str] = []  # blocks written after the function's own: the exit edges
        self.split = self._edges()

    # ------------------------------------------------------------------ exit edges
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

    def relabeled(self, inst: Instruction, block: str) -> str:
        """A phi of `block`, naming the exit edge blocks of its split edges."""
        if not any((frm, block) in self.split for _, frm in inst.incoming):
            return inst.text
        return f"{inst.result} = phi {inst.type.text} {self.entries([(v.value, frm) for v, frm in inst.incoming], block)}"

    def entries(self, incoming: list[tuple[str, str]], block: str) -> str:
        """A phi's entries in `block`, (value, predecessor) as the primal's phi has them: one per
        edge (a switch whose cases share a block has an entry per case there), but one for a
        split edge, whose exit edge block branches to `block` once."""
        parts, split = [], set()
        for value, frm in incoming:
            if (frm, block) in self.split:
                if frm in split:
                    continue
                split.add(frm)
            parts.append(f"[ {value}, {self.via(frm, block)} ]")
        return ", ".join(parts)

    def per_edge(self, values: list[tuple[str, str]], block: str) -> str:
        """The entries of a phi this sweep adds to `block`, a value for each predecessor:
        repeated for each edge from it (`entries`)."""
        return self.entries([(v, p) for v, p in values for _ in range(self.d.cfg.edges[p, block])], block)

    def split_edges(self, block, term: Instruction, b: Builder) -> str:
        """The terminator, branching to the exit edge blocks instead; writes those blocks."""
        text = term.text
        for succ in self.d.cfg.succs[block.label]:
            if (block.label, succ) not in self.split:
                continue
            edge = self.via(block.label, succ)
            text = retarget(text, succ, edge)
            self.after.append(f"{edge[1:]}:")
            eb = Builder(self.d.decls, self.after, prefix=f"xe{bare(block.label)}.{bare(succ)}.")
            for key in self.split[(block.label, succ)]:
                loop = self.d.loops.by_header[key.name]
                for slot in self.stores[key]:
                    eb.store(V(I64, _count(loop)), self.address(slot, eb), memory=CACHE)
            eb.emit(f"br label {succ}")
        return text

    # ------------------------------------------------------------------ control and buffers
    def entry(self, b: Builder) -> None:
        """Slots for the growable buffers, in the entry block."""
        for g in self.plan.groups:
            if g.kind == GROWABLE:
                b.emit(f"{_buffer(g).ref} = alloca ptr, align 8")
                b.emit(f"{_capacity(g).ref} = alloca i64, align 8")
                b.store(V(PTR, "null"), _buffer(g), 8)
                b.store(V(I64, "0"), _capacity(g), 8)

    def control(self, block, b: Builder) -> None:
        """At the top of a block: its loop's counter, which way it was entered and how many
        iterations the loops it leaves ran (where the plan stores them), a growable buffer's room."""
        d = self.d
        preds = d.cfg.preds[block.label]
        loop = d.loops.by_header.get(block.label)
        if loop is not None:
            parts = [("0", p) for p in loop.entries] + [(_count(loop, '.next.' + bare(p)), p) for p in loop.latches]
            b.emit(f"{_count(loop)} = phi i64 {self.per_edge(parts, block.label)}")
        kept = []
        if len(preds) > 1 and Key(CAME, block.label) in self.stores:
            t = came_type(len(preds))
            came = local(f"came'{bare(block.label)}")
            b.emit(f"{came} = phi {t.text} {self.per_edge([(str(i), p) for i, p in enumerate(preds)], block.label)}")
            kept.append((Key(CAME, block.label), V(t, came)))
        if loop is not None:  # after every phi, and before this iteration's first store into its buffer
            group = self.plan.group_of(loop)
            if group is not None and group.kind == GROWABLE and group.root is loop:
                desc = self.address(self.slot_of(group.desc, loop.parent), b)
                b.call('@"adgen.grow"', VOID, [_buffer(group), _capacity(group), V(I64, _count(loop)),
                                               V(I64, str(group.stride)), desc])
        for key, value in kept:
            self.keep(key, b, value)

    def before_branch(self, block, b: Builder) -> None:
        """At the end of a block: latches count, and the buffers of the loops it enters are made."""
        d = self.d
        for loop in d.loops.loops:
            if block.label in loop.latches:  # one name per latch: a loop may have several
                b.emit(f"{_count(loop, '.next.' + bare(block.label))} = add i64 {_count(loop)}, 1")
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
        for copy in self.plan.copied:
            if copy.loop.preheader == block.label:
                self._copy_block(copy, b)

    def _copy_block(self, copy: BlockCopy, b: Builder) -> None:
        """A load's values over its loop's run (plan/block_copies.py), copied before the loop:
        from its address in the first iteration to its array's element for it, the loop's trip
        count of them."""
        loop, load = copy.loop, self.d.cfg.defs[copy.key.name]
        start = loop.inductions[copy.iv].start
        source = self._hoist(load.operands[0], loop, b, {copy.iv: V(start.type, start.value)})
        slot, group = self.slot_of(copy.key, loop), self.plan.group_of(loop)
        counters = {id(l): V(I64, "0" if l is loop else _count(l)) for l in loop.ancestors()}
        at = storage.address(b, slot, V(PTR, "%rec"), counters, lambda g: self._descriptor(g, b),
                             lambda g, _: self.offsets[id(g)])
        trip = self._descriptor(group, b)[1 + group.members.index(loop)]
        b.memcpy(at, source, b.binary("mul", trip, V(I64, str(element_size(slot)))))

    def _allocate(self, group: Group, b: Builder) -> None:
        """An indexed group's buffer, before its root loop starts: every member's trip count
        computed from values known here, one allocation, the descriptor stored around it."""
        memo: dict[str, V] = {}
        trips = []
        for loop in group.members:
            start, bound = (self._hoist(o, group.root, b, memo) for o in loop.trip.operands)
            trips.append(storage.trip_count(b, loop.trip, start, bound))
        offsets = storage.array_offsets(b, group, trips, len(group.slots) + 1)
        if group.in_record is not None:  # small and of constant size: in the record
            buffer = b.gep(I8, V(PTR, "%rec"), V(I64, str(group.in_record)))
        else:
            buffer = b.call('@"adgen.stack.alloc"', PTR, [offsets[-1]])
        self.offsets[id(group)] = offsets
        desc = (buffer, *trips)
        self.descriptors[id(group)] = desc
        self.keep(group.desc, b, *desc)

    def _hoist(self, op: Operand, root: Loop, b: Builder, memo: dict[str, V]) -> V:
        """A value computed inside a loop from values known before it (and those `memo` gives),
        computed before it."""
        cfg = self.d.cfg
        if not op.is_local or op.value not in cfg.defs or cfg.block_of[op.value] not in root.body:
            return V(op.type, op.value)
        if op.value not in memo:
            inst = cfg.defs[op.value]
            refs = {o.value: self._hoist(o, root, b, memo).ref for o in inst.operands if o.is_local}
            memo[op.value] = b.reemit(inst, refs)
        return memo[op.value]

    # ------------------------------------------------------------------ storing
    def slot_of(self, key: Key, scope: Loop | None) -> CacheSlot:
        return next(s for s in self.stores[key] if s.scope is scope)

    def keep(self, key: Key, b: Builder, *value: V) -> None:
        """Stores a key's value (its own name, unless given) in every slot the plan has for it
        (a load copied before its loop: there)."""
        if key in self.copies:
            return
        for slot in self.stores.get(key, []):
            if key.kind == BLOB:
                continue
            parts = value or self._value_of(key)
            types = descriptor_types(self._group(key)) if key.kind == DESC else self.d.keys[key].types
            at = self.address(slot, b)
            for v, t, p in zip(parts, types, storage.parts_at(b, types, at)):
                b.store(v, p, align_of(t), memory=CACHE)

    def _group(self, key: Key) -> Group:
        return next(g for g in self.plan.groups if g.desc == key)

    def _value_of(self, key: Key) -> tuple[V, ...]:
        if key.kind == VALUE:
            return (V(self.d.keys[key].types[0], key.name),)
        if key.kind == SHADOW:
            return self.layout.named(key.name, PTR)
        if key.kind == MASK:
            return (V(I1, self.d.activity.mask(Operand(PTR, key.name))),)
        raise AssertionError(key)

    def address(self, slot: CacheSlot, b: Builder) -> V:
        counters = {id(l): V(I64, _count(l)) for l in (slot.scope.ancestors() if slot.scope else [])}
        return storage.address(b, slot, V(PTR, "%rec"), counters, lambda g: self._descriptor(g, b),
                               lambda g, _: self.offsets[id(g)])

    def _descriptor(self, group: Group, b: Builder) -> tuple[V, ...]:
        if group.kind == INDEXED:
            return self.descriptors[id(group)]
        return (b.load(PTR, _buffer(group), 8),)


def _count(loop: Loop, suffix: str = "") -> str:
    """The forward sweep's iteration counter of a loop."""
    return local(f"cnt'{bare(loop.header)}{suffix}")


def _buffer(group: Group) -> V:
    return V(PTR, local(f"buf'{bare(group.root.header)}"))


def _capacity(group: Group) -> V:
    return V(PTR, local(f"cap'{bare(group.root.header)}"))
