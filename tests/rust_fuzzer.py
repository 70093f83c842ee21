"""Random Rust crates, differentiated with `cargo adgen build` and checked (specs/annotations.md,
"Rust crates"; specs/testing.md).

Each crate is a package whose library has two modules: `util`, random scalar helpers, and
`model`, random annotated functions of a slice or a `&Vec<f64>` and a struct of parameters
(`#[repr(C)]`, of Rust's layout, or holding a `Vec`; by reference or, Copy, by value), or
methods taking `&self` of it, or given a pointer to a function of the module (`g: fn(f64, f64) ->
f64`, `const`: checked with a public one and a private one); some
generic, derived at named instantiations (over the parameters' type through a trait, and a
const parameter: `f0_grad<Params, 3>`). Their bodies make vectors of their own (`collect`,
`vec!`, `push`), run loops of random smooth arithmetic calling the other module's helpers, and
return a weighted sum; some take the parameters as a trait object (`q: &dyn Weights`), some a
state they update in place and read again (`s: &mut [f64]`, or a raw `*mut f64` to it, `const`: its
shadow a scratch one the wrapper makes, reserved address space for the pointer; each check's call
from the same state). Each
function has a gradient (reverse mode, `dup` for the data and the parameters; for some, from a
split-mode entry's tape) and a tangent (forward mode); the package's program checks both, on
every input, against central differences (two steps, extrapolated) and against each other, and
prints a line per function; for some, also Hessian-vector products (an entry deriving the
gradient forward, `of`) against differences of the gradient: ok, inconclusive (the differences have not converged, the slopes on either side
of the point differ — a tie of `min` or `max` — or the value is so large that rounding makes
the difference) or WRONG. A crate adgen
refuses with located errors (its file, line and what it cannot differentiate) counts as no
failure; the summary lists what was refused, and how often.

    python tests/rust_fuzzer.py [--crates N] [--seed S] [--functions F] [--cargo FOLDER]

Needs cargo and rustc (--cargo: the folder of another toolchain's, Debian's /usr/bin say) and
`cargo-adgen` beside this Python."""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

N = 5  # elements of a function's data

UNARY = ["({0}).sin()", "({0}).cos()", "({0}).tanh()", "({0}).tanh().exp()", "(1.0 + ({0}) * ({0})).ln()",
         "(1.0 + ({0}) * ({0})).sqrt()", "({0}).atan()", "(({0}).tanh() + 2.0).powf(1.5)", "({0}).powi(2)",
         "({0}).tanh().powi(3)", "(0.5 * ({0}).tanh()).asin()"]
BINARY = ["({0}) * ({1})", "({0}) + ({1})", "({0}) - 0.5 * ({1})", "({0}) / (2.0 + ({1}).tanh())",
          "({0}).max({1})", "({0}).min({1})"]


