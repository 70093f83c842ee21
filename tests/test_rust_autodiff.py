"""Conformance with Rust's own autodiff tests (rust-lang/rust `tests/codegen-llvm/autodiff` and
`tests/ui/autodiff`, read at the commit `fetch github:rust-lang/rust` gives): the function each
differentiates, written again with adgen's annotations (and the same values the tests assert,
or central differences), built with each installed rustc. Integers given derivatives' activities
(the integer type-analysis tests) build with a warning, as std::autodiff takes them; a function
pointer (abi_handling's `f2`) takes the program's pointers to its module's functions. What has no
meaning under adgen is an error, checked here too (a function pointer given derivatives).
specs/annotations.md, "Rust sources"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import no_rustc
from test_rust import _build_model, _installed_rustcs

pytestmark = pytest.mark.skipif(no_rustc() is not None, reason=f"no usable rustc: {no_rustc()}")

MODEL = r"""// Rust's own autodiff tests (rust-lang/rust tests/codegen-llvm/autodiff, tests/ui/autodiff),
// the functions each differentiates written again for adgen's annotations.
use std::ops::Mul;

// ---- codegen-llvm/autodiff/abi_handling.rs: how values of each kind are passed
#[derive(Clone, Copy)]
pub struct Input { pub x: f32, pub y: f32 }
#[derive(Clone, Copy)]
pub struct Wrapper { pub z: f32 }
#[derive(Clone, Copy)]
pub struct NestedInput { pub x: f32, pub y: Wrapper }

pub fn square(x: f32) -> f32 { x * x }

// @diff(df1: forward (dual) -> dual)
pub fn f1(x: &[f32; 2]) -> f32 { x[0] + x[1] }
// @diff(df3: forward (dual, dual) -> dual)
pub fn f3<'a>(x: &'a f32, y: &'a f32) -> f32 { *x * *y }
// @diff(df4: forward (dual) -> dual; rf4: (active) -> active)
pub fn f4(x: (f32, f32)) -> f32 { x.0 * x.1 }
// @diff(df5: forward (dual) -> dual; rf5: (active) -> active)
pub fn f5(i: Input) -> f32 { i.x + i.y }
// @diff(df6: forward (dual) -> dual; rf6: (active) -> active)
pub fn f6(i: NestedInput) -> f32 { i.x + i.y.z * i.y.z }
// @diff(df7: forward (dual) -> dual)
pub fn f7(x: (&f32, &f32)) -> f32 { x.0 * x.1 }

// ---- autodiffv2.rs: a linear map of 4 inputs to 5 outputs, forward mode, batched
// @diff(v2_dual: forward (dual, dual); v2_dualv: forward[4] (dualv, dualv); v2_dual4: forward[4] (dual, dual))
pub fn v2(x: &[f32], y: &mut [f32]) {
    y[0] = 4.3 * x[0] + 1.2 * x[1] + 3.4 * x[2] + 2.1 * x[3];
    y[1] = 2.3 * x[0] + 4.5 * x[1] + 1.7 * x[2] + 6.4 * x[3];
    y[2] = 1.1 * x[0] + 3.3 * x[1] + 2.5 * x[2] + 4.7 * x[3];
    y[3] = 5.2 * x[0] + 1.4 * x[1] + 2.6 * x[2] + 3.8 * x[3];
    y[4] = 1.0 * x[0] + 2.0 * x[1] + 3.0 * x[2] + 4.0 * x[3];
}

// ---- batched.rs: width 4, with and without the primal result
// @diff(d_square3: forward (dual) -> dualonly; d_square2: forward[4] (dual) -> dualonly)
// @diff(d_square1: forward[4] (dual) -> dual)
pub fn batched(x: &f32) -> f32 { *x * *x }

// ---- generic.rs: a generic function derived at f64 only
// @diff(d_generic<f64>: (dup) -> active)
pub fn generic<T: Mul<Output = T> + Copy>(x: &T) -> T { *x * *x }

// ---- identical_fnc.rs: two identical functions, each its own derivative
// @diff(d_same1: (dup) -> active)
pub fn same1(x: &f64) -> f64 { x * x }
// @diff(d_same2: (dup) -> active)
pub fn same2(x: &f64) -> f64 { x * x }

// ---- impl.rs: a method with a shadow object
#[derive(Clone)]
pub struct OptProblem { pub a: f64, pub b: f64 }
impl OptProblem {
    // @diff(d_objective: (dup, dup, dup))
    pub fn objective(&self, x: &[f64], out: &mut f64) { *out = self.a + x[0].sqrt() * self.b }
}

// ---- inline.rs, scalar.rs, typetree.rs: a reference in, its gradient out
// @diff(d_scalar: (dup) -> active)
pub fn scalar(x: &f64) -> f64 { x * x }
// @diff(d_simple: (dup) -> active)
pub fn simple(x: &f64) -> f64 { 2.0 * x }

// ---- sret.rs: three results, one f64 and two f32
// @diff(d_sret: (active, active) -> active)
pub fn sret(x: f32, y: f32) -> f64 { (x * x * y) as f64 }

