"""adgen: automatic differentiation for C, driven by @diff annotations.

From Python, `adgen.load("rosenbrock.c")` builds a C file with its derivatives and returns a
library whose attributes call them:

    >>> import adgen
    >>> lib = adgen.load("examples/rosenbrock/rosenbrock.c")
    >>> lib.rosen_grad(1.0, 100.0, -1.2, 1.0, 1.0)
    rosen_grad_result(ret=24.2..., d_x=-215.6..., d_y=-88.0...)

The command-line tool is `adgen` (see `adgen --help`)."""

from adgen.base import __version__

from adgen.commands.load import BuildError, Library, TapeError, load

__all__ = ["BuildError", "Library", "TapeError", "load", "__version__"]
