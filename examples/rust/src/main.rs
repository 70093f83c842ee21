//! A spring chain's energy: adgen's derivatives of src/model.rs beside finite differences, then
//! gradient descent to its rest position.
mod model;
use model::*;
include!(concat!(env!("OUT_DIR"), "/model.adgen.rs"));

fn check(what: &str, derivative: f64, finite_difference: f64) {
    let ok = (derivative - finite_difference).abs() <= 1e-6 * (1.0 + finite_difference.abs());
    println!("{what:<28} {derivative:15.9}   finite differences {finite_difference:15.9}   {}",
             if ok { "ok" } else { "MISMATCH" });
}

fn main() {
    let springs = Springs { rest: [1.0, 1.0, 1.0], stiffness: [10.0, 20.0, 30.0] };
    let x = [0.0, 1.1, 2.3, 3.2];
    let (force, h) = (2.0, 1e-6);
    let mut dx = [0.0; 4];
    let dforce = energy_grad(&x, &mut dx, &springs, force, 1.0);
    println!("reverse mode: the gradient in one call");
    for i in 0..4 {
        let (mut up, mut down) = (x, x);
        up[i] += h;
        down[i] -= h;
        let fd = (energy(&up, &springs, force) - energy(&down, &springs, force)) / (2.0 * h);
        check(&format!("  d energy / d x[{i}]"), dx[i], fd);
    }
    let fd = (energy(&x, &springs, force + h) - energy(&x, &springs, force - h)) / (2.0 * h);
    check("  d energy / d force", dforce, fd);
    println!("forward mode, two directions in one call");
    let (u, v) = ([1.0, 0.0, 0.0, 1.0], [0.0, 1.0, -1.0, 0.0]);
    let d = energy_dir(&x, &u, &v, &springs, force);
    let along = |dir: &[f64; 4]| {
        let (mut up, mut down) = (x, x);
        for i in 0..4 {
            up[i] += h * dir[i];
            down[i] -= h * dir[i];
        }
        (energy(&up, &springs, force) - energy(&down, &springs, force)) / (2.0 * h)
    };
    check("  along u", d[0], along(&u));
    check("  along v", d[1], along(&v));
    let mut y = x;
    for _ in 0..200 {
        let mut g = [0.0; 4];
        energy_grad(&y, &mut g, &springs, force, 1.0);
        for i in 1..4 {
            y[i] -= 0.02 * g[i]; // the first mass is held
        }
    }
    println!("at rest: x = [{:.4}, {:.4}, {:.4}, {:.4}]", y[0], y[1], y[2], y[3]);
}
