"""The benchmark programs (bench/programs: a small GPT-2 and an MLP) at tiny sizes: adgen's
gradient, and Enzyme's where its plugin is built, agree with the hand-written backward pass.
Untimed; `python -m bench.programs` measures them at full size."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from adgen.base.toolchain import openmp_library
from conftest import ROOT

pytestmark = pytest.mark.slow  # (the programs built and run once, for every test: 10 s and more)

ENZYME_PLUGIN = Path.home() / ".cache" / "enzyme" / "ClangEnzyme-19.so"
HAS_ENZYME = ENZYME_PLUGIN.is_file() and shutil.which("clang-19") is not None


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Each program built (with Enzyme where it is there) and run once per way at its tiny sizes."""
    patch = pytest.MonkeyPatch()
    patch.syspath_prepend(str(ROOT))
    from bench.programs import PROGRAMS
    from bench.programs.build import build
    from bench.programs.measure import run

    results = {}
    for program in PROGRAMS:
        work = tmp_path_factory.mktemp(program.name)
        built = build(program, work, ENZYME_PLUGIN if HAS_ENZYME else None)
        modes = ("primal", "hand", "adgen") + (("enzyme",) if HAS_ENZYME else ())
        results[program.name] = {mode: run(built.executable, mode, 1, program.tiny, work) for mode in modes}
    patch.undo()
    return results


def _relative_error(gradient: np.ndarray, reference: np.ndarray) -> float:
    return float(np.linalg.norm(gradient.astype(np.float64) - reference) / np.linalg.norm(reference))


@pytest.mark.parametrize("name", ["gpt2", "mlp"])
def test_adgen_gradient_is_the_hand_written_one(programs, name):
    runs = programs[name]
    hand = runs["hand"].gradient.astype(np.float64)
    assert math.isfinite(runs["primal"].loss) and runs["primal"].loss > 0
    assert runs["adgen"].loss == pytest.approx(runs["primal"].loss, rel=1e-6)  # the loss after its gradient
    assert np.count_nonzero(hand) > hand.size // 2  # most parameters have a gradient
    assert _relative_error(runs["adgen"].gradient, hand) < 1e-4


@pytest.mark.skipif(not HAS_ENZYME, reason=f"Enzyme's plugin ({ENZYME_PLUGIN}) or clang-19 is not installed")
@pytest.mark.parametrize("name", ["gpt2", "mlp"])
def test_enzyme_gradient_is_the_hand_written_one(programs, name):
    runs = programs[name]
    assert _relative_error(runs["enzyme"].gradient, runs["hand"].gradient.astype(np.float64)) < 1e-4


@pytest.mark.skipif(openmp_library() is None,
                    reason="no OpenMP runtime (libomp) to run parallel code: install libomp-dev (.ci/run does)")
def test_gpt2_built_with_openmp_gives_the_hand_written_gradient_on_two_threads(tmp_path):
    """gpt2.c's parallel loops (-fopenmp): adgen's gradient, on one thread and on two, is the
    hand-written backward pass's, whose matmul backward runs on two."""
    patch = pytest.MonkeyPatch()
    patch.syspath_prepend(str(ROOT))
    from bench.programs import PROGRAMS
    from bench.programs.build import build
    from bench.programs.measure import run

    program = next(p for p in PROGRAMS if p.name == "gpt2")
    built = build(program, tmp_path, openmp=True)
    hand = run(built.executable, "hand", 1, program.tiny, tmp_path, threads=2).gradient.astype(np.float64)
    for threads in (1, 2):
        got = run(built.executable, "adgen", 1, program.tiny, tmp_path, threads=threads)
        assert _relative_error(got.gradient, hand) < 1e-4
    patch.undo()
