"""The errors of `adgen.load`'s builds."""

from __future__ import annotations

from adgen.base.diagnostics import Diagnostic


class BuildError(RuntimeError):
    """adgen or the C compiler refused the sources. The message is what `adgen build` prints
    (adgen's located diagnostics and their count), or the C compiler's own output; adgen's
    diagnostics are also in `diagnostics`, as data (adgen.base.diagnostics.Diagnostic: severity,
    message, span, notes), for a caller that shows them its own way. `diagnostics` is empty when
    the C compiler, or a bug in adgen, stopped the build."""

    def __init__(self, message: str, diagnostics: list[Diagnostic] = ()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


class CacheError(BuildError):
    """adgen.load's cache is not the user's alone: it runs the code it finds there, so it refuses
    a folder another user owns or could have written (or read, to learn what to plant)."""
