"""Pointers at every alignment their C type allows (specs/abi.md, "Alignment"; issue 20): derived
functions called with each pointer one element past a 64-byte boundary (a tape: 16 bytes past
it) give what they give with every pointer 64-byte aligned, where derivative code assuming more
than the element's alignment crashed: forward[N] with `dualv` (a scalar's N tangents read as one
vector, interleaved shadows) and `dual`, reverse mode with `dup` and `dupv`, reverse[N], split
mode's tapes, results, `float` and struct elements, and shadows of memory the primal code knows
to be more aligned (`__builtin_assume_aligned` speaks of the primal pointer, not its shadow).
The same from Rust (a `&[f64; 4]` tangent, slices at an element's offset) and from `adgen cc`
(a tape of `enzyme_allocated` memory at an odd address)."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from adgen.base.toolchain import select_rustc
from conftest import no_rustc, compile_c

SOURCE = r"""
#include <math.h>

typedef struct { double x, y, z; } vec3;

// @diff(sq_v4: forward[4] (dualv) -> dual; sq_v2: forward[2] (dualv) -> dual)
double sq(double x) { return x * sin(x); }

// @diff(sqf_v4: forward[4] (dualv) -> dual; sqf_v8: forward[8] (dualv) -> dual)
float sqf(float x) { return x * sinf(x); }

// @diff(f_fwd: (dual, dual, const) -> dual; f_fwd4: forward[4] (dual, dual, const) -> dual)
// @diff(f_fwd4v: forward[4] (dualv, dualv, const) -> dual; f_fwd2v: forward[2] (dualv, dualv, const) -> dual)
// @diff(f_rev: (dup, dup, const) -> active; f_rev4: reverse[4] (dup, dup, const) -> active)
// @diff(f_rev4v: reverse[4] (dupv, dupv, const) -> active; f_rev2v: reverse[2] (dupv, dupv, const) -> active)
// @diff(f_split: split (dup, dup, const) -> active; f_split2v: split[2] (dupv, dupv, const) -> active)
// @diff(f_split4: split[4] (dup, dup, const) -> active)
double f(const double *x, const double *y, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += sin(x[i]) * y[i] + x[i] * x[i];
    return s;
}

// @diff(axpy_fwd4v: forward[4] (dual, dualv, dualv, const); axpy_fwd4: forward[4] (dual, dual, dual, const))
// @diff(axpy_rev4v: reverse[4] (active, dupv, dupv, const); axpy_rev: (active, dup, dup, const))
// @diff(axpy_split2v: split[2] (active, dupv, dupv, const))
void axpy(double a, const double *x, double *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = a * x[i] + y[i] * y[i];
}

// @diff(g_fwd4v: forward[4] (dualv, const) -> dual; g_rev4v: reverse[4] (dupv, const) -> active)
// @diff(g_rev: (dup, const) -> active; g_split4v: split[4] (dupv, const) -> active)
float g(const float *x, int n)
{
    float s = 0;
    for (int i = 0; i < n; i++)
        s += sinf(x[i]) * x[i];
    return s;
}

// @diff(e_rev: (dup, const) -> active; e_fwd4v: forward[4] (dualv, const) -> dual)
// @diff(e_rev4v: reverse[4] (dupv, const) -> active)
double energy(const vec3 *p, int n)
{
    double e = 0;
    for (int i = 0; i < n; i++)
        e += p[i].x * p[i].y + cos(p[i].z);
    return e;
}

