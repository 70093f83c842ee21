"""The cache plan: for everything the reverse sweep needs, whether it is recomputed there or
stored by the forward sweep, and where what is stored lives. Decided before any code is
written, and printable (`adgen build --explain`).

Decisions. What can be recomputed is (pure arithmetic, libm functions, loads of memory nothing
overwrites before the reverse sweep reads it, induction variables inside their loop); among the
rest, the plan stores the cut of fewest bytes that lets the reverse sweep recompute everything
else (`mincut`), weighing a byte stored per iteration of a loop as a thousand stored outside it.

Storage. Each stored value is kept at a *scope*: the innermost loop around both its definition
and the place the reverse sweep needs it (or the function's top level), one copy per iteration
of that loop and the loops around it.

- Top-level values go in the function's *record*, a fixed number of bytes the caller provides
  (a stack slot of the kernel, or a field of the caller's own storage): no allocation.
- A loop nest whose trip counts are all known when its outer loop starts gets one buffer,
  allocated there and indexed by the iteration numbers (`cache[i*m + j]`): an *indexed* group,
  laid out as one array per value, so that both sweeps read and write it with unit stride. A
  top-level nest of constant trip counts needing little storage (RECORD_NEST_LIMIT bytes in
  all) is kept in the record instead.
- A loop whose trip count is known only when it ends gets a *growable* group: one record per
  iteration in a buffer that doubles as needed.

A group's *descriptor* (its buffer and trip counts) is itself stored at the scope around the
group, so nested groups work the same way at any depth."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from adgen.ir_ad.analysis.flow import PURE
from adgen.ir_ad.ir import I64, PTR, Operand
from adgen.ir_ad.reverse.plan.keys import BLOB, DESC, EXIT, GUARD, LOG, OLD, Key, Keys, align_of
from adgen.ir_ad.analysis.loops import Loop, LoopForest, common
from adgen.ir_ad.reverse.plan.block_copies import block_copies
from adgen.ir_ad.reverse.plan.mincut import INF, min_vertex_cut

ALWAYS_STORED = (BLOB, DESC, OLD, LOG, GUARD)  # records the plan itself adds
ARRAY_ALIGN = 64  # each array of an indexed group starts on a cache line
RECORD_NEST_LIMIT = 4096  # bytes of constant-size nest storage a record may hold (it is on the stack)
LOOP_WEIGHT = 1000  # a byte stored per iteration costs this much more than one stored outside the loop
INDEXED, GROWABLE = "indexed", "growable"


@dataclass(eq=False)
class Group:
    """The storage of a loop nest (see the module's docstring)."""

    root: Loop
    kind: str
    members: list[Loop]  # root first, each loop after the loop around it
    slots: list["CacheSlot"] = field(default_factory=list)  # indexed: one array each; growable: the fields
    stride: int = 0  # growable: bytes per iteration
    in_record: int | None = None  # an indexed nest of constant trip counts, small: its offset in the record

    @property
    def desc(self) -> Key:
        return Key(DESC, self.root.header)

    @property
    def desc_bytes(self) -> int:
        return 8 * (1 + len(self.members)) if self.kind == INDEXED else 8


@dataclass(eq=False)
class CacheSlot:
    """Where one stored key lives: at a byte offset of the record (group None), as array number
    `index` of an indexed group, or at a byte offset of a growable group's per-iteration record."""

    key: Key
    scope: Loop | None
    group: Group | None
    size: int
    offset: int = 0
    index: int = 0


@dataclass(frozen=True)
class PlanSite:
    """Where the reverse sweep needs a key: in which loop (what it reads is per iteration of it),
    and which of the writes it undoes are still in effect there (see keys.Keys.clobbered)."""

    loop: Loop | None
    before: frozenset = frozenset()
    shift: tuple = ()  # ((loop, k), ...): as k iterations of that loop earlier (see keys.Def.shifted)

    def earlier(self, loop: Loop) -> "PlanSite":
        shift = dict(self.shift)
        shift[loop] = shift.get(loop, 0) + 1
        return PlanSite(self.loop, self.before, tuple(sorted(shift.items(), key=lambda item: item[0].depth)))


@dataclass
class CachePlan:
    function: str
    keys: Keys
    loops: LoopForest
    cut: set[tuple[Key, PlanSite]]  # loaded from storage at that site
    slots: dict[tuple[Key, int], CacheSlot]  # (key, id of its scope or 0) -> where it lives
    groups: list[Group]
    record_size: int
    needs: dict[Key, set]  # what the reverse sweep asked for, and at which sites
    recomputed: set[Key]
    logged: tuple = ()  # the writes undone through the undo log (stores, and calls undoing theirs)
    skipped: tuple = ()  # loops the forward sweep skips where they write only discarded memory (discarded.py)
    copied: tuple = ()  # stored loads written as one copy before their loop (block_copies.py)

    def stored(self, key: Key, site: PlanSite) -> CacheSlot | None:
        """The slot the reverse sweep reads `key` from at a site, or None when it recomputes it
        (or has it at hand)."""
        if key.kind in ALWAYS_STORED or (key, site) in self.cut:
            return self.slots[(key, _id(scope_of(self.keys, key, site.loop)))]
        return None

    def group_of(self, loop: Loop) -> Group | None:
        for g in self.groups:
            if loop in g.members:
                return g
        return None

    def stores_nothing(self) -> bool:
        return not self.slots


def _id(loop: Loop | None) -> int:
    return 0 if loop is None else id(loop)


def home(keys: Keys, key: Key) -> Loop | None:
    """The innermost loop a key is defined in, once per iteration. An exit count is defined on
    the edge that leaves its loop: outside that loop, and outside the block it goes to if that
    block is the header of another loop (which would see it many times)."""
    if key.kind == EXIT:
        return common(keys.loops.by_header[key.name], keys.loops.loop_of.get(key.sub))
    block = keys[key].block
    return keys.loops.loop_of.get(block) if block else None


def scope_of(keys: Keys, key: Key, site: Loop | None) -> Loop | None:
    """Where a key needed at `site` is stored: the innermost loop around both its definition and
    the site."""
    return common(home(keys, key), site)


def make_plan(function: str, keys: Keys, loops: LoopForest, needs: dict[Key, set], forced: list[Key],
              sizes: dict[Key, int], logged=()) -> CachePlan:
    """`needs`: what the reverse sweep asks for, at which sites; `forced`: keys stored whatever
    the cut (call records, overwritten values); `sizes`: the bytes of keys whose size their Def
    does not give (call records); `logged`: the writes undone through the undo log, for --explain."""
    nodes: dict[tuple[Key, PlanSite], float] = {}
    edges: set = set()
    roots: set = set()
    recomputed: set[Key] = set()

    def weight(key: Key, site: PlanSite) -> float:
        if not keys[key].storable:
            return INF
        scope = scope_of(keys, key, site.loop)
        return (keys[key].bytes or 8) * LOOP_WEIGHT ** (scope.depth if scope else 0)

    def visit(key: Key, site: PlanSite) -> None:
        """Adds a node and, through what it is recomputed from, all it depends on."""
        work = [(key, site)]
        while work:
            node = work.pop()
            if node in nodes:
                continue
            key, site = node
            d = keys[key]
            nodes[node] = weight(key, site)
            if d.recomputable and (d.loop_bound is None or d.loop_bound.contains(site.loop)) and \
                    not keys.clobbered(key, site.before, bool(site.shift), site.loop):
                uses = [(op, site) for op in d.operands]
                if d.shifted is not None:
                    uses.append((d.shifted, site.earlier(d.loop_bound)))
                for use in uses:
                    edges.add((use, node))
                    work.append(use)
            else:
                roots.add(node)

    required = set()
    for key, sites in needs.items():
        if key.kind in ALWAYS_STORED:
            continue
        for site in sites:
            visit(key, site)
            required.add((key, site))
    cut = min_vertex_cut(nodes, edges, roots, required)
    # what the reverse sweep recomputes: the required values and their operands, up to the cut
    users: dict = {}
    for u, v in edges:
        users.setdefault(v, []).append(u)
    work, seen = [n for n in required if n not in cut], set()
    while work:
        node = work.pop()
        if node in seen or node in cut:
            continue
        seen.add(node)
        recomputed.add(node[0])
        work += users.get(node, [])

    entries: dict[tuple[Key, int], Loop | None] = {}
    for key, site in cut:
        scope = scope_of(keys, key, site.loop)
        entries[(key, _id(scope))] = scope
    for key in forced:
        scope = home(keys, key)
        entries[(key, _id(scope))] = scope

    groups = _groups(keys, loops, entries)
    slots, record = _layout(keys, entries, groups, sizes)
    once = Counter(s.key for s in slots.values())  # (a key kept at one scope only: its slot is all it is)
    indexed = [s for s in slots.values() if s.group is not None and s.group.kind == INDEXED and once[s.key] == 1]
    return CachePlan(function, keys, loops, cut, slots, groups, record, needs, recomputed, tuple(logged),
                     copied=block_copies(keys, indexed))


def _groups(keys: Keys, loops: LoopForest, entries: dict) -> list[Group]:
    """The loops that need storage, grouped; adds each group's descriptor to `entries`."""
    marked: set[int] = set()
    for scope in list(entries.values()):
        while scope is not None:
            marked.add(id(scope))
            scope = scope.parent
    groups: list[Group] = []
    group_of: dict[int, Group] = {}
    for loop in loops.loops:  # outer loops first
        if id(loop) not in marked:
            continue
        outer = group_of.get(id(loop.parent)) if loop.parent is not None else None
        if outer is not None and outer.kind == INDEXED and loop.trip is not None and \
                _hoistable(keys, loop.trip.operands, outer.root):
            outer.members.append(loop)
            group_of[id(loop)] = outer
            continue
        known = loop.trip is not None and loop.preheader is not None and \
            keys.cfg.succs[loop.preheader] == [loop.header]
        group = Group(loop, INDEXED if known else GROWABLE, [loop])
        groups.append(group)
        group_of[id(loop)] = group
        entries[(group.desc, _id(loop.parent))] = loop.parent
    return groups


def _hoistable(keys: Keys, operands: list[Operand], root: Loop, depth: int = 0) -> bool:
    """Whether values can be computed before `root` starts: constants, arguments, values defined
    before it, and pure arithmetic on those."""
    for op in operands:
        if not op.is_local or op.value not in keys.cfg.defs or keys.cfg.block_of[op.value] not in root.body:
            continue
        inst = keys.cfg.defs[op.value]
        if depth > 16 or inst.opcode not in PURE or inst.opcode == "inttoptr" or \
                not _hoistable(keys, inst.operands, root, depth + 1):
            return False
    return True


def _layout(keys: Keys, entries: dict, groups: list[Group], sizes: dict[Key, int]) -> tuple[dict, int]:
    group_of = {id(m): g for g in groups for m in g.members}

    def size(key: Key) -> int:
        if key.kind == DESC:
            return next(g for g in groups if g.root.header == key.name).desc_bytes
        return sizes.get(key) or keys[key].bytes

    def align(key: Key) -> int:
        d = keys[key]
        if key.kind in (DESC, BLOB) or len(d.types) != 1:
            return 8
        return align_of(d.types[0])

    order = sorted(entries.items(), key=lambda item: (-align(item[0][0]), str(item[0][0])))
    slots: dict[tuple[Key, int], CacheSlot] = {}
    record = 0
    for (key, scope_id), scope in order:
        slot = CacheSlot(key, scope, group_of.get(scope_id) if scope is not None else None, size(key))
        slots[(key, scope_id)] = slot
        if slot.group is None:
            record = _aligned(record, align(key))
            slot.offset, record = record, record + slot.size
        else:
            slot.group.slots.append(slot)
    for g in groups:
        if g.kind == INDEXED:
            g.slots.sort(key=lambda s: (g.members.index(s.scope), -align(s.key), str(s.key)))
            for i, s in enumerate(g.slots):
                s.index = i
        else:
            offset = 0
            for s in g.slots:
                offset = _aligned(offset, align(s.key))
                s.offset, offset = offset, offset + s.size
            g.stride = _aligned(max(offset, 1), 8)
    room = RECORD_NEST_LIMIT
    for g in groups:  # small nests of constant trip counts at the top level: in the record, on the stack
        size = _static_bytes(g)
        if g.root.parent is None and size is not None and size <= room:
            record = _aligned(record, ARRAY_ALIGN)
            g.in_record, record, room = record, record + size, room - size
    return slots, _aligned(record, 8) if record else 0


def trip_value(trip, start: int, bound: int, bits: int) -> int:
    """A trip count from constant start and bound (what storage.trip_count computes at run time)."""
    first, second = (bound, start) if trip.sign == 1 else (start, bound)
    if trip.exact:
        return (first - second) % (1 << bits) + trip.offset
    diff = first - second
    if trip.stride != 1:  # as storage.trip_count: C's division, rounding towards 0
        numerator = diff + trip.slack + trip.stride - 1
        diff = abs(numerator) // trip.stride * (1 if numerator >= 0 else -1)
    return max(diff + trip.offset, 1)


def _static_bytes(group: Group) -> int | None:
    """The bytes an indexed group needs, when all its trip counts are constants."""
    if group.kind != INDEXED:
        return None
    trips = []
    for loop in group.members:
        start, bound = loop.trip.operands
        if not (start.is_constant and bound.is_constant and start.type.kind == "int"):
            return None
        bits = start.type.bits
        value = lambda o: int(o.value) if loop.trip.signed else int(o.value) % (1 << bits)
        trips.append(trip_value(loop.trip, value(start), value(bound), bits))
    offset = 0
    for slot in group.slots:
        count = 1
        for loop, t in zip(group.members, trips):
            if loop.contains(slot.scope):
                count *= t
        offset = _aligned(offset + count * element_size(slot), ARRAY_ALIGN)
    return offset


def _aligned(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def descriptor_types(group: Group):
    """The parts of a group's descriptor: its buffer, then (indexed) each member's trip count."""
    return (PTR,) + ((I64,) * len(group.members) if group.kind == INDEXED else ())


def element_size(slot: CacheSlot) -> int:
    """The bytes between consecutive elements of an indexed group's array."""
    return _aligned(slot.size, 8 if slot.size >= 8 else 1 << (slot.size - 1).bit_length())


__all__ = ["CachePlan", "Group", "CacheSlot", "make_plan", "INDEXED", "GROWABLE", "descriptor_types", "element_size"]
