"""`adgen cc` (specs/enzyme.md): programs written for Enzyme's C API, each element of the API in a
small program that checks its own results (against finite differences or closed forms) and
exits non-zero on a mismatch, built at -O0 and -O2; the compiler driver's flags (-c, -o, -MD,
-S, -E, linking, several files, as a launcher); and the errors at the call, naming the argument."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from conftest import adgen_compiler, compile_c, quick_first

from adgen.ir_ad.ir import Module

CHECK = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#define CHECK(got, want) do { double g_ = (got), w_ = (want); \
    if (!(fabs(g_ - w_) <= 1e-7 * (1 + fabs(w_)))) { \
        fprintf(stderr, "%s:%d: %s = %.17g, want %.17g\n", __FILE__, __LINE__, #got, g_, w_); exit(1); } } while (0)
extern int enzyme_dup, enzyme_dupnoneed, enzyme_const, enzyme_out, enzyme_width, enzyme_primal_return,
    enzyme_allocated, enzyme_tape, enzyme_scalar, enzyme_vector;
"""


adgen_cc = partial(adgen_compiler, "cc")


def build_and_run(tmp_path: Path, source: str, level: str, *flags: str) -> str:
    src = tmp_path / "prog.c"
    src.write_text(CHECK + source)
    exe = tmp_path / f"prog{level}"
    adgen_cc(level, *flags, src, "-o", exe, "-lm", cwd=tmp_path)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


LEVELS = pytest.mark.parametrize("level", ["-O0", pytest.param("-O2", marks=pytest.mark.slow)])

REVERSE = r"""
typedef struct { double dx, dy; } pair;
double __enzyme_autodiff(void *, ...);
pair __enzyme_autodiff2(void *, ...);
void __enzyme_autodiff_void(void *, ...);
typedef struct { double f, dx; } with_primal;
with_primal __enzyme_autodiff_primal(void *, ...);

double mul(double x, double y) { return x * sin(y); }
float halve(float x) { return x * x / 2; }
double norm(const double *v, int n) { double s = 0; for (int i = 0; i < n; i++) s += v[i] * v[i]; return sqrt(s); }
void scale(double *out, const double *in, double k, int n) { for (int i = 0; i < n; i++) out[i] = k * in[i] * in[i]; }

int main(void) {
    pair p = __enzyme_autodiff2((void *)mul, 2.0, 0.5);          /* floats active by default: a struct of both */
    CHECK(p.dx, sin(0.5)); CHECK(p.dy, 2.0 * cos(0.5));
    CHECK(__enzyme_autodiff((void *)mul, enzyme_const, 2.0, 0.5), 2.0 * cos(0.5));
    CHECK(__enzyme_autodiff((void *)mul, enzyme_out, 2.0, enzyme_const, 0.5), sin(0.5));
    CHECK(__enzyme_autodiff((void *)halve, 3.0), 3.0);            /* a float passed through `...` as a double */
    double v[3] = {1, 2, 2}, dv[3] = {0};
    __enzyme_autodiff_void((void *)norm, v, dv, enzyme_const, 3);  /* a pointer is duplicated by default */
    for (int i = 0; i < 3; i++) CHECK(dv[i], v[i] / 3.0);
    double out[3], dout[3] = {1, 1, 1}, din[3] = {0};
    __enzyme_autodiff_void((void *)scale, enzyme_dupnoneed, out, dout, enzyme_dup, v, din, enzyme_const, 0.5, 3);
    for (int i = 0; i < 3; i++) { CHECK(din[i], v[i]); CHECK(dout[i], 0); }
    with_primal w = __enzyme_autodiff_primal((void *)mul, enzyme_primal_return, enzyme_out, 2.0, enzyme_const, 0.5);
    CHECK(w.f, 2.0 * sin(0.5)); CHECK(w.dx, sin(0.5));
    double a[3] = {1, 0, 0}, b[3] = {0}, dout2[2][3] = {{1, 0, 0}, {0, 0, 1}};
    __enzyme_autodiff_void((void *)scale, enzyme_width, 2, out, dout2[0], dout2[1],  /* two seeds at once */
                           enzyme_dup, v, a, b, enzyme_const, 0.5, 3);
    CHECK(a[0], 1 + v[0]); CHECK(a[2], 0); CHECK(b[2], v[2]); CHECK(b[0], 0);
    return 0;
}
"""


@LEVELS
def test_reverse_mode_activities_and_returns(tmp_path, level):
    build_and_run(tmp_path, REVERSE, level)


FORWARD = r"""
double __enzyme_fwddiff(void *, ...);
typedef struct { double d[3]; } three;
three __enzyme_fwddiff3(void *, ...);
typedef struct { double f, df; } dual;
dual __enzyme_fwddiff_primal(void *, ...);
void __enzyme_fwddiff_void(void *, ...);

double f(double x, double y) { return exp(x) * y + x / y; }
void cumulative(double *out, const double *in, int n) { double s = 0; for (int i = 0; i < n; i++) { s += in[i] * in[i]; out[i] = s; } }

int main(void) {
    CHECK(__enzyme_fwddiff((void *)f, 1.0, 1.0, 2.0, 0.0), exp(1.0) * 2.0 + 0.5);  /* floats dual by default */
    CHECK(__enzyme_fwddiff((void *)f, enzyme_const, 1.0, 2.0, 1.0), exp(1.0) - 0.25);
    three t = __enzyme_fwddiff3((void *)f, enzyme_width, 3, 1.0, 1.0, 0.0, 1.0, 2.0, 0.0, 1.0, 1.0);
    CHECK(t.d[0], exp(1.0) * 2.0 + 0.5); CHECK(t.d[1], exp(1.0) - 0.25); CHECK(t.d[2], t.d[0] + t.d[1]);
    dual d = __enzyme_fwddiff_primal((void *)f, enzyme_primal_return, 1.0, 1.0, enzyme_const, 2.0);
    CHECK(d.f, f(1.0, 2.0)); CHECK(d.df, exp(1.0) * 2.0 + 0.5);
    double in[3] = {1, 2, 3}, din[3] = {1, 0, 1}, out[3], dout[3];
    __enzyme_fwddiff_void((void *)cumulative, enzyme_dup, out, dout, enzyme_dup, in, din, enzyme_const, 3);
    CHECK(dout[0], 2); CHECK(dout[1], 2); CHECK(dout[2], 8); CHECK(out[2], 14);
    return 0;
}
"""


