"""The stretches of a source its preprocessor skips (`#if` branches not taken, with the flags of
the build), from libclang: annotations there are not the build's, whose function may be defined
again in the branch taken (`#ifdef FAST ... #else ... #endif`). libclang's Python binding lacks
`clang_getAllSkippedRanges`; it is called through the binding's own library."""

from __future__ import annotations

import ctypes
import os
from functools import cache

from clang.cindex import SourceRange, conf

from adgen.base.diagnostics import SourceFile


class _RangeList(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint), ("ranges", ctypes.POINTER(SourceRange))]


@cache
def _library():
    lib = conf.lib
    lib.clang_getAllSkippedRanges.argtypes = [ctypes.c_void_p]
    lib.clang_getAllSkippedRanges.restype = ctypes.POINTER(_RangeList)
    lib.clang_disposeSourceRangeList.argtypes = [ctypes.POINTER(_RangeList)]
    lib.clang_disposeSourceRangeList.restype = None
    return lib


def skipped_ranges(tu, source: SourceFile, main: str) -> list[tuple[int, int]]:
    """The character offsets (start, end) in `source` (whose real path is `main`) of what the
    preprocessor skipped, from the `#if` not taken to its `#endif` or `#else`; the translation
    unit must have been parsed with a detailed preprocessing record."""
    lib = _library()
    found = lib.clang_getAllSkippedRanges(tu)
    if not found:
        return []
    try:
        spans = []
        for k in range(found.contents.count):
            r = found.contents.ranges[k]
            start, end = r.start, r.end
            if start.file is None or os.path.realpath(start.file.name) != main:
                continue
            spans.append((source.offset(start.line, start.column), source.offset(end.line, end.column)))
        return spans
    finally:
        lib.clang_disposeSourceRangeList(found)
