"""What a forward derivative function is specialized for (its pattern), and what it is."""

from __future__ import annotations

from dataclasses import dataclass

from adgen.ir_ad.ir import Type


@dataclass(frozen=True)
class Pattern:
    """What a derivative function is specialized for."""

    function: str  # "@f"
    active: tuple[bool, ...]  # which arguments carry derivatives
    width: int
    kind: str  # LANES or INTERLEAVED
    runtime: bool = False  # pointers without shadows are their own where one is needed, checked at each access
    # (runtime activity, shadows.py): its whole derivation is (its callees' patterns too)


@dataclass
class Derived:
    name: str  # "@..." of the derivative function
    pattern: Pattern
    returns_shadow: bool
    ret_type: Type  # the derivative function's return type: the primal's, or { primal, tangent parts... }
