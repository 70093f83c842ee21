"""adgen's benchmarks: `python -m bench [--quick] [--enzyme PLUGIN] [--json FILE] [-o DIR] [--difftime]
[--only KERNEL] [--report DIR [--from FILE ...]]`.

Builds bench/kernels.c with adgen (reverse gradient, width-1 and width-8 forward derivatives
of each kernel), bench/hand.c (hand-written gradients, the reference where there is one) and
bench/driver.c, all with --march native, then runs them in one process. With --enzyme, the
same kernels are also differentiated by Enzyme (bench/enzyme.c, compiled by clang-19 with the
plugin: ClangEnzyme-19.so, built from github.com/EnzymeAD/Enzyme against LLVM 19) and timed in the same run. Timing is in
C: each measurement is the best of several repetitions, and adgen's and Enzyme's gradients are
timed in turns, a repetition of each at a time, so that the machine's drift over the run falls on
both alike. For each kernel it reports

  reverse:  the primal, adgen's gradient, the hand-written and Enzyme's gradients, and each
            gradient's peak heap bytes (stored values, caches and shadow memory: what the derivative
            allocates; adgen's in a process of its own, its first gradient there, since adgen's
            runtime keeps its stack's memory for the next gradient, which then allocates nothing); gradients are checked against the hand-written ones or, where there
            is none, against central finite differences, and Enzyme's against adgen's;
  forward8: forward[8] against eight width-1 calls and against Enzyme's forward[8] (the
            lanes must agree);
  hvp:      for the kernels of one array, the Hessian-vector product (forward mode over the
            reverse-mode gradient, `of`) beside the gradient's time and Enzyme's forward mode over
            its own gradient; checked against finite differences of the gradient.

It writes DIR/bench.md (Markdown tables, reverse and forward[8]) and, with matplotlib installed
(pip install 'adgen[bench]'), DIR/ratios.png; --json FILE writes a record file (bench/records.py:
the machine, OS, commit and date, the settings) whose records are one per kernel and mode with the
keys kernel, mode, primal_s, adgen_s, hand_s (None where there is no hand-written gradient, and
for forward8), enzyme_s (None without --enzyme), difference, and for reverse adgen_bytes and
enzyme_bytes, for forward8 speedup_vs_scalar (for hvp: the gradient's time over the product's).
--report DIR writes the performance page (bench/report.py: DIR/index.md and SVG figures) from
this run's records, or, with --from FILE (repeatable), from saved record files of this and the
other benchmarks (bench.programs, bench.llmc, bench.gradbench, bench.checkpointing: each has
--json FILE), without measuring. --difftime also measures
differentiation time against IR size (DIR/difftime.png). --quick uses smaller sizes and
finishes in under two minutes."""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import check_enzyme
from bench.records import envelope, read as read_records, write as write_records

HERE = Path(__file__).resolve().parent
WRAPPED = ["malloc", "calloc", "realloc", "free"]


KERNELS = ("rosenbrock", "norm", "logsumexp", "gmm", "gmm_objective", "ba", "reproj_error", "lstm", "nbody", "heat",
           "sinexp")  # the driver's bench_KERNEL functions


def build(work: Path, enzyme: Path | None, enzyme_cc: str) -> Path:
    cc = [sys.executable, "-m", "ziglang", "cc", "-O2", "-march=native"]
    steps = [
        [sys.executable, "-m", "adgen.commands.cli", "build", "-q", "--march", "native", str(HERE / "kernels.c"),
         "-o", str(work)],
        [*cc, "-c", str(HERE / "kernels.c"), "-o", str(work / "kernels.o")],
        [*cc, "-c", str(HERE / "hand.c"), "-o", str(work / "hand.o")],
    ]
    objects = [work / "kernels.o", work / "hand.o", work / "kernels.adgen.o"]
    defines = []
    if enzyme is not None:
        steps.append([enzyme_cc, "-O2", "-fno-math-errno", "-march=native", f"-fplugin={enzyme}", "-w", "-c",
                      str(HERE / "enzyme.c"), "-o", str(work / "enzyme.o")])
        objects.append(work / "enzyme.o")
        defines.append("-DWITH_ENZYME")
    steps.append([*cc, *defines, "-I", str(work), str(HERE / "driver.c"), *map(str, objects), "-lm",
                  *(f"-Wl,--wrap={f}" for f in WRAPPED), "-o", str(work / "bench")])
    for step in steps:
        subprocess.run(step, check=True)
    return work / "bench"


