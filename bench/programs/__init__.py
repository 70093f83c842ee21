"""Programs of a real program's size, each a training loss whose authors would write the backward
pass by hand: gpt2.c (a small GPT-2) and mlp.c (a three-layer perceptron), each with a hand-written
backward pass beside the loss, measured by `python -m bench.programs` (see __main__.py).

A program is its C file NAME.c (the loss, annotated for adgen, and NAME_backward), NAME_bench.c
(its calls for harness.c) and NAME_enzyme.c (the loss through Enzyme's __enzyme_autodiff)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Program:
    name: str
    size_names: tuple[str, ...]  # the sizes NAME_bench.c reads, in order
    full: tuple[int, ...]
    quick: tuple[int, ...]
    tiny: tuple[int, ...]  # for the test: builds and runs in seconds

    def source(self, part: str = "") -> Path:
        return HERE / f"{self.name}{part}.c"

    def describe(self, sizes: tuple[int, ...]) -> str:
        return " ".join(f"{name}={value}" for name, value in zip(self.size_names, sizes))


PROGRAMS = (
    Program("gpt2", ("B", "T", "C", "L", "NH", "V"), full=(4, 64, 128, 4, 4, 512), quick=(2, 32, 64, 2, 4, 256),
            tiny=(1, 8, 16, 1, 4, 32)),
    Program("mlp", ("B", "D", "H", "K"), full=(64, 256, 256, 10), quick=(32, 128, 128, 10), tiny=(8, 16, 16, 4)),
)
