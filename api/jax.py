"""A JAX bridge: a C function and its adgen derivatives as JAX primitives, called through XLA's
foreign function interface, so `jax.jit` keeps the C code inside the compiled program.

    lib = adgen.load("energy.c")        # double energy(const double *x, int n), with entries
    energy = adgen.jax.function(lib, "energy")
    jax.grad(energy)(x, 100)            # the reverse entry; jax.jvp: the forward entry
    jax.jacfwd(energy)(x, 100)          # a width-N forward entry, N tangents a call
    jax.hessian(energy)(x, 100)         # an `of` entry: forward over reverse

Each primitive is a rule table's row, as JAX's own are: its value, its derivative (jvp) and,
for those linear in their last operands, its transpose, and its batching (vmap) rule.

| primitive | computes | entry | jvp | transpose | vmap |
|---|---|---|---|---|---|
| call | f(x) | the function | lin | — | loop |
| lin | f'(x)·ẋ | forward (else reverse, dotted) | lin + hvp | rev | forward[N] / loop |
| rev | c·∇f(x) | reverse | rev + hvp | lin | reverse[N] / loop |
| hvp | c·∇²f(x)·v | forward of reverse | — | hvp (symmetric) | loop |

A rule whose entry the annotations do not give raises when it is needed (`jax.grad` without a
reverse entry), naming the entry to add; so does a derivative with respect to a parameter the
entry makes `const`. Integer parameters are static: Python integers, fixed when a function is
traced. Pointer parameters take arrays of their C element type (float64 needs
`jax_enable_x64`), float parameters scalars. The loop for batched primal inputs is
`jax.lax.map`: one call per batch element, inside the compiled program."""

from __future__ import annotations

import ctypes

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from adgen.bridge import Signature
from adgen.commands.entry_layout import FLOATS, output_shape
from adgen.commands.xla_ffi import handler_library


def function(lib, name: str, *, forward: str | None = None, reverse: str | None = None, hvp: str | None = None,
             forward_batch: str | None = None, reverse_batch: str | None = None):
    """`name`, a function of `lib` (from `adgen.load`) returning a float or double, as a JAX
    function of its parameters. Its derivatives come from the library's entries derived from it,
    found by their kind (or named here): `forward` (width 1, for jvp), `reverse` (width 1, for
    grad/vjp), `hvp` (`forward of REVERSE`, for second derivatives), `forward_batch` and
    `reverse_batch` (width N: vmap over tangents or cotangents, N a call)."""
    c = _CFunction(lib, name, "adgen.jax", dict(forward=forward, reverse=reverse, hvp=hvp,
                                                 forward_batch=forward_batch, reverse_batch=reverse_batch))

    def apply(*args, **kwargs):
        floats, ints = c.bind(args, kwargs)
        floats = [_operand(v, c.param(n), name) for n, v in zip(c.floats, floats)]
        ints = {n: c.static(v, c.param(n), isinstance(v, jax.core.Tracer)) for n, v in ints.items()}
        c.check_lengths({n: x.shape for n, x in zip(c.floats, floats)}, ints)
        return call_p.bind(*floats, c=c, ints=tuple(ints.items()))

    apply.__doc__ = f"{name} through XLA, with derivatives from " + \
        (", ".join(f"{k} {v}" for k, v in c.entries.items()) or "no entries")
    apply.__name__ = name
    return apply


class _CFunction(Signature):
    """The C function and its entries as XLA calls them (a primitive's parameter, hashed by
    identity)."""

    def __init__(self, lib, name: str, bridge: str, named: dict):
        super().__init__(lib, name, bridge, named)
        self.library = _registered(lib, list(self.layouts.values()))

    def call(self, key: str, values: dict, ints: tuple) -> dict:
        """The entry of kind `key` on `values` (arrays by parameter name): its results by name."""
        lay = self.layouts[key]
        ints = dict(ints)
        shapes = {n: np.shape(v) for n, v in values.items()}
        operands = [jnp.asarray(values[p.name], FLOATS[p.float][2]) for p in lay.inputs]
        results = [jax.ShapeDtypeStruct(output_shape(p, shapes), FLOATS[p.float][2]) for p in lay.outputs]
        results += [jax.ShapeDtypeStruct((count,) if count > 1 else (), FLOATS[t][2]) for _, t, count in lay.returns]
        attributes = {p.name: np.int64(ints[p.name]) for p in lay.integers}
        out = jax.ffi.ffi_call(self.library.target(lay.entry), results)(
            *operands, fn=np.int64(self.library.address(lay.symbol)), **attributes)
        return dict(zip([p.name for p in lay.outputs] + [r[0] for r in lay.returns], out))


