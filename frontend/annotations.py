"""Parses `@diff(...)`, `@inactive` and `@derivative(...)` annotations out of C comments into
plain dataclasses.

The grammar lives in annotations.lark; a Lark Transformer turns its tree into `Entry`
records whose words still carry their positions, so later checks can point at them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from adgen.base.parsers import cached_lark
from adgen.frontend.comments import STD_AUTODIFF, Comment, find_comments, find_rust_comments
from adgen.base.diagnostics import AdgenError, SourceFile, Span, error, note
from adgen.frontend.languages import is_rust

MARKERS = r"@(?:diff|inactive|derivative)\b"


@dataclass(frozen=True)
class Word:
    """A token of an annotation and where it stands in the file."""

    text: str
    span: Span


@dataclass(frozen=True)
class Entry:
    """One `name: [mode[width]] [of inner] (acts) [-> act]` of an annotation, unresolved."""

    name: Word
    mode: Word | None
    width: Word | None
    activities: tuple[Word, ...]
    returns: Word | None
    params_span: Span  # the parenthesised activity list, for arity errors
    of: Word | None = None  # another entry's derived name: derive that function, not the one below
    template_args: Word | None = None  # C++: `<double>`, the instantiation of the function template below
    budget: Word | None = None  # `within 64MiB`: the memory reverse mode may keep
    # std::autodiff's spelling: one list of activities, the result's last where the function returns one
    trailing_return: bool = False


@dataclass(frozen=True)
class Annotation:
    entries: tuple[Entry, ...]  # none for `@inactive`
    span: Span  # the whole annotation
    comment: Comment
    marker: str = "@diff"  # or "@inactive", "@derivative"


_DESCRIBE = {"WORD": "a name", "NUMBER": "a number", "TARGS": "template arguments", "$END": "the end of the annotation",
             "<END-OF-FILE>": "the end of the annotation"}


@cache
def _parser() -> Lark:
    grammar = (Path(__file__).with_name("annotations.lark")).read_text()
    return cached_lark(grammar, start="annotation", parser="lalr", propagate_positions=True)


class _ToEntries(Transformer):
    def __init__(self, source: SourceFile, base: int):
        super().__init__()
        self.source, self.base = source, base

    def _word(self, tok: Token | None) -> Word | None:
        if tok is None:
            return None
        return Word(str(tok), Span(self.source, self.base + tok.start_pos, len(tok)))

    def mode(self, items):
        word, _lsqb, width, _rsqb = items
        return ("mode", self._word(word), self._word(width))

    def params(self, items):
        lpar, rpar = items[0], items[-1]
        words = tuple(self._word(t) for t in items if t is not None and t.type == "WORD")
        span = Span(self.source, self.base + lpar.start_pos, rpar.end_pos - lpar.start_pos)
        return ("params", words, span)

    def returns(self, items):
        return ("returns", self._word(items[1]))

    def budget(self, items):
        return ("budget", self._word(items[1]))

    def inner(self, items):
        return ("inner", self._word(items[1]))

    def entry(self, items):
        name, targs, _colon, mode, inner, params, returns, budget = items
        _, mode_word, width = mode or (None, None, None)
        _, activities, params_span = params
        return Entry(self._word(name), mode_word, width, activities, returns and returns[1], params_span,
                     inner and inner[1], self._word(targs), budget and budget[1])

    def annotation(self, items):
        return tuple(i for i in items if isinstance(i, Entry))


def size_items(text: str) -> list[str]:
    """The `NAME=VALUE` items of every `@size(x=n, n=16)` in a source's text: the lengths of
    pointer parameters (a number, or an integer parameter's name) that `adgen check` fills and a
    checkpointed loop's snapshot holds where its accesses cannot be bounded (specs/abi.md); in
    Rust, `#[adgen::size(x = n)]` too."""
    return [item.strip() for body in re.findall(r"(?:@|#\[adgen::)size\(([^)]*)\)", text) for item in body.split(",")
            if item.strip()]


def find_annotations(source: SourceFile) -> list[Annotation]:
    """Every annotation in the file's comments, in order. Raises AdgenError on syntax errors."""
    found: list[Annotation] = []
    problems = []
    comments = find_rust_comments if is_rust(source.path) else find_comments
    for comment in comments(source.text):
        if comment.autodiff:
            made = std_autodiff(source, comment)
            if isinstance(made, Annotation):
                found.append(made)
            else:
                problems.append(made)
            continue
        body = comment.body(source.text)
        for m in re.finditer(MARKERS, body):
            if _in_backquotes(body, m.start()):
                continue  # prose: `@diff`
            start = comment.start + m.start()
            opened = body[m.end():].lstrip().startswith("(")
            bare = m.group() == "@inactive" and not opened
            end = comment.start + (m.end() if bare else _annotation_end(body, m.end()))
            try:
                tree = _parser().parse(body[m.start() : end - comment.start])
                entries = _ToEntries(source, start).transform(tree)
            except UnexpectedInput as exc:
                problems.append(_syntax_error(exc, source, start, end, prose=not opened))
                continue
            if m.group() == "@diff":  # (@derivative's entry names a C function, which may be called anything)
                problems += [error(f"derived name '{e.name.text}' is a word of the annotation language", e.name.span)
                             for e in entries if e.name.text in _words()]
            found.append(Annotation(entries, Span(source, start, end - start), comment, m.group()))
    if problems:
        raise AdgenError(problems)
    return found


def std_autodiff(source: SourceFile, comment: Comment):
    """The annotation std::autodiff's attribute spells (`#[autodiff_reverse(d_f, Duplicated,
    Active)]`, `#[autodiff_forward(d_f, 4, Dual, DualOnly)]`, the older `#[autodiff(d_f, Reverse,
    ...)]`): an entry of the derived name, the mode (and width), and the activities, the result's
    among them (rust_source.rust_entry takes it off where the function returns a value); or the
    error where it is not such."""
    text = source.text
    m = STD_AUTODIFF.match(text, comment.start)
    items = []  # (word, offset) of the comma-separated items inside the parentheses
    at, close = m.end(), comment.end - 1
    inside = text[at:text.rfind(")", at, close)] if ")" in text[at:close] else ""
    for piece in re.finditer(r"[^,\s]+", inside):
        items.append(Word(piece.group(), Span(source, at + piece.start(), len(piece.group()))))
    name_at = Span(source, m.start(1), len(m.group(1)))
    mode = None if m.group(1) == "autodiff" else Word(m.group(1).split("_")[1], name_at)
    if mode is None and len(items) >= 2:  # (the older spelling: the mode second)
        items, mode = [items[0]] + items[2:], Word(items[1].text.lower().replace("first", ""), items[1].span)
    if not items or mode is None or not re.fullmatch(r"[A-Za-z_]\w*", items[0].text):
        return error(f"{m.group(1)} names the derived function first, then its activities", name_at)
    width = items[1] if len(items) > 1 and items[1].text.isdigit() else None
    activities = tuple(items[2:] if width is not None else items[1:])
    span = Span(source, comment.start, comment.end - comment.start)
    params = Span(source, activities[0].span.offset, activities[-1].span.offset + activities[-1].span.length -
                  activities[0].span.offset) if activities else items[0].span
    entry = Entry(items[0], mode, width, activities, None, params, trailing_return=True)
    return Annotation((entry,), span, comment)


def following(text: str, at: int, annotations: list[Annotation]) -> int:
    """Where the item an annotation ending at `at` stands before starts: past whitespace and the
    comments of other annotations."""
    comments = {a.comment.start: a.comment for a in annotations}
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at not in comments:
            return at
        at = comments[at].end


def _annotation_end(body: str, after_marker: int) -> int:
    """Offset (in the comment body) just past the parenthesis closing the annotation, or the
    comment's end when it never closes (the parser then says what it expected)."""
    depth = 0
    for i in range(after_marker, len(body)):
        c = body[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        elif depth == 0 and not c.isspace():
            return i + 1  # something other than '(' follows the marker: let the parser say so
    return len(body.rstrip())


def _in_backquotes(body: str, at: int) -> bool:
    """Whether a marker is inside a code span, `@diff`, on its line of the comment: prose."""
    return body.count("`", body.rfind("\n", 0, at) + 1, at) % 2 == 1


def _syntax_error(exc: UnexpectedInput, source: SourceFile, start: int, end: int, prose: bool):
    """`prose`: the marker is not followed by '(' (a comment mentioning it, most likely), which a
    note says how to write."""
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        found, at, length = f"'{exc.token}'", start + exc.token.start_pos, len(exc.token)
        expected = exc.expected
    elif isinstance(exc, UnexpectedCharacters):
        found, at, length = f"'{source.text[start + exc.pos_in_stream]}'", start + exc.pos_in_stream, 1
        expected = exc.allowed
    else:
        found, at, length = "the end of the comment", max(start, end - 1), 1
        expected = exc.expected if isinstance(exc, (UnexpectedEOF, UnexpectedToken)) else set()
    wanted = sorted(_describe(t) for t in expected if t != "TARGS" or len(expected) == 1)  # (C++'s `<...>`: optional)
    what = wanted[0] if len(wanted) == 1 else "one of " + ", ".join(wanted)
    marker = re.match(MARKERS, source.text[start:]).group()
    notes = [note(f"an annotation is '{marker}(' anywhere in a comment; to write the word in prose, put it in "
                  f"backquotes: `{marker}`", Span(source, start, len(marker)))] if prose else []
    return error(f"syntax error in {marker} annotation: expected {what}, found {found}", Span(source, at, length),
                 notes)


@cache
def _words() -> frozenset[str]:
    """The language's own words (`of`), which its names cannot be: the grammar's keywords."""
    return frozenset(t.pattern.value for t in _parser().terminals
                     if t.pattern.type == "str" and t.pattern.value.isidentifier())


def _describe(terminal: str) -> str:
    if terminal in _DESCRIBE:
        return _DESCRIBE[terminal]
    pattern = _parser().get_terminal(terminal).pattern
    return f"'{pattern.value}'"
