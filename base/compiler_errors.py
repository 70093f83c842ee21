"""The errors of the compilers adgen lowers sources with (clang for C, rustc for Rust), as
adgen's own located diagnostics in the user's files: the one place that reads their output, so
that no path of adgen's own (its temporary lowering wrapper, stub file, or generated header)
reaches the user.

clang is given the user's source through a wrapper that includes it, and rustc a copy of the
source with adgen's code appended; what adgen adds comes after the source's last line, so an
error in adgen's own text (the source cut off in the middle of a declaration, say) is placed at
the end of the source. Errors in the files the user's code includes are placed there; errors in
what adgen generated name the source they were generated for, without a position."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from adgen.base.diagnostics import Diagnostic, SourceFile, Span, error, note

_LOCATED = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<severity>fatal error|error|warning|note): "
                      r"(?P<message>.*)$")
_UNLOCATED = re.compile(r"^(?:\S*: )?(?:fatal )?error: (?P<message>.*)$")  # the driver's own: a bad flag


@dataclass
class Files:
    """What clang compiled, and how its paths read to the user: `user` (real path -> the
    file, text included where adgen made it), `wrapper` (the file standing for `source`, whose
    own text counts as after its end) and adgen's own files (real path -> what they stand
    for, in words)."""

    source: SourceFile
    wrapper: str | None = None
    user: dict[str, SourceFile] = field(default_factory=dict)
    own: dict[str, str] = field(default_factory=dict)

    def read(self, path: str, real: str) -> SourceFile | None:
        """The user's file at `path` (its real path `real`), read once; None if it cannot be read."""
        if real not in self.user:
            try:
                self.user[real] = SourceFile(Path(path))
            except OSError:
                return None
        return self.user[real]


def compiler_errors(stderr: str, files: Files, compiler: str) -> list[Diagnostic]:
    """clang's errors (and the notes after each) as diagnostics; its warnings, the 'In file
    included from' chains and the count are dropped (adgen prints its own)."""
    if "\\" in str(files.source.path) and re.search(r"failed to parse '[^']*\.d'", stderr):
        return [error(f"zig's clang cannot compile a file whose path holds a backslash ({files.source.name}): its reader "
                      "of clang's dependency files fails; rename the file, or build with another clang (--cc, ADGEN_CC)")]
    found: list[Diagnostic] = []
    keep_notes = False
    for line in stderr.splitlines():
        m = _LOCATED.match(line)
        if m:
            severity = m["severity"]
            if severity == "note":
                if keep_notes and found:
                    found[-1].notes.append(note(m["message"], _span(m, files)))
                continue
            keep_notes = severity != "warning"
            if keep_notes:
                found.append(_located(m, files))
            continue
        m = _UNLOCATED.match(line)
        if m:
            found.append(error(f"{compiler}: {m['message']}"))
    return found or [error(f"{compiler} could not compile {files.source.name}")]


def _located(m: re.Match, files: Files) -> Diagnostic:
    span = _span(m, files)
    if span is None:
        return error(f"{m['message']} (in {files.own.get(os.path.realpath(m['path']), m['path'])})")
    return error(m["message"], span)


def _span(m: re.Match, files: Files) -> Span | None:
    """Where a clang location is for the user: None in a file of adgen's own, or one that is
    not a file (`<command line>`)."""
    path = os.path.realpath(m["path"])
    if path == files.wrapper:
        return _at_end(files.source)
    if path in files.own:
        return None
    source = files.read(m["path"], path)
    if source is None:
        return None
    line = int(m["line"])
    if line > source.line_count:
        return _at_end(source)
    return Span(source, source.offset(line, int(m["col"])))


def _at_end(source: SourceFile) -> Span:
    """Past the last character of the source: what the wrapper adds comes there."""
    text = source.text.rstrip()
    return Span(source, len(text))


def rustc_errors(stderr: str, files: Files, compiler: str) -> list[Diagnostic]:
    """rustc's errors, from its JSON output (`--error-format=json`), each with its labelled
    places and its notes and help as notes; its warnings and closing count are dropped."""
    found: list[Diagnostic] = []
    for line in stderr.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("$message_type", "diagnostic") != "diagnostic" or not d.get("level", "").startswith("error"):
            continue  # (rustc before 1.64 writes no `$message_type`)
        if "message" not in d or "spans" not in d:
            continue
        spans = d["spans"]
        if not spans and re.match(r"aborting due to", d["message"]):
            continue
        primary = next((s for s in spans if s["is_primary"]), None)
        notes = [note(s["label"], _rust_span(s, files)) for s in spans if s is not primary and s["label"]]
        notes += [note(c["message"], _rust_span(c["spans"][0], files) if c["spans"] else None) for c in d["children"]]
        span = _rust_span(primary, files) if primary else None
        found.append(error(d["message"] if primary else f"{compiler}: {d['message']}", span, notes))
    return found or [error(f"{compiler} could not compile {files.source.name}")]


def _rust_span(span: dict, files: Files) -> Span | None:
    path = os.path.realpath(span["file_name"])
    source = files.read(span["file_name"], path)
    if source is None:
        return None
    data = source.text.encode("utf-8")
    if span["byte_start"] >= len(data.rstrip()):
        return _at_end(source)
    start = len(data[:span["byte_start"]].decode("utf-8", errors="ignore"))
    return Span(source, start, max(1, len(data[span["byte_start"]:span["byte_end"]].decode("utf-8", errors="ignore"))))
