"""The generated C ABI (specs/abi.md): signatures per activity and width, result structs, and
headers that compile as C and C++ on their own."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import GOLDEN, zig_cc

GOOD = sorted(p.stem for p in GOLDEN.glob("*.c"))


def prototypes(adgen, c_file, text: str) -> str:
    src = c_file(text)
    result = adgen("generate", "-q", src, "-o", src.parent / "out")
    assert result.status == 0, result.err
    return (src.parent / "out" / "src.adgen.h").read_text()


@pytest.mark.parametrize("annotation, decl, expected", [
    # reverse mode
    ("(active, active) -> active", "double f(double x, float y);",
     "typedef struct {\n    double ret;\n    double d_x;\n    float d_y;\n} g_result;\n"
     "g_result g(double x, float y, double d_ret);"),
    ("(active) -> activeonly", "double f(double x);", "double g(double x, double d_ret);"),
    ("(const, active) -> activeonly", "float f(int n, float x);", "float g(int n, float x, float d_ret);"),
    ("(dup, const) -> activeonly", "double f(const double *x, int n);",
     "void g(const double *x, double *d_x, int n, double d_ret);"),
    ("(dup)", "void f(double *restrict x);", "void g(double *restrict x, double *restrict d_x);"),
    ("(duponly, dup)", "void f(const double *restrict a, double *b);",
     "void g(const double *restrict a, double *restrict d_a, double *b, double *d_b);"),
    ("reverse[3] (dup) -> activeonly", "double f(const float *x);",
     "void g(const float *x, float *d_x_0, float *d_x_1, float *d_x_2, double d_ret_0, double d_ret_1, double d_ret_2);"),
    ("reverse[4] (dupv) -> active", "double f(const double *x);",
     "double g(const double *x, double *d_x, double d_ret_0, double d_ret_1, double d_ret_2, double d_ret_3);"),
    ("reverse[2] (active, const) -> activeonly", "double f(double x, int k);",
     "typedef struct {\n    double d_x[2];\n} g_result;\ng_result g(double x, int k, double d_ret_0, double d_ret_1);"),
    ("(const) -> const", "double f(double x);", "double g(double x);"),
    ("(const, dup)", "void f(int n, double x[]);", "void g(int n, double *x, double *d_x);"),
    ("(dup)", "void f(const double m[][3]);", "void g(const double (*m)[3], double (*d_m)[3]);"),
    # forward mode
    ("(dual) -> dual", "double f(double x);",
     "typedef struct {\n    double ret;\n    double d_ret;\n} g_result;\ng_result g(double x, double d_x);"),
    ("(dual) -> dualonly", "double f(double x);", "double g(double x, double d_x);"),
    ("(dual, const) -> const", "double f(const double *x, int n);",
     "double g(const double *x, const double *d_x, int n);"),
    ("forward[2] (dual, dual)", "void f(const double *x, double *y);",
     "void g(const double *x, const double *d_x_0, const double *d_x_1, double *y, double *d_y_0, double *d_y_1);"),
    ("forward[8] (dualv) -> dualonly", "float f(float x);",
     "typedef struct {\n    float d_ret[8];\n} g_result;\ng_result g(float x, const float *d_x);"),
    ("forward[4] (dualv) -> dual", "double f(const double *x);",
     "typedef struct {\n    double ret;\n    double d_ret[4];\n} g_result;\ng_result g(const double *x, const double *d_x);"),
    ("forward[2] (dualonly) -> dual", "double f(const double x);",
     "g_result g(const double x, const double d_x_0, const double d_x_1);"),
])
def test_signature(adgen, c_file, annotation, decl, expected):
    h = prototypes(adgen, c_file, f"// @diff(g: {annotation})\n{decl}\n")
    assert expected in h


def test_typedefd_pointer_to_const_is_spelled_out(adgen, c_file):
    h = prototypes(adgen, c_file, "typedef const double *creals;\n// @diff(g: (dup) -> activeonly)\ndouble f(creals x);\n")
    assert "void g(const double *x, double *d_x, double d_ret);" in h  # the source's own typedef


def test_typedefd_pointer_kept_for_tangents(adgen, c_file, tmp_path):
    (tmp_path / "reals.h").write_text("typedef double *reals;\n")
    h = prototypes(adgen, c_file, '#include "reals.h"\n// @diff(g: (dup); h: (dual))\nvoid f(reals x);\n')
    assert "void g(reals x, reals d_x);" in h and "void h(reals x, reals d_x);" in h


def test_struct_from_users_header_with_the_same_include_flags(adgen, c_file, tmp_path):
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "body.h").write_text(
        "#ifndef BODY_H\n#define BODY_H\ntypedef struct { double pos[3], vel[3], mass; } body;\n#endif\n")
    src = c_file('#include <stdlib.h>\n#include "body.h"\n// @diff(step_grad: (dup, const, active))\n'
                 "void step(body *b, size_t n, double dt);\n")
    out = tmp_path / "build"
    assert adgen("generate", "-q", src, "-I", tmp_path / "include", "-o", out).status == 0
    h = (out / "src.adgen.h").read_text()
    assert '#include <stdlib.h>\n#include "body.h"\n' in h  # size_t, then body
    user = tmp_path / "user.c"
    user.write_text('#include "src.adgen.h"\nint main(void) { body b = {0}; (void)b; return 0; }\n')
    cc = subprocess.run(zig_cc("-c", "-Wall", "-Werror", "-I", str(out), "-I", str(tmp_path / "include"),
                               str(user), "-o", str(tmp_path / "user.o")), capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr


def test_include_beside_the_source_is_rewritten_for_the_output_directory(adgen, c_file, tmp_path):
    (tmp_path / "vec.h").write_text("#pragma once\ntypedef struct { double x, y; } vec2;\n")
    src = c_file('#include "vec.h"\n// @diff(g: (dup))\nvoid f(vec2 *v);\n')
    out = tmp_path / "deep" / "build"
    assert adgen("generate", "-q", src, "-o", out).status == 0
    assert '#include "../../vec.h"' in (out / "src.adgen.h").read_text()


@pytest.mark.parametrize("stem", GOOD)
@pytest.mark.parametrize("language", ["c", "c++"])
def test_golden_headers_compile_alone(stem, language, adgen, tmp_path, monkeypatch):
    shutil.copytree(GOLDEN, tmp_path / "g")
    monkeypatch.chdir(tmp_path / "g")
    assert adgen("generate", "-q", f"{stem}.c", "-o", "out").status == 0
    user = tmp_path / "g" / "out" / ("user.cpp" if language == "c++" else "user.c")
    twice = f'#include "{stem}.adgen.h"\n' * 2  # the include guard holds
    user.write_text(twice + "int main(void) { return 0; }\n")
    flags = ["-std=c11", "-pedantic"] if language == "c" else ["-std=c++17"]
    cc = subprocess.run(zig_cc("-c", "-Wall", "-Wextra", "-Werror", *flags, str(user), "-o", str(user) + ".o",
                               cxx=language == "c++"), capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr


@pytest.mark.parametrize("stem", GOOD)
def test_stubs_lower_only_for_adgen(stem, adgen, tmp_path, monkeypatch):
    shutil.copytree(GOLDEN, tmp_path / "g")
    monkeypatch.chdir(tmp_path / "g")
    assert adgen("generate", "-q", f"{stem}.c", "-o", "out").status == 0
    stubs = tmp_path / "g" / "out" / f"{stem}.adgen.c"
    ok = subprocess.run(zig_cc("-c", "-Wall", "-Werror", "-DADGEN_LOWERING", str(stubs), "-o", str(stubs) + ".o"),
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    refused = subprocess.run(zig_cc("-c", str(stubs), "-o", str(stubs) + ".o"), capture_output=True, text=True)
    assert refused.returncode != 0
    assert "holds stubs that `adgen build` fills" in refused.stderr


LOCAL_TYPES = r"""
typedef double *dptr;
typedef double real;
typedef struct { double a, b; } pair;
typedef struct named_s { double a[2]; } named;
typedef enum { SLOW, FAST } speed;

