"""The TensorFlow bridge (api/tensorflow.py): a C function as a TensorFlow op whose gradient is
the reverse entry, whose forward derivative (tf.autodiff.ForwardAccumulator) is the forward
entry and whose second derivatives are the `forward of REVERSE` entry; checked with
`tf.test.compute_gradient` at orders 1 and 2, eagerly and in tf.function, batched; every
missing entry an error naming what to annotate. Runs where TensorFlow is installed (.ci/run
installs tensorflow-cpu 2.21.0), and is skipped with that reason elsewhere."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="tensorflow is not installed (.ci/run installs tensorflow-cpu==2.21.0; "
                                              "pip install tensorflow-cpu to run these tests)")

import adgen  # noqa: E402
import adgen.tensorflow  # noqa: E402
from test_jax import SOURCE  # noqa: E402  (the same C functions as the JAX bridge's tests)

X = np.linspace(0.2, 1.1, 12)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    src = tmp_path_factory.mktemp("tensorflow") / "energy.c"
    src.write_text(SOURCE)
    return adgen.load(src)


@pytest.fixture(scope="module")
def energy(lib):
    return adgen.tensorflow.function(lib, "energy")


def _grad(lib, x, k, n=12):
    shadow = np.zeros(len(x))
    gk = lib.energy_grad(np.array(x), shadow, k, n, 1.0)
    return shadow, gk


def _error(a, b):
    return max(float(np.max(np.abs(u - w))) for u, w in zip(a, b))


def test_values_eagerly_and_in_tf_function(lib, energy):
    x = tf.constant(X)
    want = lib.energy(X.copy(), 0.7, 12)
    assert float(energy(x, 0.7, 12)) == pytest.approx(want, rel=1e-14)
    assert float(tf.function(lambda x: energy(x, 0.7, 12))(x)) == pytest.approx(want, rel=1e-14)
    assert np.array_equal(x.numpy(), X), "the C function wrote into the tensor"


def test_compute_gradient_first_and_second_order(energy):
    x, k = tf.constant(X), tf.constant(0.7, tf.float64)
    theoretical, numerical = tf.test.compute_gradient(lambda x, k: energy(x, k, 12), [x, k], delta=1e-6)
    assert _error(theoretical, numerical) < 1e-6

    def gradient(x, k):
        with tf.GradientTape() as tape:
            tape.watch([x, k])
            e = energy(x, k, 12)
        gx, gk = tape.gradient(e, [x, k])
        return tf.concat([gx, [gk]], 0)

    theoretical, numerical = tf.test.compute_gradient(gradient, [x, k], delta=1e-6)
    assert _error(theoretical, numerical) < 1e-5
    theoretical_in_graph, _ = tf.test.compute_gradient(tf.function(gradient), [x, k], delta=1e-6)
    assert _error(theoretical, theoretical_in_graph) < 1e-12


def test_forward_accumulator_runs_the_forward_entry(lib, energy, monkeypatch):
    calls = []
    real = adgen.tensorflow.call_numpy
    monkeypatch.setattr(adgen.tensorflow, "call_numpy", lambda sig, key, *a: calls.append(key) or real(sig, key, *a))
    x, k = tf.constant(X), tf.constant(0.7, tf.float64)
    v = tf.constant(np.cos(np.arange(12.0)))
    with tf.autodiff.ForwardAccumulator([x, k], [v, tf.constant(0.5, tf.float64)]) as acc:
        e = energy(x, k, 12)
    gx, gk = _grad(lib, X, 0.7)
    assert float(acc.jvp(e)) == pytest.approx(float(gx @ v.numpy() + 0.5 * gk), rel=1e-12)
    assert "forward" in calls


def test_hessians_tape_in_tape_and_forward_over_reverse(lib, energy):
    x, k = tf.constant(X), tf.constant(0.7, tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            e = energy(x, k, 12)
        g = inner.gradient(e, x)
    hessian = outer.jacobian(g, x).numpy()
    eps = 1e-5
    fd = np.array([(_grad(lib, X + eps * u, 0.7)[0] - _grad(lib, X - eps * u, 0.7)[0]) / (2 * eps)
                   for u in np.eye(12)])
    np.testing.assert_allclose(hessian, fd, rtol=1e-4, atol=1e-4)
    v = tf.constant(np.sin(np.arange(12.0)))
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            e = energy(x, k, 12)
        g = tape.gradient(e, x)
    np.testing.assert_allclose(acc.jvp(g).numpy(), hessian @ v.numpy(), rtol=1e-10, atol=1e-10)


def test_batched_rows(lib):
    energy = adgen.tensorflow.function(lib, "energy", batched=True)
    xs = tf.constant(np.stack([X * s for s in (0.5, 1.0, 1.5)]))
    ks = tf.constant([0.2, 0.7, 1.1], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch([xs, ks])
        e = energy(xs, ks, 12)
    assert e.shape == (3,)
    np.testing.assert_allclose(e, [lib.energy(np.array(x), float(k), 12) for x, k in zip(xs, ks)], rtol=1e-14)
    gx, gk = tape.gradient(e, [xs, ks])
    for i in range(3):
        want_x, want_k = _grad(lib, xs[i].numpy(), float(ks[i]))
        np.testing.assert_allclose(gx[i], want_x, rtol=1e-12)
        assert float(gk[i]) == pytest.approx(want_k, rel=1e-12)
    theoretical, numerical = tf.test.compute_gradient(lambda x, k: energy(x, k, 12), [xs, ks], delta=1e-6)
    assert _error(theoretical, numerical) < 1e-5


def test_float_functions(lib):
    norm = adgen.tensorflow.function(lib, "norm")
    x = tf.constant([3.0, 4.0], tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = norm(x, 2.0, 2)
    assert y.dtype == tf.float32 and float(y) == pytest.approx(10.0)
    np.testing.assert_allclose(tape.gradient(y, x), [1.2, 1.6], rtol=1e-6)


def test_missing_entries_and_const_parameters_are_errors(lib):
    rosen = adgen.tensorflow.function(lib, "rosen")
    x = tf.constant([0.5, -0.3, 1.2], tf.float64)
    with tf.autodiff.ForwardAccumulator(x, tf.ones(3, tf.float64)) as acc:  # (no forward entry: the gradient, dotted)
        y = rosen(x, 3)
    shadow = np.zeros(3)
    lib.rosen_grad(x.numpy(), shadow, 3, 1.0)
    assert float(acc.jvp(y)) == pytest.approx(shadow.sum(), rel=1e-12)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = rosen(x, 3)
        g = inner.gradient(y, x)
    with pytest.raises(NotImplementedError, match=r"second derivative needs an entry `forward of rosen_grad"):
        outer.jacobian(g, x)
    cube = adgen.tensorflow.function(lib, "cube")
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = cube(x, 3)
    with pytest.raises(NotImplementedError, match=r"tape.gradient needs an entry `reverse \(dup, ...\) -> active`"):
        tape.gradient(y, x)
    norm = adgen.tensorflow.function(lib, "norm")
    scale = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(scale)
        y = norm(tf.ones(2), scale, 2)
    with pytest.raises(NotImplementedError, match=r"with respect to 'scale' of norm: norm_grad makes it const"):
        tape.gradient(y, scale)
    with pytest.raises(NotImplementedError, match=r"with respect to 'scale' of norm: norm_grad makes it const"):
        with tf.autodiff.ForwardAccumulator(scale, tf.constant(1.0)) as acc:
            acc.jvp(norm(tf.ones(2), scale, 2))
    with pytest.raises(TypeError, match=r"'n' is an integer, fixed when the function is traced"):
        tf.function(lambda n: rosen(x, n))(tf.constant(3))
    with pytest.raises(ValueError, match=r"'x' has 2 elements; @size\(x=n\) says it holds 5"):
        norm(tf.ones(2), 1.0, 5)


def test_saved_model_runs_in_the_process_that_saved_it(lib, tmp_path):
    """A saved graph holds the op as a call back into Python (the choice the module's docstring
    explains): it runs where it was saved; a fresh process gets TensorFlow's error, not a crash."""
    energy = adgen.tensorflow.function(lib, "energy")

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([12], tf.float64)])
        def __call__(self, x):
            return energy(x, 0.7, 12)

    tf.saved_model.save(Model(), str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    assert float(loaded(tf.constant(X))) == pytest.approx(lib.energy(X.copy(), 0.7, 12), rel=1e-14)
    fresh = subprocess.run([sys.executable, "-c", "import numpy as np, tensorflow as tf\n"
                            f"m = tf.saved_model.load({str(tmp_path / 'saved')!r})\n"
                            "try:\n    m(tf.constant(np.ones(12)))\n"
                            "except Exception as e:\n    print('refused:', type(e).__name__)\n"],
                           capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 0 and "refused: InvalidArgumentError" in fresh.stdout, fresh.stderr[-2000:]
