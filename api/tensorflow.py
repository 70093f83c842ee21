"""A TensorFlow bridge: a C function of an `adgen.load` library as a TensorFlow op with its
derivatives, eagerly and inside `tf.function` graphs.

    lib = adgen.load("energy.c")         # double energy(const double *x, int n), with entries
    energy = adgen.tensorflow.function(lib, "energy")
    with tf.GradientTape() as tape:
        tape.watch(x)
        e = energy(x, 100)
    tape.gradient(e, x)                  # the reverse entry

The op reaches the C code through `tf.numpy_function`, and its derivatives through nested
`tf.custom_gradient`s, one per rule, as `adgen.jax`'s primitives:

| op | computes | entry | gradient |
|---|---|---|---|
| value | f(x) | the function | s ↦ rev(x, s) |
| rev | s·∇f(x) | reverse | w ↦ (s·∇²f(x)·w, lin(x, w)) |
| lin | ∇f(x)·v | forward (or reverse at seed 1) | u ↦ (u·∇²f(x)·v, u·∇f(x)) |
| hvp | s·∇²f(x)·v | forward of reverse | u ↦ (—, ∇²f(x)·v·u, hvp(x, s, u)) |

So `tf.autodiff.ForwardAccumulator`, which differentiates an op's gradient with respect to its
seed, runs the forward entry, and second derivatives (a tape inside a tape, or a forward
accumulator over a tape) run the `forward of REVERSE` entry. A derivative the annotations do not
give raises, naming the entry to add; never a zero in its place.

Why `tf.numpy_function`, not a custom op compiled against TensorFlow's headers: it needs no C++
compiler matching TensorFlow's build and no second library per function, and works eagerly, in
`tf.function` and in Keras models. What it gives up: a graph saved with `tf.saved_model` holds
the op as a call back into the saving process's Python, so it runs in that process only (a
fresh process, or TensorFlow Serving, gets TensorFlow's error: save the weights, not the graph).

`batched=True`: each float argument has a leading batch axis (scalars a vector, arrays one row
each) and the op gives one value per row, looping over the batch inside the one op."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from adgen.bridge import Signature, call_numpy
from adgen.commands.entry_layout import FLOATS


def function(lib, name: str, *, forward: str | None = None, reverse: str | None = None,
             hvp: str | None = None, batched: bool = False):
    """`name`, a function of `lib` (from `adgen.load`) returning a float or double, as a function
    of tensors (its integer parameters: Python ints) with TensorFlow gradients."""
    sig = Signature(lib, name, "adgen.tensorflow", dict(forward=forward, reverse=reverse, hvp=hvp))
    kernels = _Kernels(sig, batched)

    @tf.autograph.experimental.do_not_convert  # (plain Python: nothing for AutoGraph to rewrite)
    def apply(*args, **kwargs):
        floats, ints = sig.bind(args, kwargs)
        ints = {n: sig.static(v, sig.param(n), tf.is_tensor(v)) for n, v in ints.items()}
        xs = [_tensor(v, sig.param(n), name) for n, v in zip(sig.floats, floats)]
        sig.check_lengths({n: x.shape[1:] if batched else x.shape for n, x in zip(sig.floats, xs)
                           if x.shape.is_fully_defined()}, ints)
        ints = tuple(sorted(ints.items()))
        if tf.executing_eagerly() and not _recording():  # (no derivative can be asked of it: the value alone)
            return _numpy(kernels, "value", xs, ints, many=False)
        return _run(kernels, "value", ints, xs)

    apply.__doc__ = f"{name} as a TensorFlow op, with derivatives from " + \
        (", ".join(f"{k} {v}" for k, v in sig.entries.items()) or "no entries")
    apply.__name__ = name
    return apply


def _tensor(value, param: dict, function: str):
    dtype = FLOATS[param["ffi"].removeprefix("ptr:")][2]
    t = value if tf.is_tensor(value) else tf.convert_to_tensor(np.asarray(value, dtype))  # (0.7 as a double)
    if not t.dtype.is_floating and not t.dtype.is_integer:
        raise TypeError(f"{function}(): '{param['name']}' takes floats, not {t.dtype.name}")
    return tf.cast(t, dtype) if t.dtype != dtype else t


class _Kernels:
    """The NumPy functions the ops run: each rule's entry, once per row where batched."""

    def __init__(self, sig: Signature, batched: bool):
        self.sig, self.batched = sig, batched
        self.ops: dict = {}  # (the custom-gradient functions, and the NumPy functions, by kernel and integers)
        self.calls: dict = {}
        self.dtype = sig.dtype
        self.dtypes = [FLOATS[sig.param(n)["ffi"].removeprefix("ptr:")][2] for n in sig.floats]

    def rows(self, one, arrays: list, ints: dict, many: bool):
        """`one` over the batch's rows (arrays all batched, the results stacked)."""
        if not self.batched:
            return one(arrays, ints)
        out = [one([a[i] for a in arrays], ints) for i in range(len(arrays[0]) if arrays else 0)]
        if many:
            return [np.stack([o[k] for o in out]).astype(d) for k, d in enumerate(self.dtypes)]
        return np.asarray(out, self.dtype)

    def value(self, xs, ints):
        values = dict(zip(self.sig.floats, xs))
        return np.asarray(call_numpy(self.sig, "call", values, ints)[self.sig.layouts["call"].returns[0][0]],
                          self.dtype)

    def reverse(self, xs_s, ints):
        *xs, seed = xs_s
        sig = self.sig
        values = sig.inputs("reverse", dict(zip(sig.floats, xs)), seed=seed)
        out = call_numpy(sig, "reverse", values, ints)
        return [np.asarray(sig.gradient("reverse", out, n, lambda: np.zeros_like(values[n])), d)
                for n, d in zip(sig.floats, self.dtypes)]

    def linear(self, xs_v, ints):
        """∇f(x)·v: the forward entry where it takes every float's tangent, else the gradient."""
        sig = self.sig
        xs, vs = xs_v[:len(sig.floats)], xs_v[len(sig.floats):]
        if "forward" in sig.entries and all(sig.activities["forward"].get(n) != "const" for n in sig.floats):
            values = sig.inputs("forward", dict(zip(sig.floats, xs)), dict(zip(sig.floats, vs)))
            return np.asarray(call_numpy(sig, "forward", values, ints)[sig.prefix("forward") + "ret"], self.dtype)
        for name, v in zip(sig.floats, vs):  # (the gradient leaves out what the reverse entry makes const)
            if np.any(v) and ("reverse" not in sig.entries or sig.activities["reverse"].get(name) == "const"):
                sig.needs("forward", "tf.autodiff.ForwardAccumulator")
                sig.differentiable("forward", name, "tf.autodiff.ForwardAccumulator")
        if "reverse" not in sig.entries:  # (every tangent zero)
            return np.asarray(0.0, self.dtype)
        grads = self.reverse([*xs, 1.0], ints)
        return np.asarray(sum(np.vdot(g, v) for g, v in zip(grads, vs)), self.dtype)

    def hessian(self, xs_s_v, ints):
        sig = self.sig
        n = len(sig.floats)
        xs, seed, vs = xs_s_v[:n], xs_s_v[n], xs_s_v[n + 1:]
        values = sig.inputs("hvp", dict(zip(sig.floats, xs)), dict(zip(sig.floats, vs)), seed)
        out = call_numpy(sig, "hvp", values, ints)
        return [np.asarray(sig.hvp_outputs(out, k, np.ndim(values[k]) == 0, lambda: np.zeros_like(values[k])), d)
                for k, d in zip(sig.floats, self.dtypes)]


