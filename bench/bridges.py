"""`python -m bench.bridges [--reps N] [--json FILE] [--markdown FILE]`: what one call through
each framework bridge costs beside a direct ctypes call of the same C function.

One C function (`energy`, a sum over n elements, with a reverse-mode entry) is built by
`adgen.load` and called, for n = 4 (the call's overhead dominates) and n = 100,000 (the C code
does), as: a raw ctypes call (argument types set, a pointer to the array's data); `adgen.load`'s
function (its argument checks); `adgen.jax` under `jax.jit` (the array already on the device,
`block_until_ready`); `adgen.tensorflow` eagerly and under `tf.function`; and, for scale, each
framework's own compiled call of a sum of squares (no C code). The gradient likewise:
the reverse entry through ctypes, `jax.jit(jax.grad(f))`, a gradient tape in `tf.function`.
Each framework is measured in a process of its own; each time is the median of --reps
repetitions of a loop of calls lasting about 0.2 s. Writes a Markdown table (default
bench/results/bridges.md) and, with --json FILE, a record file (bench/records.py, kind
"bridges"). Needs jax and tensorflow-cpu (`pip install '.[jax,tensorflow]'`); a framework that
is missing is left out, saying so."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.records import envelope, write as write_records

ROOT = Path(__file__).resolve().parent.parent
SIZES = (4, 100_000)
SOURCE = r"""
#include <math.h>
// @diff(energy_grad: (dup, const) -> active)
double energy(const double *x, int n)
{
    double e = 0;
    for (int i = 0; i < n; i++)
        e += x[i] * x[i] + sin(x[i]);
    return e;
}
"""


def _time(call, reps: int) -> float:
    """Seconds per call: the median over `reps` loops of about 0.2 s each."""
    call()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < 0.05:
        call()
        count += 1
    loop = max(1, int(count * 4))
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(loop):
            call()
        times.append((time.perf_counter() - start) / loop)
    return statistics.median(times)


def measure(framework: str, source: Path, reps: int) -> list[dict]:
    import ctypes

    import numpy as np

    import adgen

    lib = adgen.load(source)
    records = []
    for n in SIZES:
        x = np.linspace(-1, 1, n)
        shadow = np.zeros(n)
        calls: dict[str, tuple[str, object]] = {}
        if framework == "ctypes":
            raw = lib._dll.energy
            raw.argtypes, raw.restype = [ctypes.c_void_p, ctypes.c_int], ctypes.c_double
            grad = lib._dll.energy_grad
            grad.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_double]
            grad.restype = ctypes.c_double
            p, d = x.ctypes.data, shadow.ctypes.data
            calls["value"] = ("raw ctypes", lambda: raw(p, n))
            calls["gradient"] = ("raw ctypes", lambda: grad(p, d, n, 1.0))
            calls["value, adgen.load"] = ("adgen.load", lambda: lib.energy(x, n))
            calls["gradient, adgen.load"] = ("adgen.load", lambda: lib.energy_grad(x, shadow, n, 1.0))
        elif framework == "jax":
            import jax

            jax.config.update("jax_enable_x64", True)
            import adgen.jax

            f = adgen.jax.function(lib, "energy")
            xj = jax.device_put(x)
            value = jax.jit(lambda x: f(x, n))
            gradient = jax.jit(jax.grad(lambda x: f(x, n)))
            calls["value"] = ("jax.jit", lambda: value(xj).block_until_ready())
            plain = jax.jit(lambda x: jax.numpy.sum(x * x))
            calls["value, no C"] = ("jax.jit of jnp.sum(x * x), for scale", lambda: plain(xj).block_until_ready())
            calls["gradient"] = ("jax.jit(jax.grad)", lambda: gradient(xj).block_until_ready())
        else:
            import tensorflow as tf

            import adgen.tensorflow

            f = adgen.tensorflow.function(lib, "energy")
            xt = tf.constant(x)
            graph = tf.function(lambda x: f(x, n))

            @tf.function
            def gradient(x):
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    e = f(x, n)
                return tape.gradient(e, x)

            calls["value, eager"] = ("eager", lambda: f(xt, n).numpy())
            calls["value"] = ("tf.function", lambda: graph(xt).numpy())
            plain = tf.function(lambda x: tf.reduce_sum(x * x))
            calls["value, no C"] = ("tf.function of tf.reduce_sum(x * x), for scale", lambda: plain(xt).numpy())
            calls["gradient"] = ("tf.function + GradientTape", lambda: gradient(xt).numpy())
        for what, (how, call) in calls.items():
            records.append({"framework": framework, "n": n, "what": what.split(",")[0], "how": how,
                            "seconds": _time(call, reps)})
    return records


def table(records: list[dict]) -> str:
    direct = {(r["n"], r["what"]): r["seconds"] for r in records if r["how"] == "raw ctypes"}
    lines = ["| n | what | bridge | µs per call | over raw ctypes |", "|---|---|---|---|---|"]
    for r in sorted(records, key=lambda r: (r["n"], r["what"], r["seconds"])):
        base = direct.get((r["n"], r["what"]))
        over = "— (no C code)" if "for scale" in r["how"] else \
            f"{(r['seconds'] - base) * 1e6:+.1f} µs ({r['seconds'] / base:.1f}x)" if base else "—"
        lines.append(f"| {r['n']:,} | {r['what']} | {r['framework']}: {r['how']} | {r['seconds'] * 1e6:.1f} | "
                     f"{over} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bridges", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=7, help="repetitions of each measurement (default 7)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write a record file")
    parser.add_argument("--markdown", type=Path, default=ROOT / "bench" / "results" / "bridges.md",
                        help="where to write the table (default bench/results/bridges.md)")
    parser.add_argument("--measure", choices=("ctypes", "jax", "tensorflow"), help=argparse.SUPPRESS)
    parser.add_argument("--source", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.source, args.reps)))
        return 0
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "energy.c"
        source.write_text(SOURCE)
        for framework in ("ctypes", "jax", "tensorflow"):
            print(f"measuring {framework}...", file=sys.stderr)
            done = subprocess.run([sys.executable, "-m", "bench.bridges", "--measure", framework, "--source",
                                   str(source), "--reps", str(args.reps)], capture_output=True, text=True,
                                  cwd=ROOT, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
            if done.returncode != 0:
                print(f"{framework} left out: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                continue
            records += json.loads(done.stdout.strip().splitlines()[-1])
    text = ("# One call through each framework bridge\n\nMeasured by `python -m bench.bridges` (its docstring "
            "says how). Overhead is the time per call less the raw ctypes call's, in the same run.\n\n"
            + table(records))
    args.markdown.parent.mkdir(parents=True, exist_ok=True)
    args.markdown.write_text(text)
    print(text)
    if args.json:
        write_records(args.json, envelope("bridges", records, {"reps": args.reps, "sizes": list(SIZES)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
