"""`python -m bench --quick` runs, its gradients agree with the hand-written ones and its
forward[8] lanes with width-1 calls, and --json writes the documented records."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

KERNELS = {"rosenbrock", "norm/20000", "norm/80000", "logsumexp", "gmm", "ba", "lstm", "nbody", "heat", "sinexp"}


def test_quick_benchmark(tmp_path):
    out = tmp_path / "out.json"
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--json", str(out), "-o", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    records = json.loads(out.read_text())
    assert {r["kernel"] for r in records} == KERNELS
    for r in records:
        assert r["mode"] in ("reverse", "forward8")
        assert r["primal_s"] > 0 and r["adgen_s"] > 0
        assert r["difference"] <= 1e-6
        if r["mode"] == "reverse":
            assert r["hand_s"] > 0
        else:
            assert r["hand_s"] is None and r["speedup_vs_scalar"] > 0
    table = (tmp_path / "bench.md").read_text()
    assert table.startswith("| kernel | primal ms | adgen gradient ms |") and "| lstm |" in table