// @diff(h_rev: (dup, const) -> active; h_fwd2v: forward[2] (dualv, const) -> dual; h_fwd: (dual, const) -> dual)
// @diff(h_rev2v: reverse[2] (dupv, const) -> active)
double h(const double *x_, int n)
{
    const double *x = __builtin_assume_aligned(x_, 64);  /* the primal's promise, not the shadow's */
    return sin(x[0]) * x[1] + x[2] * cos(x[3]) + n;
}
"""

DRIVER = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "align.adgen.h"

enum { N = 37 };
static int off;  /* 0: every pointer 64-byte aligned; 1: one element past that (a tape: 16 bytes) */

static void *block(size_t elem, size_t count)
{
    size_t bytes = (count + 1) * elem + 64;
    char *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    memset(p, 0, bytes);
    return p + off * elem;
}

static double *darr(int count, double seed)
{
    double *p = block(sizeof *p, count);
    for (int i = 0; i < count; i++)
        p[i] = sin(seed + 0.7 * i);
    return p;
}

static float *farr(int count, float seed)
{
    float *p = block(sizeof *p, count);
    for (int i = 0; i < count; i++)
        p[i] = sinf(seed + 0.7f * i);
    return p;
}

static double *aligned64(const double *from, int count)  /* for h, whose primal pointer must be */
{
    double *p = aligned_alloc(64, 64 * sizeof *p);
    memcpy(p, from, count * sizeof *p);
    return p;
}

static void *tape(size_t size) { return block(16, size / 16 + 1); }

static void put(const char *what, const double *v, int count)
{
    for (int i = 0; i < count; i++)
        printf("%s[%d] %.17g\n", what, i, v[i]);
}

static void putf(const char *what, const float *v, int count)
{
    for (int i = 0; i < count; i++)
        printf("%s[%d] %.9g\n", what, i, (double)v[i]);
}

int main(int argc, char **argv)
{
    const char *c = argv[1];
    off = atoi(argv[2]);
    double *x = darr(N, 0.3), *y = darr(N, 1.1), *d[8];
    for (int k = 0; k < 8; k++)
        d[k] = darr(N, k);
    if (!strcmp(c, "sq_v4")) {
        sq_v4_result r = sq_v4(0.7, darr(4, 2.0));
        put("d_ret", r.d_ret, 4);
    } else if (!strcmp(c, "sq_v2")) {
        sq_v2_result r = sq_v2(0.7, darr(2, 2.0));
        put("d_ret", r.d_ret, 2);
    } else if (!strcmp(c, "sqf_v4")) {
        sqf_v4_result r = sqf_v4(0.7f, farr(4, 2.0f));
        putf("d_ret", r.d_ret, 4);
    } else if (!strcmp(c, "sqf_v8")) {
        sqf_v8_result r = sqf_v8(0.7f, farr(8, 2.0f));
        putf("d_ret", r.d_ret, 8);
    } else if (!strcmp(c, "f_fwd")) {
        f_fwd_result r = f_fwd(x, d[0], y, d[1], N);
        put("d_ret", &r.d_ret, 1);
    } else if (!strcmp(c, "f_fwd4")) {
        f_fwd4_result r = f_fwd4(x, d[0], d[1], d[2], d[3], y, d[4], d[5], d[6], d[7], N);
        put("d_ret", r.d_ret, 4);
    } else if (!strcmp(c, "f_fwd4v")) {
        f_fwd4v_result r = f_fwd4v(x, darr(4 * N, 2), y, darr(4 * N, 3), N);
        put("d_ret", r.d_ret, 4);
    } else if (!strcmp(c, "f_fwd2v")) {
        f_fwd2v_result r = f_fwd2v(x, darr(2 * N, 2), y, darr(2 * N, 3), N);
        put("d_ret", r.d_ret, 2);
    } else if (!strcmp(c, "f_rev")) {
        f_rev(x, d[0], y, d[1], N, 1.5);
        put("d_x", d[0], N); put("d_y", d[1], N);
    } else if (!strcmp(c, "f_rev4")) {
        f_rev4(x, d[0], d[1], d[2], d[3], y, d[4], d[5], d[6], d[7], N, 1, 2, 3, 4);
        for (int k = 0; k < 8; k++) put("d", d[k], N);
    } else if (!strcmp(c, "f_rev4v") || !strcmp(c, "f_rev2v")) {
        int w = c[5] - '0';
        double *dx = darr(w * N, 2), *dy = darr(w * N, 3);
        if (w == 4) f_rev4v(x, dx, y, dy, N, 1, 2, 3, 4); else f_rev2v(x, dx, y, dy, N, 1, 2);
        put("d_x", dx, w * N); put("d_y", dy, w * N);
    } else if (!strcmp(c, "f_split")) {
        void *t = tape(f_split_tape_size());
        printf("ret %.17g\n", f_split_forward(x, d[0], y, d[1], N, t));
        f_split_reverse(t, 1.5);
        put("d_x", d[0], N); put("d_y", d[1], N);
    } else if (!strcmp(c, "f_split2v")) {
        double *dx = darr(2 * N, 2), *dy = darr(2 * N, 3);
        void *t = tape(f_split2v_tape_size());
        f_split2v_forward(x, dx, y, dy, N, t);
        f_split2v_reverse(t, 1.5, -1);
        put("d_x", dx, 2 * N); put("d_y", dy, 2 * N);
    } else if (!strcmp(c, "f_split4")) {
        void *t = tape(f_split4_tape_size()), *u = tape(f_split4_tape_size());
        f_split4_forward(x, d[0], d[1], d[2], d[3], y, d[4], d[5], d[6], d[7], N, t);
        f_split4_forward(x, d[0], d[1], d[2], d[3], y, d[4], d[5], d[6], d[7], N, u);
        f_split4_reverse(t, 1, 2, 3, 4);
        f_split4_free(u);
        for (int k = 0; k < 8; k++) put("d", d[k], N);
    } else if (!strcmp(c, "axpy_fwd4v")) {
        double *dx = darr(4 * N, 2), *dy = darr(4 * N, 3);
        axpy_fwd4v(0.3, 1, 2, 3, 4, x, dx, y, dy, N);
        put("y", y, N); put("d_y", dy, 4 * N);
    } else if (!strcmp(c, "axpy_fwd4")) {
        axpy_fwd4(0.3, 1, 2, 3, 4, x, d[0], d[1], d[2], d[3], y, d[4], d[5], d[6], d[7], N);
        for (int k = 4; k < 8; k++) put("d_y", d[k], N);
    } else if (!strcmp(c, "axpy_rev4v")) {
        double *dx = darr(4 * N, 2), *dy = darr(4 * N, 3);
        axpy_rev4v_result r = axpy_rev4v(0.3, x, dx, y, dy, N);
        put("d_a", r.d_a, 4); put("d_x", dx, 4 * N); put("d_y", dy, 4 * N);
    } else if (!strcmp(c, "axpy_rev")) {
        double da = axpy_rev(0.3, x, d[0], y, d[1], N);
        put("d_a", &da, 1); put("d_x", d[0], N); put("d_y", d[1], N);
    } else if (!strcmp(c, "axpy_split2v")) {
        double *dx = darr(2 * N, 2), *dy = darr(2 * N, 3);
        void *t = tape(axpy_split2v_tape_size());
        axpy_split2v_forward(0.3, x, dx, y, dy, N, t);
        axpy_split2v_reverse_result r = axpy_split2v_reverse(t);
        put("d_a", r.d_a, 2); put("d_x", dx, 2 * N); put("d_y", dy, 2 * N);
    } else if (!strcmp(c, "g_fwd4v")) {
        g_fwd4v_result r = g_fwd4v(farr(N, 0.3f), farr(4 * N, 2), N);
        putf("d_ret", r.d_ret, 4);
    } else if (!strcmp(c, "g_rev4v")) {
        float *dx = farr(4 * N, 2);
        g_rev4v(farr(N, 0.3f), dx, N, 1, 2, 3, 4);
        putf("d_x", dx, 4 * N);
    } else if (!strcmp(c, "g_rev")) {
        float *dx = farr(N, 2);
        g_rev(farr(N, 0.3f), dx, N, 1);
        putf("d_x", dx, N);
    } else if (!strcmp(c, "g_split4v")) {
        float *dx = farr(4 * N, 2);
        void *t = tape(g_split4v_tape_size());
        g_split4v_forward(farr(N, 0.3f), dx, N, t);
        g_split4v_reverse(t, 1, 2, 3, 4);
        putf("d_x", dx, 4 * N);
    } else if (!strcmp(c, "e_rev")) {
        double *dp = darr(3 * N, 2);
        e_rev(x, dp, N / 3, 1.5);
        put("d_p", dp, 3 * N);
    } else if (!strcmp(c, "e_fwd4v")) {
        e_fwd4v_result r = e_fwd4v(x, darr(4 * N, 2), N / 3);
        put("d_ret", r.d_ret, 4);
    } else if (!strcmp(c, "e_rev4v")) {
        double *dp = darr(4 * N, 2);
        e_rev4v(x, dp, N / 3, 1, 2, 3, 4);
        put("d_p", dp, 4 * N);
    } else if (!strcmp(c, "h_rev")) {
        h_rev(aligned64(x, N), d[0], N, 1.5);
        put("d_x", d[0], N);
    } else if (!strcmp(c, "h_rev2v")) {
        double *dx = darr(2 * N, 2);
        h_rev2v(aligned64(x, N), dx, N, 1.5, 2);
        put("d_x", dx, 2 * N);
    } else if (!strcmp(c, "h_fwd")) {
        h_fwd_result r = h_fwd(aligned64(x, N), d[0], N);
        put("d_ret", &r.d_ret, 1);
    } else if (!strcmp(c, "h_fwd2v")) {
        h_fwd2v_result r = h_fwd2v(aligned64(x, N), darr(2 * N, 2), N);
        put("d_ret", r.d_ret, 2);
    } else {
        fprintf(stderr, "no case %s\n", c);
        return 2;
    }
    return 0;
}
"""

