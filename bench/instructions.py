"""`python -m bench.instructions [--update] [--only NAME]`: the instructions one gradient executes,
for every kernel of bench/kernels.c and the programs of bench/programs (gpt2.c, mlp.c), at small
sizes, against the baseline committed in bench/instructions.json: the regression gate that
noise cannot hide (tests/test_instruction_counts.py fails when a count grew by more than 3%).

Counted by valgrind's callgrind (Debian's `valgrind`), collecting only during one call of adgen's
gradient (`bench count KERNEL`, `harness count`), and only the instructions of the executable's
own code: the derivative, and adgen's runtime in it. The C library's (malloc, memset) and libm's
(exp, tanh) are left out: which of their variants runs depends on the CPU. Everything is built
for the target's baseline CPU (no --march native), so the counts are the same on every machine
that builds with the same adgen and the same bundled clang, and on every run.

When a change makes a count grow on purpose (a derivative that stores more to run faster, say),
run with --update and commit bench/instructions.json with it: the test compares with the
baseline committed, so the commit that makes a count grow says so."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from adgen.base.toolchain import bundled_cc
from bench.programs import PROGRAMS

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "instructions.json"
GROWTH = 0.03  # the most a count may grow before the gate fails
KERNELS = ("rosenbrock", "norm", "logsumexp", "gmm", "gmm_objective", "ba", "reproj_error", "lstm", "nbody", "heat",
           "sinexp")  # bench/driver.c's `bench count` names
WRAPPED = ["malloc", "calloc", "realloc", "free"]
CC = [*bundled_cc(), "-O2", "-fno-math-errno"]


def _run(command: list) -> None:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"failed ({done.returncode}): {' '.join(map(str, command))}\n{done.stdout}{done.stderr}")


def build_kernels(work: Path) -> Path:
    """bench/kernels.c's derivatives and driver.c, for the baseline CPU."""
    _run([sys.executable, "-m", "adgen.commands.cli", "build", "-q", HERE / "kernels.c", "-o", work])
    _run([*CC, "-I", work, HERE / "driver.c", HERE / "kernels.c", HERE / "hand.c", work / "kernels.adgen.o", "-lm",
          *(f"-Wl,--wrap={f}" for f in WRAPPED), "-o", work / "bench"])
    return work / "bench"


def build_program(name: str, work: Path) -> Path:
    """bench/programs/NAME.c with harness.c, adgen's gradient in it."""
    programs = HERE / "programs"
    _run([sys.executable, "-m", "adgen.commands.cli", "build", "-q", programs / f"{name}.c", "-o", work])
    _run([*CC, "-DWITH_ADGEN", "-I", work, "-I", programs, programs / "harness.c", programs / f"{name}_bench.c",
          programs / f"{name}.c", work / f"{name}.adgen.o", "-lm", "-o", work / name])
    return work / name


def counted(command: list, work: Path) -> int:
    """The instructions of the executable's own code callgrind collected running `command`."""
    out = work / "callgrind.out"
    _run(["valgrind", "--tool=callgrind", "--collect-atstart=no", "--compress-strings=no", "--compress-pos=no",
          f"--callgrind-out-file={out}", *command])
    return own_instructions(out.read_text(), Path(command[0]).name)


def own_instructions(profile: str, executable: str) -> int:
    """From callgrind's output (strings and positions uncompressed): the self cost (instructions)
    of the functions in `executable` (by the object's file name); a call's cost line, which holds
    what the callee spent, is not the caller's own."""
    total, ours, skip = 0, False, False
    for line in profile.splitlines():
        if line.startswith("ob="):
            ours = Path(line[3:].strip()).name == executable
        elif line.startswith("calls="):
            skip = True
        elif line[:1].isdigit() or line[:1] in "+-*":
            fields = line.split()
            if skip:
                skip = False
            elif ours and len(fields) > 1:
                total += int(fields[1])
    return total


def counts(work: Path, only: str | None = None) -> dict[str, int]:
    """Every kernel's and program's count (or `only` that one's)."""
    found = {}
    kernels = [k for k in KERNELS if only in (None, k)]
    if kernels:
        bench = build_kernels(work / "kernels")
        for kernel in kernels:
            found[kernel] = counted([bench, "count", kernel], work)
    for program in PROGRAMS:
        if only in (None, program.name):
            executable = build_program(program.name, work / program.name)
            found[program.name] = counted([executable, "count", "0", work / "unused",
                                           *map(str, program.tiny)], work)
    return found


def compare(now: dict[str, int], baseline: dict[str, int]) -> tuple[list[str], list[str]]:
    """The table's rows, and what grew by more than GROWTH (or is not in the baseline)."""
    rows, grown = [], []
    for name, count in now.items():
        before = baseline.get(name)
        if before is None:
            rows.append(f"| {name} | | {count:,} | |")
            grown.append(f"{name}: not in the baseline (python -m bench.instructions --update)")
            continue
        change = count / before - 1
        rows.append(f"| {name} | {before:,} | {count:,} | {change:+.1%} |")
        if change > GROWTH:
            grown.append(f"{name}: {before:,} -> {count:,} instructions per gradient ({change:+.1%}, more than "
                         f"{GROWTH:.0%}); if that is meant, run python -m bench.instructions --update and commit "
                         f"{BASELINE.name} with the change")
    return rows, grown


def load_baseline() -> dict[str, int]:
    return json.loads(BASELINE.read_text()) if BASELINE.is_file() else {}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help=f"write the counts to {BASELINE.name}")
    parser.add_argument("--only", metavar="NAME", help="one kernel or program")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="adgen-instructions-") as tmp:
        now = counts(Path(tmp), args.only)
    baseline = load_baseline()
    rows, grown = compare(now, baseline)
    print("| kernel | baseline | now | change |\n|---|---|---|---|\n" + "\n".join(rows))
    if args.update:
        BASELINE.write_text(json.dumps(baseline | now, indent=1, sort_keys=True) + "\n")
        print(f"wrote {BASELINE}")
        return 0
    for line in grown:
        print(line, file=sys.stderr)
    return 1 if grown else 0


if __name__ == "__main__":
    sys.exit(main())
