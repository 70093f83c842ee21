// ADBench's Gaussian mixture model (tests/ui/autodiff/adbench/gmm): the objective's gradient as to
// the weights, means and inverse covariance factors, safe and unsafe, against central differences
// of the crate's own primal.
mod common;
use common::*;
use gmm::Wishart;

const D: usize = 3;
const K: usize = 4;
const N: usize = 6;
const ICF: usize = K * D * (D + 1) / 2;

fn objective(v: &[f64], x: &[f64], safe: bool) -> Vec<f64> {
    let (alphas, means, icf) = (&v[..K], &v[K..K + K * D], &v[K + K * D..]);
    let wishart = Wishart { gamma: 1.2, m: 1 };
    let mut err = 0.0;
    if safe {
        gmm::safe::rust_gmm_objective(D, K, N, alphas.as_ptr(), means.as_ptr(), icf.as_ptr(), x.as_ptr(), &wishart,
                                      &mut err);
    } else {
        gmm::r#unsafe::rust_unsafe_gmm_objective(D as i32, K as i32, N as i32, alphas.as_ptr(), means.as_ptr(),
                                                 icf.as_ptr(), x.as_ptr(), &wishart, &mut err);
    }
    vec![err]
}

#[test]
fn objective_against_differences() {
    let v: Vec<f64> = values(K + K * D + ICF, 2).iter().map(|a| 0.5 * a).collect();
    let x = values(N * D, 3);
    let wishart = Wishart { gamma: 1.2, m: 1 };
    for safe in [true, false] {
        let (mut da, mut dm, mut di, mut err, mut derr) = (vec![0.0; K], vec![0.0; K * D], vec![0.0; ICF], 0.0, 1.0);
        let (alphas, means, icf) = (&v[..K], &v[K..K + K * D], &v[K + K * D..]);
        if safe {
            gmm::safe::rust_dgmm_objective(D, K, N, alphas.as_ptr(), da.as_mut_ptr(), means.as_ptr(), dm.as_mut_ptr(),
                                           icf.as_ptr(), di.as_mut_ptr(), x.as_ptr(), &wishart, &mut err, &mut derr);
        } else {
            gmm::r#unsafe::rust_unsafe_dgmm_objective(D as i32, K as i32, N as i32, alphas.as_ptr(), da.as_mut_ptr(),
                                                      means.as_ptr(), dm.as_mut_ptr(), icf.as_ptr(), di.as_mut_ptr(),
                                                      x.as_ptr(), &wishart, &mut err, &mut derr);
        }
        let gradient: Vec<f64> = da.iter().chain(&dm).chain(&di).copied().collect();
        report(if safe { "gmm (safe)" } else { "gmm (unsafe)" },
               vjp_error(&v, &[1.0], &gradient, &|v| objective(v, &x, safe), 1e-6));
    }
}
