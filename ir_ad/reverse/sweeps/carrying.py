"""The slots of the values the reverse sweep takes from its previous iteration (plan/carried.py
decides which): per carry, `cur` and `prev` (the phi's value this reverse iteration and the one
before) and `has` and `valid` (whether each was made), as the sweep writes them."""

from __future__ import annotations

from adgen.ir_ad.ir import I1, PTR
from adgen.ir_ad.ir.builder import Builder, V
from adgen.ir_ad.reverse.plan.carried import Carry


def slot(carry: Carry, what: str) -> V:
    return V(PTR, f"%\"carry'{carry.number}.{what}\"")


def slots(carry: Carry) -> list[str]:
    """The entry's lines making the slots, none made."""
    return [f"  {slot(carry, w).ref} = alloca {t}" for w, t in (("cur", carry.type.text), ("prev", carry.type.text),
                                                                ("has", "i1"), ("valid", "i1"))] + entered(carry)


def entered(carry: Carry) -> list[str]:
    """Where the sweep enters the loop: nothing made yet."""
    return [f"  store i1 false, ptr {slot(carry, w).ref}" for w in ("has", "valid")]


def back(carry: Carry) -> list[str]:
    """On the way back to the previous iteration (a term's lines): this one's phi becomes the
    one before's."""
    t, k = carry.type.text, carry.number
    return [f"%\"carry'{k}.c\" = load {t}, ptr {slot(carry, 'cur').ref}",
            f"store {t} %\"carry'{k}.c\", ptr {slot(carry, 'prev').ref}",
            f"%\"carry'{k}.h\" = load i1, ptr {slot(carry, 'has').ref}",
            f"store i1 %\"carry'{k}.h\", ptr {slot(carry, 'valid').ref}",
            f"store i1 false, ptr {slot(carry, 'has').ref}"]


def made(b: Builder, carry: Carry, phi: V) -> None:
    """The phi made at this reverse iteration, kept for the one after."""
    b.store(phi, slot(carry, "cur"))
    b.store(V(I1, "true"), slot(carry, "has"))


def taken(b: Builder, carry: Carry, again: V) -> V:
    """The latch value: the phi the reverse iteration before made, where it made one, else
    `again` (computed again)."""
    return b.select(b.load(I1, slot(carry, "valid")), b.load(carry.type, slot(carry, "prev")), again)
