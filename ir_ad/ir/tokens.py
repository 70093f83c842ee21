"""Reading one line of IR text token by token: the lexer every other reader of the IR package
(types, instructions, function headers) walks with."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>c?"[^"]*")
  | (?P<local>%(?:"[^"]*"|[-a-zA-Z$._0-9]+))
  | (?P<global>@(?:"[^"]*"|[-a-zA-Z$._0-9]+))
  | (?P<meta>!(?:"[^"]*"|[-a-zA-Z$._0-9]+)|!)
  | (?P<attr>\#[0-9]+)
  | (?P<num>-?(?:0x[KLMHR]?[0-9A-Fa-f]+|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?))
  | (?P<word>[A-Za-z_][A-Za-z_0-9.]*)
  | (?P<dots>\.\.\.)
  | (?P<punct>[(){}\[\]<>,=*:])
""", re.X)

# Parameter and return attributes that may stand between a type and its value.
_ATTRS = {"noundef", "nonnull", "noalias", "nocapture", "readonly", "writeonly", "readnone", "signext", "zeroext",
          "inreg", "returned", "nofree", "immarg", "nest", "allocalign", "allocptr", "swiftself", "swifterror",
          "swiftasync", "noundef", "dead_on_unwind", "dead_on_return", "writable", "noext", "inalloca"}
_ATTRS_WITH_ARGS = {"align", "dereferenceable", "dereferenceable_or_null", "byval", "sret", "byref",
                    "preallocated", "elementtype", "range", "captures", "initializes", "nofpclass", "alignstack",
                    "memory"}


class IRError(Exception):
    """IR text adgen cannot read."""


class Cursor:
    """Walks the tokens of one line of IR."""

    def __init__(self, text: str):
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m:
                raise IRError(f"cannot read IR at {text[pos:pos + 40]!r}")
            if m.lastgroup != "ws":
                self.tokens.append(m.group())
            pos = m.end()
        self.i = 0

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else ""

    def next(self) -> str:
        tok = self.peek()
        self.i += 1
        return tok

    def accept(self, *words: str) -> str | None:
        if self.peek() in words:
            return self.next()
        return None

    def expect(self, tok: str) -> None:
        got = self.next()
        if got != tok:
            raise IRError(f"expected {tok!r}, found {got!r} in {' '.join(self.tokens)}")

    def done(self) -> bool:
        return self.i >= len(self.tokens)

    def rest(self) -> str:
        """The tokens not read yet, as text."""
        return " ".join(self.tokens[self.i:])

    def balanced(self) -> str:
        """The tokens of a bracketed group starting here, as text."""
        opening = self.next()
        closing = {"(": ")", "[": "]", "{": "}", "<": ">"}[opening]
        depth, out = 1, [opening]
        while depth:
            tok = self.next()
            if tok == "":
                raise IRError("unbalanced brackets")
            if tok == opening:
                depth += 1
            elif tok == closing:
                depth -= 1
            out.append(tok)
        return " ".join(out)

    def skip_attributes(self) -> dict[str, str]:
        """Reads past parameter or return attributes; those found, each with its argument's text."""
        found = {}
        while True:
            tok = self.peek()
            if tok in _ATTRS:
                found[self.next()] = ""
            elif tok in _ATTRS_WITH_ARGS:
                self.next()
                if tok == "align" and self.peek() != "(":
                    found[tok] = self.next()
                elif self.peek() == "(":
                    found[tok] = self.balanced()[1:-1].strip()
                else:
                    found[tok] = ""
            else:
                return found