def _numpy(kernels: _Kernels, kernel, inputs: list, ints: tuple, many: bool):
    """A tf.numpy_function of a kernel (`many`: one result per float input, of its shape), its
    results given their static shapes."""
    key = (kernel, ints)
    if key not in kernels.calls:
        ints_dict, run = dict(ints), getattr(kernels, kernel)
        kernels.calls[key] = lambda *arrays: kernels.rows(run, list(arrays), ints_dict, many)
    out = tf.numpy_function(kernels.calls[key], inputs, kernels.dtypes if many else kernels.dtype, stateful=False,
                            name=f"adgen_{kernel}")
    n = len(kernels.sig.floats)
    if many:
        out = out if isinstance(out, (list, tuple)) else [out]  # (one result: TensorFlow unwraps the list)
        for o, x in zip(out, inputs[:n]):
            o.set_shape(x.shape)
        return list(out)
    out.set_shape(inputs[0].shape[:1] if kernels.batched and inputs else ())
    return out


def _recording() -> bool:
    """Whether any gradient tape or forward accumulator is active (where that cannot be told, yes)."""
    try:
        from tensorflow.python.eager import record

        return bool(record.could_possibly_record())
    except (ImportError, AttributeError):
        return True


def _tracked(tensors) -> str:
    """Who may ask for derivatives with respect to these tensors, as an op taking them is made:
    "tape" (a gradient tape records them), "accumulator" (a forward accumulator tracks them),
    "graph" (a graph is being built, whose gradients anyone may ask for later) or "" (no one).
    An op's gradient computes the derivatives it is asked for alone, so an entry missing for one
    raises only where it may be needed; where TensorFlow cannot tell, "tape"."""
    tensors = [t for t in tensors if tf.is_tensor(t)]
    if not tf.executing_eagerly():  # (a graph: its gradients may be built later, by anyone)
        return "graph"
    try:
        from tensorflow.python import pywrap_tfe
        from tensorflow.python.eager import record

        if record.should_record_backprop(tensors):
            return "tape"
        return "accumulator" if len(pywrap_tfe.TFE_Py_PackJVPs(tensors)[0]) else ""
    except (ImportError, AttributeError, TypeError):  # (TensorFlow's internals moved)
        return "tape"


