"""`python -m bench.programs [--enzyme PLUGIN] [--quick] [--reps N] [--build-rounds N] [-o DIR] [--json FILE]`:
programs of a real program's size (bench/programs: a small GPT-2 training loss and a three-layer
perceptron, each with a backward pass written by hand), built with adgen, with clang and, given
Enzyme's clang-19 plugin, with Enzyme, each tool's build time on the file measured (the median of
N rounds, default 5, the tools in turn in each). Then each way of computing runs
in a process of its own: the primal loss, the hand-written forward+backward, adgen's gradient and
Enzyme's, each the median of N timed calls (default 5) after one warm-up, with the process's peak
resident memory (VmHWM: the parameter and activation blocks, their shadows, and
what the derivative allocates). adgen's and Enzyme's gradients are compared with the hand-written
one; a relative error above 1e-4 fails the run. Writes DIR/programs.md (default
build/bench/programs.md) and prints it; --json FILE writes the records (bench/records.py), for
`python -m bench --report DIR --from FILE`. --quick uses smaller sizes. --openmp builds everything with
-fopenmp (bench/programs/gpt2.c's matmuls, attention and softmax then run in parallel, and the
hand-written matmul backward) and times each way on OpenMP teams of 1 and 2 threads
(DIR/programs-openmp.md)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench import check_enzyme
from bench.records import envelope, write as write_records
from bench.programs import PROGRAMS, Program
from bench.programs.build import Built, build
from bench.programs.measure import Run, mb, ms, relative_error, row, run

TOLERANCE = 1e-4


THREADS = (1, 2)  # the team sizes of --openmp
FORKED = "adgen-forked"  # --openmp: adgen's gradient with every region's reverse sweep forked, atomic adds or not


def measure(program: Program, sizes: tuple[int, ...], reps: int, work: Path, enzyme: Path | None,
            enzyme_cc: str, openmp: bool = False, rounds: int = 1) -> tuple[Built, dict, dict[str, float]]:
    """Builds and runs one program; returns the build, the runs by mode (by mode and team size,
    with `openmp`) and each tool's gradient's relative error against the hand-written one."""
    built = build(program, work, enzyme, enzyme_cc, openmp, rounds)
    modes = ("primal", "hand", "adgen") + (("enzyme",) if enzyme is not None else ())
    if openmp:
        modes = modes[:3] + (FORKED,) + modes[3:]
        runs = {(mode, t): run(built.executable, mode, reps, sizes, work, t) for mode in modes for t in THREADS}
        errors = {f"{mode} on {t}": relative_error(runs[mode, t].gradient, runs["hand", 1].gradient)
                  for mode in modes[1:] for t in THREADS}
        return built, runs, errors
    runs = {mode: run(built.executable, mode, reps, sizes, work) for mode in modes}
    errors = {mode: relative_error(runs[mode].gradient, runs["hand"].gradient) for mode in modes[2:]}
    return built, runs, errors


def parallel_table(results, reps: int) -> str:
    """--openmp: each way's time on one thread and on two, and what two gain."""
    label = {"primal": "primal (the loss)", "hand": "hand-written forward+backward", "adgen": "adgen's gradient",
             FORKED: "adgen's, reverse sweeps forked (ADGEN_PARALLEL_REVERSE=always)", "enzyme": "Enzyme's gradient"}
    lines = [f"Built with -fopenmp; time (median of {reps} after a warm-up) on OpenMP teams of 1 and 2 threads, "
             "peak resident memory on 2:", "",
             row(["program", "", "1 thread ms", "2 threads ms", "1 / 2 threads", "× hand-written (2 threads)",
                   "peak MB"]), "|---|---|---|---|---|---|---|"]
    for program, sizes, _, runs, _ in results:
        modes = [m for m in label if (m, 1) in runs]
        for mode in modes:
            one, two = runs[mode, 1].median_s, runs[mode, 2].median_s
            lines.append(row([f"{program.name} ({program.describe(sizes)})" if mode == "primal" else "",
                               label[mode], ms(one), ms(two), f"{one / two:.2f}",
                               "" if mode == "primal" else f"{two / runs['hand', 2].median_s:.2f}",
                               mb(runs[mode, 2].peak_bytes)]))
    return "\n".join(lines) + "\n"


def tables(results: list[tuple[Program, tuple[int, ...], Built, dict[str, Run], dict[str, float]]],
           reps: int) -> str:
    enzyme = all("enzyme" in runs for _, _, _, runs, _ in results)
    tools = ["hand", "adgen"] + (["enzyme"] if enzyme else [])
    label = {"primal": "primal (the loss)", "hand": "hand-written forward+backward", "adgen": "adgen's gradient",
             "enzyme": "Enzyme's gradient"}
    lines = [f"Time (median of {reps} after a warm-up) and peak resident memory (VmHWM of a process "
             "running that alone); gradients' relative error against the hand-written one:", ""]
    lines += [row(["program", "", "time ms", "× primal", "× hand-written", "peak MB", "relative error"]),
              "|---|---|---|---|---|---|---|"]
    for program, sizes, _, runs, errors in results:
        primal, hand = runs["primal"].median_s, runs["hand"].median_s
        for mode in ["primal"] + tools:
            r = runs[mode]
            lines.append(row([f"{program.name} ({program.describe(sizes)})" if mode == "primal" else "",
                               label[mode], ms(r.median_s), f"{r.median_s / primal:.2f}",
                               "" if mode == "primal" else f"{r.median_s / hand:.2f}", mb(r.peak_bytes),
                               f"{errors[mode]:.1e}" if mode in errors else ""]))
    rounds = results[0][2].rounds if results else 1
    lines += ["", f"Build time of each tool on the file, seconds (median of {rounds} rounds, the tools in turn in "
                  "each; adgen's stages from one more build with -v: differentiation, then optimizing and "
                  "compiling the derivative module, in parts at once where it is large):", ""]
    columns = ["program", "clang -O2", "adgen build", "differentiate", "compile"]
    columns += ["clang-19 -O2", "clang-19 -O2 + Enzyme", "adgen / (clang-19 + Enzyme)"] if enzyme else []
    lines += [row(columns), "|" + "---|" * len(columns)]
    for program, _, built, _, _ in results:
        stages = dict(built.adgen_stages)
        cells = [program.name, f"{built.seconds['clang']:.2f}", f"{built.seconds['adgen']:.2f}",
                 f"{stages.get('differentiate', 0):.2f}", f"{stages.get('compile', 0):.2f}"]
        if enzyme:
            cells += [f"{built.seconds['clang-19']:.2f}", f"{built.seconds['clang-19 + Enzyme']:.2f}",
                      f"{built.seconds['adgen'] / built.seconds['clang-19 + Enzyme']:.2f}"]
        lines.append(row(cells))
    return "\n".join(lines) + "\n"


