"""A PyTorch bridge: a split-mode derivative of C code as a `torch.autograd.Function`, so a
foreign C function takes part in `loss.backward()` (the seeds' PyTorch-Enzyme use case).

    lib = adgen.load("energy.c")            # double energy(const double *x, int n)
    energy = adgen.torch.function(lib, "energy_split")   # energy_split: split (dup, const) -> active
    e = energy(x, len(x))                   # x: a float64 tensor with requires_grad
    e.backward()                            # x.grad is filled by the C gradient

`forward()` runs the forward sweep once and keeps its tape for `backward()`, which runs the
reverse sweep only: the C function is evaluated once per forward/backward pair. A tape is
reversed once: a second backward through the same graph (`retain_graph=True`) runs a fresh
forward sweep first; a tape whose backward never comes is released when PyTorch drops it.
Double backward (`create_graph=True`, `gradgradcheck`) takes a Hessian-vector product entry,
`hvp=NAME` with `NAME: forward of GRAD (...)` and `GRAD` a reverse-mode entry of the same
function with the split entry's activities; without one, differentiating the gradient raises.
The entry must be split mode, width 1, with an `active` return; pointer parameters take
contiguous CPU tensors (read, not written), active scalars take Python floats or 0-d tensors,
and the other parameters plain values; arguments go by position or by the C parameters' names,
checked as `adgen.load`'s functions check them (a tensor shorter than `@size` says is a
ValueError)."""

from __future__ import annotations

import numpy as np
import torch

from adgen.commands.load_arguments import bind

_DUP = ("dup", "duponly")