class Writer:
    def __init__(self, rng: random.Random, helpers: int, copy: bool = False):
        self.rng, self.helpers, self.copy = rng, helpers, copy  # (copy: Params is Copy, passed by value sometimes)

    def expression(self, atoms: list[str], depth: int = 0) -> str:
        rng = self.rng
        pick = rng.random()
        if depth >= 3 or pick < 0.25:
            return rng.choice(atoms) if rng.random() < 0.85 else f"{rng.uniform(-2, 2):.3f}_f64"
        if pick < 0.55:
            return rng.choice(UNARY).format(self.expression(atoms, depth + 1))
        if pick < 0.8 or not self.helpers:
            return rng.choice(BINARY).format(self.expression(atoms, depth + 1), self.expression(atoms, depth + 1))
        return f"crate::util::h{rng.randrange(self.helpers)}({self.expression(atoms, depth + 1)}, " \
               f"{self.expression(atoms, depth + 1)})"

    def helper(self, k: int) -> str:
        return f"pub fn h{k}(a: f64, b: f64) -> f64 {{\n    {self.expression(['a', 'b'], 1)}\n}}\n"

    def function(self, k: int) -> tuple[str, str, bool]:
        """A function's text, its data parameter's type, whether it is a method, and the generic
        arguments its calls name (`::<3>`, or ""; "by value" for the parameters by value, "split"
        where a split-mode entry derives it too, whose tape gives the check its gradient, "hvp"
        where an entry derives its gradient again, forward: Hessian-vector products)."""
        rng = self.rng
        method = rng.random() < 0.3
        data = "&Vec<f64>" if rng.random() < 0.3 else "&[f64]"
        q = "self" if method else "q"
        generic = rng.random() < 0.4  # over the parameters' type (not a method's) and a const M = 3
        by_value = self.copy and not method and not generic and rng.random() < 0.35
        dynamic = not method and not generic and not by_value and rng.random() < 0.3  # (q: &dyn Weights)
        # a function of the module it is given a pointer to, `const` (the program's pointer: dispatch.py)
        callback = not method and not generic and not by_value and not dynamic and rng.random() < 0.6
        data = "&[f64]" if callback else data
        # a state the function updates in place and reads again, `const` (its scratch shadow the wrapper's)
        buffer = not method and not generic and not by_value and not dynamic and not callback and rng.random() < 0.5
        p = (lambda i: f"{q}.w({i})") if (generic or dynamic) and not method else (lambda i: f"{q}.p[{i}]")
        m = "M" if generic else "3"
        made = rng.choice(["collect", "vec", "push"])
        first = self.expression(["x[i]", p(f"i % {m}"), "(i as f64)"])
        lines = []
        if made == "collect":
            lines.append(f"let mut v: Vec<f64> = (0..x.len()).map(|i| {first}).collect();")
        elif made == "vec":
            lines += ["let mut v = vec![0.0; x.len()];", f"for i in 0..x.len() {{ v[i] = {first}; }}"]
        else:
            lines += ["let mut v = Vec::new();", f"for i in 0..x.len() {{ v.push({first}); }}"]
        for _ in range(rng.randint(1, 3)):
            kind = rng.random()
            if kind < 0.4:
                e = self.expression(["v[i]", "v[i - 1]", "x[i]", p(f"(i + 1) % {m}")])
                lines.append(f"for i in 1..v.len() {{ v[i] = {e}; }}")
            elif kind < 0.7:
                e = self.expression(["v[i]", "s", "x[(i + 2) % x.len()]"])
                lines.append(f"{{ let mut s: f64 = 0.0; for i in 0..v.len() {{ s += {e}; }} "
                             f"for i in 0..v.len() {{ v[i] += 0.1 * s.tanh(); }} }}")
            else:
                e = self.expression(["v[i]", p("2")])
                lines.append(f"v = v.iter().enumerate().map(|(i, _)| {e}).collect();")
        if callback:
            lines.append("for i in 0..v.len() { v[i] = g(v[i], x[(i + 1) % x.len()]); }")
        weights = ", ".join(f"{rng.uniform(-1, 1):.3f}" for _ in range(N))
        lines.append(f"let w = [{weights}];")
        extra = ""
        if buffer:  # (through the state: stored, read back at the next step)
            e = self.expression(["s[j]", "v[j % v.len()]", p("1")])
            lines.append(f"for _ in 0..2 {{ for j in 0..s.len() {{ s[j] = {e}; }} }}")
            extra = " + 0.3 * s.iter().sum::<f64>()"
        lines.append(f"v.iter().zip(w.iter()).map(|(a, b)| a * b).sum::<f64>() + {p('0')} * x[0]{extra}")
        body = "\n    ".join(lines)
        if method:
            at, declared = ("<3>", "<const M: usize>") if generic else ("", "")
            head = (f"    // @diff(m{k}_grad{at}: (dup, dup) -> active; "
                    f"m{k}_fwd{at}: forward (dual, dual) -> dualonly)\n"
                    f"    pub fn m{k}{declared}(&self, x: {data}) -> f64 {{\n    {body}\n    }}\n")
            return f"impl Params {{\n{head}}}\n", data, True, "::<3>" if generic else ""
        if by_value:
            return (f"// @diff(f{k}_grad: (dup, active) -> active; f{k}_fwd: forward (dual, dual) -> dualonly)\n"
                    f"pub fn f{k}(x: {data}, q: Params) -> f64 {{\n    {body}\n}}\n", data, False, "by value")
        if callback:  # (two functions of its type, one private, and what picks one: the driver checks both)
            targets = "".join(f"{'pub ' if j == 0 else ''}fn cb{k}_{j}(a: f64, b: f64) -> f64 {{\n    "
                              f"{self.expression(['a', 'b'], 1)}\n}}\n" for j in range(2))
            return (targets + f"pub fn pick{k}(j: usize) -> fn(f64, f64) -> f64 {{\n    "
                    f"if j == 0 {{ cb{k}_0 }} else {{ cb{k}_1 }}\n}}\n"
                    f"// @diff(f{k}_grad: (dup, dup, const) -> active; f{k}_fwd: forward (dual, dual, const) -> dualonly)\n"
                    f"pub fn f{k}(x: {data}, q: &Params, g: fn(f64, f64) -> f64) -> f64 {{\n    {body}\n}}\n",
                    data, False, "callback")
        if buffer and rng.random() < 0.5:  # (a raw pointer to it, its length the driver's: a reserved scratch)
            return (f"// @diff(f{k}_grad: (dup, dup, const) -> active; f{k}_fwd: forward (dual, dual, const) -> dualonly)\n"
                    f"#[allow(unused_unsafe)]\npub unsafe fn f{k}(x: {data}, q: &Params, s_raw: *mut f64) -> f64 {{\n"
                    f"    let s = unsafe {{ std::slice::from_raw_parts_mut(s_raw, 3) }};\n    {body}\n}}\n", data, False,
                    "buffer raw")
        if buffer:
            return (f"// @diff(f{k}_grad: (dup, dup, const) -> active; f{k}_fwd: forward (dual, dual, const) -> dualonly)\n"
                    f"pub fn f{k}(x: {data}, q: &Params, s: &mut [f64]) -> f64 {{\n    {body}\n}}\n", data, False,
                    "buffer")
        at, declared, of = ("<Params, 3>", "<Q: Weights, const M: usize>", "Q") if generic else \
            ("", "", "dyn Weights") if dynamic else ("", "", "Params")
        split = not generic and not dynamic and rng.random() < 0.5
        hvp = not generic and not dynamic and rng.random() < 0.5  # (then `of` too: "hvp")
        return (f"// @diff(f{k}_grad{at}: (dup, dup) -> active; f{k}_fwd{at}: forward (dual, dual) -> dualonly)\n"
                + (f"// @diff(f{k}_split: split (dup, dup) -> active)\n" if split else "")
                + (f"// @diff(f{k}_hvp: forward of f{k}_grad (dual, dual, dual, dual, const) -> const)\n"
                   if hvp else "") +
                f"pub fn f{k}{declared}(x: {data}, q: &{of}) -> f64 {{\n    {body}\n}}\n", data, False,
                "::<Params, 3>" if generic else "split+hvp" if split and hvp else "split" if split else
                "hvp" if hvp else "")


