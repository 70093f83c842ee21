"""`cargo adgen build` (commands/cargo.py, commands/build/crate.py, specs/annotations.md "Rust
crates"): a cargo workspace of three crates — a library whose annotated functions live in
several of its modules (a file module, an inline module, both spellings of the annotation,
methods, a `Model` trait with a model holding a Vec, a loss generic over the model and
a function generic over the float, at named instantiations) and call a private function of
another module and a function of a path dependency, a binary using it — gets its derivatives, and then `cargo test` and `cargo run` work as usual, checked against
central differences; with each toolchain installed (Debian's rustc and cargo 1.63, rustup's
stable). What cargo's compile of the library cannot give is a located error. Skipped, saying
why, where there is no cargo (.ci/run installs Debian's)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _toolchains() -> list[tuple[str, str]]:
    """(folder, version) of each folder on the PATH holding both rustc and cargo, one per version."""
    found = {}
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        rustc, cargo = Path(folder) / "rustc", Path(folder) / "cargo"
        if folder and rustc.is_file() and cargo.is_file() and os.access(cargo, os.X_OK):
            done = subprocess.run([str(rustc), "--version"], capture_output=True, text=True)
            version = re.match(r"rustc (\d+\.\d+)", done.stdout)
            if version:
                found.setdefault(version[1], folder)
    return [(folder, version) for version, folder in sorted(found.items())]


TOOLCHAINS = _toolchains()
CRATE = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "--rust-crate-dir"], capture_output=True,
                       text=True).stdout.strip()  # (adgen's crate of attributes, a path dependency)

UTIL = """\
/// Not inline, not generic: its code is in util's own bitcode.
pub fn scale(x: f64) -> f64 {
    0.5 * x.exp() + x * x
}
"""

LIB = """\
pub mod fit;
pub mod model;
pub mod shapes;

#[cfg(test)]
mod tests {
    fn close(a: f64, b: f64) -> bool { (a - b).abs() <= 1e-6 * (1.0 + b.abs()) }

    #[test]
    fn gradients_against_finite_differences() {
        let x = [0.3, 1.2, -0.7, 0.4];
        let mut d = [0.0; 4];
        let value = crate::shapes::inner::energy_grad(&x, &mut d, 1.0);
        assert!(close(value, crate::shapes::inner::energy(&x)));
        for i in 0..4 {
            let (mut up, mut down) = (x, x);
            up[i] += 1e-6;
            down[i] -= 1e-6;
            let fd = (crate::shapes::inner::energy(&up) - crate::shapes::inner::energy(&down)) / 2e-6;
            assert!(close(d[i], fd), "d[{}] = {} against {}", i, d[i], fd);
        }
        let mut d_split = [0.0; 4];
        let (e, tape) = crate::shapes::inner::energy_split_forward(&x, &mut d_split);
        tape.reverse(1.0);  // (split mode: the tape borrows d_split until then)
        assert!(close(e, value) && d_split == d, "{:?} against {:?}", d_split, d);
        let (v, mut g, mut hv) = ([1.0, -0.5, 0.25, 2.0], [0.0; 4], [0.0; 4]);  // (a Hessian-vector product)
        crate::shapes::inner::energy_hvp(&x, &v, &mut g, &mut hv, 1.0);
        let along = |s: f64| { let y: Vec<f64> = x.iter().zip(&v).map(|(x, v)| x + s * v).collect();
                               let mut d = vec![0.0; 4]; crate::shapes::inner::energy_grad(&y, &mut d, 1.0); d };
        let (up, down) = (along(1e-6), along(-1e-6));
        for i in 0..4 {
            assert!(close(hv[i], (up[i] - down[i]) / 2e-6), "hv[{}] = {} against {}", i, hv[i], (up[i] - down[i]) / 2e-6);
        }
        let p = crate::model::Params { a: 1.5, b: -0.25 };
        let mut dp = crate::model::Params { a: 0.0, b: 0.0 };
        crate::model::misfit_grad(&p, &mut dp, &x, 1.0);
        let h = 1e-6;
        let fd_a = (crate::model::misfit(&crate::model::Params { a: p.a + h, b: p.b }, &x)
            - crate::model::misfit(&crate::model::Params { a: p.a - h, b: p.b }, &x)) / (2.0 * h);
        assert!(close(dp.a, fd_a), "{} against {}", dp.a, fd_a);
        let along = crate::model::misfit_dir(&p, &crate::model::Params { a: 0.0, b: 1.0 }, &x);
        let fd_b = (crate::model::misfit(&crate::model::Params { a: p.a, b: p.b + h }, &x)
            - crate::model::misfit(&crate::model::Params { a: p.a, b: p.b - h }, &x)) / (2.0 * h);
        assert!(close(along, fd_b) && close(dp.b, fd_b), "{} {} against {}", along, dp.b, fd_b);
        let mut dn = crate::model::Params { a: 0.0, b: 0.0 };
        p.norm_grad(&mut dn, 1.0);
        let n = p.norm();
        assert!(close(dn.a, p.a / n) && close(dn.b, 0.5 * p.b.exp() / n), "{} {}", dn.a, dn.b);
    }
}
"""

SHAPES = """\
pub mod inner {
    // @diff(energy_grad: (dup) -> active; energy_split: split (dup) -> active)
    // @diff(energy_hvp: forward of energy_grad (dual, dual, const) -> const)
    pub fn energy(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            s += super::weight(x[i]) * x[i];
        }
        s
    }

    include!(concat!(env!("CARGO_MANIFEST_DIR"), "/target/adgen/shapes.adgen.rs"));
}

