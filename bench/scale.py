"""`python -m bench.scale [N ...] [-o DIR] [--batch K] [-v] [--generate]`: build time and memory
against the size of the source (issue 42, "Scale"). For each N (default 200, 1000, 2000) it
writes a generated C file of N annotated functions, about 2.5 KB of source each (a comment
block, loops, libm calls, a branch, a local array, an in-place update the reverse sweep must
undo, and a static helper shared by the functions of its group of ten; every tenth function is
derived in forward mode as well), builds it with `adgen build -q` in a process of its own, and
reports the source's size, the wall-clock seconds, the CPU seconds of adgen and the compilers it
ran (getrusage), adgen's peak resident memory (its own ru_maxrss), and, sampled every 20 ms from
/proc, the largest resident memory of any one compiler it ran and the largest sum over adgen and
its compilers at one time. With `-v`, each build's `-v` report goes to DIR/scale/bN.log (the
batches among it). Writes DIR/scale.md (default build/bench/scale.md) and prints it.

`ADGEN_BATCH_INSTRUCTIONS` in the environment is passed on (`--batch K` sets it): a huge value
(`--batch 1000000000`) builds in one batch, as adgen did before batching."""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

FUNCTIONS = ("sin", "cos", "exp", "tanh", "sqrt", "log1p", "atan")


def source(n: int, seed: int = 7) -> str:
    """The C text of `n` annotated functions (see the module's doc)."""
    rng = random.Random(seed)
    out = ["#include <math.h>", "", "/* A generated file: bench/scale.py. */", ""]
    for i in range(n):
        if i % 10 == 0:  # a static helper for the next ten functions
            out.append(f"""/* The helper of functions {i} to {i + 9}: a smooth clamp, called from each of them. */
static double helper{i // 10}(double v, double c)
{{
    return c * tanh(v / c) + {rng.uniform(0.01, 0.1):.4f} * v;
}}
""")
        f1, f2, f3 = rng.sample(FUNCTIONS, 3)
        forward = f"\n// @diff(m{i}_fwd: forward (dual, dual, const) -> dual)" if i % 10 == 5 else ""
        out.append(f"""/*
 * m{i}: a small model of the kind a real file has many of. It reads the inputs x[0..n) and the
 * weights w[0..n), computes a scalar loss from a few passes over them, and updates the weights
 * in place as it goes (a running average), which the reverse sweep has to undo before it reads
 * them again. Its parts:
 *   - eight features t[k] of the inputs, each through {f1}() and shifted by a weight;
 *   - a pass over the inputs mixing them with the features through {f2}(), with a branch
 *     on the sign of a shifted product, that also updates the weights;
 *   - a pass over the differences of neighbouring inputs through {f3}();
 *   - a smooth clamp of the sum by the helper its group of functions shares;
 *   - the logarithm of a product of the features, and the ends of the updated weights.
 * Nothing here is tuned: the constants are random, and the functions differ only in them and
 * in which library functions they call, so that every one is its own code to differentiate.
 *
 * Its derivative with respect to x and w (the gradient of the loss) is made by adgen from the
 * annotation below; the weights' gradient is that of their values on entry, before the update,
 * which is why the reverse sweep restores them. n is the length of both arrays, at least one;
 * the features wrap around (k % n) when it is less than eight. The function is pure apart from
 * the weights: it reads no global state, and the same inputs give the same loss and the same
 * updated weights every time, which is what lets its derivative be checked against finite
 * differences of it (on copies of the weights, since each call updates them).
 */
// @diff(m{i}_grad: (dup, dup, const) -> active){forward}
double m{i}(const double *x, double *w, int n)
{{
    double s = 0, t[8];
    for (int k = 0; k < 8; k++)  /* the features */
        t[k] = {f1}(x[k % n] * {rng.uniform(0.1, 2):.3f}) + w[k % n];
    for (int j = 0; j < n; j++) {{  /* the main pass, updating the weights */
        double a = x[j] * t[j % 8] + {rng.uniform(-1, 1):.3f};
        double b = {f2}(fabs(a) + 0.5) * w[(j + {i % 7}) % n];
        if (a > {rng.uniform(-1, 1):.3f})
            s += a * b;
        else
            s -= b * b * {rng.uniform(0.1, 1):.3f};
        w[j] = w[j] * 0.99 + 0.01 * a;   /* an in-place update the reverse sweep must undo */
    }}
    for (int j = 1; j < n; j++) {{  /* the differences of neighbours */
        double d = x[j] - x[j - 1];
        s += {f3}(d * d + 1.0) * t[j % 8];
    }}
    s = helper{i // 10}(s, {rng.uniform(5, 50):.2f});
    double acc = 1;
    for (int k = 0; k < 8; k++)
        acc *= 1 + 0.1 * t[k];
    return s + log(acc) + w[0] * w[n - 1];
}}
""")
    return "\n".join(out)