DRIVER = """\
use {crate}::model::*;

fn check(name: &str, f: &dyn Fn(&[f64], &Params) -> f64, grad: &dyn Fn(&[f64], &Params, &mut [f64], &mut Params),
         fwd: &dyn Fn(&[f64], &Params, &[f64], &Params) -> f64) {{
    let x = [0.3, -0.8, 0.55, 1.1, -0.25];
    let q = Params {{ p: {make}([0.7, -0.4, 0.9]) }};
    let (mut dx, mut dq) = ([0.0; {n}], Params {{ p: {make}([0.0; 3]) }});
    grad(&x, &q, &mut dx, &mut dq);
    let (mut wrong, mut unsure) = (false, false);
    for k in 0..{n} + 3 {{
        let (mut tx, mut tq) = ([0.0; {n}], Params {{ p: {make}([0.0; 3]) }});
        let g = if k < {n} {{ tx[k] = 1.0; dx[k] }} else {{ tq.p[k - {n}] = 1.0; dq.p[k - {n}] }};
        let sides = |h: f64| {{  // (the slopes on either side)
            let (mut xp, mut xm, mut qp, mut qm) = (x, x, Params {{ p: q.p.clone() }}, Params {{ p: q.p.clone() }});
            if k < {n} {{ xp[k] += h; xm[k] -= h; }} else {{ qp.p[k - {n}] += h; qm.p[k - {n}] -= h; }}
            let f0 = f(&x, &q);
            ((f(&xp, &qp) - f0) / h, (f0 - f(&xm, &qm)) / h, f0)
        }};
        let ((r1, l1, f0), (r2, l2, _)) = (sides(1e-6), sides(2e-6));
        let (d1, d2) = ((r1 + l1) / 2.0, (r2 + l2) / 2.0);
        let fd = (4.0 * d1 - d2) / 3.0;
        let t = fwd(&x, &q, &tx, &tq);
        let tol = 1e-5 * (1.0 + fd.abs());
        let modes = (g - t).abs() <= 1e-8 * (1.0 + g.abs());
        let close = (g - fd).abs() <= tol || (g - d1).abs() <= tol;
        // a kink within the step (the slopes on either side differ: a tie of min or max at the
        // point) or a value so large that its rounding is the difference: not conclusive
        let (j1, j2) = (r1 - l1, r2 - l2);  // (a jump: the same at either step; curvature's doubles with it)
        let kink = j1.abs() > tol && (j2 - j1).abs() < 0.25 * j1.abs();
        let rounding = f0.abs() * 1e-15 / 1e-6 > 1e-2 * tol || !f0.is_finite();
        let converged = (d1 - d2).abs() <= tol && !kink && !rounding;
        if f0.is_finite() && (!modes || (!close && converged)) {{
            wrong = true;
            println!("{{}} value {{}}: reverse {{}} forward {{}} differences {{}} {{}}", name, k, g, t, d1, d2);
        }} else if !close || !f0.is_finite() {{  // (a value that overflowed: no derivative to compare)
            unsure = true;
        }}
    }}
    println!("{{}} {{}}", name, if wrong {{ "WRONG" }} else if unsure {{ "inconclusive" }} else {{ "ok" }});
}}

/// Hessian-vector products (forward over reverse) against differences of the gradient.
fn check_hvp(name: &str, grad: &dyn Fn(&[f64], &Params, &mut [f64], &mut Params),
             hvp: &dyn Fn(&[f64], &Params, &[f64], &Params, &mut [f64], &mut Params)) {{
    let x = [0.3, -0.8, 0.55, 1.1, -0.25];
    let q = Params {{ p: {make}([0.7, -0.4, 0.9]) }};
    let (tx, tq) = ([0.2, -0.1, 0.4, 0.3, -0.5], Params {{ p: {make}([0.3, 0.1, -0.2]) }});
    let (mut hx, mut hq) = ([0.0; {n}], Params {{ p: {make}([0.0; 3]) }});
    hvp(&x, &q, &tx, &tq, &mut hx, &mut hq);
    let along = |s: f64| {{
        let (mut xs, mut qs) = (x, Params {{ p: q.p.clone() }});
        for i in 0..{n} {{ xs[i] += s * tx[i]; }}
        for i in 0..3 {{ qs.p[i] += s * tq.p[i]; }}
        let (mut dx, mut dq) = ([0.0; {n}], Params {{ p: {make}([0.0; 3]) }});
        grad(&xs, &qs, &mut dx, &mut dq);
        let mut all = dx.to_vec();
        all.extend(dq.p.iter());
        all
    }};
    let (p1, m1, p2, m2) = (along(1e-5), along(-1e-5), along(2e-5), along(-2e-5));
    let h: Vec<f64> = hx.iter().chain(hq.p.iter()).cloned().collect();
    let (mut wrong, mut unsure) = (false, false);
    for i in 0..h.len() {{
        let (d1, d2) = ((p1[i] - m1[i]) / 2e-5, (p2[i] - m2[i]) / 4e-5);
        let fd = (4.0 * d1 - d2) / 3.0;
        let tol = 1e-4 * (1.0 + fd.abs());
        if (h[i] - fd).abs() > tol && (h[i] - d1).abs() > tol {{
            if (d1 - d2).abs() <= tol {{
                wrong = true;
                println!("{{}} hvp {{}}: {{}} differences {{}} {{}}", name, i, h[i], d1, d2);
            }} else {{
                unsure = true;
            }}
        }}
    }}
    println!("{{}} {{}}", name, if wrong {{ "WRONG" }} else if unsure {{ "inconclusive" }} else {{ "ok" }});
}}

fn main() {{
{calls}
}}
"""