@LEVELS
def test_forward_mode_dual_width_and_primal(tmp_path, level):
    build_and_run(tmp_path, FORWARD, level)


SPLIT = r"""
void *__enzyme_augmentfwd(void *, ...);
void __enzyme_reverse(void *, ...);
double __enzyme_augmentfwd_d(void *, ...);
double __enzyme_reverse_d(void *, ...);
typedef struct { void *tape; double ret; } aug;
aug __enzyme_augmentfwd_t(void *, ...);
unsigned long __enzyme_augmentsize(void *, ...);

void f(double *x) { x[0] += x[1] * x[1]; x[1] = -sin(x[1]); }
double g(double *x, double k) { double s = 0; for (int i = 0; i < 3; i++) s += k * exp(x[i]); return s; }

int main(void) {
    double x[2] = {1.2, 3.4}, xb[2] = {5.6, 7.8};
    char tape[200];
    __enzyme_augmentfwd((void *)f, enzyme_dup, x, xb, enzyme_allocated, 200, enzyme_tape, tape);
    CHECK(x[0], 1.2 + 3.4 * 3.4); CHECK(x[1], -sin(3.4));
    x[0] = x[1] = 100;  /* the tape keeps what the reverse sweep needs */
    __enzyme_reverse((void *)f, enzyme_dup, x, xb, enzyme_allocated, 200, enzyme_tape, tape);
    CHECK(xb[0], 5.6); CHECK(xb[1], 5.6 * 2 * 3.4 - 7.8 * cos(3.4));
    unsigned long size = __enzyme_augmentsize((void *)f, enzyme_dup);
    if (size == 0 || size > 200) { fprintf(stderr, "tape size %lu\n", size); return 1; }
    double y[3] = {0.1, 0.2, 0.3}, yb[3] = {0};
    aug a = __enzyme_augmentfwd_t((void *)g, enzyme_dup, y, yb, enzyme_const, 2.0);  /* a tape it allocates */
    CHECK(a.ret, g(y, 2.0));
    __enzyme_reverse((void *)g, enzyme_dup, y, yb, enzyme_const, 2.0, 0.5, a.tape);  /* seed 0.5, then the tape */
    for (int i = 0; i < 3; i++) CHECK(yb[i], 0.5 * 2.0 * exp(y[i]));
    return 0;
}
"""


@LEVELS
def test_split_mode_tapes_allocated_and_returned(tmp_path, level):
    build_and_run(tmp_path, SPLIT, level)


CUSTOM = r"""
#include <string.h>
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
int augmented, reversed, forwards;

__attribute__((noinline)) void square_(const double *src, double *dest) { *dest = *src * *src; }
void *aug_square(const double *src, const double *d_src, double *dest, double *d_dest) {
    augmented++; *dest = *src * *src; double *t = malloc(sizeof *t); *t = *src; return t;
}
void rev_square(const double *src, double *d_src, const double *dest, double *d_dest, void *tape) {
    reversed++; *d_src += 3 * *(double *)tape * *d_dest; *d_dest = 0; free(tape);  /* 3x: made up, to tell */
}
void fwd_square(const double *src, const double *d_src, double *dest, double *d_dest) {
    forwards++; *dest = *src * *src; *d_dest = 5 * *src * *d_src;
}
void *__enzyme_register_gradient_square[] = {(void *)square_, (void *)aug_square, (void *)rev_square};
void *__enzyme_register_derivative_square[] = {(void *)square_, (void *)fwd_square};
double square(double x) { double y; square_(&x, &y); return y; }

__attribute__((noinline)) double twice(double x) { return 2 * x; }
void aug_twice(double x) { augmented++; }
double rev_twice(double x, double d_r) { return 7 * d_r; }
void *__enzyme_register_gradient_twice[] = {(void *)twice, (void *)aug_twice, (void *)rev_twice};
double use_twice(double x) { return twice(x) * x; }

__attribute__((noinline)) double noisy(double x) { return x * x; }
void *__enzyme_inactivefn[] = {(void *)noisy};
__attribute__((enzyme_inactive)) double quiet(double x) { return x * x; }
double with_inactive(double x) { return noisy(x) + quiet(x) + x; }

__attribute__((noinline)) double my_log1p(double x) { return 2 * x; }  /* wrong on purpose: its rule is log1p's */
void *__enzyme_function_like[2] = {(void *)my_log1p, (void *)"log1p"};
__attribute__((enzyme_function_like("sin"))) double my_sin(double x) { return 3 * x; }
double with_like(double x) { return my_log1p(x) + my_sin(x); }

char arena[256];
int used;
__attribute__((noinline)) void *bump(int count, int size) { void *p = arena + used; used += count * size; return p; }
void release(void *p) {}
void *__enzyme_allocation_like[4] = {(void *)bump, (void *)1, (void *)"-1", (void *)release};
double through_arena(double x) { double *p = bump(1, sizeof(double)); *p = x * x; return *p * x; }

int main(void) {
    CHECK(__enzyme_autodiff((void *)square, 2.0), 6.0);  /* 3 x, the gradient written by hand */
    if (augmented != 1 || reversed != 1) return 2;
    CHECK(__enzyme_fwddiff((void *)square, 2.0, 1.0), 10.0);
    if (forwards != 1) return 3;
    CHECK(__enzyme_autodiff((void *)use_twice, 1.5), 7 * 1.5 + twice(1.5));
    CHECK(__enzyme_autodiff((void *)with_inactive, 3.0), 1.0);
    CHECK(__enzyme_autodiff((void *)with_like, 1.0), 1 / 2.0 + cos(1.0));
    CHECK(__enzyme_autodiff((void *)through_arena, 2.0), 12.0);
    return 0;
}
"""


