// ADBench's bundle adjustment (tests/ui/autodiff/adbench/ba): the reprojection error's gradient,
// safe and unsafe, and the Zach weight's, against central differences of the crate's own primal.
mod common;
use common::*;

fn reprojection(v: &[f64], feat: &[f64; 2], safe: bool) -> Vec<f64> {
    let (cam, x, w) = (&v[0..11], &v[11..14], &v[14..15]);
    let mut err = [0.0; 2];
    unsafe {
        if safe {
            ba::safe::compute_reproj_error(cam.as_ptr() as *const [f64; 11], x.as_ptr() as *const [f64; 3],
                                           w.as_ptr() as *const [f64; 1], feat, &mut err);
        } else {
            ba::r#unsafe::compute_reproj_error(cam.as_ptr(), x.as_ptr(), w.as_ptr(), feat.as_ptr(), err.as_mut_ptr());
        }
    }
    err.to_vec()
}

#[test]
fn reprojection_error_against_differences() {
    let mut v = values(15, 1);
    v[6] += 1.0; // (focal length)
    v[13] -= 4.0; // (the point in front of the camera)
    let feat = [0.3, -0.2];
    let seed = [0.7, -1.3];
    for safe in [true, false] {
        let (mut dcam, mut dx, mut dw, mut err, mut derr) = ([0.0; 11], [0.0; 3], [0.0; 1], [0.0; 2], seed);
        unsafe {
            if safe {
                ba::safe::rust_dcompute_reproj_error(v[0..11].as_ptr() as *const [f64; 11], &mut dcam,
                                                     v[11..14].as_ptr() as *const [f64; 3], &mut dx,
                                                     v[14..15].as_ptr() as *const [f64; 1], &mut dw, &feat,
                                                     &mut err, &mut derr);
            } else {
                ba::r#unsafe::rust_unsafe_dcompute_reproj_error(v[0..11].as_ptr(), dcam.as_mut_ptr(), v[11..14].as_ptr(),
                                                                dx.as_mut_ptr(), v[14..15].as_ptr(), dw.as_mut_ptr(),
                                                                feat.as_ptr(), err.as_mut_ptr(), derr.as_mut_ptr());
            }
        }
        let gradient: Vec<f64> = dcam.iter().chain(&dx).chain(&dw).copied().collect();
        report(if safe { "reprojection (safe)" } else { "reprojection (unsafe)" },
               vjp_error(&v, &seed, &gradient, &|v| reprojection(v, &feat, safe), 1e-6));
    }
}

#[test]
fn zach_weight_against_differences() {
    let (w, mut dw, mut err, mut derr) = (0.37, 0.0, 0.0, 1.5);
    ba::rust_dcompute_zach_weight_error(&w, &mut dw, &mut err, &mut derr);
    let f = |v: &[f64]| {
        let mut e = 0.0;
        ba::compute_zach_weight_error(&v[0], &mut e);
        vec![e]
    };
    report("Zach weight", vjp_error(&[w], &[1.5], &[dw], &f, 1e-6));
}
