"""Quantities as a user reads them."""

from __future__ import annotations

BINARY = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))  # (largest first)


def human_size(n: int) -> str:
    """A byte count in B, KiB, MiB or GiB, one decimal past the unit where it has one: `1 B`,
    `48 B`, `2.5 KiB`, `90.2 MiB`."""
    for unit, scale in BINARY[1:]:
        if n >= scale:
            text = f"{n / scale:.1f}"
            return f"{text[:-2] if text.endswith('.0') else text} {unit}"
    return f"{n} B"


def exact_size(n: int, space: str = " ") -> str:
    """A byte count, exactly, in the largest binary unit that divides it, as a budget is written:
    `64 MiB`, `1000 B` (`space=""`: `64MiB`, as an annotation writes it)."""
    for unit, scale in BINARY:
        if n >= scale and n % scale == 0:
            return f"{n // scale}{space}{unit}"
    return f"{n}{space}B"
