"""`python -m bench.mpi [--ranks 1,2,4] [--enzyme PLUGIN] [--enzyme-src DIR] [--reps N] [--json FILE]
[--markdown FILE]`:
gradients of an MPI program over ranks (specs/mpi.md), beside its primal and Enzyme's plugin.

The programs: bench/mpi/heat.c, a 2-D heat equation whose rows are split over the ranks (a halo
row exchanged with each neighbour by Isend/Irecv at every step, MPI_PROC_NULL at the domain's
edges, and the global energy's root reduced by Allreduce; the gradient with respect to the
initial field and the diffusion coefficient), and bench/mpi/lsq.c, data-parallel least squares
(each rank's rows, the loss reduced by Allreduce; the gradient with respect to the shared x). For
each rank count:

- **check**: one problem split over the ranks; the gradient gathered on rank 0 must equal the
  one-rank program's (largest difference relative to the largest entry), and one entry its
  central difference;
- **time** (weak scaling): each rank a fixed share; the primal's and the gradient's seconds
  (median over --reps, the slowest rank's), their ratio, and that ratio over one rank's.

Built with `adgen build` (and `mpicc`); with --enzyme PLUGIN also with Enzyme's clang plugin
(`OMPI_CC="clang-19 -fplugin=PLUGIN" mpicc`, the driver calling `__enzyme_autodiff`), and the
same file with `OMPI_CC="adgen cc" mpicc`, the build times side by side (the median of
--build-rounds rounds, the tools in turn). Ranks beyond the cores
are oversubscribed: on a 2-core machine, 4 ranks share 2 cores (the ratios, measured in one run,
still compare). With --enzyme-src DIR (a clone of Enzyme's repository), Enzyme's four MPI
integration tests are built unchanged at -O0 to -O3 and run on each rank count but one, the
derivatives they print checked (they check nothing themselves). Writes a Markdown table (default bench/results/mpi.md) and, with --json FILE, a
record file (bench/records.py, kind "mpi"). Needs Open MPI's mpicc and mpirun."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.installed import byte_compiled
from bench.mpi import table
from bench.records import envelope, write as write_records

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# program -> its driver, the check's and the weak scaling's sizes (the driver's three numbers), and
# which entry of the gradient the check compares with central differences
PROGRAMS = {"heat": ("heat_main.c", (64, 64, 20), (256, 128, 50), -1),  # nx, rows, steps; d kappa
            "lsq": ("lsq_main.c", (64, 256, 0), (128, 8192, 0), 0)}  # columns, rows; d x[0]
failed: dict[str, str] = {}  # the builds that failed -> why


def _run(command: list[str], env: dict | None = None, cwd: Path | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(map(str, command))}\n{done.stdout}{done.stderr}")
    return done.stdout


def _timed(command: list[str], env: dict | None = None, cwd: Path | None = None) -> float:
    byte_compiled()  # (adgen as pip installs it: bench/installed.py)
    start = time.perf_counter()
    _run(command, env, cwd)
    return time.perf_counter() - start


def _mpirun(exe: Path, ranks: int, *args) -> str:
    return _run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), str(exe), *map(str, args)])


def build(program: str, work: Path, plugin: str | None, rounds: int = 1) -> tuple[dict[str, Path], dict[str, float]]:
    """The program's executables (adgen's, and Enzyme's and adgen cc's of the Enzyme-API driver
    with a plugin) and the seconds each build took: the median of `rounds` rounds, the tools in
    turn in each (a build's time varies by a tenth from one to the next)."""
    times: dict[str, list[float]] = {}
    for k in range(rounds):
        exes, seconds = _build(program, work / f"round{k}", plugin)
        for tool, t in seconds.items():
            times.setdefault(tool, []).append(t)
    return exes, {tool: statistics.median(ts) for tool, ts in times.items()}


def _build(program: str, work: Path, plugin: str | None) -> tuple[dict[str, Path], dict[str, float]]:
    adgen = [sys.executable, "-m", "adgen.commands.cli"]
    source, driver = HERE / f"{program}.c", HERE / PROGRAMS[program][0]
    work = work / program
    work.mkdir(parents=True)
    exes, seconds = {}, {}
    seconds["adgen build"] = _timed([*adgen, "build", "-q", str(source), "-o", str(work / "out")])
    _run(["mpicc", "-O2", "-I", str(work / "out"), str(driver), str(source), str(work / "out" / f"{program}.adgen.o"),
          "-lm", "-o", str(work / "adgen")])
    exes["adgen"] = work / "adgen"
    if plugin:
        both = work / f"enzyme_{program}.c"  # (Enzyme differentiates what the file that calls it defines)
        both.write_text(f'#include "{source}"\n#include "{driver}"\n')
        for name, cc in (("enzyme", f"clang-19 -fno-math-errno -fplugin={plugin}"), ("adgen cc", " ".join(adgen) + " cc")):
            env = {**os.environ, "OMPI_CC": cc}
            exe = work / name.replace(" ", "_")
            start = time.perf_counter()
            done = subprocess.run(["mpicc", "-O2", "-DENZYME", str(both), "-o", str(exe), "-lm"], capture_output=True,
                                  text=True, env=env, cwd=work)
            if done.returncode != 0:  # (Enzyme's plugin, on what it cannot differentiate: said, not fatal)
                failed[f"{name} ({program})"] = (done.stderr.strip().splitlines() or ["failed"])[-1][:200]
                continue
            seconds[name] = time.perf_counter() - start
            exes[name] = exe
    return exes, seconds


def check(program: str, exe: Path, ranks: list[int]) -> list[dict]:
    """The gradient at each rank count against one rank's, and one entry against central differences."""
    _, sizes, _, entry = PROGRAMS[program]
    one = None
    out = []
    for p in ranks:
        values = [float(v) for v in _mpirun(exe, p, "check", *sizes).split()]
        grad, fd = values[:-1], values[-1]
        one = grad if one is None else one
        scale = max(abs(v) for v in one)
        out.append({"ranks": p, "vs_one_rank": max(abs(a - b) for a, b in zip(grad, one)) / scale,
                    "entry": grad[entry], "entry_fd_rel": abs(grad[entry] - fd) / abs(fd)})
    return out


def times(program: str, exe: Path, ranks: list[int], reps: int) -> list[dict]:
    nx, rows, steps = PROGRAMS[program][2]
    out = []
    for p in ranks:
        got = json.loads(_mpirun(exe, p, "time", nx, rows, steps, reps).strip().splitlines()[-1])
        out.append({"ranks": p, "primal_s": got["primal_s"], "gradient_s": got["gradient_s"],
                    "ratio": got["gradient_s"] / got["primal_s"]})
    for r in out:
        r["ratio_vs_one_rank"] = r["ratio"] / out[0]["ratio"]
    return out


# Enzyme's MPI integration tests (test/Integration at fba597f6): they print their derivatives and
# check nothing (Enzyme marks them XFAIL); what each must print, on rank r of p ranks.
ENZYME_TESTS = {
    "ReverseMode/mpi_bcast.c": lambda r, p: {"res": p if r == 0 else 0},
    "ReverseMode/mpi_reduce.c": lambda r, p: {"dsum": 0 if r == 0 else 123456789, "db": 1},
    "ForwardMode/mpi/mpi_bcast.c": lambda r, p: {"res": 1},
    "ForwardMode/mpi/mpi_reduce.c": lambda r, p: {"dsum": 0 if r == 0 else 123456789, "db": 0},
}


def enzyme_tests(src: Path, plugin: str | None, ranks: list[int], work: Path) -> list[dict]:
    """Enzyme's four MPI integration tests built unchanged at -O0 to -O3 (`OMPI_CC="adgen cc"
    mpicc`, and Enzyme's plugin where given), run on each rank count, their printed values checked."""
    base = src / "enzyme" / "test" / "Integration" if (src / "enzyme").is_dir() else src / "test" / "Integration"
    tools = {"adgen cc": " ".join([sys.executable, "-m", "adgen.commands.cli", "cc"])}
    if plugin:
        tools["enzyme"] = f"clang-19 -fno-math-errno -fplugin={plugin}"
    out = []
    for name, want in ENZYME_TESTS.items():
        for tool, cc in tools.items():
            for level in ("-O0", "-O1", "-O2", "-O3"):
                exe = work / f"{Path(name).stem}-{tool.replace(' ', '_')}{level}"
                built = subprocess.run(["mpicc", level, "-std=c11", f"-I{base / 'ForwardMode'}", str(base / name),
                                        "-o", str(exe), "-lm"], capture_output=True, text=True,
                                       env={**os.environ, "OMPI_CC": cc}, cwd=work)
                right = built.returncode == 0
                why = "" if right else (built.stderr.strip().splitlines() or ["build failed"])[-1][:160]
                for p in ranks if right else []:
                    run = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(p), str(exe),
                                          "1"], capture_output=True, text=True, timeout=120)
                    printed = {}
                    for line in run.stdout.splitlines():
                        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
                        if "rank" in fields:
                            printed[int(fields["rank"])] = {k: float(v) for k, v in fields.items() if k != "rank"}
                    wrong = [r for r in range(p) if r not in printed or
                             any(abs(printed[r].get(k, float("nan")) - v) > 1e-9 for k, v in want(r, p).items())]
                    if run.returncode != 0 or wrong:
                        right, why = False, f"{p} ranks: exit {run.returncode}, wrong on ranks {wrong}"
                        break
                out.append({"test": name, "tool": tool, "level": level, "right": right, "why": why})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mpi", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", default="1,2,4", help="rank counts (default 1,2,4)")
    parser.add_argument("--enzyme", metavar="PLUGIN", help="Enzyme's ClangEnzyme-19.so, to build and run beside")
    parser.add_argument("--enzyme-src", metavar="DIR", help="a clone of Enzyme's repository: its four MPI "
                        "integration tests built and run too")
    parser.add_argument("--reps", type=int, default=5, help="timed repetitions (the median is kept)")
    parser.add_argument("--build-rounds", type=int, default=5, metavar="N",
                        help="builds of each tool, in turn (the median is kept; default 5)")
    parser.add_argument("--json", metavar="FILE", help="a record file (bench/records.py)")
    parser.add_argument("--markdown", metavar="FILE", default=str(ROOT / "bench" / "results" / "mpi.md"))
    args = parser.parse_args(argv)
    if not (shutil.which("mpicc") and shutil.which("mpirun")):
        print("bench.mpi: needs Open MPI's mpicc and mpirun (apt-get install libopenmpi-dev openmpi-bin)",
              file=sys.stderr)
        return 1
    ranks = [int(r) for r in args.ranks.split(",")]
    failed.clear()
    results: dict[str, dict] = {}
    seconds: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="adgen-bench-mpi-") as tmp:
        for program in PROGRAMS:
            exes, seconds[program] = build(program, Path(tmp), args.enzyme, args.build_rounds)
            results[program] = {}
            for tool, exe in exes.items():
                print(f"{program}, {tool}: checking and timing on {args.ranks} ranks", file=sys.stderr)
                results[program][tool] = {"check": check(program, exe, ranks),
                                          "time": times(program, exe, ranks, args.reps)}
        tests = enzyme_tests(Path(args.enzyme_src), args.enzyme, ranks[1:] or ranks, Path(tmp)) \
            if args.enzyme_src else []
    records = [{"program": program, "tool": tool, **c, **t} for program, tools in results.items()
               for tool, rows in tools.items() for c, t in zip(rows["check"], rows["time"])]
    data = envelope("mpi", records, {"programs": PROGRAMS, "reps": args.reps, "enzyme_ranks": ranks[1:] or ranks,
                                       "build_rounds": args.build_rounds},
                    builds=seconds, failed=dict(failed), enzyme_tests=tests)
    text = "# MPI: gradients over ranks (python -m bench.mpi)\n\n" + table(data)
    Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
    Path(args.markdown).write_text(text)
    print(text)
    if args.json:
        write_records(Path(args.json), data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
