"""adgen's common base, beneath every other layer and importing nothing else of adgen:
diagnostics, the toolchain, timing, the compilers' errors, templates, and the names generated
C and derived IR agree on."""

# The package's version, as pyproject.toml gives it (tests/test_cmake.py keeps them in step): a
# literal, not asked of the installed metadata, whose reader took 18 ms of every command's start.
__version__ = "0.1.0"
