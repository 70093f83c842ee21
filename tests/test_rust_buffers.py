"""Buffers a Rust function writes (specs/annotations.md, "Rust sources").

A `const` `&mut` reference to floats (a slice, an array, one float, a `Vec`): the function may
store values carrying derivatives there and read them again within the call (an RNN's state
updated in place, ADBench's LSTM), so the wrapper passes a zeroed scratch shadow of its own. No
derivative comes in or goes out through it; those flowing through it within the call are kept.
Each gradient is checked against central differences of the function from the same state,
forward mode against reverse, at widths 1 and 2; the state is left as the primal leaves it;
split mode, whose tape would outlive the scratch, keeps the located error.

A `&mut Vec` growing within its capacity: its shadow is given as much room, zeroed, and the
length the vector has after the call (a shadow with less room was written past its end), under
valgrind where it is installed."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import no_rustc
from test_rust import CHECKS, _run_with

pytestmark = pytest.mark.skipif(no_rustc() is not None, reason=f"no usable rustc: {no_rustc()}")

SOURCE = r"""// A state the function updates in place, read again at the next step (ADBench's LSTM's `state`).
// @diff(run_grad: (dup, const) -> active; run_tan: forward (dual, const) -> dual; run_grad2: reverse[2] (dup, const) -> active; run_tan2: forward[2] (dual, const) -> dual)
pub fn run(w: &[f64], state: &mut [f64]) -> f64 {
    let mut total = 0.0;
    for step in 0..3 {
        for i in 0..state.len() {
            state[i] = (state[i] * w[i] + w[(i + step) % w.len()]).tanh();
        }
        for i in 0..state.len() {
            total += state[i] * state[i];
        }
    }
    total
}

// @diff(acc_grad: (dup, const) -> active)
pub fn acc(w: &[f64], a: &mut [f64; 2]) -> f64 {
    a[0] = w[0] * w[1];
    a[1] += a[0] * w[0];
    a[0] * a[1]
}

// @diff(one_grad: (dup, const) -> active)
pub fn one(w: &[f64], a: &mut f64) -> f64 {
    *a = w[0] * w[1] + *a;
    *a * *a
}

// @diff(grow_grad: (dup, const) -> active)
pub fn grow(w: &[f64], v: &mut Vec<f64>) -> f64 {
    for (i, x) in w.iter().enumerate() {
        v[i] = x.sin() * v[i];
    }
    v.iter().zip(w).map(|(a, b)| a * b).sum()
}

