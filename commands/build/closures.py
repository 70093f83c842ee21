"""The closures a crate passes to derived functions of closures (specs/annotations.md,
"Closures"), found for `cargo adgen build`'s second pass.

A closure's code is compiled where the closure is written, often in another crate of the
workspace (a binary, an example, a test). After the library's pass, `callers` compiles each
target that may call the library's wrappers (the package's own binaries, examples, tests and
unit tests; and every target of the workspace's packages that depend on it), as the library is
compiled, to bitcode with line tables. `calls` finds in a module each call of a wrapper's
instance (`integrate_grad<app::main::{closure_env#0}>`, by its debug information) and the shim
instance it keeps (`__adgen_closure_integrate<...>`), with where the call is: file (as rustc was
given it, which is what `Location::caller()` says at run time), line and column. `instances`
numbers them per derived function (a place called with closures of two types is an error at
the call: the wrapper tells instances apart by place), and `linked` prepares each target's
module for the derivative module: its shim instances exported under names of adgen's, the rest
made internal, so that nothing of it clashes with the library's own compile."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from adgen.base.diagnostics import AdgenError, SourceFile, Span, error
from adgen.frontend.rust_closures import CLOSURE, PLACEHOLDER
from adgen.ir_ad import optimize
from adgen.ir_ad.ir import Module
from adgen.ir_ad.ir.debuginfo import calls_at, defined_at
from adgen.ir_ad.ir.reach import spelled

WRAPPERS = ".adgen.rs"


@dataclass(frozen=True)
class Call:
    """A place calling a wrapper of a function of a closure, and the closure's shim instance."""

    source: Path  # the annotated source whose wrappers these are (resolved)
    derived: str  # the wrapper's (the derived function's) Rust name
    key: tuple[str, int, int]  # (file as rustc was given it, line, column)
    shim: str  # the shim instance's symbol in its module
    wrapper: str  # the wrapper instance's symbol
    module: int  # which module it is in


def wanted(wrappers: list[Path]) -> dict[Path, list[str]]:
    """The wrappers files holding functions of closures, with the derived functions' names."""
    found = {}
    for path in wrappers:
        names = re.findall(rf"\bfn {PLACEHOLDER}(\w+)", path.read_text(encoding="utf-8", errors="replace"))
        if names:
            found[path] = names
    return found


def calls(text: str, sources: dict[str, Path], module: int = 0) -> list[Call]:
    """Each call of a wrapper of a function of a closure in a module's text; `sources`: the
    wrappers files (real paths) -> the annotated source each is of."""
    m = Module(text)
    defined = defined_at(m.metadata)
    wrappers, shims = {}, {}
    for (name, file, _), symbol in defined.items():
        if file in sources and "<" in name:
            base = name.split("<", 1)[0]
            (shims if base.startswith(CLOSURE) else wrappers)[symbol] = (base, sources[file])
    out = []
    found = calls_at(m.text, m.metadata, set(wrappers)) if wrappers else []
    for callee, key in found:
        body = m.functions.text(spelled(callee)) if spelled(callee) in m.functions else ""
        body += "".join(m.globals.get(g, "") for g in set(re.findall(r'@[-\w.$]+|@"[^"]+"', body)))  # (`&(f as
        # *const ())` reads the address from a constant)
        kept = [s for s in shims if f"@{s}" in body or f'@"{s}"' in body]
        if kept:
            base, source = wrappers[callee]
            out.append(Call(source, base, key, kept[0], callee, module))
    return out


def instances(found: list[Call]) -> dict[tuple[Path, str], list[Call]]:
    """The instances of each derived function (by source and name), in the order of their
    places, one per place; c0's (the wrappers' own call) apart. A place called with closures of
    several types (from a function generic over the closure) is an error at it."""
    by_place: dict[tuple[Path, str, tuple], Call] = {}
    problems = []
    for c in found:
        if c.key[0].endswith(WRAPPERS):  # (c0: the wrappers' own call)
            continue
        first = by_place.setdefault((c.source, c.derived, c.key), c)
        if first.module == c.module and first.shim != c.shim and not any(
                p.message.startswith(f"this call of '{c.derived}'") and p.span and p.span.source.path == _path(c.key)
                for p in problems):
            problems.append(error(
                f"this call of '{c.derived}' passes closures of several types (it is in a function generic over "
                "the closure): adgen tells a closure's derivative by where the derived function is called (call it "
                "where the closure is written)", _span(c.key)))
    if problems:
        raise AdgenError(problems)
    out: dict[tuple[Path, str], list[Call]] = {}
    for (source, derived, _), c in sorted(by_place.items(), key=lambda kv: (str(kv[0][0]), kv[0][1], kv[0][2])):
        out.setdefault((source, derived), []).append(c)
    return out


def _path(key: tuple) -> Path:
    return Path(key[0])


def _span(key: tuple) -> Span | None:
    """Where a place is, in its file (relative to the workspace's root, where cargo runs rustc)."""
    try:
        source = SourceFile(Path(key[0]))
    except OSError:
        return None
    lines = source.text.split("\n")
    if not 0 < key[1] <= len(lines):
        return None
    return Span(source, sum(len(x) + 1 for x in lines[:key[1] - 1]) + key[2] - 1)


