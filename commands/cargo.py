"""`cargo adgen build`: the derivatives of a cargo package's library, its annotated functions in
any of its modules (specs/annotations.md, "Rust crates"). pip installs the program `cargo-adgen`
beside `adgen`; cargo runs it for `cargo adgen ...`. Errors are located diagnostics (status 1),
as `adgen`'s are (cli.py)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from adgen.base import __version__
from adgen.base.timing import Stages, plural
from adgen.commands.cli import print_explained, program, reporting
from adgen.commands.outputs import write_all

DESCRIPTION = """\
cargo adgen build: the derivatives of the annotated functions of a cargo package's library, in
any of its modules, from cargo's own compile of the library.

For each package of the workspace (or each named with -p) whose library holds annotations
(`// @diff(...)` or `#[adgen::diff(...)]`), it writes into the package's target/adgen/:

  lib<crate>_adgen.a    the derivatives, which the package's build.rs links:
                          println!("cargo:rustc-link-search=native={}/target/adgen",
                                   env!("CARGO_MANIFEST_DIR"));
                          println!("cargo:rustc-link-lib=static=<crate>_adgen");
  <file>.adgen.rs       for each annotated file, safe wrappers, which that module includes:
                          include!(concat!(env!("CARGO_MANIFEST_DIR"), "/target/adgen/<file>.adgen.rs"));

Then `cargo build`, `cargo test` and `cargo run` work as usual; run `cargo adgen build` again
when an annotated function changes. The crates that depend on the library link its derivatives
through it."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cargo adgen", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"cargo-adgen {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="build")
    build = commands.add_parser("build", help="differentiate the packages' libraries",
                                description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    build.add_argument("--manifest-path", type=Path, metavar="PATH", help="the package's or workspace's Cargo.toml")
    build.add_argument("-p", "--package", action="append", default=[], metavar="SPEC",
                       help="only this package (repeatable); default: every package with annotations")
    build.add_argument("--release", action="store_true", help="compile the library in the release profile")
    build.add_argument("-v", "--verbose", action="store_true", help="print each stage's time")
    build.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    build.add_argument("--explain", action="store_true", help="print what each gradient stores, and why")
    build.add_argument("--emit-llvm", action="store_true",
                       help="also write the differentiated module as target/adgen/<stem>.adgen.ll")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["adgen"]:  # (cargo runs `cargo-adgen adgen build ...`)
        argv = argv[1:]
    extra: list[str] = []
    if "--" in argv:  # more arguments for cargo (--features, --target...)
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    args = _parser().parse_args(argv)
    stages = Stages(verbose=args.verbose, progress=not args.quiet and sys.stderr.isatty() and not os.environ.get("CI"),
                    quiet=args.quiet)
    status = reporting(lambda: build(args, extra, stages))
    stages.total()
    return status


def build(args, extra: list[str], stages: Stages) -> int:
    from adgen.base.toolchain import select_compiler, select_rustc, system_flags
    from adgen.commands.build import closures
    from adgen.commands.build.crate import CrateLowering, annotated, archive, packages, second_pass
    from adgen.commands.build.pipeline import build as build_sources

    with stages.stage("toolchain"):
        found = packages(args.manifest_path, args.package)
        rustc, compiler = select_rustc(), select_compiler(None)
        flags = list(system_flags(compiler))
    built = 0
    for package in found:
        sources = annotated(package)
        if not sources:
            if args.package:
                stages.remark(f"cargo adgen: {package.name}: no annotated functions in its library")
            continue
        out_dir = package.out_dir
        library = out_dir / package.archive_name
        if not library.exists():  # (the build script's link line names it while cargo compiles the library)
            write_all({library: b"!<arch>\n"})
        crate = CrateLowering(package, rustc, args.release, tuple(extra))
        written, _, plans = build_sources(sources, out_dir, flags, [], [], compiler, stages, emit_llvm=args.emit_llvm,
                                          explain=args.explain, crate=crate)
        if closures.wanted([out_dir / f"{s.stem}.adgen.rs" for s in sources]):  # (functions of closures: again,
            with stages.stage("closures", "the crate's calls"):  # at the closures the crate's targets pass)
                crate = second_pass(crate, sources, tuple(extra))
            written, _, plans = build_sources(sources, out_dir, flags, [], [], compiler, stages,
                                              emit_llvm=args.emit_llvm, explain=args.explain, crate=crate)
        objects = {p: p.read_bytes() for paths, _ in written for p in paths if p.suffix == ".o"}
        with tempfile.TemporaryDirectory(prefix="adgen-") as tmp, stages.stage("write", package.archive_name):
            write_all({library: archive(objects, Path(tmp))})
        if args.explain:
            print_explained(plans)
        if not args.quiet:
            names = [n for _, ns in written for n in ns]
            shown = os.path.relpath(library) if library.is_relative_to(Path.cwd()) else library
            print(f"cargo adgen: {package.name}: wrote {shown} and the wrappers of "
                  f"{plural(len(sources), 'file')} ({', '.join(names)})", file=sys.stderr)
        built += 1
    if built == 0 and not args.package and not args.quiet:
        print("cargo adgen: no package's library holds annotations (// @diff(...) or #[adgen::diff(...)])",
              file=sys.stderr)
    return 0


def command() -> None:
    """The `cargo-adgen` program."""
    program(main)


if __name__ == "__main__":
    command()
