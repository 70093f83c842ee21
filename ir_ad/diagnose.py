"""Turns what the AD core cannot differentiate into a located build error: the C `file:line`,
the function, and the instruction."""

from __future__ import annotations

import importlib.util
import os
from functools import cache

from adgen.base.diagnostics import AdgenError, Diagnostic, SourceFile, Span, error, note

from adgen.base.naming import KERNEL_PREFIX
from adgen.base.cxx_names import demangle

from adgen.ir_ad.ir import Instruction, Location, Module, intrinsic_family, rust_path


class Unsupported(Exception):
    """Raised while writing a derivative; `located` turns it into an AdgenError."""

    def __init__(self, function: str, inst: Instruction | None, what: str, irreducible: bool = False,
                 shadowless: bool = False):
        """`shadowless`: a pointer into memory adgen keeps no derivatives of, where a shadow is
        needed: what a derivation whose such pointers are their own shadows can do (runtime
        activity: ir_ad/shadows.py)."""
        super().__init__(what)
        self.function, self.inst, self.what, self.irreducible = function, inst, what, irreducible
        self.shadowless = shadowless


class IrreducibleLoop(AdgenError):
    """A build error for a loop with more than one way in (see build.Prepared.levels)."""


def located(exc: Unsupported, module: Module, derivation: str, primal: str | None = None,
            entry: Span | None = None) -> AdgenError:
    """`primal`: the function the derivation differentiates, whose calls of derived functions
    are where an error in their code (made at an earlier level) stands in the user's source;
    `entry`: the derivation's annotation, where such an error stands without one (`of INNER`)."""
    fn = source_name(exc.function)
    notes = [note(f"the LLVM instruction is: {exc.inst.text}")] if exc.inst is not None else []
    kind = IrreducibleLoop if exc.irreducible else AdgenError
    inside = _in_derived_code(module, exc, primal) if primal else None
    if inside is not None:
        name, span = inside
        called = f", which '{source_name(primal)}' calls here" if span is not None else ""
        message = (f"cannot differentiate {exc.what} in the code of the derived function '{name}'{called} "
                   f"(needed by {_needed(derivation)})")
        return kind(error(message, span or entry, notes))
    message = f"cannot differentiate {exc.what} in function '{fn}' (needed by {_needed(derivation)})"
    return kind(at_instruction(module, exc.function, exc.inst, message, notes, primal))


def at_instruction(module: Module, function: str, inst: Instruction | None, message: str,
                   notes: list[Diagnostic] | None = None, primal: str | None = None) -> Diagnostic:
    """An error at an instruction's C line (or its function's, or none the IR knows). Where
    that line is a library's (a C or C++ library header, Eigen's, Rust's standard library), the
    error stands at the user's line that reached it — where the library's code was inlined, else
    the call leading to it from `primal` — with a note at the library's line."""
    where = module.location(inst.dbg) if inst is not None else None
    if (where is None or where.line == 0) and function in module.functions:  # line 0: code of no line
        where = module.location(module.functions[function].dbg)
    notes = notes or []
    if where is not None and in_library(where.file):
        reached = _reached_from(module, inst, function, primal)
        if reached is not None and _span(reached) is not None:
            inside = _span(where)
            at = "" if inside is not None else f" ({where.file}:{where.line}:{where.column})"
            threads = [note("this line runs code on another thread (Rust's std::thread): adgen does not "
                            "differentiate across threads; differentiate each thread's work on its own, or keep "
                            "the threads outside the differentiated function")] \
                if _through_threads(module, inst, function, primal) else []
            return error(message, _span(reached), [note(f"in the library's code here{at}, which this line reaches",
                                                         inside), *threads, *notes])
    span = _span(where) if where else None
    if span is None and where is not None:
        message = f"{where.file}:{where.line}:{where.column}: {message}"
    return error(message, span, notes)


def in_library(path: str) -> bool:
    """Whether a file is a library's the user did not write: the system's headers, the C and C++
    libraries zig ships, Rust's standard library (remapped to /rustc/, or where a toolchain keeps
    its sources: Debian's /usr/src/rustc-VERSION/, rustup's rust-src)."""
    path = os.path.abspath(path) if not path.startswith("/rustc/") else path
    return path.startswith(_library_roots()) or any(f"/library/{c}/src/" in path for c in _RUST_LIBRARY)


_RUST_LIBRARY = ("core", "alloc", "std", "proc_macro")


@cache
def _library_roots() -> tuple[str, ...]:
    roots = ["/usr/include/", "/usr/lib/", "/usr/local/include/", "/rustc/", "/opt/homebrew/include/"]
    spec = importlib.util.find_spec("ziglang")
    if spec is not None and spec.origin:
        roots.append(os.path.join(os.path.dirname(os.path.realpath(spec.origin)), ""))
    return tuple(roots)


def _reached_from(module: Module, inst: Instruction | None, function: str, primal: str | None) -> Location | None:
    """The user's line (not a library's, not a stub's) that reaches an instruction: the
    innermost where its code was inlined, else on the calls from `primal` to its function,
    innermost first."""
    def user(dbg: str | None) -> Location | None:
        return next((w for w, _ in _inlined(module, dbg) if not in_library(w.file) and not _in_stubs(w)), None)

    found = user(inst.dbg) if inst is not None else None
    if found is None and primal is not None:
        found = next((w for call in reversed(_call_path(module, primal, function)) if (w := user(call.dbg))), None)
    return found


