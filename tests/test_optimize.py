"""The optimization after differentiation: what it is allowed to make of derivative code."""

import platform

import pytest

from adgen.base.timing import pass_times
from adgen.ir_ad import optimize

# eight independent multiply-adds of adjacent doubles: what a derivative of straight-line code is
EIGHT_STREAMS = "define void @streams(ptr noalias %a, ptr noalias %b, ptr noalias %out) {\n" + "".join(
    f"  %pa{i} = getelementptr inbounds double, ptr %a, i64 {i}\n"
    f"  %pb{i} = getelementptr inbounds double, ptr %b, i64 {i}\n"
    f"  %po{i} = getelementptr inbounds double, ptr %out, i64 {i}\n"
    f"  %x{i} = load double, ptr %pa{i}\n  %y{i} = load double, ptr %pb{i}\n"
    f"  %m{i} = fmul double %x{i}, %y{i}\n  %s{i} = fadd double %m{i}, %x{i}\n"
    f"  store double %s{i}, ptr %po{i}\n" for i in range(8)) + "  ret void\n}\n"


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="needs an x86-64 host for an AVX-512 target")
def test_straight_line_derivative_code_is_vectorized_at_most_four_lanes_wide():
    tm = optimize.target_machine(None, "znver4")
    module = optimize.parse(EIGHT_STREAMS)
    optimize.finish(module, {"streams"}, tm)
    text = str(module)
    assert "<4 x double>" in text, text
    assert "<8 x double>" not in text, text


# an exported function, the helper it calls (kept out of line) and a source function it never calls
REACHED = """
define internal double @helper(double %x) noinline {
  %y = fmul double %x, %x
  ret double %y
}
define double @unreached(double %x) {
  %y = fadd double %x, 1.0
  ret double %y
}
define double @exported(double %x) {
  %y = call double @helper(double %x)
  ret double %y
}
"""


def test_finish_keeps_what_the_exported_functions_call_and_drops_the_rest():
    tm = optimize.target_machine(None, None)
    module = optimize.parse(REACHED)
    optimize.finish(module, {"exported"}, tm)
    names = {fn.name for fn in module.functions if not fn.is_declaration}
    assert names == {"exported", "helper"}, str(module)


def test_pass_timings_name_the_passes_and_add_up_to_the_time_they_took():
    tm = optimize.target_machine(None, None)
    module = optimize.parse(EIGHT_STREAMS)
    optimizing, emitting = [], []
    optimize.finish(module, {"streams"}, tm, timings=optimizing)
    assert optimize.emit_object(module, tm, timings=emitting)
    optimized = {name for name, _ in optimizing}
    assert {"InstCombine", "SLPVectorizer"} <= optimized, optimized
    assert any("Instruction Selection" in name for name, _ in emitting), emitting
    assert all(seconds >= 0 for _, seconds in optimizing + emitting)


def test_pass_times_shares_a_report_out_over_the_time_measured():
    report = ("   ---User Time---   --System Time--   --User+System--   ---Wall Time---  --- Name ---\n"
              "   0.3000 ( 75.0%)   0.0000 (  0.0%)   0.3000 ( 75.0%)   0.3000 ( 75.0%)  InstCombinePass\n"
              "   0.1000 ( 25.0%)   0.0000 (  0.0%)   0.1000 ( 25.0%)   0.1000 ( 25.0%)  Greedy Register Allocator #2\n"
              "   0.4000 (100.0%)   0.0000 (100.0%)   0.4000 (100.0%)   0.4000 (100.0%)  Total\n")
    times = pass_times(report, 2.0)
    assert [name for name, _ in times] == ["InstCombine", "Greedy Register Allocator"]
    assert [seconds for _, seconds in times] == pytest.approx([1.5, 0.5])