@LEVELS
def test_registrations_and_attributes(tmp_path, level):
    build_and_run(tmp_path, CUSTOM, level, "-Wall")


ELSEWHERE = r"""
double __enzyme_autodiff(void *, ...);
void scale3(const double *x, double *y);  /* defined in another object: no body here */
void *aug_scale3(const double *x, const double *d_x, double *y, double *d_y) { scale3(x, y); return 0; }
void rev_scale3(const double *x, double *d_x, const double *y, double *d_y, void *tape) { *d_x += 3 * *d_y; *d_y = 0; }
void *__enzyme_register_gradient_scale3[] = {(void *)scale3, (void *)aug_scale3, (void *)rev_scale3};
double f(double x) { double y; scale3(&x, &y); return y * y; }
int main(void) {
    CHECK(__enzyme_autodiff((void *)f, 2.0), 2 * 6.0 * 3);
    return 0;
}
"""


def test_a_gradient_by_hand_of_a_function_defined_elsewhere(tmp_path):
    """A function whose body the sources do not hold (a library's, MPI's) with its gradient
    registered: its summaries take it as reading and masking every argument (an internal error,
    IndexError, before)."""
    (tmp_path / "scale3.c").write_text("void scale3(const double *x, double *y) { *y = 3 * *x; }\n")
    compile_c("-O2", "-c", tmp_path / "scale3.c", "-o", tmp_path / "scale3.o")
    build_and_run(tmp_path, ELSEWHERE, "-O2", str(tmp_path / "scale3.o"))


NESTED = r"""
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
unsigned long long __enzyme_iter(unsigned long long, unsigned long long);
double series(double x) {  /* sin's Taylor series, two terms, and one more for each derivative taken */
    double r = 0, term = x;
    unsigned long long n = __enzyme_iter(3, 2);
    for (unsigned long long i = 1; i <= n; i += 2) { r += term; term *= -x * x / ((i + 1) * (i + 2)); }
    return r;
}
double d1(double x) { return __enzyme_autodiff((void *)series, x); }
double d2(double x) { return __enzyme_fwddiff((void *)d1, x, 1.0); }
double d3(double x) { return __enzyme_autodiff((void *)d2, x); }
int main(void) {
    double x = 0.7, x2 = x * x;
    CHECK(series(x), x - x * x2 / 6);
    CHECK(d1(x), 1 - x2 / 2 + x2 * x2 / 24);                    /* of three terms */
    CHECK(d2(x), -x + x * x2 / 6 - x * x2 * x2 / 120);          /* of four */
    CHECK(d3(x), -1 + x2 / 2 - x2 * x2 / 24 + x2 * x2 * x2 / 720);  /* of five */
    return 0;
}
"""


@LEVELS
def test_derivatives_of_derivatives_and_enzyme_iter(tmp_path, level):
    build_and_run(tmp_path, NESTED, level)


SHARED = r"""
double __enzyme_autodiff(void *, ...);
typedef struct { double r[3]; } three;
three __enzyme_batch(void *, ...);
#define GRAD(f, x) __enzyme_autodiff((void *)(f), enzyme_out, (x))
static inline __attribute__((always_inline)) double grad(double (*f)(double), double x) {
    return __enzyme_autodiff((void *)f, x);
}
double cube(double x) { return x * x * x; }
double k_times(double x, double k) { return k * x; }
int main(void) {
    CHECK(GRAD(cube, 2.0), 12.0);
    CHECK(grad(cube, 3.0), 27.0);
    CHECK(__enzyme_autodiff((void *)cube, 1.0), 3.0);
    three t = __enzyme_batch((void *)k_times, enzyme_width, 3, enzyme_vector, 1.0, 2.0, 3.0, enzyme_scalar, 0.5);
    CHECK(t.r[0], 0.5); CHECK(t.r[1], 1.0); CHECK(t.r[2], 1.5);
    return 0;
}
"""


@pytest.mark.slow
def test_macros_and_wrappers_share_one_derivative(tmp_path):
    src = tmp_path / "prog.c"
    src.write_text(CHECK + SHARED)
    done = adgen_cc("-O2", "--adgen-verbose", src, "-o", tmp_path / "prog", cwd=tmp_path)
    assert "(1 derivative)" in done.stderr  # three calls, one request
    assert subprocess.run([str(tmp_path / "prog")]).returncode == 0


