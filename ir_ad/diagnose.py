"""Turns what the AD core cannot differentiate into a located build error: the C `file:line`,
the function, and the instruction."""

from __future__ import annotations

import os
import re

from adgen.frontend.diagnostics import AdgenError, Diagnostic, SourceFile, Span, error, note

from .ir import Instruction, Module


class Unsupported(Exception):
    """Raised while writing a derivative; `located` turns it into an AdgenError."""

    def __init__(self, function: str, inst: Instruction | None, what: str, irreducible: bool = False):
        super().__init__(what)
        self.function, self.inst, self.what, self.irreducible = function, inst, what, irreducible


class IrreducibleLoop(AdgenError):
    """A build error for a loop with more than one way in (see build.Prepared.levels)."""


def located(exc: Unsupported, module: Module, derivation: str) -> AdgenError:
    fn = source_name(exc.function)
    message = f"cannot differentiate {exc.what} in function '{fn}' (needed by {_needed(derivation)})"
    notes = [note(f"the LLVM instruction is: {exc.inst.text}")] if exc.inst is not None else []
    return (IrreducibleLoop if exc.irreducible else AdgenError)(at_instruction(module, exc.function, exc.inst,
                                                                              message, notes))


def at_instruction(module: Module, function: str, inst: Instruction | None, message: str,
                   notes: list[Diagnostic] | None = None) -> Diagnostic:
    """An error at an instruction's C line (or its function's, or none the IR knows)."""
    where = module.location(inst.dbg) if inst is not None else None
    if (where is None or where.line == 0) and function in module.functions:  # line 0: code of no line
        where = module.location(module.functions[function].dbg)
    span = _span(where) if where else None
    if span is None and where is not None:
        message = f"{where.file}:{where.line}:{where.column}: {message}"
    return error(message, span, notes or [])


def source_name(function: str) -> str:
    """A function's IR name as its source names it: a Rust symbol (`_ZN7adgen_05model4rosen17h…E`)
    demangled to its path in the file (`rosen`), without the crate adgen compiled it as or
    the hash; C names as they are."""
    name = function.lstrip("@").strip('"')
    if not re.fullmatch(r"_ZN(\d+[^\d]\S*)E", name):
        return name
    parts, at = [], 3
    while at < len(name) - 1:
        m = re.match(r"\d+", name[at:])
        if m is None:
            return name
        length = int(m.group())
        at += m.end()
        parts.append(name[at:at + length])
        at += length
    if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        parts.pop()
    if parts and re.fullmatch(r"adgen_\d+", parts[0]):
        parts.pop(0)
    return "::".join(parts).replace("_$u7b$$u7b$closure$u7d$$u7d$", "{{closure}}") or name


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
