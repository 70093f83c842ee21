"""The C (or C++) expression at a place in a source line, as a debug location gives it (line and
column): what `--explain` names a stored value by. clang places a call at its callee's name, a
binary operator at its token, a read of memory at the start of what is read (`x` of `x[i]`, the
`*` of `*p`). The line is read on its own, as tokens: an expression is named only where it is
whole on its line and reads one way (else None: the caller shows the line with a caret)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"""\s+|//.*|/\*.*?\*/|/\*.*|"(?:\\.|[^"\\])*"?|'(?:\\.|[^'\\])*'?|[A-Za-z_]\w*
                        |\.?\d(?:[eEpP][-+]|[\w.])*|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&^|]=|::|.""",
                    re.X)
BINARY = {"*": 13, "/": 13, "%": 13, "+": 12, "-": 12, "<<": 11, ">>": 11, "<": 10, "<=": 10, ">": 10, ">=": 10,
          "==": 9, "!=": 9, "&": 8, "^": 7, "|": 6, "&&": 5, "||": 4}
ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "^=", "|=", "<<=", ">>="}
_PREFIX = {"-", "+", "!", "~", "*", "&", "++", "--"}
_OPEN, _CLOSE = {"(", "[", "{"}, {")", "]", "}"}
_DELIMITERS = {",", ";", "?", ":", "{", "}"}
_CONTINUES = set(BINARY) | ASSIGN | {"?", ":", ".", "->", "[", "("}  # a line starting so goes on with the last
_STATEMENT = {"return", "case", "else", "do", "goto", "for", "if", "while", "switch"}
_TYPE_WORDS = {"const", "volatile", "static", "extern", "register", "inline", "unsigned", "signed", "int", "double",
               "float", "char", "short", "long", "void", "struct", "union", "enum", "auto", "bool", "_Bool",
               "restrict", "__restrict", "__restrict__", "typedef", "let", "mut"}


@dataclass(frozen=True)
class Expression:
    text: str  # as written, its spaces collapsed
    target: str = ""  # what it assigns (`s` of `s += e`), or what it is assigned to (`z` of `double z = e`)
    assigns: bool = False  # an assignment: its value is the target's new one


@dataclass
class _Unit:
    """An operand without binary operators: prefix operators, a primary, postfix parts."""

    start: int  # token index of its first prefix operator, or of its primary
    primary: int
    end: int  # token index past its last postfix part


def expression_at(lines: list[str], line: int, column: int) -> Expression | None:
    """The expression at a 1-based line and 1-based byte column of a source's lines (a fused
    multiply-add stands at its addition: its value is the sum's)."""
    if not 0 < line <= len(lines) or column < 1:
        return None
    reader = _Line(lines, line)
    at = len(reader.text.encode()[:column - 1].decode(errors="ignore"))
    k = next((i for i, (_, s, e) in enumerate(reader.tokens) if s <= at < e), None)
    if k is None:
        return None
    return None if reader.template() else reader.at(k)


def declared_at(lines: list[str], line: int, column: int) -> list[str]:
    """The variables a declaration at a line and column declares (`x`, `g` of `double x[8], g[8];`)."""
    if not 0 < line <= len(lines) or column < 1:
        return []
    reader = _Line(lines, line)
    at = len(reader.text.encode()[:column - 1].decode(errors="ignore"))
    first = i = next((i for i, (_, s, e) in enumerate(reader.tokens) if s <= at < e), len(reader.tokens))
    while reader.t(i) in _TYPE_WORDS or reader.t(i) in ("*", "&", "::") or \
            reader.t(i).isidentifier() and (reader.t(i + 1).isidentifier() or reader.t(i + 1) in ("*", "&", "::")):
        i += 1
    names, depth = [], 0
    while i > first and reader.t(i).isidentifier() and reader.t(i + 1) in ("[", "=", ";", ","):
        names.append(reader.t(i))
        while i < len(reader.tokens) and not (depth == 0 and reader.t(i) in (",", ";")):
            depth += (reader.t(i) in _OPEN) - (reader.t(i) in _CLOSE)
            i += 1
        if reader.t(i) != ",":
            break
        i += 1
        while reader.t(i) in ("*", "&"):
            i += 1
    return names


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)
            if not m.group().isspace() and not m.group().startswith(("//", "/*"))]