// @diff(f32_grad: (dup, const) -> active)
pub fn single(w: &[f32], s: &mut [f32]) -> f32 {
    s[0] = w[0] * w[1];
    s[1] = s[0].exp();
    s[1] + s[0]
}
"""

MAIN = r"""mod m;
use m::*;
include!("out/m.adgen.rs");
""" + CHECKS + r"""
fn main() {
    let w = [0.3, -0.7, 0.5, 1.1];
    let s0 = [0.2, -0.1, 0.4];
    let loss = |w: &[f64]| { let mut s = s0; run(w, &mut s) };
    let mut s = s0;
    let mut g = [0.0; 4];
    let value = run_grad(&w, &mut g, &mut s, 1.0);
    check!(value, loss(&w));
    let mut after = s0;
    run(&w, &mut after);
    for i in 0..3 { check!(s[i], after[i]); }  // (the state as the primal leaves it)
    for i in 0..4 { check!(g[i], fd(&loss, &w, i)); }
    for i in 0..4 {
        let mut e = [0.0; 4];
        e[i] = 1.0;
        let mut s = s0;
        let (v, t) = run_tan(&w, &e, &mut s);
        check!(v, value);
        check!(t, g[i]);
    }
    let (mut g0, mut g1) = ([0.0; 4], [0.0; 4]);
    let mut s = s0;
    run_grad2(&w, &mut g0, &mut g1, &mut s, 1.0, -2.0);
    for i in 0..4 { check!(g0[i], g[i]); check!(g1[i], -2.0 * g[i]); }
    let mut s = s0;
    let t = run_tan2(&w, &[1.0, 0.0, 0.0, 0.0], &[0.0, 0.0, 1.0, 1.0], &mut s);
    check!(t[1], g[0]);
    check!(t[2], g[2] + g[3]);

    let a0 = [0.5, 0.25];
    let mut a = a0;
    let mut g = [0.0; 2];
    acc_grad(&w[..2], &mut g, &mut a, 1.0);
    let f = |w: &[f64]| { let mut a = a0; acc(w, &mut a) };
    for i in 0..2 { check!(g[i], fd(&f, &w[..2], i)); }

    let mut a = 0.5;
    let mut g = [0.0; 2];
    one_grad(&w[..2], &mut g, &mut a, 1.0);
    let f = |w: &[f64]| { let mut a = 0.5; one(w, &mut a) };
    for i in 0..2 { check!(g[i], fd(&f, &w[..2], i)); }

    let mut v = vec![9.0, 1.0, 2.0, 3.0];
    let mut g = [0.0; 4];
    grow_grad(&w, &mut g, &mut v, 1.0);
    let f = |w: &[f64]| { let mut v = vec![9.0, 1.0, 2.0, 3.0]; grow(w, &mut v) };
    for i in 0..4 { check!(g[i], fd(&f, &w, i)); }
    check!(v.len() as f64, 4.0);

    let ws = [0.3f32, -0.7];
    let mut s = [0.0f32; 2];
    let mut g = [0.0f32; 2];
    f32_grad(&ws, &mut g, &mut s, 1.0);
    let e = (ws[0] * ws[1]).exp();
    check!(g[0], (e + 1.0) * ws[1]);
    check!(g[1], (e + 1.0) * ws[0]);
    println!("ok");
}
"""


@pytest.mark.slow
def test_const_float_buffers_get_a_scratch_shadow(tmp_path, adgen):
    assert _run_with(tmp_path, adgen, SOURCE, MAIN) == "ok\n"
    wrappers = (tmp_path / "out" / "m.adgen.rs").read_text()
    assert re.search(r"pub fn run_grad\(w: &\[f64\], d_w: &mut \[f64\], state: &mut \[f64\], d_ret: f64\)", wrappers)
    assert "let mut d_state: Vec<f64> = vec![0.0; state.len()];" in wrappers


def test_split_mode_keeps_the_located_error(tmp_path, adgen):
    code = ("// @diff(s: split (dup, const) -> active)\n"
            "pub fn f(w: &[f64], s: &mut [f64]) -> f64 {\n    s[0] = w[0] * w[0];\n    s[0] * w[1]\n}\n")
    (tmp_path / "m.rs").write_text(code)
    result = adgen("build", tmp_path / "m.rs", "-o", tmp_path / "out")
    assert result.status == 1 and "cannot differentiate a store of a value carrying derivatives" in result.err, \
        result.err
    assert "m.rs:3:5: error" in result.err and not (tmp_path / "out").exists()


def test_a_gradient_with_no_output_carrying_derivatives_is_an_error(tmp_path, adgen):
    """Only `const` buffers written and no result: the gradient would be zero whatever the code."""
    code = "// @diff(g: (dup, const))\npub fn f(x: &[f64], y: &mut [f64]) {\n    y[0] = x[0] * 2.0;\n}\n"
    (tmp_path / "m.rs").write_text(code)
    result = adgen("build", tmp_path / "m.rs", "-o", tmp_path / "out")
    assert result.status == 1 and "m.rs:1:10: error: 'g' has no output carrying derivatives" in result.err, result.err
    assert not (tmp_path / "out").exists()


GROWING = r"""
// @diff(grow_grad: (dup, dup) -> active; grow_tan: forward (dual, dual) -> dual)
pub fn grow(w: &[f64], v: &mut Vec<f64>) -> f64 {
    for x in w {
        v.push(x.sin() * v[0]);
    }
    v.iter().sum()
}
"""

GROWING_MAIN = r"""
mod m;
use m::*;
include!("out/m.adgen.rs");

fn main() {
    let w = [0.3, 0.5, -0.2];
    let f = |w: &[f64]| { let mut v = Vec::with_capacity(16); v.push(2.0); grow(w, &mut v) };
    let mut v = Vec::with_capacity(16);
    v.push(2.0);
    let mut dv = vec![0.5];  // (room for one: the wrapper gives it the vector's)
    let mut dw = [0.0; 3];
    let r = grow_grad(&w, &mut dw, &mut v, &mut dv, 1.0);
    assert!((r - f(&w)).abs() < 1e-12 && v.len() == 4 && dv.len() == 4);
    let d0 = 1.0 + w.iter().map(|x| x.sin()).sum::<f64>();  // (the gradient as to v[0], plus its seed 0.5)
    assert!((dv[0] - (0.5 + d0)).abs() < 1e-12, "{:?}", dv);
    for k in 0..3 {
        let mut e = w;
        e[k] += 1e-6;
        let mut m = w;
        m[k] -= 1e-6;
        assert!((dw[k] - (f(&e) - f(&m)) / 2e-6).abs() < 1e-6, "{} {:?}", k, dw);
    }
    let (mut v, mut dv) = (vec![2.0], vec![1.0]);
    v.reserve(8);
    let (r, t) = grow_tan(&w, &[1.0, 0.0, 0.0], &mut v, &mut dv);
    assert!((r - f(&w)).abs() < 1e-12 && dv.len() == 4);
    assert!((dv[1] - (w[0].cos() * 2.0 + w[0].sin())).abs() < 1e-12 && (dv[2] - w[1].sin()).abs() < 1e-12, "{:?}", dv);
    assert!((t - dv.iter().sum::<f64>()).abs() < 1e-12);
    println!("ok");
}
"""


@pytest.mark.slow
def test_a_vector_growing_within_its_capacity_has_a_shadow_as_long(tmp_path, adgen):
    assert _run_with(tmp_path, adgen, GROWING, GROWING_MAIN) == "ok\n"
    if shutil.which("valgrind") is None:
        pytest.skip("no valgrind: the program ran, but its memory accesses were not checked")
    run = subprocess.run(["valgrind", "-q", "--error-exitcode=9", str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "ok\n", run.stderr[-3000:]