CORE = r"""
#include <string.h>
double __enzyme_autodiff(void *, ...);
typedef struct { int start, end; double *data; } window;   /* integers and a pointer: copied with its shadow */
__attribute__((noinline)) double total(const window *w) { double s = 0; for (int i = w->start; i < w->end; i++) s += w->data[i] * w->data[i]; return s; }
double half(window *w) {
    window *copy = malloc(sizeof *copy);
    *copy = *w;
    copy->end = w->end / 2;
    double s = total(copy);
    free(copy);
    return s;
}
__attribute__((noinline)) unsigned long long *stash(unsigned long long bits, unsigned long long tag) {
    unsigned long long *p = malloc(2 * sizeof *p);   /* a double's bits passed as an integer */
    double d; memcpy(&d, &bits, sizeof d); *(double *)p = d * d; p[1] = tag; return p;
}
double through_bits(double x) { unsigned long long b; memcpy(&b, &x, sizeof b); unsigned long long *p = stash(b, 3); double r = *(double *)p; free(p); return r; }
double aligned(double x) { double *p; posix_memalign((void **)&p, 64, 4 * sizeof *p); for (int i = 0; i < 4; i++) p[i] = x * i; double s = p[3] * p[2]; free(p); return s; }
int main(void) {
    double data[8] = {1, 2, 3, 4, 5, 6, 7, 8}, ddata[8] = {0};
    window w = {0, 8, data}, dw = {0, 0, ddata};
    __enzyme_autodiff((void *)half, &w, &dw);
    for (int i = 0; i < 8; i++) CHECK(ddata[i], i < 4 ? 2 * data[i] : 0);
    CHECK(__enzyme_autodiff((void *)through_bits, 1.5), 3.0);
    CHECK(__enzyme_autodiff((void *)aligned, 1.5), 12 * 1.5);
    return 0;
}
"""


@LEVELS
def test_struct_copies_float_bits_in_integers_posix_memalign(tmp_path, level):
    build_and_run(tmp_path, CORE, level)


BY_VALUE = r"""
#include <complex.h>
void __enzyme_autodiff(void *, ...);
double __enzyme_autodiff_d(void *, ...);
double __enzyme_fwddiff(void *, ...);
struct W { double g; int m; };       /* x86-64: in a double and an int, or in memory where registers ran out */
struct B { double a, b, c, d, e; };  /* in memory (byval) */

double f(struct W w, const double *x) { return w.g * sin(x[0]) * w.m + w.g * x[1] * x[1]; }
/* the call spends its registers before the struct and passes it in memory; `late` takes it in registers */
double late(const double *x, const double *y, struct W w) { return w.g * x[0] * y[0] * y[0] * w.m; }
double big(struct B b, double x, int n) { return b.a * x * x + b.e * sin(x) * n + b.c * b.d; }
double cz(double complex z, double x) { return creal(z) * x * x + cimag(z) * exp(x); }
void objective(int d, int k, int n, const double *a, const double *mu, const double *q, const double *l,
               const double *xs, struct W w, double *err) {  /* GradBench's gmm: the struct after 8 arguments */
    double s = 0;
    for (int i = 0; i < d; i++) s += a[i] * mu[i] * q[i] - l[i] * xs[i];
    *err = w.g * s * s + w.m * k * n;
}

#define H 1e-6
#define CENTRAL(expr_at, v) ((v += H, p_ = (expr_at), v -= 2 * H, m_ = (expr_at), v += H), (p_ - m_) / (2 * H))
int main(void) {
    double p_, m_;
    struct W w = {1.5, 3};
    struct B b = {1, 2, 3, 4, 5};
    double x[2] = {0.3, 0.7}, dx[2] = {0, 0};
    __enzyme_autodiff((void *)f, enzyme_const, w, enzyme_dup, x, dx);
    for (int i = 0; i < 2; i++) CHECK(dx[i], CENTRAL(f(w, x), x[i]));
    double y[1] = {2}, dy[1] = {0};
    dx[0] = 0;
    __enzyme_autodiff((void *)late, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, w);
    CHECK(dx[0], CENTRAL(late(x, y, w), x[0]));
    CHECK(dy[0], CENTRAL(late(x, y, w), y[0]));
    double t = 0.4;
    CHECK(__enzyme_autodiff_d((void *)big, enzyme_const, b, t, enzyme_const, 2), CENTRAL(big(b, t, 2), t));
    CHECK(__enzyme_fwddiff((void *)big, enzyme_const, b, t, 1.0, enzyme_const, 2), CENTRAL(big(b, t, 2), t));
    double complex z = 2.0 + 3.0 * I;
    CHECK(__enzyme_autodiff_d((void *)cz, enzyme_const, z, t), CENTRAL(cz(z, t), t));
    double a[3] = {1, 2, 3}, mu[3] = {0.5, -1, 2}, q[3] = {1, 1, -1}, l[3] = {2, 0, 1}, xs[3] = {1, 2, 1};
    double da[3] = {0}, dmu[3] = {0}, dq[3] = {0}, dl[3] = {0}, err, derr = 1;
    __enzyme_autodiff((void *)objective, enzyme_const, 3, enzyme_const, 2, enzyme_const, 4,
                      enzyme_dup, a, da, enzyme_dup, mu, dmu, enzyme_dup, q, dq, enzyme_dup, l, dl,
                      enzyme_const, xs, enzyme_const, w, enzyme_dupnoneed, &err, &derr);
    for (int i = 0; i < 3; i++) {
        CHECK(da[i], CENTRAL((objective(3, 2, 4, a, mu, q, l, xs, w, &err), err), a[i]));
        CHECK(dmu[i], CENTRAL((objective(3, 2, 4, a, mu, q, l, xs, w, &err), err), mu[i]));
        CHECK(dl[i], CENTRAL((objective(3, 2, 4, a, mu, q, l, xs, w, &err), err), l[i]));
    }
    return 0;
}
"""


