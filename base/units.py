"""Quantities as a user reads them."""

from __future__ import annotations


def human_size(n: int) -> str:
    """A byte count in B, KiB, MiB or GiB, one decimal past the unit where it has one: `1 B`,
    `48 B`, `2.5 KiB`, `90.2 MiB`."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            text = f"{n / scale:.1f}"
            return f"{text[:-2] if text.endswith('.0') else text} {unit}"
    return f"{n} B"
