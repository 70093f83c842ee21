"""Checks of annotations against prototypes (specs/annotations.md): every type rule, mode rule
and name rule, each error with its location, and nothing written on error."""

from __future__ import annotations

import pytest


def generate(adgen, c_file, text, *flags):
    src = c_file(text)
    out = src.parent / "out"
    result = adgen("generate", "-q", src, "-o", out, *flags)
    return result, out


def header(adgen, c_file, text, *flags) -> str:
    result, out = generate(adgen, c_file, text, *flags)
    assert result.status == 0, result.err
    return (out / "src.adgen.h").read_text()


def errors(adgen, c_file, text, *flags) -> list[str]:
    """The `error:` lines, with the path prefix cut to 'src.c:'."""
    result, out = generate(adgen, c_file, text, *flags)
    assert result.status == 1
    assert not out.exists(), "nothing may be written on error"
    assert "Traceback" not in result.err
    return [line.split("/")[-1] for line in result.err.splitlines() if ": error: " in line]


def test_rust_aliases_and_case_insensitive_words(adgen, c_file):
    h = header(adgen, c_file, """
        // @diff(a: (Duplicated, DuplicatedOnly, Const));
        // @diff(b: REVERSE (DUP, duponly, CONST))
        void f(double *x, double *y, int n);
        // @diff(c: Forward[2] (Dual) -> DualOnly; d: (Active) -> ActiveOnly)
        double g(double x);
    """)
    assert "void a(double *x, double *d_x, double *y, double *d_y, int n);" in h
    assert "void b(double *x, double *d_x, double *y, double *d_y, int n);" in h
    assert "c_result c(double x, double d_x_0, double d_x_1);" in h
    assert "double d(double x, double d_ret);" in h


def test_mode_is_inferred(adgen, c_file):
    h = header(adgen, c_file, """
        // @diff(fwd: (dual) -> const; rev: (active) -> const; both: (const) -> const)
        double f(double x);
    """)
    assert "fwd: forward mode" in h and "rev: reverse mode" in h and "both: reverse mode" in h


@pytest.mark.parametrize("decl, acts", [
    ("void f(double *p);", "(dup)"),
    ("void f(const float *restrict p);", "(dupv)"),
    ("typedef double *reals; void f(reals p);", "(duponly)"),
    ("typedef struct { float a; double b[3]; } S; void f(S *p);", "(dup)"),
    ("struct inner { double v; }; struct outer { int k; struct inner in[2]; }; void f(struct outer *p);", "(dup)"),
    ("void f(double p[4]);", "(dup)"),
    ("void f(double m[][3]);", "(dup)"),
    ("void f(double x);", "(dual)"),
    ("void f(float *x);", "(dualv)"),
    ("void f(void *p, int **q, long double r);", "(const, const, const)"),
])
def test_accepted_types(adgen, c_file, decl, acts):
    header(adgen, c_file, _annotate_last(decl, acts))


def _annotate_last(decl: str, acts: str) -> str:
    """`decl` with an annotation `f_d: ACTS` put before its last declaration."""
    body = decl.rstrip().rstrip(";")
    cut = body.rfind(";") + 1
    return f"{body[:cut]}\n// @diff(f_d: {acts})\n{body[cut:].strip()};\n"


