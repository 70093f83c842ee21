"""Differentiation time against IR size: `python -m bench.difftime [--sizes 100,1000,...] [--png FILE]`.

Generates straight-line C functions whose optimized IR has from about 100 to 20,000
instructions, builds a forward derivative of each with `adgen -v build`, and reads two of
its stage lines: the instruction count after optimization ("analyze") and the time of the
"differentiate" stage. Prints seconds per instruction, which stays flat if growth is linear.
Goal: under 1 s at 5,000 instructions."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def source(statements: int) -> str:
    body = ["    double a0 = x[0];"]
    for i in range(1, statements):
        k = i % 7
        op = ["sin(a{p}) * x[{j}]", "a{p} * a{q} + x[{j}]", "exp(-a{p} * a{p}) + a{q}", "a{p} / (1.0 + a{q} * a{q})",
              "sqrt(1.0 + a{p} * a{p}) - x[{j}]", "a{p} * x[{j}] - a{q}", "cos(a{q}) + a{p}"][k]
        body.append(f"    double a{i} = " + op.format(p=i - 1, q=max(0, i - 3), j=i % 16) + ";")
    body.append(f"    return a{statements - 1};")
    return ("#include <math.h>\n// @diff(f_fwd: (dual) -> dual)\ndouble f(const double *x)\n{\n"
            + "\n".join(body) + "\n}\n")


def measure(statements: int, work: Path) -> tuple[int, float]:
    src = work / f"gen{statements}.c"
    src.write_text(source(statements))
    done = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "-v", "build", str(src), "-o", str(work)],
                          capture_output=True, text=True, check=True)
    count = int(re.search(r"analyze .*\((\d+) instructions", done.stderr).group(1))
    ms = float(re.search(r"differentiate\s+([\d.]+) ms", done.stderr).group(1))
    return count, ms / 1000


def run(png: Path | None = None, quick: bool = False, sizes: str | None = None) -> list[tuple[int, float]]:
    """Measures, prints a table, and plots seconds against instructions when matplotlib is there."""
    sizes = sizes or ("30,300,1000,2200" if quick else "30,100,300,1000,2200,4400,8800")
    print(f"{'instructions':>12} {'seconds':>9} {'us/instruction':>15}")
    points = []
    with tempfile.TemporaryDirectory() as tmp:
        for statements in map(int, sizes.split(",")):
            count, seconds = measure(statements, Path(tmp))
            points.append((count, seconds))
            print(f"{count:>12} {seconds:>9.3f} {seconds / count * 1e6:>15.1f}", flush=True)
    if png is not None:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("(no plot: matplotlib is not installed; pip install 'adgen[bench]')")
            return points
        xs, ys = zip(*points)
        slope = sum(x * y for x, y in points) / sum(x * x for x in xs)
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(xs, ys, "o", label="adgen: differentiate stage")
        ax.plot([0, max(xs)], [0, slope * max(xs)], "--", label=f"linear fit: {slope * 1e6:.0f} us per instruction")
        ax.set_xlabel("instructions in the optimized IR")
        ax.set_ylabel("seconds")
        ax.set_title("Differentiation time against IR size")
        ax.legend()
        fig.tight_layout()
        fig.savefig(png, dpi=100)
        plt.close(fig)
        print(f"wrote {png}")
    return points


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=None, help="statement counts to generate (each is ~2 instructions)")
    parser.add_argument("--png", type=Path, help="where to write the plot")
    args = parser.parse_args()
    run(args.png, sizes=args.sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