def parse(line: str) -> dict:
    """One driver line (key=value fields) as a record."""
    fields = dict(item.split("=", 1) for item in line.split())
    number = lambda key, kind=float: kind(fields[key]) if key in fields else None
    record = dict(kernel=fields["kernel"], mode=fields["mode"], primal_s=number("primal"), adgen_s=number("adgen"),
                  hand_s=number("hand"), enzyme_s=number("enzyme"), difference=number("diff"),
                  enzyme_difference=number("enzyme_diff"))
    if record["mode"] == "reverse":
        record["adgen_bytes"] = number("adgen_bytes", int)
        record["enzyme_bytes"] = number("enzyme_bytes", int)
    else:
        record["scalar_s"] = number("scalar")
        record["speedup_vs_scalar"] = record["scalar_s"] / record["adgen_s"]
    return record


def measure(quick: bool, enzyme: Path | None, enzyme_cc: str, only: str | None = None) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="adgen-bench-") as tmp:
        program = build(Path(tmp), enzyme, enzyme_cc)
        out = subprocess.run([str(program), "quick" if quick else "full", "0", *([only] if only else [])],
                             check=True, capture_output=True, text=True)
        records = [parse(line) for line in out.stdout.splitlines() if line.strip()]
        sizes: dict[str, int] = {}
        for record in records:  # adgen's peak: its first gradient in a process of its own (`bench peak`)
            if record["mode"] == "reverse":
                base = record["kernel"].split("/")[0]
                index = sizes[base] = sizes.get(base, -1) + 1
                peak = subprocess.run([str(program), "peak", base, str(index), *(["quick"] if quick else [])],
                                      check=True, capture_output=True, text=True)
                record["adgen_bytes"] = int(peak.stdout)
    return records


