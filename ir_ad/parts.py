"""The plan for optimizing and compiling the derivative module in parts at the same time, one
clang process per core (the text cut by ir/split.py, the objects joined by cc1.py): made first,
printed by `-v`.

A good cut gives parts of about equal size (the build waits for the largest) and puts no call
that LLVM would inline between parts. So small functions that are only called (adgen's runtime:
the undo log's pushes, the arena's allocation) are copied into every part, and every other
function belongs to one part, with the functions it alone reaches. The units placed start as
the functions each exported function reaches: each derivative whole, its calls within one part.
While one unit is larger than its share it is cut where its calls fan out, below the chain of
single calls from its top (the exported function, then its kernel): a kernel calls its forward
sweep and its reverse sweep once each, so they part at no cost, the kernel going with the first.
Further down, a callee parts from its caller only where it has several call sites (and is not
small): LLVM inlines a function called once, whatever its size, and only small ones otherwise.
A function whose address is taken (an OpenMP region's, passed to the runtime) parts from
wherever it is named: LLVM keeps it out of line, and inlines into it what it alone calls.
Units are then placed largest first, each in the part with least so far; while a part is over
its share, the largest unit not yet cut is cut, and the units placed again."""

from __future__ import annotations

from dataclasses import dataclass

from adgen.ir_ad.ir.split import Piece

PART = 5000  # instructions (about: split.Piece.cost) of a part: a module of fewer is not cut
MAX_PARTS = 8
COPY_LIMIT = 200  # instructions: a function only called, this small or smaller, is copied into every part
SLACK = 1.05  # a unit up to this many times its share is not cut
# What a copy inlined at each of its call sites adds to the caller's cost, per instruction of the
# copy: fitted to the times of llm.c's -fopenmp derivative in eight parts (clang at -O3, each
# alone), whose forward sweeps push to the undo log at many sites (the error of the times
# predicted from the parts' costs went from 38 ms to 22 ms, of 150-480 ms). Its two parts then
# took 1.06 and 1.07 s (0.93 and 1.2 s without); bench/kernels.c's 0.90 and 0.99 (0.84, 1.07).
INLINED = 0.45


@dataclass
class Plan:
    parts: list[list[str]]  # the functions each part defines, by IR name
    copied: set[str]  # the functions every part defines
    sizes: list[int]  # each part's cost (split.Piece.cost, and INLINED of the copies it calls)

    def owner(self) -> dict[str, int]:
        return {name: k for k, names in enumerate(self.parts) for name in names}

    def describe(self) -> str:
        return f"in {len(self.parts)} parts of about {', '.join(f'{s:,}' for s in self.sizes)} instructions"