def crate(rng: random.Random, functions: int) -> dict[str, str]:
    """A package's files: Cargo.toml, build.rs, src/lib.rs, src/util.rs, src/model.rs, src/main.rs."""
    helpers = rng.randint(1, 3)
    util = "\n".join(Writer(rng, 0).helper(k) for k in range(helpers))
    layout = rng.choice(["#[repr(C)]\n", "", "vec"])  # C's, Rust's (an object to C), or holding a Vec
    w = Writer(rng, helpers, copy=layout != "vec")
    field = "Vec<f64>" if layout == "vec" else "[f64; 3]"
    derive = "" if layout == "vec" else "#[derive(Clone, Copy)]\n"
    parts = [f"{derive}{'' if layout == 'vec' else layout}pub struct Params {{\n    pub p: {field},\n}}\n",
             "pub trait Weights: std::any::Any {\n    fn w(&self, i: usize) -> f64;\n}\n",
             "impl Weights for Params {\n    fn w(&self, i: usize) -> f64 {\n        self.p[i]\n    }\n}\n"]
    calls = []
    for k in range(functions):
        text, data, method, kind = w.function(k)
        at = kind if kind.startswith("::") else ""  # (a generic's arguments, as its calls name them)
        parts.append(text)
        x = "&x.to_vec()" if data == "&Vec<f64>" else "x"
        dx = "&mut dx.to_vec()" if data == "&Vec<f64>" else "dx"
        if kind == "by value":  # (its gradient returned: copied into the check's shadow)
            f, fwd = f"|x, q| f{k}({x}, *q)", f"|x, q, tx, tq| f{k}_fwd({x}, {x.replace('x', 'tx')}, *q, *tq)"
            grad = f"|x, q, dx, dq| {{ let (_, g) = f{k}_grad({x}, {dx}, *q, 1.0); *dq = g; }}"
            if data == "&Vec<f64>":
                grad = (f"|x, q, dx, dq| {{ let mut v = dx.to_vec(); let (_, g) = f{k}_grad(&x.to_vec(), &mut v, *q, "
                        f"1.0); *dq = g; dx.copy_from_slice(&v); }}")
        elif kind.startswith("buffer"):  # (each call from the same state, the state the function's own)
            state = "let mut s = [0.25, -0.5, 0.75];"
            arg, u = ("s.as_mut_ptr()", "unsafe ") if kind == "buffer raw" else ("&mut s", "")
            f = f"|x, q| {{ {state} {u}{{ f{k}({x}, q, {arg}) }} }}"
            grad = f"|x, q, dx, dq| {{ {state} {u}{{ f{k}_grad({x}, {dx}, q, dq, {arg}, 1.0); }} }}"
            fwd = f"|x, q, tx, tq| {{ {state} {u}{{ f{k}_fwd({x}, {x.replace('x', 'tx')}, q, tq, {arg}) }} }}"
        elif kind == "callback":  # (checked with each function it may be given)
            for j in range(2):
                calls.append(f'    check("f{k}.{j}", &|x, q| f{k}(x, q, pick{k}({j})), '
                             f'&|x, q, dx, dq| {{ f{k}_grad(x, dx, q, dq, pick{k}({j}), 1.0); }}, '
                             f'&|x, q, tx, tq| f{k}_fwd(x, tx, q, tq, pick{k}({j})));')
            continue
        elif method:
            f, grad = f"|x, q| q.m{k}{at}({x})", f"|x, q, dx, dq| {{ q.m{k}_grad{at}(dq, {x}, {dx}, 1.0); }}"
            fwd = f"|x, q, tx, tq| q.m{k}_fwd{at}(tq, {x}, {x.replace('x', 'tx')})"
        elif kind.startswith("split"):  # (the forward sweep's tape, reversed: the gradient)
            f, fwd = f"|x, q| f{k}({x}, q)", f"|x, q, tx, tq| f{k}_fwd({x}, {x.replace('x', 'tx')}, q, tq)"
            grad = f"|x, q, dx, dq| {{ let (_, tape) = f{k}_split_forward({x}, {dx}, q, dq); tape.reverse(1.0); }}"
            if data == "&Vec<f64>":
                grad = (f"|x, q, dx, dq| {{ let mut v = dx.to_vec(); {{ let (_, tape) = f{k}_split_forward("
                        f"&x.to_vec(), &mut v, q, dq); tape.reverse(1.0); }} dx.copy_from_slice(&v); }}")
        else:
            f, grad = f"|x, q| f{k}{at}({x}, q)", f"|x, q, dx, dq| {{ f{k}_grad{at}({x}, {dx}, q, dq, 1.0); }}"
            fwd = f"|x, q, tx, tq| f{k}_fwd{at}({x}, {x.replace('x', 'tx')}, q, tq)"
        if data == "&Vec<f64>" and kind not in ("by value", "split", "split+hvp"):  # (a shadow Vec: copied back)
            grad = ("|x, q, dx, dq| { let mut v = dx.to_vec(); "
                    + (f"q.m{k}_grad{at}(dq, &x.to_vec(), &mut v, 1.0);" if method else
                       f"let mut s = [0.25, -0.5, 0.75]; f{k}_grad(&x.to_vec(), &mut v, q, dq, &mut s, 1.0);"
                       if kind == "buffer" else
                       f"let mut s = [0.25, -0.5, 0.75]; unsafe {{ f{k}_grad(&x.to_vec(), &mut v, q, dq, "
                       f"s.as_mut_ptr(), 1.0) }};" if kind == "buffer raw" else
                       f"f{k}_grad{at}(&x.to_vec(), &mut v, q, dq, 1.0);")
                    + " dx.copy_from_slice(&v); }")
        calls.append(f'    check("{"m" if method else "f"}{k}", &{f}, &{grad}, &{fwd});')
        if kind.endswith("hvp"):  # (the gradient's tangents: d2_d_x, d2_d_q)
            if data == "&Vec<f64>":
                hvp = (f"|x, q, tx, tq, hx, hq| {{ let (mut g, mut h) = (vec![0.0; {N}], vec![0.0; {N}]); "
                       f"let mut gq = Params {{ p: q.p.clone() }}; f{k}_hvp(&x.to_vec(), &tx.to_vec(), &mut g, &mut h, "
                       f"q, tq, &mut gq, hq, 1.0); hx.copy_from_slice(&h); }}")
            else:
                hvp = (f"|x, q, tx, tq, hx, hq| {{ let (mut g, mut gq) = ([0.0; {N}], Params {{ p: q.p.clone() }}); "
                       f"f{k}_hvp(x, tx, &mut g, hx, q, tq, &mut gq, hq, 1.0); }}")
            calls.append(f'    check_hvp("f{k}", &{grad}, &{hvp});')
    parts.append('include!(concat!(env!("CARGO_MANIFEST_DIR"), "/target/adgen/model.adgen.rs"));\n')
    return {
        "Cargo.toml": '[package]\nname = "fz"\nversion = "0.1.0"\nedition = "2021"\n\n[workspace]\n',
        "build.rs": ('fn main() {\n    println!("cargo:rustc-link-search=native={}/target/adgen", '
                     'env!("CARGO_MANIFEST_DIR"));\n    println!("cargo:rustc-link-lib=static=fz_adgen");\n}\n'),
        "src/lib.rs": "pub mod model;\npub mod util;\n",
        "src/util.rs": util,
        "src/model.rs": "\n".join(parts),
        "src/main.rs": DRIVER.format(crate="fz", n=N, calls="\n".join(calls),
                                     make="Vec::from" if layout == "vec" else ""),
    }


