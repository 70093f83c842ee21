"""`python -m bench.gradbench GRADBENCH_SRC [--enzyme PLUGIN] [--json-include DIR] [--only NAMES] [--reps N]
[--rounds N] [--processes N] [--min-seconds S] [-o DIR] [--json FILE]`:
GradBench's twelve C++ programs written for Enzyme (GRADBENCH_SRC: a checkout of
github.com/gradbench/gradbench, which adgen's developers bring with `fetch`; its tools/enzyme/*.cpp
are built unchanged, never copied here), differentiated by adgen.

Each program (hello, ba, det, gmm, ht, kmeans, llsq, lse, lstm, ode, particle, saddle) is built
(1) with `adgen c++`, (2) with Enzyme's clang plugin given --enzyme PLUGIN (clang-19
-fplugin=PLUGIN, in place of the Makefile's LTO plugin LLDEnzyme-19.so), and GradBench's `manual`
tool (tools/manual/*.cpp, hand-written derivatives) with plain clang++-19 (else c++). The flags
are those of GradBench's Makefiles (cpp/common.mk, NATIVE=yes, MULTITHREADED=no): -std=c++17 -O3
-Wall -Wno-unknown-pragmas -march=native, and for Enzyme's (its link's -O3 -fno-math-errno) and
adgen's -fno-math-errno too; `-I cpp` and the folder of nlohmann's json.hpp (--json-include DIR,
a folder holding json.hpp, nlohmann/json.hpp, or a checkout of nlohmann/json; default: nlohmann/
on the usual include paths).

Each program runs as GradBench's tools run (cpp/gradbench/main.hpp's generic_main: PROGRAM
INPUT.json FUNCTION), on its derivative function (ba, gmm, ht, lstm: jacobian; det, llsq, lse,
ode: gradient; kmeans: dir; hello: double; particle and saddle: rr, ff, fr, rf), at the eval's
smallest standard input and, where cheap, one larger (bench/gradbench/inputs.py: GradBench's
generators written out again, numpy only). Time: the median of the "evaluate" timings the
program itself reports (the input's min_runs = --reps, min_seconds = --min-seconds, 1 by default
as in GradBench's evals: a program whose evaluation takes microseconds evaluates for a second, not
twenty times), in ms: the fastest of --rounds such runs (3 by default), run with the tools in turn,
so that the machine's drift over the run falls on each tool alike (hello's input, a bare number,
carries no min_runs: each round runs it in --processes processes, 101 by default, and takes the
median of their one evaluation each). Each output is
compared with manual's (particle and saddle: with the constant GradBench's eval expects): the
largest over its numbers of |a - b| / max(|a|, |b|, 1e-12 * the reference's largest magnitude);
agreement is <= 1e-8.

Check inputs (not GradBench's; small ones of det, llsq, lse and ode, whose gradients are far from
zero: ode's standard inputs give every tool a gradient of zeros, and manual's ode gradient is that
of the exact solution, not of the Runge-Kutta steps the program takes): every tool's gradient is
compared with central differences of the program's own primal function (PROGRAM INPUT primal,
once per perturbed number), max |a - b| / max |b| <= 1e-6; each evaluated once (checked, not
timed). A tool whose gradient of a program fails its check has its times of that program (and the
ratio beside them) marked †: they time a wrong gradient. --quick runs these and the smallest.

Writes the tables to --markdown FILE (default bench/results/gradbench.md) and prints them;
work files (inputs, executables, build logs, results.json: one record per case and tool) go
to -o DIR (default build/gradbench); --json FILE writes the records with the machine and commit
(bench/records.py), for `python -m bench --report DIR --from FILE`. The exit status is 1 if a
program fails to build with adgen or a case of its disagrees."""

from __future__ import annotations

import argparse
import json
import math
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import check_enzyme, machine
from bench.installed import byte_compiled
from bench.records import commit, envelope, write as write_records
from bench.gradbench.inputs import LSTM_TEXT_NOTE, PROGRAMS, SIZES, Case, Probe, cases, lstm_text

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TOLERANCE = 1e-8
CHECK_TOLERANCE = 1e-6  # against central differences: the largest |a - b| over the largest |b|
STEP = 1e-6  # central differences' step, times max(1, |x|)
FLOOR = 1e-12  # of the reference's largest magnitude: below it, a difference counts against that
COMMON = ["-std=c++17", "-O3", "-Wall", "-Wno-unknown-pragmas", "-march=native"]  # cpp/common.mk
AD_FLAGS = [*COMMON, "-fno-math-errno"]  # tools/enzyme/Makefile's link (-O3 -fno-math-errno -flto)
TOOLS = ("manual", "adgen", "enzyme")
INCLUDE_PATHS = ("/usr/include", "/usr/local/include", "/opt/homebrew/include")


