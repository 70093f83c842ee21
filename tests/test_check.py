"""`adgen check`: the table, the exit status, sizes from --size, and a mismatch when a
derivative is wrong."""

from __future__ import annotations

import pytest

import adgen
from adgen.commands.check import Checker
from conftest import ROOT

SOURCE = r"""
#include <math.h>
// @diff(f_grad: (dup, const, active) -> active; f_fwd: forward[4] (dual, const, dual) -> dualonly;
//       f_gradv: reverse[2] (dupv, const, const) -> activeonly)
double f(const double *x, int n, double s)
{
    double e = 0;
    for (int i = 0; i < n; i++)
        e += exp(s * x[i]) * x[i];
    return e;
}
"""


def test_check_prints_a_table_and_passes(adgen, tmp_path):
    src = tmp_path / "f.c"
    src.write_text(SOURCE)
    result = adgen("check", src, "--size", "x=n", "--size", "n=6")
    assert result.status == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["derivative", "mode", "width", "max", "rel.", "error", "verdict"]
    rows = {line.split()[0]: line.split() for line in lines[1:4]}
    assert rows["f_grad"][1:3] == ["reverse", "1"] and rows["f_grad"][-1] == "ok"
    assert rows["f_fwd"][1:3] == ["forward", "4"] and rows["f_fwd"][-1] == "ok"
    assert rows["f_gradv"][1:3] == ["reverse", "2"] and rows["f_gradv"][-1] == "ok"
    assert "f_fwd ~ f_grad  fwd/rev" in result.out  # forward against reverse on the same primal
    assert "4 of 4 checks pass" in result.out


def test_only_one(adgen, tmp_path):
    src = tmp_path / "f.c"
    src.write_text(SOURCE)
    result = adgen("check", src, "--only", "f_fwd", "--size", "x=5")
    assert result.status == 0 and "f_grad" not in result.out and "f_fwd" in result.out
    result = adgen("check", src, "--only", "nope", "--size", "x=5")
    assert result.status == 1 and "no derived function named 'nope'" in result.err


def test_missing_sizes_are_named(adgen, tmp_path):
    src = tmp_path / "f.c"
    src.write_text(SOURCE)
    result = adgen("check", src)
    assert result.status == 1
    assert "adgen: error: 'f' has pointer parameter 'x': its length is needed, pass --size x=N" in result.err


def test_a_size_that_is_neither_a_number_nor_a_parameter_is_named(adgen, tmp_path):
    src = tmp_path / "f.c"
    src.write_text(SOURCE)
    result = adgen("check", src, "--size", "x=2*n")
    assert result.status == 1 and "Traceback" not in result.err and "internal error" not in result.err
    assert "adgen: error: --size x=2*n: '2*n' is neither a number nor an integer parameter of 'f' (they are: n)" \
        in result.err


def test_a_wrong_derivative_is_a_mismatch(tmp_path, monkeypatch):
    src = tmp_path / "f.c"
    src.write_text(SOURCE)
    lib = adgen.load(src)
    right = lib.f_grad

    def wrong(*args):
        r = right(*args)
        return r._replace(d_s=r.d_s * 1.01)

    monkeypatch.setitem(lib._calls, "f_grad", wrong)
    row = Checker(lib, {"x": "n", "n": "5"}, seed=1).check("f_grad")
    assert not row.ok and row.error > 1e-3


def test_bundled_examples_check(adgen):
    result = adgen("check", ROOT / "examples" / "rosenbrock" / "rosenbrock.c")
    assert result.status == 0 and result.out.count(" ok") == 5


def test_sizes_from_an_annotation(adgen, tmp_path):
    src = tmp_path / "f.c"
    src.write_text(SOURCE.replace("double f(const double *x", "// @size(x=n, n=7)\ndouble f(const double *x"))
    result = adgen("check", src, "--only", "f_grad")
    assert result.status == 0, result.err
    result = adgen("check", src, "--only", "f_grad", "--size", "x=bogus")
    assert result.status != 0  # --size wins over the annotation


def test_progress_line_on_a_terminal():
    import io

    from adgen.base.timing import Stages

    out = io.StringIO()
    stages = Stages(progress=True, stream=out)
    with stages.stage("lower", "2 sources"):
        pass
    assert out.getvalue() == "\radgen: lower 2 sources...\x1b[K\r\x1b[K"
    quiet = io.StringIO()
    with Stages(progress=False, stream=quiet).stage("lower"):
        pass
    assert quiet.getvalue() == ""