CASES = re.findall(r'!strcmp\(c, "(\w+)"\)', DRIVER)


def adgen(*args, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "adgen.commands.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("alignment")
    (work / "align.c").write_text(SOURCE)
    (work / "main.c").write_text(DRIVER)
    adgen("build", "-q", "align.c", "-o", "out", cwd=work)
    compile_c("-O2", "-I", work / "out", work / "main.c", work / "align.c", work / "out" / "align.adgen.o",
              "-o", work / "main", "-lm")
    return work / "main"


def _values(text: str) -> dict[str, float]:
    return {name: float(value) for name, value in (line.split() for line in text.splitlines())}


@pytest.mark.parametrize("case", CASES)
def test_every_pointer_one_element_past_an_aligned_block(driver, case):
    aligned = subprocess.run([str(driver), case, "0"], capture_output=True, text=True, timeout=60)
    assert aligned.returncode == 0, aligned.stderr
    moved = subprocess.run([str(driver), case, "1"], capture_output=True, text=True, timeout=60)
    assert moved.returncode == 0, f"{case} with pointers one element past 64 bytes: status {moved.returncode}"
    want, got = _values(aligned.stdout), _values(moved.stdout)
    assert want.keys() == got.keys() and want
    for name, value in want.items():  # the same numbers, whatever the addresses
        assert math.isclose(got[name], value, rel_tol=1e-12, abs_tol=1e-300), (name, got[name], value)
    if case.startswith("sq_"):  # (x sin x)' = sin x + x cos x at 0.7, times each lane's tangent
        slope = math.sin(0.7) + 0.7 * math.cos(0.7)
        for k in range(int(case[-1])):
            assert math.isclose(want[f"d_ret[{k}]"], slope * math.sin(2.0 + 0.7 * k), rel_tol=1e-12)


@pytest.mark.slow
def test_the_object_assumes_only_the_elements_alignment(tmp_path):
    """The issue's function: the tangents `const double *d_x` are read as `<4 x double>` with
    `align 8`, not the vector type's 32, in the optimized module (--emit-llvm)."""
    (tmp_path / "sq.c").write_text("// @diff(sq_v4: forward[4] (dualv) -> dual)\n"
                                   "double sq(double x) { return x * x; }\n")
    adgen("build", "-q", "sq.c", "-o", "out", "--emit-llvm", cwd=tmp_path)
    text = (tmp_path / "out" / "sq.adgen.ll").read_text()
    accesses = re.findall(r"\b(?:load|store) (<\d+ x double>|double)[^\n]*?, align (\d+)", text)
    assert any(t.startswith("<") for t, _ in accesses)
    assert {int(align) for _, align in accesses} == {8}


MODEL = r"""
// @diff(sq_v4: forward[4] (dualv) -> dual; sq_v2: forward[2] (dualv) -> dual)
pub fn sq(x: f64) -> f64 {
    x * x.sin()
}

// @diff(dot_v4: forward[4] (dualv, const) -> dualonly; dot_r4: reverse[4] (dupv, const) -> activeonly)
pub fn dot(x: &[f64], w: &[f64]) -> f64 {
    x.iter().zip(w).map(|(a, b)| a * a * b).sum()
}
"""

MAIN = r"""
mod model;
use model::*;
include!(concat!(env!("ADGEN_OUT"), "/model.adgen.rs"));

#[repr(C, align(64))]
struct Block([f64; 64]);

fn check(got: f64, want: f64, what: &str) {
    if !((got - want).abs() <= 1e-12 * (1.0 + want.abs())) {
        eprintln!("{}: {} != {}", what, got, want);
        std::process::exit(1);
    }
}

fn main() {
    let mut b = Block([0.0; 64]);
    for (i, v) in b.0.iter_mut().enumerate() {
        *v = (0.3 + 0.7 * i as f64).sin();
    }
    let slope = 0.7f64.sin() + 0.7 * 0.7f64.cos();
    let t4: &[f64; 4] = b.0[1..5].try_into().unwrap();  // 8 bytes past a 64-byte boundary
    let r4 = sq_v4(0.7, t4);  // (the result, then the 4 tangents: std::autodiff's shape)
    let d4 = &r4[1..];
    let t2: &[f64; 2] = b.0[3..5].try_into().unwrap();
    let r2 = sq_v2(0.7, t2);
    let d2 = &r2[1..];
    for k in 0..4 {
        check(d4[k], slope * t4[k], "sq_v4");
    }
    for k in 0..2 {
        check(d2[k], slope * t2[k], "sq_v2");
    }
    let n = 9;
    let x: Vec<f64> = (0..n).map(|i| 0.1 * i as f64 - 0.3).collect();
    let w: Vec<f64> = (0..n).map(|i| 1.0 + 0.2 * i as f64).collect();
    let tangents = &b.0[1..1 + 4 * n];  // lane k of element j at 4j + k
    let dots = dot_v4(&x, tangents, &w);
    let mut g = Block([0.0; 64]);
    let grads = &mut g.0[1..1 + 4 * n];
    dot_r4(&x, grads, &w, 1.0, 2.0, -1.0, 0.5);
    for k in 0..4 {
        let want: f64 = (0..n).map(|j| 2.0 * x[j] * w[j] * tangents[4 * j + k]).sum();
        check(dots[k], want, "dot_v4");
        let seed = [1.0, 2.0, -1.0, 0.5][k];
        for j in 0..n {
            check(grads[4 * j + k], seed * 2.0 * x[j] * w[j], "dot_r4");
        }
    }
    println!("ok");
}
"""


@pytest.mark.skipif(no_rustc() is not None, reason=f"no usable rustc: {no_rustc()}")
@pytest.mark.slow
def test_rust_tangents_and_slices_at_an_elements_offset(tmp_path):
    """A `&[f64; 4]` tangent and interleaved slices 8 bytes past a 64-byte boundary."""
    (tmp_path / "model.rs").write_text(MODEL)
    (tmp_path / "main.rs").write_text(MAIN)
    adgen("build", "-q", "model.rs", "-o", "out", cwd=tmp_path)
    out = tmp_path / "out"
    done = subprocess.run([*select_rustc().command, "--edition=2021", "-O", "main.rs", "-C",
                           f"link-arg={out / 'model.adgen.o'}", "-o", "prog"], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "ADGEN_OUT": str(out)})
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout == "ok\n", f"status {run.returncode}: {run.stdout}{run.stderr}"


