"""Forward-mode benchmark: `python bench/forward.py [--n N] [--reps R]`.

On a loop kernel of N elements (default 10^5) mixing products, sin and exp, it times in C,
in one run (best of R): the primal, the width-1 forward derivative, 8 width-1 calls, and
forward[8] with separate and with interleaved tangents. It prints the ratios the design
asks for: forward[8] against 8 width-1 calls (goal: at least 3x faster) and the width-1
derivative against the primal (goal: at most 2x). Both are built with --march native."""

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
         str(HERE / "forward_kernel.c"), "-o", str(work)],
        [*cc, "-c", str(HERE / "forward_kernel.c"), "-o", str(work / "kernel.o")],
        [*cc, "-I", str(work), str(HERE / "forward_driver.c"), str(work / "kernel.o"),
         str(work / "forward_kernel.adgen.o"), "-lm", "-o", str(work / "bench")],
    ]
    for step in steps:
        subprocess.run(step, check=True)
    return work / "bench"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        program = build(Path(tmp))
        out = subprocess.run([str(program), str(args.n), str(args.reps)], check=True, capture_output=True, text=True)
    n, primal, one, eight_calls, batched, interleaved = out.stdout.split()
    primal, one, eight_calls, batched, interleaved = map(float, (primal, one, eight_calls, batched, interleaved))
    print(f"n = {n}, best of {args.reps}")
    print(f"{'primal':<34}{primal * 1e3:10.3f} ms")
    print(f"{'forward, width 1':<34}{one * 1e3:10.3f} ms   {one / primal:5.2f}x the primal (goal <= 2)")
    print(f"{'8 calls of width 1':<34}{eight_calls * 1e3:10.3f} ms")
    print(f"{'forward[8], dual':<34}{batched * 1e3:10.3f} ms   {eight_calls / batched:5.2f}x faster than 8 calls (goal >= 3)")
    print(f"{'forward[8], dualv (interleaved)':<34}{interleaved * 1e3:10.3f} ms   {eight_calls / interleaved:5.2f}x faster than 8 calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
