"""The JAX bridge (api/jax.py): C functions as JAX primitives called through XLA's FFI, checked
with JAX's own `check_grads` (orders 1 and 2, modes fwd and rev) and against finite differences,
under jit and vmap; the width-N entries counted (a vmap over 64 tangents is 8 calls of a width-8
entry); every missing entry an error naming what to annotate. Runs where jax is installed (.ci/run
installs jax[cpu] 0.10.2), and is skipped with that reason elsewhere."""

from __future__ import annotations

import ctypes
import stat

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="jax is not installed (.ci/run installs jax==0.10.2 jaxlib==0.10.2; "
                                        "pip install 'jax[cpu]' to run these tests)")
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import adgen  # noqa: E402
import adgen.jax  # noqa: E402

SOURCE = r"""
#include <math.h>
int calls;  /* how many times the function, or a derivative of it, ran */

/* @diff(energy_grad: reverse (dup, active, const) -> activeonly;
         energy_fwd: forward (dual, dual, const) -> dual;
         energy_fwd8: forward[8] (dualv, dualv, const) -> dual;
         energy_fwd4: forward[4] (dualv, dual, const) -> dual;
         energy_rev4: reverse[4] (dupv, active, const) -> active;
         energy_hvp: forward of energy_grad (dual, dual, dual, const, const) -> dualonly) */
double energy(double *x, double k, int n)  /* (writes x: the bridge passes it a copy) */
{
    calls++;
    double e = 0;
    for (int i = 0; i + 1 < n; i++) {
        e += k * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + sin(x[i]) * x[n - 1];
        x[i] = 0;
    }
    return e;
}

/* @diff(rosen_grad: (dup, const) -> active) */
double rosen(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i + 1 < n; i++)
        s += 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]);
    return s;
}

/* @diff(cube_fwd: forward (dual, const) -> dual) */
double cube(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i] * x[i];
    return s;
}

/* @size(x=n) @diff(norm_fwd: forward (dual, const, const) -> dual; norm_grad: (dup, const, const) -> active) */
float norm(const float *x, float scale, int n)
{
    float s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return scale * sqrtf(s);
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    src = tmp_path_factory.mktemp("jax") / "energy.c"
    src.write_text(SOURCE)
    return adgen.load(src)


@pytest.fixture(scope="module")
def energy(lib):
    return adgen.jax.function(lib, "energy")


def _calls(lib) -> int:
    return ctypes.c_int.in_dll(lib._dll, "calls").value


X = np.linspace(0.2, 1.1, 12)


def _fd(lib, x, k, n, h=1e-6):
    f = lambda x, k: lib.energy(np.array(x), k, n)  # noqa: E731
    gx = np.array([(f(x + h * e, k) - f(x - h * e, k)) / (2 * h) for e in np.eye(len(x))])
    return gx, (f(x, k + h) - f(x, k - h)) / (2 * h)


def test_values_eager_and_jit(lib, energy):
    x = jnp.asarray(X)
    want = lib.energy(X.copy(), 0.7, 12)
    assert float(energy(x, 0.7, 12)) == pytest.approx(want, rel=1e-14)
    assert float(jax.jit(energy, static_argnums=2)(x, 0.7, 12)) == pytest.approx(want, rel=1e-14)
    assert np.array_equal(np.asarray(x), X), "the C function wrote into the array JAX gave it"


def test_gradients_against_finite_differences(lib, energy):
    gx, gk = jax.jit(jax.grad(energy, argnums=(0, 1)), static_argnums=2)(jnp.asarray(X), 0.7, 12)
    fx, fk = _fd(lib, X, 0.7, 12)
    np.testing.assert_allclose(gx, fx, rtol=1e-6, atol=1e-7)
    assert float(gk) == pytest.approx(fk, rel=1e-6)
    _, tangent = jax.jvp(lambda x, k: energy(x, k, 12), (jnp.asarray(X), 0.7), (jnp.ones(12), 0.5))
    assert float(tangent) == pytest.approx(fx.sum() + 0.5 * fk, rel=1e-6)


@pytest.mark.parametrize("jit", [False, True])
def test_check_grads_orders_1_and_2(energy, jit):
    f = (lambda x, k: energy(x, k, 12))
    check_grads(jax.jit(f) if jit else f, (jnp.asarray(X), 0.7), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_hessian_forward_over_reverse(lib, energy):
    """jax.hessian (jacfwd of jacrev: the `of` entry) equals the Jacobian of finite-difference gradients."""
    h = jax.hessian(energy)(jnp.asarray(X), 0.7, 12)
    eps = 1e-5
    fd = np.array([(_fd(lib, X + eps * e, 0.7, 12)[0] - _fd(lib, X - eps * e, 0.7, 12)[0]) / (2 * eps)
                   for e in np.eye(12)])
    np.testing.assert_allclose(h, fd, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(h, jax.jacrev(jax.jacrev(energy))(jnp.asarray(X), 0.7, 12), rtol=1e-12, atol=1e-10)


def test_vmap_over_64_tangents_calls_the_width_8_entry_8_times(lib, energy):
    x = jnp.linspace(0.1, 0.9, 64)
    tangents = jax.random.normal(jax.random.PRNGKey(0), (64, 64), dtype=jnp.float64)
    jvp = jax.jit(lambda t: jax.jvp(lambda x: energy(x, 0.7, 64), (x,), (t,))[1])
    jvp(tangents[0])  # (compiled, and run once)
    batched = jax.jit(jax.vmap(jvp))
    batched.lower(tangents).compile()
    before = _calls(lib)
    out = batched(tangents).block_until_ready()
    assert _calls(lib) - before == 8  # 64 lanes in calls of 8 (the primal value, unused, compiled away)
    np.testing.assert_allclose(out, [jvp(t) for t in tangents], rtol=1e-12)
    before = _calls(lib)
    jacobian = jax.jacfwd(energy)(x, 0.7, 64)
    assert _calls(lib) - before == 8 + 1
    np.testing.assert_allclose(jacobian, jax.grad(energy)(x, 0.7, 64), rtol=1e-12)


def test_width_entries_take_scalar_tangents_interleaved_or_one_per_lane(lib):
    """dualv gives a scalar's N tangents as one array, dual as N scalars (`abi.md`): the Jacobian
    in (x, k) is the same through either, and through the reverse entry."""
    x = jnp.linspace(0.1, 0.9, 10)
    want = jax.grad(adgen.jax.function(lib, "energy"), argnums=(0, 1))(x, 0.7, 10)
    for entry in ("energy_fwd8", "energy_fwd4"):
        energy = adgen.jax.function(lib, "energy", forward_batch=entry)
        before = _calls(lib)
        got = jax.jit(jax.jacfwd(energy, argnums=(0, 1)), static_argnums=2)(x, 0.7, 10)
        assert _calls(lib) - before == (2 if entry == "energy_fwd8" else 3)  # (11 tangents, in lanes of 8 or 4)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        assert float(got[1]) == pytest.approx(float(want[1]), rel=1e-12)


def test_vmap_over_64_seeds_calls_the_width_4_entry_16_times(lib, energy):
    x = jnp.linspace(0.1, 0.9, 64)
    _, vjp = jax.vjp(lambda x, k: energy(x, k, 64), x, 0.7)
    seeds = jnp.arange(64.0)
    before = _calls(lib)
    gx, gk = jax.vmap(vjp)(seeds)
    assert _calls(lib) - before == 16
    g = jax.grad(energy, argnums=(0, 1))(x, 0.7, 64)
    np.testing.assert_allclose(gx, seeds[:, None] * g[0], rtol=1e-12)
    np.testing.assert_allclose(gk, seeds * g[1], rtol=1e-12)


def test_vmap_over_inputs_loops(lib, energy):
    xs = jnp.stack([jnp.asarray(X) * s for s in (0.5, 1.0, 1.5)])
    ks = jnp.asarray([0.2, 0.7, 1.1])
    values = jax.jit(jax.vmap(energy, (0, 0, None)), static_argnums=2)(xs, ks, 12)
    np.testing.assert_allclose(values, [lib.energy(np.array(x), float(k), 12) for x, k in zip(xs, ks)], rtol=1e-14)
    grads = jax.vmap(jax.grad(energy), (0, 0, None))(xs, ks, 12)
    np.testing.assert_allclose(grads, [jax.grad(energy)(x, k, 12) for x, k in zip(xs, ks)], rtol=1e-14)


def test_float_functions_without_64_bit_mode(lib):
    norm = adgen.jax.function(lib, "norm")
    x = jnp.asarray([3.0, 4.0], jnp.float32)
    assert norm(x, 2.0, 2).dtype == jnp.float32
    assert float(norm(x, 2.0, 2)) == pytest.approx(10.0)
    np.testing.assert_allclose(jax.grad(norm)(x, 2.0, 2), [1.2, 1.6], rtol=1e-6)
    check_grads(lambda x: norm(x, 2.0, 2), (x,), order=1, modes=("fwd", "rev"), atol=1e-2, rtol=1e-2)


def test_missing_entries_and_const_parameters_are_errors(lib):
    rosen = adgen.jax.function(lib, "rosen")
    x = jnp.asarray([0.5, -0.3, 1.2])
    np.testing.assert_allclose(jax.grad(rosen)(x, 3), _rosen_grad(lib, x), rtol=1e-12)
    _, tangent = jax.jvp(lambda x: rosen(x, 3), (x,), (x,))  # (no forward entry: the gradient, dotted)
    assert float(tangent) == pytest.approx(float(_rosen_grad(lib, x) @ x), rel=1e-12)
    with pytest.raises(NotImplementedError, match=r"second derivative needs an entry `forward of rosen_grad"):
        jax.hessian(rosen)(x, 3)
    norm = adgen.jax.function(lib, "norm")
    with pytest.raises(NotImplementedError, match=r"with respect to 'scale' of norm: norm_grad makes it const"):
        jax.grad(norm, argnums=1)(jnp.ones(2, jnp.float32), 2.0, 2)
    with pytest.raises(NotImplementedError, match=r"with respect to 'scale' of norm: norm_fwd makes it const"):
        jax.jvp(lambda s: norm(jnp.ones(2, jnp.float32), s, 2), (2.0,), (1.0,))
    cube = adgen.jax.function(lib, "cube")
    with pytest.raises(NotImplementedError, match=r"jax.grad needs an entry `reverse \(dup, ...\) -> active` of cube"):
        jax.grad(cube)(x, 3)
    assert float(jax.jvp(lambda x: cube(x, 3), (x,), (jnp.ones(3),))[1]) == pytest.approx(float(3 * (x * x).sum()))


def _rosen_grad(lib, x):
    shadow = np.zeros(len(x))
    lib.rosen_grad(np.array(x), shadow, len(x), 1.0)
    return shadow


def test_arguments_are_checked(lib, energy):
    with pytest.raises(TypeError, match=r"'n' is an integer, fixed when the function is traced: pass a Python int"):
        jax.jit(energy)(jnp.asarray(X), 0.7, 12)
    norm = adgen.jax.function(lib, "norm")
    with pytest.raises(ValueError, match=r"'x' has 2 elements; @size\(x=n\) says it holds 5"):
        norm(jnp.ones(2, jnp.float32), 1.0, 5)
    with pytest.raises(TypeError, match=r"energy\(\) takes 3 arguments \(x, k, n\), not 2"):
        energy(jnp.asarray(X), 0.7)
    with jax.enable_x64(False):
        with pytest.raises(TypeError, match=r"'x' is float64 in C, and JAX gives float32: enable 64-bit floats"):
            energy(np.asarray(X), 0.7, 12)
    with pytest.raises(ValueError, match=r"has no annotated function 'nothing'"):
        adgen.jax.function(lib, "nothing")


def test_handlers_are_kept_in_a_private_cache(lib, energy):
    from adgen.base.user_cache import cache_folder

    folder = cache_folder("xla")
    assert folder.is_dir() and stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert any(folder.glob("handlers-*.so"))
