// What each check of an ADBench crate uses: a vector-Jacobian product against central
// differences. Included by each check (bench/rust_autodiff.py copies it beside them).

/// `gradient` (J^T seed, from the crate's derivative) against central differences of
/// `seed . f(x)`, each input moved by `h`: the largest error relative to max(1, |g|).
pub fn vjp_error(x: &[f64], seed: &[f64], gradient: &[f64], f: &dyn Fn(&[f64]) -> Vec<f64>, h: f64) -> f64 {
    let dot = |y: Vec<f64>| y.iter().zip(seed).map(|(a, b)| a * b).sum::<f64>();
    let mut worst = 0.0f64;
    for i in 0..x.len() {
        let (mut up, mut down) = (x.to_vec(), x.to_vec());
        up[i] += h;
        down[i] -= h;
        let fd = (dot(f(&up)) - dot(f(&down))) / (2.0 * h);
        worst = worst.max((gradient[i] - fd).abs() / gradient[i].abs().max(1.0));
    }
    worst
}

/// Numbers in (-1, 1), the same every run.
pub fn values(n: usize, salt: u64) -> Vec<f64> {
    let mut s = 0x9e3779b97f4a7c15u64 ^ salt.wrapping_mul(0x2545f4914f6cdd1d);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

pub fn report(name: &str, error: f64) {
    println!("{name}: largest error {error:.1e}");
    assert!(error < 1e-6, "{name}: the gradient differs from central differences by {error:.1e}");
}
