"""A PyTorch bridge: a split-mode derivative of C code as a `torch.autograd.Function`, so a
foreign C function takes part in `loss.backward()` (the seeds' PyTorch-Enzyme use case).

    lib = adgen.load("energy.c")            # double energy(const double *x, int n)
    energy = adgen.torch.function(lib, "energy_split")   # energy_split: split (dup, const) -> active
    e = energy(x, len(x))                   # x: a float64 tensor with requires_grad
    e.backward()                            # x.grad is filled by the C gradient

`forward()` runs the forward sweep once and keeps its tape for `backward()`, which runs the
reverse sweep only: the C function is evaluated once per forward/backward pair. A tape whose
backward never comes is released when PyTorch drops it. The entry must be split mode, width 1,
with an `active` return; pointer parameters take contiguous CPU tensors (read, not written),
active scalars take Python floats or 0-d tensors, and the other parameters plain values."""

from __future__ import annotations

import numpy as np
import torch

_DTYPES = {"double": torch.float64, "float": torch.float32}


def function(lib, entry: str):
    """A callable taking the primal's arguments and returning a 0-d tensor that backpropagates."""
    spec = lib._specs.get(entry)
    if spec is None or spec["kind"] != "split" or spec["returns_activity"] != "active":
        raise ValueError(f"'{entry}' must be a split-mode entry with an 'active' return "
                         f"(`// @diff({entry}: split (...) -> active)`)")
    if spec["width"] != 1:
        raise ValueError(f"'{entry}' has width {spec['width']}; the bridge takes width 1")
    split = getattr(lib, entry)
    activities = spec["activities"]
    names = [p["name"] for p in lib._specs[spec["of"]]["params"]]
    gradients = split._part["reverse"].spec["returns"]

    class Bridge(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            call, ctx.shadows = [], {}
            for i, (a, act) in enumerate(zip(args, activities)):
                call.append(_array(a, copy=True))
                if act in ("dup", "duponly"):
                    ctx.shadows[i] = np.zeros_like(call[-1])
                    call.append(ctx.shadows[i])
            value, ctx.tape = split.forward(*call)
            ctx.dtypes = [a.dtype if isinstance(a, torch.Tensor) else None for a in args]
            return torch.tensor(value, dtype=torch.float64)

        @staticmethod
        def backward(ctx, seed):
            result = split.reverse(ctx.tape, float(seed))
            values = result._asdict() if "struct" in gradients else \
                {gradients["field"]: result} if "field" in gradients else {}
            grads = []
            for i, act in enumerate(activities):
                if not ctx.needs_input_grad[i]:
                    grads.append(None)
                elif i in ctx.shadows:  # the reverse sweep applied the seed
                    grads.append(torch.from_numpy(ctx.shadows[i]).to(ctx.dtypes[i]))
                elif act == "active":
                    grads.append(torch.tensor(float(values[spec["prefix"] + names[i]]), dtype=torch.float64))
                else:
                    grads.append(None)
            return tuple(grads)

    def apply(*args):
        if len(args) != len(activities):
            raise TypeError(f"{spec['of']}() takes {len(activities)} arguments, not {len(args)}")
        return Bridge.apply(*args)

    apply.__doc__ = f"{spec['of']} with gradients from {entry} (split mode)"
    return apply


def _array(value, copy: bool):
    if isinstance(value, torch.Tensor):
        if value.dim() == 0:
            return float(value.detach())
        array = value.detach().cpu().contiguous().numpy()
        return array.copy() if copy else array
    return value
