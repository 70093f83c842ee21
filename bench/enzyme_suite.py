"""Enzyme's own integration tests for plain C, built with `adgen cc` (and, with --enzyme PLUGIN,
with Enzyme's clang plugin, in the same run): every `*.c` file of test/Integration/ReverseMode,
ForwardMode and ForwardModeVector of a clone of Enzyme's repository, less those for MPI and BLAS
and the `-verify` diagnostics tests, built unchanged at each -O level and run; each test aborts on
a wrong value, so a file passes when it builds and exits 0. Those using OpenMP (its `-fopenmp` in
their RUN lines, or a `#pragma omp`) are built with -fopenmp and run on two threads.

    python -m bench.enzyme_suite ENZYME_SRC [--enzyme PLUGIN] [--levels 0,2] [--only NAME] [--json FILE]

ENZYME_SRC is the clone (its `enzyme/` folder or the repository root). A file's own RUN lines say
whether it wants -ffast-math (given to both) and Enzyme's -enzyme-loose-types (given to Enzyme).
The exit status is 1 if a file fails with adgen."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FOLDERS = ("ReverseMode", "ForwardMode", "ForwardModeVector")
EXCLUDED = re.compile(r"\bmpi|blas|-verify", re.I)


def tests(root: Path) -> list[Path]:
    """The suite's files: those whose name and RUN lines are not about MPI, BLAS or -verify."""
    base = root / "test" / "Integration" if (root / "test" / "Integration").is_dir() else \
        root / "enzyme" / "test" / "Integration"
    if not base.is_dir():
        raise SystemExit(f"no test/Integration folder under {root}: give a clone of Enzyme's repository")
    found = []
    for folder in FOLDERS:
        for path in sorted((base / folder).glob("*.c")):
            runs = " ".join(line for line in path.read_text(errors="replace").splitlines() if "RUN:" in line)
            if not EXCLUDED.search(path.name + " " + runs):
                found.append(path)
    return found


def _flags(path: Path) -> tuple[list[str], list[str]]:
    """What the file's RUN lines ask of both compilers, and of Enzyme's alone."""
    text = path.read_text(errors="replace")
    runs = " ".join(line for line in text.splitlines() if "RUN:" in line)
    common = ["-std=c11"] + (["-ffast-math"] if "-ffast-math" in runs else [])
    common += ["-fopenmp"] if "-fopenmp" in runs or "#pragma omp" in text else []
    enzyme = ["-mllvm", "-enzyme-loose-types"] if "-enzyme-loose-types" in runs else []
    return common, enzyme


def run_one(command: list[str], exe: Path, cwd: Path) -> tuple[bool, str, float]:
    """Builds and runs one file: (passed, why not, seconds the build took)."""
    started = time.perf_counter()
    try:
        built = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return False, "build timed out", time.perf_counter() - started
    seconds = time.perf_counter() - started
    if built.returncode != 0:
        return False, "build: " + (built.stderr.strip().splitlines() or ["?"])[-1][:200], seconds
    try:
        ran = subprocess.run([str(exe)], cwd=cwd, capture_output=True, text=True, timeout=120,
                             env=dict(os.environ, OMP_NUM_THREADS="2"))
    except subprocess.TimeoutExpired:
        return False, "run timed out", seconds
    if ran.returncode != 0:
        return False, f"run: exit {ran.returncode}: " + (ran.stderr.strip().splitlines() or [""])[-1][:200], seconds
    return True, "", seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.enzyme_suite", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("enzyme_src", type=Path, help="a clone of Enzyme's repository")
    parser.add_argument("--enzyme", type=Path, metavar="PLUGIN", help="also build with Enzyme's clang plugin")
    parser.add_argument("--enzyme-cc", default="clang-19", help="the clang the plugin is for (default clang-19)")
    parser.add_argument("--levels", default="0,2", help="the -O levels, comma-separated (default 0,2)")
    parser.add_argument("--only", help="the files whose name contains this")
    parser.add_argument("--json", type=Path, help="write one record per file and level")
    args = parser.parse_args(argv)
    files = [f for f in tests(args.enzyme_src.resolve()) if not args.only or args.only in f.name]
    levels = [f"-O{level}" for level in args.levels.split(",")]
    tools = ["adgen"] + (["enzyme"] if args.enzyme else [])
    records, started = [], time.time()
    print("  ".join([f"{'file':<40}"] + [f"{tool + level:<6}" for level in levels for tool in tools]))
    with tempfile.TemporaryDirectory(prefix="adgen-enzyme-suite-") as tmp:
        for path in files:
            common, loose = _flags(path)
            name = f"{path.parent.name}/{path.name}"
            row = [name]
            for level in levels:
                for tool in tools:
                    exe = Path(tmp) / f"{tool}{level}-{path.parent.name}-{path.stem}"
                    command = ([sys.executable, "-m", "adgen.commands.cli", "cc"] if tool == "adgen" else
                               [args.enzyme_cc, f"-fplugin={args.enzyme.resolve()}", *loose])
                    command += [*common, level, path.name, "-o", str(exe), "-lm"]
                    ok, why, seconds = run_one(command, exe, path.parent)
                    records.append(dict(file=name, level=level, tool=tool, passed=ok, why=why, build_s=seconds))
                    row.append("pass" if ok else "FAIL")
            print("  ".join(f"{cell:<40}" if k == 0 else f"{cell:<6}" for k, cell in enumerate(row)), flush=True)
    print()
    for tool in tools:
        for level in levels:
            mine = [r for r in records if r["tool"] == tool and r["level"] == level]
            print(f"{tool} {level}: {sum(r['passed'] for r in mine)} of {len(mine)} pass, builds "
                  f"{sum(r['build_s'] for r in mine):.0f} s in all")
            for r in mine:
                if not r["passed"]:
                    print(f"  {r['file']}: {r['why']}")
    print(f"done in {time.time() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0 if all(r["passed"] for r in records if r["tool"] == "adgen") else 1


if __name__ == "__main__":
    sys.exit(main())
