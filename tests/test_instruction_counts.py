"""The regression gate (bench/instructions.py): the instructions one gradient of each bench kernel
and program executes, counted by valgrind's callgrind, may not grow by more than 3% over the
baseline committed in bench/instructions.json. Counts, unlike times, are the same on every run.
The parser of callgrind's output is checked on a sample."""

from __future__ import annotations

import shutil

import pytest

from conftest import ROOT

SAMPLE = """events: Ir
ob=/usr/lib/libc.so.6
fn=(below main)
cob=/tmp/w/bench
cfn=main
calls=1 782
58 150086
ob=/tmp/w/bench
fn=rosenbrock_grad
501 10
+1 5
cob=/usr/lib/libm.so.6
cfn=exp
calls=2 0
502 700
0 8
ob=/usr/lib/libm.so.6
fn=exp
0 700
"""


@pytest.fixture
def instructions(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    import bench.instructions

    return bench.instructions


def test_own_instructions_counts_the_executables_own_code(instructions):
    """Self costs in the executable's object only; a call's cost line is the callee's."""
    assert instructions.own_instructions(SAMPLE, "bench") == 10 + 5 + 8


def test_growth_is_reported(instructions):
    rows, grown = instructions.compare({"a": 104, "b": 102, "c": 50, "d": 1}, {"a": 100, "b": 100, "c": 100})
    assert len(rows) == 4
    assert [g.split(":")[0] for g in grown] == ["a", "d"]
    assert "+4.0%" in grown[0] and "--update" in grown[0]


@pytest.mark.skipif(shutil.which("valgrind") is None,
                    reason="valgrind is not installed (.ci/run installs Debian's valgrind): the instruction counts "
                           "cannot be taken")
@pytest.mark.slow
def test_no_gradient_executes_more_instructions_than_its_baseline(instructions, tmp_path):
    baseline = instructions.load_baseline()
    now = instructions.counts(tmp_path)
    assert set(now) == set(baseline), "python -m bench.instructions --update writes the baseline"
    _, grown = instructions.compare(now, baseline)
    assert not grown, "\n".join(grown)
