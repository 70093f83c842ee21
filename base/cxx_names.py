"""C++ names from their mangled symbols (Itanium ABI): demangled by the C++ runtime's own
demangler (`__cxa_demangle`) where this machine has one, libstdc++'s, else libc++'s; and which
are of the C++ library's streams, strings and locales, which carry no derivatives."""

from __future__ import annotations

import ctypes
import ctypes.util
import re
from functools import cache


@cache
def _demangler():
    for name in ("stdc++", "c++", "c++abi"):
        found = ctypes.util.find_library(name)
        if not found:
            continue
        try:
            f = ctypes.CDLL(found).__cxa_demangle
        except (OSError, AttributeError):
            continue
        f.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        f.restype = ctypes.c_void_p
        return f
    return None


def demangle(symbol: str) -> str | None:
    """`double quartic<double>(double)` for `_Z7quarticIdET_S0_`; None where it cannot be told
    (not a mangled name, or no demangler on this machine)."""
    f = _demangler()
    if f is None:
        return None
    status = ctypes.c_int(0)
    out = f(symbol.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not out:
        return None
    try:
        return ctypes.string_at(out).decode(errors="replace")
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(out))


# The C++ library's streams, strings and locales (libc++'s `std::__1::`, libstdc++'s `std::` and its
# abbreviations `So`, `Si`...), and its hashing of bytes, by their mangled names (Itanium ABI): what
# they do to memory moves characters or makes integers, never derivatives. Their templates are defined in the program's own module, so the
# name decides before the definition would be differentiated (a `std::cout << x` in a function).
_CXX_IO_CLASSES = {"basic_streambuf", "basic_iostream", "basic_ios", "basic_istream", "basic_ostream", "basic_string",
                   "basic_filebuf", "basic_stringbuf", "basic_ostringstream", "basic_istringstream",
                   "basic_stringstream", "basic_ifstream", "basic_ofstream", "basic_fstream", "locale", "ios_base",
                   "ctype", "num_put", "num_get", "__put_character_sequence", "__pad_and_output", "to_string",
                   "to_wstring", "endl", "flush", "char_traits", "__libcpp_verbose_abort", "__throw_out_of_range",
                   "__throw_length_error", "__throw_bad_alloc", "__hash_memory", "_Hash_bytes", "__next_prime",
                   "__ostream_insert", "_Prime_rehash_policy"}  # (libstdc++'s: out of line in its library)
_CXX_STD = re.compile(r"_ZN?K?St(?:3__1|7__cxx11|8__detail)?(\d+)")
_CXX_STD_ABBREVIATED = re.compile(r"_ZN?K?S[oisd]")  # libstdc++'s std::ostream, istream, string, iostream
_CXX_STREAM_OPERATOR = re.compile(r"_ZN?St(?:3__1)?(?:ls|rs).*(?:basic_[io]stream|S[oi]_)")  # << and >>
# The C++ library's headers of streams and locales (libc++'s, libstdc++'s `bits/`), by file name.
_CXX_IO_HEADERS = {"ios", "istream", "ostream", "streambuf", "sstream", "fstream", "iostream", "iomanip", "locale",
                   "__locale", "basic_ios.h", "basic_ios.tcc", "ios_base.h", "ostream.tcc", "istream.tcc",
                   "streambuf.tcc", "sstream.tcc", "fstream.tcc", "locale_facets.h", "locale_facets.tcc",
                   "locale_classes.h", "locale_classes.tcc", "ostream_insert.h", "basic_ostream.h",
                   "basic_istream.h"}
_CXX_INCLUDE = re.compile(r"/(?:libcxx/include|c\+\+/v1|c\+\+/[0-9][^/]*)/")


def cxx_library_io(name: str) -> bool:
    """Whether a mangled name is of the C++ library's I/O, strings or locales (no derivatives)."""
    if _CXX_STD_ABBREVIATED.match(name) or _CXX_STREAM_OPERATOR.match(name):
        return True
    m = _CXX_STD.match(name)
    return m is not None and name[m.end():m.end() + int(m.group(1))] in _CXX_IO_CLASSES


def cxx_library_io_header(path: str) -> bool:
    """Whether a source file is one of the C++ library's headers of streams and locales: code
    inlined from there that calls through a virtual table the program's sources do not define
    is the library calling itself (a stream's `imbue`), as its named functions are."""
    path = path.replace("\\", "/")
    return _CXX_INCLUDE.search(path) is not None and path.rsplit("/", 1)[-1] in _CXX_IO_HEADERS


__all__ = ["demangle", "cxx_library_io", "cxx_library_io_header"]