// ---- trait.rs: a trait's method, its object const
pub struct Foo { pub a: f64 }
pub trait MyTrait { fn f(&self, x: f64) -> f64; }
impl MyTrait for Foo {
    // @diff(df: (const, active) -> active)
    fn f(&self, x: f64) -> f64 { self.a * 0.25 * (x * x - 1.0 - 2.0 * x.ln()) }
}

// ---- void_ret.rs: no result, an output through a reference
// @diff(bar: (dup, dup))
pub fn foo(r: &[f64; 10], res: &mut f64) {
    let mut output = [0.0; 10];
    output[0] = r[0];
    output[1] = r[1] * r[2];
    output[2] = r[4] * r[5];
    output[3] = r[2] * r[6];
    output[4] = r[1] * r[7];
    output[5] = r[2] * r[8];
    output[6] = r[1] * r[9];
    output[7] = r[5] * r[6];
    output[8] = r[5] * r[7];
    output[9] = r[4] * r[8];
    *res = output.iter().sum();
}

// ---- zst.rs: a zero-sized parameter
// @diff(fd_inner: forward (const, dual))
pub fn zst(_zst: (), x: &mut f64) { *x = x.sin() * *x; }

// ---- ui/autodiff/type-trees/type-analysis: each kind of parameter
#[derive(Clone, Copy)]
pub struct MyStruct { pub f: f32 }
#[allow(dead_code)]
pub union MyUnion { pub f: f32, pub i: i32 }
// @diff(d_ta_f32: (active) -> active)
pub fn ta_f32(x: f32) -> f32 { x * x }
// @diff(d_ta_f64: (active) -> active)
pub fn ta_f64(x: f64) -> f64 { x * x }
// @diff(d_ta_ref: (dup) -> active)
pub fn ta_ref(x: &f32) -> f32 { *x * *x }
// @diff(d_ta_mut_ref: (dup) -> active)
pub fn ta_mut_ref(x: &mut f32) -> f32 { *x * *x }
// @diff(d_ta_const_pointer: (dup) -> active)
pub fn ta_const_pointer(x: *const f32) -> f32 { unsafe { *x * *x } }
// @diff(d_ta_mut_pointer: (dup) -> active)
pub fn ta_mut_pointer(x: *mut f32) -> f32 { unsafe { *x * *x } }
// @diff(d_ta_struct: (dup) -> active)
pub fn ta_struct(x: &MyStruct) -> f32 { x.f * x.f }
// @diff(d_ta_union: (dup) -> active)
pub fn ta_union(x: &MyUnion) -> f32 { unsafe { x.f * x.f } }
// @diff(d_ta_array: (dup) -> active)
pub fn ta_array(x: &[f32; 3]) -> f32 { x[0] * x[0] + x[1] * x[1] + x[2] * x[2] }
// @diff(d_ta_array3d: (dup) -> active)
pub fn ta_array3d(x: &[[[f32; 2]; 2]; 2]) -> f32 {
    let mut sum = 0.0;
    for i in 0..2 { for j in 0..2 { for k in 0..2 { sum += x[i][j][k] * x[i][j][k]; } } }
    sum
}
// @diff(d_ta_box: (dup) -> active)
pub fn ta_box(x: &Box<f32>) -> f32 { **x * **x }
// @diff(d_ta_vec: (dup) -> active)
pub fn ta_vec(arg: &std::vec::Vec<f32>) -> f32 { arg.iter().map(|v| v * v).sum() }

// ---- ui/autodiff/adbench/ode-real: the Brusselator's right-hand side, arrays of N * N
pub const N: usize = 8;
fn range(min: f64, max: f64, i: usize, n: usize) -> f64 { (max - min) / (n as f64 - 1.) * i as f64 + min }
fn forcing(x: f64, y: f64, t: f64) -> f64 {
    if (x - 0.3) * (x - 0.3) + (y - 0.6) * (y - 0.6) <= 0.1 * 0.1 && t >= 1.1 { 5.0 } else { 0.0 }
}
// @diff(dbrusselator: (dup, dup, dup, dup, dup, const))
pub fn brusselator(du: &mut [f64; N * N], dv: &mut [f64; N * N], u: &[f64; N * N], v: &[f64; N * N], p: &[f64; 3],
                   t: f64) {
    let (a, b) = (p[0], p[1]);
    let dx = 1. / (N - 1) as f64;
    let alpha = p[2] / (dx * dx);
    for i in 0..N {
        for j in 0..N {
            let (x, y) = (range(0., 1., i, N), range(0., 1., j, N));
            let ip1 = if i == N - 1 { i } else { i + 1 };
            let im1 = if i == 0 { i } else { i - 1 };
            let jp1 = if j == N - 1 { j } else { j + 1 };
            let jm1 = if j == 0 { j } else { j - 1 };
            let u2v = u[N * i + j] * u[N * i + j] * v[N * i + j];
            du[N * i + j] = alpha * (u[N * im1 + j] + u[N * ip1 + j] + u[N * i + jp1] + u[N * i + jm1] - 4. * u[N * i + j])
                + b + u2v - (a + 1.) * u[N * i + j] + forcing(x, y, t);
            dv[N * i + j] = alpha * (v[N * im1 + j] + v[N * ip1 + j] + v[N * i + jp1] + v[N * i + jm1] - 4. * v[N * i + j])
                + a * u[N * i + j] - u2v;
        }
    }
}
"""

MAIN = r"""#[allow(dead_code)]
mod model {
    include!("model.rs");
    include!("out/model.adgen.rs");
}
use model::*;