@dataclass(frozen=True)
class Target:
    """A target cargo compiles that may call the wrappers: its package and how `cargo rustc` names it."""

    package: str
    manifest: str
    kind: str  # cargo's: bin, example, test, lib
    name: str
    test: bool  # compiled with the test harness (whose panics cannot abort)

    @property
    def selector(self) -> tuple[str, ...]:
        """How `cargo rustc` names it (a library's unit tests: in the test profile)."""
        if self.kind == "lib":
            return ("--lib", "--profile", "test") if self.test else ("--lib",)
        return (f"--{self.kind}", self.name)

    def made(self, message: dict) -> bool:
        """Whether a compiler-artifact message of cargo's is of this target."""
        kinds = set(message["target"]["kind"])
        return (message.get("manifest_path") == self.manifest and message["target"]["name"] == self.name and
                (self.kind in kinds or self.kind == "lib" and bool(kinds & {"rlib", "lib"})) and
                (self.kind != "lib" or bool(message.get("profile", {}).get("test")) == self.test))


def targets(workspace: dict, package: str) -> list[Target]:
    """The targets of the workspace that may call the package's wrappers: its own binaries,
    examples, integration and unit tests, and every target of the packages depending on it."""
    out = []
    for p in workspace["packages"]:
        own = p["name"] == package
        if not own and not any(d["name"] == package for d in p.get("dependencies", [])):
            continue
        for t in p["targets"]:
            kinds, here = set(t["kind"]), (p["name"], p["manifest_path"])
            if kinds & {"bin", "example"}:
                out.append(Target(*here, "bin" if "bin" in kinds else "example", t["name"], False))
            elif "test" in kinds:
                out.append(Target(*here, "test", t["name"], True))
            elif kinds & {"lib", "rlib"}:
                if not own:
                    out.append(Target(*here, "lib", t["name"], False))
                if t.get("test", True):
                    out.append(Target(*here, "lib", t["name"], True))
    return out


def compiled(target: Target, command: list[str], flags: list[str], env: dict, cwd: Path, release: bool
             ) -> list[bytes]:
    """A target's bitcode, then that of the crates it is linked with (each as this compile made
    it: their symbols are the ones it calls), proc-macro crates and build scripts aside."""
    profile = [] if "--profile" in target.selector else ["--release"] if release else []
    done = subprocess.run([*command, "-p", target.package, *target.selector, *profile,
                           "--message-format=json-render-diagnostics", "--", *flags,
                           *([] if target.test else ["-C", "panic=abort"])],
                          capture_output=True, text=True, env=env, cwd=cwd)
    made = artifacts(done.stdout)
    own = next((m for m in made if target.made(m)), None)
    if done.returncode != 0 or own is None:
        raise AdgenError(error(f"cargo could not compile {target.package}'s {' '.join(target.selector)}, to find the "
                               f"closures it passes:\n{done.stderr.strip()}"))
    crates = [bitcode_of(Path(f)) for m in made if m is not own and set(m["target"]["kind"]) & {"lib", "rlib"}
              for f in m["filenames"] if hashed(f)]
    if own.get("executable"):
        mine = _bitcode_of_executable(Path(own["executable"]))
    else:
        mine = next(bitcode_of(Path(f)) for f in own["filenames"] if hashed(f))
    return [p.read_bytes() for p in [mine, *dict.fromkeys(c for c in crates if c != mine)] if p.exists()]


def artifacts(stdout: str) -> list[dict]:
    """The compiler-artifact messages of cargo's JSON output (one a line, among others)."""
    out = []
    for line in stdout.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if message.get("reason") == "compiler-artifact":
            out.append(message)
    return out


def hashed(filename: str) -> bool:
    """Whether a library's file cargo names is its compile's own, named with its hash (the
    target's rlib may be a copy, `libquad.rlib`, where its rmeta is not)."""
    return filename.endswith((".rlib", ".rmeta")) and "-" in Path(filename).name


def bitcode_of(library: Path) -> Path:
    """`deps/libNAME-HASH.rlib` (or `.rmeta`) -> `deps/NAME-HASH.bc`."""
    return library.with_name(library.name.removeprefix("lib")).with_suffix(".bc")


def _bitcode_of_executable(executable: Path) -> Path:
    """An executable's bitcode: beside the file of the same content whose name has cargo's hash
    (cargo copies `deps/app-HASH` to `app`, `examples/x-HASH` to `examples/x`)."""
    if (executable.parent / (executable.name + ".bc")).exists():  # (a test's, in deps/ already)
        return executable.parent / (executable.name + ".bc")
    stem = executable.name.replace("-", "_")
    for folder in (executable.parent, executable.parent / "deps"):
        for candidate in sorted(folder.glob(f"{stem}-*")):
            if not candidate.suffix and candidate.is_file() and os.path.samefile(candidate, executable):
                return candidate.with_suffix(".bc")
    raise AdgenError(error(f"cargo left no bitcode beside {executable}"))


def linked(bitcodes: list[bytes], exported: dict[str, str]) -> bytes:
    """A target's module for the derivative module: its shims' instances exported as named."""
    return optimize.exported_only(bitcodes, exported)

