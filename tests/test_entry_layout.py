"""An entry as a pure function (commands/entry_layout.py), what the framework bridges call: which
parameters it reads, writes (zeroed first) or takes as integers, which arrays it is passed a copy
of, and the shapes of what it writes. Needs no framework: the layouts of a built library's
manifest, and `call_numpy` (api/bridge.py) against the library's own functions."""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from adgen.bridge import Signature, call_numpy
from adgen.commands.entry_layout import Unsupported, layout, output_shape

SOURCE = r"""
/* @diff(f_grad: (dup, active, const) -> activeonly; f_fwd4: forward[4] (dualv, dual, const) -> dual;
         f_rev2: reverse[2] (dupv, const, const) -> active;
         f_hvp: forward of f_grad (dual, dual, dual, const, const) -> dualonly) */
double f(double *x, double a, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += a * x[i] * x[i] * x[i];
    return s;
}

/* @diff(g_grad: (dup, const) -> active) */
double g(const double *x, int n) { return x[0] * x[n - 1]; }

/* @diff(h_grad: (const, const) -> active) */
double h(const int *k, int n) { return k[0] * 1.5 + n; }
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    src = tmp_path_factory.mktemp("layout") / "f.c"
    src.write_text(SOURCE)
    return adgen.load(src)


def _kinds(lay):
    return {p.name: (p.kind, p.owner, p.lanes, p.copy) for p in lay.params}


def test_reads_writes_and_integers(lib):
    assert lib._all["f"]["params"][0]["element"].get("const") is None
    assert lib._all["g"]["params"][0]["element"]["const"] is True
    assert _kinds(layout(lib._all, "f_grad", "f")) == {
        "x": ("in", "x", 1, True), "d_x": ("out", "x", 1, False), "a": ("in", "a", 1, False),
        "n": ("int", "", 1, False), "d_ret": ("in", "", 1, False)}
    assert _kinds(layout(lib._all, "g_grad", "g"))["x"] == ("in", "x", 1, False)  # (const: no copy)
    lanes = layout(lib._all, "f_fwd4", "f")
    assert _kinds(lanes)["d_x"] == ("in", "x", 4, True)  # (f writes x, and so its derivative the tangents)
    assert [p.lane for p in lanes.params if p.owner == "a" and p.name != "a"] == [0, 1, 2, 3]
    assert list(lanes.returns) == [("ret", "double", 1), ("d_ret", "double", 4)]
    assert output_shape(layout(lib._all, "f_rev2", "f").outputs[0], {"x": (5,)}) == (10,)


def test_a_derivative_of_a_derivative_writes_the_shadows_and_their_tangents(lib):
    hvp = _kinds(layout(lib._all, "f_hvp", "f"))
    assert hvp["d2_x"][:2] == ("in", "x") and hvp["d_x"][:2] == ("out", "x") and hvp["d2_d_x"][:2] == ("out", "x")
    assert hvp["d_ret"][0] == "in"


def test_unsupported_parameters_are_named(lib):
    with pytest.raises(Unsupported, match=r"'k' of h_grad is passed as ptr:int"):
        layout(lib._all, "h_grad", "h")


def test_call_numpy_matches_the_library(lib):
    sig = Signature(lib, "f", "adgen.jax", {})
    x = np.array([0.5, -1.0, 2.0])
    out = call_numpy(sig, "reverse", {"x": x, "a": 1.5, "d_ret": 2.0}, {"n": 3})
    assert np.allclose(out["d_x"], 2.0 * 1.5 * 3 * x * x) and float(out["d_a"]) == pytest.approx(2.0 * (x ** 3).sum())
    assert np.array_equal(x, [0.5, -1.0, 2.0])
    lanes = call_numpy(sig, "forward_batch", {"x": x, "a": 1.5, "d_x": np.eye(3, 4).reshape(-1),
                                              **{f"d_a_{k}": 0.0 for k in range(4)}}, {"n": 3})
    assert np.allclose(lanes["d_ret"], [4.5 * 0.25, 4.5 * 1.0, 4.5 * 4.0, 0.0])
    with pytest.raises(ValueError, match=r"adgen.jax cannot call h: 'k' of h is passed as ptr:int: the framework bridges pass"):
        Signature(lib, "h", "adgen.jax", {})