fn close(a: f64, b: f64, tol: f64) -> bool { (a - b).abs() <= tol * (1.0 + b.abs()) }
fn report(name: &str, ok: bool) { println!("{} {}", name, if ok { "ok" } else { "WRONG" }); }

fn main() {
    // abi_handling
    let (x, y, z) = (2.0f32, 3.0f32, 4.0f32);
    let (v, d) = df1(&[x, y], &[1.0, 0.0]);
    report("abi_handling f1", v == 5.0 && d == 1.0);
    let (v, d) = df3(&x, &1.0, &y, &0.0);
    report("abi_handling f3", v == 6.0 && d == 3.0);
    let (v, d) = df4((x, y), (1.0, 0.0));
    let (_, g) = rf4((x, y), 1.0);
    report("abi_handling f4", v == 6.0 && d == 3.0 && g == (3.0, 2.0));
    let (v, d) = df5(Input { x, y }, Input { x: 1.0, y: 0.0 });
    let (_, g) = rf5(Input { x, y }, 1.0);
    report("abi_handling f5", v == 5.0 && d == 1.0 && g.x == 1.0 && g.y == 1.0);
    let n = NestedInput { x, y: Wrapper { z: y } };
    let (v, d) = df6(n, NestedInput { x, y: Wrapper { z } });
    let (_, g) = rf6(n, 1.0);
    report("abi_handling f6", v == 11.0 && d == x + 2.0 * y * z && g.x == 1.0 && g.y.z == 2.0 * y);
    let (v, d) = df7((&x, &y), (&1.0, &0.0));
    report("abi_handling f7", v == 6.0 && d == 3.0);

    // autodiffv2: each input's tangent gives a column of the map, by each batching
    let xs = [0.0f32, 1.0, 2.0, 3.0];
    let mut cols = [[0.0f32; 5]; 4];
    let mut ok = true;
    for k in 0..4 {
        let mut t = [0.0f32; 4];
        t[k] = 1.0;
        let (mut yk, mut dyk) = ([0.0f32; 5], [0.0f32; 5]);
        v2_dual(&xs, &t, &mut yk, &mut dyk);
        cols[k] = dyk;
    }
    let mut tv = [0.0f32; 16];
    for k in 0..4 { tv[k * 4 + k] = 1.0; }  // (lane k of x[i] at 4 * i + k)
    let (mut y5, mut dy5) = ([0.0f32; 5], [0.0f32; 20]);
    v2_dualv(&xs, &tv, &mut y5, &mut dy5);
    let e = |k: usize| { let mut t = [0.0f32; 4]; t[k] = 1.0; t };
    let (mut y6, mut d0, mut d1, mut d2, mut d3) = ([0.0f32; 5], [0.0f32; 5], [0.0f32; 5], [0.0f32; 5], [0.0f32; 5]);
    v2_dual4(&xs, &e(0), &e(1), &e(2), &e(3), &mut y6, &mut d0, &mut d1, &mut d2, &mut d3);
    let lanes = [d0, d1, d2, d3];
    for k in 0..4 {
        for i in 0..5 {
            ok &= dy5[i * 4 + k] == cols[k][i] && lanes[k][i] == cols[k][i];
        }
    }
    ok &= cols[0] == [4.3, 2.3, 1.1, 5.2, 1.0] && y5 == y6;
    report("autodiffv2", ok);

    // batched
    let x3 = 3.0f32;
    let [o1, o2, o3, o4] = d_square2(&x3, &1.0, &2.0, &3.0, &0.0);
    let [out, p1, p2, p3, p4] = d_square1(&x3, &1.0, &2.0, &3.0, &0.0);  // (the result and 4 tangents: one array)
    report("batched", [o1, o2, o3, o4] == [6.0, 12.0, 18.0, 0.0] && [p1, p2, p3, p4] == [o1, o2, o3, o4]
           && out == 9.0 && d_square3(&x3, &2.0) == 12.0);

    // generic, identical_fnc, inline, scalar, typetree
    let mut d = 0.0f64;
    let v = d_generic::<f64>(&3.0, &mut d, 1.0);
    report("generic", v == 9.0 && d == 6.0);
    let (mut d1, mut d2) = (1.0, 1.0);
    d_same1(&3.0, &mut d1, 1.0);
    d_same2(&3.0, &mut d2, 1.0);
    report("identical_fnc", d1 == 7.0 && d2 == 7.0);  // (gradients add to what the shadow holds)
    let mut d = 0.0;
    let v = d_scalar(&3.0, &mut d, 1.0);
    report("scalar, inline", v == 9.0 && d == 6.0);
    let mut d = 0.0;
    let v = d_simple(&3.0, &mut d, 1.0);
    report("typetree", v == 6.0 && d == 2.0);

    // impl
    let p = OptProblem { a: 1., b: 2. };
    let (mut dp, mut dx, mut out, mut dout) = (OptProblem { a: 0., b: 0. }, [0.0], 0.0, 1.0);
    p.d_objective(&mut dp, &[2.0], &mut dx, &mut out, &mut dout);
    report("impl", close(out, 1.0 + 2f64.sqrt() * 2.0, 1e-12) && close(dx[0], 2.0 * 0.5 / 2f64.sqrt(), 1e-12)
           && dp.a == 1.0 && close(dp.b, 2f64.sqrt(), 1e-12));

    // sret
    let (r1, r2, r3) = d_sret(3.0, 2.5, 1.0);
    report("sret", r1 == 22.5 && r2 == 15.0 && r3 == 9.0);

    // trait
    let foo = Foo { a: 3.0 };
    let (v, d) = foo.df(2.0, 1.0);
    let h = 1e-6;
    report("trait", close(v, foo.f(2.0), 1e-12) && close(d, (foo.f(2.0 + h) - foo.f(2.0 - h)) / (2.0 * h), 1e-6));

    // void_ret
    let r = [3.1; 10];
    let (mut dr, mut res, mut dres) = ([0.0; 10], 0.0, 1.0);
    bar(&r, &mut dr, &mut res, &mut dres);
    let mut ok = close(res, foo_value(&r), 1e-12);
    for k in 0..10 {
        let (mut up, mut down) = (r, r);
        up[k] += h;
        down[k] -= h;
        ok &= close(dr[k], (foo_value(&up) - foo_value(&down)) / (2.0 * h), 1e-6);
    }
    report("void_ret", ok);

    // zst
    let (mut x0, mut dx0) = (0.5f64, 1.0f64);
    fd_inner((), &mut x0, &mut dx0);
    report("zst", close(x0, 0.5f64.sin() * 0.5, 1e-12) && close(dx0, 0.5f64.cos() * 0.5 + 0.5f64.sin(), 1e-12));

    // type-trees
    report("type-analysis f32", d_ta_f32(7.0, 1.0) == (49.0, 14.0));
    report("type-analysis f64", d_ta_f64(7.0, 1.0) == (49.0, 14.0));
    let mut d = 0.0f32;
    report("type-analysis ref", d_ta_ref(&7.0, &mut d, 1.0) == 49.0 && d == 14.0);
    let (mut x7, mut d) = (7.0f32, 0.0f32);
    report("type-analysis mut_ref", d_ta_mut_ref(&mut x7, &mut d, 1.0) == 49.0 && d == 14.0);
    let mut d = 0.0f32;
    let v = d_ta_const_pointer(&7.0f32 as *const f32, &mut d, 1.0);  // (safe, as the primal: std::autodiff's)
    report("type-analysis const_pointer", v == 49.0 && d == 14.0);
    let (mut x7, mut d) = (7.0f32, 0.0f32);
    let v = d_ta_mut_pointer(&mut x7 as *mut f32, &mut d, 1.0);
    report("type-analysis mut_pointer", v == 49.0 && d == 14.0);
    let mut d = MyStruct { f: 0.0 };
    report("type-analysis struct", d_ta_struct(&MyStruct { f: 7.0 }, &mut d, 1.0) == 49.0 && d.f == 14.0);
    let mut d = MyUnion { f: 0.0 };
    report("type-analysis union", d_ta_union(&MyUnion { f: 7.0 }, &mut d, 1.0) == 49.0 && unsafe { d.f } == 14.0);
    let mut d = [0.0f32; 3];
    report("type-analysis array", d_ta_array(&[1.0, 2.0, 3.0], &mut d, 1.0) == 14.0 && d == [2.0, 4.0, 6.0]);
    let a3 = [[[1.0f32, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]];
    let mut d = [[[0.0f32; 2]; 2]; 2];
    let v = d_ta_array3d(&a3, &mut d, 1.0);
    let mut ok = v == ta_array3d(&a3);
    for i in 0..2 { for j in 0..2 { for k in 0..2 { ok &= d[i][j][k] == 2.0 * a3[i][j][k]; } } }
    report("type-analysis array3d", ok);
    let mut d = Box::new(0.0f32);
    report("type-analysis box", d_ta_box(&Box::new(7.0), &mut d, 1.0) == 49.0 && *d == 14.0);
    let mut d = vec![0.0f32; 3];
    report("type-analysis vec", d_ta_vec(&vec![1.0, 2.0, 3.0], &mut d, 1.0) == 14.0 && d == [2.0, 4.0, 6.0]);

    // adbench/ode-real: the gradient of a weighted sum of the right-hand side, against differences
    let m = N * N;
    let mut u = [0.0; N * N];
    let mut v = [0.0; N * N];
    for k in 0..m { u[k] = 0.5 + 0.3 * ((k as f64) * 0.7).sin(); v[k] = 1.2 + 0.2 * ((k as f64) * 1.3).cos(); }
    let p = [3.4, 1.0, 10.0];
    let wu: Vec<f64> = (0..m).map(|k| ((k as f64) * 0.37).sin()).collect();
    let wv: Vec<f64> = (0..m).map(|k| ((k as f64) * 0.53).cos()).collect();
    let loss = |u: &[f64; N * N], v: &[f64; N * N], p: &[f64; 3]| {
        let (mut du, mut dv) = ([0.0; N * N], [0.0; N * N]);
        brusselator(&mut du, &mut dv, u, v, p, 2.0);
        (0..m).map(|k| wu[k] * du[k] + wv[k] * dv[k]).sum::<f64>()
    };
    let (mut du, mut dv, mut sdu, mut sdv) = ([0.0; N * N], [0.0; N * N], [0.0; N * N], [0.0; N * N]);
    sdu.copy_from_slice(&wu);
    sdv.copy_from_slice(&wv);
    let (mut gu, mut gv, mut gp) = ([0.0; N * N], [0.0; N * N], [0.0; 3]);
    dbrusselator(&mut du, &mut sdu, &mut dv, &mut sdv, &u, &mut gu, &v, &mut gv, &p, &mut gp, 2.0);
    let mut ok = true;
    for k in [0, 9, 27, m - 1] {
        let (mut up, mut down) = (u, u);
        up[k] += 1e-6;
        down[k] -= 1e-6;
        ok &= close(gu[k], (loss(&up, &v, &p) - loss(&down, &v, &p)) / 2e-6, 1e-5);
        let (mut up, mut down) = (v, v);
        up[k] += 1e-6;
        down[k] -= 1e-6;
        ok &= close(gv[k], (loss(&u, &up, &p) - loss(&u, &down, &p)) / 2e-6, 1e-5);
    }
    for k in 0..3 {
        let (mut up, mut down) = (p, p);
        up[k] += 1e-6;
        down[k] -= 1e-6;
        ok &= close(gp[k], (loss(&u, &v, &up) - loss(&u, &v, &down)) / 2e-6, 1e-5);
    }
    report("adbench ode-real", ok);
}

fn foo_value(r: &[f64; 10]) -> f64 {
    let mut res = 0.0;
    foo(r, &mut res);
    res
}
"""

CASES = ["abi_handling f1", "abi_handling f3", "abi_handling f4", "abi_handling f5", "abi_handling f6",
         "abi_handling f7", "autodiffv2", "batched", "generic", "identical_fnc", "scalar, inline", "typetree", "impl",
         "sret", "trait", "void_ret", "zst", "type-analysis f32", "type-analysis f64", "type-analysis ref",
         "type-analysis mut_ref", "type-analysis const_pointer", "type-analysis mut_pointer", "type-analysis struct",
         "type-analysis union", "type-analysis array", "type-analysis array3d", "type-analysis box",
         "type-analysis vec", "adbench ode-real"]


@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
@pytest.mark.slow
def test_rusts_autodiff_tests(tmp_path, adgen, rustc_named, rustc, version):
    rustc_named(rustc)
    out = _build_model(tmp_path, adgen, MODEL)
    (tmp_path / "main.rs").write_text(MAIN)
    done = subprocess.run([rustc, "--edition=2021", "-O", "main.rs", "-C", f"link-arg={out / 'model.adgen.o'}",
                           "-C", "link-arg=-lm", "-o", "prog"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines() == [f"{name} ok" for name in CASES], run.stdout


INTEGERS = r"""
// The integer type-analysis tests (i8 ... u128, isize, usize): std::autodiff's `Duplicated` and
// `Active` on integers, which carry no derivative; and each other activity an integer may be given.
// @diff(d_i8: (dup) -> active; d_i8_only: (dup) -> activeonly; t_i8: forward (dual) -> dual; t_i8_only: forward (dual) -> dualonly; t_i8_2: forward[2] (dual) -> dual; d_i8_2: reverse[2] (dup) -> active)
pub fn square_i8(x: &i8) -> i8 { *x * *x }
// @diff(d_u128: (dup) -> active)
pub fn square_u128(x: &u128) -> u128 { *x * *x }
// @diff(d_usize: (dup) -> active)
pub fn square_usize(x: &usize) -> usize { *x * *x }
// @diff(d_mixed: (dup, active, dupv) -> active; t_mixed: forward[2] (dual, dual, dualv) -> dual)
pub fn mixed(x: &[f64], n: usize, k: &[i32]) -> f64 { x[0] * n as f64 + k[0] as f64 * x[1] }
"""

INTEGERS_MAIN = r"""#![deny(warnings)]
mod model { include!("model.rs"); include!("out/model.adgen.rs"); }
use model::*;

fn main() {
    let (mut d, mut e) = (5i8, 7i8);
    assert_eq!(d_i8(&3, &mut d, 1), 9);
    d_i8_only(&3, &mut d, 1);
    assert_eq!((t_i8(&3, &1), t_i8_only(&3, &1), t_i8_2(&3, &1, &1)), ((9, 0), 0, [9, 0, 0]));
    assert_eq!(d_i8_2(&3, &mut d, &mut e, 1, 1), 9);
    assert_eq!((d, e), (5, 7));
    let (mut d128, mut dsize) = (1u128, 2usize);
    assert_eq!((d_u128(&7, &mut d128, 1), d_usize(&7, &mut dsize, 1), d128, dsize), (49, 49, 1, 2));
    let (x, k) = ([0.5, 2.0], [3]);
    let (mut dx, mut dk) = ([0.0; 2], [11; 2]);
    assert_eq!(d_mixed(&x, &mut dx, 4, &k, &mut dk, 1.0), (8.0, 0));
    assert_eq!((dx, dk), ([4.0, 3.0], [11; 2]));
    let t = t_mixed(&x, &[1.0, 0.0], &[0.0, 1.0], 4, 1, 1, &k, &[1; 2]);
    assert_eq!(t, [8.0, 4.0, 3.0]);
    println!("ok");
}
"""


@pytest.mark.slow
def test_integers_given_derivatives_activities_build_with_a_warning(tmp_path, adgen):
    """As std::autodiff takes them (the type-analysis tests build and run): the wrapper takes the
    shadows and seeds the activity has and leaves them as they are, the derivatives zero; a
    warning at each such activity; the wrappers compile without warnings."""
    (tmp_path / "model.rs").write_text(INTEGERS)
    result = adgen("build", tmp_path / "model.rs", "-o", tmp_path / "out")
    assert result.status == 0, result.err
    assert result.err.count("warning: ") == 20 and "model.rs:4:17: warning: 'x' holds integers, and integers carry no " \
        "derivative: activity 'dup' is taken as std::autodiff takes it" in result.err, result.err
    assert "model.rs:4:25: warning: 'square_i8' returns an integer" in result.err
    _linked_and_run(tmp_path, INTEGERS_MAIN)


def _linked_and_run(tmp_path, main: str) -> Path:
    """main.rs (including model.rs and its wrappers) built with out/model.adgen.o, run: it prints
    "ok"; the program."""
    (tmp_path / "main.rs").write_text(main)
    done = subprocess.run(["rustc", "--edition=2021", "-O", "main.rs", "-C", f"link-arg={tmp_path / 'out' / 'model.adgen.o'}",
                           "-C", "link-arg=-lm", "-o", "prog"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "ok\n", run.stdout + run.stderr
    return tmp_path / "prog"


FUNCTION_POINTERS = r"""
// A function of a function (abi_handling's f2): the derivatives take the program's pointer to it.
// @diff(d_apply: (const, active) -> active; t_apply: forward (const, dual) -> dual; t_apply2: forward[2] (const, dual) -> dual)
pub fn apply(f: fn(x: f64) -> f64, x: f64) -> f64 { 2.0 * f(x) + f(x * x) }
pub fn cube(x: f64) -> f64 { x * x * x }
fn wave(x: f64) -> f64 { x.sin() * x }
pub(crate) const fn same(x: f64) -> f64 { x }
pub fn times(x: f64, y: f64) -> f64 { x * y }
pub fn pick(k: usize) -> fn(f64) -> f64 { [cube, wave, same][k] }
"""

FUNCTION_POINTERS_MAIN = r"""#![deny(warnings)]
mod model { include!("model.rs"); include!("out/model.adgen.rs"); }
use model::*;

fn main() {
    if std::env::args().count() > 1 {  // a function the derivatives do not hold: a closure's
        let g: fn(f64) -> f64 = |x| x + 1.0;
        d_apply(g, 0.5, 1.0);
        return;
    }
    let h = 1e-6;
    for k in 0..3 {  // (a public function, a private one and a const one, by the program's pointers to them)
        let f = pick(k);
        for x in [0.3, -1.2] {
            let fd = (apply(f, x + h) - apply(f, x - h)) / (2.0 * h);
            let (y, dx) = d_apply(f, x, 1.0);
            let (y2, t) = t_apply(f, x, 1.0);
            let l = t_apply2(f, x, 1.0, 2.0);
            assert!(y == apply(f, x) && y2 == y && l[0] == y);
            assert!((dx - fd).abs() < 1e-6 * (1.0 + fd.abs()), "{} {}", dx, fd);
            assert!((t - dx).abs() < 1e-12 && (l[1] - dx).abs() < 1e-12 && (l[2] - 2.0 * dx).abs() < 1e-12);
        }
    }
    assert_eq!(times(2.0, 3.0), 6.0);
    let (_, dx) = d_apply(cube, 2.0, 1.0);
    assert_eq!(dx, 2.0 * 12.0 + 4.0 * 48.0);  // 2 f'(x) + 2x f'(x^2)
    println!("ok");
}
"""


@pytest.mark.slow
def test_function_pointers_to_the_programs_functions(tmp_path, adgen):
    """A `const` parameter of a function type, given the program's pointers to the source's
    functions (public or not): both modes against central differences; a pointer to a function
    the derivatives do not hold (a closure's) stops the program with a message."""
    (tmp_path / "model.rs").write_text(FUNCTION_POINTERS)
    result = adgen("build", tmp_path / "model.rs", "-o", tmp_path / "out")
    assert result.status == 0, result.err
    program = _linked_and_run(tmp_path, FUNCTION_POINTERS_MAIN)
    closure = subprocess.run([str(program), "closure"], capture_output=True, text=True)
    assert closure.returncode != 0 and "reached a function outside the sources it differentiated" in closure.stderr


@pytest.mark.parametrize("code, entry, message, at", [
    ("pub fn f2(f: fn(f32) -> f32, x: f32) -> f32 { f(x) }", "(active, active) -> active",
     "activity 'active' needs a float or double, or a struct holding them, but parameter 'f' has type "
     "'fn(f32) -> f32'", "active"),
], ids=["a function pointer active"])
def test_what_has_no_stable_meaning_is_a_located_error(tmp_path, adgen, code, entry, message, at):
    src = tmp_path / "model.rs"
    src.write_text(f"// @diff(d: {entry})\n{code}\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1 and message in result.err, result.err
    lines = result.err.split("\n")
    assert lines[1][lines[2].index("^"):].startswith(at), result.err
    assert result.err.startswith(f"{src}:1:") and not (tmp_path / "out").exists()  # (at the file's line; nothing written)


STD_AUTODIFF = r"""
use adgen::{autodiff_forward, autodiff_reverse};

#[autodiff_reverse(d_square, Duplicated, Active)]
#[autodiff_forward(d_square4, 4, Dual, Dual)]
fn square(x: &f32) -> f32 {
    x * x
}

#[adgen::autodiff_reverse(d_poly, Duplicated, Active)]
fn poly<T: std::ops::Mul<Output = T> + std::ops::Add<Output = T> + Copy>(x: &T) -> T {
    *x * *x * *x + *x
}

#[autodiff_forward(d_out, Dual, Dual)]
#[autodiff_forward(d_out2, 2, Dualv, Dualv)]
fn out(x: &[f64], y: &mut [f64]) {
    for i in 0..x.len() {
        y[i] = x[i].sin() * x[i];
    }
}

// A state updated in place and read again at the next step, `Const` as ADBench's LSTM marks its
// own: the wrapper's scratch shadow keeps the derivatives that flow through it.
#[autodiff_reverse(d_steps, Const, Duplicated, Const, DuplicatedOnly)]
fn steps(n: usize, w: &[f64], state: &mut [f64], loss: &mut f64) {
    let mut total = 0.0;
    for _ in 0..n {
        for i in 0..state.len() {
            state[i] = (state[i] * w[i] + w[i + 1]).tanh();
        }
        total += state.iter().sum::<f64>();
    }
    *loss = total;
}

// The same through raw pointers, as ADBench's unsafe LSTM marks its state: a `Const` `*mut f64`,
// whose length no one knows, gets a scratch shadow in address space reserved around it.
#[autodiff_reverse(d_steps_raw, Const, Const, Duplicated, Const, DuplicatedOnly)]
unsafe fn steps_raw(n: usize, len: usize, w: *const f64, state: *mut f64, loss: *mut f64) {
    let mut total = 0.0;
    for _ in 0..n {
        for i in 0..len {
            *state.add(i) = (*state.add(i) * *w.add(i) + *w.add(i + 1)).tanh();
        }
        for i in 0..len {
            total += *state.add(i);
        }
    }
    *loss = total;
}

// A trait declaring the derived method the attribute puts beside its method (trait.rs), and an
// inherent method's (impl.rs), both modes.
struct Foo {
    a: f64,
}

trait MyTrait {
    fn f(&self, x: f64) -> f64;
    fn df(&self, x: f64, seed: f64) -> (f64, f64);
}

impl MyTrait for Foo {
    #[autodiff_reverse(df, Const, Active, Active)]
    fn f(&self, x: f64) -> f64 {
        self.a * 0.25 * (x * x - 1.0 - 2.0 * x.ln())
    }
}

impl Foo {
    #[autodiff_forward(g_dir, Dual, Dual, Dual)]
    #[autodiff_reverse(g_grad, Duplicated, Duplicated, Active)]
    pub fn g(&self, x: &[f64]) -> f64 {
        self.a * x.iter().map(|v| v * v).sum::<f64>()
    }
}

fn main() {
    let foo = Foo { a: 3.0 };
    let (v, dx) = foo.df(2.0, 1.0);
    assert!(v == foo.f(2.0) && (dx - 3.0 * 0.25 * (4.0 - 1.0)).abs() < 1e-12);
    let (mut d_foo, mut d_x) = (Foo { a: 0.0 }, [0.0; 2]);
    assert_eq!(foo.g_grad(&mut d_foo, &[1.0, 2.0], &mut d_x, 1.0), 15.0);
    assert!(d_foo.a == 5.0 && d_x == [6.0, 12.0]);
    assert_eq!(foo.g_dir(&Foo { a: 1.0 }, &[1.0, 2.0], &[0.5, 0.0]), (15.0, 5.0 + 3.0));
    let x = 3.0f32;
    let mut d = 0.0;
    assert_eq!(d_square(&x, &mut d, 1.0), 9.0);
    assert_eq!(d, 6.0);
    assert_eq!(d_square4(&x, &1.0, &2.0, &3.0, &0.0), [9.0, 6.0, 12.0, 18.0, 0.0]);
    let mut g = 0.0f64;
    assert_eq!(d_poly::<f64>(&2.0, &mut g, 1.0), 10.0);
    assert_eq!(g, 13.0);
    let (xs, mut ys, mut dys) = ([0.5, 1.5], [0.0; 2], [0.0; 2]);
    d_out(&xs, &[1.0, 0.0], &mut ys, &mut dys);
    assert!((dys[0] - (0.5f64.cos() * 0.5 + 0.5f64.sin())).abs() < 1e-12 && dys[1] == 0.0);
    // Dualv: the 2 tangents one after another (lane k the k-th block of x.len()), as std::autodiff's
    let (mut ys2, mut dys2) = ([0.0; 2], [0.0; 4]);
    d_out2(&xs, &[1.0, 0.0, 0.0, 1.0], &mut ys2, &mut dys2);
    assert!(dys2[0] == dys[0] && dys2[1] == 0.0 && dys2[2] == 0.0);
    assert!((dys2[3] - (1.5f64.cos() * 1.5 + 1.5f64.sin())).abs() < 1e-12);
    let (w, s0) = ([0.5, -0.3, 0.8], [0.1, 0.2]);
    let (mut dw, mut s, mut l, mut dl) = ([0.0; 3], s0, 0.0, 1.0);
    d_steps(3, &w, &mut dw, &mut s, &mut l, &mut dl);
    for k in 0..3 {
        let at = |h: f64| {
            let (mut v, mut s, mut l) = (w, s0, 0.0);
            v[k] += h;
            steps(3, &v, &mut s, &mut l);
            l
        };
        assert!((dw[k] - (at(1e-6) - at(-1e-6)) / 2e-6).abs() < 1e-6, "{} {}", k, dw[k]);
    }
    let (mut dw_raw, mut s, mut l, mut dl) = ([0.0; 3], s0, 0.0, 1.0);
    unsafe { d_steps_raw(3, 2, w.as_ptr(), dw_raw.as_mut_ptr(), s.as_mut_ptr(), &mut l, &mut dl) };
    assert!(dw_raw == dw && s == { let (mut s, mut l) = (s0, 0.0); steps(3, &w, &mut s, &mut l); s });
    println!("ok");
}

include!(concat!(env!("ADGEN_OUT"), "/model.adgen.rs"));
"""


@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
@pytest.mark.slow
def test_code_written_for_std_autodiff_builds_on_stable(tmp_path, adgen, rustc_named, rustc, version):
    """std::autodiff's attributes, imported from adgen's crate of attributes in place of
    std::autodiff's, by name and by path; the file calls its own derivatives (adgen's compile of
    it has the wrappers in place of the include); a generic function derived at the
    instantiation the file calls; width 4 returning the result and the tangents in one array."""
    rustc_named(rustc)
    out = _build_model(tmp_path, adgen, STD_AUTODIFF)
    crate = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "--rust-crate-dir"], capture_output=True,
                           text=True).stdout.strip()
    macros = subprocess.run([rustc, "--crate-type=proc-macro", "--crate-name", "adgen", "--edition=2021",
                             f"{crate}/src/lib.rs", "-o", str(tmp_path / "libadgen.so")], capture_output=True, text=True)
    assert macros.returncode == 0, macros.stderr
    done = subprocess.run([rustc, "--edition=2021", "-O", "model.rs", "--extern", f"adgen={tmp_path / 'libadgen.so'}",
                           "-C", f"link-arg={out / 'model.adgen.o'}", "-C", "link-arg=-lm", "-o", "prog"], cwd=tmp_path,
                          capture_output=True, text=True, env=dict(os.environ, ADGEN_OUT=str(out)))
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "ok\n", run.stdout + run.stderr
    # Where the address space the scratch shadow reserves cannot be had (a limit of 1 GiB), the
    # wrapper stops the program, naming the pointer (templates/wrappers.rs.j2, __AdgenReserved).
    # (by the shell's ulimit, in KiB: a preexec_fn would fork a process JAX's threads may share)
    limited = subprocess.run(["sh", "-c", 'ulimit -v 1048576 && exec "$0"', str(tmp_path / "prog")],
                             capture_output=True, text=True)
    assert limited.returncode != 0 and "ok" not in limited.stdout, limited.stdout + limited.stderr
    assert "cannot reserve the address space of the scratch shadow of 'state'" in limited.stderr, limited.stderr
