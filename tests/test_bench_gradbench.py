"""GradBench's C++ programs for Enzyme (bench/gradbench): the harness's command line, its
comparison of outputs and its inputs, and, given a checkout of github.com/gradbench/gradbench
named by ADGEN_GRADBENCH_SRC (the project keeps no copy) and nlohmann's json.hpp (its folder in
ADGEN_GRADBENCH_JSON, else nlohmann/ on the usual include paths), the smallest program (hello)
built by `adgen c++` and by hand, run, and compared end to end. Untimed:
`python -m bench.gradbench GRADBENCH_SRC` measures them."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT

GRADBENCH = Path(os.environ.get("ADGEN_GRADBENCH_SRC", "/nonexistent"))
JSON = os.environ.get("ADGEN_GRADBENCH_JSON")
needs_checkout = pytest.mark.skipif(
    not (GRADBENCH / "tools" / "enzyme" / "hello.cpp").is_file(),
    reason="no GradBench checkout: set ADGEN_GRADBENCH_SRC to a clone of github.com/gradbench/gradbench")


@pytest.fixture
def harness(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    import bench.gradbench.__main__ as harness
    return harness


def test_command_line_says_what_is_missing(harness, tmp_path, capsys):
    with pytest.raises(SystemExit):
        harness.parse([str(tmp_path)])
    assert "a checkout of github.com/gradbench/gradbench is needed" in capsys.readouterr().err
    fake = tmp_path / "gb"
    for folder in ("tools/enzyme", "tools/manual", "cpp/gradbench"):
        (fake / folder).mkdir(parents=True)
    (fake / "cpp/gradbench/main.hpp").write_text("")
    with pytest.raises(SystemExit):
        harness.parse([str(fake), "--json-include", str(tmp_path / "nowhere")])
    assert "json.hpp" in capsys.readouterr().err
    (tmp_path / "inc" / "nlohmann").mkdir(parents=True)
    (tmp_path / "inc" / "nlohmann" / "json.hpp").write_text("")
    with pytest.raises(SystemExit):
        harness.parse([str(fake), "--json-include", str(tmp_path / "inc"), "--only", "hello,nosuch"])
    assert "no program nosuch" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        harness.parse([str(fake), "--json-include", str(tmp_path / "inc"), "--enzyme", str(tmp_path / "none.so")])
    assert "no such file" in capsys.readouterr().err
    _, args = harness.parse([str(fake), "--json-include", str(tmp_path / "inc"), "--only", "hello, gmm",
                             "--reps", "2", "--rounds", "4", "-o", str(tmp_path / "work")])
    assert args.only == ["hello", "gmm"] and args.reps == 2 and args.rounds == 4 and args.out == tmp_path / "work"
    assert args.json_folder == tmp_path / "inc" / "nlohmann"  # (the programs `#include "json.hpp"`)


def test_rounds_keep_the_fastest_run_and_any_failure(harness):
    Result = harness.Result
    runs = [Result("c", "adgen", True, 2.0), Result("c", "adgen", True, 1.5), Result("c", "adgen", True, 1.8)]
    kept = None
    for run in runs:
        kept = harness.best(kept, run)
    assert kept.ms == 1.5
    failed = Result("c", "adgen", False, error="signal 11")
    assert harness.best(kept, failed) is failed and harness.best(failed, runs[1]) is failed


def test_an_input_evaluated_once_is_run_in_many_processes(harness, tmp_path):
    """hello's input carries no min_runs: its one evaluation per process is taken in many
    processes, and the median of them reported; a failing process fails the case."""
    counter = tmp_path / "count"
    counter.write_text("0")
    program = tmp_path / "bin" / "adgen" / "hello"
    program.parent.mkdir(parents=True)
    program.write_text(f"""#!/bin/sh