class _Handlers:
    """A library's handlers, compiled and registered with XLA once per process."""

    def __init__(self, lib, path):
        self.lib, self.dll, self.key = lib, ctypes.CDLL(str(path)), path.stem
        self.registered = set()

    def target(self, entry: str) -> str:
        name = f"adgen_{self.key}_{entry}"
        if name not in self.registered:
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(self.dll, f"adgen_xla_{entry}")),
                                        platform="cpu")
            self.registered.add(name)
        return name

    def address(self, symbol: str) -> int:
        return ctypes.cast(getattr(self.lib._dll, symbol), ctypes.c_void_p).value


_HANDLERS: dict = {}


def _registered(lib, layouts: list) -> _Handlers:
    path = handler_library(layouts, jax.ffi.include_dir(), jax.__version__)  # (headers of this jaxlib)
    key = (id(lib), str(path))
    if key not in _HANDLERS:
        _HANDLERS[key] = _Handlers(lib, path)
    return _HANDLERS[key]


def _operand(value, param: dict, function: str):
    """A float parameter's value as an array of its C type (an array of another float type is
    converted, as JAX converts; float64 needs JAX's 64-bit mode, where float32 would be a silent
    loss)."""
    dtype = FLOATS[param["ffi"].removeprefix("ptr:")][2]
    if dtype == "float64" and not jax.config.jax_enable_x64:
        raise TypeError(f"{function}(): '{param['name']}' is float64 in C, and JAX gives float32: enable 64-bit "
                        "floats first (jax.config.update('jax_enable_x64', True))")
    array = jnp.asarray(value, dtype)
    if not param["ffi"].startswith("ptr:") and array.ndim:
        raise TypeError(f"{function}(): '{param['name']}' is a scalar in C; it was given an array of shape "
                        f"{array.shape}")
    return array


# The primitives. Operands: the function's float parameters (xs) in order, then a rule's own
# (tangents, a seed); parameters: the _CFunction `c`, the integers `ints`, which tangents are
# given (`live`: the others are zero and not passed) and whether the tangents or seeds carry a
# leading batch axis (`batch`: vmap over them with the inputs fixed, N lanes a call where a
# width-N entry is given).

call_p = Primitive("adgen_call")
lin_p = Primitive("adgen_lin")
rev_p = Primitive("adgen_rev")
rev_p.multiple_results = True
hvp_p = Primitive("adgen_hvp")
hvp_p.multiple_results = True


def _split(c, operands):
    return dict(zip(c.floats, operands[:len(c.floats)])), list(operands[len(c.floats):])


def _call(*xs, c, ints):
    return c.call("call", dict(zip(c.floats, xs)), ints)[c.layouts["call"].returns[0][0]]


def _lin(*operands, c, ints, live, batch):
    """f'(x)·v: the forward entries where they take every tangent given; else, f returning one
    value, the gradient (one reverse call for any number of tangents) dotted with them."""
    values, tangents = _split(c, operands)
    names = [n for n, on in zip(c.floats, live) if on]
    if not _takes(c, "forward", names) and _takes(c, "reverse", names):
        grads = dict(zip(c.floats, _rev(*values.values(), jnp.ones((), c.dtype), c=c, ints=ints, batch=False)))
        return sum((t.reshape(t.shape[0], -1) @ grads[n].reshape(-1) if batch else jnp.vdot(t, grads[n])
                    for n, t in zip(names, tangents)), jnp.zeros((), c.dtype))
    c.needs("forward", "jax.jvp")
    for n in names:
        c.differentiable("forward", n, "jax.jvp")
    if batch:
        if not _takes(c, "forward_batch", names):
            return jax.lax.map(lambda t: _lin(*values.values(), *t, c=c, ints=ints, live=live, batch=False), tangents)
        return _lanes(c, "forward_batch", values, dict(zip(names, tangents)), ints)
    values = c.inputs("forward", values, dict(zip(names, tangents)), zeros=jnp.zeros_like)
    return c.call("forward", values, ints)[c.prefix("forward") + "ret"]


