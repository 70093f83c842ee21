"""The bundled examples build and run, and every derivative they print matches finite differences."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT, quick_first

EXAMPLES = sorted(p.name for p in (ROOT / "examples").iterdir()
                  if (p / f"{p.name}.c").exists() or (p / f"{p.name}.cpp").exists())


@quick_first("name", EXAMPLES)
def test_example_runs(name, tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "run.py"), name, "-o", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    checks = [line for line in done.stdout.splitlines() if "finite differences" in line]
    assert checks and all(line.rstrip().endswith(" ok") for line in checks), done.stdout