def test_selects_between_const_and_active_arrays_at_all_widths(adgen, tmp_path):
    src = tmp_path / "mix.c"
    src.write_text("""
// @diff(mix_r2: reverse[2] (const, dup, active, const) -> active;
//       mix_rv: reverse[2] (const, dupv, active, const) -> active;
//       mix_f4: forward[4] (const, dual, dual, const) -> dual;
//       mix_fv: forward[2] (const, dualv, dual, const) -> dual)
double mix(const double *x, double *y, double t, int k)
{
    double s = 0;
    for (int i = 0; i < 4; i++) {
        s += (t * i > 1.0 ? x[i] : y[i]) * t;
        y[i] = (t > 0.5 ? x[i] : y[(i + k) % 4]) * t;
    }
    return s;
}
""")
    for seed in ("1", "2", "3"):
        result = adgen("check", src, "--size", "x=4", "--size", "y=4", "--size", "k=1", "--seed", seed)
        assert result.status == 0, result.out + result.err
        assert result.out.count(" ok") == 6


def test_loop_carried_pointer_from_const_input_to_active_layers(adgen, tmp_path):
    src = tmp_path / "layers.c"
    src.write_text("""#include <math.h>
// @diff(layers_r: (dup, const, dup) -> activeonly; layers_f: (dual, const, dual) -> dualonly;
//       layers_r2: reverse[2] (dup, const, dup) -> activeonly)
double layers(const double *w, const double *xs, double *h)
{
    const double *in = xs;
    double loss = 0;
    for (int l = 0; l < 3; l++) {
        double *out = h + 4 * l;
        for (int k = 0; k < 4; k++)
            out[k] = tanh(w[l * 4 + k] * in[k] + in[(k + 1) % 4]);
        in = out;
    }
    for (int k = 0; k < 4; k++)
        loss += in[k] * in[k];
    return loss;
}
""")
    result = adgen("check", src, "--size", "w=12", "--size", "xs=4", "--size", "h=12")
    assert result.status == 0, result.out + result.err
    assert result.out.count(" ok") == 4


STRUCTS = r"""
#include <math.h>
typedef struct { double x, y, z; } vec3;
typedef struct { float re, im; } cf;
typedef struct { int id; double w; } tagged;

// @size(p=3, out=3, m=2, c=4, t=2)
// @diff(centre_grad: (dup, dup) -> activeonly; centre_fwd: (dual, dual) -> dual)
double centre(const vec3 *p, vec3 *out)
{
    double s = 0;
    for (int i = 0; i < 3; i++) {
        out[i].x = p[i].y * p[i].z, out[i].y = sin(p[i].x), out[i].z = p[i].x + p[i].z;
        s += p[i].x * p[i].y;
    }
    return s;
}

// @diff(rows_grad: (dup) -> activeonly)
double rows(const double m[][3])
{
    return m[0][0] * m[1][2] + m[1][0] * m[0][2] + exp(m[1][1]);
}

// @diff(cmag_grad: (dup) -> activeonly)
float cmag(const cf *c)
{
    float s = 0;
    for (int i = 0; i < 4; i++)
        s += c[i].re * c[i].re - c[i].im;
    return s;
}

// @diff(weights_grad: (const, active) -> activeonly)
double weights(const tagged *t, double s)
{
    return s * (t[0].w + t[1].w + t[1].id);
}
"""


def test_pointers_to_structs_and_rows_are_sized_by_element(adgen, tmp_path):
    src = tmp_path / "structs.c"
    src.write_text(STRUCTS)
    result = adgen("check", src)
    assert result.status == 0, result.out + result.err
    rows = {line.split()[0]: line.split()[-1] for line in result.out.splitlines()[1:] if line.split()}
    assert all(rows[n] == "ok" for n in ("centre_grad", "centre_fwd", "rows_grad", "cmag_grad", "weights_grad"))


def test_random_elements_fill_whole_structs(tmp_path):
    src = tmp_path / "structs.c"
    src.write_text(STRUCTS)
    lib = adgen.load(src)
    import random

    checker = Checker(lib, {"p": "3", "out": "3", "m": "2", "c": "4", "t": "2"}, 1)
    p, out = checker.inputs("centre", random.Random(0))
    assert p.dtype.name == "float64" and len(p) == 9 and len(out) == 9 and all(p != 0)
    (m,) = checker.inputs("rows", random.Random(0))
    assert len(m) == 6
    (c,) = checker.inputs("cmag", random.Random(0))
    assert c.dtype.name == "float32" and len(c) == 8
    t, _ = checker.inputs("weights", random.Random(0))
    assert t.dtype.name == "uint8" and len(t) == 32  # two 16-byte structs mixing int and double: zeros


def test_an_active_pointer_to_mixed_structs_is_refused_clearly(adgen, tmp_path):
    src = tmp_path / "mixed.c"
    src.write_text("typedef struct { int id; double w; } tagged;\n"
                   "// @size(t=2)\n// @diff(w_grad: (dup) -> activeonly)\n"
                   "double w(const tagged *t) { return t[0].w * t[1].w; }\n")
    result = adgen("check", src)
    assert result.status == 1 and "Traceback" not in result.err
    assert "points to elements that mix floating and other fields" in result.err