@LEVELS
def test_structs_by_value_as_constants(tmp_path, level):
    """A struct by value marked enzyme_const, however the target passes it: in registers (a double
    and an int), in memory (five doubles), the call and the function each their own way (the
    call's registers spent first), a complex number; checked against central differences."""
    build_and_run(tmp_path, BY_VALUE, level)


# ---------------------------------------------------------------------------------------------- the driver

TWO = {"main.c": "#include <stdio.h>\ndouble dsq(double x);\nint main(void) { printf(\"%g\\n\", dsq(3.0)); }\n",
       "sq.c": "double __enzyme_autodiff(void *, ...);\n#include \"sq.h\"\nstatic double sq(double x) { return SQ(x); }\n"
               "double dsq(double x) { return __enzyme_autodiff((void *)sq, x); }\n",
       "sq.h": "#define SQ(x) ((x) * (x))\n"}


def _write(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)


@pytest.mark.slow
def test_compile_then_link_with_dependency_files(tmp_path):
    _write(tmp_path, TWO)
    for name in ("main.c", "sq.c"):
        adgen_cc("-O2", "-MD", "-Wall", "-c", name, "-o", name[:-2] + ".o", cwd=tmp_path)
    assert "sq.o:" in (tmp_path / "sq.d").read_text() and "sq.h" in (tmp_path / "sq.d").read_text()
    assert "main.o:" in (tmp_path / "main.d").read_text()
    adgen_cc("main.o", "sq.o", "-o", "prog", cwd=tmp_path)
    assert subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True).stdout == "6\n"


@pytest.mark.slow
def test_several_files_in_one_command_and_the_other_outputs(tmp_path):
    _write(tmp_path, TWO)
    adgen_cc("-O1", "main.c", "sq.c", "-o", "prog", cwd=tmp_path)
    assert subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True).stdout == "6\n"
    adgen_cc("-c", "main.c", "sq.c", cwd=tmp_path)  # each to its own object, by its name
    assert (tmp_path / "main.o").exists() and (tmp_path / "sq.o").exists()
    adgen_cc("-S", "sq.c", "-o", "sq.s", cwd=tmp_path)
    assert "dsq" in (tmp_path / "sq.s").read_text()
    pre = adgen_cc("-E", "sq.c", cwd=tmp_path)
    assert "((x) * (x))" in pre.stdout
    assert "usage: adgen cc" in adgen_cc(cwd=tmp_path).stdout


def test_llvm_ir_and_bitcode_as_clang_writes_them(tmp_path):
    """-S -emit-llvm and -c -emit-llvm (Enzyme's tests pipe the IR into lli): the file's IR with its
    derivatives in it, by clang's names (sq.ll, sq.bc) or to standard output (-o -); either links."""
    _write(tmp_path, TWO)
    adgen_cc("-O2", "-S", "-emit-llvm", "sq.c", cwd=tmp_path)
    ir = (tmp_path / "sq.ll").read_text()
    assert "define" in ir and "@dsq(" in ir and "__enzyme_autodiff" not in ir, ir
    adgen_cc("-O2", "-c", "-emit-llvm", "sq.c", cwd=tmp_path)
    assert (tmp_path / "sq.bc").read_bytes()[:4] == b"BC\xc0\xde"
    piped = adgen_cc("-O2", "-S", "-emit-llvm", "sq.c", "-o", "-", cwd=tmp_path).stdout
    assert "@dsq(" in piped and piped.lstrip().startswith(";")
    for made in ("sq.ll", "sq.bc"):
        compile_c(str(tmp_path / "main.c"), str(tmp_path / made), "-o", str(tmp_path / "prog"))
        assert subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True).stdout == "6\n"


