// ADBench's ODE (tests/ui/autodiff/adbench/ode-real): the Brusselator's right-hand side, whose
// adjoint the crate's C entry points take with its parameters (3.4, 1, 10) and time 2.1; its
// vector-Jacobian product as to the state and the parameters, safe and unsafe, against central
// differences of the crate's own primal (every tenth state value, and the parameters; a step of
// 1e-4: the sum of 2,048 products of values near 1e4 rounds too much for a smaller one).
mod common;
use common::*;

const N: usize = 32;
const P: [f64; 3] = [3.4, 1.0, 10.0];

fn rhs(v: &[f64]) -> Vec<f64> {
    let (mut du, mut dv) = ([0.0; N * N], [0.0; N * N]);
    let u: &[f64; N * N] = v[..N * N].try_into().unwrap();
    let w: &[f64; N * N] = v[N * N..2 * N * N].try_into().unwrap();
    let p: &[f64; 3] = v[2 * N * N..].try_into().unwrap();
    ode_real::safe::brusselator_2d_loop(&mut du, &mut dv, u, w, p, 2.1);
    du.iter().chain(&dv).copied().collect()
}

#[test]
fn brusselator_against_differences() {
    let state: Vec<f64> = values(2 * N * N, 6).iter().map(|a| 1.0 + 0.5 * a).collect();
    let seed = values(2 * N * N, 7);
    for safe in [true, false] {
        let mut adjoint: [f64; 2 * N * N] = seed.clone().try_into().unwrap();
        let x: [f64; 2 * N * N] = state.clone().try_into().unwrap();
        let (mut dx, mut dp) = ([0.0; 2 * N * N], [0.0; 3]);
        if safe {
            ode_real::rust_dbrusselator_2d_loop_safe(&mut adjoint, &x, &mut dx, &P, &mut dp, 2.1);
        } else {
            ode_real::rust_dbrusselator_2d_loop_unsf(&mut adjoint, &x, &mut dx, &P, &mut dp, 2.1);
        }
        let full: Vec<f64> = state.iter().chain(&P).copied().collect();
        let gradient: Vec<f64> = dx.iter().chain(&dp).copied().collect();
        let picked: Vec<usize> = (0..2 * N * N).step_by(10).chain(2 * N * N..2 * N * N + 3).collect();
        let at = |v: &[f64]| {
            let mut moved = full.clone();
            for (k, &i) in picked.iter().enumerate() {
                moved[i] = v[k];
            }
            rhs(&moved)
        };
        let sub: Vec<f64> = picked.iter().map(|&i| full[i]).collect();
        let sub_gradient: Vec<f64> = picked.iter().map(|&i| gradient[i]).collect();
        report(if safe { "brusselator (safe)" } else { "brusselator (unsafe)" },
               vjp_error(&sub, &seed, &sub_gradient, &at, 1e-4));
    }
}
