"""Turns what the AD core cannot differentiate into a located build error: the C `file:line`,
the function, and the instruction."""

from __future__ import annotations

import os

from adgen.frontend.diagnostics import AdgenError, Diagnostic, SourceFile, Span, error, note

from .ir import Instruction, Module


class Unsupported(Exception):
    """Raised while writing a derivative; `located` turns it into an AdgenError."""

    def __init__(self, function: str, inst: Instruction | None, what: str):
        super().__init__(what)
        self.function, self.inst, self.what = function, inst, what


def located(exc: Unsupported, module: Module, derivation: str) -> AdgenError:
    fn = exc.function.lstrip("@").strip('"')
    message = f"cannot differentiate {exc.what} in function '{fn}' (needed by {_needed(derivation)})"
    notes = [note(f"the LLVM instruction is: {exc.inst.text}")] if exc.inst is not None else []
    return AdgenError(at_instruction(module, exc.function, exc.inst, message, notes))


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
