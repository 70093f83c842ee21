"""adgen benchmarks: run `python -m bench --help`."""

import shutil


def check_enzyme(parser, args) -> None:
    """--enzyme PLUGIN (with --enzyme-cc CLANG): both must be there, else a usage error."""
    if args.enzyme is not None:
        if not args.enzyme.is_file():
            parser.error(f"--enzyme {args.enzyme}: no such file (../shared/tools/build-enzyme.sh builds it)")
        if shutil.which(args.enzyme_cc) is None:
            parser.error(f"--enzyme needs {args.enzyme_cc}, the clang the plugin was built for (--enzyme-cc CLANG)")
