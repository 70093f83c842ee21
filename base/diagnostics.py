"""Located diagnostics: every user-facing error is `FILE:LINE:COL: error: message` plus the
source line and a caret under the offending token, as clang prints them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path


def display_path(path: str | Path) -> str:
    """A path as a user would like to read it: relative to the working directory when shorter."""
    path = str(path)
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return relative if len(relative) < len(path) else path


class SourceFile:
    """A C source held as text, able to turn offsets into lines and columns."""

    def __init__(self, path: str | Path, text: str | None = None):
        self.path = Path(path)
        self.name = display_path(path) if self.path.is_absolute() else str(path)
        self.text = text if text is not None else self.path.read_text(encoding="utf-8", errors="replace")
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column (in bytes, as clang counts) of a character offset."""
        lo, hi = 0, len(self._line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        start = self._line_starts[lo]
        return lo + 1, len(self.text[start:offset].encode("utf-8")) + 1

    def offset(self, line: int, byte_col: int) -> int:
        """Character offset of a clang location (1-based line, 1-based byte column)."""
        start = self._line_starts[min(line, len(self._line_starts)) - 1]
        prefix = self.line_text(line).encode("utf-8")[: byte_col - 1]
        return start + len(prefix.decode("utf-8", errors="ignore"))

    @property
    def line_count(self) -> int:
        """The number of lines, a last one without a newline included."""
        return len(self._line_starts) - (self.text.endswith("\n") or not self.text)

    def line_text(self, line: int) -> str:
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]


@dataclass(frozen=True)
class Span:
    """A stretch of a source file: where a diagnostic points."""

    source: SourceFile
    offset: int
    length: int = 1

    def location(self) -> str:
        line, col = self.source.line_col(self.offset)
        return f"{self.source.name}:{line}:{col}"


@dataclass
class Diagnostic:
    severity: str  # "error" or "note"
    message: str
    span: Span | None = None
    notes: list["Diagnostic"] = field(default_factory=list)

    def render(self) -> str:
        if self.span is None:
            head = f"adgen: {self.severity}: {self.message}"
            return "\n".join([head] + [n.render() for n in self.notes])
        head = f"{self.span.location()}: {self.severity}: {self.message}"
        return "\n".join([head, *_snippet(self.span)] + [n.render() for n in self.notes])


def _snippet(span: Span) -> list[str]:
    source = span.source
    line, _ = source.line_col(span.offset)
    text = source.line_text(line).replace("\t", " ")
    start = span.offset - source._line_starts[line - 1]
    width = max(1, min(span.length, len(text) - start))
    gutter = f"{line:5d} | "
    marker = " " * start + "^" + "~" * (width - 1)
    return [gutter + text, " " * (len(gutter) - 2) + "| " + marker]


class AdgenError(Exception):
    """One or more diagnostics that stop the run; the CLI prints them and exits 1."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic):
        self.diagnostics = diagnostics if isinstance(diagnostics, list) else [diagnostics]
        super().__init__("\n".join(d.render() for d in self.diagnostics))


def error(message: str, span: Span | None = None, notes: list[Diagnostic] | None = None) -> Diagnostic:
    return Diagnostic("error", message, span, notes or [])


def note(message: str, span: Span | None = None) -> Diagnostic:
    return Diagnostic("note", message, span)


class Collector:
    """Gathers the errors of one stage so a user sees them all at once, not one per run."""

    def __init__(self):
        self.diagnostics: list[Diagnostic] = []

    def add(self, diagnostic: Diagnostic) -> None:
        self.diagnostics.append(diagnostic)

    def raise_if_any(self) -> None:
        if self.diagnostics:
            raise AdgenError(self.diagnostics)
