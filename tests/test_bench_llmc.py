"""llm.c's GPT-2 as written (bench/llmc): at a tiny configuration, adgen's gradient of
train_gpt2.c's loss, which allocates its activations itself, agrees with llm.c's own
gpt2_backward, without OpenMP and on teams of 1 and 2 threads. Needs a checkout of
github.com/karpathy/llm.c, named by LLMC_SRC (the project keeps no copy); untimed:
`python -m bench.llmc LLMC_SRC` measures it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adgen.base.toolchain import openmp_library
from conftest import ROOT

LLMC = Path(os.environ.get("LLMC_SRC", "/nonexistent"))
pytestmark = pytest.mark.skipif(not (LLMC / "train_gpt2.c").is_file(),
                                reason="no llm.c checkout: set LLMC_SRC to a clone of github.com/karpathy/llm.c")


@pytest.mark.parametrize("openmp", [False, True], ids=["serial", "openmp"])
def test_gradient_of_llmc_as_written_agrees_with_its_backward_pass(tmp_path, monkeypatch, openmp):
    if openmp and openmp_library() is None:
        pytest.skip("no OpenMP runtime (libomp): install libomp-dev")
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.llmc import TINY
    from bench.llmc.__main__ import build, measure
    from bench.programs.measure import relative_error

    built = build(LLMC, tmp_path / "build", None, "clang-19", openmp, rounds=1)
    for threads in (1, 2) if openmp else (None,):
        runs = measure(built, TINY, ("primal", "hand", "adgen"), 1, tmp_path, threads)
        assert runs["adgen"].loss == pytest.approx(runs["primal"].loss, rel=1e-5)
        assert relative_error(runs["adgen"].gradient, runs["hand"].gradient) < 1e-5
