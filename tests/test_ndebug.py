"""NDEBUG is the user's choice: zig's clang defines it when optimizing, gcc and clang do not, so
adgen undefines it ahead of the user's flags wherever it compiles their code. An assert() in
a differentiated function aborts from its derivative, unless the user passes -DNDEBUG."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from conftest import compile_c

AT = """#include <assert.h>

// @diff(at_grad: (dup, const, const) -> active)
double at(const double *x, int n, int i)
{
    assert(i >= 0 && i < n);
    return x[i] * x[i];
}
"""

DRIVER = """#include <stdio.h>
double at_grad(const double *x, double *d_x, int n, int i, double d_ret);
int main(void)
{
    double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dx[8] = {0};
    printf("%g\\n", at_grad(x, dx, 2, 5, 1.0));  /* i = 5 is past n = 2 */
    printf("%g\\n", dx[5]);
    return 0;
}
"""

ENZYME = """#include <assert.h>
#include <stdio.h>
double __enzyme_autodiff(void *, ...);
static double limit = 4;
double sq(double x) { assert(x < limit); return x * x; }
int main(void) { printf("%g\\n", __enzyme_autodiff((void *)sq, 5.0)); return 0; }
"""

PLAIN = """#include <assert.h>
int main(int argc, char **argv) { assert(argc > 5); return 0; }
"""


def _aborted(done: subprocess.CompletedProcess) -> bool:
    return done.returncode == -signal.SIGABRT and "Assertion" in done.stderr


@pytest.mark.parametrize("ndebug", [False, True], ids=["asserts kept", "-DNDEBUG"])
def test_adgen_build(adgen, tmp_path, ndebug):
    (tmp_path / "at.c").write_text(AT)
    (tmp_path / "main.c").write_text(DRIVER)
    out = tmp_path / "out"
    result = adgen("build", "-q", tmp_path / "at.c", "-o", out, *(["--", "-DNDEBUG"] if ndebug else []))
    assert result.status == 0, result.err
    compile_c("-O2", tmp_path / "main.c", tmp_path / "at.c", out / "at.adgen.o", "-o", tmp_path / "prog", "-lm")
    done = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    if ndebug:
        assert done.returncode == 0 and done.stdout.split() == ["36", "12"], done
    else:
        assert _aborted(done), done


@pytest.mark.parametrize("source", [ENZYME, PLAIN], ids=["Enzyme's API", "no derivatives"])
@pytest.mark.parametrize("ndebug", [False, True], ids=["asserts kept", "-DNDEBUG"])
@pytest.mark.slow
def test_adgen_cc_at_O2(tmp_path, source, ndebug):
    """As gcc and clang: -O2 keeps assert(), -DNDEBUG drops it."""
    (tmp_path / "prog.c").write_text(source)
    flags = ["-O2", *(["-DNDEBUG"] if ndebug else []), "prog.c", "-o", "prog", "-lm"]
    built = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "cc", *flags], cwd=tmp_path,
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    done = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    if ndebug:
        assert done.returncode == 0, done
    else:
        assert _aborted(done), done


@pytest.mark.slow
def test_adgen_load(tmp_path):
    """adgen.load (and so adgen check) builds with asserts kept: an out-of-range index aborts."""
    (tmp_path / "at.c").write_text(AT)
    code = ("import adgen, numpy as np\n"
            f"lib = adgen.load({str(tmp_path / 'at.c')!r}, build_dir={str(tmp_path / 'build')!r})\n"
            "x = np.arange(1.0, 9.0)\n"
            "print(lib.at_grad(x, np.zeros(8), 2, 5, 1.0))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert _aborted(done), done
