"""Reading the debug information clang attaches (`-gline-tables-only`): where an instruction
stands in the C source, where it was inlined, and the function its code came from. Each
reader takes the module's metadata nodes ("!12" -> its text); `Module` offers them as
queries."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass


@dataclass
class Location:
    file: str
    line: int
    column: int


def location(metadata: dict[str, str], dbg: str | None) -> Location | None:
    """The C file, line and column of a !DILocation."""
    if not dbg or dbg not in metadata:
        return None
    loc = metadata[dbg]
    line = re.search(r"line: (\d+)", loc)
    col = re.search(r"column: (\d+)", loc)
    scope = re.search(r"scope: (![0-9]+)", loc)
    file = _file_of(metadata, scope.group(1)) if scope else None
    if not line or not file:
        return None
    return Location(file, int(line.group(1)), int(col.group(1)) if col else 1)


def written_location(metadata: dict[str, str], dbg: str | None) -> tuple[str, int, int] | None:
    """The file of a !DILocation as the compiler was given it (relative to its directory, as
    Rust's `Location::caller()` names it too), its line and column."""
    loc = metadata.get(dbg or "", "")
    line, col = re.search(r"line: (\d+)", loc), re.search(r"column: (\d+)", loc)
    scope = re.search(r"scope: (![0-9]+)", loc)
    file = _file_of(metadata, scope.group(1), joined=False) if scope else None
    if not line or not file:
        return None
    return file, int(line.group(1)), int(col.group(1)) if col else 1


_CALL = re.compile(r'^\s*(?:%[-\w.$"]+ = )?(?:tail |musttail |notail )?call [^@]*@("[^"]+"|[-\w.$]+)\(.*!dbg (![0-9]+)')


def calls_at(text: str, metadata: dict[str, str], callees: set[str]) -> list[tuple[str, tuple[str, int, int]]]:
    """Each call of a function of `callees` (by bare name) in a module's text, with where it is
    (written_location): (callee, location)."""
    found = []
    for line in text.split("\n"):
        m = _CALL.match(line) if " call " in line and "!dbg" in line else None
        if m and m.group(1).strip('"') in callees:
            at = written_location(metadata, m.group(2))
            if at is not None:
                found.append((m.group(1).strip('"'), at))
    return found


def inlined_at(metadata: dict[str, str], dbg: str | None) -> str | None:
    """The !DILocation a location's code was inlined at (the call's), if it was."""
    outer = re.search(r"inlinedAt: (![0-9]+)", metadata.get(dbg or "", ""))
    return outer.group(1) if outer else None


def subprogram(metadata: dict[str, str], node: str) -> str | None:
    """The source name of the function (its !DISubprogram) a debug location's scope is in."""
    for _ in range(32):
        text = metadata.get(node, "")
        name = re.search(r'DISubprogram\(name: "([^"]*)"', text)
        if name:
            return name.group(1)
        scope = re.search(r"scope: (![0-9]+)", text)
        if not scope:
            break
        node = scope.group(1)
    return None


def _file_of(metadata: dict[str, str], node: str, depth: int = 0, joined: bool = True) -> str | None:
    text = metadata.get(node, "")
    if text.startswith("!DIFile"):
        name = re.search(r'filename: "([^"]*)"', text)
        directory = re.search(r'directory: "([^"]*)"', text)
        if not name:
            return None
        fname = name.group(1)
        if joined and directory and not fname.startswith("/"):
            fname = directory.group(1).rstrip("/") + "/" + fname
        return fname
    m = re.search(r"file: (![0-9]+)", text)
    if m and depth < 20:
        return _file_of(metadata, m.group(1), depth + 1, joined)
    m = re.search(r"scope: (![0-9]+)", text)
    if m and depth < 20:
        return _file_of(metadata, m.group(1), depth + 1, joined)
    return None


_VARIABLE = re.compile(r"(?:#dbg_(?:value|declare)\(|@llvm\.dbg\.(?:value|declare)\(metadata )[^%!]*(%[-\w.$]+), "
                       r"(?:metadata )?(![0-9]+), (?:metadata )?!DIExpression\(\)")


def variables(metadata: dict[str, str], function_text: str) -> dict[str, str]:
    """The source variables a function's values are, by its debug records (`#dbg_value`, and
    `#dbg_declare` for a variable's memory; with -g, none with line tables only): the value
    ("%x") -> the variable's name, the first where it is several."""
    found: dict[str, str] = {}
    for value, node in _VARIABLE.findall(function_text):
        name = re.search(r'DILocalVariable\(name: "([^"]*)"', metadata.get(node, ""))
        if name:
            found.setdefault(value, name.group(1))
    return found


_SUBPROGRAM = re.compile(r'^distinct !DISubprogram\(name: "([^"]*)", (?:linkageName: "([^"]*)", )?.*?\bline: (\d+)')


def defined_at(metadata: dict[str, str]) -> dict[tuple[str, str, int], str]:
    """(source name, file, line) -> linkage name of each function the debug information describes
    with both (rustc's: the line of its name), for finding a source's function in bitcode without
    a keep array. A definition without a linkage name is named by its symbol (`#[no_mangle]`)."""
    out = {}
    for node, text in metadata.items():
        m = _SUBPROGRAM.match(text)
        file = _file_of(metadata, node) if m else None
        if m and file:
            out[(m.group(1), os.path.realpath(file), int(m.group(3)))] = m.group(2) or m.group(1)
    return out
