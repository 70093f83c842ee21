"""adgen's common base, beneath every other layer and importing nothing else of adgen:
diagnostics, the toolchain, timing, the compilers' errors, templates, and the names generated
C and derived IR agree on."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("adgen")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.1.0"
