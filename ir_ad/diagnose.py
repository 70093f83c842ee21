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
    message = f"cannot differentiate {exc.what} in function '{fn}' (needed by '{derivation}')"
    notes: list[Diagnostic] = []
    if exc.inst is not None:
        notes.append(note(f"the LLVM instruction is: {exc.inst.text}"))
    where = module.location(exc.inst.dbg) if exc.inst is not None else None
    if where is None and exc.function in module.functions:
        where = module.location(module.functions[exc.function].dbg)
    span = _span(where) if where else None
    if span is None and where is not None:
        message = f"{where.file}:{where.line}:{where.column}: {message}"
    return AdgenError(error(message, span, notes))


def _span(where) -> Span | None:
    try:
        source = SourceFile(where.file if os.path.isabs(where.file) else os.path.abspath(where.file))
    except OSError:
        return None
    if where.line < 1 or where.line > source.text.count("\n") + 1:
        return None
    return Span(source, source.offset(where.line, max(1, where.column)))
