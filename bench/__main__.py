"""adgen's benchmarks: `python -m bench [--quick] [--json FILE] [-o DIR] [--difftime]`.

Builds bench/kernels.c with adgen (reverse gradient, width-1 and width-8 forward derivatives
of each kernel), bench/hand.c (hand-written gradients, the reference) and bench/driver.c, all
with --march native, then runs them in one process. Timing is in C: each measurement is the
best of several repetitions. For each kernel it reports

  reverse:  the primal, adgen's gradient, the hand-written gradient (gradient/primal and
            adgen/hand ratios; the two gradients must agree);
  forward8: forward[8] against eight width-1 calls (speedup_vs_scalar; the lanes must agree).

It writes DIR/bench.md (a Markdown table) and, with matplotlib installed
(pip install 'adgen[bench]'), DIR/ratios.png; --json FILE writes one record per kernel and
mode with the keys kernel, mode, primal_s, adgen_s, hand_s and, for forward8,
speedup_vs_scalar. --difftime also measures differentiation time against IR size
(DIR/difftime.png). --quick uses smaller sizes and finishes in under two minutes."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def build(work: Path) -> Path:
    cc = [sys.executable, "-m", "ziglang", "cc", "-O2", "-march=native"]
    steps = [
        [sys.executable, "-m", "adgen.frontend.cli", "build", "-q", "--march", "native", str(HERE / "kernels.c"),
         "-o", str(work)],
        [*cc, "-c", str(HERE / "kernels.c"), "-o", str(work / "kernels.o")],
        [*cc, "-c", str(HERE / "hand.c"), "-o", str(work / "hand.o")],
        [*cc, "-I", str(work), str(HERE / "driver.c"), str(work / "kernels.o"), str(work / "hand.o"),
         str(work / "kernels.adgen.o"), "-lm", "-o", str(work / "bench")],
    ]
    for step in steps:
        subprocess.run(step, check=True)
    return work / "bench"


def measure(quick: bool) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="adgen-bench-") as tmp:
        program = build(Path(tmp))
        out = subprocess.run([str(program), "quick" if quick else "full"], check=True, capture_output=True,
                             text=True)
    records = []
    for line in out.stdout.splitlines():
        kernel, mode, primal, adgen, other, diff = line.split()
        record = dict(kernel=kernel, mode=mode, primal_s=float(primal), adgen_s=float(adgen), difference=float(diff))
        if mode == "reverse":
            record["hand_s"] = float(other)
        else:
            record["hand_s"] = None  # no hand-written forward derivatives: compared with 8 width-1 calls
            record["scalar_s"] = float(other)
            record["speedup_vs_scalar"] = float(other) / float(adgen)
        records.append(record)
    return records


def table(records: list[dict]) -> str:
    rows = ["| kernel | primal ms | adgen gradient ms | hand-written ms | gradient/primal | adgen/hand "
            "| forward[8] ms | 8 width-1 calls ms | forward[8] speedup |",
            "|---|---|---|---|---|---|---|---|---|"]
    forward = {r["kernel"]: r for r in records if r["mode"] == "forward8"}
    for r in (r for r in records if r["mode"] == "reverse"):
        f = forward.get(r["kernel"])
        rows.append(f"| {r['kernel']} | {r['primal_s'] * 1e3:.3f} | {r['adgen_s'] * 1e3:.3f} | "
                    f"{r['hand_s'] * 1e3:.3f} | {r['adgen_s'] / r['primal_s']:.2f} | {r['adgen_s'] / r['hand_s']:.2f} | "
                    + (f"{f['adgen_s'] * 1e3:.3f} | {f['scalar_s'] * 1e3:.3f} | {f['speedup_vs_scalar']:.2f} |"
                       if f else "| | |"))
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
    xs = range(len(names))
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.4
    ax.bar([x - width / 2 for x in xs], [r["adgen_s"] / r["primal_s"] for r in reverse], width, label="adgen")
    ax.bar([x + width / 2 for x in xs], [r["hand_s"] / r["primal_s"] for r in reverse], width, label="hand-written")
    ax.axhline(3.0, color="grey", linestyle="--", linewidth=1, label="goal: 3x the primal")
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
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the records as JSON")
    parser.add_argument("-o", dest="out", type=Path, default=Path("build/bench"),
                        help="where to write bench.md and the plots (default: build/bench)")
    parser.add_argument("--difftime", action="store_true", help="also measure differentiation time against IR size")
    args = parser.parse_args()
    start = time.perf_counter()
    records = measure(args.quick)
    args.out.mkdir(parents=True, exist_ok=True)
    text = table(records)
    print(text)
    (args.out / "bench.md").write_text(text)
    norms = {r["kernel"]: r["adgen_s"] for r in records if r["kernel"].startswith("norm/") and r["mode"] == "reverse"}
    if len(norms) == 2:
        print(f"norm gradient, time at n = 80,000 over n = 20,000: {norms['norm/80000'] / norms['norm/20000']:.2f} "
              "(about 4 when O(n), 16 when O(n^2))")
    if args.json:
        args.json.write_text(json.dumps([{k: v for k, v in r.items() if k != "scalar_s"} for r in records], indent=1))
    if plot(records, args.out / "ratios.png"):
        print(f"wrote {args.out / 'bench.md'} and {args.out / 'ratios.png'}")
    else:
        print(f"wrote {args.out / 'bench.md'} (no plot: matplotlib is not installed; pip install 'adgen[bench]')")
    if args.difftime:
        from bench import difftime

        difftime.run(args.out / "difftime.png", quick=args.quick)
    disagree = [f"{r['kernel']} ({r['mode']})" for r in records if r["difference"] > 1e-6]
    print(f"done in {time.perf_counter() - start:.0f} s")
    if disagree:
        print(f"results disagree on: {', '.join(disagree)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
