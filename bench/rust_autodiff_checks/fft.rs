// ADBench's FFT (tests/ui/autodiff/adbench/fft): `foobar`, an FFT and its inverse in place, its
// vector-Jacobian product (the data's shadow a seed in, the gradient out), safe and unsafe,
// against central differences of the crate's own primal.
mod common;
use common::*;

#[test]
fn fft_then_inverse_against_differences() {
    let n = 16; // (complex numbers: 2 n values)
    let x = values(2 * n, 4);
    let seed = values(2 * n, 5);
    for safe in [true, false] {
        let (mut data, mut gradient) = (x.clone(), seed.clone());
        if safe {
            fft::safe::rust_dfoobar(n, data.as_mut_ptr(), gradient.as_mut_ptr());
        } else {
            fft::unsf::rust_unsafe_dfoobar(n, data.as_mut_ptr(), gradient.as_mut_ptr());
        }
        let f = |v: &[f64]| {
            let mut d = v.to_vec();
            if safe {
                fft::safe::rust_foobar(n, d.as_mut_ptr());
            } else {
                fft::unsf::rust_unsafe_foobar(n, d.as_mut_ptr());
            }
            d
        };
        report(if safe { "fft (safe)" } else { "fft (unsafe)" }, vjp_error(&x, &seed, &gradient, &f, 1e-6));
    }
}
