"""adgen's frontend: @diff annotations, C prototypes, checks, and the generated header and stubs."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("adgen")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.1.0"
