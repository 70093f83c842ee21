"""Derived functions that came out the same, kept once.

Two calls of one function can ask for derivatives under patterns that differ in what does not
change the code (llm.c's matmul_forward, specialized by clang where its bias is NULL and not
where it is not, reaches one OpenMP region through both: its two reverse-mode pairs were the
same 8,000 lines, optimized and compiled twice, 22% of the build). adgen's own text (the
derivatives, never the sources') is read here: internal functions and internal constants that
are the same but for the names of such others are merged as LLVM's MergeFunctions would, but
before the optimizer spends its time on each. Their addresses are adgen's alone (no user code
compares them), so one can stand for the other.

Sameness is found as a partition is refined (as automata are minimized): first by text, each
reference to another candidate left blank; then, until nothing splits, by the classes of what
each names, so that functions calling each other in a cycle merge too."""

from __future__ import annotations

import re

from adgen.ir_ad.ir.reach import REFERENCE, bare

# an internal function's definition, to its closing line; an internal constant's line
_CANDIDATE = re.compile(r'^define (?:internal|private) [^\n]*\n(?:[^\n]*\n)*?\}$'
                        r'|^@[^\n=]+ = (?:internal|private) (?:unnamed_addr )?constant [^\n]*$', re.M)


def merged(text: str, around: list[str] = ()) -> tuple[str, list[str], int]:
    """`text` (adgen's definitions) with each group of identical candidates kept once, the
    first; references to the others, in `text` and in each of `around` (the rest of the module),
    renamed to it. Returns the texts and how many definitions went."""
    spans: dict[str, tuple[int, int]] = {}
    spellings: dict[str, str] = {}  # each as its definition spells it
    for m in _CANDIDATE.finditer(text):
        own = REFERENCE.search(m.group()).group()  # (a function's header names no global before its own)
        spans[bare(own)], spellings[bare(own)] = (m.start(), m.end()), own
    if len(spans) < 2:
        return text, list(around), 0
    shapes: dict[str, str] = {}
    names: dict[str, tuple[str, ...]] = {}
    for name, (start, end) in spans.items():
        refs: list[str] = []

        def blank(m: re.Match, refs=refs, own=name) -> str:
            ref = bare(m.group())
            if ref == own:
                return "@\x00self"
            if ref in spans:
                refs.append(ref)
                return "@\x00"
            return m.group()

        shapes[name] = REFERENCE.sub(blank, text[start:end])
        names[name] = tuple(refs)
    classes = _classes(shapes, names)
    kept: dict[int, str] = {}
    renamed: dict[str, str] = {}
    for name in spans:  # (in the text's order: the first of each class stays)
        first = kept.setdefault(classes[name], name)
        if first != name:
            renamed[name] = spellings[first]
    if not renamed:
        return text, list(around), 0
    out, at = [], 0
    for name in sorted(renamed, key=lambda n: spans[n][0]):
        start, end = spans[name]
        out.append(text[at:start])
        at = end + 1 if text[end:end + 1] == "\n" else end
    out.append(text[at:])

    def rename(m: re.Match) -> str:
        return renamed.get(bare(m.group()), m.group())

    return REFERENCE.sub(rename, "".join(out)), [REFERENCE.sub(rename, t) for t in around], len(renamed)


def _classes(shapes: dict[str, str], names: dict[str, tuple[str, ...]]) -> dict[str, int]:
    """Each candidate's class: the same text, naming the same classes in the same places."""
    ids: dict[object, int] = {}
    classes = {name: ids.setdefault(shape, len(ids)) for name, shape in shapes.items()}
    count = len(ids)
    while True:
        ids = {}
        classes = {name: ids.setdefault((classes[name], tuple(classes[r] for r in names[name])), len(ids))
                   for name in shapes}
        if len(ids) == count:
            return classes
        count = len(ids)
