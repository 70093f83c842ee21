"""Builds and runs the examples: `python examples/run.py [NAME ...]` (all of them by default).

Each example is a directory holding NAME.c (or NAME.cpp), the annotated code, and main.c (or
main.cpp), a driver that prints every derivative beside its central finite difference. This
script runs `adgen build NAME.c`, compiles both files with the clang adgen uses, links them with
the derivative object and runs the program (code written for Enzyme's C API instead is built
with `adgen cc`); it exits non-zero if any check fails."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _source(folder: Path, stem: str) -> Path | None:
    return next((p for p in (folder / f"{stem}.c", folder / f"{stem}.cpp") if p.exists()), None)


def run(name: str, build_root: Path) -> int:
    folder = HERE / name
    build = build_root / name
    build.mkdir(parents=True, exist_ok=True)
    source, main = _source(folder, name), _source(folder, "main")
    cxx = source.suffix == ".cpp"
    cc = [sys.executable, "-m", "ziglang", "c++" if cxx else "cc", "-O2"]
    steps = [
        [sys.executable, "-m", "adgen.commands.cli", "build", "-q", str(source), "-o", str(build),
         *(["--cxx-library=libc++"] if cxx else [])],  # (the C++ library of the clang it is built with)
        [*cc, "-I", str(build), "-c", str(source), "-o", str(build / f"{name}.o")],  # own header
        [*cc, "-I", str(build), str(main), str(build / f"{name}.o"), str(build / f"{name}.adgen.o"),
         "-lm", "-o", str(build / name)],
    ]
    how = f"adgen build {source.name}, then {cc[3]} {main.name} {source.name} {name}.adgen.o"
    if "__enzyme_" in source.read_text():  # written for Enzyme's C API: adgen cc is the compiler
        steps = [[sys.executable, "-m", "adgen.commands.cli", "c++" if cxx else "cc", "-O2", str(source), str(main),
                  "-lm", "-o", str(build / name)]]
        how = f"adgen {'c++' if cxx else 'cc'} {source.name} {main.name}"
    print(f"== {name}: {how}", flush=True)
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stderr)
            return done.returncode
    return subprocess.run([str(build / name)]).returncode


def main() -> int:
    examples = sorted(p.name for p in HERE.iterdir() if p.is_dir() and _source(p, "main") and _source(p, p.name))
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
