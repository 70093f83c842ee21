"""A cargo package differentiated as cargo builds it (`cargo adgen build`, specs/annotations.md,
"Rust crates"): its annotated functions in any module of its library, lowered from cargo's own
compile of the library to bitcode rather than one file at a time.

- `packages` asks `cargo metadata` for the workspace's packages that have a library, and
  `annotated` lists the library's files that hold annotations (either spelling).
- `CrateLowering` writes the wrappers (`<file>.adgen.rs`, which the library includes), then
  compiles the library (`cargo rustc --lib`, in a target folder of its own under the output
  folder, so the user's builds are left alone) and its dependencies to bitcode too, with every
  function kept (`-C link-dead-code`), line tables, the library's panics aborting and LLVM's
  passes left to adgen, as a single file's lowering is (lower.py): what the annotated functions
  call in the crate's other modules and in the crates it depends on is differentiated too. It
  then finds each annotated function in the bitcode by its debug information (the file and line
  of its name), so no source is copied or changed, and gives the pipeline the bitcode and, per
  source, the array of its functions that a single file's lowering appends (keep_array).
- `archive` puts the objects into one static library, `lib<crate>_adgen.a`, which the package's
  build script links (`cargo:rustc-link-lib=static=<crate>_adgen`): a library crate bundles it,
  so the crates that depend on it link it too."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from adgen.base.diagnostics import AdgenError, SourceFile, Span, error
from adgen.base.toolchain import RustCompiler, zig
from adgen.commands.build.lower import (STOP_MIR_INLINING, custom_array, inactive_array, keep_array, kept_apart,
                                        primal_functions)
from adgen.commands.build import closures
from adgen.frontend.rust_closures import CLOSURE
from adgen.frontend.rust_source import BY_VALUE
from adgen.frontend.rust_wrappers import BY_HAND
from adgen.commands.outputs import write_all
from adgen.frontend.annotations import find_annotations
from adgen.frontend.generate import Generated
from adgen.ir_ad import optimize
from adgen.ir_ad.ir import Module
from adgen.ir_ad.ir.debuginfo import defined_at

OUTPUT = Path("target") / "adgen"  # under the package's folder: what `cargo adgen build` writes


@dataclass(frozen=True)
class Package:
    name: str
    crate: str  # the library's crate name (`-` as `_`)
    manifest: Path
    library: Path  # the library's root file (src/lib.rs)

    @property
    def folder(self) -> Path:
        return self.manifest.parent

    @property
    def out_dir(self) -> Path:
        return self.folder / OUTPUT

    @property
    def archive_name(self) -> str:
        return f"lib{self.crate}_adgen.a"


def cargo_command() -> list[str]:
    """The cargo that runs us (`CARGO`, which cargo sets for its subcommands), else the PATH's."""
    return shlex.split(os.environ.get("CARGO") or "cargo")


