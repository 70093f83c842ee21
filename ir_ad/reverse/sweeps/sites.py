"""The sites of the reverse sweep, and what each needs of the primal: the adjoint rules ask for
primal values, shadows and masks at a site, and get placeholder names, which the site's prologue
defines once the cache plan says how (reverse_sweep.py writes it, materialize.py makes them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from adgen.ir_ad.analysis.loops import Loop
from adgen.ir_ad.ir import I1, PTR, Operand, Type
from adgen.ir_ad.ir.builder import Builder, V, bare, local
from adgen.ir_ad.reverse.plan.keys import MASK, SHADOW, VALUE, Key
from adgen.ir_ad.reverse.types import ReverseFacts
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.shadows import Shadow, points_nowhere, self_shadow

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


class SiteNeeds:
    """Hands out the placeholders for what a site needs, noting the need at the site."""

    def __init__(self, d: ReverseFacts):
        self.d = d
        self.fn, self.layout, self.activity = d.fn, d.layout, d.activity
        self.placeholders = 0
        self.read_back: dict[str, tuple[Key, Site]] = {}  # values of undone stores the block being
        # reversed reads back (keys.Keys.read_back): value -> its AGAIN key, the site reversing the store

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
        if op.value in self.read_back:  # (read where the store is reversed, before its undo)
            key, site = self.read_back[op.value]
        return self.need(key, site, (op.type,))[0]

    def shadow(self, op: Operand, site: Site) -> Shadow:
        """The shadow of a pointer operand."""
        d = self.d
        if points_nowhere(op, d.cfg.defs):  # (passed to a callee with its shadow: shadows.NOWHERE)
            return self.layout.zero(PTR)
        if op.value in d.activity.pointers and op.value in {p.name for p in self.fn.params}:
            return self.layout.named(op.value, PTR)
        if op.value not in d.activity.pointers and d.pattern.runtime:  # its own (runtime activity: shadows.py)
            return (self.value(op, site),) * self.layout.parts
        if op.value not in d.activity.pointers:
            raise Unsupported(self.fn.name, d.inst, "a pointer into memory adgen keeps no derivatives of, where "
                              "derivatives are needed", shadowless=True)
        pt = self.layout.part_type(PTR)
        return self.need(Key(SHADOW, op.value), site, (pt,) * self.layout.parts)

    def mask(self, op: Operand, site: Site) -> V:
        if op.value not in self.activity.maybe:
            return V(I1, "true" if op.value in self.activity.pointers else "false")
        return self.need(Key(MASK, op.value), site, (I1,))[0]

    def guard(self, op: Operand, p: Shadow, site: Site, b: Builder) -> Shadow:
        """A shadow address safe to use: the real one, or a scratch sink where there is none."""
        m = self.real(op, p, site, b)
        if m is None:
            return p
        return tuple(b.select(m, x, SINK) for x in p)

    def real(self, op: Operand, p: Shadow, site: Site, b: Builder) -> V | None:
        """i1: whether a pointer's shadow `p` is shadow memory, where it may not be: behind a
        mask, or its own shadow (runtime activity, shadows.py); None where it is."""
        if op.value in self.activity.maybe:
            return self.mask(op, site)
        if self.activity.may_be_itself(op):
            return b.value(I1, f"xor {self_shadow(b, p, self.value(op, site))}, true")
        return None
