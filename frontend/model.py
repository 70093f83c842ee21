"""The plain records the frontend hands on: modes, activities (as one table of rules), and a
checked `Derivation` — one derived function to generate."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable

from adgen.base.units import exact_size
from adgen.frontend.annotations import Entry
from adgen.frontend.ctype import CType
from adgen.frontend.prototypes import Prototype


class Mode(Enum):
    FORWARD = "forward"
    REVERSE = "reverse"
    SPLIT = "split"  # reverse mode as two functions with a tape between them

    @property
    def family(self) -> "Mode":
        """Which activities it takes: split mode is reverse mode's."""
        return Mode.REVERSE if self is Mode.SPLIT else self


@dataclass(frozen=True)
class TypeRule:
    """Which C types an activity accepts, and how to say so in an error."""

    accepts: Callable[[CType], bool]
    wants: str


ANY = TypeRule(lambda t: True, "any type")
FLOATING = TypeRule(lambda t: t.holds_floating, "a float or double, or a struct holding them")
FLOATING_POINTER = TypeRule(
    lambda t: t.is_pointer and t.points_to_floating,
    "a pointer to floating-point data (float, double, or structs or arrays holding them)")
FLOATING_OR_POINTER = TypeRule(
    lambda t: t.holds_floating or (t.is_pointer and t.points_to_floating),
    "a float or double, a struct holding them, or a pointer to floating-point data")
SCALAR_OR_POINTER = TypeRule(
    lambda t: t.is_floating or (t.is_pointer and t.points_to_floating),
    "a float or double, or a pointer to floating-point data")


_REVERSE = frozenset({Mode.REVERSE, Mode.SPLIT})


@dataclass(frozen=True)
class ActivityRule:
    word: str
    modes: frozenset[Mode]
    param: TypeRule | None  # None: not allowed on a parameter
    returns: TypeRule | None  # None: not allowed as the return activity


class Activity(Enum):
    CONST = ActivityRule("const", frozenset(Mode), ANY, ANY)
    ACTIVE = ActivityRule("active", _REVERSE, FLOATING, FLOATING)
    ACTIVEONLY = ActivityRule("activeonly", _REVERSE, None, FLOATING)
    DUP = ActivityRule("dup", _REVERSE, FLOATING_POINTER, None)
    DUPONLY = ActivityRule("duponly", _REVERSE, FLOATING_POINTER, None)
    DUPV = ActivityRule("dupv", _REVERSE, FLOATING_POINTER, None)
    DUAL = ActivityRule("dual", frozenset({Mode.FORWARD}), FLOATING_OR_POINTER, FLOATING)
    DUALONLY = ActivityRule("dualonly", frozenset({Mode.FORWARD}), FLOATING_OR_POINTER, FLOATING)
    DUALV = ActivityRule("dualv", frozenset({Mode.FORWARD}), SCALAR_OR_POINTER, None)

    @property
    def word(self) -> str:
        return self.value.word


# Words are case-insensitive; the Rust `#[autodiff]` spellings are aliases.
ACTIVITY_WORDS: dict[str, Activity] = {a.word: a for a in Activity} | {
    "duplicated": Activity.DUP,
    "duplicatedonly": Activity.DUPONLY,
}
MODE_WORDS: dict[str, Mode] = {m.value: m for m in Mode}
MAX_WIDTH = 64


@dataclass(frozen=True)
class Derivation:
    """One checked entry: derive `name` from `primal` in `mode` at `width`."""

    name: str
    primal: Prototype
    mode: Mode
    width: int
    activities: tuple[Activity, ...]
    returns: Activity | None
    entry: Entry
    inner: "Derivation | None" = None  # `of NAME`: the derivation whose derived function `primal` is
    budget: int | None = None  # `within SIZE`, in bytes: reverse mode checkpoints loops to keep within it
    sizes: tuple[tuple[int, int | str, int], ...] = ()  # with a budget, `@size(p=n)`: (pointer parameter's
    # index, its length: a number or an integer parameter's index as "#k", the bytes of an element)
    declared: str = ""  # C++: the name it is declared by where overloads share it (`name` is then adgen's own)
    shadows: str = ""  # Rust: the prefix of derivatives' names where `d_` would clash (`prefix`)

    @property
    def modes(self) -> set[Mode]:
        """The modes (forward, reverse) its derivatives are taken in: its own and its inner ones'."""
        return {self.mode.family} | (self.inner.modes if self.inner is not None else set())

    @property
    def depth(self) -> int:
        """1 for a derivative of a C function, 2 for a derivative of one of those, and so on."""
        return 1 if self.inner is None else self.inner.depth + 1

    @property
    def prefix(self) -> str:
        """What names the derivatives in the signature (specs/abi.md): `d_x`, then `d2_x`..."""
        return self.shadows or ("d_" if self.depth == 1 else f"d{self.depth}_")

    def describe(self) -> str:
        acts = ", ".join(a.word for a in self.activities)
        ret = f" -> {self.returns.word}" if self.returns else ""
        of = f" of {self.inner.name}" if self.inner else ""
        within = f" within {exact_size(self.budget, space='')}" if self.budget else ""
        return f"{self.mode.value}[{self.width}]{of} ({acts}){ret}{within}"