def plan(pieces: list[Piece], count: int | None = None) -> Plan | None:
    """How to cut a module (its live pieces: split.live) into parts, `count` or one per `PART`
    instructions (a power of two, at most MAX_PARTS): the module alone decides, not the machine,
    so that a build writes the same object wherever it runs; None where it is compiled whole (a
    small module, one unit that cannot be cut)."""
    functions = {p.name: p for p in pieces if p.kind == "define"}
    total = sum(p.cost for p in functions.values())
    wanted = count or _power_of_two(min(MAX_PARTS, int(total // PART)))
    if wanted < 2:
        return None
    addressed = {name for p in pieces for name in p.addressed}
    copied = _copied(functions, addressed)
    heavy = {name: p for name, p in functions.items() if name not in copied}
    reach = {name: _reached(p, heavy, functions, copied) for name, p in heavy.items()}
    sites: dict[str, int] = {}
    for p in pieces:
        for name, n in p.called.items():
            sites[name] = sites.get(name, 0) + n
    units = _units(heavy, reach)
    weights = {name: p.cost + INLINED * sum(functions[c].cost * n for c, n in p.called.items() if c in copied)
               for name, p in heavy.items()}
    share = sum(weights.values()) / wanted
    for _ in range(len(heavy)):  # (each cut makes its unit's pieces smaller, or marks it uncut)
        parts, sizes = _placed(units, weights, wanted)
        cuttable = [u for u in units if u.top is not None]
        if max(sizes) <= share * SLACK or not cuttable:
            break
        oversized = [u for u in cuttable if u.size(weights) > share * SLACK]
        largest = max(oversized or cuttable, key=lambda u: u.size(weights))  # (else placing finer may balance)
        cut = largest.cut(reach, sites, addressed)
        largest.top = None  # cut once: its pieces are the units now, or it cannot be cut
        if cut is not None:
            units.remove(largest)
            units += cut
    if len(units) < 2:
        return None
    parts, sizes = _placed(units, weights, wanted)
    return Plan(parts, copied, sizes)


def _placed(units: list["_Unit"], weights: dict[str, float], wanted: int) -> tuple[list[list[str]], list[int]]:
    """Units placed largest first, each in the part with least so far: the parts' functions and
    sizes."""
    parts: list[list[str]] = [[] for _ in range(min(wanted, len(units)))]
    sizes = [0] * len(parts)
    for unit in sorted(units, key=lambda u: -u.size(weights)):
        k = sizes.index(min(sizes))
        parts[k] += unit.members
        sizes[k] += unit.size(weights)
    return parts, sizes


def _power_of_two(n: int) -> int:
    """At most `n`, a power of two: cores come in powers of two, and three parts on two cores
    take as long as four (llm.c's derivative with -fopenmp: 1.57 s in three parts, 1.2 s in two)."""
    return 1 << (n.bit_length() - 1) if n > 0 else 0


def _copied(functions: dict[str, Piece], addressed: set[str]) -> set[str]:
    """Internal functions small enough to copy, whose address nothing takes (`addressed`): a
    copy in each part is then the same function to every caller."""
    copied = {name for name, p in functions.items() if p.internal and name not in addressed and p.size <= COPY_LIMIT}
    while True:  # and that call nothing but each other and declared functions (a copy is a leaf of the cut)
        calling_out = {name for name in copied if any(r in functions and r not in copied
                                                      for r in functions[name].references)}
        if not calling_out:
            return copied
        copied -= calling_out


def _reached(p: Piece, heavy: dict[str, Piece], functions: dict[str, Piece], copied: set[str]) -> list[str]:
    """The heavy functions a function names, directly or through copied ones, in the order it
    first names them."""
    out, seen, work = [], {p.name}, [p]
    while work:
        for name in work.pop(0).references:
            if name in seen:
                continue
            seen.add(name)
            if name in heavy:
                out.append(name)
            elif name in copied:
                work.append(functions[name])
    return out


@dataclass
class _Unit:
    members: list[str]
    top: str | None  # where a cut starts: the unit's single root, None where it has several
    first: bool = False  # a whole derivative: its kernel's callees may part

    def size(self, weights: dict[str, float]) -> int:
        return round(sum(weights[m] for m in self.members))

    def cut(self, reach: dict[str, list[str]], sites: dict[str, int], addressed: set[str]) -> list["_Unit"] | None:
        """The unit cut below the chain of single calls from its top into what each callee of
        the first function with several reaches (merged where they share functions), the chain
        with the first; below a whole derivative's kernel, only callees called from several
        sites part from it. Functions whose address is taken part too, with what they reach
        (not through another such): LLVM keeps them out of line. None where it cannot be cut."""
        inside = set(self.members)
        loose = {m for m in self.members if m in addressed and m != self.top}
        within = {name: [c for c in reach[name] if c in inside and c not in loose] for name in self.members}
        chain, at = [self.top], self.top
        while len(within[at]) == 1 and within[at][0] not in chain and sites.get(within[at][0], 0) <= 1:
            at = within[at][0]
            chain.append(at)
        callees = [c for c in within[at] if c not in chain]
        if any(set(chain) & _closure(c, within) for c in callees):
            return None  # a callee calling back up the chain
        parting = [c for c in callees if self.first or sites.get(c, 0) > 1]
        parting += [m for m in self.members if m in loose and self.top not in _closure(m, within)]
        going = [(_closure(c, within), [c]) for c in parting]
        staying = inside.difference(*(members for members, _ in going))  # the chain, and what it keeps
        groups = _merged([(staying, [self.top])] + going)
        if len(groups) < 2:
            return None
        units = _in_order(groups, self.members)
        if self.first and callees:  # the chain goes with the first callee (a kernel with its forward sweep)
            with_chain = next(u for u in units if self.top in u.members)
            first = next(u for u in units if callees[0] in u.members)
            if first is not with_chain:
                units.remove(with_chain)
                first.members = [m for m in self.members if m in set(first.members) | set(with_chain.members)]
        return units


def _closure(name: str, reach: dict[str, list[str]]) -> set[str]:
    out, work = set(), [name]
    while work:
        n = work.pop()
        if n not in out:
            out.add(n)
            work += reach[n]
    return out


def _units(heavy: dict[str, Piece], reach: dict[str, list[str]]) -> list[_Unit]:
    """What each root (a heavy function no other names) reaches, merged where they share a
    function; a function no root reaches goes with the first."""
    named = {n for targets in reach.values() for n in targets}
    roots = [name for name in heavy if name not in named] or list(heavy)[:1]
    units = _merged([(_closure(root, reach), [root]) for root in roots])
    left = set(heavy) - {m for members, _ in units for m in members}
    if left:
        units[0][0].update(left)
    made = _in_order(units, list(heavy))
    for unit in made:
        unit.first = True
    return made


def _merged(groups: list[tuple[set[str], list[str]]]) -> list[tuple[set[str], list[str]]]:
    """Groups of functions (members, the roots they were reached from), merged where they share
    a function, in order of their first root."""
    out: list[tuple[set[str], list[str]]] = []
    for members, roots in groups:
        joined = [g for g in out if g[0] & members]
        for g in joined:
            out.remove(g)
        members = members.union(*(g[0] for g in joined))
        roots = [r for g in joined for r in g[1]] + roots
        out.append((members, roots))
    return out


def _in_order(groups: list[tuple[set[str], list[str]]], order: list[str]) -> list[_Unit]:
    """Units of the groups, their members in the module's order; a unit's top is its root where it
    has one, else it is not cut further."""
    at = {name: i for i, name in enumerate(order)}
    return [_Unit(sorted(members, key=at.get), roots[0] if len(roots) == 1 else None) for members, roots in groups]