fn weight(x: f64) -> f64 {
    x.sin() + util::scale(x)
}
"""

MODEL = """\
#[repr(C)]
pub struct Params {
    pub a: f64,
    pub b: f64,
}

#[adgen::diff(misfit_grad: (dup, const) -> active)]
#[adgen::diff(misfit_dir: forward (dual, const) -> dualonly)]
pub fn misfit(p: &Params, t: &[f64]) -> f64 {
    t.iter().map(|t| { let r = p.a * (p.b * t).exp() - 1.0; r * r }).sum()
}

impl Params {
    /// A method: its object's shadow is the first.
    // @diff(norm_grad: (dup) -> active)
    pub fn norm(&self) -> f64 {
        (self.a * self.a + self.b.exp()).sqrt()
    }
}

include!(concat!(env!("CARGO_MANIFEST_DIR"), "/target/adgen/model.adgen.rs"));
"""

FIT = """\
//! A model trait, a model holding its weights in a Vec, a generic loss over models and floats.
use std::ops::{Add, Mul, Sub};

/// `Any` as a supertrait: adgen tells trait objects of it apart by their types' TypeId.
pub trait Model: std::any::Any {
    fn predict(&self, x: &[f64]) -> f64;
}

/// Of Rust's layout (no #[repr(C)]): C sees it as an object.
pub struct Linear {
    pub w: Vec<f64>,
    pub bias: f64,
}

impl Model for Linear {
    fn predict(&self, x: &[f64]) -> f64 {
        self.w.iter().zip(x).map(|(w, x)| w * x).sum::<f64>() + self.bias
    }
}

/// A trait declaring the derived method std::autodiff's attribute puts beside its method.
pub trait Scored {
    fn score(&self, s: f64) -> f64;
    fn d_score(&self, s: f64, seed: f64) -> (f64, f64);
}

impl Scored for Linear {
    #[adgen::autodiff_reverse(d_score, Const, Active, Active)]
    fn score(&self, s: f64) -> f64 {
        self.bias * s * s + self.w[0]
    }
}

