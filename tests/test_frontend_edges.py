"""Edges of the frontend from issue 42: annotations in `#if` branches the build does not take,
functions whose names are not ASCII, sources whose paths hold `"` or `\\`, and `@diff` written in
prose."""

from __future__ import annotations

import shutil

import pytest

from adgen.frontend.annotations import find_annotations
from adgen.base.diagnostics import AdgenError, SourceFile

TWO_BRANCHES = """\
#ifdef FAST
// @diff(f_grad: (active) -> active)
double f(double x) { return x * x; }
#else
// @diff(f_grad: (active, const) -> active)
double f(double x, int n) { double y = 1; for (int i = 0; i < n; i++) y *= x; return y; }
#endif
"""


@pytest.mark.parametrize("flags, prototype", [
    ([], "f_grad_result f_grad(double x, int n, double d_ret);"),
    (["--", "-DFAST"], "f_grad_result f_grad(double x, double d_ret);"),
    (["-D", "FAST"], "f_grad_result f_grad(double x, double d_ret);"),
], ids=["without FAST", "-- -DFAST", "-D FAST"])
def test_annotations_in_the_branch_not_taken_are_skipped(adgen, c_file, tmp_path, flags, prototype):
    src = c_file(TWO_BRANCHES)
    result = adgen("build", "-q", src, "-o", tmp_path / "out", *flags)
    assert result.status == 0, result.err
    assert prototype in (tmp_path / "out" / "src.adgen.h").read_text()


def test_an_annotation_in_a_branch_not_taken_is_checked_for_nothing_but_syntax(adgen, c_file, tmp_path):
    src = c_file("#if 0\n// @diff(g_grad: (active) -> active)\nint table[3];\n#endif\n"
                 "// @diff(f_grad: (active) -> active)\ndouble f(double x) { return x; }\n")
    result = adgen("generate", src, "-o", tmp_path / "out")
    assert result.status == 0, result.err
    src.write_text("#if 0\n// @diff(g_grad (active) -> active)\n#endif\n")
    assert "expected ':'" in adgen("generate", src, "-o", tmp_path / "out").err


NOT_ASCII = "// @diff(f_grad: (active) -> active)\ndouble féλ(double λ) { return λ * λ; }\n"