@dataclass
class Build:
    tool: str
    program: str
    ok: bool
    seconds: float
    command: list[str]
    error: str = ""  # the first error line, where it failed


@dataclass
class Result:
    case: str
    tool: str
    ok: bool
    ms: float | None = None  # median of the program's "evaluate" timings
    timings_ns: list[int] = field(default_factory=list)
    output: Any = None
    error: str = ""
    difference: float | None = None  # against the reference (manual's output, or the eval's constant)


# --- finding things ----------------------------------------------------------------------------

def json_folder(given: Path | None) -> Path | None:
    """The folder to put on the include path so that `#include "json.hpp"` finds nlohmann's."""
    candidates = [given, given / "nlohmann", given / "single_include" / "nlohmann"] if given else \
        [Path(p) / "nlohmann" for p in INCLUDE_PATHS]
    return next((c for c in candidates if (c / "json.hpp").is_file()), None)


def first_error(text: str) -> str:
    """The first line saying `error` (a compiler's, a linker's, adgen's), else the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = next((x for x in lines if "error" in x.lower()), lines[-1] if lines else "(no output)")
    return line[:240]



def _version(command: str) -> str:
    try:
        out = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return command
    return out.splitlines()[0].strip() if out else command


# --- building and running ----------------------------------------------------------------------

def build(tool: str, program: str, src: Path, include: Path, work: Path, args: argparse.Namespace) -> Build:
    """One program with one tool, into work/bin/TOOL/PROGRAM; its log beside it."""
    folder = src / "tools" / ("manual" if tool == "manual" else "enzyme")
    exe = work / "bin" / tool / program
    exe.parent.mkdir(parents=True, exist_ok=True)
    includes = ["-I", str(src / "cpp"), "-I", str(include)]
    source = str(folder / f"{program}.cpp")
    if tool == "manual":
        command = [args.manual_cxx, *COMMON, *includes, source, "-o", str(exe), "-lm"]
    elif tool == "adgen":
        command = [sys.executable, "-m", "adgen.commands.cli", "c++", *AD_FLAGS, *includes, source, "-o", str(exe),
                   "-lm"]
    else:
        command = [args.enzyme_cxx, f"-fplugin={args.enzyme.resolve()}", *AD_FLAGS, *includes, source, "-o",
                   str(exe), "-lm"]
    log = exe.with_suffix(".log")
    if args.reuse and exe.is_file():
        return Build(tool, program, True, 0.0, command)
    exe.unlink(missing_ok=True)
    byte_compiled()  # (adgen as pip installs it: bench/installed.py)
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=args.build_timeout)
        text, status = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired:
        text, status = f"error: the build ran past {args.build_timeout} s", -1
    seconds = time.perf_counter() - started
    log.write_text(shlex.join(command) + "\n" + text)
    ok = status == 0 and exe.is_file()
    return Build(tool, program, ok, seconds, command, "" if ok else first_error(text))


def run(exe: Path, case: Case, input_file: Path, timeout: float) -> Result:
    """`PROGRAM INPUT FUNCTION`: its output (the first line) and its evaluate timings."""
    try:
        done = subprocess.run([str(exe), str(input_file), case.function], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return Result(case.name, exe.parent.name, False, error=f"ran past {timeout:.0f} s")
    if done.returncode != 0:
        why = f"exit {done.returncode}" if done.returncode > 0 else f"signal {-done.returncode}"
        return Result(case.name, exe.parent.name, False, error=f"{why}: {first_error(done.stderr)}")
    lines = done.stdout.splitlines()
    try:
        output = json.loads(lines[0])
        timings = [json.loads(line) for line in lines[1:] if line.strip()]
    except (IndexError, json.JSONDecodeError) as exc:
        return Result(case.name, exe.parent.name, False, error=f"unreadable output: {exc}")
    evaluate = sorted(t["nanoseconds"] for t in timings if t.get("name") == "evaluate")
    return Result(case.name, exe.parent.name, True, _median_ms(evaluate), evaluate, output)


def _median_ms(sorted_ns: list[int]) -> float | None:
    return sorted_ns[len(sorted_ns) // 2] / 1e6 if sorted_ns else None


def run_processes(exe: Path, case: Case, input_file: Path, timeout: float, processes: int) -> Result:
    """A program evaluating once per run (an input with no min_runs: hello's bare number), run in
    `processes` processes: their evaluations' median, as one run's is of its evaluations (one
    evaluation of a few nanoseconds, taken once, moves with the timer and the process's cold start)."""
    runs = [run(exe, case, input_file, timeout) for _ in range(processes)]
    failed = next((r for r in runs if not r.ok), None)
    if failed is not None:
        return failed
    timings = sorted(t for r in runs for t in r.timings_ns)
    return Result(case.name, exe.parent.name, True, _median_ms(timings), timings, runs[0].output)


def best(earlier: Result | None, now: Result) -> Result:
    """Of one case's runs by one tool, the fastest; a run that fails fails the case."""
    if earlier is None or not earlier.ok:
        return earlier or now
    if not now.ok or (now.ms is not None and (earlier.ms is None or now.ms < earlier.ms)):
        return now
    return earlier


def central_differences(exe: Path, value: dict, probe: Probe, work: Path, timeout: float) -> list[float] | None:
    """The gradient of the program's own primal function (`PROGRAM INPUT primal`, evaluated once)
    by central differences in each number of the probed field; None where a run fails."""
    def primal(changed: dict) -> float | None:
        path = work / "probe.json"
        path.write_text(json.dumps(changed | {"min_runs": 1, "min_seconds": 0}))
        result = run(exe, Case("", "primal", "", "", lambda _: None), path, timeout)
        return probe.scalar(result.output) if result.ok else None

    gradient = []
    for k, x in enumerate(value[probe.field]):
        h = STEP * max(1.0, abs(x))
        sides = []
        for sign in (1, -1):
            numbers = list(value[probe.field])
            numbers[k] = x + sign * h
            sides.append(primal(value | {probe.field: numbers}))
        if None in sides:
            return None
        gradient.append((sides[0] - sides[1]) / (2 * h))
    return gradient


# --- comparing ---------------------------------------------------------------------------------

def _numbers(value: Any, path: str = "") -> list[tuple[str, float]]:
    if isinstance(value, bool) or value is None:
        return [(path, float(bool(value)))]
    if isinstance(value, (int, float)):
        return [(path, float(value))]
    if isinstance(value, list):
        return [n for k, v in enumerate(value) for n in _numbers(v, f"{path}[{k}]")]
    if isinstance(value, dict):
        return [n for k in sorted(value) for n in _numbers(value[k], f"{path}.{k}")]
    raise TypeError(f"{path}: {type(value).__name__} in the output")


def difference(got: Any, want: Any) -> float:
    """The largest |a - b| / max(|a|, |b|, FLOOR * max |want|) over the outputs' numbers; inf where
    their shapes differ (other keys, other lengths) or a number is not finite where the other is."""
    a, b = _numbers(got), _numbers(want)
    if [p for p, _ in a] != [p for p, _ in b]:
        return math.inf
    scale = max((abs(v) for _, v in b if math.isfinite(v)), default=0.0)
    worst = 0.0
    for (_, x), (_, y) in zip(a, b):
        if x == y:
            continue
        if not (math.isfinite(x) and math.isfinite(y)):
            return math.inf
        worst = max(worst, abs(x - y) / max(abs(x), abs(y), FLOOR * scale, sys.float_info.min))
    return worst


def normwise(got: Any, want: list[float]) -> float:
    """max |a - b| over max |b|, as central differences are compared (their error is absolute)."""
    a = [v for _, v in _numbers(got)]
    if len(a) != len(want) or not all(math.isfinite(v) for v in a):
        return math.inf
    return max(abs(x - y) for x, y in zip(a, want)) / max(max(abs(y) for y in want), sys.float_info.min)


# --- the report --------------------------------------------------------------------------------

def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def _cell(result: Result | None, built: Build | None) -> str:
    if built is None:
        return "—"
    if not built.ok:
        return "build failed"
    if result is None:
        return ""
    return _ms(result.ms) if result.ok else f"run failed: {result.error}"[:120]


def _diff(result: Result | None, tolerance: float = TOLERANCE) -> str:
    if result is None or not result.ok or result.difference is None:
        return "—"
    d = result.difference
    return "shape differs" if math.isinf(d) else f"{d:.1e}" + ("" if d <= tolerance else " ✗")


def _status(built: Build | None) -> str:
    if built is None:
        return "—"
    if built.ok:
        return f"ok ({built.seconds:.0f} s)" if built.seconds else "ok (reused)"
    error = built.error if len(built.error) <= 160 else built.error[:157] + "..."
    return f"FAIL: `{error.replace('`', chr(39))}`"


def wrong_on_check(chosen: list[Case], results: dict) -> set[tuple[str, str]]:
    """(tool, program) pairs whose gradient on a check input is off the central differences: their
    timed cells are marked, a time of a wrong gradient being no time to compare with."""
    return {(tool, c.program) for c in chosen if c.size == "check" for tool in TOOLS
            if (r := results.get((c.name, tool))) is not None and r.ok and r.difference is not None
            and r.difference > CHECK_TOLERANCE}


WRONG_MARK = " †"
WRONG_NOTE = (f"({WRONG_MARK.strip()}: the tool's gradient of this program is off the central differences on "
              "the check input below; its time is that of a wrong gradient.)")


def table(size: str, chosen: list[Case], builds: dict, results: dict, enzyme: bool,
          wrong: set[tuple[str, str]] = frozenset()) -> list[str]:
    lines = [f"### {size} inputs", "",
             "| program | input | manual ms | adgen ms | Enzyme ms | adgen/Enzyme | max rel. diff adgen vs manual "
             "| Enzyme vs manual | adgen build status |",
             "|---|---|---|---|---|---|---|---|---|"]
    for k, case in enumerate(chosen):
        first = k == 0 or chosen[k - 1].program != case.program  # (the build's status on its first row)
        r = {tool: results.get((case.name, tool)) for tool in TOOLS}
        b = {tool: builds.get((tool, case.program)) for tool in TOOLS}
        ratio = ""
        if r["adgen"] and r["enzyme"] and r["adgen"].ok and r["enzyme"].ok and r["enzyme"].ms:
            ratio = f"{r['adgen'].ms / r['enzyme'].ms:.2f}"
        cell = {tool: _cell(r[tool], b[tool]) + (WRONG_MARK if (tool, case.program) in wrong and r[tool]
                                                 and r[tool].ok else "") for tool in TOOLS}
        if ratio and {("adgen", case.program), ("enzyme", case.program)} & wrong:
            ratio += WRONG_MARK
        manual = "(eval's constant)" if case.reference is not None else cell["manual"]
        program = case.program if case.program not in ("particle", "saddle") else f"{case.program} {case.function}"
        lines.append("| " + " | ".join([
            program, f"{case.function} {case.label}" if program == case.program else case.label, manual,
            cell["adgen"], cell["enzyme"] if enzyme else "not run", ratio,
            _diff(r["adgen"]), _diff(r["enzyme"]) if enzyme else "—",
            _status(b["adgen"]) if first else "″"]) + " |")
    return lines


def check_table(chosen: list[Case], builds: dict, results: dict, enzyme: bool) -> list[str]:
    lines = ["### check inputs: each gradient against central differences of the program's primal", "",
             "| program | input | adgen | Enzyme | manual |", "|---|---|---|---|---|"]
    for case in chosen:
        cells = [_diff(results.get((case.name, tool)), CHECK_TOLERANCE) if builds.get((tool, case.program)) and
                 builds[tool, case.program].ok else _status(builds.get((tool, case.program)))
                 for tool in ("adgen", "enzyme", "manual")]
        if not enzyme:
            cells[1] = "not run"
        lines.append(f"| {case.program} | {case.function} {case.label} | " + " | ".join(cells) + " |")
    return lines + ["", f"(max |a − b| / max |b|, b: central differences, step {STEP:g} × max(1, |x|); ✗: more "
                        f"than {CHECK_TOLERANCE:g}.)"]


def tables(data: dict) -> str:
    """A record file's tables (one per input size), the other tools' build failures and the summary."""
    chosen = [c for c in cases() if c.name in set(data["settings"].get("cases", []))]
    builds = {(b["tool"], b["program"]): Build(**b) for b in data.get("builds", [])}
    results = {(r["case"], r["tool"]): Result(**r) for r in data["records"]}
    enzyme = data["settings"].get("enzyme", False)
    wrong = wrong_on_check(chosen, results)
    text = []
    for size in SIZES:
        mine = [c for c in chosen if c.size == size]
        if mine:
            made = check_table(mine, builds, results, enzyme) if size == "check" else \
                table(size, mine, builds, results, enzyme, wrong)
            if size != "check" and any(WRONG_MARK in line for line in made):
                made += ["", WRONG_NOTE]
            text += made + [""]
    failed = sorted((b for b in builds.values() if not b.ok and b.tool != "adgen"), key=lambda b: TOOLS.index(b.tool))
    if failed:
        text += ["Build failures of the other tools:", ""]
        text += [f"- {b.program}, {b.tool}: `{b.error}`" for b in failed] + [""]
    if data.get("summary"):
        text += [f"**{data['summary']}.**", ""]
    return "\n".join(text)


# --- the command -------------------------------------------------------------------------------

def parse(argv: list[str] | None = None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="python -m bench.gradbench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("gradbench", type=Path, metavar="GRADBENCH_SRC",
                        help="a checkout of github.com/gradbench/gradbench")
    parser.add_argument("--enzyme", type=Path, metavar="PLUGIN", help="Enzyme's clang plugin (ClangEnzyme-19.so)")
    parser.add_argument("--enzyme-cc", default="clang-19", metavar="CLANG",
                        help="the clang the plugin was built for (default clang-19; its C++ driver: the same "
                             "name with ++)")
    parser.add_argument("--json-include", type=Path, metavar="DIR",
                        help="where nlohmann's json.hpp is: a folder with json.hpp or nlohmann/json.hpp, or a "
                             "checkout of github.com/nlohmann/json (default: nlohmann/ on the usual include paths)")
    parser.add_argument("--manual-cxx", metavar="CXX",
                        help="the C++ compiler for GradBench's manual tool (default: clang++-19, else c++)")
    parser.add_argument("--only", metavar="NAMES", help="these programs only, comma-separated (e.g. hello,gmm)")
    parser.add_argument("--quick", action="store_true", help="the smallest inputs only")
    parser.add_argument("--reps", type=int, default=5, help="evaluations per run, the program's min_runs "
                                                             "(default 5; the median is reported)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of each timed case by each tool, the tools in turn (default 3; the fastest "
                             "run's median is reported)")
    parser.add_argument("--processes", type=int, default=101,
                        help="processes per round for an input that carries no min_runs (hello's bare number, "
                             "evaluated once per process; default 101, their evaluations' median is reported)")
    parser.add_argument("--min-seconds", type=float, default=1.0,
                        help="seconds a run evaluates for at least, the program's min_seconds (default 1, "
                             "GradBench's evals' own)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a run may take (default 600)")
    parser.add_argument("--build-timeout", type=float, default=1800, help="seconds a build may take (default 1800)")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse the executables an earlier run left in DIR/bin instead of building again")
    parser.add_argument("-o", dest="out", type=Path, default=Path("build/gradbench"),
                        help="the folder for work files (default build/gradbench)")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="write the records as JSON, with the machine and commit they were measured on "
                             "(for python -m bench --report DIR --from FILE)")
    parser.add_argument("--markdown", type=Path, default=ROOT / "bench" / "results" / "gradbench.md",
                        help="where to write the tables (default bench/results/gradbench.md)")
    args = parser.parse_args(argv)
    check_enzyme(parser, args)
    args.enzyme_cxx = args.enzyme_cc.replace("clang", "clang++")
    if args.enzyme is not None and shutil.which(args.enzyme_cxx) is None:
        parser.error(f"--enzyme needs {args.enzyme_cxx}, the C++ driver of {args.enzyme_cc}")
    src = args.gradbench
    missing = [p for p in ("tools/enzyme", "tools/manual", "cpp/gradbench/main.hpp") if not (src / p).exists()]
    if missing:
        parser.error(f"{src}: no {', '.join(missing)} there (a checkout of github.com/gradbench/gradbench is "
                     "needed; a partial clone: `git checkout HEAD -- tools cpp evals`)")
    args.only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else list(PROGRAMS)
    unknown = [n for n in args.only if n not in PROGRAMS]
    if unknown:
        parser.error(f"--only: no program {', '.join(unknown)} (GradBench's are {', '.join(PROGRAMS)})")
    args.json_folder = json_folder(args.json_include)
    if args.json_folder is None:
        where = f"{args.json_include} (nor its nlohmann/ or single_include/nlohmann/)" if args.json_include else \
            " or ".join(f"{p}/nlohmann" for p in INCLUDE_PATHS)
        parser.error(f"no json.hpp in {where}: GradBench's programs need nlohmann's json.hpp (v3.11.3, which "
                     "GradBench's cpp/Makefile downloads); give its folder with --json-include DIR")
    if args.manual_cxx is None:
        args.manual_cxx = next((c for c in ("clang++-19", "c++", "g++") if shutil.which(c)), "c++")
    elif shutil.which(args.manual_cxx) is None:
        parser.error(f"--manual-cxx {args.manual_cxx}: not found")
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.processes < 1:
        parser.error("--processes must be at least 1")
    return parser, args


def main(argv: list[str] | None = None) -> int:
    parser, args = parse(argv)
    src, work = args.gradbench.resolve(), args.out.resolve()
    chosen = [c for c in cases() if c.program in args.only and (not args.quick or c.size != "larger")]
    tools = ["manual", "adgen"] + (["enzyme"] if args.enzyme else [])
    (work / "inputs").mkdir(parents=True, exist_ok=True)
    inputs: dict[str, Path] = {}
    once: set[str] = set()  # cases whose input carries no min_runs: run in --processes processes
    for case in chosen:
        path = work / "inputs" / f"{case.program}-{case.size}.json"
        if path not in inputs.values():
            value = case.make(src)
            if isinstance(value, dict):
                value = value | ({"min_runs": 1, "min_seconds": 0} if case.probe else  # (checked, not timed)
                                 {"min_runs": args.reps, "min_seconds": args.min_seconds})
            path.write_text(json.dumps(value))
        inputs[case.name] = path
        if not isinstance(json.loads(path.read_text()), dict):
            once.add(case.name)

    builds: dict[tuple[str, str], Build] = {}
    results: dict[tuple[str, str], Result] = {}
    for program in args.only:
        mine = [c for c in chosen if c.program == program]
        for tool in tools:
            if tool == "manual" and not (src / "tools" / "manual" / f"{program}.cpp").is_file():
                continue  # (particle, saddle: the eval's constant is the reference)
            built = builds[tool, program] = build(tool, program, src, args.json_folder, work, args)
            print(f"{program:<9} {tool:<7} build {'ok' if built.ok else 'FAILED'} ({built.seconds:.0f} s)"
                  + ("" if built.ok else f": {built.error}"), flush=True)
        ready = [t for t in tools if (b := builds.get((t, program))) and b.ok]
        for round_ in range(args.rounds):  # the tools in turn, so that the machine's drift falls on each alike
            for case in mine:
                if case.probe is not None and round_:
                    continue  # (checked, not timed: once)
                for tool in ready:
                    exe = work / "bin" / tool / program
                    result = run_processes(exe, case, inputs[case.name], args.timeout, args.processes) \
                        if case.name in once else run(exe, case, inputs[case.name], args.timeout)
                    results[case.name, tool] = best(results.get((case.name, tool)), result)
                    print(f"  {case.name:<28} {tool:<7} " + (f"{_ms(result.ms)} ms" if result.ok else result.error)
                          + (f"  (round {round_ + 1} of {args.rounds})" if args.rounds > 1 else ""), flush=True)
        for case in mine:
            if case.probe is not None:  # (against central differences of the primal, every tool)
                exe = next((work / "bin" / t / program for t in tools if (b := builds.get((t, program))) and b.ok),
                           None)
                value = json.loads(inputs[case.name].read_text())
                want = None if exe is None else central_differences(exe, value, case.probe, work, args.timeout)
                for tool in tools:
                    result = results.get((case.name, tool))
                    if result and result.ok and want is not None:
                        result.difference = normwise(result.output, want)
                continue
            reference = results.get((case.name, "manual"))
            want = case.reference if case.reference is not None else \
                (reference.output if reference and reference.ok else None)
            for tool in ("adgen", "enzyme"):
                result = results.get((case.name, tool))
                if result and result.ok and want is not None:
                    result.difference = difference(result.output, want)

    # the report
    def good(tool: str, program: str) -> bool:
        mine = [c for c in chosen if c.program == program]
        return all((r := results.get((c.name, tool))) is not None and r.ok and r.difference is not None
                   and r.difference <= (TOLERANCE if c.probe is None else CHECK_TOLERANCE) for c in mine)

    built = {tool: [p for p in args.only if (b := builds.get((tool, p))) and b.ok] for tool in tools}
    agree = {tool: [p for p in built[tool] if good(tool, p)] for tool in tools if tool != "manual"}
    summary = f"adgen builds {len(built['adgen'])} of {len(args.only)}, agrees on {len(agree['adgen'])}; " + (
        f"Enzyme builds {len(built['enzyme'])} (agrees on {len(agree['enzyme'])})" if args.enzyme
        else "Enzyme not run (no --enzyme)")
    _, from_eval = lstm_text(src, 8192) if "lstm" in args.only else ("", True)
    text = [
        f"GradBench's C++ programs for Enzyme (gradbench {commit(src, 'tools', 'cpp')}, tools/enzyme/*.cpp "
        f"unchanged), built by `adgen c++` (adgen {commit(ROOT)}); {machine()}.", "",
        f"- adgen: `adgen c++ {' '.join(AD_FLAGS)}`; Enzyme: `{args.enzyme_cxx} -fplugin=ClangEnzyme-19.so "
        f"{' '.join(AD_FLAGS)}` (Enzyme's clang plugin, not the Makefile's -flto with LLDEnzyme-19.so), "
        + (f"{_version(args.enzyme_cxx)}" if args.enzyme else "not run") + f"; manual (GradBench's hand-written "
        f"derivatives): `{args.manual_cxx} {' '.join(COMMON)}` ({_version(args.manual_cxx)}). Each with `-I cpp` "
        "and nlohmann's json.hpp.",
        "- Time: the median of the \"evaluate\" timings each program reports itself "
        f"(GradBench's protocol: cpp/gradbench/main.hpp, min_runs = {args.reps}, min_seconds = "
        f"{args.min_seconds:g}: at least {args.reps} evaluations, for at least {args.min_seconds:g} s), ms, the "
        f"derivative function only (not reading the input); the fastest of {args.rounds} such runs, the tools in "
        "turn. Timings on a shared machine are indicative only.",
        "- Max rel. diff: the largest |a - b| / max(|a|, |b|, 1e-12 × the reference's largest magnitude) over "
        "the output's numbers, against manual's output (particle, saddle: the constant GradBench's eval expects; "
        f"there is no manual tool for them); agreement: ≤ {TOLERANCE:g} (✗ marks more).",
        "- Inputs: GradBench's eval generators (python/gradbench/gradbench/evals/*/run.py) need pydantic, "
        "scipy and dataclasses_json, which the dev venv lacks, so bench/gradbench/inputs.py writes each out again "
        "with numpy (the same seeds, draws and data files); lstm's generator is unseeded in GradBench (seeded "
        "with 31337 here)" + ("" if from_eval else f", and its text evals/lstm/data/lstm_full.txt is not in this "
                              f"checkout: {LSTM_TEXT_NOTE}") + ".",
        "- hello, particle and saddle have one input each (in the smallest table only); hello's input is a "
        "bare number, which carries no min_runs: it is evaluated once per run, so each round runs it in "
        f"{args.processes} processes (--processes) and takes their evaluations' median.", ""]
    records = {"builds": [asdict(b) for b in builds.values()],
               "results": [asdict(r) | {"output": None} for r in results.values()],
               "summary": summary}
    settings = {"reps": args.reps, "rounds": args.rounds, "processes": args.processes,
                "min_seconds": args.min_seconds, "quick": args.quick, "enzyme": bool(args.enzyme),
                "programs": args.only,
                "cases": [c.name for c in chosen], "gradbench_commit": commit(src, "tools", "cpp"),
                "manual_cxx": f"{args.manual_cxx} ({_version(args.manual_cxx)})",
                "enzyme_cxx": f"{args.enzyme_cxx} ({_version(args.enzyme_cxx)})" if args.enzyme else None}
    data = envelope("gradbench", records["results"], settings, builds=records["builds"], summary=summary)
    report = "\n".join(text) + "\n" + tables(data)
    print("\n" + report)
    args.markdown.parent.mkdir(parents=True, exist_ok=True)
    args.markdown.write_text(report)
    (work / "results.json").write_text(json.dumps(records, indent=1))
    print(f"wrote {args.markdown} and {work / 'results.json'}")
    if args.json:
        write_records(args.json, data)
        print(f"wrote {args.json}")
    return 0 if all(p in agree["adgen"] for p in args.only) else 1


if __name__ == "__main__":
    sys.exit(main())
