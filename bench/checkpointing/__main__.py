"""`python -m bench.checkpointing [--quick] [--enzyme PLUGIN] [--rounds N] [-o DIR] [--json FILE]`:
reverse mode over long loops within a memory budget (specs/abi.md, "Memory budgets"). Three
kernels of bench/checkpointing/kernels.c: a 2-D reaction-diffusion simulation (256 x 256 cells,
10,000 steps), a chain of 64 pendulums integrated by RK4 (100,000 steps) and an Elman recurrent
network (hidden size 256, 10,000 time steps). Each way of computing runs in a process of its own
(driver.c), N times (--rounds, default 2: the ways in turns, each keeping its fastest run), and
reports its time and its peak resident memory (VmHWM): the primal; adgen's gradient within a
64 MiB budget (`within 64MiB`, checkpointed); adgen's gradient without one, where it fits in the
machine's memory; and with --enzyme, Enzyme's gradient of the same function (clang-19 with the
plugin, -O2). The checkpointed gradient must agree with the unbounded one to 1e-12 (relative, its
checksum), else the run fails. Writes DIR/checkpointing.md (default build/bench/checkpointing.md)
and prints it; --json FILE writes the records (bench/records.py), for `python -m bench --report
DIR --from FILE`. --quick uses a tenth of the steps."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from adgen.base.toolchain import bundled_cc
from bench import check_enzyme
from bench.records import envelope, write as write_records

HERE = Path(__file__).resolve().parent
KERNELS = {  # name -> (size, steps), what the table calls it
    "heat2d": ((256, 10_000), "2-D reaction-diffusion, 256 x 256 cells, 10,000 steps"),
    "rk4": ((64, 100_000), "64 coupled pendulums, RK4, 100,000 steps"),
    "rnn": ((256, 10_000), "Elman RNN, hidden 256, inputs 32, 10,000 steps"),
}
MODES = ("primal", "ckpt", "full", "enzyme")
LABEL = {"primal": "primal", "ckpt": "adgen within 64 MiB", "full": "adgen, no budget", "enzyme": "Enzyme"}


def build(work: Path, enzyme: Path | None, enzyme_cc: str) -> dict[str, Path]:
    cc = [*bundled_cc(), "-O2", "-fno-math-errno"]
    out = work / "adgen"
    subprocess.run([sys.executable, "-m", "adgen.commands.cli", "build", "-q", str(HERE / "kernels.c"), "-o", str(out)],
                   check=True)
    adgen = work / "driver-adgen"
    subprocess.run([*cc, str(HERE / "driver.c"), str(HERE / "kernels.c"), str(HERE / "adgen_glue.c"),
                    str(out / "kernels.adgen.o"), "-I", str(out), "-o", str(adgen), "-lm"], check=True)
    built = {"adgen": adgen}
    if enzyme is not None:
        built["enzyme"] = work / "driver-enzyme"
        subprocess.run([enzyme_cc, "-O2", "-fno-math-errno", "-fpass-plugin=" + str(enzyme), "-I", str(HERE),
                        str(HERE / "driver.c"), str(HERE / "enzyme.c"), "-o", str(built["enzyme"]), "-lm"],
                       check=True)
    return built


def run(executable: Path, kernel: str, mode: str, size: int, steps: int) -> dict | str:
    """One way of computing: its fields, or why it did not finish."""
    done = subprocess.run([str(executable), kernel, mode, str(size), str(steps)], capture_output=True, text=True,
                          env=dict(os.environ, ADGEN_CHECKPOINTS="1"))
    if done.returncode != 0:
        return f"failed ({done.returncode}): {done.stderr.strip()[-200:]}"
    fields = {k: float(v) for k, v in (item.split("=", 1) for item in done.stdout.split())}
    said = [line for line in done.stderr.splitlines() if line.startswith("adgen: checkpointed loop")]
    main = [line for line in said if f": {steps} iterations," in line]  # the time loop's
    if main:
        fields["schedule"] = main[0]
    return fields


def fits(kernel: str, mode: str, size: int, steps: int) -> bool:
    """Whether an unbounded gradient's storage (measured per step with --quick: about 500 KB for
    the grid, 2 KB for the pendulums; for the network 2 KB by adgen, what its hidden state's
    values overwrite, and 1 MB by Enzyme, which stores `now[j]` once per row of W) fits in a
    third of the machine's memory."""
    per_step = {"heat2d": 8 * size * size, "rk4": 32 * size,
                "rnn": 16 * size * size if mode == "enzyme" else 16 * size}[kernel]
    return per_step * steps < os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.checkpointing", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the steps")
    parser.add_argument("--enzyme", type=Path, help="Enzyme's clang-19 plugin (ClangEnzyme-19.so)")
    parser.add_argument("--enzyme-cc", default="clang-19", help="the clang the plugin was built for")
    parser.add_argument("--rounds", type=int, default=2, metavar="N",
                        help="run every way N times, the ways in turns, and keep each one's fastest (default 2): "
                             "the first touch of gigabytes of fresh memory, which the host may back slowly, "
                             "then falls on no way alone")
    parser.add_argument("-o", type=Path, default=Path("build/bench"), help="where checkpointing.md goes")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="write the records as JSON, with the machine and commit they were measured on "
                             "(for python -m bench --report DIR --from FILE)")
    args = parser.parse_args(argv)
    check_enzyme(parser, args)
    rows = []
    with tempfile.TemporaryDirectory(prefix="adgen-ckpt-bench-") as tmp:
        built = build(Path(tmp), args.enzyme, args.enzyme_cc)
        for kernel, ((size, steps), what) in KERNELS.items():
            steps = steps // 10 if args.quick else steps
            ways = [mode for mode in MODES if mode != "enzyme" or "enzyme" in built]
            results = {mode: "not run: its storage would not fit in a third of this machine's memory"
                       for mode in ways if mode in ("full", "enzyme") and not fits(kernel, mode, size, steps)}
            ways = [mode for mode in ways if mode not in results]
            for round_ in range(args.rounds):  # the ways in turns; each keeps its fastest run (a failure stays)
                for mode in ways:
                    print(f"{kernel} {mode} (round {round_ + 1} of {args.rounds}) ...", file=sys.stderr, flush=True)
                    got = run(built["enzyme" if mode == "enzyme" else "adgen"], kernel, mode, size, steps)
                    results[mode] = _faster(results.get(mode), got)
            ckpt, full = results["ckpt"], results.get("full")
            if isinstance(ckpt, dict) and isinstance(full, dict):
                error = abs(ckpt["check"] - full["check"]) / abs(full["check"])
                if error > 1e-12:
                    raise SystemExit(f"{kernel}: the checkpointed gradient differs from the unbounded one by {error:g}")
            rows.append((kernel, what, steps, results))
    text = table(rows, args.quick, args.rounds)
    args.o.mkdir(parents=True, exist_ok=True)
    (args.o / "checkpointing.md").write_text(text)
    print(text)
    if args.json:
        found = [{"kernel": kernel, "what": what, "steps": steps, "results": results}
                 for kernel, what, steps, results in rows]
        write_records(args.json, envelope("checkpointing", found, {"quick": args.quick, "enzyme": "enzyme" in built,
                                                                   "rounds": args.rounds}))
        print(f"wrote {args.json}")
    return 0


