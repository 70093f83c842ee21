"""The performance page (`python -m bench --report DIR`, bench/report.py) from a small synthetic
record set, without running a benchmark or a compiler: its header states the machine, the
commit and the date, each section has its tables and figures, the figures are SVG files beside
index.md, and writing the page again gives the same bytes."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT

pytest.importorskip("matplotlib", reason="matplotlib is not installed (the bench extra: pip install '.[bench]')")

HERE = {"machine": "Test CPU @ 3.0GHz, 4 cores", "os": "Test Linux 1, Linux 6.0 x86_64", "commit": "abc1234",
        "date": "2025-01-02"}


def _kernel(kernel, mode, primal, adgen, enzyme=None, hand=None, adgen_bytes=None, enzyme_bytes=None, scalar=None):
    record = dict(kernel=kernel, mode=mode, primal_s=primal, adgen_s=adgen, hand_s=hand, enzyme_s=enzyme,
                  difference=0.0, enzyme_difference=0.0 if enzyme else None)
    if mode == "reverse":
        record.update(adgen_bytes=adgen_bytes, enzyme_bytes=enzyme_bytes)
    else:
        record["speedup_vs_scalar"] = scalar / adgen
    return record


def _run(mode, seconds, peak_mb, error=None, **where):
    return dict(where, mode=mode, loss=2.5, median_s=seconds, min_s=seconds * 0.9, peak_bytes=int(peak_mb * 1e6),
                relative_error=error)


def synthetic() -> list[dict]:
    kernels = [_kernel("rosenbrock", "reverse", 1e-3, 1.3e-3, 1.4e-3, 1.2e-3, 0, 0),
               _kernel("gmm_objective/d10k25", "reverse", 1e-3, 2.9e-3, 10e-3, None, 10_000, 17_430_000),
               _kernel("lstm", "reverse", 0.75e-3, 1.7e-3, 2.4e-3, 1.4e-3, 0, 10_010_000),
               _kernel("rosenbrock", "forward8", 1e-3, 2.4e-3, 2.2e-3, scalar=4.6e-3),
               _kernel("gmm_objective/d10k25", "forward8", 1e-3, 5.8e-3, 6.8e-3, scalar=15.9e-3),
               _kernel("lstm", "forward8", 0.75e-3, 4.6e-3, 5.6e-3, scalar=18.8e-3),
               _kernel("rosenbrock", "hvp", 1e-3, 1.5e-3, 1.7e-3, scalar=1.3e-3)]
    gpt2 = dict(program="gpt2", sizes={"B": 4, "T": 64, "C": 128, "L": 4, "NH": 4, "V": 512}, threads=None)
    mlp = dict(program="mlp", sizes={"B": 64, "D": 256, "H": 256, "K": 10}, threads=None)
    programs = [_run("primal", 0.0368, 18.4, **gpt2), _run("hand", 0.0775, 34.9, **gpt2),
                _run("adgen", 0.105, 44.9, 8.3e-7, **gpt2), _run("enzyme", 0.31, 1097.4, 8.4e-7, **gpt2),
                _run("primal", 0.0059, 2.9, **mlp), _run("hand", 0.0067, 3.8, **mlp),
                _run("adgen", 0.0042, 3.8, 4.1e-7, **mlp), _run("enzyme", 0.0214, 55.2, 4.1e-7, **mlp)]
    seconds = {"clang": 0.77, "adgen": 1.12, "clang-19": 0.44, "clang-19 + Enzyme": 0.98}
    builds = [dict(program=p, seconds=seconds, adgen_stages=[["differentiate", 0.18], ["compile", 0.53]], rounds=5)
              for p in ("gpt2", "mlp")]
    small = dict(config="small", sizes=[4, 64, 128, 4, 4, 512], openmp=False, threads=None)
    llmc = [_run("primal", 0.065, 18.8, **small), _run("hand", 0.144, 51.1, **small),
            _run("adgen", 0.140, 43.8, 7.3e-7, **small), _run("enzyme", 0.334, 1078.8, 7.3e-7, **small)]
    result = lambda case, tool, ms, difference=None: dict(case=case, tool=tool, ok=True, ms=ms, timings_ns=[],
                                                           output=None, error="", difference=difference)
    build = lambda tool, program: dict(tool=tool, program=program, ok=True, seconds=30.0, command=[], error="")
    gradbench = [result("ba-smallest-jacobian", "manual", 9.09), result("ba-smallest-jacobian", "adgen", 13.6, 1e-15),
                 result("ba-smallest-jacobian", "enzyme", 12.2, 2e-15),
                 result("lse-smallest-gradient", "manual", 0.0186),
                 result("lse-smallest-gradient", "adgen", 0.0182, 2e-12),
                 result("lse-smallest-gradient", "enzyme", 0.0302, 2e-12)]
    heat = {"primal": {"seconds": 0.456, "peak_kb": 3072.0, "check": 1.0},
            "ckpt": {"seconds": 4.89, "peak_kb": 69632.0, "check": 2.0,
                     "schedule": "adgen: checkpointed loop at kernels.c:13: 1000 iterations, 62 snapshots"},
            "full": {"seconds": 4.23, "peak_kb": 5044224.0, "check": 2.0},
            "enzyme": "not run: its storage would not fit in a third of this machine's memory"}
    return [
        {"kind": "kernels", **HERE, "settings": {"quick": True, "only": None, "enzyme": True}, "records": kernels},
        {"kind": "programs", **HERE, "settings": {"reps": 5, "openmp": False, "enzyme": True}, "records": programs,
         "builds": builds},
        {"kind": "llmc", **HERE, "commit": "def5678+changes", "settings": {"reps": 5, "build_rounds": 3,
                                                                         "llmc_commit": "f1e2ace"},
         "records": llmc, "builds": [{"openmp": False, "seconds": seconds}]},
        {"kind": "gradbench", **HERE, "settings": {"reps": 5, "processes": 101, "enzyme": True, "gradbench_commit": "f26651a7",
                                                  "cases": ["ba-smallest-jacobian", "lse-smallest-gradient"]},
         "records": gradbench, "builds": [build(t, p) for p in ("ba", "lse") for t in ("manual", "adgen", "enzyme")],
         "summary": "adgen builds 2 of 2, agrees on 2; Enzyme builds 2 (agrees on 2)"},
        {"kind": "checkpointing", **HERE, "settings": {"quick": True, "enzyme": True},
         "records": [{"kernel": "heat2d", "what": "2-D reaction-diffusion", "steps": 1000, "results": heat}]},
        {"kind": "bridges", **HERE, "settings": {"reps": 7, "sizes": [4, 100000]},
         "records": [{"framework": f, "n": 4, "what": "value", "how": h, "seconds": t}
                     for f, h, t in (("ctypes", "raw ctypes", 5e-7), ("jax", "jax.jit", 7.5e-6))]},
    ]


def _write(tmp_path, files, name="site"):
    paths = []
    for data in files:
        path = tmp_path / f"{data['kind']}.json"
        path.write_text(json.dumps(data))
        paths += ["--from", str(path)]
    done = subprocess.run([sys.executable, "-m", "bench", "--report", str(tmp_path / name), *paths], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path / name


def test_page_from_saved_records(tmp_path):
    site = _write(tmp_path, synthetic())
    page = (site / "index.md").read_text()
    assert page.startswith("# Performance\n")
    head = page.split("\n## ")[0]
    assert "**Machine:** Test CPU @ 3.0GHz, 4 cores" in head and "**OS:** Test Linux 1" in head
    assert "**Commit:** `abc1234`" in head and "**Date:** 2025-01-02" in head
    assert "**Tapenade:** not measured" in head
    sections = re.findall(r"^## (.+)$", page, re.M)
    assert sections == ["Kernels", "Programs", "llm.c's GPT-2", "GradBench",
                        "Long loops in bounded memory (checkpointing)",
                        "One call through the JAX and TensorFlow bridges"]
    llmc = page.split("## llm.c's GPT-2")[1].split("\n## ")[0]
    assert "commit `def5678+changes`" in llmc  # (measured at another commit: the section says so)
    assert "commit `abc1234`" not in page.split("## Programs")[1].split("\n## ")[0]
    # the tables, as each module writes them
    assert "| kernel | primal ms | adgen ms | Enzyme ms | hand-written ms |" in page
    assert "| rosenbrock | 1.000 | 1.300 | 1.400 | 1.200 | 1.30 | 1.40 | 0.93 | 1.08 | 0.00 | 0.00 |" in page
    assert "Forward mode, 8 directions in one call:" in page and "| rosenbrock | 1.300 | 1.500 |" in page
    assert "| gpt2 (B=4 T=64 C=128 L=4 NH=4 V=512) | primal (the loss) | 36.8 |" in page
    assert "| adgen's gradient | 140.0 | 0.97 | 43.8 | 0.86 | 7.3e-07 |" in page
    assert "| ba | jacobian ba1_n49_m7776_p31843 | 9.09 | 13.6 | 12.2 | 1.11 |" in page
    assert "(hello, whose input carries no run count and which evaluates once per run: the median of 101 " in page
    assert "| 4 | value | jax: jax.jit | 7.5 | +7.0 µs (15.0x) |" in page
    assert ("| 2-D reaction-diffusion | primal | 0.456 | 1.0 | 0.11 | 3 |\n"
            "|  | adgen within 64 MiB | 4.890 | 10.7 |") in page
    # the figures: each link an SVG file beside the page, and nothing else there
    links = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", page)
    assert links == ["kernels_time.svg", "kernels_ratio.svg", "kernels_memory.svg", "programs_time.svg",
                     "programs_memory.svg", "llmc_time.svg", "llmc_memory.svg", "gradbench_time.svg",
                     "checkpointing_time.svg", "checkpointing_memory.svg"]
    assert sorted(p.name for p in site.iterdir()) == sorted(links + ["index.md"])
    for link in links:
        svg = (site / link).read_text()
        assert svg.startswith("<?xml") and "<svg" in svg and "<dc:date>" not in svg
        assert "<text" in svg  # (text kept as text: svg.fonttype none)
    assert "gmm_objective/d10k25" in (site / "kernels_time.svg").read_text()


@pytest.mark.slow
def test_regenerating_gives_the_same_bytes(tmp_path):
    first = _write(tmp_path, synthetic(), "one")
    files = {p.name: p.read_bytes() for p in first.iterdir()}
    second = _write(tmp_path, synthetic(), "one")  # (over the first)
    assert {p.name: p.read_bytes() for p in second.iterdir()} == files
    third = _write(tmp_path, synthetic(), "two")
    assert {p.name: p.read_bytes() for p in third.iterdir()} == files


def test_page_with_kernels_alone_says_what_is_not_measured(tmp_path):
    kernels = synthetic()[0]
    kernels["settings"]["enzyme"] = False
    for r in kernels["records"]:
        r.update(enzyme_s=None, enzyme_difference=None, **({"enzyme_bytes": None} if "enzyme_bytes" in r else {}))
    site = _write(tmp_path, [kernels])
    page = (site / "index.md").read_text()
    assert "Enzyme: not measured" in page and "Enzyme ms" not in page
    assert "Not on this page (no record file given): Programs (`python -m bench.programs --json FILE`)" in page
    assert sorted(p.name for p in site.iterdir()) == ["index.md", "kernels_memory.svg", "kernels_time.svg"]


def test_older_kernel_records_and_usage_errors(tmp_path):
    bare = tmp_path / "old.json"  # what `python -m bench --json` wrote before: a list, no provenance
    bare.write_text(json.dumps(synthetic()[0]["records"]))
    (tmp_path / "other.json").write_text('{"kind": "nothing"}')
    done = subprocess.run([sys.executable, "-m", "bench", "--report", str(tmp_path / "site"), "--from", str(bare)],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "**Commit:** `unknown`" in (tmp_path / "site" / "index.md").read_text()
    for args, said in ((["--from", str(bare)], "--from FILE needs --report DIR"),
                       (["--report", "x", "--from", str(bare), "--quick"], "without measuring: --quick go"),
                       (["--report", "x", "--from", str(tmp_path / "none.json")], "no such file"),
                       (["--report", "x", "--from", str(ROOT / "pyproject.toml")], "--from: Expecting value"),
                       (["--report", "x", "--from", str(tmp_path / "other.json")], "not a benchmark record file")):
        done = subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 2 and said in done.stderr, done.stderr


def test_record_files_carry_where_they_were_measured(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from bench import records

    data = records.envelope("programs", [], {"reps": 1})
    assert data["machine"].endswith(" cores") and data["os"] and re.fullmatch(r"\d{4}-\d\d-\d\d", data["date"])
    assert re.fullmatch(r"([0-9a-f]{4,}(\+changes)?|unknown)", data["commit"])


def test_modules_read_back_the_records_they_write(monkeypatch):
    """bench.programs' and bench.checkpointing's records, read back for their own table writers,
    are the records again."""
    monkeypatch.syspath_prepend(str(ROOT))
    from bench.checkpointing.__main__ import rows_from, table
    from bench.programs.__main__ import records, results_from

    files = {data["kind"]: data for data in json.loads(json.dumps(synthetic()))}
    runs, builds = records(results_from(files["programs"]), openmp=False)
    assert json.loads(json.dumps([runs, builds])) == [files["programs"]["records"], files["programs"]["builds"]]
    rows = rows_from(files["checkpointing"])
    assert [{"kernel": k, "what": w, "steps": s, "results": r} for k, w, s, r in rows] == \
        files["checkpointing"]["records"]
    assert "| 2-D reaction-diffusion | primal | 0.456 |" in table(rows, quick=True)


def test_tapenade_where_a_record_has_it(tmp_path):
    kernels = synthetic()[0]
    for r in kernels["records"]:
        if r["mode"] == "reverse":
            r.update(tapenade_s=r["adgen_s"] * 1.5, tapenade_bytes=1_000_000)
    site = _write(tmp_path, [kernels])
    page = (site / "index.md").read_text()
    assert "Tapenade: not measured" not in page.replace("**", "")
    assert "| Tapenade ms |" in page and "| adgen/Tapenade |" in page
    assert "Tapenade" in (site / "kernels_time.svg").read_text()
    assert "Tapenade" in (site / "kernels_memory.svg").read_text()
