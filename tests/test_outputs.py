"""What `adgen build` writes: nothing at all when any stage fails (clang's errors while lowering
included), those errors in the user's file with no path of adgen's own, and a source that
includes the header being generated for it."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import compile_c
from adgen.base.diagnostics import display_path

# A path of adgen's own: its temporary work directory, or its lowering wrapper ("0-src.c").
ADGEN_PATHS = re.compile(r"adgen-[\w.-]*[/\\]|\b\d+-src\.c|In file included from|\.adgen\.[ch]\b")

# Errors clang finds only when lowering: libclang (clang 18) reads these sources without one.
LOWERING_ERRORS = [
    pytest.param("""// @diff(f_grad: (dup, const) -> active)
double f(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        int *p = x;
        s += x[i] * p[i];
    }
    return s;
}
""", "src.c:6:14: error: incompatible pointer types initializing 'int *' with an expression of type "
     "'const double *'", id="in a loop body"),
    pytest.param("""// @diff(f_grad: (active) -> active)
double f(double x) { return x * x; }
#ifdef __OPTIMIZE__
double g(double x)
#endif
""", "src.c:5:7: error: expected ';' after top level declarator", id="cut off after a declarator"),
]


@pytest.mark.parametrize("source, message", LOWERING_ERRORS)
def test_an_error_while_lowering_writes_nothing_and_names_the_users_file(adgen, c_file, tmp_path, source, message):
    out = tmp_path / "out"
    result = adgen("build", c_file(source), "-o", out)
    assert result.status == 1
    first, line, caret = result.err.splitlines()[:3]
    assert first.startswith(f"{display_path(tmp_path)}/{message}"), result.err
    assert line.endswith(source.splitlines()[int(message.split(":")[1]) - 1]) and caret.endswith("^"), result.err
    assert not ADGEN_PATHS.search(result.err), result.err
    assert not out.exists()


def test_every_sources_lowering_errors_are_reported_together(adgen, c_file, tmp_path):
    """errors.md: all errors found in a stage are reported together."""
    first = c_file(LOWERING_ERRORS[0].values[0], name="a.c")
    second = c_file(LOWERING_ERRORS[0].values[0].replace("f_grad", "g_grad").replace("double f(", "double g("),
                    name="b.c")
    result = adgen("build", first, second, "-o", tmp_path / "out")
    assert result.status == 1
    assert [line.split(": error:")[0] for line in result.err.splitlines() if ": error:" in line] == \
        [f"{display_path(tmp_path)}/a.c:6:14", f"{display_path(tmp_path)}/b.c:6:14"], result.err
    assert result.err.endswith("2 errors generated.\n")
    assert not (tmp_path / "out").exists()


def test_an_error_in_an_included_header_is_placed_there(adgen, c_file, tmp_path):
    c_file("static inline double twice(const double *x) { int *p = x; return 2 * *x + *p; }\n", name="util.h")
    src = c_file('#include "util.h"\n// @diff(f_grad: (dup) -> active)\ndouble f(const double *x) '
                 '{ return twice(x); }\n')
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    assert result.err.startswith(f"{display_path(tmp_path)}/util.h:1:52: error: incompatible pointer types"), result.err
    assert not ADGEN_PATHS.search(result.err), result.err
    assert not (tmp_path / "out").exists()


SELF_INCLUDE = """#include <stdio.h>

typedef struct particle { double pos[3]; double mass; } particle;

// @diff(energy_grad: (dup, const) -> activeonly)
double energy(const particle *p, int n)
{
    double e = 0;
    for (int i = 0; i < n; i++)
        e += p[i].mass * p[i].pos[0] * p[i].pos[0];
    return e;
}

#include "src.adgen.h"

int main(void)
{
    particle p = {{3, 0, 0}, 4}, dp = {{0}, 0};
    energy_grad(&p, &dp, 1, 1.0);
    printf("%g %g\\n", dp.pos[0], dp.mass);
    return 0;
}
"""


@pytest.mark.parametrize("stale", [False, True], ids=["no header yet", "a stale header beside the source"])
def test_a_source_including_its_own_header_builds_without_flags(adgen, c_file, tmp_path, stale):
    """abi.md: a source may include the header generated for it; the build finds the one it
    makes, not one an earlier build left where the include looks first."""
    src = c_file(SELF_INCLUDE)
    if stale:
        (tmp_path / "src.adgen.h").write_text('#error "a stale header"\n')
    out = tmp_path / "out"
    result = adgen("build", "-q", src, "-o", out)
    assert result.status == 0, result.err
    assert adgen("generate", "-q", src, "-o", tmp_path / "gen").status == 0
    if stale:
        (tmp_path / "src.adgen.h").unlink()
    compile_c("-I", out, src, out / "src.adgen.o", "-o", tmp_path / "prog")
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.stdout.split() == ["24", "9"]  # d(m x^2)/dx = 2 m x, d/dm = x^2


def test_a_source_including_another_sources_header(adgen, c_file, tmp_path):
    """abi.md: a source may include the header generated for another source of the same run."""
    first = c_file("// @diff(sq_grad: (active) -> active)\ndouble sq(double x) { return x * x; }\n", name="a.c")
    second = c_file("""#include <stdio.h>
#include "a.adgen.h"
#include "b.adgen.h"

// @diff(cube_grad: (active) -> active)
double cube(double x) { return x * x * x; }

int main(void) { printf("%g %g\\n", sq_grad(3, 1).d_x, cube_grad(2, 1).d_x); return 0; }
""", name="b.c")
    out = tmp_path / "out"
    result = adgen("build", "-q", first, second, "-o", out)
    assert result.status == 0, result.err
    compile_c("-I", out, first, second, out / "a.adgen.o", out / "b.adgen.o", "-o", tmp_path / "prog")
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.stdout.split() == ["6", "12"]



def test_a_source_including_the_header_an_earlier_build_made(adgen, c_file, tmp_path):
    """A header a separate, earlier run made for another source (a library's) is read as it is,
    not stood in for: its declarations are there when this source is read and lowered."""
    lib = c_file("// @diff(sq_grad: (active) -> active)\ndouble sq(double x) { return x * x; }\n", name="lib/a.c")
    out = tmp_path / "out"
    assert adgen("build", "-q", lib, "-o", out).status == 0
    user = c_file("""#include <stdio.h>
#include "a.adgen.h"
#include "b.adgen.h"

// @diff(cube_grad: (active) -> active)
double cube(double x) { return x * x * x; }

int main(void) { printf("%g %g\\n", sq_grad(3, 1).d_x, cube_grad(2, 1).d_x); return 0; }
""", name="b.c")
    result = adgen("build", "-q", user, "-I", out, "-o", tmp_path / "out2")
    assert result.status == 0, result.err
    compile_c("-I", out, "-I", tmp_path / "out2", lib, user, out / "a.adgen.o", tmp_path / "out2" / "b.adgen.o",
              "-o", tmp_path / "prog")
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.stdout.split() == ["6", "12"]
