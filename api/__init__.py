"""adgen: automatic differentiation for C, driven by @diff annotations.

From Python, `adgen.load("rosenbrock.c")` builds a C file with its derivatives and returns a
library whose attributes call them:

    >>> import adgen
    >>> lib = adgen.load("examples/rosenbrock/rosenbrock.c")
    >>> lib.rosen_grad(1.0, 100.0, -1.2, 1.0, 1.0)
    rosen_grad_result(ret=24.2..., d_x=-215.6..., d_y=-88.0...)

The command-line tool is `adgen` (see `adgen --help`)."""

from adgen.base import __version__

__all__ = ["BuildError", "CacheError", "Library", "TapeError", "load", "__version__"]


def __getattr__(name: str):
    """`load` and its classes, imported when first asked for: the `adgen` command, whose modules
    live in this package too, does not pay for them."""
    if name in ("BuildError", "CacheError", "Library", "TapeError", "load"):
        from adgen.commands import load

        return getattr(load, name)
    raise AttributeError(f"module 'adgen' has no attribute '{name}'")
