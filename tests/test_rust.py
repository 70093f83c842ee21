"""Rust sources (specs/annotations.md, "Rust sources"; specs/abi.md, "Rust"): `@diff` on Rust
functions, lowered by the user's rustc, with safe Rust wrappers in `<stem>.adgen.rs`. Each program
checks its derivatives against central finite differences (forward against reverse too) and
exits non-zero on a mismatch: scalar functions, slice loops (bounds-checked), iterator chains, a
struct of arrays, a helper function, an in-place update of a `&mut [f64]`, a panic reporting
values, f32, and widths 4 and 2; the errors for what has no C view; and the cargo example with
its build.rs. Skipped, saying why, where no rustc is installed (.ci/run installs Debian's)."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from adgen.base.toolchain import select_rustc
from conftest import no_rustc, ROOT
from adgen.base.diagnostics import display_path


pytestmark = pytest.mark.skipif(no_rustc() is not None, reason=f"no usable rustc: {no_rustc()}")


def _installed_rustcs() -> list[tuple[str, tuple[int, int]]]:
    """Each rustc on the PATH (rustup's and Debian's, say), one per version."""
    found = {}
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        path = Path(folder) / "rustc"
        if folder and path.is_file() and os.access(path, os.X_OK):
            done = subprocess.run([str(path), "--version"], capture_output=True, text=True)
            version = re.match(r"rustc (\d+)\.(\d+)", done.stdout)
            if version:
                found.setdefault((int(version[1]), int(version[2])), str(path))
    return [(path, version) for version, path in sorted(found.items())]

MODEL = r"""
//! A model written for adgen, in Rust.

/// Scalars in, one out: forward and reverse.
// @diff(mix_grad: (active, active) -> active; mix_tangent: (dual, dual) -> dual)
pub fn mix(x: f64, y: f64) -> f64 {
    (x * y).sin() + x.exp() / (1.0 + y * y)
}

fn helper(a: f64, b: f64) -> f64 {
    (a * b).tanh() + a.powi(3) * b
}

/// A loop over a slice by index (bounds-checked), calling a helper.
// @diff(chain_grad: (dup, const) -> active; chain_fwd4: forward[4] (dual, const) -> dualonly)
// @diff(chain_rev2: reverse[2] (dup, const) -> activeonly)
pub fn chain(x: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n - 1 {
        s += helper(x[i], x[i + 1]) * x[i];
    }
    s
}

/// Iterator chains: windows, zip, map, sum.
// @diff(rosen_grad: (dup) -> activeonly; rosen_fwd: (dual) -> dualonly)
pub fn rosen(x: &[f64]) -> f64 {
    x.windows(2).map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2)).sum()
}

// @diff(dot_grad: (dup, dup) -> active)
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y.sqrt()).sum()
}

/// A struct of arrays, by reference.
#[repr(C)]
pub struct Particles {
    pub x: [f64; 4],
    pub v: [f64; 4],
    pub count: u32,
}

// @diff(energy_grad: (dup, active) -> activeonly; energy_fwd: (dual, const) -> dualonly)
pub fn energy(p: &Particles, k: f64) -> f64 {
    let mut e = 0.0;
    for i in 0..p.count as usize {
        e += 0.5 * p.v[i] * p.v[i] + k * p.x[i].cos();
    }
    e
}

/// An update in place: the shadow holds the output's seed and comes back holding the input's gradient.
// @diff(relax_grad: (dup, active); relax_fwd: (dual, dual))
pub fn relax(u: &mut [f64], w: f64) {
    for i in 1..u.len() {
        u[i] = (1.0 - w) * u[i] + w * u[i - 1].sin();
    }
}

/// A panic reporting the values it checks: its path carries no derivatives.
// @diff(checked_grad: (dup) -> activeonly)
pub fn checked(x: &[f64]) -> f64 {
    assert!(x[0] > -100.0, "x[0] = {} is too small", x[0]);
    x[0] * x[1]
}

/// f32.
// @diff(norm32_grad: (dup) -> activeonly)
pub fn norm32(x: &[f32]) -> f32 {
    x.iter().map(|v| v * v).sum::<f32>().sqrt()
}
"""

# A program's checks: a value against what it should be, central differences (shared by other tests).
CHECKS = r"""
macro_rules! check {
    ($got:expr, $want:expr) => {{
        let (g, w): (f64, f64) = ($got as f64, $want as f64);
        if !((g - w).abs() <= 1e-5 * (1.0 + w.abs())) {
            eprintln!("line {}: {} = {}, want {}", line!(), stringify!($got), g, w);
            std::process::exit(1);
        }
    }};
}

