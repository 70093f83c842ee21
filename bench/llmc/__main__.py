"""`python -m bench.llmc LLMC_SRC [--enzyme PLUGIN] [--reps N] [--build-rounds N] [--quick] [-o DIR]
[--json FILE]`:
llm.c's GPT-2 as written (LLMC_SRC: a checkout of github.com/karpathy/llm.c, which adgen's
developers bring with `fetch`; its train_gpt2.c is included unchanged by bench/llmc/llmc_loss.c).

Builds llmc_loss.c with adgen, and with clang (the one adgen bundles) for the primal and llm.c's
hand-written backward pass (gpt2_backward), and, given Enzyme's clang-19 plugin, llmc_enzyme.c with
clang-19 and the plugin; each tool's build time on the file is the median of N rounds (default 3),
the tools in turn in each. Twice: without OpenMP (one thread), and with -fopenmp (llm.c's own
pragmas: matmuls, attention, softmax), timed on teams of 1 and 2 threads. Each way of computing
runs in a process of its own (bench/programs/harness.c): the primal loss, llm.c's forward+backward
step, adgen's gradient and Enzyme's, each the median of N timed calls (default 5) after a warm-up,
with the process's peak resident memory (VmHWM). Every gradient is compared with llm.c's own; a
relative error above 1e-4 fails the run. Two configurations: small (B=4 T=64 C=128 L=4 NH=4
V=512, 867k parameters) and large (B=4 T=128 C=256 L=6 NH=8 V=512); --quick runs the small one
only. Writes DIR/llmc.md (default build/bench) and prints it; --json FILE writes the records
(bench/records.py), for `python -m bench --report DIR --from FILE`."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from adgen.base.toolchain import bundled_cc, openmp_link_flags, select_compiler
from bench import check_enzyme
from bench.records import commit, envelope, write as write_records
from bench.llmc import CONFIGS, HERE, Config
from bench.programs import HERE as PROGRAMS
from bench.programs.build import _timed
from bench.programs.measure import Run, mb, ms, relative_error, row, run

TOLERANCE = 1e-4
CC = [*bundled_cc(), "-O2", "-fno-math-errno"]
THREADS = (1, 2)
LABEL = {"primal": "primal (the loss)", "hand": "llm.c's forward+backward (hand-written)",
         "adgen": "adgen's gradient", "enzyme": "Enzyme's gradient"}


@dataclass
class Built:
    executable: Path
    seconds: dict[str, float] = field(default_factory=dict)  # tool -> median seconds on the file


def build(src: Path, work: Path, enzyme: Path | None, enzyme_cc: str, openmp: bool, rounds: int) -> Built:
    """One executable running every way (harness.c), its tools timed on llmc_loss.c."""
    work.mkdir(parents=True, exist_ok=True)
    parallel = ["-fopenmp"] if openmp else []
    includes = ["-I", str(src), "-I", str(HERE), "-I", str(PROGRAMS), "-I", str(work)]
    loss = HERE / "llmc_loss.c"
    steps = {"adgen": [sys.executable, "-m", "adgen.commands.cli", "build", "-q", str(loss), "-I", str(src), "-o",
                       str(work), *(["--", *parallel] if parallel else [])],
             "clang": [*CC, *parallel, "-w", "-I", str(src), "-c", str(loss), "-o", str(work / "llmc_loss.o")]}
    objects = [work / "llmc_loss.adgen.o"]
    defines = ["-DWITH_ADGEN"]
    if enzyme is not None:
        base = [enzyme_cc, "-O2", "-fno-math-errno", "-w", *parallel, "-I", str(src), "-I", str(HERE), "-c",
                str(HERE / "llmc_enzyme.c")]
        steps["clang-19"] = [*base, "-o", str(work / "llmc_enzyme_plain.o")]
        steps["clang-19 + Enzyme"] = [*base, f"-fplugin={enzyme}", "-o", str(work / "llmc_enzyme.o")]
        objects.append(work / "llmc_enzyme.o")
        defines.append("-DWITH_ENZYME")
    times: dict[str, list[float]] = {tool: [] for tool in steps}
    for _ in range(rounds):
        for tool, command in steps.items():
            times[tool].append(_timed(command)[0])
    built = Built(work / ("llmc-openmp" if openmp else "llmc"),
                  {tool: sorted(runs)[len(runs) // 2] for tool, runs in times.items()})
    if enzyme is not None:  # its copy of llm.c local to it, beside llmc_bench.c's
        subprocess.run(["objcopy", "--keep-global-symbol=llmc_enzyme_grad", str(work / "llmc_enzyme.o")], check=True)
    runtime = openmp_link_flags(select_compiler(None), parallel)
    _timed([*CC, *parallel, "-w", *defines, *includes, str(PROGRAMS / "harness.c"), str(HERE / "llmc_bench.c"),
            *map(str, objects), *runtime, "-lm", "-o", str(built.executable)], fresh_cache=False)
    return built


def measure(built: Built, config: Config, modes: tuple[str, ...], reps: int, work: Path,
            threads: int | None) -> dict[str, Run]:
    return {mode: run(built.executable, mode, reps, config.sizes, work, threads) for mode in modes}


def serial_table(config: Config, runs: dict[str, Run], errors: dict[str, float]) -> list[str]:
    hand = runs["hand"]
    lines = [row(["way", "time ms", "× hand-written", "peak MB", "× hand-written memory", "relative error"]),
             "|---|---|---|---|---|---|"]
    for mode, r in runs.items():
        lines.append(row([LABEL[mode], ms(r.median_s), "" if mode == "primal" else f"{r.median_s / hand.median_s:.2f}",
                           mb(r.peak_bytes), "" if mode == "primal" else f"{r.peak_bytes / hand.peak_bytes:.2f}",
                           f"{errors[mode]:.1e}" if mode in errors else ""]))
    return lines


def parallel_table(runs: dict[tuple[str, int], Run], errors: dict[str, float], modes: tuple[str, ...]) -> list[str]:
    lines = [row(["way", "1 thread ms", "2 threads ms", "1 / 2 threads", "× hand-written (2 threads)",
                   "peak MB (2 threads)", "relative error (2 threads)"]), "|---|---|---|---|---|---|---|"]
    hand = runs["hand", 2].median_s
    for mode in modes:
        one, two = runs[mode, 1].median_s, runs[mode, 2].median_s
        lines.append(row([LABEL[mode], ms(one), ms(two), f"{one / two:.2f}",
                           "" if mode == "primal" else f"{two / hand:.2f}", mb(runs[mode, 2].peak_bytes),
                           f"{errors[f'{mode} on 2']:.1e}" if f"{mode} on 2" in errors else ""]))
    return lines



def _record(config: Config, openmp: bool, mode: str, threads: int | None, r: Run, error: float | None) -> dict:
    return dict(config=config.name, sizes=list(config.sizes), openmp=openmp, mode=mode, threads=threads, loss=r.loss,
                median_s=r.median_s, min_s=r.min_s, peak_bytes=r.peak_bytes, relative_error=error)


def markdown(data: dict) -> str:
    """llmc.md from a record file: one table per configuration (and build), then the build times."""
    settings, found = data["settings"], data["records"]
    enzyme = any(r["mode"] == "enzyme" for r in found)
    text = [f"llm.c's train_gpt2.c ({settings.get('llmc_commit', 'unknown commit')}) as written, differentiated by "
            f"adgen ({data['commit']}); {data['machine']}. Time: the median of {settings.get('reps', 5)} calls after "
            "a warm-up, each way in a process of its own; peak MB: its resident memory (VmHWM); relative error: "
            "against llm.c's gpt2_backward.", ""]
    for openmp, name in dict.fromkeys((r["openmp"], r["config"]) for r in found):
        mine = [r for r in found if r["openmp"] == openmp and r["config"] == name]
        config = Config(name, tuple(mine[0]["sizes"]))
        runs = {(r["mode"], r["threads"]): Run(r["mode"], r["loss"], r["median_s"], r["min_s"], r["peak_bytes"], None)
                for r in mine}
        if not openmp:
            errors = {r["mode"]: r["relative_error"] for r in mine if r["relative_error"] is not None}
            text += [f"### {config.name} ({config.describe()}), one thread", ""]
            text += serial_table(config, {mode: r for (mode, _), r in runs.items()}, errors) + [""]
        else:
            errors = {f"{r['mode']} on {r['threads']}": r["relative_error"] for r in mine
                      if r["relative_error"] is not None}
            text += [f"### {config.name} ({config.describe()}), built with -fopenmp, teams of 1 and 2 threads", ""]
            text += parallel_table(runs, errors, tuple(dict.fromkeys(r["mode"] for r in mine))) + [""]
    text += [f"Build time of each tool on the file, seconds (median of {settings.get('build_rounds', 3)} rounds, the "
             "tools in turn in each; clang: the one adgen bundles, -O2):", ""]
    columns = ["build", "clang -O2", "adgen build"] + (
        ["clang-19 -O2", "clang-19 -O2 + Enzyme", "adgen / (clang-19 + Enzyme)"] if enzyme else [])
    text += [row(columns), "|" + "---|" * len(columns)]
    for built in data.get("builds", []):
        s = built["seconds"]
        cells = ["-fopenmp" if built["openmp"] else "serial", f"{s['clang']:.2f}", f"{s['adgen']:.2f}"]
        if enzyme:
            cells += [f"{s['clang-19']:.2f}", f"{s['clang-19 + Enzyme']:.2f}",
                      f"{s['adgen'] / s['clang-19 + Enzyme']:.2f}"]
        text.append(row(cells))
    return "\n".join(text) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.llmc", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("llmc", type=Path, metavar="LLMC_SRC", help="a checkout of github.com/karpathy/llm.c")
    parser.add_argument("--enzyme", type=Path, metavar="PLUGIN", help="Enzyme's clang plugin (ClangEnzyme-19.so)")
    parser.add_argument("--enzyme-cc", default="clang-19", metavar="CLANG",
                        help="the clang the plugin was built for (default: clang-19)")
    parser.add_argument("--reps", type=int, default=5, help="timed calls per measurement (default 5)")
    parser.add_argument("--build-rounds", type=int, default=3, metavar="N",
                        help="build with each tool N times, in turn, and take each tool's median (default 3)")
    parser.add_argument("--quick", action="store_true", help="the small configuration only")
    parser.add_argument("--no-openmp", action="store_true", help="without the -fopenmp build (one thread only)")
    parser.add_argument("-o", dest="out", type=Path, default=Path("build/bench"),
                        help="where to write llmc.md (default: build/bench)")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="write the records as JSON, with the machine and commit they were measured on "
                             "(for python -m bench --report DIR --from FILE)")
    args = parser.parse_args()
    check_enzyme(parser, args)
    src = args.llmc.resolve()
    if not (src / "train_gpt2.c").is_file():
        parser.error(f"{args.llmc}: no train_gpt2.c there (a checkout of github.com/karpathy/llm.c is needed)")
    if args.enzyme is not None and shutil.which("objcopy") is None:
        parser.error("--enzyme needs objcopy (binutils), to keep Enzyme's copy of llm.c apart")
    enzyme = args.enzyme.resolve() if args.enzyme else None
    modes = ("primal", "hand", "adgen") + (("enzyme",) if enzyme else ())
    configs = CONFIGS[:1] if args.quick else CONFIGS
    found: list[dict] = []
    wrong: list[str] = []
    builds = []
    with tempfile.TemporaryDirectory(prefix="adgen-llmc-") as tmp:
        for openmp in (False,) if args.no_openmp else (False, True):
            built = build(src, Path(tmp) / ("openmp" if openmp else "serial"), enzyme, args.enzyme_cc, openmp,
                          args.build_rounds)
            builds.append({"openmp": openmp, "seconds": built.seconds})
            for config in configs:
                work = Path(tmp) / f"{config.name}-{'openmp' if openmp else 'serial'}"
                work.mkdir()
                if not openmp:
                    runs = measure(built, config, modes, args.reps, work, None)
                    errors = {m: relative_error(runs[m].gradient, runs["hand"].gradient) for m in modes[2:]}
                    found += [_record(config, False, m, None, r, errors.get(m)) for m, r in runs.items()]
                else:
                    both = {(m, t): r for t in THREADS for m, r in measure(built, config, modes, args.reps, work,
                                                                            t).items()}
                    errors = {f"{m} on {t}": relative_error(both[m, t].gradient, both["hand", 1].gradient)
                              for m in modes[1:] for t in THREADS}
                    found += [_record(config, True, m, t, both[m, t], errors.get(f"{m} on {t}"))
                              for m in modes for t in THREADS]
                wrong += [f"{config.name}: {mode}'s gradient, relative error {e:.1e}"
                          for mode, e in errors.items() if not e <= TOLERANCE]
    data = envelope("llmc", found, {"reps": args.reps, "build_rounds": args.build_rounds, "quick": args.quick,
                                    "enzyme": enzyme is not None, "llmc_commit": commit(src)}, builds=builds)
    report = markdown(data)
    print(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "llmc.md").write_text(report)
    print(f"wrote {args.out / 'llmc.md'}")
    if args.json:
        write_records(args.json, data)
        print(f"wrote {args.json}")
    if wrong:
        print("wrong gradients:\n  " + "\n  ".join(wrong), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
