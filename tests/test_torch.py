"""The PyTorch bridge: a C gradient inside loss.backward(), from a split-mode entry whose forward
sweep runs once per forward/backward pair. Runs where torch is installed (pip install torch),
and is skipped with that reason elsewhere."""

from __future__ import annotations

import gc

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch to run this test)")

import adgen  # noqa: E402
import adgen.torch  # noqa: E402
from adgen.library import Library  # noqa: E402
from conftest import compile_c  # noqa: E402

SOURCE = r"""
#include <math.h>
void tick(void);  /* counts evaluations; defined apart, so the user's code and adgen's count together */

// @diff(energy_split: split (dup, const, active) -> active)
double energy(const double *x, int n, double k)
{
    double e = 0;
    tick();
    for (int i = 0; i < n; i++)
        e += k * x[i] * x[i] + sin(x[i]);
    return e;
}
"""

COUNTER = "static int calls; void tick(void) { calls++; } int evaluations(void) { return calls; }\n"


@pytest.fixture
def lib(tmp_path, adgen):
    """Built as users do (not adgen.load), to link one counter for both copies of the code."""
    src, counter = tmp_path / "energy.c", tmp_path / "counter.c"
    src.write_text(SOURCE)
    counter.write_text(COUNTER)
    assert adgen("build", "-q", src, "-o", tmp_path / "out").status == 0
    compile_c("-shared", "-fPIC", "-O2", src, counter, tmp_path / "out" / "energy.adgen.o", "-o", tmp_path / "lib.so")
    return Library(tmp_path / "lib.so", [tmp_path / "out" / "energy.adgen.json"])


def _reference(x, k):
    rx, rk = x.detach().clone().requires_grad_(), k.detach().clone().requires_grad_()
    (3.0 * (rk * rx * rx + torch.sin(rx)).sum() + (rx * rx).sum()).backward()
    return rx.grad, rk.grad


def test_c_gradient_in_backward_one_evaluation_per_pair(lib):
    energy = adgen.torch.function(lib, "energy_split")
    evaluations = lib._dll.evaluations
    for step in range(3):
        x = torch.tensor([0.5, -1.0, 2.0 + step], dtype=torch.float64, requires_grad=True)
        k = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
        before = evaluations()
        loss = 3.0 * energy(x, 3, k) + (x * x).sum()
        loss.backward()
        assert evaluations() - before == 1  # the forward sweep; backward only reverses its tape
        gx, gk = _reference(x, k)
        assert torch.allclose(x.grad, gx) and torch.allclose(k.grad, gk)


def test_a_forward_never_reversed_is_released(lib):
    energy = adgen.torch.function(lib, "energy_split")
    x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    for _ in range(100):
        energy(x, 2, 1.0)  # the graph, and its tape, are dropped at once
    gc.collect()
    (energy(x, 2, 1.0) * 2).backward()
    assert torch.allclose(x.grad, 2 * (2 * x.detach() + torch.cos(x.detach())))


def test_only_split_entries(tmp_path):
    src = tmp_path / "f.c"
    src.write_text("// @diff(f_grad: (active) -> active)\ndouble f(double x) { return x * x; }\n")
    with pytest.raises(ValueError, match="must be a split-mode entry"):
        adgen.torch.function(adgen.load(src), "f_grad")
