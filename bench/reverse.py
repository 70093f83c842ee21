"""Reverse-mode benchmark: `python bench/reverse.py [--quick]`.

Kernels (bench/reverse_kernels.c): extended rosenbrock, the seeds' vector normalization
(at n = 20,000 and 80,000), logsumexp, a GMM log-likelihood, an n-body step (in place), an
LSTM loss. For each, in one run and timed in C (best of several): the primal, adgen's
gradient, and a hand-written gradient (bench/hand_gradients.c), whose results must agree.
Prints gradient/primal (goal: at most 3), adgen/hand (goal: at most 1.3), and the norm's
time ratio from n = 20,000 to 80,000 (about 4 when the gradient is O(n), 16 if O(n^2)).
Everything is built with --march native."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def build(work: Path) -> Path:
    cc = [sys.executable, "-m", "ziglang", "cc", "-O2", "-march=native"]
    steps = [
        [sys.executable, "-m", "adgen.frontend.cli", "build", "-q", "--march", "native",
         str(HERE / "reverse_kernels.c"), "-o", str(work)],
        [*cc, "-c", str(HERE / "reverse_kernels.c"), "-o", str(work / "kernels.o")],
        [*cc, "-c", str(HERE / "hand_gradients.c"), "-o", str(work / "hand.o")],
        [*cc, "-I", str(work), str(HERE / "reverse_driver.c"), str(work / "kernels.o"), str(work / "hand.o"),
         str(work / "reverse_kernels.adgen.o"), "-lm", "-o", str(work / "bench")],
    ]
    for step in steps:
        subprocess.run(step, check=True)
    return work / "bench"


def measure(quick: bool) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        program = build(Path(tmp))
        out = subprocess.run([str(program), "quick" if quick else "full"], check=True, capture_output=True,
                             text=True)
    rows = []
    for line in out.stdout.splitlines():
        name, primal, adgen, hand, diff = line.split()
        rows.append(dict(kernel=name, primal_s=float(primal), adgen_s=float(adgen), hand_s=float(hand),
                         difference=float(diff)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions")
    args = parser.parse_args()
    rows = measure(args.quick)
    print(f"{'kernel':<12}{'primal ms':>11}{'adgen ms':>11}{'hand ms':>11}{'adgen/primal':>14}{'adgen/hand':>12}"
          f"{'grads differ':>14}")
    for r in rows:
        print(f"{r['kernel']:<12}{r['primal_s'] * 1e3:>11.3f}{r['adgen_s'] * 1e3:>11.3f}{r['hand_s'] * 1e3:>11.3f}"
              f"{r['adgen_s'] / r['primal_s']:>14.2f}{r['adgen_s'] / r['hand_s']:>12.2f}{r['difference']:>14.1e}")
    norms = {r["kernel"]: r["adgen_s"] for r in rows if r["kernel"].startswith("norm/")}
    if len(norms) == 2:
        print(f"norm gradient, time at n = 80,000 over n = 20,000: {norms['norm/80000'] / norms['norm/20000']:.2f} "
              "(about 4 means O(n))")
    bad = [r["kernel"] for r in rows if r["difference"] > 1e-6]
    if bad:
        print(f"adgen and hand-written gradients disagree on: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