@pytest.mark.slow
def test_as_a_launcher_and_with_make(tmp_path):
    _write(tmp_path, TWO)
    compiler = "cc" if shutil.which("cc") else "true"  # any program on the PATH, as CMake names its compiler
    adgen_cc(compiler, "-c", "sq.c", "-o", "sq.o", cwd=tmp_path)  # CMAKE_C_COMPILER_LAUNCHER="adgen;cc"
    assert (tmp_path / "sq.o").exists()
    (tmp_path / "Makefile").write_text("prog: main.o sq.o\n\t$(CC) main.o sq.o -o prog\n%.o: %.c\n\t$(CC) -O2 -c $< -o $@\n")
    cc = f"{sys.executable} -m adgen.commands.cli cc"
    done = subprocess.run(["make", f"CC={cc}"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True).stdout == "6\n"


UNUSED_UNDEFINED = r"""
double __enzyme_autodiff(void *, ...);
extern int nowhere;                          /* defined nowhere: only unused() uses it */
int unused(void) { return nowhere; }
double sq(double x) { return x * x; }
int main(void) { CHECK(__enzyme_autodiff((void *)sq, 3.0), 6.0); return 0; }
"""


def section_names(obj: Path) -> set[str]:
    import llvmlite.binding as llvm
    return {(s.name() or b"").decode() for s in llvm.ObjectFileRef.from_data(obj.read_bytes()).sections()}


def test_sections_of_their_own_as_the_flags_ask(tmp_path):
    """-ffunction-sections and -fdata-sections act on code generation, which is adgen's: each
    function its section, so --gc-sections drops what nothing uses (and what it alone uses)."""
    from adgen.ir_ad.cc1 import sections
    assert sections(["-O2", "-ffunction-sections", "-fdata-sections", "-fno-data-sections"]) == \
        ("-ffunction-sections",)
    assert sections(["-fno-function-sections", "-ffunction-sections"]) == ("-ffunction-sections",)
    assert sections(["-ffunction-sections", "-fno-function-sections"]) == ()
    (tmp_path / "prog.c").write_text(CHECK + UNUSED_UNDEFINED)
    done = adgen_cc("-O0", "prog.c", "-Wl,--gc-sections", "-o", "prog", "-lm", cwd=tmp_path, check=False)
    assert done.returncode != 0 and "nowhere" in done.stderr  # (one section: unused() stays, and its symbol)
    adgen_cc("-O0", "-ffunction-sections", "-fdata-sections", "-c", "prog.c", "-o", "prog.o", cwd=tmp_path)
    assert {".text.sq", ".text.unused", ".text.main"} <= section_names(tmp_path / "prog.o")
    adgen_cc("prog.o", "-Wl,--gc-sections", "-o", "prog", "-lm", cwd=tmp_path)
    assert subprocess.run([str(tmp_path / "prog")]).returncode == 0


@pytest.mark.slow
def test_a_file_without_enzyme_calls_and_clang_errors_pass_through(tmp_path):
    (tmp_path / "plain.c").write_text("int main(void) { return 0; }\n")
    adgen_cc("-O2", "plain.c", "-o", "plain", cwd=tmp_path)
    (tmp_path / "bad.c").write_text("double __enzyme_autodiff(void *, ...);\nint main(void) { return nope; }\n")
    done = adgen_cc("-c", "bad.c", cwd=tmp_path, check=False)
    assert done.returncode != 0 and "bad.c:2:" in done.stderr and "nope" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_source_is_an_error_before_any_compile(tmp_path):
    (tmp_path / "plain.c").write_text("double __enzyme_autodiff(void *, ...);\nint main(void) { return 0; }\n")
    done = adgen_cc("plain.c", "nothere.c", "-o", "prog", cwd=tmp_path, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("adgen: error: no such file or directory: 'nothere.c'"), done.stderr
    assert not (tmp_path / "prog").exists()


def test_an_output_that_is_a_directory_is_an_error_before_any_compile(tmp_path):
    """`-o DIR` for an object or a program, where DIR is a directory: said as adgen's error, as
    `adgen build` says it, not as the linker's at the end (a file with Enzyme's calls or without)."""
    (tmp_path / "plain.c").write_text("int main(void) { return 0; }\n")
    (tmp_path / "out").mkdir()
    for args in (["-c", "plain.c", "-o", "out"], ["plain.c", "-o", "out"]):
        done = adgen_cc(*args, cwd=tmp_path, check=False)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert done.stderr.splitlines()[0] == "adgen: error: cannot write out: it is a directory", done.stderr
    assert os.listdir(tmp_path / "out") == []


UNITY = {
    "geom.c": "struct pt { double x, y; };\n"
              "double dist2(const struct pt *p, int n) {\n"
              "    double s = 0;\n    for (int i = 1; i < n; i++) s += (p[i].x - p[i - 1].x) * sin(p[i].y);\n"
              "    return s;\n}\n"
              "#include \"more.c\"\n",
    "more.c": "static double cube(double x) { return x * x * x / (1 + x * x); }\n",
    "main.c": CHECK + "#include \"geom.c\"\ndouble __enzyme_autodiff(void *, ...);\n"
              "int main(void) {\n"
              "    struct pt p[3] = {{1, 0.5}, {2, 1.5}, {4, -0.5}}, d[3] = {{0}};\n"
              "    __enzyme_autodiff((void *)dist2, enzyme_dup, p, d, enzyme_const, 3);\n"
              "    double *v = &p[0].x, *dv = &d[0].x, h = 1e-6;\n"
              "    for (int i = 0; i < 6; i++) {  /* central finite differences */\n"
              "        double keep = v[i]; v[i] = keep + h; double up = dist2(p, 3);\n"
              "        v[i] = keep - h; double down = dist2(p, 3); v[i] = keep;\n"
              "        CHECK(dv[i] * 1e-3, (up - down) / (2 * h) * 1e-3);\n    }\n"
              "    CHECK(__enzyme_autodiff((void *)cube, enzyme_out, 0.7), (cube(0.7 + h) - cube(0.7 - h)) / (2 * h));\n"
              "    return 0;\n}\n",
}


@LEVELS
def test_functions_of_included_c_files(tmp_path, level):
    """A unity build: the differentiated functions are defined in .c files the file includes
    (one through another), a struct of the included file among the parameters."""
    _write(tmp_path, UNITY)
    adgen_cc(level, "main.c", "-o", "prog", "-lm", cwd=tmp_path)
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr


@pytest.mark.slow
def test_an_error_in_an_included_c_file_is_located_there(tmp_path):
    _write(tmp_path, {"lib.c": "double ext(double);\ndouble f(double x) {\n    return ext(x) * x;\n}\n",
                      "main.c": "#include \"lib.c\"\nextern int enzyme_out;\ndouble __enzyme_autodiff(void *, ...);\n"
                                "double g(double x) { return __enzyme_autodiff((void *)f, enzyme_out, x); }\n"})
    done = adgen_cc("-c", "main.c", "-o", "main.o", cwd=tmp_path, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("lib.c:3:12: error: cannot differentiate a call to 'ext'"), done.stderr
    assert "the __enzyme_autodiff call at main.c:4" in done.stderr and not (tmp_path / "main.o").exists()


@pytest.mark.slow
def test_a_file_that_is_not_utf8(tmp_path):
    """Latin-1 text in a string and a comment (found by tests/mutate.py: an internal error)."""
    (tmp_path / "latin.c").write_bytes(
        CHECK.encode() + b"double __enzyme_autodiff(void *, ...);\nconst char *label = \"caf\xe9\"; /* d\xe9riv\xe9e */\n"
        b"double cube(double x) { return x * x * x; }\n"
        b"int main(void) { CHECK(__enzyme_autodiff((void *)cube, enzyme_out, 2.0), 12.0); return label[0] != 'c'; }\n")
    adgen_cc("latin.c", "-o", "latin", "-lm", cwd=tmp_path)
    assert subprocess.run([str(tmp_path / "latin")]).returncode == 0
    (tmp_path / "stray.c").write_bytes(b"extern int enzyme_out;\ndouble __enzyme_autodiff(void *, ...);\n"
                                       b"double f(double x) { return x \xc3* x; }\n")
    done = adgen_cc("-c", "stray.c", "-o", "stray.o", cwd=tmp_path, check=False)
    assert done.returncode == 1 and "stray.c:3:31: error:" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "stray.o").exists()


# ---------------------------------------------------------------------------------------------- errors

ERRORS = [
    ("__enzyme_autodiff((void *)f, enzyme_dupv, 8, x, dx)", "the marker 'enzyme_dupv' (argument 2), which adgen does "
     "not implement", "enzyme_dupv"),
    ("__enzyme_autodiff((void *)f, enzyme_out, x, dx)", "enzyme_out on a pointer (parameter 1)", "x, dx"),
    ("__enzyme_autodiff((void *)f, enzyme_dup, x)", "parameter 1 of 'f' is 'enzyme_dup' but the call ends before its "
     "shadow", "x)"),
    ("__enzyme_autodiff((void *)f, x, dx, 2.0)", "more arguments than 'f' takes: argument 4 is past its parameters",
     "__enzyme_autodiff"),  # a constant has no place of its own: the call's
    ("__enzyme_autodiff(fp, x, dx)", "the function to differentiate must be named at the call", "fp"),
    ("__enzyme_fwdsplit((void *)f, x, dx)", "'__enzyme_fwdsplit', an entry point of Enzyme's API adgen does not "
     "implement", "__enzyme_fwdsplit"),
    ("__enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_width, n)", "enzyme_width must be followed by a "
     "constant integer", "enzyme_width"),
]


@quick_first("call, message, at", ERRORS, 2, ids=[e[2] for e in ERRORS])
def test_errors_at_the_call_naming_the_argument(tmp_path, call, message, at):
    text = (CHECK + "double __enzyme_autodiff(void *, ...);\ndouble __enzyme_fwdsplit(void *, ...);\n"
            "double f(double *x) { return x[0] * x[0]; }\n"
            "double (*fp)(double *) = f;\nextern int enzyme_dupv;\n"
            "double g(double *x, double *dx, int n) {\n    return " + call + ";\n}\n")
    (tmp_path / "e.c").write_text(text)
    done = adgen_cc("-c", "e.c", "-o", "e.o", cwd=tmp_path, check=False)
    line = text.split("\n").index("    return " + call + ";") + 1
    assert done.returncode == 1, done.stderr
    assert f"e.c:{line}:" in done.stderr and message in done.stderr, done.stderr
    assert "^" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "e.o").exists()
    caret_line = done.stderr.split("\n")[2]  # the caret stands under the argument named
    source_line = done.stderr.split("\n")[1]
    assert source_line[caret_line.index("^"):].startswith(at), done.stderr


BY_VALUE_ERRORS = [
    ("__enzyme_autodiff((void *)f, enzyme_dup, w, w, x)", "'enzyme_dup' on parameter 1 of 'f', a struct by value "
     "('struct W'): adgen takes one only as enzyme_const"),
    ("__enzyme_autodiff((void *)f, w, x)", "parameter 1 of 'f', a struct by value ('struct W') holding floating "
     "data, has no marker: mark it enzyme_const"),
    ("__enzyme_autodiff((void *)scaled, enzyme_const, w, x)", "'scaled' returns a struct by value ('struct W'), "
     "which Enzyme's API returns in the target's own way"),
    ("(__enzyme_augmentfwd((void *)f, enzyme_const, w, x), 0.0)", "split mode takes no struct by value (parameter 1 "
     "of 'f', a struct by value ('struct W'))"),
]


@quick_first("call, message", BY_VALUE_ERRORS, ids=["dup", "no marker", "returned", "split"])
def test_structs_by_value_errors_at_the_call(tmp_path, call, message):
    """A struct by value is a constant only (its derivative has no place in Enzyme's API, which
    passes it as the target's ABI splits it), none is returned, and split mode takes none (its
    tape would keep the address of the call's copy)."""
    text = (CHECK + "double __enzyme_autodiff(void *, ...);\nvoid *__enzyme_augmentfwd(void *, ...);\n"
            "struct W { double g; int m; };\n"
            "double f(struct W w, double x) { return w.g * x; }\n"
            "struct W scaled(struct W w, double x) { w.g *= x; return w; }\n"
            "double g(struct W w, double x) {\n    return " + call + ";\n}\n")
    (tmp_path / "s.c").write_text(text)
    done = adgen_cc("-c", "s.c", "-o", "s.o", cwd=tmp_path, check=False)
    line = text.split("\n").index("    return " + call + ";") + 1
    assert done.returncode == 1 and f"s.c:{line}:" in done.stderr and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "s.o").exists()


