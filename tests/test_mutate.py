"""The bad-input fuzzer (tests/mutate.py): a fixed-seed quick run with nothing bad, its judge on
each kind of outcome, its mutations, and the bad inputs it found, each fixed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import mutate


@pytest.mark.slow
def test_quick_mutation_run():
    outcome = mutate.fuzz(40, seed=20261124, jobs=2)
    assert [f"{m.index} ({m.kind}, {m.seed.name}): {v.reason}\n{v.output}" for m, v in outcome.bad] == []
    assert outcome.ok + outcome.rejected == 40
    assert outcome.ok >= 2 and outcome.rejected >= 20  # both ways through adgen are exercised


def _judged(tmp_path: Path, status, output: str, leave: str = "") -> mutate.Verdict:
    (tmp_path / "src").mkdir()
    (tmp_path / "out").mkdir()
    source = tmp_path / "src" / "f.c"
    source.write_text("// @diff(g: (active) -> active)\ndouble f(double x)\n{\n    return x;\n}\n")
    if leave:
        (tmp_path / leave).write_text("")
    return mutate.judge(status, output, source, None, tmp_path / "out")


LOCATED = "src/f.c:4:12: error: use of undeclared identifier 'y'\n    4 |     return y;\n      |            ^\n"
VERDICTS = [
    (0, "adgen: wrote out/f.adgen.h", "", "ok", ""),
    (1, LOCATED, "", "rejected", ""),
    (1, "adgen: error: f.c and f.rs would both write f.adgen.o\n", "", "rejected", ""),
    (1, LOCATED, "out/f.adgen.h", "bad", "left files after an error: f.adgen.h"),
    (1, LOCATED, "src/f.d", "bad", "left files after an error: f.d"),
    (1, "Traceback (most recent call last):\n  File ...\nKeyError: 'x'\n", "", "bad", "a Python traceback"),
    (2, "usage: adgen build [-h] SRC.c\nadgen build: error: unrecognized arguments: -O2 (compiler flags go "
        "after `--`: adgen build f.c -- -O2)\n", "", "rejected", ""),
    (2, "something else\n", "", "bad", "exit status 2"),
    (70, "adgen: internal error: KeyError\n", "", "bad", "exit status 70"),
    (-11, "", "", "bad", "exit status -11"),
    (None, "", "", "bad", "ran past the time limit"),
    (1, "error: something failed\n", "", "bad", "exit 1 without an error located in the user's file"),
    (1, "src/f.c:40:1: error: expected '}'\n", "", "bad", "exit 1 without an error located in the user's file"),
    (1, "In file included from /tmp/adgen-x1y2/0-f.c:8:\n" + LOCATED, "", "bad", "names adgen's temporary directory"),
    (1, "out/f.adgen.c:59:5: error: cannot differentiate a call to 'h'\n" + LOCATED, "", "bad",
     "places a diagnostic in a file adgen generated"),
    (1, "lowering.c.j2:3: error: x\n" + LOCATED, "", "bad", "names adgen's templates"),
]


def test_the_judge(tmp_path):
    for n, (status, output, leave, outcome, reason) in enumerate(VERDICTS):
        (tmp_path / str(n)).mkdir()
        v = _judged(tmp_path / str(n), status, output, leave)
        assert (v.outcome, v.reason if outcome == "bad" else "") == (outcome, reason), (n, output)


def test_the_judge_on_setups(tmp_path):
    """What a setup planted is not left behind by adgen; a symlink's target written through is bad."""
    m = mutate.Mutation(0, mutate.Seed("f.c", "double f(double x) { return x; }\n"), (), b"", "build",
                        mutate.Setup("output_symlink", plant=((mutate.VICTIM, "file"), ("out/f.adgen.h", "link:../victim.txt"))))
    for written, outcome in ((False, "rejected"), (True, "bad")):
        work = tmp_path / str(written)
        (work / "src").mkdir(parents=True)
        (work / "out").mkdir()
        source = work / "src" / "f.c"
        source.write_text("double f(double x) { return x; }\n")
        planted = mutate.plant(m.setup, work)
        assert (work / "out" / "f.adgen.h").is_symlink() and len(planted) == 2
        if written:
            (work / "out" / "f.adgen.h").write_text("through the link")
        v = mutate.judge(1, "adgen: error: x\n", source, None, work / "out", planted)
        assert v.outcome == outcome, v
        assert not written or v.reason == "wrote through a symlink into another file"


@pytest.mark.slow
def test_every_setup_applies():
    """Each mutation of the command line or the file system is drawn, and changes the command or
    plants something."""
    sources = mutate.seeds("c")
    drawn = [mutate.mutation(3, i, sources) for i in range(400)]
    setups = [m for m in drawn if m.setup]
    assert 60 <= len(setups) <= 140
    kinds = {m.setup.kind for m in setups}
    assert len(kinds) == 10, kinds
    for m in setups:
        assert m.setup.args or m.setup.plant or m.setup.name or m.setup.out != "out", m.setup


@pytest.mark.slow
def test_every_mutation_applies_to_an_annotated_source_or_enzyme_code():
    annotated = next(s for s in mutate.seeds("c") if s.name == "rosenbrock.c" and "examples" in str(s.home))
    enzyme = next(s for s in mutate.seeds("cc") if s.name == "enzyme.c")
    for kind, mutator in mutate.MUTATORS.items():
        seed = enzyme if kind == "enzyme_call" else annotated
        changed = [mutator(random.Random(k), seed.text, False) for k in range(5)]
        assert any(c is not None and c != seed.text and c != seed.text.encode() for c in changed), kind


@pytest.mark.slow
def test_the_seeds_include_rust_where_rustc_is():
    sources = mutate.seeds()
    assert sum(not s.rust for s in sources) >= 50
    assert any(s.rust for s in sources) == mutate.rust_available()


# ---------------------------------------------------------------------------------------------- found by it

def test_a_source_that_is_not_utf8(tmp_path, adgen):
    """A Latin-1 comment builds; a stray byte in code is an error at its line and column (both
    were an internal error: libclang's Python binding cannot return such text)."""
    src = tmp_path / "latin.c"
    src.write_bytes(b"// @diff(g: (active) -> active)\ndouble f(double x)\n{\n    return x * x; /* caf\xe9 */\n}\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 0, result.err
    src.write_bytes(b"// @diff(g: (active) -> active)\ndouble f(double x)\n{\n    \xcf return x * x;\n}\n")
    result = adgen("generate", src, "-o", tmp_path / "out2")
    assert result.status == 1 and "latin.c:4:5: error: " in result.err, result.err
    assert not (tmp_path / "out2").exists() or not any((tmp_path / "out2").iterdir())