def _second(kernels, ints, tracked: str, xs, seed, vs, why: str) -> list:
    """seed·∇²f(x)·v for each x, where derivatives with respect to x may be asked for. A forward
    accumulator asks for them whether or not it uses them (of an op's gradient it takes the
    derivative with respect to the seed only), and so may a graph's: without an hvp entry they
    are NaN there, an error under a tape; never a silent zero."""
    n = len(xs)
    if not tracked:
        return [None] * n
    if "hvp" not in kernels.sig.entries and tracked in ("accumulator", "graph"):
        return _nans(xs)
    kernels.sig.needs("hvp", why)
    return [_scale(kernels, seed, h) for h in _run(kernels, "hessian", ints, [*xs, tf.ones_like(seed), *vs])]


def _nans(xs) -> list:
    return [tf.fill(tf.shape(x), tf.constant(np.nan, x.dtype)) for x in xs]


def _scale(kernels, s, t):
    """s·t where s is one seed (or one per row, batched) and t an input's shape."""
    if not kernels.batched:
        return s * t
    return tf.reshape(s, [-1] + [1] * (len(t.shape) - 1)) * t


def _run(kernels: _Kernels, name: str, ints: tuple, inputs: list):
    """The op `name` (a row of the module's table: `_RULES`) on `inputs` at these integers; its
    custom-gradient function made once (TensorFlow's decorator costs more than the C call)."""
    key = (name, ints)
    if key not in kernels.ops:
        kernels.ops[key] = tf.custom_gradient(_RULES[name](kernels, ints))
    return kernels.ops[key](*inputs)


def _value_rule(kernels: _Kernels, ints: tuple):
    sig = kernels.sig

    def value(*xs):
        tracked = [_tracked([x]) for x in xs]

        def gradient(s):
            sig.needs("reverse", "tape.gradient")
            for name, by in zip(sig.floats, tracked):
                if by in ("tape", "accumulator"):  # (in a graph: None, TensorFlow's "no gradient")
                    sig.differentiable("reverse", name, "tape.gradient")
            return _run(kernels, "reverse", ints, [*xs, s])
        return _numpy(kernels, "value", list(xs), ints, many=False), gradient

    return value


def _reverse_rule(kernels: _Kernels, ints: tuple):
    sig = kernels.sig
    n = len(sig.floats)

    def reverse(*xs_s):
        xs, s = list(xs_s[:n]), xs_s[n]
        tracked = _tracked(xs)

        def gradient(*w):
            # (a parameter the reverse entry makes const has a zero gradient: its cotangent adds nothing)
            w = [tf.zeros_like(x) if g is None or sig.activities["reverse"].get(name, "const") == "const" else g
                 for g, x, name in zip(w, xs, sig.floats)]
            ds = _run(kernels, "linear", ints, [*xs, *w])
            return [*_second(kernels, ints, tracked, xs, s, w, "a second derivative"), ds]

        return _numpy(kernels, "reverse", [*xs, s], ints, many=True), gradient

    return reverse


def _linear_rule(kernels: _Kernels, ints: tuple):
    sig = kernels.sig
    n = len(sig.floats)

    def linear(*xs_v):
        xs, vs = list(xs_v[:n]), list(xs_v[n:])
        tracked = _tracked(xs)

        def gradient(u):
            dvs = _run(kernels, "reverse", ints, [*xs, u])
            return [*_second(kernels, ints, tracked, xs, u, vs, "a second derivative"), *dvs]

        return _numpy(kernels, "linear", [*xs, *vs], ints, many=False), gradient

    return linear


def _hessian_rule(kernels: _Kernels, ints: tuple):
    sig = kernels.sig
    n = len(sig.floats)

    def hessian(*xs_s_v):
        xs, s, vs = list(xs_s_v[:n]), xs_s_v[n], list(xs_s_v[n + 1:])
        tracked = _tracked(xs)

        def gradient(*u):
            # A third derivative, which adgen has no entry for: as _second's without one.
            if tracked == "tape":
                raise NotImplementedError("adgen.tensorflow: third derivatives are not available (the hvp entry "
                                          "gives second ones)")
            third = _nans(xs) if tracked else [None] * n
            u = [tf.zeros_like(x) if g is None else g for g, x in zip(u, xs)]
            unit = _run(kernels, "hessian", ints, [*xs, tf.ones_like(s), *vs])
            ds = tf.add_n([tf.reduce_sum(tf.reshape(a * b, [tf.shape(a)[0], -1]) if kernels.batched else a * b,
                                         axis=-1 if kernels.batched else None) for a, b in zip(unit, u)])
            return [*third, ds, *_run(kernels, "hessian", ints, [*xs, s, *u])]

        return _numpy(kernels, "hessian", [*xs, s, *vs], ints, many=True), gradient

    return hessian


_RULES = {"value": _value_rule, "reverse": _reverse_rule, "linear": _linear_rule, "hessian": _hessian_rule}