def function(lib, entry: str, hvp: str | None = None):
    """A callable taking the primal's arguments and returning a 0-d tensor that backpropagates
    (twice, with a Hessian-vector product entry `hvp`)."""
    spec = _split_entry(lib, entry)
    sweeps = _Sweeps(lib, entry, spec)
    differentiable = sweeps.differentiable
    products = _hessian(lib, entry, spec, sweeps.names, hvp) if hvp else None

    class Gradient(torch.autograd.Function):
        """The gradient at seed 1 as a function of the inputs, whose backward is the hvp entry:
        what a differentiable backward (create_graph=True) multiplies by the seed."""

        @staticmethod
        def forward(ctx, held, *args):
            _keep(ctx, args)
            return tuple(sweeps.reverse(*held, 1.0))

        @staticmethod
        def backward(ctx, *cotangents):
            args = _kept(ctx)
            hv = products(args, dict(zip(differentiable, cotangents)))
            hv = _first_order_only(hv, args, f"'{hvp}' gives second derivatives only; adgen.torch differentiates "
                                             f"{spec['of']} twice")
            by_input = dict(zip(differentiable, hv))
            return (None, *(by_input.get(i) if ctx.needs_input_grad[1 + i] else None for i in range(len(args))))

    class Bridge(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            _keep(ctx, args)
            value, ctx.tape, ctx.shadows = sweeps.forward(args)
            return torch.tensor(value, dtype=torch.float64)

        @staticmethod
        def backward(ctx, seed):
            args = _kept(ctx)
            tape, shadows, ctx.tape, ctx.shadows = ctx.tape, ctx.shadows, None, None  # a tape is reversed once
            if tape is None:  # another backward through this graph (retain_graph=True)
                _, tape, shadows = sweeps.forward(args)
            if not torch.is_grad_enabled():
                grads = sweeps.reverse(tape, shadows, float(seed))
            elif products is not None:  # create_graph=True: differentiable in the inputs and the seed
                grads = [seed * g.to(seed.dtype) for g in Gradient.apply((tape, shadows), *args)]
            else:
                grads = _first_order_only(sweeps.reverse(tape, shadows, float(seed.detach())), (seed, *args),
                                          f"{entry} gives first derivatives only: for double backward, pass "
                                          f"adgen.torch.function(lib, '{entry}', hvp=NAME), NAME a forward-over-"
                                          f"reverse entry of {spec['of']} (docs/tutorials/pytorch.md)")
            by_input = dict(zip(differentiable, grads))
            return tuple(_like(by_input.get(i), a) if ctx.needs_input_grad[i] else None for i, a in enumerate(args))

    def apply(*args, **kwargs):
        return Bridge.apply(*bind(spec["of"], lib._all[spec["of"]]["params"], args, kwargs))

    apply.__doc__ = f"{spec['of']} with gradients from {entry} (split mode)" + (f", Hessians from {hvp}" if hvp else "")
    return apply


def _split_entry(lib, entry: str) -> dict:
    """The manifest's spec of `entry`, which must be a split-mode entry of width 1 with an active return."""
    spec = lib._specs.get(entry)
    if spec is None or spec["kind"] != "split" or spec["returns_activity"] != "active":
        raise ValueError(f"'{entry}' must be a split-mode entry with an 'active' return "
                         f"(`// @diff({entry}: split (...) -> active)`)")
    if spec["width"] != 1:
        raise ValueError(f"'{entry}' has width {spec['width']}; the bridge takes width 1")
    return spec


class _Sweeps:
    """A split-mode entry's two sweeps over PyTorch's arguments and gradients."""

    def __init__(self, lib, entry: str, spec: dict):
        self.split = getattr(lib, entry)
        self.activities, self.prefix = spec["activities"], spec["prefix"]
        self.names = [p["name"] for p in lib._specs[spec["of"]]["params"]]
        self.gradients = lib._specs[spec["parts"]["reverse"]]["returns"]
        self.differentiable = [i for i, act in enumerate(self.activities) if act in _DUP or act == "active"]

    def forward(self, args):
        """A forward sweep over copies of the arguments, into zeroed shadows: value, tape, shadows."""
        call, shadows = [], {}
        for i, (a, act) in enumerate(zip(args, self.activities)):
            call.append(_array(a))
            if act in _DUP:
                shadows[i] = np.zeros_like(call[-1])
                call.append(shadows[i])
        value, tape = self.split.forward(*call)
        return value, tape, shadows

    def reverse(self, tape, shadows, seed: float) -> list:
        """The reverse sweep of a tape: the gradient of each differentiable input, as tensors."""
        result = self.split.reverse(tape, seed)
        gradients = self.gradients
        values = result._asdict() if "struct" in gradients else \
            {gradients["field"]: result} if "field" in gradients else {}
        return [torch.from_numpy(shadows[i]) if i in shadows else
                torch.tensor(float(values[self.prefix + self.names[i]]), dtype=torch.float64)
                for i in self.differentiable]


def _hessian(lib, entry: str, spec: dict, names: list[str], hvp: str):
    """The hvp entry as `products(args, cotangents)`: the Hessian of the function times the
    cotangents of its differentiable inputs (a tensor per differentiable input, in order).
    It is forward mode over GRAD, a reverse entry of the same function: GRAD's parameters take
    the arguments (its shadows zeros, its seed 1), their tangents the cotangents (the tangents
    of GRAD's shadows come back as the Hessian's rows for arrays, its result's for a scalar)."""
    h = lib._specs.get(hvp)
    g = lib._specs.get(h["of"]) if h else None
    activities = spec["activities"]
    if not (h and g and h["kind"] == "derived" and h["mode"] == "forward" and h["width"] == 1
            and g["mode"] == "reverse" and g["of"] == spec["of"] and g["activities"] == activities):
        raise ValueError(f"hvp '{hvp}' must be `forward of GRAD (...)`, GRAD a reverse-mode entry of {spec['of']} "
                         f"with {entry}'s activities ({', '.join(activities)})")
    index = {name: i for i, name in enumerate(names)}
    shadow_of = {p["name"]: p["role"].split(" of ", 1)[1] for p in g["params"] if p["role"].startswith("shadow")}
    shadows = {index[owner]: name for name, owner in shadow_of.items()}
    tangents = {p["role"].split(" of ", 1)[1] for p in h["params"] if p["role"]}
    result = h["returns"].get("field") or next((f["name"] for f in h["returns"].get("fields", ())
                                                 if f["name"] == h["prefix"] + "ret"), None)
    for i, act in enumerate(activities):
        missing = [n for n in ([names[i], shadows[i]] if act in _DUP else [names[i]] if act == "active" else [])
                   if n not in tangents]
        if act == "active" and result != h["prefix"] + "ret":
            missing.append("its result")
        if missing:
            raise ValueError(f"hvp '{hvp}' must make {' and '.join(missing)} dual (or dualonly), for {names[i]}'s "
                             "second derivatives")
    call = getattr(lib, hvp)

    def products(args, cotangents: dict) -> list:
        values = [_array(a) for a in args]
        given, rows = [], {}
        for p in h["params"]:
            of = p["role"].split(" of ", 1)[1] if p["role"] else p["name"]
            if of in index:  # the function's own parameter, or its tangent: the cotangent
                i = index[of]
                w = cotangents.get(i)
                given.append(values[i] if not p["role"] else _array(w) if w is not None else
                             np.zeros_like(values[i]) if isinstance(values[i], np.ndarray) else 0.0)
            elif of in shadow_of:  # GRAD's shadow (a gradient not wanted), or its tangent: H·w
                given.append(np.zeros_like(values[index[shadow_of[of]]]))
                if p["role"]:
                    rows[index[shadow_of[of]]] = given[-1]
            else:  # GRAD's seed, 1, with tangent 0
                given.append(0.0 if p["role"] else 1.0)
        out = call(*given)
        scalar = out if "field" in h["returns"] else getattr(out, h["prefix"] + "ret", None)
        return [torch.from_numpy(rows[i]) if i in rows else torch.tensor(float(scalar), dtype=torch.float64)
                for i in cotangents]

    return products


def _first_order_only(grads: list, inputs, message: str) -> list:
    """Gradients whose own backward raises `message`, where any input takes gradients."""
    inputs = [a for a in inputs if isinstance(a, torch.Tensor) and a.requires_grad]
    return list(_Undifferentiable.apply(message, len(grads), *grads, *inputs)) if inputs else grads


class _Undifferentiable(torch.autograd.Function):
    @staticmethod
    def forward(ctx, message, count, *tensors):
        ctx.message = message
        return tuple(t.clone() for t in tensors[:count])

    @staticmethod
    def backward(ctx, *_):
        raise RuntimeError(ctx.message)


def _keep(ctx, args) -> None:
    """The arguments for backward: tensors saved (PyTorch checks they are not changed in place
    and frees them after a backward without retain_graph), the others as they are."""
    ctx.save_for_backward(*(a for a in args if isinstance(a, torch.Tensor)))
    ctx.plain = [(isinstance(a, torch.Tensor), None if isinstance(a, torch.Tensor) else a) for a in args]


def _kept(ctx) -> list:
    tensors = iter(ctx.saved_tensors)
    return [next(tensors) if saved else a for saved, a in ctx.plain]


def _like(grad, arg):
    return grad.to(arg.dtype) if grad is not None and isinstance(arg, torch.Tensor) else grad


def _array(value):
    """An argument as the C call takes it: a tensor as a NumPy copy (the C code may write into
    what it is given), a 0-d tensor as a Python number (an int for an integer tensor)."""
    if isinstance(value, torch.Tensor):
        if value.dim() == 0:
            return value.detach().item()
        return value.detach().cpu().contiguous().numpy().copy()
    return value