def measure(n: int, work: Path, verbose: bool) -> dict:
    """One build of N functions in a process of its own: its size, times and peaks."""
    src = work / f"b{n}.c"
    src.write_text(source(n))
    out = work / f"out{n}"
    code = ("import resource, sys, time\n"
            "from adgen.commands.cli import main\n"
            "start = time.perf_counter()\n"
            "try:\n"
            "    status = main(sys.argv[1:])\n"
            "except SystemExit as exc:\n"
            "    status = exc.code\n"
            "wall = time.perf_counter() - start\n"
            "me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))\n"
            "print(f'@@ {status} {wall} {me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime} '\n"
            "      f'{me.ru_maxrss}', file=sys.stderr)\n")
    args = [sys.executable, "-c", code, "build", str(src), "-o", str(out), *(["-v"] if verbose else ["-q"])]
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, text=True)
        sampler = _Sampler(process.pid)
        sampler.start()
        process.wait()
        sampler.stop.set()
        sampler.join()
        log.seek(0)
        report = log.read()
    if verbose:
        (work / f"b{n}.log").write_text(report)
    line = next((l for l in report.splitlines() if l.startswith("@@ ")), None)
    if line is None or line.split()[1] != "0":
        raise SystemExit(f"bench.scale: the build of {n} functions failed:\n{report[-4000:]}")
    _, _, wall, cpu, self_kb = line.split()
    return {"functions": n, "source_mb": src.stat().st_size / 1e6, "wall_s": float(wall), "cpu_s": float(cpu),
            "peak_mb": int(self_kb) / 1024, "tree_mb": sampler.tree_kb / 1024, "child_mb": sampler.child_kb / 1024,
            "object_mb": (out / f"b{n}.adgen.o").stat().st_size / 1e6}


class _Sampler(threading.Thread):
    """The resident memory of a process and its descendants, every 20 ms: the largest sum over
    the tree at one time (`tree_kb`) and the largest of any descendant (`child_kb`). (getrusage's
    RUSAGE_CHILDREN cannot tell: a child started from a large process counts that process's
    pages until it runs its program.)"""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.stop, self.tree_kb, self.child_kb = pid, threading.Event(), 0, 0

    def run(self) -> None:
        name = _name(self.pid)
        while not self.stop.wait(0.02):
            total, todo = 0, [self.pid]
            while todo:
                pid = todo.pop()
                todo += _children(pid)
                if pid != self.pid and _name(pid) == name:
                    continue  # started, not yet running its program: adgen's pages, counted already
                kb = _rss_kb(pid)
                total += kb
                if pid != self.pid:
                    self.child_kb = max(self.child_kb, kb)
            self.tree_kb = max(self.tree_kb, total)


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(l.split()[1]) for l in f if l.startswith("VmRSS:")), 0)
    except OSError:
        return 0


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def _children(pid: int) -> list[int]:
    try:
        out = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(c) for c in f.read().split()]
        return out
    except OSError:
        return []


def table(rows: list[dict], title: str) -> str:
    lines = [title, "", "| functions | source MB | seconds | CPU seconds | peak RSS MB: adgen | "
             "largest compiler | all at once | object MB |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['functions']:,} | {r['source_mb']:.2f} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
                     f"{r['peak_mb']:.0f} | {r['child_mb']:.0f} | {r['tree_mb']:.0f} | {r['object_mb']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[200, 1000, 2000])
    parser.add_argument("-o", type=Path, default=Path("build/bench"), help="where scale.md (and the builds) go")
    parser.add_argument("--batch", type=int, help="ADGEN_BATCH_INSTRUCTIONS for the builds")
    parser.add_argument("-v", action="store_true", help="keep each build's -v report, DIR/scale/bN.log")
    parser.add_argument("--generate", action="store_true", help="only write the sources, DIR/scale/bN.c")
    args = parser.parse_args(argv)
    work = args.o / "scale"
    work.mkdir(parents=True, exist_ok=True)
    if args.generate:
        for n in args.sizes:
            (work / f"b{n}.c").write_text(source(n))
        return 0
    if args.batch is not None:
        os.environ["ADGEN_BATCH_INSTRUCTIONS"] = str(args.batch)
    rows = []
    for n in args.sizes:
        rows.append(measure(n, work, args.v))
        print(table(rows[-1:], f"(N = {n})"), file=sys.stderr, flush=True)
    batch = os.environ.get("ADGEN_BATCH_INSTRUCTIONS")
    title = (f"adgen build of N generated functions (bench/scale.py), {os.cpu_count()} cores" +
             (f", ADGEN_BATCH_INSTRUCTIONS={batch}" if batch else ""))
    text = table(rows, title)
    (args.o / "scale.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
