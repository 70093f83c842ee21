"""The optimization after differentiation: what it is allowed to make of derivative code."""

import platform

import pytest

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
