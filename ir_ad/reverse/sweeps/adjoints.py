"""The reverse of each instruction: what it adds to adjoints (kept in stack slots, one per
derivative part, which the optimizer turns into registers) and to shadow memory. Primal values
are asked of the site's needs (`SiteNeeds.value` and the like), which notes what each site needs;
the rules of rules.py give the partial derivatives, and rule_terms.py the terms they add."""

from __future__ import annotations

from adgen.ir_ad.ir.builder import PRIMAL, Builder, V, bare, local
from adgen.ir_ad.ir import I1, I64, PTR, VOID, Instruction, Operand, Type, floating
from adgen.ir_ad.reverse.plan.keys import CHOICE, GUARD, OLD, Key, instruction_key
from adgen.ir_ad import vectors
from adgen.ir_ad.rules import rule_for
from adgen.ir_ad.vectors import LANE_OPS
from adgen.ir_ad.calls import (ALLOCATE, COPIES, FREE, IGNORED, INACTIVE, MOVE, REALLOCATE, SET, SYNCHRONIZATION,
                               allocates, callee_name, kind_of, no_derivative, reallocated)
from adgen.ir_ad.shadows import INTERLEAVED, MIXED_POINTER, Shadow
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.analysis.flow import unshadowed_store
from adgen.ir_ad.reverse.sweeps.rule_terms import rule_terms
from adgen.ir_ad.reverse.sweeps.sites import SINK, Site, SiteNeeds
from adgen.ir_ad.reverse.sweeps.synchronization import reverse_atomic_update, reverse_synchronization