// @diff(f_grad: (dup, active, dup, dup, const) -> active; f_fwd: (dual, dual, dual, dual, const) -> dual)
real f(dptr x, real s, const pair *p, named *q, speed v)
{
    q->a[0] = x[0] * p->b;
    return x[0] * x[1] * s + p->a + (v == FAST);
}
"""


def test_types_the_source_defines_are_spelled_so_the_header_compiles_anywhere(adgen, c_file, tmp_path):
    src = c_file(LOCAL_TYPES)
    out = tmp_path / "out"
    assert adgen("generate", "-q", src, "-o", out).status == 0
    h = (out / "src.adgen.h").read_text()
    assert "defines itself" not in h and "struct named_s;" in h
    assert "f_grad_result f_grad(double *x, double *d_x, double s, const void *p, void *d_p, " \
           "struct named_s *q, struct named_s *d_q, unsigned int v, double d_ret);" in h
    # from another file, which cannot see the source's types ...
    other = tmp_path / "other.c"
    other.write_text('#include "src.adgen.h"\n'
                     "double use(double *x, double *dx, void *p, void *dp, struct named_s *q, struct named_s *dq)\n"
                     "{\n    return f_grad(x, dx, 2.0, p, dp, q, dq, 0, 1.0).ret;\n}\n")
    # ... and from a file that has them, with its own typed pointers
    same = tmp_path / "same.c"
    same.write_text(LOCAL_TYPES.split("// @diff")[0] + '#include "src.adgen.h"\n'
                    "double use(dptr x, dptr dx, pair *p, pair *dp, named *q, named *dq)\n"
                    "{\n    return f_grad(x, dx, 2.0, p, dp, q, dq, FAST, 1.0).ret\n"
                    "        + f_fwd(x, dx, 1, 0, p, dp, q, dq, SLOW).ret;\n}\n")
    for user in (other, same):
        for language in ("c", "c++"):
            flags = ["-std=c11", "-pedantic"] if language == "c" else ["-std=c++17", "-x", "c++"]
            cc = subprocess.run(zig_cc("-c", "-Wall", "-Wextra", "-Werror", *flags, "-I", str(out), str(user),
                                       "-o", str(user) + ".o", cxx=language == "c++"), capture_output=True, text=True)
            assert cc.returncode == 0, (user.name, language, cc.stderr)


def test_function_pointer_types_of_the_source_keep_their_names(adgen, c_file):
    """Declarators inside out are not rewritten: the header names them, to be included after them."""
    h = prototypes(adgen, c_file, "typedef double (*unary)(double);\ntypedef double real;\n"
                                  "// @diff(g: (active, const) -> activeonly)\nreal f(real x, unary u);\n")
    assert "double g(double x, unary u, double d_ret);" in h
    assert "Uses types that src.c defines itself (unary)" in h
