"""The optimization after differentiation: what it is allowed to make of derivative code."""

import math
import platform
import sys

import pytest

from adgen.base.timing import pass_times, section
from adgen.base.toolchain import select_compiler
from adgen.ir_ad import optimize
from adgen.ir_ad.cc1 import Cc1

# After differentiation the bundled clang's cc1 optimizes and emits (ir_ad/cc1.py), llvmlite
# where the user's --cc is another clang: both must do the same.
BACKENDS = ["llvmlite", "cc1"]


def backend(name: str, march: str | None = None):
    """A target machine and the cc1 to pass (None: llvmlite's own passes)."""
    chosen = optimize.machine(None, march)
    cc1 = Cc1.bundled(select_compiler(None), chosen) if name == "cc1" else None
    assert name == "llvmlite" or cc1 is not None  # the ziglang wheel's clang is llvmlite's LLVM
    return optimize.create(chosen), cc1

# eight independent multiply-adds of adjacent doubles: what a derivative of straight-line code is
EIGHT_STREAMS = "define void @streams(ptr noalias %a, ptr noalias %b, ptr noalias %out) {\n" + "".join(
    f"  %pa{i} = getelementptr inbounds double, ptr %a, i64 {i}\n"
    f"  %pb{i} = getelementptr inbounds double, ptr %b, i64 {i}\n"
    f"  %po{i} = getelementptr inbounds double, ptr %out, i64 {i}\n"
    f"  %x{i} = load double, ptr %pa{i}\n  %y{i} = load double, ptr %pb{i}\n"
    f"  %m{i} = fmul double %x{i}, %y{i}\n  %s{i} = fadd double %m{i}, %x{i}\n"
    f"  store double %s{i}, ptr %po{i}\n" for i in range(8)) + "  ret void\n}\n"


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="needs an x86-64 host for an AVX-512 target")
@pytest.mark.parametrize("name", BACKENDS)
def test_straight_line_derivative_code_is_vectorized_at_most_four_lanes_wide(name):
    tm, cc1 = backend(name, "znver4")
    module = optimize.finish(optimize.parse(EIGHT_STREAMS), {"streams"}, tm, cc1=cc1)
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


@pytest.mark.parametrize("name", BACKENDS)
def test_finish_keeps_what_the_exported_functions_call_and_drops_the_rest(name):
    tm, cc1 = backend(name)
    module = optimize.finish(optimize.parse(REACHED), {"exported"}, tm, cc1=cc1)
    names = {fn.name for fn in module.functions if not fn.is_declaration}
    assert names == {"exported", "helper"}, str(module)
    assert optimize.emit_object(module, tm, cc1=cc1)[:4] == b"\x7fELF" or platform.system() != "Linux"


@pytest.mark.parametrize("name", BACKENDS)
def test_pass_timings_name_the_passes_and_add_up_to_the_time_they_took(name):
    tm, cc1 = backend(name)
    optimizing, emitting = [], []
    module = optimize.finish(optimize.parse(EIGHT_STREAMS), {"streams"}, tm, timings=optimizing, cc1=cc1)
    assert optimize.emit_object(module, tm, timings=emitting, cc1=cc1)
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


def test_section_keeps_one_table_of_clangs_time_report():
    report = ("===----===\n  Pass execution timing report\n===----===\n"
              "   0.3000 ( 75.0%)   0.0000 (  0.0%)   0.3000 ( 75.0%)   0.3000 ( 75.0%)  InstCombinePass\n"
              "===----===\n  Clang time report\n===----===\n"
              "   0.9000 ( 96.6%)   0.0000 (  0.0%)   0.9000 ( 96.6%)   0.9000 ( 96.6%)  Machine code generation\n")
    kept = section(report, "Pass execution timing report")
    assert "InstCombinePass" in kept and "Machine code generation" not in kept
    assert [name for name, _ in pass_times(kept, 1.0)] == ["InstCombine"]


def test_cc1_is_used_only_for_the_bundled_clang():
    chosen = optimize.machine(None, None)
    assert Cc1.bundled(select_compiler(None), chosen) is not None
    other = select_compiler(f"{sys.executable} -m ziglang cc")  # the same clang, named otherwise
    assert Cc1.bundled(other, chosen) is None


@pytest.mark.parametrize("compiler", ["bundled", "other"])
def test_each_derivative_its_section_when_the_flags_ask(adgen, tmp_path, compiler):
    """-ffunction-sections after `--`: the object's code generator gives each derivative a
    section, also where another clang lowered the sources (llvmlite, which cannot, then hands the
    object to the bundled clang's code generator: Cc1.emitter)."""
    import llvmlite.binding as llvm
    src = tmp_path / "two.c"
    src.write_text("// @diff(sq_grad: (active) -> active; cube_grad: (active) -> active)\n"
                   "double sq(double x) { return x * x; }\ndouble cube(double x) { return x * x * x; }\n")
    cc = [] if compiler == "bundled" else ["--cc", f"{sys.executable} -m ziglang cc"]
    for flags, want in (([], set()), (["--", "-ffunction-sections"], {".text.sq_grad", ".text.cube_grad"})):
        assert adgen("build", "-q", *cc, src, "-o", tmp_path / "out", *flags).status == 0
        code = (tmp_path / "out" / "two.adgen.o").read_bytes()
        names = {(s.name() or b"").decode() for s in llvm.ObjectFileRef.from_data(code).sections()}
        assert {n for n in names if n.startswith(".text.")} == want


LOOP = """#include <math.h>
// @diff(g_grad: (dup, const) -> active)
double g(const double *x, int n) { double s = 0; for (int i = 0; i < n; i++) s += sin(x[i]) * x[(i + 1) % n]; return s; }
"""


@pytest.mark.slow
def test_another_clang_gives_the_gradient_llvmlite_optimizes(tmp_path_factory):
    """With --cc naming a clang other than the bundled one, llvmlite optimizes and emits: the
    gradient is the one the bundled clang's cc1 gives (up to reassociation), and right."""
    import ctypes as C

    from test_forward import _build_module

    grads = []
    for flags in ((), ("--cc", f"{sys.executable} -m ziglang cc")):
        lib = _build_module(tmp_path_factory, LOOP, *flags)
        grad = lib.g_grad
        grad.restype, grad.argtypes = C.c_double, [C.POINTER(C.c_double), C.POINTER(C.c_double), C.c_int, C.c_double]
        n = 37
        x, dx = (C.c_double * n)(*[0.1 * i - 1.3 for i in range(n)]), (C.c_double * n)()
        grad(x, dx, n, 1.0)
        grads.append(list(dx))
    n = len(grads[0])
    x = [0.1 * i - 1.3 for i in range(n)]
    want = [math.cos(x[i]) * x[(i + 1) % n] + math.sin(x[(i - 1) % n]) for i in range(n)]
    for got in grads:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-14)
