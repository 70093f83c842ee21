"""Materializing, for the reverse sweep: each site (a stretch of the reverse function, see
sites.Site) gets the keys it needs at its top, as the cache plan says: read back from
where the forward sweep stored them, or recomputed from other keys (which are materialized the
same way, recursively).

A key is materialized at a site, or at a site as it was some iterations earlier: the context
`shift` is ((loop, k), ...) (see cache_plan.PlanSite) and the region of the prologue that
computes it, behind a branch that skips it in a loop's first iteration; regions keep apart
values that do not dominate each other."""

from __future__ import annotations

from adgen.ir_ad.reverse.sweeps import carrying, storage
from adgen.ir_ad.ir.builder import CACHE, PRIMAL, Builder, V, bare, local
from adgen.ir_ad.reverse.plan.cache_plan import CachePlan, CacheSlot, PlanSite, descriptor_types
from adgen.ir_ad.reverse.plan.carried import Carry
from adgen.ir_ad.ir import I1, I64, PTR, Operand
from adgen.ir_ad.reverse.plan.keys import BLOB, DESC, MASK, SHADOW, Key, align_of
from adgen.ir_ad.analysis.loops import Loop
from adgen.ir_ad.reverse.sweeps.sites import Site
from adgen.ir_ad.reverse.types import ReverseFacts
from adgen.ir_ad.rules import rule_for
from adgen.ir_ad.shadows import Shadow, points_nowhere


