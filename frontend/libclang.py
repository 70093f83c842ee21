"""libclang, checked before it reads a source: adgen reads C and C++ with libclang-ng's library of
LLVM 22, whose files (`clang/cindex.py`, `clang/native/libclang.so`) the PyPI package `libclang`
installs too. TensorFlow requires that package (libclang 18): installed after adgen, it replaces
libclang-ng's library, and libclang 18 reads the bundled libc++ wrongly (a C++ class's fields
missing, so a wrong activity accepted). That is a clear error, saying how to put libclang-ng back,
not a wrong read."""

from __future__ import annotations

import ctypes
import re
from functools import cache

from clang.cindex import Index, conf

from adgen.base.diagnostics import AdgenError, error

NEEDED = 22  # (libclang-ng's major version: pyproject.toml asks for libclang-ng>=22.1)


class _String(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("flags", ctypes.c_uint)]


@cache
def version() -> str:
    """What libclang says it is ("clang version 22.1.4 ..."), "" where it cannot say."""
    try:
        lib = ctypes.CDLL(conf.get_filename())  # (a handle of its own: cindex's function types untouched)
        lib.clang_getClangVersion.restype = _String
        lib.clang_getCString.argtypes, lib.clang_getCString.restype = [_String], ctypes.c_char_p
        lib.clang_disposeString.argtypes = [_String]
        text = lib.clang_getClangVersion()
        try:
            return (lib.clang_getCString(text) or b"").decode(errors="replace")
        finally:
            lib.clang_disposeString(text)
    except (OSError, AttributeError):
        return ""


def index() -> Index:
    """libclang's Index, once libclang is known to be libclang-ng's."""
    found = re.search(r"version (\d+)\.", version())
    if found and int(found.group(1)) < NEEDED:
        raise AdgenError([error(
            f"adgen reads sources with libclang {NEEDED} (the libclang-ng package), but the clang module holds "
            f"{found.group(0).removeprefix('version ').rstrip('.')}: another package's libclang replaced its "
            "files (the `libclang` package, which TensorFlow requires, installs the same ones); put libclang-ng "
            "back with `pip install --force-reinstall --no-deps libclang-ng`")])
    return Index.create()