class _Line:
    """One line's tokens, read around one of them."""

    def __init__(self, lines: list[str], line: int):
        self.lines, self.line, self.text = lines, line, lines[line - 1]
        self.tokens = _tokens(self.text)

    def t(self, i: int) -> str:
        return self.tokens[i][0] if 0 <= i < len(self.tokens) else ""

    def at(self, k: int) -> Expression | None:
        self.lo, self.hi = self._region(k)
        items = self._items()
        for j, item in enumerate(items or ()):
            if item == k:
                return self._operation(items, j)
            if isinstance(item, _Unit) and item.start <= k < item.end:
                if item.end > self.hi:  # (a group that does not close on the line)
                    return Expression(f"{self.t(k)}(…)") if k == item.primary and self.t(k + 1) == "(" else None
                found = self._whole(items, j, j, min(k, item.primary), item.end)
                steps = [t for t in (self.t(item.start), self.t(item.end - 1)) if t in ("++", "--")]
                if found is None or not steps or item.end - item.start == 1:
                    return found
                return Expression(found.text, found.text.replace(steps[0], "", 1).strip(), True)  # `at++`
        return None

    def template(self) -> bool:
        """Whether the line may name a C++ template (`std::max<double>(a, b)`): its angle
        brackets are no comparisons."""
        names = set(_TYPE_WORDS) | {"::", ",", "*", "&"}
        for i, (t, _, _) in enumerate(self.tokens):
            j = i + 1
            while t == "<" and j < len(self.tokens) and (self.t(j) in names or self.t(j)[:1].isalpha()):
                j += 1
            if t == "<" and self.t(j) == ">" and j > i + 1:
                return True
        return False

    def _region(self, k: int) -> tuple[int, int]:
        """The token indices around `k` (exclusive) where its expression must end: an unmatched
        bracket, or a comma, semicolon, brace, `?` or `:` at its depth; -1 and len(tokens) at the line's ends."""
        depth, lo = 0, k - 1
        while lo >= 0 and not (depth == 0 and (self.t(lo) in _OPEN or self.t(lo) in _DELIMITERS)):
            depth += (self.t(lo) in _CLOSE) - (self.t(lo) in _OPEN)
            lo -= 1
        depth, hi = int(self.t(k) in _OPEN), k + 1
        while hi < len(self.tokens) and not (depth == 0 and (self.t(hi) in _CLOSE or self.t(hi) in _DELIMITERS)):
            depth += (self.t(hi) in _OPEN) - (self.t(hi) in _CLOSE)
            hi += 1
        return lo, hi

    def _items(self) -> list | None:
        """The region as units and the token indices of the binary operators between them. A
        unit not joined by an operator to the one before starts the expression again (a type or
        a keyword before it: `double z = …`, `return …`)."""
        items: list = []
        i = self.lo + 1
        while i < self.hi:
            if self.t(i) in _STATEMENT or self.t(i) in _TYPE_WORDS:
                typed = self.t(i) in _TYPE_WORDS
                items, i = [], i + 1
                while typed and self.t(i) in ("*", "&"):  # a declarator's, not a dereference
                    i += 1
                continue
            unit = self._unit(i)
            if unit is None:
                return None
            if items and isinstance(items[-1], _Unit):
                items = []
            items.append(unit)
            i = unit.end
            if i < self.hi and (self.t(i) in BINARY or self.t(i) in ASSIGN):
                items.append(i)
                i += 1
        return items if not items or isinstance(items[-1], _Unit) else None  # (one ending in an operator goes on)

    def _unit(self, i: int) -> _Unit | None:
        start = i
        while i < self.hi and (self.t(i) in _PREFIX or self._cast(i)):
            i = self._close(i) + 1 if self.t(i) == "(" else i + 1
        t = self.t(i) if i < self.hi else ""
        if t == "(":
            primary, i = i, self._close(i) + 1
        elif t[:1].isalnum() or t[:1] in "_\"'" or (t[:1] == "." and len(t) > 1):
            primary, i = i, i + 1
            while self.t(i) == "::" and i + 1 < self.hi:
                i += 2
        else:
            return None
        while i < self.hi and self.t(i) in ("(", "[", ".", "->", "++", "--"):  # calls, subscripts, members
            i = self._close(i) + 1 if self.t(i) in ("(", "[") else i + (2 if self.t(i) in (".", "->") else 1)
        return _Unit(start, primary, i)

    def _cast(self, i: int) -> bool:
        """`(double)`, `(const float *)` before a unit."""
        if self.t(i) != "(":
            return False
        end = self._close(i)
        inside = [t for t, _, _ in self.tokens[i + 1:end]]
        after = self.t(end + 1) if end + 1 < self.hi else ""
        return (bool(inside) and all(t[:1].isalpha() or t[:1] == "_" or t == "*" for t in inside) and bool(after)
                and (after[:1].isalnum() or after[:1] in "_(\"'" or after in _PREFIX))

    def _close(self, i: int) -> int:
        """The index of the bracket closing the one at `i` (past `hi` where it does not close)."""
        depth = 0
        for j in range(i, self.hi):
            depth += (self.t(j) in _OPEN) - (self.t(j) in _CLOSE)
            if depth == 0:
                return j
        return self.hi

    def _operation(self, items: list, j: int) -> Expression | None:
        """The expression of the binary operator items[j]."""
        if j + 1 >= len(items):
            return None
        if self.t(items[j]) in ASSIGN:
            whole = self._whole(items, j - 1, len(items) - 1, items[j - 1].start, items[-1].end)
            return whole and Expression(whole.text, self._text(items[j - 1].start, items[j - 1].end), True)
        left, right = self._operands(items, j)
        return self._whole(items, left, right, items[left].start, items[right].end)

    def _operands(self, items: list, j: int) -> tuple[int, int]:
        """The items a binary operator items[j] joins: its left operand's first, its right operand's last."""
        mine, left, right = BINARY.get(self.t(items[j]), 0), j - 1, j + 1
        while left > 1 and BINARY.get(self.t(items[left - 1]), 0) >= mine:
            left -= 2
        while right < len(items) - 2 and BINARY.get(self.t(items[right + 1]), 0) > mine:
            right += 2
        return left, right

    def _whole(self, items: list, first: int, last: int, start: int, end: int) -> Expression | None:
        """The expression of tokens start..end (exclusive), items first..last of the region; None
        where it may go on from the line before or into the line after."""
        if end > self.hi or start <= self.lo + 1 and self.lo < 0 and not self._starts_statement():
            return None
        if end >= self.hi and self.hi >= len(self.tokens) and self._continued():
            return None
        target = ""
        if first >= 2 and last == len(items) - 1 and self.t(items[first - 1]) == "=" and \
                self.t(self.hi) not in ("?", ":"):
            target = self._text(items[first - 2].start, items[first - 2].end)
            if self.t(0) in _TYPE_WORDS:  # a declaration's: `double *a = …, *b = …` declares b
                target = target.lstrip("*& ")
        return Expression(self._text(start, end), target)

    def _text(self, start: int, end: int) -> str:
        return " ".join(self.text[self.tokens[start][1]:self.tokens[end - 1][2]].split())

    def _starts_statement(self) -> bool:
        """Whether the line starts anew: the line before (if any) ends a statement or a header."""
        for before in reversed(self.lines[:self.line - 1]):
            tokens = [t for t, _, _ in _tokens(before)]
            if tokens:
                return before.lstrip().startswith("#") or tokens[-1] in (";", "{", "}", ":", "else", "do") or \
                    (tokens[-1] == ")" and tokens[0] in ("for", "if", "while", "switch"))
        return True

    def _continued(self) -> bool:
        """Whether the line after goes on with this one's expression."""
        if self.t(len(self.tokens) - 1) in _CONTINUES:
            return True
        for after in self.lines[self.line:]:
            tokens = _tokens(after)
            if tokens:
                return tokens[0][0] in _CONTINUES
        return False
