"""The PyTorch bridge: a C gradient inside loss.backward(). Runs where torch is installed
(pip install torch==2.13.0), and is skipped with that reason elsewhere."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0 to run this test)")

import adgen  # noqa: E402
import adgen.torch  # noqa: E402

SOURCE = r"""
#include <math.h>
// @diff(energy_grad: (dup, const, active) -> activeonly)
double energy(const double *x, int n, double k)
{
    double e = 0;
    for (int i = 0; i < n; i++)
        e += k * x[i] * x[i] + sin(x[i]);
    return e;
}
"""


def test_c_gradient_in_backward(tmp_path):
    src = tmp_path / "energy.c"
    src.write_text(SOURCE)
    lib = adgen.load(src)
    energy = adgen.torch.function(lib, "energy_grad")
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    k = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    loss = 3.0 * energy(x, 3, k) + (x * x).sum()
    loss.backward()
    reference_x = x.detach().clone().requires_grad_()
    reference_k = k.detach().clone().requires_grad_()
    (3.0 * (reference_k * reference_x * reference_x + torch.sin(reference_x)).sum()
     + (reference_x * reference_x).sum()).backward()
    assert torch.allclose(x.grad, reference_x.grad) and torch.allclose(k.grad, reference_k.grad)


def test_only_reverse_scalar_derivatives(tmp_path):
    src = tmp_path / "f.c"
    src.write_text("// @diff(f_fwd: (dual) -> dual)\ndouble f(double x) { return x * x; }\n")
    with pytest.raises(ValueError, match="must be a reverse-mode derivative"):
        adgen.torch.function(adgen.load(src), "f_fwd")