fn fd(f: &dyn Fn(&[f64]) -> f64, x: &[f64], i: usize) -> f64 {
    let h = 1e-6;
    let (mut up, mut down) = (x.to_vec(), x.to_vec());
    up[i] += h;
    down[i] -= h;
    (f(&up) - f(&down)) / (2.0 * h)
}
"""

MAIN = r"""
mod model;
use model::*;
include!(concat!(env!("ADGEN_OUT"), "/model.adgen.rs"));
""" + CHECKS + r"""
fn main() {
    let (x, y) = (0.7, -0.4);
    let (f, dx, dy) = mix_grad(x, y, 1.0);
    check!(f, mix(x, y));
    check!(dx, fd(&|v| mix(v[0], v[1]), &[x, y], 0));
    check!(dy, fd(&|v| mix(v[0], v[1]), &[x, y], 1));
    let (f2, t) = mix_tangent(x, 0.3, y, -2.0);
    check!(f2, f);
    check!(t, 0.3 * dx - 2.0 * dy);

    let v = [0.3, -0.7, 1.1, 0.5, 0.9];
    let n = v.len();
    let mut g = [0.0; 5];
    let c = chain_grad(&v, &mut g, n, 1.0);
    check!(c, chain(&v, n));
    let eye: Vec<Vec<f64>> = (0..5).map(|i| (0..5).map(|j| if i == j { 1.0 } else { 0.0 }).collect()).collect();
    let t4 = chain_fwd4(&v, &eye[0], &eye[1], &eye[2], &eye[3], n);
    for i in 0..5 {
        check!(g[i], fd(&|w| chain(w, n), &v, i));
        if i < 4 {
            check!(t4[i], g[i]);
        }
    }
    let (mut g0, mut g1) = ([0.0; 5], [0.0; 5]);
    chain_rev2(&v, &mut g0, &mut g1, n, 1.0, 2.0);
    for i in 0..5 {
        check!(g0[i], g[i]);
        check!(g1[i], 2.0 * g[i]);
    }

    let mut gr = [0.0; 5];
    rosen_grad(&v, &mut gr, 1.0);
    for i in 0..5 {
        check!(gr[i], fd(&rosen, &v, i));
        check!(rosen_fwd(&v, &eye[i]), gr[i]);
    }
    let (a, b) = ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]);
    let (mut da, mut db) = ([0.0; 3], [0.0; 3]);
    check!(dot_grad(&a, &mut da, &b, &mut db, 1.0), dot(&a, &b));
    for i in 0..3 {
        check!(da[i], b[i].sqrt());
        check!(db[i], a[i] * 0.5 / b[i].sqrt());
    }

    let p = Particles { x: [1.0, 2.0, 3.0, 4.0], v: [0.5, -0.5, 1.0, 2.0], count: 3 };
    let mut dp = Particles { x: [0.0; 4], v: [0.0; 4], count: 0 };
    let dk = energy_grad(&p, &mut dp, 0.7, 1.0);
    for i in 0..4 {
        let live = if i < 3 { 1.0 } else { 0.0 };
        check!(dp.x[i], -0.7 * p.x[i].sin() * live);
        check!(dp.v[i], p.v[i] * live);
    }
    check!(dk, p.x[..3].iter().map(|x| x.cos()).sum::<f64>());
    let dir = Particles { x: [1.0, 0.0, 0.0, 0.0], v: [0.0, 1.0, 0.0, 0.0], count: 0 };
    check!(energy_fwd(&p, &dir, 0.7), dp.x[0] + dp.v[1]);

    let u0 = [0.2, 0.4, -0.1, 0.8];
    let relaxed = |w: &[f64]| { let mut u = w.to_vec(); relax(&mut u, 0.3); u[3] };
    let mut u = u0;
    let mut du = [0.0, 0.0, 0.0, 1.0];  // the seed: d(u[3] after)
    let dw = relax_grad(&mut u, &mut du, 0.3);
    for i in 0..4 {
        check!(du[i], fd(&relaxed, &u0, i));
    }
    let by_w = |w: &[f64]| { let mut u = u0; relax(&mut u, w[0]); u[3] };
    check!(dw, fd(&by_w, &[0.3], 0));
    let (mut u2, mut t2) = (u0, [0.0, 1.0, 0.0, 0.0]);
    relax_fwd(&mut u2, &mut t2, 0.3, 0.0);
    check!(t2[3], fd(&relaxed, &u0, 1));

    let mut gc = [0.0; 2];
    checked_grad(&[2.0, 3.0], &mut gc, 1.0);
    check!(gc[0], 3.0);
    check!(gc[1], 2.0);

    let v32 = [3.0f32, 4.0];
    let mut g32 = [0.0f32; 2];
    norm32_grad(&v32, &mut g32, 1.0);
    check!(g32[0], 0.6);
    check!(g32[1], 0.8);
    println!("ok");
}
"""


def _build_model(tmp_path: Path, adgen, model: str = MODEL) -> Path:
    (tmp_path / "model.rs").write_text(model)
    out = tmp_path / "out"
    result = adgen("build", "-q", tmp_path / "model.rs", "-o", out)
    assert result.status == 0, result.err
    return out


def _run_with(tmp_path: Path, adgen, source: str, main: str, rustc: str = "rustc") -> str:
    """`source` built as m.rs by adgen, a `main.rs` including it and its wrappers compiled with
    the object by `rustc` and run: its output (each test's prints "ok" when its checks hold)."""
    (tmp_path / "m.rs").write_text(source)
    result = adgen("build", "-q", tmp_path / "m.rs", "-o", tmp_path / "out")
    assert result.status == 0, result.err
    (tmp_path / "main.rs").write_text(main)
    done = subprocess.run([rustc, "--edition=2021", "-O", "main.rs", "-C", f"link-arg={tmp_path / 'out' / 'm.adgen.o'}",
                           "-C", "link-arg=-lm", "-o", "prog"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def _refused_at(tmp_path: Path, adgen, code: str, message: str, at: str) -> None:
    """`code` as m.rs is refused with `message`, the error standing where `at` starts."""
    (tmp_path / "m.rs").write_text(code)
    result = adgen("generate", tmp_path / "m.rs", "-o", tmp_path / "out")
    assert result.status == 1 and message in result.err, result.err
    line, col = map(int, re.search(r"m\.rs:(\d+):(\d+): error", result.err).groups())
    assert code.split("\n")[line - 1][col - 1:].startswith(at), result.err
    assert not (tmp_path / "out").exists()  # (nothing written)


@pytest.mark.slow
def test_forward_reverse_and_batched_against_finite_differences(tmp_path, adgen):
    out = _build_model(tmp_path, adgen)
    assert {p.name for p in out.iterdir()} >= {"model.adgen.rs", "model.adgen.o", "model.adgen.c"}
    (tmp_path / "main.rs").write_text(MAIN)
    rustc = select_rustc()
    env = dict(os.environ, ADGEN_OUT=str(out))
    done = subprocess.run([*rustc.command, "--edition=2021", "-O", "main.rs", "-C",
                           f"link-arg={out / 'model.adgen.o'}", "-o", "prog"], cwd=tmp_path, capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "ok\n", run.stdout + run.stderr


@pytest.mark.slow
def test_the_wrappers_follow_std_autodiff(tmp_path, adgen):
    """A slice's shadow is a slice (mutable in reverse mode), checked for length; active scalars'
    gradients come after the primal result in a tuple; width N gives N shadows."""
    text = (_build_model(tmp_path, adgen) / "model.adgen.rs").read_text()
    assert "pub fn mix_grad(x: f64, y: f64, d_ret: f64) -> (f64, f64, f64)" in text
    assert "pub fn chain_grad(x: &[f64], d_x: &mut [f64], n: usize, d_ret: f64) -> f64" in text
    assert "pub fn chain_fwd4(x: &[f64], d_x_0: &[f64], d_x_1: &[f64], d_x_2: &[f64], d_x_3: &[f64], n: usize) " \
           "-> [f64; 4]" in text
    assert "pub fn relax_grad(u: &mut [f64], d_u: &mut [f64], w: f64) -> f64" in text
    assert "pub fn energy_grad(p: &Particles, d_p: &mut Particles, k: f64, d_ret: f64) -> f64" in text
    assert 'assert_eq!(d_x.len(), x.len(),' in text


ERRORS = [
    ("pub fn f(x: impl Into<f64>) -> f64 { x.into() }", "(active) -> active", "'f' takes an `impl Trait` parameter",
     "impl Into<f64>)"),
    ("pub fn f<'a>(x: &'a f64, g: &dyn Fn(f64) -> f64) -> f64 { g(*x) }", "(dup, const) -> active",
     "adgen cannot pass a closure as a trait object ('dyn Fn(f64) -> f64')", "dyn Fn(f64) -> f64)"),
    ("pub fn f(x: f64) -> impl Into<f64> { x }", "(active) -> active", "a result of type 'impl Into<f64>'",
     "impl Into<f64> {"),
    ("pub fn f(x: Vec<f64>) -> f64 { x[0] }", "(dup) -> active", "adgen cannot pass a Vec by value ('Vec<f64>')",
     "Vec<f64>"),
    ("pub fn f(x: &str) -> f64 { 0.0 }", "(const) -> active", "adgen cannot pass a pointer to 'str' "
     "(pointers to floats, integers, arrays of them, structs, Vec<f64> and other sized types by path are)", "str"),
    ("pub fn f(p: Pair) -> f64 { p.a }", "(active) -> active", "a struct by value ('Pair') that is not Copy", "Pair)"),
    ("pub fn f(p: Loose) -> f64 { p.a }", "(active) -> active", "a struct by value ('Loose') that is not Copy",
     "Loose)"),
    ("pub fn f(x: [f64; 3]) -> f64 { x[0] }", "(dup) -> active", "'x' is passed by value: its activity is active",
     "dup"),
    ("pub fn f(x: &[f64], k: f64) -> f64 { x[0] * k }", "(dup) -> active", "'g' lists 1 activity, but 'f' takes 2",
     "(dup)"),
    ("pub fn f(x: &[bool]) -> f64 { 0.0 }", "(dup) -> active", "activity 'dup' needs a pointer to floating-point data "
     "(float, double, or structs or arrays holding them), but parameter 'x' has type '&[bool]'", "dup"),
    ("pub fn f(x: Option<f64>) -> f64 { 0.0 }", "split (const) -> active",
     "adgen cannot pass the type 'Option<f64>'", "Option"),
    ("pub fn f(x: &[f64]) -> (f64, f64) { (x[0], x[1]) }", "(dup) -> active", "a result of type '(f64, f64)'",
     "(f64, f64)"),
]


@pytest.mark.parametrize("code, entry, message, at", ERRORS, ids=[e[2][:24] for e in ERRORS])
def test_what_has_no_c_view_is_a_located_error(tmp_path, adgen, code, entry, message, at):
    text = ("#[repr(C)]\npub struct Pair { pub a: f64, pub b: f64 }\npub struct Loose { pub a: f64 }\n\n"
            f"// @diff(g: {entry})\n{code}\n")
    src = tmp_path / "bad.rs"
    src.write_text(text)
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1 and message in result.err, result.err
    lines = result.err.split("\n")
    assert lines[0].startswith("bad.rs:") or "/bad.rs:" in lines[0], result.err
    caret, source_line = lines[2], lines[1]
    assert source_line[caret.index("^"):].startswith(at), result.err
    assert not (tmp_path / "out").exists()


def test_generics_of_every_form_are_read_and_need_named_instantiations(tmp_path, adgen):
    """Bounds with type arguments, lifetimes beside type parameters, const generics with defaults,
    `where` clauses and higher-ranked bounds are read: an entry of a generic function without
    generic arguments is an error at its name; an `impl Trait` parameter, which nothing can name,
    is an error where it stands; generic arguments before a function that is not generic, of the
    wrong number, naming a type adgen cannot pass, or instantiations of one derived function with
    different activities, are errors at the entry."""
    src = tmp_path / "generic.rs"
    src.write_text("""// @diff(a_grad: (active) -> active)
pub fn a<T: Into<f64> + Copy>(x: T) -> f64 { x.into() }
// @diff(b_grad: (dup, active) -> active)
pub fn b<'a, T: ?Sized, const N: usize = 3>(x: &'a [f64; N], k: f64) -> f64 where T: Iterator<Item = f64>, 'a: 'a { x[0] * k }
// @diff(c_grad: (active, const) -> active)
pub fn c(x: f64, f: &mut impl for<'b> FnMut(&'b f64) -> f64) -> f64 { f(&x) }
// @diff(d_grad<f64>: (active) -> active)
pub fn d(x: f64) -> f64 { x }
// @diff(e_grad<f64, f32>: (active) -> active; e_grad<String>: (active) -> active)
pub fn e<T: Into<f64>>(x: T) -> f64 { x.into() }
// @diff(g_grad<f64>: (active) -> active; g_grad<f32>: forward (dual) -> dual)
pub fn g<T: Copy>(x: T) -> T { x }
""")
    result = adgen("generate", src, "-o", tmp_path / "out")
    assert result.status == 1, result.err
    located = [line.split(": error: ")[0].rsplit(":", 2)[-2:] + [line.split(": error: ")[1]]
               for line in result.err.splitlines() if ": error: " in line]
    assert located == [
        ["6", "26", "'c' takes an `impl Trait` parameter, which no instantiation can name: write a generic "
                    "parameter for it"],
        ["1", "10", "'a' is a generic function: name the instantiation each entry derives, as `a_grad<f64>: ...`"],
        ["3", "10", "'b' is a generic function: name the instantiation each entry derives, as `b_grad<f64>: ...`"],
        ["7", "16", "'d' is not generic: its entries name no generic arguments"],
        ["9", "16", "cannot instantiate 'e<f64, f32>': 'e' takes 1 generic argument (T), not 2"],
        ["9", "54", "cannot instantiate 'e<String>': adgen cannot pass a struct by value ('String') that is not Copy: "
                    "adgen passes it by its address, copying it (#[derive(Clone, Copy)] it, or pass a reference, &String)"],
        ["11", "43", "'g_grad' is derived at several instantiations: each must have the same mode, width and "
                     "activities (the Rust function dispatching to them has one signature)"]], result.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, message", [
    ("// @diff(g: (active) -> active)\npub fn f(x: f64) -> f64 { x * undefined_thing }\n",
     "broken.rs:2:31: error: cannot find value `undefined_thing` in this scope"),
    ("// @diff(g: (active) -> active)\npub fn f(x: f64) -> f64 { x * x }\npub fn h(x: f64) -> f64 { x\n",
     "broken.rs:3:28: error: this file contains an unclosed delimiter"),
], ids=["an undefined name", "cut off"])
@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
def test_what_rustc_refuses_is_its_error(tmp_path, adgen, rustc_named, rustc, version, text, message):
    """rustc's errors, placed in the user's file at a line it has (not in the code adgen appends
    to its copy of the source); nothing written. With each rustc (1.63's JSON has no
    `$message_type`)."""
    rustc_named(rustc)
    src = tmp_path / "broken.rs"
    src.write_text(text)
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1 and result.err.startswith(f"{display_path(tmp_path)}/{message}"), result.err
    assert "adgen-" not in result.err and "aborting" not in result.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["generate", "build"])
def test_a_source_that_is_not_utf8_is_an_error_at_its_first_such_byte(tmp_path, adgen, command):
    """rustc reads UTF-8 only: generate wrote wrappers for such a source, and build failed with an
    internal error reading it."""
    src = tmp_path / "latin.rs"
    src.write_bytes(b"// @diff(g: (active) -> active)\npub fn f(x: f64) -> f64 { x * x } // caf\xe9\n")
    result = adgen(command, src, "-o", tmp_path / "out")
    assert result.status == 1, result.err
    assert result.err.startswith(f"{display_path(tmp_path)}/latin.rs:2:41: error: a Rust source must be UTF-8: this byte is not")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_cargo_example_builds_and_runs(tmp_path):
    """examples/rust: a cargo project whose build.rs runs adgen (found as $ADGEN, else on the PATH)."""
    cargo = shutil.which("cargo", path=os.environ.get("PATH", "") + os.pathsep + str(Path.home() / ".cargo" / "bin"))
    if cargo is None:
        pytest.skip("no cargo (.ci/run installs Debian's)")
    project = tmp_path / "rust"
    shutil.copytree(ROOT / "examples" / "rust", project, ignore=shutil.ignore_patterns("target", "Cargo.lock"))
    adgen_exe = shutil.which("adgen", path=str(Path(sys.executable).parent)) or "adgen"
    env = dict(os.environ, ADGEN=adgen_exe, CARGO_TARGET_DIR=str(tmp_path / "target"), CARGO_NET_OFFLINE="true")
    done = subprocess.run([cargo, "run", "--release", "--quiet"], cwd=project, capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MISMATCH" not in done.stdout and done.stdout.count(" ok") >= 4, done.stdout


# Every shape of wrapper: a struct by reference, a slice updated in place with nothing returned
# (no `-> ()`), raw pointers (an `unsafe fn`), a reference's interleaved lanes (`&[f64; N]`).
SHAPES = r"""
#[repr(C)]
pub struct Pair {
    pub a: f64,
    pub b: f64,
}

// @diff(pair_grad: (dup, active) -> active; pair_fwd: (dual, dual) -> dual; pair_split: split (dup, active) -> active)
pub fn pair(p: &Pair, k: f64) -> f64 {
    p.a * p.b * k
}

// @diff(scale_grad: (dup, active); scale_fwd: forward[2] (dual, dual))
pub fn scale(u: &mut [f64], w: f64) {
    for v in u.iter_mut() {
        *v *= w;
    }
}

/// # Safety
/// `p` points to `n` values.
// @diff(raw_grad: (dup, const) -> active; raw_fwd: forward[2] (dualv, const) -> dual)
// @diff(raw_split: split[2] (dup, const) -> activeonly)
#[allow(unused_unsafe)]
pub unsafe fn raw(p: *const f64, n: usize) -> f64 {
    unsafe { *p * *p.add(n - 1) }
}

// @diff(one_rev2: reverse[2] (dupv) -> activeonly; one_fwd4: forward[4] (dualv) -> dual)
pub fn one(p: &f64) -> f64 {
    p.sin()
}
"""

# Included at the crate's root and in a private module (where unused wrappers are dead code).
SHAPES_CRATE = """
#[path = "shapes.rs"]
pub mod shapes;
pub use shapes::*;
include!("out/shapes.adgen.rs");

mod private {
    use super::shapes::*;
    include!("out/shapes.adgen.rs");
}
"""


def _editions(version: tuple[int, int]) -> list[str]:
    return [e for e, since in (("2015", (1, 0)), ("2018", (1, 31)), ("2021", (1, 56)), ("2024", (1, 85)))
            if version >= since]


@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
@pytest.mark.slow
def test_the_wrappers_compile_without_warnings_in_every_edition(tmp_path, adgen, rustc_named, rustc, version):
    """`unsafe extern "C"` where the rustc takes it (edition 2024 requires it), `extern "C"` where
    it cannot parse it (1.63); `-D warnings`, and clippy's where it is installed beside the rustc."""
    rustc_named(rustc)
    (tmp_path / "shapes.rs").write_text(SHAPES)
    (tmp_path / "lib.rs").write_text(SHAPES_CRATE)
    result = adgen("generate", tmp_path / "shapes.rs", "-o", tmp_path / "out")
    assert result.status == 0, result.err
    text = (tmp_path / "out" / "shapes.adgen.rs").read_text()
    assert "pub fn scale_fwd(u: &mut [f64], d_u_0: &mut [f64], d_u_1: &mut [f64], w: f64, d_w_0: f64, d_w_1: f64) {" \
        in text
    assert "pub unsafe fn raw_grad(p: *const f64, d_p: *mut f64, n: usize, d_ret: f64) -> f64" in text
    assert "pub fn one_rev2(p: &f64, d_p: &mut [f64; 2], d_ret_0: f64, d_ret_1: f64)" in text
    assert "pub fn one_fwd4(p: &f64, d_p: &[f64; 4]) -> [f64; 5]" in text  # (the result first: std::autodiff's)
    clippy = Path(rustc).with_name("clippy-driver")
    drivers = [rustc] + ([str(clippy)] if clippy.is_file() else [])
    for edition in _editions(version):
        for driver in drivers:
            done = subprocess.run([driver, f"--edition={edition}", "--crate-type=lib", "-D", "warnings",
                                   "--emit=metadata", "lib.rs", "-o", f"lib{edition}.rmeta"], cwd=tmp_path,
                                  capture_output=True, text=True)
            assert done.returncode == 0, f"{driver} --edition={edition}:\n{done.stderr}"


def _cargo(minimum: tuple[int, int]) -> str:
    cargo = shutil.which("cargo", path=os.environ.get("PATH", "") + os.pathsep + str(Path.home() / ".cargo" / "bin"))
    if cargo is None:
        pytest.skip("no cargo (.ci/run installs Debian's)")
    version = re.match(r"cargo (\d+)\.(\d+)", subprocess.run([cargo, "--version"], capture_output=True,
                                                              text=True).stdout)
    if not version or (int(version[1]), int(version[2])) < minimum:
        pytest.skip(f"cargo {version and version[0]} is older than {minimum[0]}.{minimum[1]}")
    return cargo


@pytest.mark.slow
def test_an_edition_2024_crate_builds_and_runs_without_warnings(tmp_path, rustc_named):
    """examples/rust as `cargo new` makes a crate today: edition 2024, the source lowered in that
    edition too (ADGEN_RUSTFLAGS), no warnings from rustc or clippy."""
    cargo = _cargo((1, 85))
    project = tmp_path / "rust"
    shutil.copytree(ROOT / "examples" / "rust", project, ignore=shutil.ignore_patterns("target", "Cargo.lock"))
    manifest = project / "Cargo.toml"
    manifest.write_text(manifest.read_text().replace('edition = "2021"', 'edition = "2024"'))
    assert 'edition = "2024"' in manifest.read_text()
    adgen_exe = shutil.which("adgen", path=str(Path(sys.executable).parent)) or "adgen"
    env = dict(os.environ, ADGEN=adgen_exe, CARGO_TARGET_DIR=str(tmp_path / "target"), CARGO_NET_OFFLINE="true",
               ADGEN_RUSTFLAGS="--edition=2024", RUSTFLAGS="-D warnings")
    env.pop("ADGEN_RUSTC", None)
    clippy = subprocess.run([cargo, "clippy", "--version"], capture_output=True, text=True, env=env)
    if clippy.returncode == 0:
        done = subprocess.run([cargo, "clippy", "--quiet", "--all-targets", "--", "-D", "warnings"], cwd=project,
                              capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([cargo, "run", "--release", "--quiet"], cwd=project, capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MISMATCH" not in done.stdout and done.stdout.count(" ok") >= 4, done.stdout


def test_what_cannot_be_differentiated_is_an_error_at_the_rust_line(tmp_path, adgen):
    src = tmp_path / "ext.rs"
    src.write_text("extern \"C\" {\n    fn mystery(x: f64) -> f64;\n}\n\n// @diff(g_grad: (active) -> active)\n"
                   "pub fn g(x: f64) -> f64 {\n    let y = x * x;\n    unsafe { mystery(y) }\n}\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1, result.err
    assert "ext.rs:8:" in result.err and "a call to 'mystery'" in result.err and "in function 'g'" in result.err
    assert "unsafe { mystery(y) }" in result.err


CHECKPOINTED = r"""
/// Diffusion in place over many steps, its loops checkpointed within 2 KiB (bounds checks and all).
// @diff(heat_grad: (dup, dup, const) -> active within 2KiB; heat_full: (dup, dup, const) -> active)
pub fn heat(u: &mut [f64], tmp: &mut [f64], steps: i32) -> f64 {
    let n = u.len();
    for _ in 0..steps {
        for i in 1..n - 1 {
            tmp[i] = u[i] + 0.2 * (u[i - 1] - 2.0 * u[i] + u[i + 1]) + 0.05 * u[i] * u[i];
        }
        for i in 1..n - 1 {
            u[i] = tmp[i];
        }
    }
    let mut s = 0.0;
    for i in 0..n {
        s += u[i] * u[i] * (i as f64 + 1.0);
    }
    s
}
"""

CHECKPOINTED_MAIN = r"""
mod model;
use model::*;
include!(concat!(env!("ADGEN_OUT"), "/model.adgen.rs"));

fn main() {
    let start: Vec<f64> = (0..16).map(|i| 0.3 + 0.2 * (1.3 * i as f64).sin()).collect();
    let (mut u, mut du, mut tmp, mut dt) = (start.clone(), vec![0.0; 16], vec![0.0; 16], vec![0.0; 16]);
    let got = heat_grad(&mut u, &mut du, &mut tmp, &mut dt, 40, 1.0);
    let (mut u2, mut du2, mut tmp2, mut dt2) = (start.clone(), vec![0.0; 16], vec![0.0; 16], vec![0.0; 16]);
    let want = heat_full(&mut u2, &mut du2, &mut tmp2, &mut dt2, 40, 1.0);
    assert_eq!(got, want);
    assert_eq!(u, u2);
    for i in 0..16 {
        assert!((du[i] - du2[i]).abs() <= 1e-12 * du2[i].abs(), "{} {} {}", i, du[i], du2[i]);
        let h = 1e-6;
        let (mut up, mut down) = (start.clone(), start.clone());
        up[i] += h;
        down[i] -= h;
        let fd = (heat(&mut up, &mut vec![0.0; 16], 40) - heat(&mut down, &mut vec![0.0; 16], 40)) / (2.0 * h);
        assert!((du[i] - fd).abs() <= 1e-5 * (1.0 + fd.abs()), "{} {} {}", i, du[i], fd);
    }
    println!("ok");
}
"""


@pytest.mark.slow
def test_loops_checkpointed_within_a_budget(tmp_path, adgen):
    """`within SIZE` on a Rust function (specs/abi.md, "Memory budgets"): its loops' bounds
    checks panic out of them, and their addresses are still bounded."""
    out = _build_model(tmp_path, adgen, CHECKPOINTED)
    (tmp_path / "main.rs").write_text(CHECKPOINTED_MAIN)
    env = dict(os.environ, ADGEN_OUT=str(out), ADGEN_CHECKPOINTS="1")
    done = subprocess.run([*select_rustc().command, "--edition=2021", "-O", "main.rs", "-C",
                           f"link-arg={out / 'model.adgen.o'}", "-o", "prog"], cwd=tmp_path, capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True, env=env)
    assert run.returncode == 0 and run.stdout == "ok\n", run.stdout + run.stderr
    assert "adgen: checkpointed loop at model.rs:6: 40 iterations, " in run.stderr, run.stderr


ATTRIBUTES = r"""
#[adgen::diff(loss_grad: (dup, active) -> active;
              loss_dir: forward (dual, const) -> dualonly)]
#[inline(never)]
pub fn loss(w: &[f64], scale: f64) -> f64 {
    w.iter().map(|x| scale * x * x * x).sum::<f64>()
}
"""

ATTRIBUTES_MAIN = r"""
mod model;
use model::loss;
include!("model.adgen.rs");

fn main() {
    let w = [0.5, -1.0, 2.0];
    let mut d_w = [0.0; 3];
    let (_, d_scale) = loss_grad(&w, &mut d_w, 2.0, 1.0);
    let want: Vec<f64> = w.iter().map(|x| 6.0 * x * x).collect();
    let along = loss_dir(&w, &[1.0, 0.0, 0.0], 2.0);
    let right = d_w.iter().zip(&want).all(|(g, e)| (g - e).abs() < 1e-12) && (along - want[0]).abs() < 1e-12
        && (d_scale - w.iter().map(|x| x * x * x).sum::<f64>()).abs() < 1e-12;
    println!("{}", if right { "ok" } else { "WRONG" });
}
"""


def test_annotations_as_attributes(tmp_path, adgen):
    """`#[adgen::diff(...)]` (adgen's crate of attributes, which rustc takes by `--extern
    adgen=...` or cargo as a path dependency) reads as the comment does, beside other
    attributes; an error in one is located at its line and column in the Rust source."""
    (tmp_path / "model.rs").write_text(ATTRIBUTES)
    (tmp_path / "main.rs").write_text(ATTRIBUTES_MAIN)
    assert adgen("build", "-q", tmp_path / "model.rs", "-o", tmp_path).status == 0
    rustc = select_rustc().command
    crate = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "--rust-crate-dir"], capture_output=True,
                           text=True, check=True).stdout.strip()
    subprocess.run([*rustc, "--edition", "2018", "--crate-type", "proc-macro", "--crate-name", "adgen",
                    os.path.join(crate, "src", "lib.rs"), "-o", str(tmp_path / "libadgen.so")], check=True)
    done = subprocess.run([*rustc, "-O", "--edition", "2021", str(tmp_path / "main.rs"), "--extern",
                           f"adgen={tmp_path / 'libadgen.so'}", "-C", f"link-arg={tmp_path / 'model.adgen.o'}",
                           "-o", str(tmp_path / "main")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert subprocess.run([str(tmp_path / "main")], capture_output=True, text=True).stdout.strip() == "ok"
    (tmp_path / "bad.rs").write_text("#[adgen::diff(f_grad: (dup) -> bogus)]\npub fn f(x: &[f64]) -> f64 { x[0] }\n")
    result = adgen("build", tmp_path / "bad.rs", "-o", tmp_path / "out")
    assert result.status == 1 and f"{display_path(tmp_path / 'bad.rs')}:1:32: error:" in result.err, result.err


@pytest.mark.parametrize("body, line", [
    ("    let (a, b) = x.split_at(x.len() / 2);\n"
     "    let (sa, sb) = std::thread::scope(|s| {\n"
     "        let h = s.spawn(|| a.iter().map(|v| v * v).sum::<f64>());\n"
     "        let sb: f64 = b.iter().map(|v| v * v).sum();\n"
     "        (h.join().unwrap(), sb)\n"
     "    });\n"
     "    sa + sb\n", 5),
    ("    let v: Vec<f64> = x.to_vec();\n"
     "    let h = std::thread::spawn(move || v.iter().map(|t| t * t).sum::<f64>());\n"
     "    h.join().unwrap() + x[0]\n", 4),
])
def test_threads_are_a_located_error_that_says_so(tmp_path, adgen, body, line):
    """Rust's threads (std::thread::scope, spawn) where a derivative would meet them: an error at
    the user's line, with a note saying that derivatives do not cross threads."""
    src = tmp_path / "par.rs"
    src.write_text("// @diff(par_grad: (dup) -> active)\npub fn par(x: &[f64]) -> f64 {\n" + body + "}\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1 and "Traceback" not in result.err
    assert f"{display_path(src)}:{line}:" in result.err, result.err
    assert "this line runs code on another thread (Rust's std::thread): adgen does not differentiate across " \
        "threads" in result.err, result.err
    assert not (tmp_path / "out").exists()


METHODS = r"""
#[repr(C)]
pub struct Model {
    pub w: [f64; 3],
    pub bias: f64,
}

pub trait Loss {
    fn loss(&self, x: &[f64], y: &[f64]) -> f64;
}

impl Loss for Model {
    /// The squared error of the linear model on the points (a trait's method).
    // @diff(loss_grad: (dup, const, const) -> active; loss_dir: forward (dual, const, const) -> dualonly)
    fn loss(&self, x: &[f64], y: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..y.len() {
            let p = self.w[0] * x[3 * i] + self.w[1] * x[3 * i + 1] + self.w[2] * x[3 * i + 2] + self.bias;
            s += (p - y[i]) * (p - y[i]) + self.bias.sin();
        }
        s
    }
}

impl Model {
    /// An inherent method that changes the object.
    // @diff(scale_grad: (dup, dup) -> activeonly)
    pub fn scale(&mut self, by: &[f64]) -> f64 {
        for k in 0..3 {
            self.w[k] *= by[k];
        }
        self.w[0] * self.w[1] * self.w[2]
    }
}
"""

METHODS_MAIN = r"""
mod model;
use model::*;
include!("out/model.adgen.rs");

fn main() {
    let m = Model { w: [0.5, -1.0, 2.0], bias: 0.3 };
    let (x, y) = ([1.0, 2.0, 0.5, -1.0, 0.0, 1.5], [0.7, 1.2]);
    let mut d = Model { w: [0.0; 3], bias: 0.0 };
    let value = m.loss_grad(&mut d, &x, &y, 1.0);
    assert!((value - m.loss(&x, &y)).abs() < 1e-12);
    let h = 1e-6;
    let mut worst: f64 = 0.0;
    for k in 0..4 {
        let mut t = Model { w: [0.0; 3], bias: 0.0 };
        let (mut up, mut down) = (Model { w: m.w, bias: m.bias }, Model { w: m.w, bias: m.bias });
        if k < 3 { up.w[k] += h; down.w[k] -= h; t.w[k] = 1.0; } else { up.bias += h; down.bias -= h; t.bias = 1.0; }
        let fd = (up.loss(&x, &y) - down.loss(&x, &y)) / (2.0 * h);
        let g = if k < 3 { d.w[k] } else { d.bias };
        worst = worst.max((fd - g).abs()).max((fd - m.loss_dir(&t, &x, &y)).abs());
    }
    let (w, by) = ([1.5, 2.0, -0.5], [2.0, 3.0, 4.0]);
    let mut m2 = Model { w, bias: 0.0 };
    let (mut d2, mut d_by) = (Model { w: [0.0; 3], bias: 0.0 }, [0.0; 3]);
    m2.scale_grad(&mut d2, &by, &mut d_by, 1.0);
    let product = w[0] * by[0] * w[1] * by[1] * w[2] * by[2];
    for k in 0..3 {
        worst = worst.max((d_by[k] - product / by[k]).abs()).max((d2.w[k] - product / w[k]).abs());
    }
    println!("{}", if worst < 1e-5 { "ok" } else { "WRONG" });
}
"""


@pytest.mark.slow
def test_methods_taking_self_by_reference(tmp_path, adgen):
    """`&self` (a trait's method) and `&mut self` (an inherent one): the object's shadow is the
    first parameter's, the wrappers are methods too; against finite differences."""
    out = _build_model(tmp_path, adgen, METHODS)
    (tmp_path / "main.rs").write_text(METHODS_MAIN)
    done = subprocess.run([*select_rustc().command, "--edition=2021", "-O", "main.rs", "-C",
                           f"link-arg={out / 'model.adgen.o'}", "-o", "prog"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "ok\n", run.stdout + run.stderr


@pytest.mark.parametrize("method, message, at", [
    ("pub fn f(self, x: f64) -> f64 { x * self.a }", "adgen cannot pass a struct by value ('Pair') that is not Copy",
     "self,"),
    ("pub fn f(self: &Self, x: f64) -> f64 { x * self.a }", "'f' takes self as a type (`self: Type`)", "self: &Self"),
])
def test_methods_adgen_cannot_pass_are_errors_at_self(tmp_path, adgen, method, message, at):
    src = tmp_path / "bad.rs"
    src.write_text(f"#[repr(C)]\npub struct Pair {{ pub a: f64, pub b: f64 }}\n\nimpl Pair {{\n"
                   f"    // @diff(g: (dup, active) -> active)\n    {method}\n}}\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1 and message in result.err, result.err
    lines = result.err.split("\n")
    assert lines[0].startswith(("bad.rs:6:", str(src) + ":6:")), result.err
    assert lines[1][lines[2].index("^"):].startswith(at), result.err


VECTORS = r"""
/// A vector made by collect (one allocation of its size), weighed against the input.
// @diff(made_grad: (dup) -> active; made_fwd: forward (dual) -> dualonly)
pub fn made(x: &[f64]) -> f64 {
    let v: Vec<f64> = x.iter().map(|a| a.sin() * 2.0).collect();
    v.iter().zip(x).map(|(a, b)| a * b).sum()
}

/// vec![0.0; n] (zeroed allocation), written by index, read in a recurrence.
// @diff(zeroed_grad: (dup) -> active; zeroed_fwd: forward (dual) -> dualonly)
pub fn zeroed(x: &[f64]) -> f64 {
    let mut w = vec![0.0; 2 * x.len()];
    for k in 1..w.len() {
        w[k] = w[k - 1] * 0.5 + (x[k / 2] * k as f64).cos();
    }
    w.iter().sum()
}
"""

GROWN = r"""
/// A vector grown by push (reallocations), then read back.
// @diff(grown_grad: (dup) -> active; grown_fwd: forward (dual) -> dualonly)
pub fn grown(x: &[f64]) -> f64 {
    let mut v = Vec::new();
    for k in 0..40 {
        v.push(x[k % x.len()] * (k as f64 + 1.0));
    }
    v.iter().map(|a| a.cos()).sum::<f64>() + v[3] * v[37]
}
"""

VECTORS_MAIN = r"""
mod model;
use model::*;
include!("out/model.adgen.rs");

fn main() {
    let x = [0.3, -1.1, 0.7, 2.0];
    let fs: Vec<(fn(&[f64]) -> f64, fn(&[f64], &mut [f64], f64) -> f64, fn(&[f64], &[f64]) -> f64)> = vec![FUNCTIONS];
    let mut worst: f64 = 0.0;
    for (f, grad, fwd) in fs {
        let mut d = [0.0; 4];
        grad(&x, &mut d, 1.0);
        for i in 0..4 {
            let (mut up, mut down, mut t) = (x, x, [0.0; 4]);
            up[i] += 1e-6;
            down[i] -= 1e-6;
            t[i] = 1.0;
            let fd = (f(&up) - f(&down)) / 2e-6;
            worst = worst.max((fd - d[i]).abs()).max((fd - fwd(&x, &t)).abs());
        }
    }
    println!("{}", if worst < 1e-5 { "ok" } else { "WRONG" });
}
"""


@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
@pytest.mark.slow
def test_vectors_made_inside_a_function(tmp_path, adgen, rustc_named, rustc, version):
    """Rust's allocator (`__rust_alloc`, `_zeroed`, `__rust_realloc`, `__rust_dealloc`) as C's:
    vectors made by collect, vec! and push, against finite differences in both modes. (A
    vector's growth makes a dangling pointer of its alignment, an integer: in 1.63's finish_grow
    on a value, which forward mode gives a null shadow.)"""
    rustc_named(rustc)
    functions = ["(made, made_grad, made_fwd)", "(zeroed, zeroed_grad, zeroed_fwd)", "(grown, grown_grad, grown_fwd)"]
    out = _build_model(tmp_path, adgen, VECTORS + GROWN)
    (tmp_path / "main.rs").write_text(VECTORS_MAIN.replace("FUNCTIONS", ", ".join(functions)))
    done = subprocess.run([rustc, "--edition=2021", "-O", "main.rs", "-C", f"link-arg={out / 'model.adgen.o'}", "-o",
                           "prog"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "ok\n", run.stdout + run.stderr


VEC_PARAMETERS = r"""
/// A vector read by index and by iterator.
// @diff(loss_grad: (dup, const) -> active; loss_fwd: forward (dual, const) -> dualonly)
pub fn loss(w: &Vec<f64>, k: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..w.len() {
        s += k * w[i] * w[i] * w[i];
    }
    s + w.iter().map(|a| a.sin()).sum::<f64>()
}

/// A vector updated in place (its length unchanged).
// @diff(smooth_grad: (dup) -> active)
pub fn smooth(v: &mut Vec<f64>) -> f64 {
    for i in 1..v.len() {
        v[i] = 0.5 * (v[i] + v[i - 1] * v[i - 1]);
    }
    v.iter().sum()
}
"""

VEC_MAIN = r"""
mod model;
use model::*;
include!("out/model.adgen.rs");

fn main() {
    let w = vec![0.3, -1.1, 0.7];
    let mut d = vec![0.0; 3];
    loss_grad(&w, &mut d, 2.0, 1.0);
    let mut worst: f64 = 0.0;
    for i in 0..3 {
        let (mut up, mut down, mut t) = (w.clone(), w.clone(), vec![0.0; 3]);
        up[i] += 1e-6;
        down[i] -= 1e-6;
        t[i] = 1.0;
        let fd = (loss(&up, 2.0) - loss(&down, 2.0)) / 2e-6;
        worst = worst.max((fd - d[i]).abs()).max((fd - loss_fwd(&w, &t, 2.0)).abs());
        let fd = (smooth(&mut up.clone()) - smooth(&mut down.clone())) / 2e-6;
        let (mut x, mut dx) = (w.clone(), vec![0.0; 3]);
        smooth_grad(&mut x, &mut dx, 1.0);
        worst = worst.max((fd - dx[i]).abs());
    }
    let result = std::panic::catch_unwind(|| loss_grad(&w, &mut vec![0.0; 2], 2.0, 1.0));
    println!("{}", if worst < 1e-5 && result.is_err() { "ok" } else { "WRONG" });
}
"""


@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
@pytest.mark.slow
def test_vec_parameters(tmp_path, adgen, rustc_named, rustc, version):
    """`&Vec<f64>` and `&mut Vec<f64>`: the shadow a Vec of the same length (checked: a shorter
    one panics), read by index and iterator, updated in place; both modes against finite
    differences."""
    rustc_named(rustc)
    out = _build_model(tmp_path, adgen, VEC_PARAMETERS)
    (tmp_path / "main.rs").write_text(VEC_MAIN)
    done = subprocess.run([rustc, "--edition=2021", "-O", "main.rs", "-C", f"link-arg={out / 'model.adgen.o'}", "-o",
                           "prog"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.endswith("ok\n"), run.stdout + run.stderr


GENERICS = r"""
use std::ops::{Add, Mul};

/// What the generic functions need of their floats (as num-traits' `Float` would give).
pub trait Real: Copy + Add<Output = Self> + Mul<Output = Self> {
    fn sin(self) -> Self;
    fn zero() -> Self;
}
impl Real for f64 { fn sin(self) -> Self { f64::sin(self) } fn zero() -> Self { 0.0 } }
impl Real for f32 { fn sin(self) -> Self { f32::sin(self) } fn zero() -> Self { 0.0 } }

/// One generic function, derived at f64 and f32, both modes.
// @diff(loss_grad<f64>: (dup, active) -> active; loss_grad::<f32>: (dup, active) -> active)
// @diff(loss_fwd<f64>: forward (dual, dual) -> dualonly)
pub fn loss<'a, T: Real>(x: &'a [T], w: T) -> T where T: 'a {
    let mut s = T::zero();
    for v in x {
        s = s + (*v * w).sin() * *v;
    }
    s
}

pub mod geometry {
    /// A struct of Rust's layout, of another module: passed by reference as an object.
    pub struct Frame { pub origin: [f64; 2], pub scale: f64 }
}
use geometry::Frame;

/// A model holding a Vec (no C layout), behind a trait.
pub struct Linear { pub w: Vec<f64>, pub b: f64 }
pub trait Model { fn predict(&self, x: &[f64]) -> f64; }
impl Model for Linear {
    fn predict(&self, x: &[f64]) -> f64 { self.w.iter().zip(x).map(|(a, b)| a * b).sum::<f64>() + self.b }
}

/// Generic over the model, instantiated at Linear: the model's shadow is a Linear.
// @diff(fit_grad<Linear>: (dup, const, const) -> active; fit_fwd<Linear>: forward (dual, const, const) -> dualonly)
pub fn fit<M: Model>(m: &M, x: &[f64], y: f64) -> f64 {
    let e = m.predict(x) - y;
    e * e
}

impl Linear {
    /// A generic method, of a const parameter.
    // @diff(spread_grad<3>: (dup, dup, dup) -> active)
    pub fn spread<const N: usize>(&self, x: &[f64; N], f: &Frame) -> f64 {
        let mut s = self.b * f.scale;
        for i in 0..N {
            s += self.w[i] * (x[i] - f.origin[i % 2]).powi(2) * f.scale;
        }
        s
    }
}
"""

GENERICS_MAIN = r"""
mod model {
    include!("model.rs");
    include!("out/model.adgen.rs");
}
use model::*;
use model::geometry::Frame;

fn main() {
    let h = 1e-6;
    let mut worst: f64 = 0.0;
    let x: Vec<f64> = vec![0.3, -0.2, 0.5];
    let mut dx = vec![0.0; 3];
    let (y, dw) = loss_grad(&x, &mut dx, 1.3, 1.0);
    worst = worst.max((y - loss(&x, 1.3)).abs());
    for k in 0..3 {
        let (mut up, mut down) = (x.clone(), x.clone());
        up[k] += h;
        down[k] -= h;
        let fd = (loss(&up, 1.3) - loss(&down, 1.3)) / (2.0 * h);
        let mut t = vec![0.0; 3];
        t[k] = 1.0;
        worst = worst.max((fd - dx[k]).abs()).max((fd - loss_fwd(&x, &t, 1.3, 0.0)).abs());
    }
    let fd = (loss(&x, 1.3 + h) - loss(&x, 1.3 - h)) / (2.0 * h);
    worst = worst.max((fd - dw).abs()).max((fd - loss_fwd::<f64>(&x, &[0.0; 3], 1.3, 1.0)).abs());
    let xf = vec![0.3f32, -0.2, 0.5];
    let mut dxf = vec![0.0f32; 3];
    let (yf, dwf) = loss_grad::<f32>(&xf, &mut dxf, 1.3, 1.0);
    worst = worst.max((yf as f64 - y).abs() * 1e-2).max((dwf as f64 - dw).abs() * 1e-2);
    for k in 0..3 {
        worst = worst.max((dxf[k] as f64 - dx[k]).abs() * 1e-2);
    }

    let m = Linear { w: vec![1.0, 2.0, -3.0], b: 0.5 };
    let mut dm = Linear { w: vec![0.0; 3], b: 0.0 };
    let v = fit_grad(&m, &mut dm, &x, 2.0, 1.0);
    worst = worst.max((v - fit(&m, &x, 2.0)).abs());
    for k in 0..4 {
        let (mut up, mut down) = (Linear { w: m.w.clone(), b: m.b }, Linear { w: m.w.clone(), b: m.b });
        let mut t = Linear { w: vec![0.0; 3], b: 0.0 };
        if k < 3 { up.w[k] += h; down.w[k] -= h; t.w[k] = 1.0; } else { up.b += h; down.b -= h; t.b = 1.0; }
        let fd = (fit(&up, &x, 2.0) - fit(&down, &x, 2.0)) / (2.0 * h);
        let g = if k < 3 { dm.w[k] } else { dm.b };
        worst = worst.max((fd - g).abs()).max((fd - fit_fwd(&m, &t, &x, 2.0)).abs());
    }

    let a = [0.1, 0.2, 0.3];
    let f = Frame { origin: [0.05, -0.1], scale: 1.5 };
    let (mut dm2, mut da, mut df) = (Linear { w: vec![0.0; 3], b: 0.0 }, [0.0; 3], Frame { origin: [0.0; 2], scale: 0.0 });
    let s = m.spread_grad(&mut dm2, &a, &mut da, &f, &mut df, 1.0);
    worst = worst.max((s - m.spread(&a, &f)).abs());
    for k in 0..3 {
        let (mut up, mut down) = (a, a);
        up[k] += h;
        down[k] -= h;
        worst = worst.max(((m.spread(&up, &f) - m.spread(&down, &f)) / (2.0 * h) - da[k]).abs());
    }
    let (fu, fd_) = (Frame { origin: f.origin, scale: f.scale + h }, Frame { origin: f.origin, scale: f.scale - h });
    worst = worst.max(((m.spread(&a, &fu) - m.spread(&a, &fd_)) / (2.0 * h) - df.scale).abs());
    let (fu, fd_) = (Frame { origin: [f.origin[0] + h, f.origin[1]], scale: f.scale },
                     Frame { origin: [f.origin[0] - h, f.origin[1]], scale: f.scale });
    worst = worst.max(((m.spread(&a, &fu) - m.spread(&a, &fd_)) / (2.0 * h) - df.origin[0]).abs());
    let (up, down) = (Linear { w: vec![1.0, 2.0 + h, -3.0], b: 0.5 }, Linear { w: vec![1.0, 2.0 - h, -3.0], b: 0.5 });
    worst = worst.max(((up.spread(&a, &f) - down.spread(&a, &f)) / (2.0 * h) - dm2.w[1]).abs());
    println!("{}", if worst < 1e-5 { "ok" } else { "WRONG" });
}
"""


@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
@pytest.mark.slow
def test_generic_functions_at_named_instantiations(tmp_path, adgen, rustc_named, rustc, version):
    """A generic function derived at f64 and f32 (one Rust function `loss_grad<T>`, called with
    the type inferred or named), generic over a model trait at a struct of Rust's layout holding
    a Vec, a generic method of a const parameter taking a struct of another module; both modes
    against finite differences, the wrappers compiled without warnings."""
    rustc_named(rustc)
    out = _build_model(tmp_path, adgen, GENERICS)
    text = (out / "model.adgen.rs").read_text()
    assert "pub fn loss_grad<'a, T>(x: &'a [T], d_x: &mut [T], w: T, d_ret: T) -> (T, T)" in text, text
    assert "pub fn fit_grad<M>(m: &M, d_m: &mut M, x: &[f64], y: f64, d_ret: f64) -> f64" in text, text
    (tmp_path / "main.rs").write_text(GENERICS_MAIN)
    done = subprocess.run([rustc, "--edition=2021", "-O", "main.rs", "-C", f"link-arg={out / 'model.adgen.o'}", "-o",
                           "prog"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "ok\n", run.stdout + run.stderr


INACTIVE = r"""
/// A stop-gradient: its value, no derivative.
// @inactive
pub fn stop(x: f64) -> f64 {
    x
}

// @inactive
fn noise(x: f64) -> f64 {
    (x * 12.9898).sin() * 0.01
}

// @diff(f_grad: (active) -> active; f_fwd: forward (dual) -> dual)
pub fn f(x: f64) -> f64 {
    x * stop(x) + noise(x) * x
}
"""

INACTIVE_MAIN = r"""
mod m {
    include!("m.rs");
    include!("out/m.adgen.rs");
}

fn main() {
    let x = 1.5f64;
    let (v, g) = m::f_grad(x, 1.0);
    let (_, t) = m::f_fwd(x, 1.0);
    let expect = x + (x * 12.9898).sin() * 0.01;  // stop(x) and noise(x) constants
    let ok = (v - m::f(x)).abs() < 1e-12 && (g - expect).abs() < 1e-12 && (t - expect).abs() < 1e-12;
    println!("{}", if ok { "ok" } else { "WRONG" });
}
"""


@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
@pytest.mark.slow
def test_inactive_functions(tmp_path, adgen, rustc_named, rustc, version):
    """`@inactive` on Rust functions, public and private, small enough for rustc's MIR inliner
    (which adgen's compile turns off for them): calls of them carry no derivative, in both modes."""
    rustc_named(rustc)
    assert _run_with(tmp_path, adgen, INACTIVE, INACTIVE_MAIN, rustc) == "ok\n"


OUTCOMES = r"""
// @diff(root_grad: (active) -> active; root_fwd: forward (dual) -> dual)
pub fn root(x: f64) -> Option<f64> {
    if x < 0.0 { None } else { Some(x.sqrt() * x) }
}

#[derive(Debug, PartialEq)]
pub struct TooLarge(pub f64);

#[derive(Clone, Copy)]
pub struct Spring {
    pub k: f64,
    pub rest: f64,
}

impl Spring {
    /// `self` by value (Copy): its gradient a Spring.
    // @diff(energy_grad: (active, active) -> active; energy_fwd: forward (dual, dual) -> dual)
    pub fn energy(self, x: f64) -> f64 {
        0.5 * self.k * (x - self.rest).powi(2)
    }
}

// @diff(checked_grad: (dup) -> active)
pub fn checked(x: &[f64]) -> Result<f64, TooLarge> {
    let s: f64 = x.iter().map(|v| v * v).sum();
    if s > 100.0 { Err(TooLarge(s)) } else { Ok(s.sin()) }
}
"""

OUTCOMES_MAIN = r"""
mod m {
    include!("m.rs");
    include!("out/m.adgen.rs");
}

fn main() {
    let mut ok = m::root_grad(4.0, 1.0) == Some((8.0, 3.0)) && m::root_grad(-1.0, 1.0).is_none();
    ok &= m::root_fwd(4.0, 1.0) == Some((8.0, 3.0)) && m::root_fwd(-1.0, 1.0).is_none();
    let mut d = [0.0; 2];
    let v = m::checked_grad(&[1.0, 2.0], &mut d, 1.0);
    ok &= v == Ok(5f64.sin()) && (d[0] - 2.0 * 5f64.cos()).abs() < 1e-12 && (d[1] - 4.0 * 5f64.cos()).abs() < 1e-12;
    let mut d = [0.0; 2];
    ok &= m::checked_grad(&[10.0, 2.0], &mut d, 1.0) == Err(m::TooLarge(104.0)) && d == [0.0, 0.0];
    let s = m::Spring { k: 2.0, rest: 1.0 };
    let (v, ds, dx) = s.energy_grad(3.0, 1.0);
    ok &= v == 4.0 && ds.k == 2.0 && ds.rest == -4.0 && dx == 4.0;
    ok &= s.energy_fwd(m::Spring { k: 1.0, rest: 0.0 }, 3.0, 0.0) == (4.0, 2.0);
    println!("{}", if ok { "ok" } else { "WRONG" });
}
"""


@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
@pytest.mark.slow
def test_option_and_result_returns(tmp_path, adgen, rustc_named, rustc, version):
    """`Option<f64>` and `Result<f64, E>` results: the wrapper returns `Some`/`Ok` of what it
    would return for the float, or `None`/`Err` of the function's error (its derivatives
    nowhere), both modes; and a method taking `self` by value, its gradient an object."""
    rustc_named(rustc)
    (tmp_path / "m.rs").write_text(OUTCOMES)
    result = adgen("build", "-q", tmp_path / "m.rs", "-o", tmp_path / "out")
    assert result.status == 0, result.err
    text = (tmp_path / "out" / "m.adgen.rs").read_text()
    assert "pub fn root_grad(x: f64, d_ret: f64) -> Option<(f64, f64)>" in text, text
    assert "pub fn checked_grad(x: &[f64], d_x: &mut [f64], d_ret: f64) -> Result<f64, TooLarge>" in text, text
    (tmp_path / "main.rs").write_text(OUTCOMES_MAIN)
    done = subprocess.run([rustc, "--edition=2021", "-O", "main.rs", "-C", f"link-arg={tmp_path / 'out' / 'm.adgen.o'}",
                           "-C", "link-arg=-lm", "-o", "prog"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    run = subprocess.run([str(tmp_path / "prog")], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "ok\n", run.stdout + run.stderr


SPLIT = r"""
/// The energy of a chain of springs: split mode beside the gradient, at width 1 and 2.
// @diff(chain_grad: (dup, active) -> active; chain_split: split (dup, active) -> active)
// @diff(chain_split2: split[2] (dup, active) -> active)
pub fn chain(x: &[f64], k: f64) -> f64 {
    let stretched: Vec<f64> = x.windows(2).map(|p| (p[1] - p[0]).abs() - 1.0).collect();
    stretched.iter().map(|s| 0.5 * k * s * s).sum()
}

pub struct Springs {
    pub rest: Vec<f64>,
}

impl Springs {
    /// A method: its object's shadow borrowed by the tape too.
    // @diff(misfit_split: split (dup, dup) -> activeonly)
    pub fn misfit(&self, x: &[f64]) -> f64 {
        self.rest.iter().zip(x).map(|(r, x)| (x - r).powi(2)).sum::<f64>().sqrt()
    }
}
"""

SPLIT_MAIN = r"""
mod m {
    include!("m.rs");
    include!("out/m.adgen.rs");
}

fn main() {
    let trials = [[0.0, 1.3, 2.1, 3.6], [0.0, 0.9, 2.0, 2.8], [0.0, 1.2, 2.3, 3.1]];
    let mut shadows = [[0.0; 4]; 3];
    let (mut tapes, mut energies) = (Vec::new(), Vec::new());
    for (x, d) in trials.iter().zip(shadows.iter_mut()) {  // three forward sweeps, their tapes kept
        let (e, tape) = m::chain_split_forward(x, d, 3.0);
        energies.push(e);
        tapes.push(tape);
    }
    let best = (0..3).min_by(|&a, &b| energies[a].partial_cmp(&energies[b]).unwrap()).unwrap();
    let mut dk = 0.0;
    for (i, tape) in tapes.into_iter().enumerate() {  // the best reversed, the others dropped
        if i == best { dk = tape.reverse(1.0); }
    }
    let mut d = [0.0; 4];
    let (e, dk_whole) = m::chain_grad(&trials[best], &mut d, 3.0, 1.0);
    let mut ok = e == energies[best] && dk == dk_whole && d == shadows[best];
    ok &= (0..3).all(|i| i == best || shadows[i] == [0.0; 4]);
    let (mut a, mut b) = ([0.0; 4], [0.0; 4]);
    let (e2, tape) = m::chain_split2_forward(&trials[best], &mut a, &mut b, 3.0);
    let dk2 = tape.reverse(1.0, 2.0);
    ok &= e2 == e && dk2 == [dk, 2.0 * dk] && a == d && b.iter().zip(&d).all(|(b, d)| *b == 2.0 * d);
    let s = m::Springs { rest: vec![0.5, 1.0, 2.0, 3.5] };
    let mut ds = m::Springs { rest: vec![0.0; 4] };
    let mut dx = [0.0; 4];
    let tape = s.misfit_split_forward(&mut ds, &trials[0], &mut dx);
    tape.reverse(1.0);
    let n = s.misfit(&trials[0]);
    for i in 0..4 {
        let g = (trials[0][i] - s.rest[i]) / n;
        ok &= (dx[i] - g).abs() < 1e-12 && (ds.rest[i] + g).abs() < 1e-12;
    }
    println!("{}", if ok { "ok" } else { "WRONG" });
}
"""


@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
@pytest.mark.slow
def test_split_mode_with_a_typed_tape(tmp_path, adgen, rustc_named, rustc, version):
    """`split` on Rust functions (specs/abi.md, "Rust"): the forward sweep returns a tape that
    borrows the shadows until its `reverse` consumes it; three tapes alive, one reversed, two
    dropped (released: valgrind finds no leak, where it is installed); width 2; a method."""
    rustc_named(rustc)
    assert _run_with(tmp_path, adgen, SPLIT, SPLIT_MAIN, rustc) == "ok\n"
    if shutil.which("valgrind"):
        checked = subprocess.run(["valgrind", "-q", "--leak-check=full", "--error-exitcode=9", str(tmp_path / "prog")],
                                 capture_output=True, text=True)
        assert checked.returncode == 0 and checked.stdout == "ok\n", checked.stderr


@pytest.mark.parametrize("code, message, at", [
    ("// @diff(g: split (dup, active) -> active)\npub fn f<T: Copy>(x: &[T], k: T) -> T { k }\n",
     "is a generic function", "g: split"),
    ("// @diff(g<f64>: split (dup, active) -> active)\npub fn f<T: Copy>(x: &[T], k: T) -> T { k }\n",
     "split mode of a generic function's instantiation is not built", "split (dup"),
    ("#[derive(Clone, Copy)]\npub struct P { pub a: f64 }\n// @diff(g: split (active) -> active)\n"
     "pub fn f(p: P) -> f64 { p.a }\n", "split mode of a function taking values by value is not built", "split (act"),
])
def test_split_mode_adgen_does_not_build_is_an_error(tmp_path, adgen, code, message, at):
    _refused_at(tmp_path, adgen, code, message, at)


BY_HAND = r"""
/// 1/sqrt(x) by the machine's instruction: adgen cannot differentiate inline assembly, so its
/// derivatives are written by hand.
pub fn rsqrt(x: f64) -> f64 {
    let y: f64;
    unsafe { core::arch::asm!("sqrtsd {0}, {1}", out(xmm_reg) y, in(xmm_reg) x) };
    1.0 / y
}

// @derivative(rsqrt: (active) -> active)
pub fn rsqrt_grad(x: f64, d_ret: f64) -> (f64, f64) {
    (rsqrt(x), -0.5 * rsqrt(x) / x * d_ret)
}

// @derivative(rsqrt: forward (dual) -> dual)
pub fn rsqrt_fwd(x: f64, d_x: f64) -> (f64, f64) {
    (rsqrt(x), -0.5 * rsqrt(x) / x * d_x)
}

/// A norm of a slice whose reverse derivative of arrays is written by hand, with an active scale.
pub fn scaled_norm(x: &[f64], w: f64) -> f64 {
    w * rsqrt(1.0 / x.iter().map(|v| v * v).sum::<f64>())
}

// @derivative(scaled_norm: (dup, active) -> active)
pub fn scaled_norm_grad(x: &[f64], d_x: &mut [f64], w: f64, d_ret: f64) -> (f64, f64) {
    let n = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    for i in 0..x.len() {
        d_x[i] += w * x[i] / n * d_ret;
    }
    (w * n, n * d_ret)
}

// @diff(field_grad: (dup, active) -> active; field_fwd: forward (dual, dual) -> dual)
pub fn field(p: &[f64], k: f64) -> f64 {
    p.iter().map(|v| rsqrt(1.0 + k * v * v)).sum()
}

// @diff(energy_grad: (dup, active) -> active)
pub fn energy(p: &[f64], w: f64) -> f64 {
    let s = scaled_norm(p, w);
    s * s + p[0]
}
"""

BY_HAND_MAIN = r"""
mod m {
    include!("m.rs");
    include!("out/m.adgen.rs");
}

fn main() {
    let (p, k, h) = ([0.5, -1.5, 2.0], 0.8, 1e-6);
    let exact = |p: &[f64], k: f64| p.iter().map(|v| 1.0 / (1.0 + k * v * v).sqrt()).sum::<f64>();
    let mut d = [0.0; 3];
    let (_, dk) = m::field_grad(&p, &mut d, k, 1.0);
    let mut worst = (dk - (exact(&p, k + h) - exact(&p, k - h)) / (2.0 * h)).abs();
    for i in 0..3 {
        let (mut up, mut down) = (p, p);
        up[i] += h;
        down[i] -= h;
        worst = worst.max((d[i] - (exact(&up, k) - exact(&down, k)) / (2.0 * h)).abs());
        let mut t = [0.0; 3];
        t[i] = 1.0;
        worst = worst.max((m::field_fwd(&p, &t, k, 0.0).1 - d[i]).abs());
    }
    worst = worst.max((m::field_fwd(&p, &[0.0; 3], k, 1.0).1 - dk).abs());
    let energy = |p: &[f64], w: f64| { let s = w * p.iter().map(|v| v * v).sum::<f64>().sqrt(); s * s + p[0] };
    let mut d = [0.0; 3];
    let (_, dw) = m::energy_grad(&p, &mut d, 1.5, 1.0);
    worst = worst.max((dw - (energy(&p, 1.5 + h) - energy(&p, 1.5 - h)) / (2.0 * h)).abs());
    for i in 0..3 {
        let (mut up, mut down) = (p, p);
        up[i] += h;
        down[i] -= h;
        worst = worst.max((d[i] - (energy(&up, 1.5) - energy(&down, 1.5)) / (2.0 * h)).abs());
    }
    println!("{}", if worst < 1e-6 { "ok" } else { "WRONG" });
}
"""


@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
@pytest.mark.slow
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="its example is x86-64's inline assembly")
def test_derivatives_written_by_hand(tmp_path, adgen, rustc_named, rustc, version):
    """`@derivative` in Rust (specs/annotations.md): a function of the entry's wrapper's
    signature is called in place of differentiating one adgen cannot (inline assembly), in both
    modes (its partials read off it) and of slices (called in the reverse sweep)."""
    rustc_named(rustc)
    assert _run_with(tmp_path, adgen, BY_HAND, BY_HAND_MAIN, rustc) == "ok\n"


@pytest.mark.parametrize("code, message, at", [
    ("pub fn f(x: f64) -> f64 { x }\n// @derivative(f: (active) -> active)\npub fn g(x: f64, s: f64) -> f64 { s }\n",
     "'g' is declared as the derivative of 'f', but its signature is not the one adgen gives that entry: "
     "fn g(x: f64, d_ret: f64) -> (f64, f64)", "g(x"),
    ("pub fn f<T: Copy>(x: T) -> T { x }\n// @derivative(f: (active) -> active)\n"
     "pub fn g(x: f64, s: f64) -> (f64, f64) { (x, s) }\n", "@derivative names 'f', which is not a free function of "
     "this file adgen can read", "f:"),
    ("pub fn f(x: f64) -> f64 { x }\n// @diff(h: (active) -> active)\npub fn h0(x: f64) -> f64 { f(x) }\n"
     "// @derivative(nowhere: (active) -> active)\npub fn g(x: f64, s: f64) -> (f64, f64) { (x, s) }\n",
     "@derivative names 'nowhere'", "nowhere"),
])
def test_derivatives_written_by_hand_checked(tmp_path, adgen, code, message, at):
    _refused_at(tmp_path, adgen, code, message, at)


TRAIT_OBJECTS = r"""
/// `Any` as a supertrait: the wrappers tell trait objects apart by their types' TypeId.
pub trait Model: std::any::Any {
    fn predict(&self, x: &[f64]) -> f64;
}

pub struct Linear {
    pub w: Vec<f64>,
    pub b: f64,
}

pub struct Quadratic {
    pub a: f64,
}

impl Model for Linear {
    fn predict(&self, x: &[f64]) -> f64 {
        self.w.iter().zip(x).map(|(w, x)| w * x).sum::<f64>() + self.b
    }
}

impl Model for Quadratic {
    fn predict(&self, x: &[f64]) -> f64 {
        self.a * x.iter().map(|v| v * v).sum::<f64>()
    }
}

/// The squared error of a model given as a trait object.
// @diff(loss_grad: (dup, dup, const) -> active; loss_fwd: forward (dual, const, const) -> dual)
pub fn loss(m: &dyn Model, x: &[f64], y: f64) -> f64 {
    let e = m.predict(x) - y;
    e * e
}
"""

TRAIT_OBJECTS_MAIN = r"""
mod m {
    include!("m.rs");
    include!("out/m.adgen.rs");
}
use m::Model;

fn main() {
    let (x, h) = ([0.5, -1.0, 2.0], 1e-6);
    let models: Vec<Box<dyn Model>> = vec![Box::new(m::Linear { w: vec![0.3, 0.1, -0.2], b: 0.4 }),
                                           Box::new(m::Quadratic { a: 1.5 })];
    let mut shadows: Vec<Box<dyn Model>> = vec![Box::new(m::Linear { w: vec![0.0; 3], b: 0.0 }),
                                                Box::new(m::Quadratic { a: 0.0 })];
    let mut worst: f64 = 0.0;
    for (model, shadow) in models.iter().zip(shadows.iter_mut()) {
        let mut dx = [0.0; 3];
        let v = m::loss_grad(&**model, &mut **shadow, &x, &mut dx, 1.0, 1.0);
        worst = worst.max((v - m::loss(&**model, &x, 1.0)).abs());
        for i in 0..3 {
            let (mut up, mut down) = (x, x);
            up[i] += h;
            down[i] -= h;
            worst = worst.max((dx[i] - (m::loss(&**model, &up, 1.0) - m::loss(&**model, &down, 1.0)) / (2.0 * h)).abs());
        }
    }
    let q = m::Quadratic { a: 1.5 };  // (the gradient in the shadow object, forward against reverse)
    let mut dq = m::Quadratic { a: 0.0 };
    m::loss_grad(&q, &mut dq, &x, &mut [0.0; 3], 1.0, 1.0);
    let fd = (m::loss(&m::Quadratic { a: 1.5 + h }, &x, 1.0) - m::loss(&m::Quadratic { a: 1.5 - h }, &x, 1.0)) / (2.0 * h);
    worst = worst.max((dq.a - fd).abs()).max((m::loss_fwd(&q, &m::Quadratic { a: 1.0 }, &x, 1.0).1 - fd).abs());
    let mixed = std::panic::catch_unwind(|| {  // (a shadow of another type than the object's)
        m::loss_grad(&m::Quadratic { a: 1.0 }, &mut m::Linear { w: vec![0.0; 3], b: 0.0 }, &x, &mut [0.0; 3], 1.0, 1.0)
    });
    println!("{}", if worst < 1e-6 && mixed.is_err() { "ok" } else { "WRONG" });
}
"""


@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
@pytest.mark.slow
def test_trait_objects(tmp_path, adgen, rustc_named, rustc, version):
    """`&dyn Model` (specs/annotations.md, "Trait objects"): differentiated at each type of the
    file implementing the trait, the wrapper choosing by TypeId; the gradient in a shadow object;
    forward mode; a shadow of another type panics."""
    rustc_named(rustc)
    assert _run_with(tmp_path, adgen, TRAIT_OBJECTS, TRAIT_OBJECTS_MAIN, rustc) == "ok\n"


@pytest.mark.parametrize("code, message, at", [
    ("pub trait M { fn p(&self) -> f64; }\npub struct A(f64);\nimpl M for A { fn p(&self) -> f64 { self.0 } }\n"
     "// @diff(g: (dup) -> active)\npub fn f(m: &dyn M) -> f64 { m.p() }\n",
     "adgen tells trait objects apart by the TypeId of their types: declare `trait M: std::any::Any`", "dyn M"),
    ("// @diff(g: (dup) -> active)\npub fn f(m: &dyn std::fmt::Debug) -> f64 { 0.0 }\n",
     "adgen cannot pass a trait object of 'Debug', which this file does not declare", "dyn std"),
    ("pub trait M: std::any::Any { fn p(&self) -> f64; }\n// @diff(g: (dup) -> active)\n"
     "pub fn f(m: &dyn M) -> f64 { m.p() }\n", "no type of this file implements 'M'", "dyn M"),
    ("pub trait M: std::any::Any { fn p(&self) -> f64; }\npub struct A(f64);\n"
     "impl M for A { fn p(&self) -> f64 { self.0 } }\n// @diff(g: (dup, dup) -> active)\n"
     "pub fn f(m: &dyn M, n: &dyn M) -> f64 { m.p() * n.p() }\n", "a trait object ('dyn M') here: adgen differentiates a function of one trait object", "dyn M"),
    ("// @diff(g: (const, active) -> active)\npub fn f(k: &dyn Fn(f64) -> f64, x: f64) -> f64 { k(x) }\n",
     "adgen cannot pass a closure as a trait object ('dyn Fn(f64) -> f64'): it tells closures apart by their types",
     "dyn Fn"),
    ("// @diff(g: (const, active) -> active)\npub fn f(k: impl Fn(f64) -> f64, x: f64) -> f64 { k(x) }\n",
     "a closure passed in ('impl Fn(f64) -> f64') is differentiated by `cargo adgen build`", "impl Fn"),
])
def test_trait_objects_adgen_cannot_pass_are_errors_at_the_type(tmp_path, adgen, code, message, at):
    _refused_at(tmp_path, adgen, code, message, at)


HIGHER = r"""
// @diff(rosen_grad: (dup) -> active)
// @diff(rosen_hvp: forward of rosen_grad (dual, dual, const) -> const)
// @diff(rosen_hvp2: forward[2] of rosen_grad (dual, dual, const) -> const)
// @diff(rosen_rr: reverse of rosen_grad (dup, dup, const) -> activeonly)
pub fn rosen(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        s += 100.0 * (x[i + 1] - x[i] * x[i]).powi(2) + (1.0 - x[i]).powi(2);
    }
    s
}

pub struct Spring {
    pub k: f64,
}

impl Spring {
    /// A method's derivative derived again: its scalar's second derivative, forward over forward.
    // @diff(energy_dir: forward (const, dual) -> dualonly)
    // @diff(energy_curv: forward of energy_dir (const, dual, dual) -> dualonly)
    pub fn energy(&self, x: f64) -> f64 {
        0.5 * self.k * x.powi(3)
    }
}
"""

HIGHER_MAIN = r"""
mod m {
    include!("m.rs");
    include!("out/m.adgen.rs");
}

fn grad(x: &[f64]) -> Vec<f64> {
    let mut d = vec![0.0; x.len()];
    m::rosen_grad(x, &mut d, 1.0);
    d
}

fn main() {
    let (x, v, w, h) = ([0.3, -0.8, 1.1, 0.5], [1.0, 0.5, -0.25, 2.0], [0.0, 1.0, 0.0, 0.0], 1e-6);
    let along = |v: &[f64]| -> Vec<f64> {  // (central differences of the gradient along v)
        let up: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + h * b).collect();
        let down: Vec<f64> = x.iter().zip(v).map(|(a, b)| a - h * b).collect();
        grad(&up).iter().zip(grad(&down)).map(|(a, b)| (a - b) / (2.0 * h)).collect()
    };
    let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(a, b)| (a - b).abs() < 1e-5 * (1.0 + b.abs()));
    let (mut d_x, mut hv) = ([0.0; 4], [0.0; 4]);
    let value = m::rosen_hvp(&x, &v, &mut d_x, &mut hv, 1.0);
    let mut ok = value == m::rosen(&x) && close(&hv, &along(&v)) && close(&d_x, &grad(&x));
    let (mut g, mut hv0, mut hv1) = ([0.0; 4], [0.0; 4], [0.0; 4]);
    m::rosen_hvp2(&x, &v, &w, &mut g, &mut hv0, &mut hv1, 1.0);
    ok &= hv0 == hv && close(&hv1, &along(&w));
    let (mut d2_x, mut d_x, mut seed) = ([0.0; 4], [0.0; 4], v);
    m::rosen_rr(&x, &mut d2_x, &mut d_x, &mut seed, 1.0, 0.0);  // (reverse over reverse: H v too)
    ok &= close(&d2_x, &hv);
    let s = m::Spring { k: 3.0 };
    ok &= (s.energy_curv(2.0, 1.0, 1.0, 0.0) - 3.0 * 3.0 * 2.0).abs() < 1e-12;  // (3 k x d_x d2_x)
    println!("{}", if ok { "ok" } else { "WRONG" });
}
"""


@pytest.mark.parametrize("rustc, version", _installed_rustcs(), ids=lambda v: "rustc-%d.%d" % v if isinstance(v, tuple)
                         else "")
@pytest.mark.slow
def test_derivatives_of_derived_functions(tmp_path, adgen, rustc_named, rustc, version):
    """`of` in Rust (specs/annotations.md): a Hessian-vector product forward over reverse, at width
    2, and reverse over reverse, against differences of the gradient; a method's, forward over
    forward. The entry's activities are of the derived function's wrapper's parameters."""
    rustc_named(rustc)
    assert _run_with(tmp_path, adgen, HIGHER, HIGHER_MAIN, rustc) == "ok\n"
    text = (tmp_path / "out" / "m.adgen.rs").read_text()
    assert "pub fn rosen_hvp(x: &[f64], d2_x: &[f64], d_x: &mut [f64], d2_d_x: &mut [f64], d_ret: f64) -> f64" in text


@pytest.mark.parametrize("code, message, at", [
    ("// @diff(g<f64>: (dup) -> active)\n// @diff(h<f64>: forward of g (dual, dual, const) -> const)\n"
     "pub fn f<T: Copy>(x: &[T]) -> T { x[0] }\n", "'h' derives 'g', but no @diff entry of this file makes", "g (dual"),
    ("#[derive(Clone, Copy)]\npub struct P { pub a: f64 }\n// @diff(g: (active) -> active)\n"
     "// @diff(h: forward of g (dual, dual) -> const)\npub fn f(p: P) -> f64 { p.a }\n",
     "a derivative of a generic function, of trait objects or of values by value", "g (dual"),
    ("// @diff(g: (dup) -> active)\n// @diff(h: forward of g (dual, dual) -> const)\npub fn f(x: &[f64]) -> f64 "
     "{ x[0] }\n", "'h' lists 2 activities, but 'g' takes 3 parameters (x, d_x, d_ret)", "(dual, dual)"),
])
def test_derivatives_of_derived_functions_checked(tmp_path, adgen, code, message, at):
    _refused_at(tmp_path, adgen, code, message, at)
