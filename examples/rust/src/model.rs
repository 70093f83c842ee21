//! A spring network's energy, written as plain Rust: adgen differentiates it.

#[repr(C)]
pub struct Springs {
    pub rest: [f64; 3],
    pub stiffness: [f64; 3],
}

/// The energy of a chain of 4 masses at positions `x` joined by 3 springs, pulled by `force`.
// @diff(energy_grad: (dup, const, active) -> activeonly)
// @diff(energy_dir: forward[2] (dual, const, const) -> dualonly)
pub fn energy(x: &[f64], springs: &Springs, force: f64) -> f64 {
    let stretch = x.windows(2).zip(springs.rest.iter()).map(|(w, r)| w[1] - w[0] - r);
    let elastic: f64 = stretch.zip(springs.stiffness.iter()).map(|(s, k)| 0.5 * k * s * s).sum();
    elastic - force * x[x.len() - 1]
}
