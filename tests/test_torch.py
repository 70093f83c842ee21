"""The PyTorch bridge: a C gradient inside loss.backward(), from a split-mode entry whose forward
sweep runs once per forward/backward pair; gradcheck, backward twice through one graph,
double backward through a Hessian-vector product entry (gradgradcheck), tapes never reversed.
Runs where torch is installed (.ci/run installs torch==2.13.0), and is skipped with that
reason elsewhere. What crashed the process once runs in a subprocess."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (.ci/run installs torch==2.13.0; "
                                            "pip install torch==2.13.0 to run these tests)")

import adgen  # noqa: E402
import adgen.torch  # noqa: E402
from adgen.commands.load import Library  # noqa: E402
from conftest import compile_c  # noqa: E402

SOURCE = r"""
#include <math.h>
void tick(void);  /* counts evaluations; defined apart, so the user's code and adgen's count together */

// @diff(energy_split: split (dup, const, active) -> active; energy_grad: (dup, const, active) -> activeonly)
// @diff(energy_hvp: forward of energy_grad (dual, dual, const, dual, const) -> dualonly)
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


def _isolated(lib, code: str) -> str:
    """Runs `code` in a fresh Python with `lib` (the fixture's library) and `energy` (its bridge),
    so that a crash in C fails the test instead of
    ending pytest; returns its stdout."""
    head = ("import gc, torch, adgen, adgen.torch\n"
            f"lib = adgen.Library({str(lib.path)!r}, [{str(lib.path.parent / 'out' / 'energy.adgen.json')!r}])\n"
            "energy = adgen.torch.function(lib, 'energy_split')\n"
            "x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)\n"
            "k = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)\n")
    done = subprocess.run([sys.executable, "-c", head + code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"exit status {done.returncode}\n{done.stderr}"
    return done.stdout


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


def test_gradcheck_and_backward_twice_through_one_graph(lib):
    """gradcheck reverses one graph several times (retain_graph=True): the tape of the forward
    sweep is reversed by the first backward, and each later one runs a fresh forward sweep
    (a tape reversed twice freed its memory twice: the process aborted). Without retain_graph,
    a second backward gets PyTorch's own error."""
    out = _isolated(lib, """
print(torch.autograd.gradcheck(lambda x, k: energy(x, 3, k), (x, k)))
before = lib._dll.evaluations()
y = energy(x, 3, k)
y.backward(retain_graph=True)
once = x.grad.clone()
y.backward()
print(lib._dll.evaluations() - before, torch.allclose(x.grad, 2 * once))
try:
    y.backward()
except RuntimeError as e:
    print(str(e).split(" (")[0])
""")
    assert out.splitlines() == ["True", "2 True", "Trying to backward through the graph a second time"]


def test_double_backward_through_the_hvp_entry(lib):
    """With `hvp=`, backward is differentiable: gradgradcheck passes, and the gradient of a
    gradient matches PyTorch's own on the same formula (in x, in k and in the seed)."""
    out = _isolated(lib, """
twice = adgen.torch.function(lib, 'energy_split', hvp='energy_hvp')
print(torch.autograd.gradgradcheck(lambda x, k: twice(x, 3, k), (x, k)))
def reference(x, k):
    return (k * x * x + torch.sin(x)).sum()
for f in (lambda x, k: twice(x, 3, k), reference):
    seed = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    gx, gk = torch.autograd.grad(f(x, k), (x, k), seed, create_graph=True)
    second = torch.autograd.grad((gx * gx).sum() + gk * gk, (x, k, seed))
    print(*torch.cat([g.reshape(-1) for g in second]).tolist())
""")
    check, ours, pytorch = out.splitlines()
    assert check == "True"
    assert list(map(float, ours.split())) == pytest.approx(list(map(float, pytorch.split())), rel=1e-12)


def test_double_backward_without_an_hvp_entry_says_so(lib):
    out = _isolated(lib, """
(gx,) = torch.autograd.grad(energy(x, 3, k), x, create_graph=True)
try:
    gx.sum().backward()
except RuntimeError as e:
    print(e)
""")
    assert out.strip() == ("energy_split gives first derivatives only: for double backward, pass "
                           "adgen.torch.function(lib, 'energy_split', hvp=NAME), NAME a forward-over-reverse entry "
                           "of energy (docs/tutorials/pytorch.md)")


def test_the_hvp_entry_is_checked(lib):
    with pytest.raises(ValueError, match="hvp 'energy_grad' must be `forward of GRAD"):
        adgen.torch.function(lib, "energy_split", hvp="energy_grad")
    with pytest.raises(ValueError, match="hvp 'nothing' must be `forward of GRAD"):
        adgen.torch.function(lib, "energy_split", hvp="nothing")


def test_graphs_dropped_before_backward_release_their_tapes(lib):
    """3,000 forward passes whose graphs are dropped unreversed release their tapes (NAME_free):
    the process's resident memory grows by less than a tenth of the 12 MB their loop storage
    (4 KB a tape) would leak."""
    out = _isolated(lib, """
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
big = torch.linspace(-1, 1, 500, dtype=torch.float64, requires_grad=True)
def passes(count):
    for _ in range(count):
        energy(big, 500, 1.0)
passes(300)
gc.collect()
before = rss()
passes(3000)
gc.collect()
print(rss() - before)
""")
    assert int(out) < 1_200_000
