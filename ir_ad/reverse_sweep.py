"""The reverse sweep of reverse mode: walks the function's blocks backwards, each instruction's
adjoint rule in reverse order, accumulating adjoints in stack slots (which the optimizer turns
into registers) and into shadow memory.

It is written in two steps around the cache plan. `collect` writes the code of every block,
referring to the primal values it needs by placeholder names and noting, per *site* (a block of
the reverse function), which keys it needs there: those needs are what the plan decides on.
`write` then gives each site a prologue that materializes its needs, as the plan says (reading
them back from storage, or recomputing them from other keys), and assembles the function.

Loops run backwards by counting: each loop has a counter slot, set to the iteration count when
the reverse sweep enters the loop through an exit and counted down at its header; affine
induction variables are recomputed from it, and stored values are indexed by it."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import storage
from .builder import CACHE, PRIMAL, Builder, V, bare, local
from .cache_plan import CachePlan, PlanSite, Slot, descriptor_types
from .ir import I1, I64, PTR, Instruction, Operand, Type
from .keys import BLOB, CAME, CHOICE, DESC, EXIT, MASK, OLD, RETURNS, SHADOW, VALUE, Key, came_type, instruction_key
from .loops import Loop
from .reverse import Derivation
from .rules import rule_for
from .shadows import ALLOCATORS, IGNORED_INTRINSICS, INACTIVE_CALLS, INTERLEAVED, MIXED_POINTER, VOID, Shadow, \
    callee_name

SINK = V(PTR, "%\"adgen'sink\"")


@dataclass(eq=False)
class Site:
    """A stretch of the reverse function: its code, and the keys it needs from the plan, which
    its prologue materializes. A block's reverse is one site, or several when it undoes stores
    (what it reads before an undo and after it differ); each edge is a site of its own."""

    label: str | None  # as written after the colon; None: it continues the site before it
    loop: Loop | None  # the loop it runs in: what it reads is per iteration of this loop
    before: frozenset = frozenset()  # the undone stores still in effect here (ids)
    lines: list[str] = field(default_factory=list)
    wants: dict[Key, Shadow] = field(default_factory=dict)  # key -> its placeholder names
    term: list[str] = field(default_factory=list)  # the branch that ends it (and blocks it needs)
    frees: list[Key] = field(default_factory=list)  # descriptors of buffers freed here


class ReverseSweep:
    def __init__(self, d: Derivation):
        self.d = d
        self.fn, self.layout, self.activity = d.fn, d.layout, d.activity
        self.sites: list[Site] = []
        self.rev_of: dict[str, Site] = {}
        self.segments: dict[str, list[Site]] = {}
        self.edges: dict[tuple[str, str], Site] = {}
        self.entry = Site("entry", None)
        self.plan: CachePlan | None = None
        self.made: dict[tuple[int, Key], Shadow] = {}
        self.undo: list[tuple[int, Instruction]] = []
        self.placeholders = 0
        self.regions = 0  # branches in prologues (see _remake_value)
        self.label = "entry"  # the block the prologue being written is in
        self.local_shadow: dict[str, Shadow] = {}

    # ================================================================== collecting
    def collect(self) -> dict[Key, set]:
        d = self.d
        blocks = self.fn.blocks
        for block in blocks:
            site = Site(f"rev'{bare(block.label)}", d.loops.loop_of.get(block.label),
                        self._undone_before(block.instructions[-1]))
            self.rev_of[block.label] = site
            self.segments[block.label] = [site]
        for block in blocks:
            for p in d.cfg.preds[block.label]:
                where = _common_loop(d, p, block.label)
                term = next(b for b in blocks if b.label == p).instructions[-1]
                self.edges[(p, block.label)] = Site(f"edge'{bare(p)}'{bare(block.label)}", where,
                                                    self._undone_before(term))
        for block in blocks:
            self._block(block)
        self.entry.before = frozenset(id(s) for s in d.undoable)
        self._entry()
        self.sites = [self.entry] + [s for b in blocks for s in self.segments[b.label] +
                                     [self.edges[(p, b.label)] for p in d.cfg.preds[b.label]]]
        needs: dict[Key, set] = {}
        for site in self.sites:
            for key in site.wants:
                needs.setdefault(key, set()).add(PlanSite(site.loop, site.before))
        return needs

    def _undone_before(self, end: Instruction) -> frozenset:
        """The undone stores that precede `end` in the forward sweep: still in effect when the
        reverse sweep gets back there."""
        return frozenset(id(s) for s in self.d.undoable if self.d.cfg.may_follow(s, end))

    def need(self, key: Key, site: Site, types: tuple[Type, ...]) -> Shadow:
        """Placeholders for a key at a site; the prologue defines them."""
        if key not in site.wants:
            stem = bare(key.name) if key.kind == VALUE else f"{key.kind}'{bare(key.name)}{key.sub and '.' + bare(key.sub)}"
            self.placeholders += 1
            index = self.placeholders
            names = [local(f"{stem}'@{index}" + (f".{k}" if len(types) > 1 else "")) for k in range(len(types))]
            site.wants[key] = tuple(V(t, n) for t, n in zip(types, names))
        return site.wants[key]

    def value(self, op: Operand, site: Site) -> V:
        """A primal operand as the site can use it."""
        key = self.d.keys.value(op)
        if key is None:
            return V(op.type, op.value)
        return self.need(key, site, (op.type,))[0]

    def shadow(self, op: Operand, site: Site) -> Shadow:
        """The shadow of a pointer operand."""
        d = self.d
        if op.value in d.activity.pointers and op.value in {p.name for p in self.fn.params}:
            return self.layout.named(op.value, PTR)
        if op.value not in d.activity.pointers:
            raise d.fail("a pointer into memory adgen keeps no derivatives of, where derivatives are needed")
        pt = self.layout.part_type(PTR)
        return self.need(Key(SHADOW, op.value), site, (pt,) * self.layout.parts)

    def mask(self, op: Operand, site: Site) -> V:
        if op.value not in self.activity.maybe:
            return V(I1, "true" if op.value in self.activity.pointers else "false")
        return self.need(Key(MASK, op.value), site, (I1,))[0]

    def guard(self, op: Operand, p: Shadow, site: Site, b: Builder) -> Shadow:
        """A shadow address safe to use: the real one, or a scratch sink where there is none."""
        if op.value not in self.activity.maybe:
            return p
        m = self.mask(op, site)
        return tuple(b.select(m, x, SINK) for x in p)

    # ------------------------------------------------------------------ adjoints
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
        if not self.activity.active(name):
            return
        value = self.layout.convert(b, value, self.activity.floaty[name])
        t = self.part(name)
        for slot, v in zip(self.slots(name), value):
            b.store(self.layout.add(b, (b.load(t, slot),), (v,))[0], slot)

    # ------------------------------------------------------------------ blocks
    def _block(self, block) -> None:
        d = self.d
        site = self.rev_of[block.label]
        b = Builder(d.decls, site.lines, prefix=f"r{bare(block.label)}.")
        phis = [i for i in block.instructions if i.opcode == "phi"]
        for inst in reversed(block.instructions[len(phis):]):
            d.inst = inst
            self.reverse(inst, site, b)
            if inst in d.undoable:  # what follows sees memory as it was before the store
                site = Site(None, site.loop, self._undone_before(inst))
                self.segments[block.label].append(site)
                b.lines = site.lines
        d.inst = block.instructions[-1]
        taken = {i.result: self.take(b, i.result) for i in phis if self.activity.active(i.result)}
        preds = d.cfg.preds[block.label]
        for p in preds:
            edge = self.edges[(p, block.label)]
            eb = Builder(d.decls, edge.lines, prefix=f"x{bare(p)}.{bare(block.label)}.")
            for inst in phis:
                if inst.result in taken:
                    for v, frm in inst.incoming:
                        if frm == p and v.is_local:
                            self.add(eb, v.value, taken[inst.result])
            for loop in d.loops.exited(p, block.label):
                count = self.need(Key(EXIT, loop.header, block.label), edge, (I64,))[0]
                eb.store(count, _counter(loop))
            edge.term = [f"br label %\"rev'{bare(p)}\""]
        loop = d.loops.by_header.get(block.label)
        if not preds:
            site.term = ["br label %\"rev'exit\""]
        elif loop is not None and len(loop.entries) == 1 and len(loop.latches) == 1:
            count = b.load(I64, _counter(loop))
            first = b.value(I1, f"icmp eq {count}, 0")
            less = b.binary("sub", count, V(I64, "1"))
            back = local(f"back'{bare(block.label)}")
            site.term = [f"br {first}, label {self._edge(loop.entries[0], block.label)}, label {back}",
                         f"{back[1:]}:", f"store {less}, ptr {_counter(loop).ref}",
                         f"br label {self._edge(loop.latches[0], block.label)}"]
        elif len(preds) == 1:
            site.term = [f"br label {self._edge(preds[0], block.label)}"]
        else:
            came = self.need(Key(CAME, block.label), site, (came_type(len(preds)),))[0]
            targets = [self._edge(p, block.label) for p in preds]
            site.term = []
            if loop is not None:  # a header with several ways in or back: count down on the way back
                for i, p in enumerate(preds):
                    if p in loop.latches:
                        targets[i] = local(f"dec'{bare(p)}'{bare(block.label)}")
                        n, m = (local(f"{x}'{bare(p)}'{bare(block.label)}") for x in "nm")
                        site.term += [f"{targets[i][1:]}:", f"{n} = load i64, ptr {_counter(loop).ref}",
                                      f"{m} = sub i64 {n}, 1", f"store i64 {m}, ptr {_counter(loop).ref}",
                                      f"br label {self._edge(p, block.label)}"]
            site.term = [self._switch(came, targets)] + site.term

    def _edge(self, p: str, block: str) -> str:
        return local(self.edges[(p, block)].label)

    def _switch(self, came: V, targets: list[str]) -> str:
        if came.type.bits == 1:
            return f"br {came}, label {targets[1]}, label {targets[0]}"  # true is predecessor 1
        cases = " ".join(f"{came.type.text} {i}, label {t}" for i, t in enumerate(targets))
        return f"switch {came}, label {targets[0]} [ {cases} ]"

    def _entry(self) -> None:
        """Seeds the returned value's adjoint, at the return the forward sweep took."""
        d = self.d
        returns = [b for b in self.fn.blocks if b.instructions[-1].opcode == "ret"]
        if not returns:
            d.inst = None
            raise d.fail("a function that never returns")
        site = self.entry
        b = Builder(d.decls, site.lines, prefix="e")
        targets = [local(f"seed'{bare(r.label)}") for r in returns]
        if len(returns) > 1:
            came = self.need(Key(CAME, RETURNS), site, (came_type(len(returns)),))[0]
            site.term = [self._switch(came, targets)]
        else:
            site.term = [f"br label {targets[0]}"]
        seeds = []
        for r, label in zip(returns, targets):
            lines = [f"{label[1:]}:"]
            ret = r.instructions[-1]
            if d.pattern.ret_active and ret.operands and self.activity.active(ret.operands[0].value):
                seed = self.layout.named("%ret'seed", self.fn.ret)
                self.add(Builder(d.decls, lines, prefix=f"s{bare(r.label)}."), ret.operands[0].value, seed)
            lines.append(f"  br label %\"rev'{bare(r.label)}\"")
            seeds += lines
        self.seed_lines = seeds

    # ------------------------------------------------------------------ instructions
    def reverse(self, inst: Instruction, site: Site, b: Builder) -> None:
        """The reverse of one instruction."""
        op = inst.opcode
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
        if inst.result is None or not self.activity.active(inst.result):
            return
        dr = self.take(b, inst.result)
        ops = inst.operands
        if op in ("fpext", "fptrunc", "bitcast", "freeze"):
            return self.add(b, ops[0].value, dr) if ops[0].value in self.activity.floaty else None
        if op == "select":
            cond = self.value(ops[0], site)
            zero = self.layout.zero(self.activity.floaty[inst.result])
            if self.activity.active(ops[1].value):
                self.add(b, ops[1].value, self.layout.select(b, cond, dr, zero))
            if self.activity.active(ops[2].value):
                self.add(b, ops[2].value, self.layout.select(b, cond, zero, dr))
            return
        if op in ("fadd", "fsub", "fmul", "fdiv", "frem", "fneg"):
            return self.reverse_rule(inst, op, ops, dr, site, b)
        raise self.d.fail(f"the '{op}' instruction in reverse mode")

    def reverse_rule(self, inst, name, args, dr, site, b) -> None:
        rule = rule_for(name)
        if rule is None:
            raise self.d.fail(f"'{name.lstrip('@')}', which has no derivative rule")
        if rule.choice is not None:
            partials = rule.from_choice(b, self.need(Key(CHOICE, inst.result), site, (I1,))[0],
                                        V(inst.type, "poison"))
        else:
            lazy = [_Lazy(a.type, lambda a=a: self.value(a, site)) for a in args]
            result = _Lazy(inst.type, lambda: self.value(Operand(inst.type, inst.result), site))
            partials = rule.partials(b, lazy, result)
        for a, partial in zip(args, partials):
            if partial is not None and self.activity.active(a.value):
                self.add(b, a.value, self.layout.scale(b, partial, dr))

    def reverse_load(self, inst, site, b) -> None:
        if inst.result is None or not self.activity.active(inst.result):
            return
        dr = self.take(b, inst.result)
        p = self.guard(inst.operands[0], self.shadow(inst.operands[0], site), site, b)
        t = self.activity.floaty[inst.result]
        old = self.layout.load(b, t, p, inst.align)
        self.layout.store(b, self.layout.add(b, old, dr), p, inst.align)

    def reverse_store(self, inst, site, b) -> None:
        value, ptr = inst.operands
        if inst in self.d.undoable:
            self._undo(inst, site, b)
        activity = self.activity
        params = {p.name for p in self.fn.params}
        if ptr.value not in activity.pointers:
            if value.value in activity.floaty:
                what = "through a 'const' pointer argument" if ptr.value in params else \
                    "to memory adgen keeps no derivatives of (a global variable, say)"
                raise self.d.fail(f"a store of a value carrying derivatives {what}")
            return
        t = value.type if value.type.kind == "float" else activity.floaty.get(value.value) or (
            activity.memtype(ptr.value) if value.type.kind == "int" and value.type.bits in (32, 64) else None)
        if t is None or (value.type.kind == "int" and t.bits != value.type.bits):
            return  # integers and pointers: nothing flows back
        p = self.guard(ptr, self.shadow(ptr, site), site, b)
        dv = self.layout.load(b, t, p, inst.align)
        self.layout.store(b, self.layout.zero(t), p, inst.align)
        if ptr.value in activity.maybe:  # the sink holds nothing to pass on
            m = self.mask(ptr, site)
            dv = self.layout.select(b, m, dv, self.layout.zero(t))
        if activity.active(value.value):
            self.add(b, value.value, dv)

    def _undo(self, inst, site, b) -> None:
        """Puts back the value a store overwrote, so that loads before it repeat as they ran;
        the exit puts the stored value back again."""
        k = len(self.undo)
        value, ptr = inst.operands
        at = self.value(ptr, site)
        old = self.need(Key(OLD, instruction_key(self.fn, inst)), site, (value.type,))[0]
        now = b.load(value.type, at, memory=PRIMAL)
        b.store(now, V(PTR, f"%\"undo'{k}.value\""))
        b.store(at, V(PTR, f"%\"undo'{k}.at\""))
        b.store(V(I1, "true"), V(PTR, f"%\"undo'{k}.on\""))
        b.store(old, at, memory=PRIMAL)
        self.undo.append((k, inst))

    def reverse_call(self, inst, site, b) -> None:
        name = callee_name(inst)
        args = inst.operands
        activity = self.activity
        if any(a.value in activity.maybe for a in args) and not name.startswith(IGNORED_INTRINSICS):
            raise self.d.fail(MIXED_POINTER)
        if name.startswith(IGNORED_INTRINSICS):
            return
        if name.startswith(("llvm.memcpy", "llvm.memmove")) or name in ("memcpy", "memmove"):
            return self.reverse_copy(inst, site, b, move="memmove" in name)
        if name.startswith("llvm.memset") or name == "memset":
            return self.reverse_set(inst, site, b)
        if name in ALLOCATORS:
            return self._release(inst.result, site, b) if inst.result in self.d.deferred else None
        if name == "free":
            return
        if not any(activity.on(a) for a in args):
            return
        if id(inst) in self.d.calls:
            return self.reverse_derived_call(inst, site, b)
        if rule_for(inst.callee) is not None:
            if inst.result is None or not activity.active(inst.result):
                return
            return self.reverse_rule(inst, inst.callee, args, self.take(b, inst.result), site, b)
        if name in INACTIVE_CALLS:
            return
        if name == "realloc":
            raise self.d.fail("realloc of memory holding derivatives")
        raise self.d.fail(f"a call to '{name}', which is not defined in the sources and has no derivative rule")

    def reverse_derived_call(self, inst, site, b) -> None:
        call = self.d.calls[id(inst)]
        callee = call.derived
        args = [self.value(a, site) if not callee.rev_uses or callee.rev_uses[i] else V(a.type, "poison")
                for i, a in enumerate(inst.operands)]
        shadows = [x for a, on in zip(inst.operands, callee.pattern.active) if on and a.type.kind == "ptr"
                   for x in self.shadow(a, site)]
        seeds = list(self.take(b, inst.result)) if callee.pattern.ret_active else []
        rec = self.need(call.blob, site, (PTR,))[0]
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
            b.call("@free", VOID, [rec])

    def reverse_copy(self, inst, site, b, move: bool) -> None:
        dst, src, size = inst.operands[0], inst.operands[1], inst.operands[2]
        activity = self.activity
        if dst.value not in activity.pointers:
            return
        t = activity.memtype(dst.value) or activity.memtype(src.value)
        d = self.shadow(dst, site)
        length = self.value(size, site)
        if length.type.text != "i64":
            length = b.cast("zext", length, I64)
        if src.value not in activity.pointers:
            return self.layout.zero_memory(b, d, length)
        if t is None:
            raise self.d.fail("a copy between memory holding derivatives whose element type adgen cannot deduce "
                              "(give the pointers a float or double type in C)")
        count = b.binary("udiv", length, V(I64, str(t.bits // 8)))
        s = self.shadow(src, site)
        helper = f'@"adgen.adjoint.{"move" if move else "copy"}.{t.text}"'
        if self.layout.kind == INTERLEAVED:
            b.call(helper, VOID, [d[0], s[0], b.binary("mul", count, V(I64, str(self.layout.width)))])
        else:
            for dk, sk in zip(d, s):
                b.call(helper, VOID, [dk, sk, count])

    def reverse_set(self, inst, site, b) -> None:
        dst, size = inst.operands[0], inst.operands[2]
        if dst.value not in self.activity.pointers:
            return
        length = self.value(size, site)
        if length.type.text != "i64":
            length = b.cast("zext", length, I64)
        self.layout.zero_memory(b, self.shadow(dst, site), length)

    def _release(self, name: str, site: Site, b: Builder) -> None:
        """Frees an allocation and its shadow once the reverse sweep is done with them: local
        arrays the forward sweep moved to the heap, and allocations it freed."""
        primal = self.value(Operand(PTR, name), site)
        shadow = self.shadow(Operand(PTR, name), site)
        b.call("@free", VOID, [primal])
        b.call("@free", VOID, [shadow[0]])

    # ================================================================== writing
    def write(self, plan: CachePlan) -> str:
        d = self.d
        self.plan = plan
        fn, derived = self.fn, d.derived
        for block in fn.blocks:  # a group's buffer is freed once its loops are reversed
            loop = d.loops.by_header.get(block.label)
            group = plan.group_of(loop) if loop is not None else None
            if group is not None and group.root is loop:
                for p in loop.entries:
                    self.edges[(p, block.label)].frees.append(group.desc)
        out = [f"define internal {derived.rev_ret.text} {derived.rev}({', '.join(d.mode.rev_params(fn, derived))}) {{"]
        out.append("entry:")
        eb = Builder(d.decls, out, prefix="a")
        if self.activity.maybe:
            out.append("  %\"adgen'sink\" = alloca [64 x i64], align 64")
        for name in sorted(self.activity.floaty):
            if self.activity.active(name):
                t = self.part(name)
                for slot in self.slots(name):
                    eb.emit(f"{slot.ref} = alloca {t.text}")
                    eb.store(self.empty(t), slot)
        for loop in d.loops.loops:
            eb.emit(f"{_counter(loop).ref} = alloca i64")
        for k, inst in self.undo:
            eb.emit(f"%\"undo'{k}.value\" = alloca {inst.operands[0].type.text}")
            eb.emit(f"%\"undo'{k}.at\" = alloca ptr")
            eb.emit(f"%\"undo'{k}.on\" = alloca i1")
            eb.store(V(I1, "false"), V(PTR, f"%\"undo'{k}.on\""))
        self._local_shadows(eb)
        sites = self.sites
        for site in sites:
            prologue: list[str] = []
            pb = Builder(d.decls, prologue, prefix=f"p{sites.index(site)}.")
            self.label = site.label or self.label
            self._counters(site, pb)  # before any branch of the prologue
            for key, names in site.wants.items():
                made = self.materialize(key, site, pb)
                for name, v in zip(names, made):
                    prologue.append(f"  {name.ref} = select i1 true, {v}, {v}")
            for key in site.frees:
                pb.call("@free", VOID, [self.materialize(key, site, pb)[0]])
            if site is not self.entry and site.label is not None:
                out.append(f"\"{site.label}\":")
            out += prologue + site.lines + [line if line.endswith(":") else "  " + line for line in site.term]
            if site is self.entry:
                out += self.seed_lines
        out.append("\"rev'exit\":")
        xb = Builder(d.decls, out, prefix="x")
        for k, inst in self.undo:  # put the stores back, in their order
            on = xb.load(I1, V(PTR, f"%\"undo'{k}.on\""))
            out.append(f"  br {on}, label %\"redo'{k}\", label %\"redo'{k}.done\"")
            out.append(f"\"redo'{k}\":")
            value = xb.load(inst.operands[0].type, V(PTR, f"%\"undo'{k}.value\""))
            xb.store(value, xb.load(PTR, V(PTR, f"%\"undo'{k}.at\"")), memory=PRIMAL)
            out.append(f"  br label %\"redo'{k}.done\"")
            out.append(f"\"redo'{k}.done\":")
        grads = []
        params = self.fn.params
        for i in derived.scalars:
            name = params[i].name
            t = self.layout.part_type(params[i].type)
            if self.activity.active(name):
                grads += [xb.fadd(xb.load(t, slot), V(t, "zeroinitializer" if t.kind == "vector" else "0.0"))
                          for slot in self.slots(name)]  # -0.0 becomes 0.0
            else:
                grads += [V(t, "zeroinitializer" if t.kind == "vector" else "0.0")] * self.layout.parts
        if grads:
            agg = V(derived.rev_ret, "poison")
            for k, g in enumerate(grads):
                agg = xb.value(derived.rev_ret, f"insertvalue {agg}, {g}, {k}")
            xb.emit(f"ret {agg}")
        else:
            xb.emit("ret void")
        out.append("}")
        return "\n".join(out)

    def _local_shadows(self, b: Builder) -> None:
        """The shadows of the forward sweep's fixed-size local arrays: the reverse sweep's own."""
        for name in sorted(self.d.reverse_local):
            inst = self.d.cfg.defs[name]
            count = V(inst.count.type, inst.count.value) if inst.count else V(I64, "1")
            if count.type.text != "i64":
                count = b.cast("zext", count, I64)
            self.local_shadow[name] = self.layout.allocate(b, b.size_of(inst.source_type, count), on_stack=True)

    # ------------------------------------------------------------------ materializing
    # A key is materialized at a site, or at a site as it was some iterations earlier: the
    # context `shift` is ((loop, k), ...) (see PlanSite) and the region of the prologue that
    # computes it (behind a branch that skips it in iteration 0), which keeps apart values that
    # do not dominate each other.
    def materialize(self, key: Key, site: Site, b: Builder, shift: tuple = ((), 0)) -> Shadow:
        """A key's value at a site: read back from where the plan stored it, or recomputed."""
        memo = (id(site), key, shift)
        if memo in self.made:
            return self.made[memo]
        slot = self.plan.stored(key, PlanSite(site.loop, site.before, shift[0]))
        if slot is not None:
            made = self._load(key, slot, site, b, shift)
        else:
            made = getattr(self, "_remake_" + key.kind)(key, site, b, shift)
        self.made[memo] = made
        return made

    def _load(self, key: Key, slot: Slot, site: Site, b: Builder, shift: tuple) -> Shadow:
        at = storage.address(b, slot, V(PTR, "%rec"), self._counters(site, b, shift),
                             lambda g: self.materialize(g.desc, site, b, shift))
        if key.kind == BLOB:
            call = next(c for c in self.d.calls.values() if c.blob == key)
            return (b.load(PTR, at, 8),) if call.indirect else (at,)
        types = descriptor_types(self.plan.groups[[g.desc for g in self.plan.groups].index(key)]) \
            if key.kind == DESC else self.d.keys[key].types
        return tuple(b.load(t, p, memory=CACHE) for t, p in zip(types, storage.parts_at(b, types, at)))

    def _counters(self, site: Site, b: Builder, shift: tuple = ((), 0)) -> dict[int, V]:
        """The iteration numbers of the site's loops (some iterations earlier: only computed
        where the branch around them knows they are not below 0)."""
        memo = (id(site), "counters", shift)
        if memo not in self.made:
            if shift[0]:
                counters = dict(self._counters(site, b))
                for loop, k in shift[0]:
                    counters[id(loop)] = b.value(I64, f"sub nuw i64 {counters[id(loop)].ref}, {k}")
            else:
                loops = site.loop.ancestors() if site.loop else []
                counters = {id(l): b.load(I64, _counter(l)) for l in loops}
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
            count = self._counters(site, b, shift)[id(loop)]
            if inst.type.bits != 64:
                count = b.cast("trunc", count, inst.type)
            start, step = self._operand(ind.start, site, b, shift), self._operand(ind.step, site, b, shift)
            return (b.binary("add", b.binary("mul", count, step), start),)
        if loop is not None:  # the value it came in with, or what the latch computed one iteration earlier
            count = self._counters(site, b, shift)[id(loop)]
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
        refs = {o.value: self._operand(o, site, b, shift).ref for o in inst.operands if d.keys.value(o) is not None}
        return (b.reemit(inst, refs),)

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
        raise AssertionError(f"no way to recompute the shadow of {inst.text}")

    def _shadow_of(self, op: Operand, site: Site, b: Builder, shift: tuple) -> Shadow:
        if op.value in {p.name for p in self.fn.params}:
            return self.layout.named(op.value, PTR) if op.value in self.activity.pointers else self.layout.zero(PTR)
        if op.value not in self.activity.pointers:
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


class _Lazy(V):
    """A primal value the reverse sweep asks for only if a rule's partial uses it."""

    def __init__(self, t: Type, make):
        object.__setattr__(self, "type", t)
        object.__setattr__(self, "_make", make)
        object.__setattr__(self, "_made", None)

    @property
    def ref(self) -> str:  # type: ignore[override]
        if self._made is None:
            object.__setattr__(self, "_made", self._make())
        return self._made.ref

    def __str__(self) -> str:
        return f"{self.type.text} {self.ref}"


def _counter(loop: Loop) -> V:
    return V(PTR, local(f"cnt'{bare(loop.header)}"))


def _common_loop(d: Derivation, p: str, block: str):
    from .loops import common

    return common(d.loops.loop_of.get(p), d.loops.loop_of.get(block))


__all__ = ["ReverseSweep", "Site"]