@pytest.mark.parametrize("decl, acts, message", [
    ("void f(double *p);", "(active)", "activity 'active' needs a float or double, or a struct holding them, but parameter 'p' has type 'double *'"),
    ("void f(long double x);", "(active)", "activity 'active' needs a float or double, or a struct holding them, but parameter 'x' has type 'long double'"),
    ("void f(int x);", "(active)", "parameter 'x' has type 'int'"),
    ("void f(void *p);", "(dup)", "activity 'dup' needs a pointer to floating-point data"),
    ("void f(int *p);", "(dupv)", "parameter 'p' has type 'int *'"),
    ("void f(double **p);", "(dup)", "parameter 'p' has type 'double **'"),
    ("union U { double d; long l; }; void f(union U *p);", "(dup)", "parameter 'p' has type 'union U *'"),
    ("struct opaque; void f(struct opaque *p);", "(duponly)", "parameter 'p' has type 'struct opaque *'"),
    ("void f(double x);", "(dup)", "parameter 'x' has type 'double'"),
    ("void f(int n);", "(dual)", "activity 'dual' needs a float or double, a struct holding them, or a pointer to floating-point data, but parameter 'n' has type 'int'"),
    ("void f(char *s);", "(dualonly)", "parameter 's' has type 'char *'"),
    ("typedef struct { int a, b; } ip; void f(ip s);", "(active)", "parameter 's' has type 'ip'"),
    ("typedef struct { double a, b; } dp; void f(dp s);", "(dup)", "activity 'dup' needs a pointer"),
    ("typedef struct { double a, b; } dp; void f(dp s);", "(dualv)", "activity 'dualv' needs a float or double, or a "
     "pointer to floating-point data, but parameter 's' has type 'dp'"),
    ("union U { double d; long l; }; void f(union U u);", "(active)", "parameter 'u' has type 'union U'"),
])
def test_rejected_types(adgen, c_file, decl, acts, message):
    (e,) = errors(adgen, c_file, _annotate_last(decl, acts))
    assert message in e
    assert e.startswith("src.c:")


def test_error_points_at_the_activity(adgen, c_file):
    (e,) = errors(adgen, c_file, "// @diff(g: (const, active))\nvoid f(int n, double *p);\n")
    assert e.startswith("src.c:1:21: error: activity 'active'")


def test_return_rules(adgen, c_file):
    es = errors(adgen, c_file, """
// @diff(a: (const) -> active)
int f(int n);
typedef struct { int x, y; } pair;
// @diff(b: (const) -> dual)
pair g(int n);
// @diff(c: (const) -> dupv)
double h(int n);
""")
    assert "src.c:2:24: error: return activity 'active' needs a float or double, or a struct holding them, but 'f' " \
           "returns 'int'" in es
    assert "src.c:5:24: error: return activity 'dual' needs a float or double, or a struct holding them, but 'g' " \
           "returns 'pair'" in es
    assert any("'dupv' cannot be a return activity; in reverse mode use one of const, active, activeonly" in e for e in es)


def test_const_return_of_any_type(adgen, c_file):
    h = header(adgen, c_file, "// @diff(g: (dup, const) -> const)\nint f(double *p, int n);\n")
    assert "int g(double *p, double *d_p, int n);" in h


def test_parameter_names_from_the_definition(adgen, c_file):
    h = header(adgen, c_file, """
// @diff(g: (active, dup) -> active)
double f(double, double *);
double f(double speed, double *state) { return speed * state[0]; }
""")
    assert "g_result g(double speed, double *state, double *d_state, double d_ret);" in h
    assert "double d_speed;" in h


def test_parameter_names_from_the_declaration_without_definition(adgen, c_file):
    h = header(adgen, c_file, "// @diff(g: (active, const) -> active)\ndouble f(double rate, int);\n")
    assert "g(double rate, int arg1, double d_ret)" in h


def test_annotation_on_a_later_declaration_or_definition(adgen, c_file):
    h = header(adgen, c_file, """
double f(double x);
static int unrelated(void) { return 0; }
// @diff(g: (active) -> active)
__attribute__((noinline)) double f(double x) { return x * x; }
""")
    assert "g(double x, double d_ret)" in h


def test_macros_and_flags_reach_the_prototypes(adgen, c_file, tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "real.h").write_text("#pragma once\ntypedef REAL real;\n")
    h = header(adgen, c_file, '#include "real.h"\n// @diff(g: (active) -> active)\nreal f(real x);\n',
               "-I", tmp_path / "inc", "-D", "REAL=float")
    assert '#include "real.h"' in h
    assert "real ret;" in h and "real d_x;" in h