def _ms(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e3:.3f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def _mb(count: int | None) -> str:
    return "" if count is None else f"{count / 1e6:.2f}"


def tables(records: list[dict]) -> dict[str, str]:
    """Markdown tables by mode, each with its heading: reverse-mode gradients (time and peak heap),
    forward[8], and Hessian-vector products (forward over reverse) where there are some. Enzyme's
    columns where a record has Enzyme's time, Tapenade's where one has Tapenade's (tapenade_s)."""
    enzyme = any(r["enzyme_s"] is not None for r in records)
    tapenade = any(r.get("tapenade_s") is not None for r in records)
    reverse = [r for r in records if r["mode"] == "reverse"]
    forward = [r for r in records if r["mode"] == "forward8"]
    columns = [("kernel", lambda r: r["kernel"]), ("primal ms", lambda r: _ms(r["primal_s"])),
               ("adgen ms", lambda r: _ms(r["adgen_s"]))]
    columns += [("Enzyme ms", lambda r: _ms(r["enzyme_s"]))] if enzyme else []
    columns += [("Tapenade ms", lambda r: _ms(r.get("tapenade_s")))] if tapenade else []
    columns += [("hand-written ms", lambda r: _ms(r["hand_s"])),
                ("adgen/primal", lambda r: _ratio(r["adgen_s"], r["primal_s"]))]
    columns += [("Enzyme/primal", lambda r: _ratio(r["enzyme_s"], r["primal_s"])),
                ("adgen/Enzyme", lambda r: _ratio(r["adgen_s"], r["enzyme_s"]))] if enzyme else []
    columns += [("adgen/Tapenade", lambda r: _ratio(r["adgen_s"], r.get("tapenade_s")))] if tapenade else []
    columns += [("adgen/hand", lambda r: _ratio(r["adgen_s"], r["hand_s"])),
                ("adgen peak MB", lambda r: _mb(r["adgen_bytes"]))]
    columns += [("Enzyme peak MB", lambda r: _mb(r["enzyme_bytes"]))] if enzyme else []
    found = {"reverse": "Reverse mode, the gradient:\n\n" + _markdown(columns, reverse)}
    columns = [("kernel", lambda r: r["kernel"]), ("adgen forward[8] ms", lambda r: _ms(r["adgen_s"]))]
    columns += [("Enzyme forward[8] ms", lambda r: _ms(r["enzyme_s"])),
                ("adgen/Enzyme", lambda r: _ratio(r["adgen_s"], r["enzyme_s"]))] if enzyme else []
    columns += [("8 width-1 calls ms", lambda r: _ms(r["adgen_s"] * r["speedup_vs_scalar"])),
                ("speedup over 8 calls", lambda r: f"{r['speedup_vs_scalar']:.2f}")]
    found["forward8"] = "Forward mode, 8 directions in one call:\n\n" + _markdown(columns, forward)
    hvp = [r for r in records if r["mode"] == "hvp"]
    columns = [("kernel", lambda r: r["kernel"]), ("gradient ms", lambda r: _ms(r["scalar_s"])),
               ("adgen H·v ms", lambda r: _ms(r["adgen_s"]))]
    columns += [("Enzyme H·v ms", lambda r: _ms(r["enzyme_s"])),
                ("adgen/Enzyme", lambda r: _ratio(r["adgen_s"], r["enzyme_s"]))] if enzyme else []
    columns += [("adgen H·v/gradient", lambda r: _ratio(r["adgen_s"], r["scalar_s"]))]
    if hvp:
        found["hvp"] = "Hessian-vector products, forward mode over the reverse-mode gradient:\n\n" + \
            _markdown(columns, hvp)
    return found


def table(records: list[dict]) -> str:
    """bench.md: the tables of `tables`, one after another."""
    return "\n".join(tables(records).values())


def saved(records: list[dict]) -> list[dict]:
    """The records as --json writes them (without scalar_s: speedup_vs_scalar has it)."""
    return [{k: v for k, v in r.items() if k != "scalar_s"} for r in records]


def restored(records: list[dict]) -> list[dict]:
    """Saved records as `measure` returned them (scalar_s again, for forward8 and hvp)."""
    return [r if r["mode"] == "reverse" or "scalar_s" in r else {**r, "scalar_s": r["speedup_vs_scalar"] * r["adgen_s"]}
            for r in records]


def _markdown(columns, records: list[dict]) -> str:
    rows = ["| " + " | ".join(name for name, _ in columns) + " |", "|" + "---|" * len(columns)]
    rows += ["| " + " | ".join(cell(r) for _, cell in columns) + " |" for r in records]
    return "\n".join(rows) + "\n"


def plot(records: list[dict], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    reverse = [r for r in records if r["mode"] == "reverse"]
    names = [r["kernel"] for r in reverse]
    series = [("adgen", [r["adgen_s"] / r["primal_s"] for r in reverse])]
    if any(r["enzyme_s"] for r in reverse):
        series.append(("Enzyme", [(r["enzyme_s"] or 0) / r["primal_s"] for r in reverse]))
    series.append(("hand-written", [(r["hand_s"] or 0) / r["primal_s"] for r in reverse]))
    xs = range(len(names))
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(series)
    for i, (label, values) in enumerate(series):
        ax.bar([x + (i - (len(series) - 1) / 2) * width for x in xs], values, width, label=label)
    ax.axhline(3.0, color="grey", linestyle="--", linewidth=1, label="3x the primal")
    ax.set_xticks(list(xs), names, rotation=30, ha="right")
    ax.set_ylabel("gradient time / primal time")
    ax.set_yscale("log")
    ax.set_title("Reverse-mode gradients, time relative to the primal (lower is better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions (under 2 minutes)")
    parser.add_argument("--enzyme", type=Path, metavar="PLUGIN",
                        help="Enzyme's clang plugin (ClangEnzyme-19.so): time Enzyme's derivatives in the same run")
    parser.add_argument("--enzyme-cc", default="clang-19", metavar="CLANG",
                        help="the clang the plugin was built for (default: clang-19)")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="write the records as JSON, with the machine and commit they were measured on")
    parser.add_argument("-o", dest="out", type=Path, default=Path("build/bench"),
                        help="where to write bench.md and the plots (default: build/bench)")
    parser.add_argument("--difftime", action="store_true", help="also measure differentiation time against IR size")
    parser.add_argument("--only", choices=KERNELS, metavar="KERNEL",
                        help=f"run one kernel alone, with more repetitions to spare ({', '.join(KERNELS)})")
    parser.add_argument("--report", type=Path, metavar="DIR",
                        help="write the performance page, DIR/index.md and its SVG figures (needs matplotlib)")
    parser.add_argument("--from", dest="sources", type=Path, action="append", metavar="FILE",
                        help="with --report: build the page from these record files (repeatable: the --json of "
                             "bench, bench.programs, bench.llmc, bench.gradbench, bench.checkpointing) instead of "
                             "running the kernels")
    args = parser.parse_args()
    check_enzyme(parser, args)
    if args.report is not None and importlib.util.find_spec("matplotlib") is None:
        parser.error("--report needs matplotlib for its figures: pip install 'adgen[bench]'")
    if args.sources:
        if args.report is None:
            parser.error("--from FILE needs --report DIR")
        measuring = [flag for flag, given in (("--quick", args.quick), ("--enzyme", args.enzyme),
                                              ("--only", args.only), ("--difftime", args.difftime),
                                              ("--json", args.json)) if given]
        if measuring:
            parser.error(f"--from builds the page from saved records, without measuring: {', '.join(measuring)} "
                         "go with a run that measures")
        missing = [str(p) for p in args.sources if not p.is_file()]
        if missing:
            parser.error(f"--from: no such file: {', '.join(missing)}")
        try:
            files = [read_records(p) for p in args.sources]
        except ValueError as error:  # (JSON's errors too)
            parser.error(f"--from: {error}")
        return _report(args.report, files)
    start = time.perf_counter()
    records = measure(args.quick, args.enzyme.resolve() if args.enzyme else None, args.enzyme_cc, args.only)
    args.out.mkdir(parents=True, exist_ok=True)
    text = table(records)
    print(text)
    (args.out / "bench.md").write_text(text)
    norms = {r["kernel"]: r["adgen_s"] for r in records if r["kernel"].startswith("norm/") and r["mode"] == "reverse"}
    if len(norms) == 2:
        print(f"norm gradient, time at n = 80,000 over n = 20,000: {norms['norm/80000'] / norms['norm/20000']:.2f} "
              "(about 4 when O(n), 16 when O(n^2))")
    data = envelope("kernels", saved(records),
                    {"quick": args.quick, "only": args.only, "enzyme": args.enzyme is not None})
    if args.json:
        write_records(args.json, data)
    if plot(records, args.out / "ratios.png"):
        print(f"wrote {args.out / 'bench.md'} and {args.out / 'ratios.png'}")
    else:
        print(f"wrote {args.out / 'bench.md'} (no plot: matplotlib is not installed; pip install 'adgen[bench]')")
    if args.difftime:
        from bench import difftime

        difftime.run(args.out / "difftime.png", quick=args.quick)
    status = _report(args.report, [data]) if args.report else 0
    disagree = [f"{r['kernel']} ({r['mode']}{', Enzyme' if (r['enzyme_difference'] or 0) > 1e-6 else ''})"
                for r in records if r["difference"] > 1e-6 or (r["enzyme_difference"] or 0) > 1e-6]
    print(f"done in {time.perf_counter() - start:.0f} s")
    if disagree:
        print(f"results disagree on: {', '.join(disagree)}", file=sys.stderr)
        return 1
    return status


def _report(folder: Path, files: list[dict]) -> int:
    from bench import report

    written = report.write(folder, files)
    print(f"wrote {written[0]} and {len(written) - 1} figure{'' if len(written) == 2 else 's'} beside it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