_LOCATED = re.compile(r"^src/\w+\.rs:\d+:\d+: error: cannot differentiate (.*?) in function", re.M)


def run_crate(files: dict[str, str], work: Path, cargo_folder: str | None) -> tuple[list[str], int, int, list[str]]:
    """Builds and runs one crate: its problems (a failed build that is not a located refusal,
    wrong derivatives), how many functions were right, how many inconclusive, and what adgen
    refused (a located error in the crate's file, naming what it cannot differentiate)."""
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    env = dict(os.environ, CARGO_TERM_COLOR="never")
    env["PATH"] = os.pathsep.join([*([cargo_folder] if cargo_folder else []), str(Path(sys.executable).parent),
                                   env["PATH"]])
    if cargo_folder:
        env["RUSTC"] = str(Path(cargo_folder) / "rustc")
    built = subprocess.run(["cargo", "adgen", "build", "-q"], cwd=work, env=env, capture_output=True, text=True)
    if built.returncode != 0:
        refused = _LOCATED.findall(built.stderr)
        if built.returncode == 1 and refused and "internal error" not in built.stderr:
            return [], 0, 0, refused
        return [f"cargo adgen build failed:\n{built.stderr[-3000:]}"], 0, 0, []
    ran = subprocess.run(["cargo", "run", "-q"], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    if ran.returncode != 0:
        return [f"cargo run failed ({ran.returncode}):\n{ran.stderr[-3000:]}{ran.stdout[-2000:]}"], 0, 0, []
    lines = ran.stdout.splitlines()
    wrong = [line for line in lines if "WRONG" in line or " value " in line]
    return (["\n".join(wrong)] if wrong else [], sum(line.endswith(" ok") for line in lines),
            sum(line.endswith(" inconclusive") for line in lines), [])


def fuzz(crates: int, seed: int, functions: int = 1, cargo_folder: str | None = None, progress=None
         ) -> tuple[list[str], int, int, dict[str, int]]:
    """Runs `crates` random crates: the failures (each with the crate's model.rs), the functions
    right, the functions inconclusive, and the crates refused by what adgen refused."""
    failures, right, unsure, refusals = [], 0, 0, {}
    with tempfile.TemporaryDirectory(prefix="adgen-rust-fuzz-") as tmp:
        for c in range(crates):
            files = crate(random.Random(f"{seed}:{c}"), functions)
            work = Path(tmp) / f"crate{c}"
            work.mkdir()
            problems, ok, inconclusive, refused = run_crate(files, work, cargo_folder)
            for what in set(refused):
                refusals[what] = refusals.get(what, 0) + 1
            failures += [f"seed {seed}, crate {c}: {p}\n--- src/model.rs\n{files['src/model.rs']}\n--- src/util.rs\n"
                         f"{files['src/util.rs']}" for p in problems]
            right, unsure = right + ok, unsure + inconclusive
            if progress:
                progress(c + 1, len(failures), right, unsure)
    return failures, right, unsure, refusals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crates", type=int, default=10, metavar="N", help="how many crates (default 10)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--functions", type=int, default=1,
                        help="annotated functions per crate (default 1: a refusal refuses the whole crate)")
    parser.add_argument("--cargo", metavar="FOLDER", help="the folder of the cargo and rustc to use")
    args = parser.parse_args()
    failures, right, unsure, refusals = fuzz(args.crates, args.seed, args.functions, args.cargo,
                                             lambda c, bad, ok, u: print(f"{c} crates, {bad} failing, {ok} functions "
                                                                         f"right, {u} inconclusive", file=sys.stderr,
                                                                         flush=True))
    for failure in failures:
        print(failure)
    for what, n in sorted(refusals.items(), key=lambda kv: -kv[1]):
        print(f"refused in {n} crates (a located error): {what}")
    print(f"{args.crates} crates of {args.functions} functions, seed {args.seed}: {len(failures)} failing, "
          f"{right} functions right, {unsure} inconclusive, {args.crates - len(failures)} crates without a wrong "
          f"derivative or a failed build")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
