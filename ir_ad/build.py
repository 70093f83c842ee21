"""`adgen build`: generate, then lower, analyze, differentiate, link, optimize and emit.

Until the AD core lands, `build` checks everything it can (annotations, prototypes, the
compiler) and then refuses, rather than emit an object whose derivative bodies are empty."""

from __future__ import annotations

from pathlib import Path

from adgen.frontend.diagnostics import AdgenError, error
from adgen.frontend.generate import generate
from adgen.frontend.timing import Stages, plural
from adgen.frontend.toolchain import Compiler


def build(sources: list[Path], out_dir: Path, flags: list[str], extra: list[str],
          compiler: Compiler, stages: Stages) -> None:
    generated = generate(sources, out_dir, flags + extra, stages)
    count = plural(sum(len(g.signatures) for g in generated), "derivative function")
    raise AdgenError(error(
        f"adgen build cannot make derivative code yet: the IR differentiation core is not part of "
        f"adgen {_version()} ({count} checked, nothing written). Use 'adgen generate' for the "
        f"headers meanwhile."))


def _version() -> str:
    from adgen.frontend import __version__

    return __version__
