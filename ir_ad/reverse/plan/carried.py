"""Values the reverse sweep takes from its previous iteration instead of computing them again.

A loop's header phi P holds at iteration k + 1 what its latch value V was at iteration k. The
reverse sweep runs iteration k + 1 before iteration k, so where it needs both P and V it has,
at iteration k, V's value already: the P it made one reverse iteration earlier. Rosenbrock's
`x[i + 1] - x[i] * x[i]` is such a loop once the optimizer carries `x[i + 1]` over as the next
iteration's `x[i]` (load PRE): the reverse sweep read x twice per iteration, and now reads it
once (one vector load and a shuffle where it vectorizes, as Enzyme's gradient does).

The sweep (sweeps/carrying.py writes it) keeps, per pair, the P of the iteration in a slot
(`cur`, with `has` saying it was made), moves it to `prev` (and `has` to `valid`) on the way
back to the previous iteration, clears both where the sweep enters the loop, and makes V as
`valid ? prev : V computed again` (computed again on the first reverse iteration, or where the
iteration before did not need P). The optimizer turns the slots into phis and peels the first
iteration, after which V is the carried value. No memory argument is involved: P(k + 1) and
V(k) are the same SSA value."""

from __future__ import annotations

from dataclasses import dataclass

from adgen.ir_ad.analysis.loops import Loop
from adgen.ir_ad.ir import Type
from adgen.ir_ad.reverse.plan.keys import VALUE, Key


@dataclass(frozen=True)
class Carry:
    """V's value at a reverse iteration, from the header phi P made in the one before."""

    loop: Loop
    phi: Key  # P
    latch: Key  # V
    type: Type
    number: int  # names its slots


def carried(d, sites: list) -> dict[Key, Carry]:
    """The carries worth making, by V's key: for each loop the reverse sweep counts down (one
    way in, one latch), each header phi whose latch value is computed in the loop itself, where
    one of the sweep's `sites` in the loop needs the phi. V itself may be needed only to compute
    another value again: where it is not needed at all, what the sweep writes for it is dead and
    the optimizer drops it."""
    wanted: dict[Key, list] = {}
    for site in sites:
        for key in site.wants:
            wanted.setdefault(key, []).append(site)
    found: dict[Key, Carry] = {}
    blocks = {b.label: b for b in d.fn.blocks}
    for loop in d.loops.loops:
        if len(loop.entries) != 1 or len(loop.latches) != 1:
            continue
        for phi in blocks[loop.header].instructions:
            if phi.opcode != "phi":
                break
            latch = next((v for v, frm in phi.incoming if frm == loop.latches[0]), None)
            if latch is None or not latch.is_local or latch.value == phi.result:
                continue
            p, v = d.keys.value(phi.result), d.keys.value(latch)
            if p is None or v is None or v.kind != VALUE or v in found or \
                    d.loops.loop_of.get(d.cfg.block_of.get(latch.value)) is not loop:
                continue
            if _inside(loop, wanted.get(p, ())):
                found[v] = Carry(loop, p, v, phi.type, len(found))
    return found


def _inside(loop: Loop, sites: list) -> bool:
    return any(s.loop is not None and loop.contains(s.loop) for s in sites)
