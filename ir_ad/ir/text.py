"""Questions asked of IR text that is not read into a `Module`: a whole module's (a quick test
before reading it, a count for the verbose output) or llvmlite's text of one global or
function; and what is dropped from a module's text: the function attributes that pin code to a
CPU, and comdats."""

from __future__ import annotations

import re

from adgen.ir_ad.ir.functions import defined_name

_INDIRECT_CALL = re.compile(r"\bcall\b[^\n]*?\s%[-\w.$\"]+\(")
_ADDRESS = re.compile(r"\bptr (?:(?:noundef|nonnull|readonly|readnone|writeonly|nocapture|noalias|nofree|"
                      r"dereferenceable(?:_or_null)?\(\d+\)|align \d+|captures\([^)]*\)) )*"
                      r"(@[-\w.$]+|@\"[^\"]*\")")  # (a call's argument, with its attributes)
_STORED_ADDRESS = re.compile(r"store ptr (@[-\w$.]+|@\"[^\"]*\")")
_TARGET_ATTRIBUTES = re.compile(r' "(?:target-cpu|target-features|tune-cpu)"="[^"]*"')
_COMDAT = re.compile(r"^\$[^\n]* = comdat \w+\n", re.M)
_IN_COMDAT = re.compile(r"^((?:define|@)[^\n]*?),? comdat(?:\(\$[-\w.$]+\)|\(\$\"[^\"]*\"\))?(?=[ ,\n])", re.M)
_BLOCK = re.compile(r'^("(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+):')
_TARGET = re.compile(r'\blabel %("(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+)')


def may_call_through_pointer(text: str) -> bool:
    """Whether some call in the text may go through a function pointer (a quick test: false
    means none does)."""
    return _INDIRECT_CALL.search(text) is not None


def global_addresses(text: str) -> list[str]:
    """The globals (functions, mostly) whose address the text uses as a value (`ptr @f`), in
    order, as IR names ("@f", '@"f.g"')."""
    return [m.group(1) for m in _ADDRESS.finditer(text)]


def stored_global_addresses(text: str) -> list[str]:
    """The globals whose address the text stores (`store ptr @f, ...`), in order, as IR names."""
    return [m.group(1) for m in _STORED_ADDRESS.finditer(text)]


def without_target_attributes(text: str) -> str:
    """The text without per-function CPU choices (`"target-cpu"="..."` and the like)."""
    return _TARGET_ATTRIBUTES.sub("", text)


def without_comdats(text: str) -> str:
    """The text without comdats: what adgen's object defines besides the derived functions is
    internal, and an internal function in a comdat group of an inline function of a header
    (libc++'s cold `__throw_length_error`, kept out of line) is dropped with the group where the
    linker keeps the user's own object's copy, which adgen's calls would then miss."""
    return _IN_COMDAT.sub(r"\1", _COMDAT.sub("", text))


def branching_back(text: str) -> set[str]:
    """The IR names (`@f`, `@"f g"`) of the functions defined in the text with a branch to their
    own block or to one written before it. Every loop has such a branch (a path only ever going
    to blocks written later cannot come back), so a function not named here has no loop; one
    named may still have none, where its blocks are written out of order."""
    back, inside, seen = set(), None, set()
    for line in text.split("\n"):
        if line.startswith("define "):
            inside, seen = defined_name(line), set()
        elif line == "}":
            inside = None
        elif inside is not None and inside not in back:
            block = _BLOCK.match(line)
            if block:
                seen.add(block.group(1))
            elif line.startswith("  ") and any(t in seen for t in _TARGET.findall(line)):
                back.add(inside)
    return back


def count_instructions(text: str) -> int:
    """The instructions of a module's text: its indented lines, less comments."""
    return sum(1 for line in text.split("\n")
               if line.startswith("  ") and not line.lstrip().startswith(";") and line.strip())


def defined_with_prefix(text: str, prefix: str) -> dict[str, list[str]]:
    """The globals the text defines whose names start with `prefix` ("@name" or '@"name"'), each
    with the globals whose addresses its initializer holds."""
    pattern = re.compile(r'^(@' + re.escape(prefix) + r'[-\w$.]+|@"' + re.escape(prefix) + r'[^"]*") = ', re.M)
    found = {}
    for m in pattern.finditer(text):
        end = text.find("\n", m.end())
        found[m.group(1)] = global_addresses(text[m.end():end if end >= 0 else len(text)])
    return found


def renamed_global(text: str, old: str, new: str) -> str:
    """The text with the global `old` ("@name" or '@"name"') named `new` wherever it is named."""
    return re.sub(re.escape(old) + r'(?![-\w$.])', lambda _: new, text)
