"""adgen benchmarks: run `python -m bench --help`."""

import os
import platform
import shutil
from pathlib import Path


def check_enzyme(parser, args) -> None:
    """--enzyme PLUGIN (with --enzyme-cc CLANG): both must be there, else a usage error."""
    if args.enzyme is not None:
        if not args.enzyme.is_file():
            parser.error(f"--enzyme {args.enzyme}: no such file (Enzyme's clang plugin, ClangEnzyme-19.so: build it from github.com/EnzymeAD/Enzyme against LLVM 19)")
        if shutil.which(args.enzyme_cc) is None:
            parser.error(f"--enzyme needs {args.enzyme_cc}, the clang the plugin was built for (--enzyme-cc CLANG)")


def machine() -> str:
    """The CPU's model and the cores, for a results file's header."""
    try:
        model = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor() or platform.machine()
    return f"{model}, {os.cpu_count()} cores"
