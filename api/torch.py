"""A PyTorch bridge: a reverse-mode derivative of C code as a `torch.autograd.Function`, so a
foreign C function takes part in `loss.backward()` (the seeds' PyTorch-Enzyme use case).

    lib = adgen.load("energy.c")            # double energy(const double *x, int n)
    energy = adgen.torch.function(lib, "energy_grad")   # energy_grad: (dup, const) -> activeonly
    e = energy(x, len(x))                   # x: a float64 tensor with requires_grad
    e.backward()                            # x.grad is filled by the C gradient

The derived function must be reverse mode with a scalar return activity (`active` or
`activeonly`); pointer parameters take contiguous CPU tensors (read, not written), active
scalars take Python floats or 0-d tensors, and the other parameters plain values."""

from __future__ import annotations

import numpy as np
import torch

_DTYPES = {"double": torch.float64, "float": torch.float32}


def function(lib, derived: str):
    """A callable taking the primal's arguments and returning a 0-d tensor that backpropagates."""
    spec = lib._specs.get(derived)
    if spec is None or spec["kind"] != "derived" or spec["mode"] != "reverse" or \
            spec["returns_activity"] not in ("active", "activeonly"):
        raise ValueError(f"'{derived}' must be a reverse-mode derivative with an 'active' or 'activeonly' return")
    if spec["width"] != 1:
        raise ValueError(f"'{derived}' has width {spec['width']}; the bridge takes width 1")
    primal = getattr(lib, spec["of"])
    grad = getattr(lib, derived)
    activities = spec["activities"]
    returns = spec["returns"]

    class Bridge(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            ctx.args = args
            value = primal(*(_array(a, copy=True) for a in args))
            return torch.tensor(value, dtype=torch.float64)

        @staticmethod
        def backward(ctx, seed):
            call, shadows = [], {}
            for i, (a, act) in enumerate(zip(ctx.args, activities)):
                call.append(_array(a, copy=True))
                if act in ("dup", "duponly"):
                    shadows[i] = np.zeros_like(call[-1])
                    call.append(shadows[i])
            result = grad(*call, float(seed))
            values = result._asdict() if "struct" in returns else \
                {returns["field"]: result} if "field" in returns else {}
            names = [p["name"] for p in primal.spec["params"]]
            grads = []
            for i, (a, act) in enumerate(zip(ctx.args, activities)):
                if i in shadows:
                    grads.append(torch.from_numpy(shadows[i]).to(a.dtype))  # the C call applied the seed
                elif act == "active":
                    grads.append(torch.tensor(float(values[spec["prefix"] + names[i]]), dtype=torch.float64))
                else:
                    grads.append(None)
            return tuple(grads)

    def apply(*args):
        if len(args) != len(activities):
            raise TypeError(f"{spec['of']}() takes {len(activities)} arguments, not {len(args)}")
        return Bridge.apply(*args)

    apply.__doc__ = f"{spec['of']} with gradients from {derived}"
    return apply


def _array(value, copy: bool):
    if isinstance(value, torch.Tensor):
        if value.dim() == 0:
            return float(value.detach())
        array = value.detach().cpu().contiguous().numpy()
        return array.copy() if copy else array
    return value