class Adjoints:
    def __init__(self, needs: SiteNeeds, release_only: bool, sharing=None):
        """`release_only`: split mode's `free`, which reverses nothing and only releases.
        `sharing`: in a function a team runs, how its threads add to the arrays they read."""
        self.needs, self.d, self.release_only, self.sharing = needs, needs.d, release_only, sharing
        self.fn, self.layout, self.activity = needs.d.fn, needs.d.layout, needs.d.activity
        self.undo: list[tuple[int, Instruction]] = []  # the stores undone, numbered
        self.atomic_in_loops = False  # an adjoint added to shadow memory atomically in a loop (a team's)

    def slots(self, name: str) -> Shadow:
        n = self.layout.parts
        return tuple(V(PTR, local(bare(name) + ("'adj" if n == 1 else f"'adj.{k}"))) for k in range(n))

    def part(self, name: str) -> Type:
        return self.layout.part_type(self.activity.floaty[name])

    def empty(self, t: Type) -> V:
        """An adjoint with nothing in it yet: -0.0, so that adding to it folds away (x + -0.0 is x
        exactly, x + 0.0 is not for x = -0.0)."""
        if t.kind == "vector":
            return V(t, f"splat ({t.elems[0].text} -0.000000e+00)")
        return V(t, "-0.000000e+00")

    def take(self, b: Builder, name: str) -> Shadow:
        """Reads the adjoint of `name` and clears it (its definition is being reversed)."""
        t = self.part(name)
        out = []
        for slot in self.slots(name):
            out.append(b.load(t, slot))
            b.store(self.empty(t), slot)
        return tuple(out)

    def add(self, b: Builder, name: str, value: Shadow) -> None:
        if not self.activity.active(name) or self.release_only:
            return
        value = self.layout.convert(b, value, self.activity.floaty[name])
        t = self.part(name)
        for slot, v in zip(self.slots(name), value):
            b.store(self.layout.add(b, (b.load(t, slot),), (v,))[0], slot)

    def reverse(self, inst: Instruction, site: Site, b: Builder) -> None:
        """The reverse of one instruction."""
        op = inst.opcode
        if self.release_only:
            return self._release_only(inst, site, b)
        if op in ("br", "switch", "ret", "unreachable", "fcmp", "icmp"):
            return
        if op == "call":
            return self.reverse_call(inst, site, b)
        if op == "alloca":
            return self._release(inst.result, site, b) if inst.result in self.d.heap else None
        if op == "store":
            return self.reverse_store(inst, site, b)
        if op == "load":
            return self.reverse_load(inst, site, b)
        if op == "atomicrmw":
            return reverse_atomic_update(self, inst, site, b)
        if inst.result is None or not self.activity.active(inst.result):
            return
        dr = self.take(b, inst.result)
        ops = inst.operands
        if op in ("fpext", "fptrunc", "bitcast", "freeze"):
            return self.add(b, ops[0].value, dr) if ops[0].value in self.activity.floaty else None
        if op == "select":
            return self._selected(b, self.needs.value(ops[0], site), dr, inst, ops[1], ops[2])
        if op in ("fadd", "fsub", "fmul", "fdiv", "frem", "fneg"):
            return self.reverse_rule(inst, op, ops, dr, site, b)
        if op in LANE_OPS:
            return self.reverse_lanes(inst, dr, site, b)
        raise self.d.fail(f"the '{op}' instruction in reverse mode")

    def reverse_lanes(self, inst, dr, site, b) -> None:
        """A lane operation's adjoints (vectors.py): its transpose."""
        made = vectors.adjoints(b, inst, dr, lambda o: self.needs.value(o, site),
                                lambda o: self.activity.active(o.value))
        for k, value in made:
            self.add(b, inst.operands[k].value, value)

    def _release_only(self, inst, site, b) -> None:
        """What the reverse sweep releases, and nothing else (split mode's `free`)."""
        if inst.opcode == "alloca" and inst.result in self.d.heap:
            return self._release(inst.result, site, b)
        if inst.opcode != "call":
            return
        if allocates(self.activity.module, inst):
            return self._release(inst.result, site, b, freed_by_primal=True)
        if id(inst) in self.d.calls:
            return self.reverse_derived_call(inst, site, b)

    def reverse_rule(self, inst, name, args, dr, site, b) -> None:
        rule = rule_for(name)
        if rule is None:
            raise self.d.fail(f"'{name.lstrip('@')}', which has no derivative rule")
        if rule.refuse is not None and (why := rule.refuse([self.activity.on(a) for a in args])):
            raise self.d.fail(why)
        if rule.choice is not None:  # a select by the choice (rules.Rule.choice)
            if inst.type.kind == "vector":
                raise self.d.fail(f"'{name.lstrip('@')}' on a vector value in reverse mode (which argument won is "
                                  "kept per scalar)")
            return self._selected(b, self.needs.need(Key(CHOICE, inst.result), site, (I1,))[0], dr, inst, *args)
        terms = rule_terms(b, rule, inst, args, dr, layout=self.layout, value=lambda op: self.needs.value(op, site),
                           wanted=[self.activity.active(a.value) for a in args],
                           masked=inst.result in self.activity.masked,
                           at_hand=self.d.keys.value(inst.result) in site.wants, cfg=self.d.cfg, fn=self.fn)
        for a, term in zip(args, terms):  # (each partial scaled before any is added)
            if term is not None:
                self.add(b, a.value, term)

    def _selected(self, b: Builder, cond: V, dr: Shadow, inst: Instruction, first: Operand, second: Operand) -> None:
        """The adjoint of a select by `cond` (or of a min/max, by its choice): whole to the one chosen."""
        zero = self.layout.zero(self.activity.floaty[inst.result])
        if self.activity.active(first.value):
            self.add(b, first.value, self.layout.select(b, cond, dr, zero))
        if self.activity.active(second.value):
            self.add(b, second.value, self.layout.select(b, cond, zero, dr))

    def reverse_load(self, inst, site, b) -> None:
        if inst.result is None or not self.activity.active(inst.result):
            return
        dr = self.take(b, inst.result)
        p = self.needs.guard(inst.operands[0], self.needs.shadow(inst.operands[0], site), site, b)
        if _shared(self.d, inst.operands[0]):
            array = self.sharing.handles(inst.operands[0]) if self.sharing is not None else None
            if array is not None:  # (the thread's own: where not, the fallback adds atomically, sharing.py)
                return self.sharing.add(b, array, dr[0], p[0], inst.align)
            self.atomic_in_loops |= site.loop is not None
            return self.layout.atomic_add(b, dr, p)
        t = self.activity.floaty[inst.result]
        old = self.layout.load(b, t, p, inst.align)
        self.layout.store(b, self.layout.add(b, old, dr), p, inst.align)

    def reverse_store(self, inst, site, b) -> None:
        value, ptr = inst.operands
        if inst in self.d.undoable:
            self._undo(inst, site, b)
        activity = self.activity
        if ptr.value not in activity.pointers:
            if value.value in activity.floaty:
                raise self.d.fail(unshadowed_store(self.fn, self.activity.module, ptr.value))
            return
        t = value.type if floating(value.type) else activity.floaty.get(value.value) or (
            activity.memtype(ptr.value) if value.type.kind == "int" and value.type.bits in (32, 64) else None)
        if t is None or (value.type.kind == "int" and t.bits != value.type.bits) or \
                (not activity.active(value.value) and id(inst) in self.d.first_writes):
            return  # integers and pointers: nothing flows back (nor, after a first write, reads the shadow)
        p = self.needs.shadow(ptr, site)
        m = self.needs.real(ptr, p, site, b)
        if m is not None:
            p = tuple(b.select(m, x, SINK) for x in p)
        dv = self.layout.load(b, t, p, inst.align)
        self.layout.store(b, self.layout.zero(t), p, inst.align)
        if m is not None:  # the sink holds nothing to pass on
            dv = self.layout.select(b, m, dv, self.layout.zero(t))
        if activity.active(value.value):
            self.add(b, value.value, dv)

    def _undo(self, inst, site, b) -> None:
        """Puts back the value a store overwrote, so that loads before it repeat as they ran;
        the exit puts the stored value back again (for a logged store, the log's owner does)."""
        if self.d.logged:
            on = self.needs.need(Key(GUARD, instruction_key(self.fn, inst)), site, (I1,))[0] \
                if id(inst) in self.d.guards else V(I1, "true")
            b.call(f'@"adgen.log.undo.{inst.operands[0].type.text}"', VOID, [on])
            return
        k = len(self.undo)
        value, ptr = inst.operands
        at = self.needs.value(ptr, site)
        old = self.needs.need(Key(OLD, instruction_key(self.fn, inst)), site, (value.type,))[0]
        now = b.load(value.type, at, memory=PRIMAL)
        b.store(now, V(PTR, f"%\"undo'{k}.value\""))
        b.store(at, V(PTR, f"%\"undo'{k}.at\""))
        b.store(V(I1, "true"), V(PTR, f"%\"undo'{k}.on\""))
        b.store(old, at, memory=PRIMAL)
        self.undo.append((k, inst))

    def reverse_call(self, inst, site, b) -> None:
        kind = kind_of(self.activity.module, inst)
        args = inst.operands
        activity = self.activity
        if any(a.value in activity.maybe for a in args) and kind not in IGNORED:
            raise Unsupported(self.fn.name, self.d.inst, MIXED_POINTER, shadowless=True)
        if kind in IGNORED:
            return
        if self.d.pattern.team and callee_name(inst) in SYNCHRONIZATION:
            return reverse_synchronization(inst, lambda op: self.needs.value(op, site), self.sharing, b)
        if kind in COPIES:
            return self.reverse_copy(inst, site, b, move=kind == MOVE)
        if kind == SET:
            return self.reverse_set(inst, site, b)
        if kind == ALLOCATE:
            return self._release(inst.result, site, b, freed_by_primal=True)
        if kind == REALLOCATE:
            return self.reverse_realloc(inst, site, b)
        if kind == FREE:
            return
        if id(inst) in self.d.calls:  # (a constructor too, without arguments with derivatives: it releases)
            return self.reverse_derived_call(inst, site, b)
        if not any(activity.on(a) for a in args):
            return
        if rule_for(inst.callee) is not None:
            if inst.result is None or not activity.active(inst.result):
                return
            return self.reverse_rule(inst, inst.callee, args, self.take(b, inst.result), site, b)
        if kind == INACTIVE:
            return
        raise self.d.fail(no_derivative(inst))

    def reverse_derived_call(self, inst, site, b) -> None:
        call = self.d.calls[id(inst)]
        callee = call.derived
        args = [self.needs.value(a, site) if not callee.rev_uses or callee.rev_uses[i] else V(a.type, "poison")
                for i, a in enumerate(inst.operands)]
        shadows = [x for a, on in zip(inst.operands, callee.pattern.active) if on and a.type.kind == "ptr"
                   for x in self.needs.shadow(a, site)]
        rec = self.needs.need(call.blob, site, (PTR,))[0]
        if self.release_only:
            b.emit(f"call void {callee.free}({', '.join(str(a) for a in args + shadows + [rec])})")
            if call.indirect:
                b.call('@"adgen.stack.free"', VOID, [rec])
            return
        seeds = list(self.take(b, inst.result)) if callee.pattern.ret_active else []
        text = ", ".join(str(a) for a in args + shadows + seeds + [rec])
        if callee.rev_ret.kind == "void":
            b.emit(f"call void {callee.rev}({text})")
        else:
            grads = b.value(callee.rev_ret, f"call {callee.rev_ret.text} {callee.rev}({text})")
            parts = self.layout.parts
            for k, i in enumerate(callee.scalars):
                lanes = tuple(b.value(callee.rev_ret.elems[k * parts + j], f"extractvalue {grads}, {k * parts + j}")
                              for j in range(parts))
                self.add(b, inst.operands[i].value, lanes)
        if call.indirect:
            b.call('@"adgen.stack.free"', VOID, [rec])

    def reverse_copy(self, inst, site, b, move: bool) -> None:
        dst, src, size = inst.operands[0], inst.operands[1], inst.operands[2]
        activity = self.activity
        if dst.value not in activity.pointers:
            return
        d = self.needs.shadow(dst, site)
        length = _as_i64(b, self.needs.value(size, site))
        real = self.needs.real(dst, d, site, b)  # (runtime activity: none to clear or move where it is its own)
        if src.value not in activity.pointers:
            return self.layout.zero_memory(b, d, _unless(b, real, length))
        t = _copied_type(self.d, inst)
        if t is None:
            return  # integers and pointers: no adjoints to move (their shadows stay as they are)
        s = self.needs.shadow(src, site)
        into = self.needs.real(src, s, site, b)
        if into is not None:  # a copy from memory without adjoints: those of the copy cleared, none moved
            self.layout.zero_memory(b, d, _unless(b, b.binary("xor", into, V(I1, "true")), _unless(b, real, length)))
        count = _unless(b, _both(b, real, into), b.binary("udiv", length, V(I64, str(t.bits // 8))))
        atomic = ".atomic" if _shared(self.d, src) else ""
        self.atomic_in_loops |= bool(atomic)  # (a loop of atomic adds)
        helper = f'@"adgen.adjoint.{"move" if move else "copy"}{atomic}.{t.text}"'
        if self.layout.kind == INTERLEAVED:
            b.call(helper, VOID, [d[0], s[0], b.binary("mul", count, V(I64, str(self.layout.width)))])
        else:
            for dk, sk in zip(d, s):
                b.call(helper, VOID, [dk, sk, count])

    def reverse_set(self, inst, site, b) -> None:
        dst, size = inst.operands[0], inst.operands[2]
        if dst.value not in self.activity.pointers or id(inst) in self.d.first_writes:
            return
        length = _as_i64(b, self.needs.value(size, site))
        d = self.needs.shadow(dst, site)
        self.layout.zero_memory(b, d, _unless(b, self.needs.real(dst, d, site, b), length))

    def reverse_realloc(self, inst, site, b) -> None:
        """Gives the adjoints of the bytes realloc kept back to the old memory, by a plain copy:
        the old shadow holds no adjoint yet (nothing after the realloc may touch the old memory,
        and what came before has not been reversed), and pointers in it are the same. Then the
        new memory is released like an allocation."""
        old, size = reallocated(inst)
        if old.value in self.activity.pointers:
            s = self.needs.shadow(old, site)
            kept = b.call("@llvm.umin.i64", I64, [b.call('@"adgen.shadow.size"', I64, [s[0]]),
                                                  self.needs.value(size, site)])
            if self.layout.kind == INTERLEAVED:
                kept = b.binary("mul", kept, V(I64, str(self.layout.width)))
            for sk, nk in zip(s, self.needs.shadow(Operand(PTR, inst.result), site)):
                b.memcpy(sk, nk, kept, False)
        self._release(inst.result, site, b, freed_by_primal=True)

    def _release(self, name: str, site: Site, b: Builder, freed_by_primal: bool = False) -> None:
        """Frees an allocation and its shadow once the reverse sweep is done with them: local
        arrays the forward sweep moved to the heap, and memory allocated on the heap if the
        primal code freed it (the forward sweep marked it: adgen.shadow.drop)."""
        primal = self.needs.value(Operand(PTR, name), site)
        shadow = self.needs.shadow(Operand(PTR, name), site)
        if freed_by_primal:
            b.call('@"adgen.shadow.release"', VOID, [primal, shadow[0]])
        else:  # (the memory kept while an undo log may write it again)
            b.call('@"adgen.free.later"', VOID, [primal])
            b.call('@"adgen.shadow.free"', VOID, [shadow[0]])


def _as_i64(b: Builder, length: V) -> V:
    """A length (memcpy's, memset's) as an i64."""
    return length if length.type.text == "i64" else b.cast("zext", length, I64)


def _unless(b: Builder, real: V | None, length: V) -> V:
    """`length` where `real` holds (or is None), else 0: a length of shadow memory to write only
    where it is shadow memory (sites.SiteNeeds.real)."""
    return length if real is None else b.select(real, length, V(length.type, "0"))


def _copied_type(d, inst):
    """The float type of the elements a copy between memory with derivatives moves; None where
    the bytes hold integers and pointers only; an error where neither is known."""
    activity, (dst, src, size) = d.activity, inst.operands[:3]
    t = activity.memtype(dst.value) or activity.memtype(src.value) or activity.types.copied_type(inst.tbaa_struct)
    if t is None and not activity.holds_no_floats(dst.value, src.value, length=size, copy=inst):
        raise d.fail("a copy between memory holding derivatives whose element type adgen cannot deduce "
                     "(give the pointers a float or double type in C)")
    return t


def _both(b: Builder, p: V | None, q: V | None) -> V | None:
    """Two run-time conditions (runtime activity's: None, always) anded."""
    return p if q is None else q if p is None else b.binary("and", p, q)


def _shared(d, pointer: Operand) -> bool:
    """Whether other threads may add to the adjoints of memory a load reads at the same time:
    in a function a team runs, anything but memory this call allocated. (Those of memory a
    store writes need no care: the primal is free of races, so no other thread reads it.)"""
    return d.pattern.team and d.memory.base(pointer.value).kind != "fresh"
