"""`python -m bench --quick` runs, its gradients agree with the hand-written ones (or with finite
differences where there is none), its forward[8] lanes with width-1 calls and its Hessian-vector
products with finite differences of the gradient, and --json writes the documented records, with
the machine and commit they were measured on. Enzyme's columns need its plugin, which the test
suite does not build."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow  # (a benchmark run: a minute)

KERNELS = {"rosenbrock", "norm/20000", "norm/80000", "logsumexp", "gmm", "gmm_objective/d10k25",
           "gmm_objective/d64k50", "ba", "reproj_error", "lstm", "nbody", "heat", "sinexp"}
HVP = {"rosenbrock", "logsumexp", "sinexp"}  # the kernels of one array
HAND = KERNELS - {"gmm_objective/d10k25", "gmm_objective/d64k50", "reproj_error"}


def test_quick_benchmark(tmp_path):
    out = tmp_path / "out.json"
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--json", str(out), "-o", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    saved = json.loads(out.read_text())
    assert saved["kind"] == "kernels" and saved["settings"] == {"quick": True, "only": None, "enzyme": False}
    assert saved["machine"].endswith(" cores") and saved["commit"] and saved["os"] and saved["date"]
    records = saved["records"]
    assert {r["kernel"] for r in records} == KERNELS
    assert {r["kernel"] for r in records if r["mode"] == "forward8"} == KERNELS
    assert {r["kernel"] for r in records if r["mode"] == "hvp"} == HVP
    for r in records:
        assert r["mode"] in ("reverse", "forward8", "hvp")
        assert r["primal_s"] > 0 and r["adgen_s"] > 0
        assert r["difference"] <= 1e-6
        assert r["enzyme_s"] is None
        if r["mode"] == "reverse":
            assert (r["hand_s"] is not None) == (r["kernel"] in HAND)
            assert r["adgen_bytes"] >= 0 and r["enzyme_bytes"] is None
        else:  # forward8: the time of 8 width-1 calls over forward[8]'s; hvp: the gradient's over H·v's
            assert r["hand_s"] is None and r["speedup_vs_scalar"] > 0
    table = (tmp_path / "bench.md").read_text()
    assert table.startswith("Reverse mode, the gradient:\n\n| kernel | primal ms | adgen ms | hand-written ms |")
    assert table.count("| lstm |") == 2 and "Forward mode, 8 directions in one call:" in table
    assert "Hessian-vector products, forward mode over the reverse-mode gradient:" in table
    assert table.count("| sinexp |") == 3
    assert "Enzyme" not in table