@pytest.mark.slow
def test_a_tape_too_small(tmp_path):
    text = (CHECK + "void *__enzyme_augmentfwd(void *, ...);\n"
            "void f(double *x) { x[0] = sin(x[0]); }\n"
            "void g(double *x, double *dx, void *tape) {\n"
            "    __enzyme_augmentfwd((void *)f, enzyme_dup, x, dx, enzyme_allocated, 4, enzyme_tape, tape);\n}\n")
    (tmp_path / "t.c").write_text(text)
    done = adgen_cc("-c", "t.c", "-o", "t.o", cwd=tmp_path, check=False)
    line = text.split("\n").index("    __enzyme_augmentfwd((void *)f, enzyme_dup, x, dx, enzyme_allocated, 4, "
                                   "enzyme_tape, tape);") + 1
    assert done.returncode == 1 and "a tape of 4 bytes (enzyme_allocated)" in done.stderr
    assert f"t.c:{line}:" in done.stderr and not (tmp_path / "t.o").exists()


def test_enzyme_suite_runner_help():
    """bench/enzyme_suite.py runs Enzyme's own integration tests (its clone is not part of the suite)."""
    done = subprocess.run([sys.executable, "-m", "bench.enzyme_suite", "--help"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent.parent, env=dict(os.environ))
    assert done.returncode == 0 and "ReverseMode" in done.stdout


def test_enzyme_suite_builds_what_lli_runs_with_sections(tmp_path, monkeypatch):
    """A file its RUN lines pipe into lli is linked as lli runs it: only what main reaches."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent))
    from bench.enzyme_suite import AS_LLI_RUNS, through_lli
    piped, built = tmp_path / "piped.cpp", tmp_path / "built.c"
    piped.write_text("// RUN: %clang++ -O0 %s -S -emit-llvm -o - %loadClangEnzyme | %lli - \nint main() {}\n")
    built.write_text("// RUN: %clang -O2 %s -o %t %loadClangEnzyme && %t\nint main() {}\n")
    assert through_lli(piped) and not through_lli(built) and "-Wl,--gc-sections" in AS_LLI_RUNS


# The bundled clang compiles for the machine it runs on unless told otherwise; adgen cc, as clang,
# compiles for the target's baseline CPU unless the user's -march says otherwise (base/toolchain.py,
# BASELINE): programs that run on other machines of the target.
BASELINE_PROGRAM = r"""
#include <stdio.h>
double __enzyme_autodiff(void *, ...);
static double f(double x) { return x * x; }
int main(void)
{
#ifdef __AVX__
    int avx = 1;
#else
    int avx = 0;
#endif
    printf("%d %g\n", avx, __enzyme_autodiff((void *)f, 3.0));
    return 0;
}
"""


def _machine_has_avx() -> bool:
    try:
        return " avx " in f" {open('/proc/cpuinfo').read().split('flags', 1)[1].splitlines()[0]} "
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not _machine_has_avx(), reason="needs an x86-64 machine with AVX, where 'native' differs")
@pytest.mark.slow
def test_the_baseline_cpu_unless_the_user_asks_for_another(tmp_path):
    src = tmp_path / "cpu.c"
    src.write_text(BASELINE_PROGRAM)
    outputs = []
    for flags in ((), ("-march=native",)):
        exe = tmp_path / f"cpu{len(flags)}"
        adgen_cc("-O2", *flags, src, "-o", exe, cwd=tmp_path)
        outputs.append(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split())
    assert outputs == [["0", "6"], ["1", "6"]]


UNROLLED = r"""
#include <math.h>
#include <stdio.h>
void __enzyme_autodiff(void *, ...);
extern int enzyme_const;
double logsumsq(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return log(s);
}
void grad(const double *x, double *dx, int n) { __enzyme_autodiff((void *)logsumsq, x, dx, enzyme_const, n); }
int main(void)
{
    double x[7] = {1, 2, 3, 4, 5, 6, 7}, dx[7] = {0};
    grad(x, dx, 7);
    for (int i = 0; i < 7; i++)
        if (fabs(dx[i] - 2 * x[i] / 140.0) > 1e-15) { printf("dx[%d] = %g\n", i, dx[i]); return 1; }
    puts("ok");
}
"""


def _loop_hints(module: Module, function: str) -> set[str]:
    """The loop hints (`llvm.loop.*` names) of the loops of `function`."""
    hints, todo, seen = set(), re.findall(r"!llvm\.loop (![0-9]+)", module.functions.text(function)), set()
    while todo:
        node = todo.pop()
        if node not in seen:  # (a loop's node names itself)
            seen.add(node)
            hints |= set(re.findall(r'!"(llvm\.loop\.[a-z.]+)"', module.metadata.get(node, "")))
            todo += re.findall(r"![0-9]+", module.metadata.get(node, ""))
    return hints


def test_derivatives_loops_are_unrolled_as_clang_unrolls_the_files(tmp_path):
    """At -O2 the forward sweep's loop (the sum of squares the reverse sweep needs for `log`, its
    count known only at run time) is unrolled by a run-time count, as clang unrolls the primal's:
    a remainder loop LLVM marks not to unroll again (GradBench's kmeans: 1.17 of Enzyme's time
    rolled, 0.95 unrolled)."""
    (tmp_path / "u.c").write_text(UNROLLED)
    adgen_cc("-O2", "-S", "-emit-llvm", "u.c", "-o", "u.ll", cwd=tmp_path)
    module = Module((tmp_path / "u.ll").read_text())
    assert "llvm.loop.unroll.disable" in _loop_hints(module, "@logsumsq"), "clang's own code is unrolled"
    assert "llvm.loop.unroll.disable" in _loop_hints(module, "@grad"), _loop_hints(module, "@grad")
    assert build_and_run(tmp_path, UNROLLED, "-O2").strip().endswith("ok")