def _takes(c, key: str, names: list) -> bool:
    """Whether the entry of kind `key` exists and differentiates each of `names`."""
    return key in c.entries and all(c.activities[key].get(n, "const") != "const" for n in names)


def _rev(*operands, c, ints, batch):
    c.needs("reverse", "jax.grad")
    values, (seed,) = _split(c, operands)
    if batch:
        if "reverse_batch" not in c.entries:
            return jax.lax.map(lambda s: _rev(*values.values(), s, c=c, ints=ints, batch=False), seed)
        return _lanes(c, "reverse_batch", values, {"": seed}, ints)
    values = c.inputs("reverse", values, seed=seed, zeros=jnp.zeros_like)
    out = c.call("reverse", values, ints)
    return [c.gradient("reverse", out, n, lambda: jnp.zeros_like(values[n])) for n in c.floats]


def _lanes(c, key: str, values: dict, batched: dict, ints):
    """A batch of tangents (or of seeds, under the name "") at fixed inputs through the width-N
    entry `key`: ceil(B/N) calls, each taking N of them, interleaved (lane k of element j at
    j*N + k) or as N seeds; the results unpacked the same way."""
    n = c.lib._specs[c.entries[key]]["width"]
    lay = c.layouts[key]
    size = next(iter(batched.values())).shape[0]
    chunks = -(-size // n)
    padded = {k: jnp.concatenate([b, jnp.zeros((chunks * n - size, *b.shape[1:]), b.dtype)]).reshape(chunks, n, -1)
              for k, b in batched.items()}

    def chunk(lanes):
        given = dict(values)
        for p in lay.inputs:
            if p.name in given:
                continue
            if p.owner:  # (the tangents of an input, interleaved or one lane's scalar: zero where not given)
                t = lanes.get(p.owner, jnp.zeros((n, int(np.prod(np.shape(values[p.owner])))), c.dtype))
                given[p.name] = t[p.lane, 0] if p.lane >= 0 else t.T.reshape(-1)
            else:  # (the seed of a lane)
                given[p.name] = lanes[""][p.lane, 0]
        out = c.call(key, given, ints)
        if key.startswith("forward"):
            return out[c.prefix(key) + "ret"]
        grads = []
        for name in c.floats:
            g = c.gradient(key, out, name, lambda: jnp.zeros_like(values[name]))
            if any(p.owner == name for p in lay.outputs):
                g = g.reshape(-1, n).T
            grads.append(jnp.broadcast_to(g, (n, *np.shape(values[name]))) if g.ndim <= 1 and np.ndim(values[name])
                         == 0 else g.reshape(n, *np.shape(values[name])))
        return grads

    out = jax.lax.map(chunk, padded)
    if key.startswith("forward"):
        return out.reshape(-1)[:size]
    return [g.reshape(chunks * n, *g.shape[2:])[:size] for g in out]


def _hvp(*operands, c, ints, live):
    c.needs("hvp", "a second derivative")
    values, (seed, *tangents) = _split(c, operands)
    given = dict(zip([n for n, on in zip(c.floats, live) if on], tangents))
    values = c.inputs("hvp", values, given, seed, zeros=jnp.zeros_like)
    out = c.call("hvp", values, ints)
    return [c.hvp_outputs(out, n, np.ndim(values[n]) == 0, lambda: jnp.zeros_like(values[n])) for n in c.floats]


def _scalar(*operands, c, batch=False, **_):
    return jax.core.ShapedArray((operands[-1].shape[0],) if batch else (), c.dtype)


def _like_xs(*operands, c, batch=False, **_):
    lead = (operands[len(c.floats)].shape[0],) if batch else ()
    return [jax.core.ShapedArray((*lead, *np.shape(x)), x.dtype) for x in operands[:len(c.floats)]]


for _p, _impl, _abstract in ((call_p, _call, _scalar), (lin_p, _lin, _scalar), (rev_p, _rev, _like_xs),
                             (hvp_p, _hvp, _like_xs)):
    _p.def_impl(_impl)
    _p.def_abstract_eval(_abstract)
    mlir.register_lowering(_p, mlir.lower_fun(_impl, multiple_results=_p.multiple_results))


# Derivatives.

def _live(tangents):
    return tuple(type(t) is not ad.Zero for t in tangents)


def _given(tangents):
    return [t for t in tangents if type(t) is not ad.Zero]


def _call_jvp(primals, tangents, *, c, ints):
    y = call_p.bind(*primals, c=c, ints=ints)
    live = _live(tangents)
    if not any(live):
        return y, ad.Zero.from_primal_value(y)
    return y, lin_p.bind(*primals, *_given(tangents), c=c, ints=ints, live=live, batch=False)


def _lin_jvp(primals, tangents, *, c, ints, live, batch):
    """d(f'(x)·v) = f'(x)·dv + v·∇²f(x)·dx."""
    xs, vs = primals[:len(c.floats)], primals[len(c.floats):]
    dxs, dvs = tangents[:len(c.floats)], tangents[len(c.floats):]
    y = lin_p.bind(*primals, c=c, ints=ints, live=live, batch=batch)
    dy = jnp.zeros_like(y)
    if any(_live(dvs)):
        full = [dv if type(dv) is not ad.Zero else jnp.zeros_like(v) for dv, v in zip(dvs, vs)]
        dy = dy + lin_p.bind(*xs, *full, c=c, ints=ints, live=live, batch=batch)
    if any(_live(dxs)):
        h = dict(zip(c.floats, hvp_p.bind(*xs, jnp.ones((), c.dtype), *_given(dxs), c=c, ints=ints,
                                          live=_live(dxs))))
        for n, v in zip([n for n, on in zip(c.floats, live) if on], vs):
            dy = dy + (v.reshape(v.shape[0], -1) @ h[n].reshape(-1) if batch else jnp.vdot(v, h[n]))
    return y, dy


def _lin_transpose(ct, *operands, c, ints, live, batch):
    xs = operands[:len(c.floats)]
    if any(ad.is_undefined_primal(x) for x in xs):
        raise NotImplementedError("adgen.jax: the tangent of a derivative is linear in the tangents only")
    wanted = [n for n, on in zip(c.floats, live) if on]
    if type(ct) is ad.Zero:
        return [None] * len(operands)
    c.needs("reverse", "jax.grad")
    for n in wanted:
        c.differentiable("reverse", n, "jax.grad")
    grads = dict(zip(c.floats, rev_p.bind(*xs, ct, c=c, ints=ints, batch=batch)))
    return [None] * len(xs) + [grads[n] for n in wanted]


def _rev_jvp(primals, tangents, *, c, ints, batch):
    """d(s·∇f(x)) = ds·∇f(x) + s·∇²f(x)·dx."""
    xs, seed = primals[:-1], primals[-1]
    dxs, dseed = tangents[:-1], tangents[-1]
    g = rev_p.bind(*xs, seed, c=c, ints=ints, batch=batch)
    dg = [jnp.zeros_like(a) for a in g]
    if type(dseed) is not ad.Zero:
        dg = [a + b for a, b in zip(dg, rev_p.bind(*xs, dseed, c=c, ints=ints, batch=batch))]
    if any(_live(dxs)):
        h = hvp_p.bind(*xs, jnp.ones((), c.dtype), *_given(dxs), c=c, ints=ints, live=_live(dxs))
        dg = [a + (jnp.multiply.outer(seed, b) if batch else seed * b) for a, b in zip(dg, h)]
    return g, dg


def _rev_transpose(cts, *operands, c, ints, batch):
    xs = operands[:-1]
    if any(ad.is_undefined_primal(x) for x in xs):
        raise NotImplementedError("adgen.jax: a gradient is linear in its seed only")
    # (the gradient of a parameter the reverse entry makes const is zero: its cotangent adds nothing)
    live = tuple(on and _takes(c, "reverse", [n]) for on, n in zip(_live(cts), c.floats))
    if not any(live):
        return [None] * len(operands)
    given = [ct for ct, on in zip(cts, live) if on]
    return [None] * len(xs) + [lin_p.bind(*xs, *given, c=c, ints=ints, live=live, batch=batch)]


def _hvp_jvp(primals, tangents, **_):
    raise NotImplementedError("adgen.jax: third derivatives are not available (the hvp entry gives second ones)")


def _hvp_transpose(cts, *operands, c, ints, live):
    """∇²f is symmetric: the transpose of v ↦ s·∇²f(x)·v is itself."""
    xs, seed = operands[:len(c.floats)], operands[len(c.floats)]
    if any(ad.is_undefined_primal(x) for x in xs) or ad.is_undefined_primal(seed):
        raise NotImplementedError("adgen.jax: a Hessian-vector product is linear in its vector only")
    w = _live(cts)
    if not any(w):
        return [None] * len(operands)
    h = dict(zip(c.floats, hvp_p.bind(*xs, seed, *_given(cts), c=c, ints=ints, live=w)))
    return [None] * (len(xs) + 1) + [h[n] for n, on in zip(c.floats, live) if on]


for _p, _jvp in ((call_p, _call_jvp), (lin_p, _lin_jvp), (rev_p, _rev_jvp), (hvp_p, _hvp_jvp)):
    ad.primitive_jvps[_p] = _jvp
for _p, _transpose in ((lin_p, _lin_transpose), (rev_p, _rev_transpose), (hvp_p, _hvp_transpose)):
    ad.primitive_transposes[_p] = _transpose


# Batching.

def _loop(primitive, operands, dims, **params):
    """One call per batch element, in a loop of the compiled program."""
    size = next(np.shape(o)[d] for o, d in zip(operands, dims) if d is not None)
    moved = [jnp.moveaxis(o, d, 0) if d is not None else o for o, d in zip(operands, dims)]

    def one(i):
        return primitive.bind(*(o[i] if d is not None else o for o, d in zip(moved, dims)), **params)

    out = jax.lax.map(one, jnp.arange(size))
    return out, [0] * len(out) if primitive.multiple_results else 0


def _batch_lanes(primitive, operands, dims, *, c, batch, **params):
    """vmap over tangents or seeds only, the inputs fixed: the primitive's own batch (N lanes a
    call where a width-N entry is given); otherwise a loop."""
    fixed = all(d is None for d in dims[:len(c.floats)])
    if batch or not fixed:
        return _loop(primitive, operands, dims, c=c, batch=batch, **params)
    size = next(np.shape(o)[d] for o, d in zip(operands, dims) if d is not None)
    lanes = [o if i < len(c.floats) else jnp.moveaxis(o, d, 0) if d is not None else
             jnp.broadcast_to(o, (size, *np.shape(o))) for i, (o, d) in enumerate(zip(operands, dims))]
    out = primitive.bind(*lanes, c=c, batch=True, **params)
    return out, [0] * len(out) if primitive.multiple_results else 0


batching.primitive_batchers[call_p] = lambda ops, dims, **p: _loop(call_p, ops, dims, **p)
batching.primitive_batchers[lin_p] = lambda ops, dims, **p: _batch_lanes(lin_p, ops, dims, **p)
batching.primitive_batchers[rev_p] = lambda ops, dims, **p: _batch_lanes(rev_p, ops, dims, **p)
batching.primitive_batchers[hvp_p] = lambda ops, dims, **p: _loop(hvp_p, ops, dims, **p)
