"""Which values carry tangents in a forward derivative (ir_ad/analysis/forward_activity.py), decided
before any code is written."""

from __future__ import annotations

from adgen.ir_ad.ir import Operand
from test_loops import optimized

SOURCE = r"""
#include <math.h>
double f(const double *x, const double *table, int n, double s, int pick)
{
    const double *p = pick ? x : table;   /* a pointer that may have no shadow */
    double acc = s;
    for (int i = 0; i < n; i++)
        acc += sin(x[i]) * p[i] + (double)i;
    return acc;
}
"""


def _flow(tmp_path, active):
    from adgen.ir_ad.analysis.forward_activity import TangentFlow
    from adgen.ir_ad.shadows import LANES, Layout

    module = optimized(SOURCE, tmp_path)
    fn = module.functions["@f"]
    return fn, TangentFlow(module, fn, active, Layout(module, 1, LANES))


def test_tangents_follow_active_inputs_only(tmp_path):
    fn, flow = _flow(tmp_path, (True, False, False, True, False))
    by_opcode = {}
    for inst in fn.instructions():
        if inst.result:
            by_opcode.setdefault(inst.opcode, []).append(inst.result in flow.active)
    assert any(by_opcode["call"])  # sin(x[i])
    assert not any(by_opcode.get("sitofp", []))  # (double)i: integers carry none
    assert not any(by_opcode.get("icmp", []))
    params = [p.name for p in fn.params]
    assert params[0] in flow.active and params[1] not in flow.active and params[3] in flow.active


def test_a_select_between_shadowed_and_plain_memory_is_masked(tmp_path):
    fn, flow = _flow(tmp_path, (True, False, False, False, False))
    selects = [i for i in fn.instructions() if i.opcode == "select" and i.type.kind == "ptr"]
    assert selects and all(i.result in flow.maybe for i in selects)
    # whether it has a shadow is known only when it runs: a mask of its own, not a constant
    assert all(flow.mask(Operand(i.type, i.result)) not in ("true", "false") for i in selects)


def test_nothing_active_means_no_tangents(tmp_path):
    fn, flow = _flow(tmp_path, (False, False, False, False, False))
    assert not any(i.result in flow.active for i in fn.instructions() if i.opcode != "alloca")
