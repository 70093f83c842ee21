"""How a failed command reads, the same wherever it is shown: adgen's located diagnostics and
their count, as clang closes its own, or one line for a bug in adgen. The CLI prints it;
`adgen.load` raises it as a BuildError."""

from __future__ import annotations

from adgen.base.diagnostics import Diagnostic
from adgen.base.timing import plural


def diagnostics_text(diagnostics: list[Diagnostic]) -> str:
    errors = sum(d.severity == "error" for d in diagnostics)
    return "".join(d.render() + "\n" for d in diagnostics) + f"{plural(errors, 'error')} generated.\n"


def internal_error_text(exc: Exception) -> str:
    """A bug in adgen, in one line; the trace is kept for reports (ADGEN_TRACEBACK)."""
    return (f"adgen: internal error: {type(exc).__name__}: {exc} "
            "(set ADGEN_TRACEBACK=1 for the trace, and please report it)\n")