def records(results, openmp: bool) -> tuple[list[dict], list[dict]]:
    """The runs (one record per program, way and, with --openmp, team size) and the builds, as
    --json writes them."""
    runs, builds = [], []
    for program, sizes, built, by_mode, errors in results:
        for key, r in by_mode.items():
            mode, threads = key if openmp else (key, None)
            error = errors.get(f"{mode} on {threads}" if openmp else mode)
            runs.append(dict(program=program.name, sizes=dict(zip(program.size_names, sizes)), mode=mode,
                             threads=threads, loss=r.loss, median_s=r.median_s, min_s=r.min_s,
                             peak_bytes=r.peak_bytes, relative_error=error))
        builds.append(dict(program=program.name, seconds=built.seconds, adgen_stages=built.adgen_stages,
                           rounds=built.rounds))
    return runs, builds


def results_from(data: dict) -> list:
    """Saved records (a record file's) as `tables` and `parallel_table` take them."""
    by_name = {p.name: p for p in PROGRAMS}
    builds = {b["program"]: b for b in data.get("builds", [])}
    openmp = data["settings"].get("openmp", False)
    results = []
    for name in dict.fromkeys(r["program"] for r in data["records"]):
        mine = [r for r in data["records"] if r["program"] == name]
        program = by_name.get(name) or Program(name, tuple(mine[0]["sizes"]), (), (), ())
        sizes = tuple(mine[0]["sizes"][size] for size in program.size_names)
        b = builds.get(name, {})
        built = Built(Path(name), b.get("seconds", {}), [tuple(s) for s in b.get("adgen_stages", [])],
                      b.get("rounds", 1))
        runs = {(r["mode"], r["threads"]) if openmp else r["mode"]:
                Run(r["mode"], r["loss"], r["median_s"], r["min_s"], r["peak_bytes"], None) for r in mine}
        errors = {f"{r['mode']} on {r['threads']}" if openmp else r["mode"]: r["relative_error"]
                  for r in mine if r["relative_error"] is not None}
        results.append((program, sizes, built, runs, errors))
    return results


def markdown(data: dict) -> str:
    """A record file's tables, as programs.md (or programs-openmp.md) has them."""
    results, reps = results_from(data), data["settings"].get("reps", 5)
    return parallel_table(results, reps) if data["settings"].get("openmp") else tables(results, reps)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.programs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--enzyme", type=Path, metavar="PLUGIN", help="Enzyme's clang plugin (ClangEnzyme-19.so)")
    parser.add_argument("--enzyme-cc", default="clang-19", metavar="CLANG",
                        help="the clang the plugin was built for (default: clang-19)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--reps", type=int, default=5, help="timed calls per measurement (default 5)")
    parser.add_argument("--build-rounds", type=int, default=5, metavar="N",
                        help="build each program N times with each tool, in turn, and take each tool's median "
                             "(default 5)")
    parser.add_argument("-o", dest="out", type=Path, default=Path("build/bench"),
                        help="where to write programs.md (default: build/bench)")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="write the records as JSON, with the machine and commit they were measured on "
                             "(for python -m bench --report DIR --from FILE)")
    parser.add_argument("--openmp", action="store_true",
                        help="build with -fopenmp and time each way on teams of 1 and 2 threads (writes "
                             "programs-openmp.md; needs libomp)")
    args = parser.parse_args()
    check_enzyme(parser, args)
    results, wrong = [], []
    with tempfile.TemporaryDirectory(prefix="adgen-programs-") as tmp:
        for program in PROGRAMS:
            sizes = program.quick if args.quick else program.full
            built, runs, errors = measure(program, sizes, args.reps, Path(tmp) / program.name,
                                          args.enzyme.resolve() if args.enzyme else None, args.enzyme_cc, args.openmp,
                                          args.build_rounds)
            results.append((program, sizes, built, runs, errors))
            wrong += [f"{program.name}: {mode}'s gradient, relative error {error:.1e}"
                      for mode, error in errors.items() if not error <= TOLERANCE]
    text = parallel_table(results, args.reps) if args.openmp else tables(results, args.reps)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "programs-openmp.md" if args.openmp else "programs.md"
    (args.out / name).write_text(text)
    print(f"wrote {args.out / name}")
    if args.json:
        runs, builds = records(results, args.openmp)
        settings = {"quick": args.quick, "reps": args.reps, "build_rounds": args.build_rounds, "openmp": args.openmp,
                    "enzyme": args.enzyme is not None}
        write_records(args.json, envelope("programs", runs, settings, builds=builds))
        print(f"wrote {args.json}")
    if wrong:
        print("WRONG GRADIENTS (against the hand-written one, tolerance 1e-4):\n  " + "\n  ".join(wrong),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
