"""Builds and runs the examples: `python examples/run.py [NAME ...]` (all of them by default).

Each example is a directory holding NAME.c, the annotated code, and main.c, a driver that
prints every derivative beside its central finite difference. This script runs
`adgen build NAME.c`, compiles both files with the clang adgen uses, links them with the
derivative object and runs the program (code written for Enzyme's C API instead is built
with `adgen cc`); it exits non-zero if any check fails."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(name: str, build_root: Path) -> int:
    folder = HERE / name
    build = build_root / name
    build.mkdir(parents=True, exist_ok=True)
    cc = [sys.executable, "-m", "ziglang", "cc", "-O2"]
    steps = [
        [sys.executable, "-m", "adgen.commands.cli", "build", "-q", str(folder / f"{name}.c"), "-o", str(build)],
        [*cc, "-I", str(build), "-c", str(folder / f"{name}.c"), "-o", str(build / f"{name}.o")],  # own header
        [*cc, "-I", str(build), str(folder / "main.c"), str(build / f"{name}.o"), str(build / f"{name}.adgen.o"),
         "-lm", "-o", str(build / name)],
    ]
    how = f"adgen build {name}.c, then cc main.c {name}.c {name}.adgen.o"
    if "__enzyme_" in (folder / f"{name}.c").read_text():  # written for Enzyme's C API: adgen cc is the compiler
        steps = [[sys.executable, "-m", "adgen.commands.cli", "cc", "-O2", str(folder / f"{name}.c"),
                  str(folder / "main.c"), "-lm", "-o", str(build / name)]]
        how = f"adgen cc {name}.c main.c"
    print(f"== {name}: {how}", flush=True)
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stderr)
            return done.returncode
    return subprocess.run([str(build / name)]).returncode


def main() -> int:
    examples = sorted(p.name for p in HERE.iterdir() if (p / "main.c").exists() and (p / f"{p.name}.c").exists())
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"examples to run (default: all of {', '.join(examples)})")
    parser.add_argument("-o", dest="build", type=Path, default=Path("build/examples"),
                        help="where to build (default: build/examples)")
    args = parser.parse_args()
    unknown = sorted(set(args.names) - set(examples))
    if unknown:
        parser.error(f"no example named {', '.join(unknown)}; there are {', '.join(examples)}")
    failed = [name for name in (args.names or examples) if run(name, args.build) != 0]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