impl Linear {
    /// A method over Vec<f64>: the weights' decay toward a prior.
    #[adgen::diff(decay_grad: (dup, dup) -> active)]
    pub fn decay(&self, prior: &Vec<f64>) -> f64 {
        self.w.iter().zip(prior.iter()).map(|(w, p)| (w - p) * (w - p)).sum::<f64>() * 0.5
    }
}

/// Generic over the model: the squared error over rows of `x`.
// @diff(loss_grad<Linear>: (dup, const, const) -> active; loss_dir<Linear>: forward (dual, const, const) -> dualonly)
pub fn loss<M: Model>(m: &M, x: &Vec<f64>, y: &[f64]) -> f64 {
    let n = x.len() / y.len();
    (0..y.len()).map(|i| { let e = m.predict(&x[i * n..(i + 1) * n]) - y[i]; e * e }).sum()
}

/// Of a trait object: differentiated at each type of the file implementing Model.
// @diff(risk_grad: (dup, const, const) -> active)
pub fn risk(m: &dyn Model, x: &Vec<f64>, y: &[f64]) -> f64 {
    let n = x.len() / y.len();
    (0..y.len()).map(|i| { let e = m.predict(&x[i * n..(i + 1) * n]) - y[i]; e * e }).sum()
}

/// Generic over the float, at f64 and f32.
// @diff(poly_grad<f64>: (active, dup) -> active; poly_grad<f32>: (active, dup) -> active)
pub fn poly<T: Copy + Add<Output = T> + Mul<Output = T> + Sub<Output = T>>(x: T, c: &[T]) -> T {
    let mut s = c[0];
    for k in 1..c.len() {
        s = s * x + c[k] - x;
    }
    s
}

/// Values by value: a struct and a tuple (their gradients values of their types).
#[derive(Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

/// A stop-gradient: `#[adgen::inactive]`, its calls carry no derivative.
#[adgen::inactive]
pub fn stop(x: f64) -> f64 {
    x
}

// @diff(damped_grad: (active) -> active)
pub fn damped(x: f64) -> f64 {
    x * stop(x)
}

/// `#[no_mangle]` (debug information names it by its symbol), small enough for rustc to inline
/// it wherever it is called, a parameter `d_u` beside `u`: its derivatives are named `dd_`.
#[adgen::diff(spread_grad: (dup, dup) -> active)]
#[no_mangle]
pub fn spread(u: &[f64], d_u: &[f64]) -> f64 {
    u[0] * d_u[1]
}

/// What adgen cannot differentiate (inline assembly), with its derivative written by hand.
pub fn root(x: f64) -> f64 {
    let y: f64;
    unsafe { core::arch::asm!("sqrtsd {0}, {1}", out(xmm_reg) y, in(xmm_reg) x) };
    y
}

#[adgen::derivative(root: (active) -> active)]
pub fn root_grad(x: f64, d_ret: f64) -> (f64, f64) {
    (root(x), 0.5 / root(x) * d_ret)
}

// @diff(hyp_grad: (active, active) -> active)
pub fn hyp(a: f64, b: f64) -> f64 {
    root(a * a + b * b)
}

// @diff(dist_grad: (active, active) -> active)
pub fn dist(p: Point, q: (f64, f64)) -> f64 {
    ((p.x - q.0).powi(2) + (p.y - q.1).powi(2)).sqrt()
}

include!(concat!(env!("CARGO_MANIFEST_DIR"), "/target/adgen/fit.adgen.rs"));
"""

BUILD = """\
fn main() {
    println!("cargo:rustc-link-search=native={}/target/adgen", env!("CARGO_MANIFEST_DIR"));
    println!("cargo:rustc-link-lib=static=geo_adgen");
}
"""

MAIN = """\
use geo::fit::{damped_grad, dist_grad, hyp_grad, loss, loss_dir, loss_grad, poly, poly_grad, risk_grad, spread_grad, Linear,
               Model, Point, Scored};
use geo::shapes::inner::{energy, energy_grad};