def test_a_function_whose_name_is_not_ascii_is_an_error_at_its_annotation(adgen, c_file, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    c_file(NOT_ASCII)
    result = adgen("build", "-q", "src.c", "-o", "out")
    assert result.status == 1
    first, line, caret, where = result.err.splitlines()[:4]
    assert first.startswith("src.c:1:4: error: @diff annotations stand before functions whose names are ASCII: "
                            "'féλ' is not")
    assert where == "src.c:2:8: note: 'féλ' is declared here"
    assert not (tmp_path / "out").exists()


def test_a_derivative_by_hand_whose_name_is_not_ascii_is_an_error(adgen, c_file, tmp_path, monkeypatch):
    """(not `derived name 'sqδ' is not a C identifier`: the name is the user's)"""
    monkeypatch.chdir(tmp_path)
    c_file("double sq(double x);\n"
           "typedef struct { double ret, d_x; } r;\n"
           "// @derivative(sq: (active) -> active)\n"
           "r sqδ(double x, double d_ret) { r v = {x * x, 2 * x * d_ret}; return v; }\n")
    result = adgen("generate", "src.c", "-o", "out")
    assert result.status == 1
    assert result.err.startswith("src.c:3:4: error: @derivative annotations stand before functions whose names are "
                                 "ASCII: 'sqδ' is not")


@pytest.mark.parametrize("folder, name", [('q"d', 'a"b.c'), ("plain", 'a"b.c')])
def test_a_source_whose_path_holds_a_quote_builds(adgen, tmp_path, folder, name):
    src = tmp_path / folder / name
    src.parent.mkdir()
    src.write_text("struct P { double a, b; };\n"  # (by value: the lowering's #line directives too)
                   "// @diff(g_grad: (active) -> active)\ndouble g(struct P p) { return p.a * p.b; }\n")
    result = adgen("build", "-q", src, "-o", tmp_path / "out")
    assert result.status == 0, result.err
    assert (tmp_path / "out" / f"{src.stem}.adgen.o").exists()


def test_adgen_load_of_a_cxx_source_whose_path_holds_a_quote(tmp_path):
    """(adgen.load includes a C++ source from a file of its own, templates/keeping.cpp.j2)"""
    import adgen

    src = tmp_path / 'c"pp' / 'k"q.cpp'
    src.parent.mkdir()
    src.write_text("// @diff(f_grad: (active) -> active)\ninline double f(double x) { return x * x * x; }\n")
    lib = adgen.load(src, build_dir=tmp_path / "build")
    assert tuple(lib.f_grad(2.0, 1.0)) == (8.0, 12.0)


@pytest.mark.skipif(not shutil.which("clang-19") and not shutil.which("clang"), reason="no clang but zig's")
def test_a_source_whose_path_holds_a_backslash_builds_with_a_clang(adgen, tmp_path):
    """(zig's clang compiles no file whose path holds a backslash at all: its own reading of
    clang's dependency file fails.)"""
    src = tmp_path / "b\\s" / "back\\slash.c"
    src.parent.mkdir()
    src.write_text("// @diff(f_grad: (active) -> active)\ndouble f(double x) { return x * x; }\n")
    clang = shutil.which("clang-19") or shutil.which("clang")
    result = adgen("build", "-q", "--cc", clang, src, "-o", tmp_path / "out")
    assert result.status == 0, result.err


def test_a_source_whose_path_holds_a_backslash_says_why_zig_cannot(adgen, tmp_path):
    src = tmp_path / "back\\slash.c"
    src.write_text("// @diff(f_grad: (active) -> active)\ndouble f(double x) { return x * x; }\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1 and "adgen: error: zig's clang cannot compile a file whose path holds a backslash" \
        in result.err and "(--cc, ADGEN_CC)" in result.err, result.err
    assert not (tmp_path / "out").exists()


def _parse(text: str):
    return find_annotations(SourceFile("t.c", text))


def test_backquoted_markers_are_prose():
    assert _parse("// Differentiated with `@diff`: see `@diff(f_grad: ...)` below; `@inactive` too.\n") == []
    assert _parse("/* A `code span` then @diff(f_grad: (active) -> active) */")[0].entries[0].name.text == "f_grad"


def test_a_marker_in_prose_says_how_to_write_it():
    with pytest.raises(AdgenError) as info:
        _parse("// see @diff below\n")
    (d,) = info.value.diagnostics
    assert d.message == "syntax error in @diff annotation: expected '(', found 'b'"
    (n,) = d.notes
    assert n.span.location() == "t.c:1:8"
    assert n.message == "an annotation is '@diff(' anywhere in a comment; to write the word in prose, put it " \
                        "in backquotes: `@diff`"


def test_errors_inside_an_annotation_say_nothing_of_prose():
    with pytest.raises(AdgenError) as info:
        _parse("// @diff(f_grad (active) -> active)\n")
    assert info.value.diagnostics[0].notes == []


def test_attributes_are_read_from_declarations_that_spell_them_only(tmp_path, monkeypatch):
    """A declaration whose text holds no `__attribute__` has none: its tokens (a function's body,
    all of a large header's inline code where headers are read) are never asked of libclang."""
    from clang.cindex import Cursor

    from adgen.base.diagnostics import SourceFile
    from adgen.frontend.prototypes import read_unit

    (tmp_path / "helpers.h").write_text("static inline double twice(double x) {\n" + "  x = x + 1;\n" * 200 +
                                        "  return 2 * x;\n}\n")
    source = tmp_path / "f.c"
    source.write_text('#include "helpers.h"\n__attribute__((enzyme_inactive)) double quiet(double x) { return x; }\n'
                      "double plain(double x) { return twice(x); }\n")
    asked = []
    tokens = Cursor.get_tokens
    monkeypatch.setattr(Cursor, "get_tokens", lambda self: asked.append(self.spelling) or tokens(self))
    unit = read_unit(SourceFile(source), [f"-I{tmp_path}"], included=frozenset({"twice"}))
    attributes = {f.name: f.attributes for f in [*unit.functions, *unit.included]}
    assert attributes == {"twice": (), "quiet": ("enzyme_inactive",), "plain": ()}
    assert asked == ["quiet"]


def test_prototypes_of_included_files_are_read_for_the_names_asked_and_attributes(tmp_path):
    """`adgen cc` asks for the prototypes of the functions its requests name, and of those with
    attributes (Enzyme's `enzyme_inactive`), among what the included files declare: a header of
    hundreds of other declarations (mpi.h, found through the MPI wrapper's -I) costs no types."""
    from adgen.base.diagnostics import SourceFile
    from adgen.frontend.prototypes import read_unit

    (tmp_path / "lib.h").write_text("double wanted(double x);\ndouble other(double *x, int n);\n"
                                    "__attribute__((enzyme_inactive)) double noted(double x);\n" +
                                    "".join(f"int unused{k}(const char *s, long n);\n" for k in range(50)))
    source = tmp_path / "f.c"
    source.write_text('#include "lib.h"\ndouble f(double x) { return wanted(x) + noted(x); }\n')
    unit = read_unit(SourceFile(source), [f"-I{tmp_path}"], included=frozenset({"wanted"}))
    assert {f.name: f.attributes for f in unit.included} == {"wanted": (), "noted": ("enzyme_inactive",)}
    assert [p.name for p in unit.included[0].params] == ["x"]
    assert [f.name for f in unit.functions] == ["f"]