def _faster(before: dict | str | None, got: dict | str) -> dict | str:
    """Of two runs of one way, the one to report: the faster, or a failure where either failed."""
    if before is None or isinstance(before, str):
        return before or got
    return got if isinstance(got, str) or got["seconds"] < before["seconds"] else before


def rows_from(data: dict) -> list:
    """A record file's rows, as `table` takes them."""
    return [(r["kernel"], r["what"], r["steps"], r["results"]) for r in data["records"]]


def table(rows, quick: bool, rounds: int = 1) -> str:
    lines = ["Time of one call and peak resident memory of its process (VmHWM), each way in a process of its own"
             + (f", the fastest of {rounds} runs (the ways in turns)" if rounds > 1 else "")
             + (" (--quick: a tenth of the steps)" if quick else "") + ":", "",
             "| kernel | way | seconds | × primal | × adgen, no budget | peak MB |", "|---|---|---|---|---|---|"]
    notes = []
    for kernel, what, steps, results in rows:
        primal = results["primal"]["seconds"] if isinstance(results.get("primal"), dict) else None
        full = results["full"]["seconds"] if isinstance(results.get("full"), dict) else None
        for mode in MODES:
            r = results.get(mode)
            if r is None:
                continue
            if isinstance(r, str):
                lines.append(f"| {what if mode == 'primal' else ''} | {LABEL[mode]} | {r} | | | |")
                continue
            versus = "" if full is None else f"{r['seconds'] / full:.2f}"
            lines.append(f"| {what if mode == 'primal' else ''} | {LABEL[mode]} | {r['seconds']:.3f} | "
                         f"{r['seconds'] / primal:.1f} | {versus} | {r['peak_kb'] / 1024:.0f} |")
            if mode == "ckpt" and "schedule" in r:
                notes.append(f"- {kernel}: {r['schedule'].removeprefix('adgen: ')}")
    return "\n".join(lines + ["", "The checkpointed loops' schedules (ADGEN_CHECKPOINTS):", "", *notes]) + "\n"


if __name__ == "__main__":
    sys.exit(main())