fn main() {
    let x = [0.9, -0.2, 0.5];
    let mut d = [0.0; 3];
    energy_grad(&x, &mut d, 1.0);
    let mut worst: f64 = 0.0;
    let h = 1e-6;
    for i in 0..3 {
        let (mut up, mut down) = (x, x);
        up[i] += h;
        down[i] -= h;
        worst = worst.max((d[i] - (energy(&up) - energy(&down)) / (2.0 * h)).abs());
    }
    // The model trait, generic loss and methods over Vec<f64>, from the library crate.
    let m = Linear { w: vec![0.5, -1.0], bias: 0.25 };
    let (rows, y) = (vec![1.0, 2.0, -0.5, 0.3, 0.0, 1.5], [0.7, -0.1, 0.4]);
    let mut dm = Linear { w: vec![0.0; 2], bias: 0.0 };
    let value = loss_grad(&m, &mut dm, &rows, &y, 1.0);
    worst = worst.max((value - loss(&m, &rows, &y)).abs());
    for k in 0..3 {
        let (mut up, mut down) = (Linear { w: m.w.clone(), bias: m.bias }, Linear { w: m.w.clone(), bias: m.bias });
        let mut t = Linear { w: vec![0.0; 2], bias: 0.0 };
        if k < 2 { up.w[k] += h; down.w[k] -= h; t.w[k] = 1.0; } else { up.bias += h; down.bias -= h; t.bias = 1.0; }
        let fd = (loss(&up, &rows, &y) - loss(&down, &rows, &y)) / (2.0 * h);
        let g = if k < 2 { dm.w[k] } else { dm.bias };
        worst = worst.max((fd - g).abs()).max((fd - loss_dir(&m, &t, &rows, &y)).abs());
    }
    let (boxed, mut d_boxed): (Box<dyn Model>, Box<dyn Model>) =  // (trait objects: the same gradient)
        (Box::new(Linear { w: m.w.clone(), bias: m.bias }), Box::new(Linear { w: vec![0.0; 2], bias: 0.0 }));
    let risk = risk_grad(&*boxed, &mut *d_boxed, &rows, &y, 1.0);
    let (mut dm3, mut t) = (Linear { w: vec![0.0; 2], bias: 0.0 }, Linear { w: vec![0.0; 2], bias: 0.0 });
    loss_grad(&m, &mut dm3, &rows, &y, 1.0);
    std::mem::swap(&mut t, unsafe { &mut *(&mut *d_boxed as *mut dyn Model as *mut Linear) });
    worst = worst.max((risk - value).abs()).max((t.w[0] - dm3.w[0]).abs() + (t.w[1] - dm3.w[1]).abs() + (t.bias - dm3.bias).abs());
    let (score, d_s) = m.d_score(2.0, 1.0);
    worst = worst.max((score - 1.5).abs()).max((d_s - 1.0).abs());
    let prior = vec![0.1, 0.2];
    let (mut dm2, mut dprior) = (Linear { w: vec![0.0; 2], bias: 0.0 }, vec![0.0; 2]);
    m.decay_grad(&mut dm2, &prior, &mut dprior, 1.0);
    for k in 0..2 {
        worst = worst.max((dm2.w[k] - (m.w[k] - prior[k])).abs()).max((dprior[k] + (m.w[k] - prior[k])).abs());
    }
    let c: [f64; 3] = [1.5, -0.5, 2.0];
    let mut dc = [0.0; 3];
    let (p, dx) = poly_grad(0.7, &c, &mut dc, 1.0);
    worst = worst.max((p - poly(0.7, &c)).abs()).max((dx - (poly(0.7 + h, &c) - poly(0.7 - h, &c)) / (2.0 * h)).abs());
    let cf = [1.5f32, -0.5, 2.0];
    let mut dcf = [0.0f32; 3];
    let (_, dxf) = poly_grad::<f32>(0.7, &cf, &mut dcf, 1.0);
    worst = worst.max((dxf as f64 - dx).abs() * 1e-3).max((dcf[0] as f64 - dc[0]).abs() * 1e-3);
    worst = worst.max((damped_grad(1.5, 1.0).1 - 1.5).abs());  // (stop's value, not its derivative)
    let (d, gp, gq) = dist_grad(Point { x: 3.0, y: 4.0 }, (0.0, 0.0), 1.0);
    worst = worst.max((d - 5.0).abs()).max((gp.x - 0.6).abs()).max((gp.y - 0.8).abs());
    worst = worst.max((gq.0 + 0.6).abs()).max((gq.1 + 0.8).abs());
    let (h, da, db) = hyp_grad(3.0, 4.0, 1.0);  // (through root_grad, written by hand)
    worst = worst.max((h - 5.0).abs()).max((da - 0.6).abs()).max((db - 0.8).abs());
    let (mut dd_u, mut dd_d_u) = ([0.0; 2], [0.0; 2]);
    let s = spread_grad(&[1.0, 2.0], &mut dd_u, &[3.0, 4.0], &mut dd_d_u, 1.0);
    worst = worst.max((s - 4.0).abs()).max((dd_u[0] - 4.0).abs() + dd_u[1].abs() + dd_d_u[0].abs() + (dd_d_u[1] - 1.0).abs());
    println!("{}", if worst < 1e-6 { "ok" } else { "WRONG" });
}
"""


def _workspace(root: Path) -> Path:
    files = {
        "Cargo.toml": '[workspace]\nmembers = ["util", "geo", "app"]\n',
        "util/Cargo.toml": '[package]\nname = "util"\nversion = "0.1.0"\nedition = "2021"\n',
        "util/src/lib.rs": UTIL,
        "geo/Cargo.toml": ('[package]\nname = "geo"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
                           f'util = {{ path = "../util" }}\nadgen = {{ path = "{CRATE}" }}\n'),
        "geo/build.rs": BUILD,
        "geo/src/lib.rs": LIB,
        "geo/src/shapes.rs": SHAPES,
        "geo/src/model.rs": MODEL,
        "geo/src/fit.rs": FIT,
        "app/Cargo.toml": ('[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
                           'geo = { path = "../geo" }\n'),
        "app/src/main.rs": MAIN,
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _cargo(folder: str, *args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    """cargo of a toolchain's folder (its rustc first on the PATH, adgen's programs after it)."""
    env = {**os.environ, "PATH": os.pathsep.join([folder, str(Path(sys.executable).parent), os.environ["PATH"]]),
           "RUSTC": str(Path(folder) / "rustc"), "CARGO_TERM_COLOR": "never"}
    env.pop("ADGEN_RUSTC", None)
    done = subprocess.run([str(Path(folder) / "cargo"), *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=600)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


needs_cargo = pytest.mark.skipif(not TOOLCHAINS, reason="no cargo with its rustc on the PATH (.ci/run installs "
                                 "Debian's rustc and cargo)")


@needs_cargo
@pytest.mark.parametrize("folder, version", TOOLCHAINS, ids=[f"rust-{v}" for _, v in TOOLCHAINS])
def test_a_workspace_gets_its_gradients_then_cargo_test_and_run_work(tmp_path, folder, version):
    root = _workspace(tmp_path)
    built = _cargo(folder, "adgen", "build", cwd=root)
    assert "geo: wrote" in built.stderr and "energy_grad" in built.stderr and "misfit_grad" in built.stderr
    assert "norm_grad" in built.stderr and "loss_grad__Linear" in built.stderr and "poly_grad__f32" in built.stderr
    out = root / "geo" / "target" / "adgen"
    assert {p.name for p in out.iterdir()} >= {"libgeo_adgen.a", "shapes.adgen.rs", "model.adgen.rs", "fit.adgen.rs"}
    tested = _cargo(folder, "test", "-q", "-p", "geo", cwd=root)
    assert "1 passed" in tested.stdout, tested.stdout
    ran = _cargo(folder, "run", "-q", "-p", "app", cwd=root)
    assert ran.stdout.strip() == "ok", ran.stdout + ran.stderr
    again = _cargo(folder, "adgen", "build", "-p", "geo", "--release", cwd=root)  # (only geo; release profile)
    assert "geo: wrote" in again.stderr


@needs_cargo
def test_a_function_cargo_does_not_compile_is_an_error_at_its_line(tmp_path):
    folder = TOOLCHAINS[0][0]
    root = _workspace(tmp_path)
    (root / "geo" / "src" / "stray.rs").write_text("// @diff(f_grad: (dup) -> active)\npub fn f(x: &[f64]) -> f64 "
                                                   "{ x[0] * x[0] }\n")  # (no `mod stray;`: not the library's)
    done = _cargo(folder, "adgen", "build", cwd=root, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert re.search(r"stray\.rs:2:8: error: 'f' is not in cargo's compile of the library", done.stderr), done.stderr


@needs_cargo
def test_a_derivative_written_by_hand_whose_wrappers_cargo_does_not_compile_is_an_error_at_it(tmp_path):
    """The glue derivative code calls a derivative written by hand through is in the wrappers:
    a module that does not `include!` them has none (an error at the derivative, nothing linked)."""
    folder = TOOLCHAINS[0][0]
    root = _workspace(tmp_path)
    lib = root / "geo" / "src" / "lib.rs"
    lib.write_text("pub mod hand;\n" + lib.read_text())
    (root / "geo" / "src" / "hand.rs").write_text(
        "pub fn cube(x: f64) -> f64 {\n    x * x * x\n}\n\n"
        "// @derivative(cube: (active) -> active)\npub fn cube_grad(x: f64, d_ret: f64) -> (f64, f64) {\n"
        "    (cube(x), 3.0 * x * x * d_ret)\n}\n\n"
        "// @diff(total_grad: (dup) -> active)\npub fn total(x: &[f64]) -> f64 {\n"
        "    let mut s = 0.0;\n    for v in x {\n        s += cube(*v).sin();\n    }\n    s\n}\n")
    done = _cargo(folder, "adgen", "build", cwd=root, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert re.search(r"hand\.rs:6:8: error: the wrappers of hand\.rs are not in cargo's compile of the library "
                     r"\(include! hand\.adgen\.rs in it\)", done.stderr), done.stderr
    # (no derivatives: the archive is the empty one cargo's link line needs while it compiles the library)
    assert (root / "geo" / "target" / "adgen" / "libgeo_adgen.a").read_bytes() == b"!<arch>\n"


@needs_cargo
def test_a_call_into_code_without_bitcode_is_an_error_at_its_line(tmp_path):
    """std's code is not bitcode: a call adgen cannot follow is located in the user's file."""
    folder = TOOLCHAINS[0][0]
    root = _workspace(tmp_path)
    shapes = (root / "geo" / "src" / "shapes.rs")
    shapes.write_text(shapes.read_text().replace("x.sin() + util::scale(x)",
                                                 "x.sin() + format!(\"{}\", x).len() as f64 * x"))
    done = _cargo(folder, "adgen", "build", cwd=root, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert re.search(r"shapes\.rs:\d+:\d+: error: cannot differentiate", done.stderr), done.stderr


def test_cargo_adgen_help_says_what_to_add():
    done = subprocess.run([sys.executable, "-m", "adgen.commands.cargo", "build", "--help"], capture_output=True,
                          text=True)
    assert done.returncode == 0
    assert "cargo:rustc-link-lib=static=<crate>_adgen" in done.stdout and "include!(" in done.stdout
    assert shutil.which("cargo-adgen", path=str(Path(sys.executable).parent)), "pip installs cargo-adgen"


@needs_cargo
def test_quick_fuzz_run_of_rust_crates():
    """tests/rust_fuzzer.py at a fixed seed with the newest toolchain: no wrong derivative, no
    failed build that is not a located refusal."""
    import rust_fuzzer

    failures, right, unsure, refused = rust_fuzzer.fuzz(crates=4, seed=20261130, cargo_folder=TOOLCHAINS[-1][0])
    assert failures == [], failures[0][:4000]
    assert right + unsure + sum(refused.values()) >= 4


@needs_cargo
def test_two_annotated_files_of_one_name_are_an_error_at_the_second(tmp_path):
    """Each file's outputs are named by its stem: a second annotated `model.rs` is refused, at
    its first line, before cargo compiles anything, and nothing is written."""
    folder = TOOLCHAINS[0][0]
    root = _workspace(tmp_path)
    (root / "geo" / "src" / "extra").mkdir()
    (root / "geo" / "src" / "extra" / "model.rs").write_text("// @diff(g_grad: (dup) -> active)\n"
                                                             "pub fn g(x: &[f64]) -> f64 { x[0] }\n")
    done = _cargo(folder, "adgen", "build", cwd=root, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert re.search(r"geo/src/model\.rs:1:1: error: a second annotated file named 'model\.rs' \(the first: "
                     r"\S*geo/src/extra/model\.rs\)", done.stderr), done.stderr  # (in path order)
    assert not (root / "geo" / "target").exists()


def _package(name: str, modules: dict[str, str]) -> dict[str, str]:
    """A library package of annotated modules, linking its derivatives as the README says."""
    files = {f"{name}/Cargo.toml": f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n',
             f"{name}/build.rs": BUILD.replace("geo_adgen", f"{name}_adgen"),
             f"{name}/src/lib.rs": "".join(f"pub mod {m};\n" for m in modules)}
    for module, body in modules.items():
        files[f"{name}/src/{module}.rs"] = (f"{body}\ninclude!(concat!(env!(\"CARGO_MANIFEST_DIR\"), "
                                            f"\"/target/adgen/{module}.adgen.rs\"));\n")
    return files


@needs_cargo
def test_modules_and_crates_may_derive_functions_of_one_name(tmp_path):
    """`grad` in two modules of one crate and in a module of another, both linked into one
    program (as ADBench's Rust crates derive `dcompute_reproj_error` in `safe` and `unsafe`):
    each derivative's C function is named by its crate and file (`grad__adgen_one_safe`), its
    wrapper by the entry."""
    folder = TOOLCHAINS[0][0]
    root = tmp_path / "ws"
    square = "// @diff(grad: (dup) -> active)\npub fn f(x: &[f64]) -> f64 {{ {} }}\n"
    files = {"Cargo.toml": '[workspace]\nmembers = ["one", "two", "app"]\n',
             **_package("one", {"safe": square.format("x[0] * x[1]"), "fast": square.format("x[0].sin() * x[1]")}),
             **_package("two", {"safe": square.format("x[0] + 3.0 * x[1]")}),
             "app/Cargo.toml": ('[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
                                'one = { path = "../one" }\ntwo = { path = "../two" }\n'),
             "app/src/main.rs": """fn main() {
    let x = [0.5, 2.0];
    let (mut a, mut b, mut c) = ([0.0; 2], [0.0; 2], [0.0; 2]);
    one::safe::grad(&x, &mut a, 1.0);
    one::fast::grad(&x, &mut b, 1.0);
    two::safe::grad(&x, &mut c, 1.0);
    assert_eq!((a, c), ([2.0, 0.5], [1.0, 3.0]));
    assert!((b[0] - 0.5f64.cos() * 2.0).abs() < 1e-15 && b[1] == 0.5f64.sin());
    println!("ok");
}
"""}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    built = _cargo(folder, "adgen", "build", cwd=root)
    assert "one: wrote" in built.stderr and "(grad, grad)" in built.stderr, built.stderr
    ran = _cargo(folder, "run", "-q", "-p", "app", cwd=root)
    assert ran.stdout.strip() == "ok", ran.stdout + ran.stderr