n=$(cat {counter}); n=$((n + 1)); echo $n > {counter}
echo 2.0
echo '{{"name": "prepare", "nanoseconds": 5}}'
echo "{{\\"name\\": \\"evaluate\\", \\"nanoseconds\\": $((20 + n % 3))}}"
""")
    program.chmod(0o755)
    case = next(c for c in harness.cases() if c.program == "hello")
    result = harness.run_processes(program, case, tmp_path / "in.json", 10, 7)
    assert int(counter.read_text()) == 7 and result.ok and result.output == 2.0
    assert sorted(result.timings_ns) == result.timings_ns and len(result.timings_ns) == 7
    assert result.ms == 21 / 1e6  # (21, 22, 20, 21, 22, 20, 21: their median)
    program.write_text("#!/bin/sh\nexit 3\n")
    assert not harness.run_processes(program, case, tmp_path / "in.json", 10, 3).ok


def test_a_time_of_a_gradient_wrong_on_its_check_is_marked(harness):
    """Enzyme's ode gradient is wrong for more than one step (GradBench's check input): its time,
    and the ratio beside it, are marked in every table, with the note saying why."""
    from dataclasses import asdict
    ode = {c.size: c for c in harness.cases() if c.program == "ode"}
    records = [harness.Result(ode[size].name, tool, True, ms=ms, difference=0.0)
               for size in ("smallest", "larger") for tool, ms in (("manual", 1.0), ("adgen", 2.0), ("enzyme", 1.5))]
    records += [harness.Result(ode["check"].name, "adgen", True, difference=1e-10),
                harness.Result(ode["check"].name, "enzyme", True, difference=0.89)]
    builds = [harness.Build(tool, "ode", True, 1.0, []) for tool in harness.TOOLS]
    data = {"settings": {"cases": [c.name for c in ode.values()], "enzyme": True},
            "builds": [asdict(b) for b in builds], "records": [asdict(r) for r in records]}
    text = harness.tables(data)
    rows = [line for line in text.splitlines() if line.startswith("| ode | gradient n=")]
    timed = [row for row in rows if "s=1 |" in row or "s=10 |" in row]
    assert len(timed) == 2 and all("| 1.5 † | 1.33 † |" in row and "| 2 |" in row for row in timed), rows
    assert text.count(harness.WRONG_NOTE) == 2, text
    records[-1].difference = 1e-9  # (right on the check: nothing marked)
    data["records"] = [asdict(r) for r in records]
    assert "†" not in harness.tables(data)


def test_difference_is_relative_and_sees_shapes(harness):
    assert harness.difference({"a": [1.0, 2.0], "b": 3}, {"b": 3, "a": [1.0, 2.0]}) == 0
    assert harness.difference([1.0, 2.0 * (1 + 1e-9)], [1.0, 2.0]) == pytest.approx(1e-9, rel=1e-3)
    assert harness.difference([1.0, 1e-30], [1.0, 0.0]) == pytest.approx(1e-18)  # below 1e-12 of the largest
    assert math.isinf(harness.difference([1.0], [1.0, 2.0]))
    assert math.isinf(harness.difference({"a": 1.0}, {"b": 1.0}))
    assert harness.first_error("warning: x\nfoo.cpp:3:1: error: bad\nerror: worse") == "foo.cpp:3:1: error: bad"


def test_every_program_has_a_case_and_sizes_are_drawn_in_the_evals_order(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.gradbench import inputs

    found = inputs.cases()
    assert {c.program for c in found} == set(inputs.PROGRAMS)
    assert {c.program for c in found if c.size == "smallest"} == set(inputs.PROGRAMS)
    det8 = inputs.det(8)(Path("."))
    assert det8["ell"] == 8 and len(det8["A"]) == 64
    kmeans = inputs.kmeans(10, 1000, 8)(Path("."))
    assert len(kmeans["points"]) == 1000 and kmeans["centroids"] == kmeans["points"][-10:]
    np.random.seed(inputs.SEED)  # lse's n=5000 is drawn after its n=2500, as the eval draws them
    np.random.rand(2500)
    second = np.random.rand(5000).tolist()
    assert inputs.lse(5000)(Path("."))["x"] == second


@needs_checkout
def test_hello_built_by_adgen_agrees_with_manual(harness, tmp_path):
    if harness.json_folder(Path(JSON) if JSON else None) is None:
        pytest.skip("no nlohmann/json.hpp: set ADGEN_GRADBENCH_JSON to its folder (or a clone of nlohmann/json)")
    markdown = tmp_path / "gradbench.md"
    status = harness.main([str(GRADBENCH), *(["--json-include", JSON] if JSON else []), "--only", "hello",
                           "--reps", "2", "--min-seconds", "0", "-o", str(tmp_path / "work"), "--markdown",
                           str(markdown)])
    records = json.loads((tmp_path / "work" / "results.json").read_text())
    builds = {b["tool"]: b for b in records["builds"]}
    assert builds["manual"]["ok"], builds["manual"]["error"]
    assert builds["adgen"]["ok"], builds["adgen"]["error"]
    results = {r["tool"]: r for r in records["results"]}
    assert results["manual"]["ok"] and len(results["manual"]["timings_ns"]) == 1  # (a number: no min_runs)
    assert results["adgen"]["ok"], results["adgen"]["error"]
    assert results["adgen"]["difference"] == 0
    text = markdown.read_text()
    assert "| hello | double x=1 |" in text and "adgen builds 1 of 1, agrees on 1" in text
    assert status == 0


def test_central_differences_of_a_programs_primal(harness, tmp_path):
    """A stand-in program in GradBench's protocol (PROGRAM INPUT FUNCTION: the output, then the
    timings): its primal is the last element of (x0*x1, x1^3), whose gradient is (0, 3 x1^2)."""
    program = tmp_path / "bin" / "tool" / "cube"
    program.parent.mkdir(parents=True)
    program.write_text("#!/usr/bin/env python3\nimport json, sys\nx = json.load(open(sys.argv[1]))['x']\n"
                       "print(json.dumps([x[0] * x[1], x[1] ** 3]))\n"
                       "print(json.dumps({'name': 'evaluate', 'nanoseconds': 1}))\n")
    program.chmod(0o755)
    probe = harness.Probe("x", -1)
    got = harness.central_differences(program, {"x": [2.0, 0.5], "s": 3}, probe, tmp_path, 60)
    assert got == pytest.approx([0.0, 0.75], abs=1e-8)
    assert harness.normwise([0.0, 0.75], got) < 1e-8
    assert harness.normwise([0.75, 0.0], got) == pytest.approx(1.0, rel=1e-6)  # (off by the largest)
    assert math.isinf(harness.normwise([0.0], got))
    assert harness.Probe("x").scalar(4.0) == 4.0


def test_the_check_inputs_have_gradients_far_from_zero(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.gradbench import inputs

    checks = inputs.checks()
    assert {c.program for c in checks} == {"det", "llsq", "lse", "ode"} and all(c.probe for c in checks)
    ode = next(c for c in checks if c.program == "ode").make(Path("."))
    assert ode["s"] >= len(ode["x"]) / 2  # (the last element reached from x0 within the steps: 4 stages each)