def test_variadic_and_arity(adgen, c_file):
    es = errors(adgen, c_file, """
// @diff(a: (active) -> active)
double f(double x, ...);
// @diff(b: () -> active)
double g(double x);
// @diff(c: (active, active) -> active)
double h(double x);
""")
    assert es == [
        "src.c:2:10: error: 'a' derives from variadic function 'f', which adgen cannot differentiate",
        "src.c:4:13: error: 'b' lists 0 activities, but 'g' takes 1 parameter",
        "src.c:6:13: error: 'c' lists 2 activities, but 'h' takes 1 parameter",
    ]


def test_mixing_and_mode_errors(adgen, c_file):
    es = errors(adgen, c_file, """
// @diff(a: (dual) -> active)
double f(double x);
// @diff(b: forward (dual) -> active; c: reverse (const) -> dualonly)
double g(double x);
""")
    assert es == [
        "src.c:2:23: error: forward and reverse activities mixed in 'a': 'dual' is forward mode, 'active' is reverse mode",
        "src.c:4:31: error: 'active' is a reverse-mode activity, but 'b' is forward mode",
        "src.c:4:61: error: 'dualonly' is a forward-mode activity, but 'c' is reverse mode",
    ]


def test_name_rules(adgen, c_file):
    es = errors(adgen, c_file, """
#include <math.h>
typedef int f_grad_result;
// @diff(sin: (active) -> active; while: (active) -> active)
double f(double x);
// @diff(f_grad: (active) -> active)
double g(double x);
""")
    assert es == [
        "src.c:4:35: error: derived name 'while' is a C keyword",
        "src.c:4:10: error: derived name 'sin' is already declared as a function",
        "src.c:6:10: error: derived name 'f_grad_result' is already declared as a type",
    ]


def test_duplicate_names_across_sources(adgen, c_file, tmp_path):
    a = c_file("// @diff(shared: (active) -> active)\ndouble f(double x);\n", "a.c")
    b = c_file("// @diff(shared: (active) -> active)\ndouble g(double x);\n", "b.c")
    result = adgen("generate", a, b, "-o", tmp_path / "out")
    assert result.status == 1
    assert "b.c:1:10: error: derived name 'shared' is used twice" in result.err
    assert "a.c:1:10: note: first used here" in result.err
    assert not (tmp_path / "out").exists()


def test_generated_names_must_not_clash(adgen, c_file):
    es = errors(adgen, c_file, """
// @diff(a: (active, const) -> active)
double f(double x, double d_ret);
// @diff(b: (active) -> active)
double g(double ret);
""")
    assert es == ["src.c:2:10: error: 'a' would have two parameters named 'd_ret'; rename the parameter of 'f' that clashes"]


def test_annotation_followed_by_no_function(adgen, c_file):
    es = errors(adgen, c_file, "// @diff(a: (active) -> active)\nint x;\ndouble f(double x);\n")
    assert es == ["src.c:1:4: error: @diff annotation is not followed by a function declaration "
                  "(only whitespace and other @diff comments may stand between them)"]


def test_c_that_does_not_parse(adgen, c_file):
    es = errors(adgen, c_file, "// @diff(a: (active) -> active)\ndouble f(double x) { return x +; }\n")
    assert es == ["src.c:2:32: error: expected expression"]


def test_missing_header_is_a_clang_error(adgen, c_file):
    es = errors(adgen, c_file, '#include "nowhere.h"\n// @diff(a: (active) -> active)\ndouble f(double x);\n')
    assert es == ["src.c:1:10: error: 'nowhere.h' file not found"]


def test_unannotated_source_gives_empty_header(adgen, c_file):
    h = header(adgen, c_file, "double f(double x) { return x; }\n")
    assert "#ifndef ADGEN_SRC_ADGEN_H" in h and "f(" not in h