_THREADS = ("/library/std/src/thread/",)  # (Rust's threads: std::thread::spawn, scope)


def _through_threads(module: Module, inst: Instruction | None, function: str, primal: str | None) -> bool:
    """Whether the instruction's code, or a call on the way to it, is Rust's threads' (inlined or called)."""
    chain = _inlined(module, inst.dbg) if inst is not None else []
    if primal is not None:
        for call in _call_path(module, primal, function):
            chain += _inlined(module, call.dbg)
    return any(part in where.file for where, _ in chain for part in _THREADS)


def source_name(function: str) -> str:
    """A function's IR name as its source names it: a Rust symbol (`_ZN7adgen_05model4rosen17h…E`)
    demangled to its path in the file (`rosen`), without the crate adgen compiled it as or
    the hash; a C++ one demangled (`geo::len(geo::vec3)`); C names as they are."""
    name = function.lstrip("@").strip('"')
    for part in ("'checkpointed.", "'step.", "'loop."):  # a function outlined to checkpoint its loops
        name = name.split(part, 1)[0]
    if name.startswith(KERNEL_PREFIX):  # a derived function's code, as its stub calls it
        return name[len(KERNEL_PREFIX):]
    path = rust_path(name)
    if path is None:
        return (demangle(name) or name) if name.startswith("_Z") else name  # (C++: `g(double)`)
    if path and _adgen_crate(path[0]):
        path.pop(0)
    return "::".join(path) or name


def _adgen_crate(name: str) -> bool:
    """`adgen_0`...: the crate names `adgen build` compiles Rust sources as."""
    crate, _, index = name.partition("_")
    return crate == "adgen" and index.isdecimal()


def _needed(derivation: str) -> str:
    """A derived function's name quoted; a description (an Enzyme call) as it is."""
    return derivation if " " in derivation else f"'{derivation}'"


def _span(where) -> Span | None:
    try:
        source = SourceFile(where.file if os.path.isabs(where.file) else os.path.abspath(where.file))
    except OSError:
        return None
    if where.line < 1 or where.line > source.text.count("\n") + 1:
        return None
    return Span(source, source.offset(where.line, max(1, where.column)))


STUBS_SUFFIX = ".adgen.c"  # the stub files adgen generates: no place for an error of the user's


def user_span(module: Module, inst: Instruction) -> Span | None:
    """Where an instruction stands in the user's source (see `user_location`)."""
    where = user_location(module, inst.dbg)
    return _span(where) if where is not None else None


def user_location(module: Module, dbg: str | None) -> Location | None:
    """A debug location in the user's source: itself, or where code of a generated stub file
    was inlined (the call of a derived function), outward."""
    return next((where for where, _ in user_chain(module, dbg)), None)


def user_chain(module: Module, dbg: str | None) -> list[tuple[Location, str]]:
    """A debug location and those it was inlined at, innermost first, in the user's sources (not
    in a generated stub file): (location, its !DILocation)."""
    return [(where, d) for where, d in _inlined(module, dbg) if not _in_stubs(where)]


def called(callee: str) -> str:
    """A call target as C names it: `@llvm.exp.f64` -> exp, `@llvm.maxnum.f64` -> fmax, `@mag` -> mag."""
    family = intrinsic_family(callee)
    if family is None:
        return source_name(callee)
    return {"maxnum": "fmax", "minnum": "fmin", "maximum": "fmax", "minimum": "fmin", "maximumnum": "fmax",
            "minimumnum": "fmin", "fmuladd": "fma"}.get(family, family)


def _in_derived_code(module: Module, exc: Unsupported, primal: str) -> tuple[str, Span | None] | None:
    """The derived function (its C name) whose code, made at an earlier level, holds what
    cannot be differentiated, and the call of it in the user's source: read from the
    instruction's inlining (through a stub), else from the calls leading from `primal` to the
    function it is in."""
    chain = _inlined(module, exc.inst.dbg if exc.inst is not None else None)
    for k, (where, node) in enumerate(chain):
        name = module.subprogram(node) if _in_stubs(where) else None
        if name is not None:
            outer = next((w for w, _ in chain[k + 1:] if not _in_stubs(w)), None)
            return name, _span(outer) if outer else None
    for k, call in enumerate(path := _call_path(module, primal, exc.function)):
        if call.callee.startswith("@" + KERNEL_PREFIX):
            spans = [s for s in (user_span(module, c) for c in reversed(path[:k + 1])) if s is not None]
            return source_name(call.callee), spans[0] if spans else None
    return None


def _inlined(module: Module, dbg: str | None) -> list[tuple[Location, str]]:
    """A debug location and those it was inlined at, innermost first (those with a line)."""
    return [(where, d) for where, d in module.inline_chain(dbg) if where is not None and where.line]


def _in_stubs(where: Location) -> bool:
    return where.file.endswith(STUBS_SUFFIX)


def _call_path(module: Module, start: str, target: str) -> list[Instruction]:
    """The calls from `start` to `target` (the first path found, breadth first)."""
    paths: dict[str, list[Instruction]] = {start: []}
    todo = [start]
    while todo and target not in paths:
        name = todo.pop(0)
        fn = module.functions.get(name)
        for inst in fn.instructions() if fn is not None else ():
            if inst.opcode == "call" and inst.callee and inst.callee not in paths:
                paths[inst.callee] = paths[name] + [inst]
                todo.append(inst.callee)
    return paths.get(target, [])