class Materializer:
    def __init__(self, d: ReverseFacts, plan: CachePlan, local_shadow: dict[str, Shadow],
                 carries: dict[Key, Carry] | None = None):
        self.d, self.plan, self.layout, self.activity = d, plan, d.layout, d.activity
        self.local_shadow = local_shadow  # the reverse sweep's own shadows of local arrays
        self.carries = carries or {}  # values from the previous reverse iteration (plan/carried.py)
        self.carried_from: dict[Key, list[Carry]] = {}
        for carry in self.carries.values():
            self.carried_from.setdefault(carry.phi, []).append(carry)
        self.params = {p.name for p in d.fn.params}
        self.made: dict[tuple, Shadow] = {}
        self.regions = 0  # branches in prologues (see _remake_value)
        self.label = "entry"  # the block the prologue being written is in

    def materialize(self, key: Key, site: Site, b: Builder, shift: tuple = ((), 0)) -> Shadow:
        """A key's value at a site: read back from where the plan stored it, or recomputed."""
        memo = (id(site), key, shift)
        if memo in self.made:
            return self.made[memo]
        self._operands_first(key, site, b, shift)
        slot = self.plan.stored(key, PlanSite(site.loop, site.before, shift[0]))
        if slot is not None:
            made = self._load(key, slot, site, b, shift)
        else:
            made = getattr(self, "_remake_" + key.kind)(key, site, b, shift)
            carry = self.carries.get(key)
            if carry is not None and _this_iteration(carry, site, shift):
                made = (carrying.taken(b, carry, made[0]),)
        for carry in self.carried_from.get(key, ()):
            if _this_iteration(carry, site, shift):
                carrying.made(b, carry, made[0])
        self.made[memo] = made
        return made

    def _operands_first(self, key: Key, site: Site, b: Builder, shift: tuple) -> None:
        """Materializes what `key` is recomputed from before it, deepest first and without
        recursion, so that long chains of recomputed values (straight-line code of thousands of
        statements) do not recurse as deep. Values of earlier iterations are left to their own
        branch (see _remake_value)."""
        order, seen, work = [], set(), [(key, False)]
        while work:
            k, done = work.pop()
            if done:
                order.append(k)
                continue
            if k in seen or (id(site), k, shift) in self.made:
                continue
            seen.add(k)
            work.append((k, True))
            if self.plan.stored(k, PlanSite(site.loop, site.before, shift[0])) is None:
                work += [(op, False) for op in self.d.keys[k].operands]
        for k in order[:-1]:
            self.materialize(k, site, b, shift)

    def _load(self, key: Key, slot: CacheSlot, site: Site, b: Builder, shift: tuple) -> Shadow:
        at = storage.address(b, slot, V(PTR, "%rec"), self.counters(site, b, shift),
                             lambda g: self.materialize(g.desc, site, b, shift),
                             lambda g, count: self._offsets(g, count, site, b, shift))
        if key.kind == BLOB:
            call = next(c for c in self.d.calls.values() if c.blob == key)
            return (b.load(PTR, at, 8),) if call.indirect else (at,)
        types = descriptor_types(self.plan.groups[[g.desc for g in self.plan.groups].index(key)]) \
            if key.kind == DESC else self.d.keys[key].types
        return tuple(b.load(t, p, align_of(t), memory=CACHE) for t, p in zip(types, storage.parts_at(b, types, at)))

    def _offsets(self, group, count: int, site: Site, b: Builder, shift: tuple) -> list[V]:
        """An indexed group's first `count` array offsets at a site, each computed once there."""
        memo = (id(site), "offsets", id(group), shift)
        known, counts = self.made.setdefault(memo, ([], {}))
        if len(known) < count:
            trips = list(self.materialize(group.desc, site, b, shift)[1:])
            known[:] = storage.array_offsets(b, group, trips, count, known, counts)
        return known

    def counters(self, site: Site, b: Builder, shift: tuple = ((), 0)) -> dict[int, V]:
        """The iteration numbers of the site's loops (some iterations earlier: only computed
        where the branch around them knows they are not below 0)."""
        memo = (id(site), "counters", shift)
        if memo not in self.made:
            if shift[0]:
                counters = dict(self.counters(site, b))
                for loop, k in shift[0]:
                    counters[id(loop)] = b.value(I64, f"sub nuw i64 {counters[id(loop)].ref}, {k}")
            else:
                loops = site.loop.ancestors() if site.loop else []
                counters = {id(l): b.load(I64, counter(l)) for l in loops}
            self.made[memo] = counters
        return self.made[memo]

    def _operand(self, op: Operand, site: Site, b: Builder, shift: tuple = ((), 0)) -> V:
        key = self.d.keys.value(op)
        return V(op.type, op.value) if key is None else self.materialize(key, site, b, shift)[0]

    def _remake_value(self, key: Key, site: Site, b: Builder, shift: tuple) -> Shadow:
        d = self.d
        inst = d.cfg.defs[key.name]
        info = d.keys[key]
        loop = info.loop_bound
        if loop is not None and key.name in loop.inductions:  # start + step * iteration
            ind = loop.inductions[key.name]
            count = self.counters(site, b, shift)[id(loop)]
            start, step = self._operand(ind.start, site, b, shift), self._operand(ind.step, site, b, shift)
            if ind.pointer:  # (bytes from its start)
                return (b.value(PTR, f"getelementptr i8, {start}, {b.binary('mul', count, step)}"),)
            if inst.type.bits != 64:
                count = b.cast("trunc", count, inst.type)
            return (b.binary("add", b.binary("mul", count, step), start),)
        if loop is not None:  # the value it came in with, or what the latch computed one iteration earlier
            count = self.counters(site, b, shift)[id(loop)]
            entry = next(v for v, frm in inst.incoming if frm == loop.entries[0])
            latch = next(v for v, frm in inst.incoming if frm == loop.latches[0])
            first = b.value(I1, f"icmp eq {count}, 0")
            came_in = self._operand(entry, site, b, shift)
            self.regions += 1
            region = self.regions
            earlier = (PlanSite(site.loop, site.before, shift[0]).earlier(loop).shift, region)
            here, prev, join = self.label, f"prev'{region}", f"join'{region}"
            b.emit(f"br {first}, label {local(join)}, label {local(prev)}")
            b.lines.append(f"{local(prev)[1:]}:")
            self.label = prev
            before = self._operand(latch, site, b, earlier)
            end = self.label
            b.emit(f"br label {local(join)}")
            b.lines.append(f"{local(join)[1:]}:")
            made = b.value(inst.type, f"phi {inst.type.text} [ {came_in.ref}, {local(here)} ], "
                                      f"[ {before.ref}, {local(end)} ]")
            self.label = join
            return (made,)
        inst = info.copy or inst  # (a phi of copies: the operation they copy)
        refs = {o.value: self._operand(o, site, b, shift).ref for o in inst.operands if d.keys.value(o) is not None}
        return (b.reemit(inst, refs),)

    def _remake_again(self, key: Key, site: Site, b: Builder, shift: tuple) -> Shadow:
        """The value an undone store wrote, read from its address before the undo (keys.Keys._again)."""
        store = self.d.keys.instruction(key.name)
        value, ptr = store.operands
        return (b.load(value.type, self._operand(ptr, site, b, shift), store.align, memory=PRIMAL),)

    def _remake_shadow(self, key: Key, site: Site, b: Builder, shift: tuple) -> Shadow:
        d = self.d
        inst = d.cfg.defs[key.name]
        op = inst.opcode
        if op == "alloca":
            return self.local_shadow[key.name]
        if op == "getelementptr":
            base = self._shadow_of(inst.operands[0], site, b, shift)
            return self.layout.gep(b, inst, base, lambda o: self._operand(o, site, b, shift))
        if op in ("bitcast", "freeze", "addrspacecast"):
            return self._shadow_of(inst.operands[0], site, b, shift)
        if op == "select":
            cond = self._operand(inst.operands[0], site, b, shift)
            a, c = (self._shadow_of(o, site, b, shift) for o in inst.operands[1:])
            return self.layout.select(b, cond, a, c)
        if op == "phi":  # a pointer induction variable's: its start's, stepped as it is (keys.py)
            loop = d.loops.by_header[d.cfg.block_of[key.name]]
            ind = loop.inductions[key.name]
            start = self._shadow_of(ind.start, site, b, shift)
            offset = b.binary("mul", self.counters(site, b, shift)[id(loop)], V(I64, ind.step.value))
            return tuple(b.value(PTR, f"getelementptr i8, {s}, {offset}") for s in start)
        raise AssertionError(f"no way to recompute the shadow of {inst.text}")

    def _shadow_of(self, op: Operand, site: Site, b: Builder, shift: tuple) -> Shadow:
        if op.value in self.activity.pointers and op.value in self.params:
            return self.layout.named(op.value, PTR)
        if op.value not in self.activity.pointers:
            if self.activity.runtime and not points_nowhere(op, self.d.cfg.defs):  # its own (shadows.py)
                return (self._operand(op, site, b, shift),) * self.layout.parts
            return self.layout.zero(PTR)
        return self.materialize(Key(SHADOW, op.value), site, b, shift)

    def _remake_mask(self, key: Key, site: Site, b: Builder, shift: tuple) -> Shadow:
        root = self.activity.mask_root(key.name)
        if root.result != key.name:
            return self.materialize(Key(MASK, root.result), site, b, shift)
        cond = self._operand(root.operands[0], site, b, shift)

        def mask(o: Operand) -> V:
            if o.value in self.activity.maybe:
                return self.materialize(Key(MASK, o.value), site, b, shift)[0]
            return V(I1, "true" if o.value in self.activity.pointers else "false")

        return (b.select(cond, mask(root.operands[1]), mask(root.operands[2])),)

    def _remake_choice(self, key: Key, site: Site, b: Builder, shift: tuple) -> Shadow:
        inst = self.d.cfg.defs[key.name]
        args = [self._operand(o, site, b, shift) for o in inst.operands]
        return (rule_for(inst.callee).choice(b, args, self._operand(Operand(inst.type, inst.result), site, b, shift)),)

    def _remake_came(self, key: Key, site: Site, b: Builder, shift: tuple) -> Shadow:
        cond, sides = self.d.keys.splitting_branch(key.name)
        t = self.d.keys[key].types[0]
        c = self._operand(cond, site, b, shift)
        if t.bits == 1:
            return (c if sides == [1, 0] else b.value(I1, f"xor {c}, true"),)  # true: predecessor 1
        return (b.select(c, V(t, str(sides[0])), V(t, str(sides[1]))),)

    def _remake_exit(self, key: Key, site: Site, b: Builder, shift: tuple) -> Shadow:
        trip = self.d.loops.by_header[key.name].trip
        start, bound = (self._operand(o, site, b, shift) for o in trip.operands)
        return (b.binary("sub", storage.trip_count(b, trip, start, bound), V(I64, "1")),)


def _this_iteration(carry: Carry, site: Site, shift: tuple) -> bool:
    """Whether a site makes its values at the reverse iteration of the carry's loop it is in."""
    return not shift[0] and site.loop is not None and carry.loop.contains(site.loop)


def counter(loop: Loop) -> V:
    """The reverse sweep's slot with the iteration a loop is at."""
    return V(PTR, local(f"cnt'{bare(loop.header)}"))