@pytest.mark.slow
def test_a_primal_that_never_returns_is_named_with_its_input(tmp_path):
    """In a process of its own: a hung call ends the process it runs in."""
    import subprocess
    import sys

    src = tmp_path / "newton.c"
    src.write_text("// @diff(root_grad: (active) -> activeonly)\n"
                   "double root(double a)\n{\n    double x = a;\n"
                   "    while (1) {  /* x tends to 2 and never passes a + 5: a loop that never ends */\n"
                   "        if (x > a + 5.0)\n            break;\n"
                   "        x = 0.5 * x + 1.0;\n    }\n    return x;\n}\n")
    result = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "check", str(src), "--timeout", "1"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "adgen: error: root(" in result.stderr and "has not returned after 1 s" in result.stderr
    assert "--seed 0" in result.stderr


def test_a_pointer_to_elements_of_unknown_size_is_refused_clearly(adgen, tmp_path):
    src = tmp_path / "opaque.c"
    src.write_text("// @size(ctx=1)\n// @diff(g_grad: (active, const) -> activeonly)\n"
                   "double g(double x, const void *ctx) { return x * x + (ctx != 0); }\n")
    result = adgen("check", src)
    assert result.status == 1
    assert "'g' has pointer parameter 'ctx' to elements of unknown size" in result.err


BY_VALUE = r"""#include <complex.h>
#include <math.h>
typedef struct { double gamma; int m; } wishart;
typedef struct { double lo, hi; float f; } span;

// @size(w.gamma=1.3, w.m=2)
// @diff(prior_grad: (active, active) -> active; prior_fwd: (dual, dual) -> dual)
double prior(double x, wishart w) { return 0.5 * w.gamma * w.gamma * x * x - w.m * log(w.gamma); }

// @diff(stretch_grad: (active, active) -> active; stretch_fwd: forward[2] (dual, const) -> dual)
span stretch(span s, double t) { span r = { s.lo * t, s.hi * s.lo + t, s.f * (float)t }; return r; }

// @diff(rotate_grad: (active, active) -> active; rotate_fwd: (dual, dual) -> dual)
double complex rotate(double complex z, double t) { return z * cexp(I * t) / (2.0 + z * conj(z)); }

/* a complex field (a macro of <complex.h>, which the stubs then include), an array, an int */
typedef struct { double complex z; int k; double w[2]; } wave;
// @diff(wave_grad: (active, const) -> active; wave_fwd: (dual, const) -> dual)
double height(wave s, double t) { return creal(s.z * cexp(I * t)) * s.w[0] + cimag(s.z) * s.w[1] * s.k; }
"""


@pytest.mark.slow
def test_structs_and_complex_numbers_by_value(adgen, tmp_path):
    """Their floating fields are inputs and outputs like any others; integer fields are 4, or
    what --size (here @size) gives a field by its path."""
    src = tmp_path / "values.c"
    src.write_text(BY_VALUE)
    result = adgen("check", src)
    assert result.status == 0, result.out + result.err
    assert "12 of 12 checks pass" in result.out
    for row in ("prior_grad", "stretch_fwd ", "rotate_fwd ~ rotate_grad", "wave_fwd ~ wave_grad"):
        assert row in result.out


@pytest.mark.slow
def test_a_primal_not_finite_at_the_random_input_is_no_mismatch(adgen, tmp_path):
    src = tmp_path / "log.c"
    src.write_text(BY_VALUE.replace("// @size(w.gamma=1.3, w.m=2)\n", ""))
    result = adgen("check", src, "--only", "prior_grad", "--seed", "1")
    assert result.status == 1
    assert "NOT FINITE" in result.out and "MISMATCH" not in result.out
    assert "not checked, the primal not finite at the random input (--seed 1): prior_grad; try another --seed" \
        in result.out


def test_derivatives_of_derived_functions_and_const_results(adgen, tmp_path):
    """A nested entry is checked against finite differences of the derived function it derives
    (its own names `d2_…`); a forward entry whose result is const is checked on its memory only."""
    src = tmp_path / "h.c"
    src.write_text(r"""
#include <math.h>
// @diff(h_grad: (dup, const) -> active; h_hvp: forward of h_grad (dual, dual, const, const) -> const)
// @diff(h_hvp2: forward[2] of h_grad (dual, dual, const, const) -> dual; h_out: (dual, const) -> const)
double h(double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        s += sin(x[i]) * x[(i + 1) % n];
        x[i] *= 1.5;
    }
    return s;
}
""")
    result = adgen("check", src, "--size", "x=n", "--size", "d_x=n", "--size", "n=5")
    assert result.status == 0, result.out + result.err
    assert "5 of 5 checks pass" in result.out, result.out
