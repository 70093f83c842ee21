"""Finds the comments of a C or Rust file, skipping string and character literals, so that
annotations are looked for only where the compiler would ignore them."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Comment:
    """A block comment, or a run of `//` comments on consecutive lines (read as one)."""

    start: int  # offset of the opening `//` or `/*`
    end: int  # offset just past the comment
    block: bool
    attribute: bool = False  # Rust's `#[adgen::diff(...)]`: the annotation as an attribute
    autodiff: bool = False  # Rust's `#[autodiff_reverse(...)]` (std::autodiff's spelling): read by annotations.py

    def body(self, text: str) -> str:
        """The comment's text with its delimiters blanked, offsets unchanged: a position in the
        body is a position in the file. A leading `*` on a continuation line of a block comment
        (the usual decoration) is blanked too, as is the code between a run's `//` lines. An
        attribute `#[adgen::diff(...)]` reads as the annotation `@diff(...)`."""
        inner = text[self.start : self.end]
        if self.autodiff:  # (no marker: annotations.std_autodiff reads it)
            return " " * len(inner)
        if self.attribute:  # (`#[adgen::` blanked but its last `:`, which becomes the marker's `@`; `]` blanked)
            return " " * (len(ATTRIBUTE) - 1) + "@" + inner[len(ATTRIBUTE) : -1] + " "
        if not self.block:
            return re.sub(r"(^|\n)[ \t]*//", lambda m: m.group(0).replace("/", " "), inner)
        closed = inner.endswith("*/") and len(inner) >= 4
        inner = "  " + inner[2 : len(inner) - 2 if closed else len(inner)] + ("  " if closed else "")
        return re.sub(r"(\n[ \t]*)\*(?!/)", lambda m: m.group(1) + " ", inner)


def find_comments(text: str) -> list[Comment]:
    comments: list[Comment] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            i = _skip_literal(text, i)
        elif text.startswith("//", i):
            i = _line_comment(text, i, comments, continued=True)
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            end = n if close < 0 else close + 2
            comments.append(Comment(i, end, block=True))
            i = end
        else:
            i += 1
    return comments


def _line_comment(text: str, i: int, comments: list[Comment], continued: bool) -> int:
    """Adds the `//` comment at `i` (to the run of those on the lines just above it); returns
    where it ends. `continued`: C's backslash before the newline continues it."""
    end = i
    while True:
        nl = text.find("\n", end)
        if nl < 0:
            end = len(text)
            break
        if continued and (text[nl - 1] == "\\" or text[nl - 2 : nl] == "\\\r"):
            end = nl + 1
            continue
        end = nl
        break
    previous = comments[-1] if comments else None
    if previous and not previous.block and _one_line_break(text[previous.end : i]):
        comments[-1] = Comment(previous.start, end, block=False)
    else:
        comments.append(Comment(i, end, block=False))
    return end


def _one_line_break(between: str) -> bool:
    return between.count("\n") == 1 and not between.strip()


def _skip_literal(text: str, i: int) -> int:
    quote, j = text[i], i + 1
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == quote or c == "\n":
            return j + 1
        j += 1
    return j


# std::autodiff's attributes (`#[autodiff_reverse(d_f, Duplicated, Active)]`, also by their paths
# `std::autodiff::`, `core::autodiff::`, and adgen's crate's `adgen::`), read as annotations
STD_AUTODIFF = re.compile(r"#\[\s*(?:(?:std|core)::autodiff::|adgen::)?(autodiff(?:_reverse|_forward)?)\s*\(")
ATTRIBUTE = "#[adgen::"  # (the attribute spelling of an annotation, from adgen's crate of attributes: specs/annotations.md)


def find_rust_comments(text: str) -> list[Comment]:
    """Rust's comments: `//` runs as in C, block comments that nest, and literals Rust's way
    (raw strings `r#"…"#`; a `'` starts a character literal only if one closes it, else it is
    a lifetime); and the attributes `#[adgen::diff(...)]`, `#[adgen::inactive]`,
    `#[adgen::derivative(...)]`, which hold annotations as comments do."""
    comments: list[Comment] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        raw = re.match(r'b?r(#*)"', text[i:i + 260]) if ch in "br" and (i == 0 or not _word(text[i - 1])) else None
        if raw:
            close = text.find('"' + raw.group(1), i + raw.end())
            i = n if close < 0 else close + 1 + len(raw.group(1))
        elif ch == '"':
            i = _skip_literal(text, i)
        elif ch == "'":
            char = re.match(r"'(?:[^'\\\n]|\\(?:x[0-9A-Fa-f]{2}|u\{[0-9A-Fa-f]{1,6}\}|.))'", text[i:i + 16])
            i += char.end() if char else 1  # else a lifetime, `'a`
        elif text.startswith("//", i):
            i = _line_comment(text, i, comments, continued=False)
        elif ch == "#" and STD_AUTODIFF.match(text, i):
            j = closing(text, i + 1)
            comments.append(Comment(i, j, block=False, attribute=True, autodiff=True))
            i = j
        elif text.startswith(ATTRIBUTE, i):
            j = closing(text, i + 1)  # (from its `[`)
            comments.append(Comment(i, j, block=False, attribute=True))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            comments.append(Comment(i, j, block=True))
            i = j
        else:
            i += 1
    return comments


def closing(text: str, at: int) -> int:
    """Just past the bracket closing the one at `at` (brackets and parentheses balanced), or
    the end of the text."""
    depth = 0
    for i in range(at, len(text)):
        depth += (text[i] in "[(") - (text[i] in "])")
        if depth == 0:
            return i + 1
    return len(text)


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"