def packages(manifest: Path | None, wanted: list[str]) -> list[Package]:
    """The workspace's packages with a library (those named in `wanted`, if any)."""
    command = [*cargo_command(), "metadata", "--format-version", "1", "--no-deps"]
    if manifest is not None:
        command += ["--manifest-path", str(manifest)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise AdgenError(error(f"cargo metadata failed: {done.stderr.strip() or done.stdout.strip()}"))
    found = []
    for p in json.loads(done.stdout)["packages"]:
        library = next((t for t in p["targets"] if {"lib", "rlib"} & set(t["kind"])), None)
        if library is not None and (not wanted or p["name"] in wanted):
            found.append(Package(p["name"], library["name"].replace("-", "_"), Path(p["manifest_path"]),
                                 Path(library["src_path"])))
    missing = set(wanted) - {p.name for p in found}
    if missing:
        raise AdgenError(error(f"no package with a library named {', '.join(sorted(missing))} in the workspace"))
    return found


def annotated(package: Package) -> list[Path]:
    """The library's Rust files under its root's folder that hold annotations, in path order
    (files outside it, and build scripts, are not the library's modules)."""
    root = package.library.parent
    out = []
    for path in sorted(root.rglob("*.rs")):
        if path.name == "build.rs" and path.parent == package.folder:
            continue
        source = SourceFile(path)
        if ("@" in source.text or "adgen::" in source.text) and find_annotations(source):  # (as `adgen build` reads)
            out.append(source)
    stems: dict[str, Path] = {}
    for source in out:
        first = stems.setdefault(source.path.stem, source.path)
        if first != source.path:  # (each source's outputs are named by its stem)
            raise AdgenError(error(f"a second annotated file named '{source.path.name}' (the first: {first}); adgen "
                                   "names each file's outputs by its stem: rename one", span=Span(source, 0)))
    return [source.path for source in out]


@dataclass
class CrateLowering:
    """The library's bitcode from cargo, and each source's kept functions (see the module)."""

    package: Package
    rustc: RustCompiler
    release: bool
    cargo_args: tuple[str, ...] = ()
    # the second pass's, for functions of closures (closures.py): where the crate's targets call each
    # derived function (by source, resolved, and derived name: RustUnit.closure_calls), the symbols of
    # the instances by (source, derived name, k), and the targets' modules holding them
    closure_calls: dict = field(default_factory=dict)
    closure_symbols: dict = field(default_factory=dict)
    callers: tuple[bytes, ...] = ()
    found: list = field(default_factory=list)  # (set by a pass) the calls in the library's own compile

    def __call__(self, sources: list[Path], generated: list[Generated], work: Path) -> list[bytes]:
        # The wrappers first: the library includes them, and cargo compiles it now. (They follow
        # from the annotations alone; a file the same already is left as it is, for cargo.)
        wrappers = {p: text for g in generated for p, text in g.files.items() if p.suffix == ".rs"}
        write_all({p: text for p, text in wrappers.items()
                   if not p.exists() or p.read_text(encoding="utf-8", errors="replace") != text})
        bitcode, dependencies = self._compile(any(kept_apart(g) for g in generated))
        linkage = {(_unqualified(name), *at): symbol  # (name, file, line) -> symbol
                   for (name, *at), symbol in defined_at(Module(optimize.text_of_bitcode(bitcode)).metadata).items()}
        arrays = []
        problems = []
        wrappers_of = {os.path.realpath(p): Path(src).resolve() for src, g in zip(sources, generated)
                       for p in g.files if p.name.endswith(".adgen.rs")}
        if any(name.startswith(CLOSURE) for g in generated for name in (g.unit.rust if g.unit else {})):
            self.found = closures.calls(optimize.text_of_bitcode(bitcode), wrappers_of)

        def own(g: Generated, name: str) -> str | None:
            """The symbol of a function of adgen's in the source's wrappers (a shim, a derivative's glue)."""
            wrappers_file = next(os.path.realpath(p) for p in g.files if p.name.endswith(".adgen.rs"))
            return next((symbol for (n, file, _), symbol in linkage.items() if n == name and file == wrappers_file),
                        None)

        def symbols(src: Path, g: Generated, functions: list, why: str) -> list:
            """The functions' symbols in cargo's compile, by their debug information (an error for each not there)."""
            found = []
            for f in functions:
                if f.name.startswith(CLOSURE):  # an instance of a function of a closure (closures.py)
                    name = self._instance(Path(src).resolve(), g.unit.rust[f.name].closure)
                elif f.name.startswith(BY_VALUE):  # adgen's function taking values' addresses, in the wrappers
                    name = own(g, f.name)
                else:
                    where = (os.path.realpath(src), f.span.source.line_col(f.span.offset)[0])
                    name = linkage.get((_unqualified(f.name), *where))
                if name is None:
                    problems.append(error(f"'{f.name}' is not in cargo's compile of the library{why}", span=f.span))
                found.append(name)
            return found

        for i, (src, g) in enumerate(zip(sources, generated)):
            arrays.append(_keep_module(keep_array(i), symbols(src, g, primal_functions(g), (
                " (in a module the library does not declare, or a file not `include!`ing its wrappers, "
                f"{Path(src).stem}.adgen.rs, whose code instantiates the generic functions derived)"))))
            if g.inactive:  # (the functions marked @inactive, found likewise)
                arrays.append(_keep_module(inactive_array(i), symbols(src, g, g.inactive, "")))
            if g.customs:  # (those with derivatives written by hand, then the glue calling those, in the wrappers)
                glue = [own(g, f"{BY_HAND}{k}") for k in range(len(g.customs))]
                if None in glue:
                    problems.append(error(f"the wrappers of {Path(src).name} are not in cargo's compile of the library "
                                          f"(include! {Path(src).stem}.adgen.rs in it)", span=g.customs[0].function.span))
                arrays.append(_keep_module(custom_array(i), symbols(src, g, [c.primal for c in g.customs], "") + glue))
        if problems:
            raise AdgenError(problems)
        return [bitcode, *dependencies, *self.callers, *arrays]

    def _instance(self, source: Path, closure) -> str | None:
        """The symbol of a closure instance: c0's in the library's compile, the others' as found."""
        if closure.index:
            return self.closure_symbols.get((source, closure.derived, closure.index))
        return next((c.shim for c in self.found if c.source == source and c.derived == closure.derived
                     and c.key[0].endswith(closures.WRAPPERS)), None)

    def _compile(self, stop_inlining: bool = False) -> tuple[bytes, list[bytes]]:
        """The library's bitcode, and that of the crates cargo linked it with (as its messages
        name them: the target folder also holds the second pass's), proc-macro crates and build
        scripts aside."""
        target = self.package.out_dir / "cargo"
        command = [*cargo_command(), "rustc", "--lib", "--manifest-path", str(self.package.manifest),
                   "--target-dir", str(target), *(["--release"] if self.release else []), *self.cargo_args,
                   "--message-format=json-render-diagnostics", "--",
                   "-C", "panic=abort", "-C", "opt-level=2", "-C", "no-prepopulate-passes", "--cap-lints=allow",
                   *self.rustc.flags]
        done = subprocess.run(command, capture_output=True, text=True, env=self._environment(stop_inlining),
                              cwd=self.package.folder)
        if done.returncode != 0:
            raise AdgenError(error(f"cargo could not compile {self.package.name}'s library:\n{done.stderr.strip()}"))
        libraries = [closures.bitcode_of(Path(f)) for m in closures.artifacts(done.stdout)
                     if set(m["target"]["kind"]) & {"lib", "rlib"} for f in m["filenames"] if closures.hashed(f)]
        own = [p for p in libraries if p.stem.rpartition("-")[0] == self.package.crate]
        if not own or not own[-1].exists():
            raise AdgenError(error(f"cargo compiled {self.package.name}'s library but left no bitcode in {target}"))
        return own[-1].read_bytes(), [p.read_bytes() for p in dict.fromkeys(libraries) if p != own[-1] and p.exists()]

    def _environment(self, stop_inlining: bool = False) -> dict[str, str]:
        """Every crate compiled to bitcode too, with every function kept, line tables, one unit; the
        user's RUSTFLAGS kept (the rustc adgen uses, as cargo's). `stop_inlining`: functions are
        marked @inactive, whose calls rustc's MIR inliner must leave (lower.STOP_MIR_INLINING)."""
        ours = ["--emit=llvm-bc,link", "-C", "codegen-units=1", "-C", "link-dead-code", "-C", "debuginfo=1",
                *STOP_MIR_INLINING[stop_inlining]]
        env = {**os.environ, "RUSTC": shlex.join(self.rustc.command), "CARGO_INCREMENTAL": "0"}  # (rustc's
        # incremental compile may fail to write the bitcode asked for: "could not copy ...rcgu.bc")
        if stop_inlining:
            env["RUSTC_BOOTSTRAP"] = "1"
        if env.get("CARGO_ENCODED_RUSTFLAGS"):
            env["CARGO_ENCODED_RUSTFLAGS"] += "\x1f" + "\x1f".join(ours)
        else:
            env["RUSTFLAGS"] = " ".join([*shlex.split(env.get("RUSTFLAGS", "")), *ours])
        return env


def second_pass(first: CrateLowering, sources: list[Path], cargo_args: tuple[str, ...]) -> CrateLowering:
    """The lowering of `cargo adgen build`'s second pass, where the library has functions of
    closures (closures.py): the closures the library's first pass and the workspace's targets
    pass to their wrappers, each an instance, and the targets' modules holding them."""
    package = first.package
    command = [*cargo_command(), "metadata", "--format-version", "1", "--no-deps", "--manifest-path",
               str(package.manifest)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise AdgenError(error(f"cargo metadata failed: {done.stderr.strip()}"))
    workspace = json.loads(done.stdout)
    wrappers_of = {os.path.realpath(package.out_dir / f"{Path(s).stem}.adgen.rs"): Path(s).resolve()
                   for s in sources}
    compile_ = [*cargo_command(), "rustc", "--manifest-path", str(package.manifest), "--target-dir",
                str(package.out_dir / "cargo"), *cargo_args]
    flags = ["-C", "opt-level=2", "-C", "no-prepopulate-passes", "--cap-lints=allow", *first.rustc.flags]
    env = first._environment()
    found, modules = list(first.found), {}
    for i, target in enumerate(closures.targets(workspace, package.name), start=1):
        modules[i] = closures.compiled(target, compile_, flags, env, Path(workspace["workspace_root"]),
                                       first.release)
        found += closures.calls(optimize.text_of_bitcode(modules[i][0]), wrappers_of, i)
    calls: dict = {}
    symbols: dict = {}
    exported: dict[int, dict[str, str]] = {}
    for (source, derived), instances in closures.instances(found).items():
        calls.setdefault(source, {})[derived] = [c.key for c in instances]
        for k, c in enumerate(instances, start=1):
            if c.module == 0:  # (the library's own call: its instance is in the library's compile)
                symbols[(source, derived, k)] = c.shim
            else:
                name = exported.setdefault(c.module, {}).setdefault(
                    c.shim, f"__adgen_closure_instance_{package.crate}_{Path(source).stem}_{derived}_{k}")
                symbols[(source, derived, k)] = name
    callers = tuple(closures.linked(modules[i], names) for i, names in sorted(exported.items()))
    return CrateLowering(package, first.rustc, first.release, cargo_args, calls, symbols, callers)


def _unqualified(name: str) -> str:
    """A function's name as debug information gives it, its generic arguments' paths dropped
    (`fit<geo::fit::Linear>` -> `fit<Linear>`), as an instantiation's entry names them."""
    return re.sub(r"\b(?:[A-Za-z_]\w*::)+", "", name).replace(" ", "")


def _keep_module(array: str, names: list[str]) -> bytes:
    """A module of one array of the named functions' addresses (kept alive, findable in order)."""
    quoted = [f'@"{n}"' for n in names]
    lines = [f"@{array} = constant [{len(names)} x ptr] [{', '.join(f'ptr {q}' for q in quoted)}]"]
    lines += [f"declare void {q}()" for q in dict.fromkeys(quoted)]
    return optimize.bitcode_of("\n".join(lines) + "\n")


def archive(objects: dict[Path, bytes], work: Path) -> bytes:
    """A static library of the objects (`ar`'s format with the symbol index linkers ask for),
    by the bundled toolchain's archiver."""
    folder = work / "archive"
    folder.mkdir()
    for path, code in objects.items():
        (folder / path.name).write_bytes(code)
    library = folder / "library.a"
    done = subprocess.run([*zig(), "ar", "rcs", str(library), *(str(folder / p.name) for p in objects)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise AdgenError(error(f"the archiver failed: {done.stderr.strip()}"))
    return library.read_bytes()
