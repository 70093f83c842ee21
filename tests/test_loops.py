"""Loop analysis (ir_ad/analysis/loops.py): which loops have a trip count known when they start, and that
reverse mode gets every loop shape right, whether its storage is allocated ahead (known trip
count) or grows (unknown)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from test_forward import D, I, P, _grad_fd, arr, close, fn

SHAPES = {
    # name: (loop, whether its trip count is known on entry)
    "up": ("for (int i = 0; i < n; i++)", True),
    "up_from_two": ("for (int i = 2; i < n; i++)", True),
    "up_inclusive": ("for (int i = 1; i <= n - 1; i++)", True),
    "down": ("for (int i = n - 1; i >= 0; i--)", True),
    "unsigned_up": ("for (unsigned i = 0; i < (unsigned)n; i++)", True),
    "long_up": ("for (long i = 0; i < (long)n; i++)", True),
    "step_two": ("for (int i = 0; i < n; i += 2)", True),
    "step_three_from_one": ("for (int i = 1; i < n; i += 3)", True),
    "step_two_inclusive": ("for (int i = 1; i <= n - 1; i += 2)", True),
    "down_by_three": ("for (int i = n - 1; i >= 0; i -= 3)", True),
    "down_by_two_exclusive": ("for (int i = n - 1; i > 0; i -= 2)", True),
    "unsigned_step_four": ("for (unsigned i = 0; i < (unsigned)n; i += 4)", True),
    "long_step_eight": ("for (long i = 0; i < (long)n; i += 8)", True),
    "step_two_until_equal": ("for (int i = 0; i != n - n % 2; i += 2)", False),
    "early_exit": ("for (int i = 0; i < n && x[i] < 10.0; i++)", False),
    # by pointer (std::fill, a vector's construction): the inner loop runs once, naming the index
    "pointer_until_end": ("for (const double *p = x; p != x + n; p++) for (long i = p - x, k = 1; k; k = 0)", True),
    "pointer_down_to_start": ("for (const double *p = x + n; p != x; ) for (long i = --p - x, k = 1; k; k = 0)", True),
    "pointer_below_end": ("for (const double *p = x; p < x + n; p++) for (long i = p - x, k = 1; k; k = 0)", True),
    "pointer_by_two": ("for (const double *p = x; p < x + n; p += 2) for (long i = p - x, k = 1; k; k = 0)", True),
}


def source(name: str, loop: str) -> str:
    return f"""#include <math.h>
// @diff({name}_grad: (dup, const) -> activeonly)
double {name}(const double *x, int n)
{{
    double s = 0.5;
    {loop}
        s = s * cos(x[i]) + x[i] * x[i];
    return s;
}}
"""


def optimized(text: str, tmp_path):
    """The module adgen differentiates: the source lowered by clang, then optimized."""
    from adgen.ir_ad import optimize
    from adgen.ir_ad.ir import Module
    from adgen.commands.build.lower import BASE_FLAGS

    src = tmp_path / "loop.c"
    src.write_text(text)
    bc = tmp_path / "loop.bc"
    subprocess.run([sys.executable, "-m", "ziglang", "cc", *BASE_FLAGS, str(src), "-o", str(bc)], check=True)
    tm = optimize.target_machine(None, None)
    return Module(optimize.prepare(optimize.link([bc.read_bytes()]), tm))


@pytest.mark.parametrize("name", SHAPES)
def test_trip_count_known_on_entry(name, tmp_path):
    from adgen.ir_ad.analysis.flow import CFG
    from adgen.ir_ad.analysis.loops import LoopForest

    loop, known = SHAPES[name]
    module = optimized(source(name, loop), tmp_path)
    fn_ = module.functions[f"@{name}"]
    forest = LoopForest(fn_, CFG(fn_))
    assert len(forest.loops) == 1
    assert (forest.loops[0].trip is not None) == known


@pytest.mark.parametrize("name", SHAPES)
def test_gradient_for_each_loop_shape(name, build_lib):
    loop, _ = SHAPES[name]
    lib = build_lib(source(name, loop))
    primal = fn(lib, name, D, P, I)
    grad = fn(lib, f"{name}_grad", D, P, P, I, D)
    for n in (1, 2, 3, 7, 8, 9, 17):
        x = [0.2 + 0.3 * k * (-1) ** k for k in range(n)]
        g = arr([0.0] * n)
        grad(arr(x), g, n, 1.0)
        for k in range(n):
            assert close(g[k], _grad_fd(lambda v: primal(arr(v), n), x, k)), (n, k)


CARRIED_OUT_OF_AN_INNER_LOOP = r"""
#include <math.h>
// @diff(nest_grad: (dup, const) -> activeonly)
double nest(const double *x, int n)
{
    double t = 0.5, s = 1.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            s = s * t;
            t = hypot(x[j], 1.0 + i);
        }
    return s;
}
"""


def test_a_value_an_inner_loop_leaves_to_the_next_outer_iteration(build_lib):
    """Each outer iteration starts from the t of the inner loop's last iteration: the reverse
    sweep took it from the inner iteration it was at (hypot(x[0], i) for hypot(x[n-1], i); found
    by the fuzzer as f160)."""
    lib = build_lib(CARRIED_OUT_OF_AN_INNER_LOOP)
    primal = fn(lib, "nest", D, P, I)
    grad = fn(lib, "nest_grad", None, P, P, I, D)
    for n in (1, 2, 3, 4):
        x = [0.3, -0.7, 1.1, 0.4][:n]
        g = arr([0.0] * n)
        grad(arr(x), g, n, 1.0)
        for k in range(n):
            assert close(g[k], _grad_fd(lambda v: primal(arr(v), n), x, k)), (n, k)


def test_irreducible_loop_is_a_located_error(adgen, c_file):
    src = c_file("""
// @diff(f_grad: (active, const) -> activeonly)
double f(double x, int n)
{
    int i = 0;
    if (n > 3)
        goto inside;
    while (i < n) {
        x = x * 1.5;
    inside:
        x = x + 0.25;
        i++;
    }
    return x;
}
""")
    result = adgen("build", src, "-o", src.parent / "out")
    assert result.status == 1
    assert "error: cannot differentiate a loop with more than one way in" in result.err
    assert f"{src.name}:" in result.err and "f_grad" in result.err
    assert not (src.parent / "out" / "src.adgen.o").exists()