CC_SOURCE = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
extern int enzyme_dup, enzyme_allocated, enzyme_tape;
void __enzyme_augmentfwd(void *, ...);
void __enzyme_reverse(void *, ...);
unsigned long __enzyme_augmentsize(void *, ...);

static void f(double *x) { x[0] = sin(x[0]) * x[1]; x[1] = x[0] * x[0]; }

int main(void)
{
    if (__enzyme_augmentsize((void *)f, enzyme_dup) > 256) {
        puts("tape size");
        return 1;
    }
    for (int at = 0; at < 16; at++) {  /* the tape at every byte offset (adgen aligns it up) */
        char *tape = (char *)aligned_alloc(64, 320) + at;
        double *x = (double *)aligned_alloc(64, 64) + 1, *dx = (double *)aligned_alloc(64, 64) + 1;
        x[0] = 0.4; x[1] = 1.5; dx[0] = 0; dx[1] = 1;
        __enzyme_augmentfwd((void *)f, enzyme_dup, x, dx, enzyme_allocated, 256, enzyme_tape, tape);
        __enzyme_reverse((void *)f, enzyme_dup, x, dx, enzyme_allocated, 256, enzyme_tape, tape);
        double y0 = sin(0.4) * 1.5;  /* d(y1 = y0^2)/dx0 = 2 y0 cos(0.4) 1.5; /dx1 = 2 y0 sin(0.4) */
        if (fabs(dx[0] - 2 * y0 * cos(0.4) * 1.5) > 1e-12 || fabs(dx[1] - 2 * y0 * sin(0.4)) > 1e-12) {
            printf("at %d: %g %g\n", at, dx[0], dx[1]);
            return 1;
        }
    }
    puts("ok");
    return 0;
}
"""


@pytest.mark.slow
def test_adgen_cc_tapes_at_any_byte_offset(tmp_path):
    """`enzyme_allocated` memory at any address (specs/enzyme.md: adgen aligns it up)."""
    (tmp_path / "prog.c").write_text(CC_SOURCE)
    adgen("cc", "-O2", "prog.c", "-o", "prog", "-lm", cwd=tmp_path)
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout == "ok\n", run.stdout + run.stderr
