"""The annotation parser: where annotations are found, what the grammar accepts, and the
syntax errors it reports (specs/annotations.md)."""

from __future__ import annotations

import pytest

from adgen.frontend.annotations import find_annotations
from adgen.frontend.comments import find_comments
from adgen.base.diagnostics import AdgenError, SourceFile


def parse(text: str):
    return find_annotations(SourceFile("t.c", text))


def entries(text: str):
    return [e for a in parse(text) for e in a.entries]


def syntax_error(text: str) -> str:
    with pytest.raises(AdgenError) as info:
        parse(text)
    (d,) = info.value.diagnostics
    return d.render()


def test_line_comment_entry_words_and_positions():
    (e,) = entries("// @diff(rosen_grad: (const, const, active, active) -> active)\n")
    assert e.name.text == "rosen_grad"
    assert e.mode is None and e.width is None
    assert [w.text for w in e.activities] == ["const", "const", "active", "active"]
    assert e.returns.text == "active"
    assert e.name.span.location() == "t.c:1:10"
    assert e.activities[2].span.location() == "t.c:1:37"


def test_mode_and_width():
    (e,) = entries("/* @diff(sq4: forward[4] (dual) -> dual) */")
    assert (e.mode.text, e.width.text) == ("forward", "4")


def test_mode_without_width_and_empty_parameter_list():
    (e,) = entries("// @diff(k: reverse () -> active)")
    assert e.mode.text == "reverse" and e.width is None and e.activities == ()


def test_several_entries_and_no_return_activity():
    es = entries("// @diff(a: (dup); b: (dup, const) -> active)")
    assert [e.name.text for e in es] == ["a", "b"]
    assert es[0].returns is None


def test_block_comment_spanning_lines_with_decoration():
    text = "/**\n * Doc text.\n * @diff(f_fwd: forward[2] (dual,\n *        const) -> dual;\n *  f_rev: (active, const) -> active)\n */\n"
    es = entries(text)
    assert [e.name.text for e in es] == ["f_fwd", "f_rev"]
    assert [w.text for w in es[0].activities] == ["dual", "const"]
    assert es[0].activities[1].span.location() == "t.c:4:11"


def test_consecutive_line_comments_read_as_one():
    es = entries("// @diff(a: (active) -> active;\n//       b: (const) -> active)\n")
    assert [e.name.text for e in es] == ["a", "b"]
    assert es[1].name.span.location() == "t.c:2:10"


def test_blank_line_separates_line_comments():
    assert len(find_comments("// a\n\n// b\n")) == 2
    assert len(find_comments("// a\n   // b\n")) == 1


def test_several_annotations_in_one_comment_and_prose():
    es = entries("/* Gradient. @diff(a: (active) -> active) and @diff(b: (const) -> const) */")
    assert [e.name.text for e in es] == ["a", "b"]


def test_markers_in_strings_are_not_comments():
    text = 'const char *s = "// @diff(x: (const) -> const)";\nchar c = \'"\'; // plain\n'
    assert parse(text) == []
    assert [text[c.start : c.end] for c in find_comments(text)] == ["// plain"]


def test_annotations_outside_comments_are_ignored():
    assert parse("int x; /* @diff(a: (const) -> const) */ int @diff;") != []
    assert len(parse("int x; /* @diff(a: (const) -> const) */ int @diff;")) == 1


@pytest.mark.parametrize("text, message, where", [
    ("// @diff(f_grad (active) -> active)", "expected ':', found '('", "t.c:1:17"),
    ("// @diff(f: (active) -> active", "expected one of ')', ';', 'within', found the end of the comment", "t.c:1:"),
    ("// see @diff for details", "expected '(', found 'f'", "t.c:1:14"),
    ("// @diff", "expected '(', found the end of the comment", "t.c:1:"),
    ("// @diff(f: (x y))", "expected one of ')', ',', found 'y'", "t.c:1:16"),
    ("// @diff(f: forward[x] (dual))", "expected a number, found 'x'", "t.c:1:21"),
    ("// @diff(f: forward[4 (dual))", "expected ']', found '('", "t.c:1:23"),
    ("// @diff(f: (dual) => dual)", "found '='", "t.c:1:20"),
    ("// @diff(: (dual))", "expected a name, found ':'", "t.c:1:10"),
])
def test_syntax_errors_say_what_was_expected(text, message, where):
    rendered = syntax_error(text)
    head = rendered.splitlines()[0]
    assert head.startswith(where) and "error: syntax error in @diff annotation: " in head
    assert message in head
    assert rendered.splitlines()[1].endswith(text)  # the source line
    assert "^" in rendered.splitlines()[2]  # the caret


def test_caret_underlines_the_token():
    rendered = syntax_error("// @diff(f: (x y))")
    line, caret = rendered.splitlines()[1:3]
    assert line.index("y))") == caret.index("^")


def test_all_syntax_errors_of_a_file_are_reported():
    with pytest.raises(AdgenError) as info:
        parse("// @diff(a (x))\nint x;\n// @diff(b: (x y))\n")
    assert [d.span.location() for d in info.value.diagnostics] == ["t.c:1:12", "t.c:3:16"]


def test_inactive_and_derivative_markers():
    found = parse("// @inactive\n/* @derivative(f: (active, const) -> active) */\n// @diff(g: (dual) -> dual)\n")
    assert [a.marker for a in found] == ["@inactive", "@derivative", "@diff"]
    assert found[0].entries == () and found[0].span.location() == "t.c:1:4"
    (e,) = found[1].entries
    assert e.name.text == "f" and [w.text for w in e.activities] == ["active", "const"]


def test_a_derivative_annotation_holds_one_entry():
    assert "syntax error in @derivative annotation: expected ')', found ';'" in \
        syntax_error("// @derivative(f: (active) -> active; g: (dual) -> dual)\n")


def test_a_derived_name_cannot_be_a_word_of_the_language():
    """`of` is the language's (specs/annotations.md): `@diff(of: …)` is refused at the name, in a
    @diff of any form, while `@derivative` may name a C function `of`, and `of` may end a name."""
    with pytest.raises(AdgenError) as info:
        parse("// @diff(of: (active) -> active)\n// @diff(g: (dual) -> dual; of: forward of g (dual) -> dual)\n")
    assert [(d.span.location(), d.message) for d in info.value.diagnostics] == [
        ("t.c:1:10", "derived name 'of' is a word of the annotation language"),
        ("t.c:2:29", "derived name 'of' is a word of the annotation language")]
    assert [e.name.text for e in entries("// @derivative(of: (active) -> active)\n// @diff(half_of: (active))\n")] \
        == ["of", "half_of"]
