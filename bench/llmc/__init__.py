"""llm.c's GPT-2 as its author wrote it (github.com/karpathy/llm.c, `train_gpt2.c`), differentiated
by adgen, beside llm.c's own hand-written backward pass and Enzyme: `python -m bench.llmc LLMC_SRC`
(see __main__.py). The project keeps no copy of llm.c: LLMC_SRC is a checkout of it, and
llmc_loss.c includes its train_gpt2.c unchanged.

- llmc_loss.c: the loss as a function of the flat parameter array, calling llm.c's gpt2_forward,
  which allocates the activations itself; annotated for adgen.
- llmc_enzyme.c: the same loss through Enzyme's `__enzyme_autodiff`.
- llmc_bench.c: what bench/programs/harness.c runs (primal, hand-written, adgen, Enzyme)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Config:
    name: str
    sizes: tuple[int, int, int, int, int, int]  # B T C L NH V, as llmc_bench.c reads them

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in zip(("B", "T", "C", "L", "NH", "V"), self.sizes))


CONFIGS = (Config("small", (4, 64, 128, 4, 4, 512)), Config("large", (4, 128, 256, 6, 8, 512)))
TINY = Config("tiny", (2, 8, 16, 1, 2, 32))  # for the test: builds and runs in seconds
