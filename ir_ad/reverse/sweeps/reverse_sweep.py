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

from adgen.ir_ad.reverse.sweeps import carrying
from adgen.ir_ad.reverse.sweeps.adjoints import Adjoints
from adgen.ir_ad.ir.builder import PRIMAL, Builder, V, bare, local
from adgen.ir_ad.reverse.plan.cache_plan import CachePlan, PlanSite
from adgen.ir_ad.reverse.plan.carried import Carry, carried
from adgen.ir_ad.ir import I1, I64, PTR, VOID, Instruction
from adgen.ir_ad.reverse.plan.keys import CAME, EXIT, LOG, LOG_OWNER, RETURNS, Key, came_type
from adgen.ir_ad.reverse.plan.read_back import read_back
from adgen.ir_ad.analysis.loops import common
from adgen.ir_ad.reverse.sweeps.materialize import Materializer, counter
from adgen.ir_ad.reverse.sweeps.sharing import Sharing
from adgen.ir_ad.reverse.sweeps.sites import Site, SiteNeeds
from adgen.ir_ad.reverse.types import ReverseFacts
from adgen.ir_ad.shadows import Shadow


class ReverseSweep:
    def __init__(self, d: ReverseFacts, release_only: bool = False, sharing: Sharing | None = None,
                 name: str | None = None, fallback: str | None = None):
        """`release_only`: split mode's `free` function, which walks the reverse sweep's control
        flow to release what the forward sweep allocated (the same plan, read the same way), and
        computes nothing. `sharing`: a team's reverse sweep whose adds to the arrays it reads go
        where the threads decide at its entry (sharing.py), calling `fallback` (the same sweep,
        adding atomically, its `sharing` a bystander) where they cannot all be the thread's own;
        `name`, its function's."""
        self.d = d
        self.release_only = release_only
        self.fn, self.layout, self.activity = d.fn, d.layout, d.activity
        self.sites: list[Site] = []
        self.rev_of: dict[str, Site] = {}
        self.segments: dict[str, list[Site]] = {}
        self.edges: dict[tuple[str, str], Site] = {}
        self.entry = Site("entry", None)
        self.needs = SiteNeeds(d)
        self.sharing, self.name, self.fallback = sharing, name or d.derived.rev, fallback
        self.adjoints = Adjoints(self.needs, release_only, sharing)
        self.local_shadow: dict[str, Shadow] = {}
        # _undone_before's: the writes in each block; by block, what the writes of the other blocks give
        self._undone_in: dict[str, list[Instruction]] = {}
        for write in d.undoable:
            self._undone_in.setdefault(d.cfg.block_of_inst(write), []).append(write)
        self._undone_elsewhere: dict[str, frozenset] = {}
        self.carries: dict[Key, Carry] = {}  # by the latch value's key (plan/carried.py)

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
        self.entry.before = frozenset((id(s), None) for s in d.undoable)
        self._entry()
        self.sites = [self.entry] + [s for b in blocks for s in self.segments[b.label] +
                                     [self.edges[(p, b.label)] for p in d.cfg.preds[b.label]]]
        self._carry()
        needs: dict[Key, set] = {}
        for site in self.sites:
            for key in site.wants:
                needs.setdefault(key, set()).add(PlanSite(site.loop, site.before))
        return needs

    def _carry(self) -> None:
        """The values taken from the previous reverse iteration (plan/carried.py): each pair's
        slots moved on the way back to the previous iteration, cleared where the loop is entered."""
        self.carries = carried(self.d, self.sites)
        for carry in self.carries.values():
            term = self.segments[carry.loop.header][-1].term
            at = term.index(f"{_back(carry.loop.header)[1:]}:") + 1
            term[at:at] = carrying.back(carry)
            for (p, block), edge in self.edges.items():
                if carry.loop in self.d.loops.exited(p, block):
                    edge.lines += carrying.entered(carry)

    def _undone_before(self, end: Instruction) -> frozenset:
        """The undone writes still in effect when the reverse sweep gets back to just before
        `end`, as keys.Keys.clobbered reads them: (write, None) for a write that may run before
        `end` in the same iteration of the loops around it, (write, loop) for one inside a loop
        around both, whose earlier iterations ran before."""
        d = self.d
        block = d.cfg.block_of_inst(end)
        around = d.loops.loop_of[block]
        if block not in self._undone_elsewhere:  # (what the writes of other blocks give depends on the block alone)
            chain = around.ancestors() if around is not None else []
            found = set()
            for write in d.undoable:
                home = d.cfg.block_of_inst(write)
                if home != block and d.cfg.may_follow_in_iteration(write, end, around):
                    found.add((id(write), None))
                found |= {(id(write), loop) for loop in chain if loop.contains(d.loops.loop_of[home])}
            self._undone_elsewhere[block] = frozenset(found)
        same = {(id(w), None) for w in self._undone_in.get(block, ()) if d.cfg.may_follow_in_iteration(w, end, around)}
        return self._undone_elsewhere[block] | same if same else self._undone_elsewhere[block]

    # ------------------------------------------------------------------ blocks
    def _block(self, block) -> None:
        d = self.d
        site = self.rev_of[block.label]
        b = Builder(d.decls, site.lines, prefix=f"r{bare(block.label)}.")
        phis = [i for i in block.instructions if i.opcode == "phi"]
        for inst in reversed(block.instructions[len(phis):]):
            d.inst = inst
            self.adjoints.reverse(inst, site, b)
            if inst in d.undoable:  # what follows sees memory as it was before the store
                again = read_back(d.keys, inst, site.before, site.loop) if inst.opcode == "store" else None
                if again is not None:  # the value it wrote, read back here for the rest of the block
                    self.needs.read_back[inst.operands[0].value] = (again, site)
                site = Site(None, site.loop, self._undone_before(inst))
                self.segments[block.label].append(site)
                b.lines = site.lines
        self.needs.read_back.clear()
        d.inst = block.instructions[-1]
        taken = {i.result: self.adjoints.take(b, i.result) for i in phis if self.activity.active(i.result)}
        preds = d.cfg.preds[block.label]
        for p in preds:
            edge = self.edges[(p, block.label)]
            eb = Builder(d.decls, edge.lines, prefix=f"x{bare(p)}.{bare(block.label)}.")
            for inst in phis:
                if inst.result in taken:  # (one entry per edge from p, as a switch's cases share a
                    # block: the same value each, and the edge is taken once, so its first alone)
                    v = next((v for v, frm in inst.incoming if frm == p), None)
                    if v is not None and v.is_local:
                        self.adjoints.add(eb, v.value, taken[inst.result])
            for loop in d.loops.exited(p, block.label):
                count = self.needs.need(Key(EXIT, loop.header, block.label), edge, (I64,))[0]
                eb.store(count, counter(loop))
            edge.term = [f"br label %\"rev'{bare(p)}\""]
        loop = d.loops.by_header.get(block.label)
        if not preds:
            site.term = ["br label %\"rev'exit\""]
        elif loop is not None and len(loop.entries) == 1 and len(loop.latches) == 1:
            count = b.load(I64, counter(loop))
            first = b.value(I1, f"icmp eq {count}, 0")
            less = b.binary("sub", count, V(I64, "1"))
            back = _back(block.label)
            site.term = [f"br {first}, label {self._edge(loop.entries[0], block.label)}, label {back}",
                         f"{back[1:]}:", f"store {less}, ptr {counter(loop).ref}",
                         f"br label {self._edge(loop.latches[0], block.label)}"]
        elif len(preds) == 1:
            site.term = [f"br label {self._edge(preds[0], block.label)}"]
        else:
            came = self.needs.need(Key(CAME, block.label), site, (came_type(len(preds)),))[0]
            targets = [self._edge(p, block.label) for p in preds]
            site.term = []
            if loop is not None:  # a header with several ways in or back: count down on the way back
                for i, p in enumerate(preds):
                    if p in loop.latches:
                        targets[i] = local(f"dec'{bare(p)}'{bare(block.label)}")
                        n, m = (local(f"{x}'{bare(p)}'{bare(block.label)}") for x in "nm")
                        site.term += [f"{targets[i][1:]}:", f"{n} = load i64, ptr {counter(loop).ref}",
                                      f"{m} = sub i64 {n}, 1", f"store i64 {m}, ptr {counter(loop).ref}",
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
        if d.logged:  # the log this call opened, if it did: attached to undo, or dropped in split mode's free
            self.log_owner = self.needs.need(Key(LOG, LOG_OWNER), site, (PTR,))[0]
            site.lines.append(f"  call void @\"adgen.log.{'discard' if self.release_only else 'attach'}\"(ptr {self.log_owner.ref})")
        if self.fallback is not None:  # (each thread's adds to the arrays it reads: sharing.py)
            own = self.sharing.prologue(lambda op: self.needs.value(op, site),
                                        Builder(d.decls, site.lines, prefix="share."))
            self._fallback(own, site)
        targets = [local(f"seed'{bare(r.label)}") for r in returns]
        if len(returns) > 1:
            came = self.needs.need(Key(CAME, RETURNS), site, (came_type(len(returns)),))[0]
            site.term = [self._switch(came, targets)]
        else:
            site.term = [f"br label {targets[0]}"]
        seeds = []
        for r, label in zip(returns, targets):
            lines = [f"{label[1:]}:"]
            ret = r.instructions[-1]
            if d.pattern.ret_active and ret.operands and self.activity.active(ret.operands[0].value):
                seed = self.layout.named("%ret'seed", self.fn.ret)
                self.adjoints.add(Builder(d.decls, lines, prefix=f"s{bare(r.label)}."), ret.operands[0].value, seed)
            lines.append(f"  br label %\"rev'{bare(r.label)}\"")
            seeds += lines
        self.seed_lines = seeds

    def _fallback(self, own, site: Site) -> None:
        """Where some adds of this thread could not be its own: the sweep adding atomically."""
        d = self.d
        params = ", ".join(d.rev_params())
        go, back = local("share'own"), local("share'atomic")
        site.lines += [f"  br i1 {own.ref}, label {go}, label {back}", f"{back[1:]}:"]
        if d.derived.rev_ret.kind == "void":
            site.lines += [f"  call void {self.fallback}({params})", "  ret void"]
        else:
            site.lines += [f"  %\"share'r\" = call {d.derived.rev_ret.text} {self.fallback}({params})",
                           f"  ret {d.derived.rev_ret.text} %\"share'r\""]
        site.lines.append(f"{go[1:]}:")

    # ================================================================== writing
    def write(self, plan: CachePlan) -> str:
        d = self.d
        mat = Materializer(d, plan, self.local_shadow, self.carries)
        fn, derived = self.fn, d.derived
        for block in fn.blocks:  # a group's buffer is freed once its loops are reversed
            loop = d.loops.by_header.get(block.label)
            group = plan.group_of(loop) if loop is not None else None
            if group is not None and group.root is loop and group.in_record is None:
                for p in loop.entries:
                    self.edges[(p, block.label)].frees.append(group.desc)
        if self.release_only:
            out = [f"define internal void {derived.free}({', '.join(d.aug_params())}) {{"]
        else:
            out = [f"define internal {derived.rev_ret.text} {self.name}({', '.join(d.rev_params())}) {{"]
        out.append("entry:")
        self._slots(Builder(d.decls, out, prefix="a"))
        for number, site in enumerate(self.sites):
            prologue: list[str] = []
            pb = Builder(d.decls, prologue, prefix=f"p{number}.")
            mat.label = site.label or mat.label
            mat.counters(site, pb)  # before any branch of the prologue
            for key, names in site.wants.items():
                made = mat.materialize(key, site, pb)
                for name, v in zip(names, made):
                    prologue.append(f"  {name.ref} = select i1 true, {v}, {v}")
            for key in site.frees:
                pb.call('@"adgen.stack.free"', VOID, [mat.materialize(key, site, pb)[0]])
            if site is not self.entry and site.label is not None:
                out.append(f"\"{site.label}\":")
            out += prologue + site.lines + [line if line.endswith(":") else "  " + line for line in site.term]
            if site is self.entry:
                out += self.seed_lines
        out.append("\"rev'exit\":")
        xb = Builder(d.decls, out, prefix="x")
        for k, inst in self.adjoints.undo:  # put the stores back, in their order
            on = xb.load(I1, V(PTR, f"%\"undo'{k}.on\""))
            out.append(f"  br {on}, label %\"redo'{k}\", label %\"redo'{k}.done\"")
            out.append(f"\"redo'{k}\":")
            value = xb.load(inst.operands[0].type, V(PTR, f"%\"undo'{k}.value\""))
            xb.store(value, xb.load(PTR, V(PTR, f"%\"undo'{k}.at\"")), memory=PRIMAL)
            out.append(f"  br label %\"redo'{k}.done\"")
            out.append(f"\"redo'{k}.done\":")
        if d.logged and not self.release_only:  # the owner writes the logged stores again
            xb.call('@"adgen.log.close"', VOID, [self.log_owner])
        if self.sharing is not None:
            self.sharing.flush(xb, release=True)
        grads = []
        params = self.fn.params
        for i in derived.scalars:
            name = params[i].name
            t = self.layout.part_type(self.activity.floaty[name])
            if self.activity.active(name):
                grads += [xb.fadd(xb.load(t, slot), V(t, "zeroinitializer" if t.kind == "vector" else "0.0"))
                          for slot in self.adjoints.slots(name)]  # -0.0 becomes 0.0
            else:
                grads += [V(t, "zeroinitializer" if t.kind == "vector" else "0.0")] * self.layout.parts
        if grads and not self.release_only:
            agg = V(derived.rev_ret, "poison")
            for k, g in enumerate(grads):
                agg = xb.value(derived.rev_ret, f"insertvalue {agg}, {g}, {k}")
            xb.emit(f"ret {agg}")
        else:
            xb.emit("ret void")
        out.append("}")
        return "\n".join(out)

    def _slots(self, eb: Builder) -> None:
        """The entry's stack slots: the adjoints', the loops' counters, the undone stores', the
        local arrays' shadows."""
        if self.activity.maybe or self.activity.runtime:
            eb.lines.append("  %\"adgen'sink\" = alloca [64 x i64], align 64")
        for name in sorted(self.activity.floaty):
            if self.activity.active(name):
                t = self.adjoints.part(name)
                for slot in self.adjoints.slots(name):
                    eb.emit(f"{slot.ref} = alloca {t.text}")
                    eb.store(self.adjoints.empty(t), slot)
        for loop in self.d.loops.loops:
            eb.emit(f"{counter(loop).ref} = alloca i64")
        for carry in self.carries.values():
            eb.lines += carrying.slots(carry)
        for k, inst in self.adjoints.undo:
            eb.emit(f"%\"undo'{k}.value\" = alloca {inst.operands[0].type.text}")
            eb.emit(f"%\"undo'{k}.at\" = alloca ptr")
            eb.emit(f"%\"undo'{k}.on\" = alloca i1")
            eb.store(V(I1, "false"), V(PTR, f"%\"undo'{k}.on\""))
        self._local_shadows(eb)

    def _local_shadows(self, b: Builder) -> None:
        """The shadows of the forward sweep's fixed-size local arrays: the reverse sweep's own."""
        for name in sorted(self.d.reverse_local):
            inst = self.d.cfg.defs[name]
            count = V(inst.count.type, inst.count.value) if inst.count else V(I64, "1")
            if count.type.text != "i64":
                count = b.cast("zext", count, I64)
            self.local_shadow[name] = self.layout.allocate(b, b.size_of(inst.source_type, count), on_stack=True)


def _back(header: str) -> str:
    """The block of a loop's reverse that goes back to the iteration before."""
    return local(f"back'{bare(header)}")


def _common_loop(d: ReverseFacts, p: str, block: str):
    return common(d.loops.loop_of.get(p), d.loops.loop_of.get(block))


__all__ = ["ReverseSweep"]
