"""Closures passed in (frontend/rust_closures.py, commands/build/closures.py, specs/annotations.md
"Closures"): `cargo adgen build` derives a function taking `impl Fn`, `F: Fn` or `&F` at each
closure the workspace's targets pass to its derived functions (a binary's closures capturing by
reference and by move, an integration test's), in reverse and forward mode, checked against
central differences in the program; a call it has not seen panics saying to build again; a
place passing closures of two types is an error at it. With each toolchain installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.test_cargo import BUILD, TOOLCHAINS, _cargo, needs_cargo

pytestmark = pytest.mark.slow

QUAD = """\
/// The sum of f over x, weighted by position.
// @diff(integrate_grad: (const, dup) -> active; integrate_tan: forward (const, dual) -> dual)
pub fn integrate(f: impl Fn(f64) -> f64, x: &[f64]) -> f64 {
    x.iter().enumerate().map(|(i, &t)| (i as f64 + 1.0) * f(t)).sum()
}

/// Not generic: called by the binary's closure, its code in this crate's compile.
pub fn bump(t: f64) -> f64 {
    t.sin() * t
}

// @diff(apply_grad: (const, dup, dup))
pub fn apply<F>(f: &F, x: &[f64], y: &mut [f64])
where
    F: Fn(f64) -> f64,
{
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi = f(xi * xi);
    }
}

include!(concat!(env!("CARGO_MANIFEST_DIR"), "/target/adgen/lib.adgen.rs"));
"""

MAIN = """\
fn check(name: &str, got: &[f64], f: &dyn Fn(&[f64]) -> f64, x: &[f64]) {
    for i in 0..x.len() {
        let (mut up, mut down) = (x.to_vec(), x.to_vec());
        up[i] += 1e-6;
        down[i] -= 1e-6;
        let fd = (f(&up) - f(&down)) / 2e-6;
        assert!((got[i] - fd).abs() <= 1e-6 * (1.0 + fd.abs()), "{} d[{}] = {} against {}", name, i, got[i], fd);
    }
}

fn main() {
    let a = 2.5;
    let x = [0.3, -1.2, 0.7];
    let mut d = [0.0; 3];
    let v = quad::integrate_grad(|t| a * t * t, &x, &mut d, 1.0);
    assert!((v - quad::integrate(|t| a * t * t, &x)).abs() < 1e-12);
    check("square", &d, &|x| quad::integrate(|t| a * t * t, x), &x);
    let w = vec![1.0, 2.0, 3.0];
    let mut e = [0.0; 3];
    quad::integrate_grad(move |t| quad::bump(t) * w[1] + t.exp(), &x, &mut e, 1.0);
    check("bump", &e, &|x| quad::integrate(|t| quad::bump(t) * 2.0 + t.exp(), x), &x);
    let dir = [1.0, 0.5, -2.0];
    let (value, tangent) = quad::integrate_tan(|t| a * t * t, &x, &dir);
    assert!((value - v).abs() < 1e-12);
    assert!((tangent - d.iter().zip(&dir).map(|(d, v)| d * v).sum::<f64>()).abs() < 1e-12, "{}", tangent);
    let (mut dx, mut y, mut dy) = ([0.0; 2], [0.0; 2], [1.0, 0.0]);
    quad::apply_grad(&|t: f64| 3.0 * t.sqrt() + t, &[0.5, 2.0], &mut dx, &mut y, &mut dy);
    assert!((dx[0] - 4.0).abs() < 1e-12 && dx[1] == 0.0, "{:?}", dx);  // (3|x| + x^2: 3 + 2x at 0.5)
    println!("ok");
}
"""

TEST = """\
#[test]
fn cube() {
    let x = [0.5, 1.5];
    let mut d = [0.0; 2];
    quad::integrate_grad(|t| t * t * t, &x, &mut d, 1.0);
    assert!((d[0] - 0.75).abs() < 1e-12 && (d[1] - 2.0 * 6.75).abs() < 1e-12, "{:?}", d);
}
"""


def _workspace(root, main: str = MAIN):
    files = {"Cargo.toml": '[workspace]\nmembers = ["quad", "app"]\n',
             "quad/Cargo.toml": '[package]\nname = "quad"\nversion = "0.1.0"\nedition = "2021"\n',
             "quad/build.rs": BUILD.replace("geo_adgen", "quad_adgen"),
             "quad/src/lib.rs": QUAD,
             "app/Cargo.toml": ('[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
                                'quad = { path = "../quad" }\n'),
             "app/src/main.rs": main,
             "app/tests/cube.rs": TEST}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@needs_cargo
@pytest.mark.parametrize("folder, version", TOOLCHAINS, ids=[f"rust-{v}" for _, v in TOOLCHAINS])
def test_closures_the_workspace_passes_are_derived(tmp_path, folder, version):
    root = _workspace(tmp_path)
    built = _cargo(folder, "adgen", "build", cwd=root)
    assert "integrate_grad__c3" in built.stderr and "apply_grad__c1" in built.stderr, built.stderr
    ran = _cargo(folder, "run", "-q", "-p", "app", cwd=root)
    assert ran.stdout.strip() == "ok", ran.stdout + ran.stderr
    tested = _cargo(folder, "test", "-q", "-p", "app", cwd=root)
    assert "1 passed" in tested.stdout, tested.stdout
    # A call the last build did not see: the program stops, saying what to do; built again, it runs.
    main = root / "app" / "src" / "main.rs"
    main.write_text(main.read_text().replace('    println!("ok");', '    let mut n = [0.0; 3];\n'
                                             '    quad::integrate_grad(|t| t.cos(), &x, &mut n, 1.0);\n'
                                             '    check("cos", &n, &|x| quad::integrate(|t| t.cos(), x), &x);\n'
                                             '    println!("ok");'))
    stale = _cargo(folder, "run", "-q", "-p", "app", cwd=root, check=False)
    assert stale.returncode != 0 and "integrate_grad: adgen has no derivative of integrate for the closure passed " \
        "at app/src/main.rs:30:5: run `cargo adgen build` again" in stale.stderr, stale.stderr
    _cargo(folder, "adgen", "build", cwd=root)
    ran = _cargo(folder, "run", "-q", "-p", "app", cwd=root)
    assert ran.stdout.strip() == "ok", ran.stdout + ran.stderr


@needs_cargo
def test_a_place_passing_closures_of_two_types_is_an_error_at_it(tmp_path):
    folder = TOOLCHAINS[0][0]
    main = """\
fn through<G: Fn(f64) -> f64>(g: G) -> f64 {
    let mut d = [0.0];
    quad::integrate_grad(g, &[1.0], &mut d, 1.0)
}

fn main() {
    println!("{}", through(|t| t + 1.0) + through(|t| t * 3.0));
}
"""
    root = _workspace(tmp_path, main)
    done = _cargo(folder, "adgen", "build", cwd=root, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "app/src/main.rs:3:5: error: this call of 'integrate_grad' passes closures of several types" in \
        done.stderr, done.stderr


def test_a_closure_in_a_file_built_on_its_own_says_to_build_the_crate(tmp_path):
    source = tmp_path / "quad.rs"
    source.write_text(QUAD.split("include!")[0])
    done = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "build", str(source), "-o", str(tmp_path / "o")],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{source}:3:21: error: a closure passed in ('impl Fn(f64) -> f64') is differentiated by `cargo adgen " \
           "build`" in done.stderr, done.stderr
    assert not (tmp_path / "o").exists()
