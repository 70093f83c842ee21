// ADBench's LSTM (tests/ui/autodiff/adbench/lstm): the objective's gradient as to the main and
// extra parameters, safe and unsafe (whose state is a `Const` raw pointer the objective updates
// and reads again), against central differences of the crate's own primal, each evaluation from
// the same initial state.
mod common;
use common::*;

const L: usize = 2;
const C: usize = 4;
const B: usize = 3;
const MAIN: usize = 2 * L * 4 * B;

fn objective(v: &[f64], state0: &[f64], sequence: &[f64], safe: bool) -> Vec<f64> {
    let (main, extra) = v.split_at(MAIN);
    let (mut state, mut loss) = (state0.to_vec(), 0.0);
    let (l, c, b) = (L as i32, C as i32, B as i32);
    if safe {
        lstm::rust_safe_lstm_objective(l, c, b, main.as_ptr(), extra.as_ptr(), state.as_mut_ptr(), sequence.as_ptr(),
                                       &mut loss);
    } else {
        lstm::rust_unsafe_lstm_objective(l, c, b, main.as_ptr(), extra.as_ptr(), state.as_mut_ptr(), sequence.as_ptr(),
                                         &mut loss);
    }
    vec![loss]
}

#[test]
fn objective_against_differences() {
    let v: Vec<f64> = values(MAIN + 3 * B, 5).iter().map(|a| 0.5 * a).collect();
    let (state0, sequence) = (values(2 * L * B, 6), values(C * B, 7));
    let (l, c, b) = (L as i32, C as i32, B as i32);
    for safe in [true, false] {
        let (main, extra) = v.split_at(MAIN);
        let (mut dmain, mut dextra) = (vec![0.0; main.len()], vec![0.0; extra.len()]);
        let (mut state, mut loss, mut dloss) = (state0.clone(), 0.0, 1.0);
        if safe {
            lstm::rust_safe_dlstm_objective(l, c, b, main.as_ptr(), dmain.as_mut_ptr(), extra.as_ptr(),
                                            dextra.as_mut_ptr(), state.as_mut_ptr(), sequence.as_ptr(), &mut loss,
                                            &mut dloss);
        } else {
            lstm::rust_unsafe_dlstm_objective(l, c, b, main.as_ptr(), dmain.as_mut_ptr(), extra.as_ptr(),
                                              dextra.as_mut_ptr(), state.as_mut_ptr(), sequence.as_ptr(), &mut loss,
                                              &mut dloss);
        }
        let gradient: Vec<f64> = dmain.iter().chain(&dextra).copied().collect();
        report(if safe { "lstm (safe)" } else { "lstm (unsafe)" },
               vjp_error(&v, &[1.0], &gradient, &|v| objective(v, &state0, &sequence, safe), 1e-6));
    }
}
