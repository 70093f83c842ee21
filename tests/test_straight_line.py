"""Width-1 reverse-mode derivatives without a loop are left scalar (optimize.scalar_where_straight):
which functions are chosen, from the IR text, and that the chosen ones compute the same gradient."""

import math
import re

import pytest

from adgen.ir_ad import optimize
from adgen.ir_ad.ir import branching_back
from adgen.ir_ad.ir.edit import with_function_attribute
from conftest import central_difference

MODULE = """
define double @straight(double %x) #0 {
entry:
  %c = fcmp olt double %x, 0.0
  br i1 %c, label %neg, label %done
neg:
  %n = fneg double %x
  br label %done
done:
  %r = phi double [ %n, %neg ], [ %x, %entry ]
  %s = call double @helper(double %r)
  call void @"adgen.log.grow"(ptr null)
  ret double %s
}

define internal void @"adgen.log.grow"(ptr %log) {
entry:
  br label %again
again:
  %k = phi i64 [ 0, %entry ], [ %l, %again ]
  %l = add i64 %k, 1
  %more = icmp ult i64 %l, 8
  br i1 %more, label %again, label %done
done:
  ret void
}

define internal double @helper(double %x) #1 {
  %y = fmul double %x, %x
  ret double %y
}

define double @looping(double %x, i32 %n) #0 {
entry:
  br label %"loop.body"
"loop.body":
  %i = phi i32 [ 0, %entry ], [ %j, %"loop.body" ]
  %a = phi double [ %x, %entry ], [ %b, %"loop.body" ]
  %b = fmul double %a, %x
  %j = add i32 %i, 1
  %more = icmp slt i32 %j, %n
  br i1 %more, label %"loop.body", label %out
out:
  ret double %b
}

define double @calls_looping(double %x) #0 {
  %y = call double @looping(double %x, i32 3)
  ret double %y
}

define double @out_of_order(double %x) #0 {
entry:
  br label %second
first:
  ret double %x
second:
  br label %first
}

define double @through_pointer(ptr %f, double %x) #0 {
  %y = call double %f(double %x)
  ret double %y
}

attributes #0 = { nounwind }
attributes #1 = { nounwind readnone }
"""


def _attributes(text: str, name: str) -> str:
    """A definition's function attributes: what its `define` line says after the parameters, and
    its attribute group's (`#N`) words."""
    line = next(x for x in text.split("\n") if x.startswith("define") and f"@{name}(" in x)
    tail = line[line.rindex(")"):]
    group = re.search(r"#(\d+)", tail)
    found = group and re.search(rf"^attributes #{group.group(1)} = ({{[^\n]*}})", text, re.M)
    return tail + (" " + found.group(1) if found else "")


def test_a_function_branching_back_is_one_that_may_loop():
    assert branching_back(MODULE) == {'@"adgen.log.grow"', "@looping", "@out_of_order"}


def test_the_attribute_goes_before_the_definitions_group():
    text = with_function_attribute(MODULE, {"@straight", "@helper"}, "noimplicitfloat")
    assert _attributes(text, "straight") == ") noimplicitfloat #0 { { nounwind }"
    assert _attributes(text, "helper") == ") noimplicitfloat #1 { { nounwind readnone }"
    assert _attributes(text, "looping") == ") #0 { { nounwind }"
    assert with_function_attribute(MODULE, set(), "noimplicitfloat") is MODULE


def test_only_entries_that_run_straight_through_all_they_call_are_left_scalar():
    entries = {"straight", "looping", "calls_looping", "through_pointer"}
    text = optimize.scalar_where_straight(MODULE, entries)
    marked = {n for n in ("straight", "looping", "calls_looping", "through_pointer", "helper", "out_of_order")
              if "noimplicitfloat" in _attributes(text, n)}
    assert marked == {"straight"}  # (its helper is inlined into it or keeps its own attributes;
    # the loop of adgen's runtime it calls does none of its arithmetic)


SOURCE = r"""
#include <math.h>
// @diff(pose_grad: (dup, const) -> activeonly; pose_fwd: (dual, const) -> dualonly)
double pose(const double *x, double f)
{
    double r = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    double u = (x[0] * cos(r) + x[1] * sin(r)) / (x[2] + 3.0), v = (x[1] * cos(r) - x[0] * sin(r)) / (x[2] + 3.0);
    return f * (u * u + v * v) + x[0] * x[1] * x[2];
}

// @diff(chain_grad: (dup, const) -> activeonly)
double chain(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i] * sin(x[i]);
    return s;
}
"""


@pytest.mark.slow
def test_a_straight_gradient_is_scalar_and_right(tmp_path, adgen, build_lib):
    """The loop-free function's gradient is marked (and the optimized module packs none of its
    arithmetic), its forward derivative and the gradient with a loop are not; the marked gradient
    agrees with central differences."""
    (tmp_path / "src.c").write_text(SOURCE)
    assert adgen("build", "-q", tmp_path / "src.c", "-o", tmp_path / "out", "--emit-llvm").status == 0
    text = (tmp_path / "out" / "src.adgen.ll").read_text()
    assert "noimplicitfloat" in _attributes(text, "pose_grad")
    assert "noimplicitfloat" not in _attributes(text, "pose_fwd")
    assert "noimplicitfloat" not in _attributes(text, "chain_grad")
    body = text[text.index("@pose_grad("):]
    body = body[:body.index("\n}\n")]
    assert not re.search(r"= f(?:mul|add|sub|div) (?:\w+ )*<\d+ x double>", body)

    import ctypes
    lib = build_lib(SOURCE)
    lib.pose.restype = ctypes.c_double
    lib.pose.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.c_double]
    lib.pose_grad.restype = None
    lib.pose_grad.argtypes = [ctypes.POINTER(ctypes.c_double)] * 2 + [ctypes.c_double] * 2
    point = [0.3, -0.7, 1.1]
    x, dx = (ctypes.c_double * 3)(*point), (ctypes.c_double * 3)()
    lib.pose_grad(x, dx, 2.5, 1.0)
    for k in range(3):
        def along(t, k=k):
            moved = (ctypes.c_double * 3)(*point)
            moved[k] = t
            return lib.pose(moved, 2.5)
        assert math.isclose(dx[k], central_difference(along, point[k]), rel_tol=1e-6, abs_tol=1e-9)
