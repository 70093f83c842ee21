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
                   "__ostream_insert", "_Prime_rehash_policy", "__basic_file"}  # (libstdc++'s: out of line in its library)
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


# The C++ library's classes of characters, streams and locales as demangled names spell them.
_CXX_OBJECT_CLASSES = {c for c in _CXX_IO_CLASSES if c.startswith(("basic_", "locale", "ios_base", "ctype", "num_"))} | {
    "string", "wstring", "istream", "ostream", "iostream", "stringstream", "istringstream", "ostringstream", "ifstream",
    "ofstream", "fstream", "filebuf", "stringbuf", "streambuf", "ios", "__basic_file"}


@cache
def cxx_library_objects(name: str) -> tuple[bool, frozenset[int], int] | None:
    """Of a call of the C++ library's I/O (`cxx_library_io`): whether it is a member function of
    one of the library's classes of strings, streams and locales (its object the call's first
    argument), which of its parameters (from 0) refer to such objects (`std::string &`, an
    `std::istream &`), and how many parameters it has: the objects whose contents the library
    writes as it pleases (a string's buffer it grows), which hold no derivatives. None where the
    name cannot be read."""
    text = demangle(name) if name.startswith("_Z") else None
    if not text or not text.endswith(")") and not text.endswith(") const"):
        return None
    close = text.rindex(")")
    depth, open_ = 0, None
    for k in range(close, -1, -1):
        depth += (text[k] == ")") - (text[k] == "(")
        if depth == 0:
            open_ = k
            break
    if open_ is None:
        return None
    function = _without_template_arguments(_last_word(text[:open_]))
    qualifier = function.rpartition("::")[0]
    member = _class_name(qualifier) in _CXX_OBJECT_CLASSES
    params = _top_level_split(text[open_ + 1:close])
    objects = frozenset(k for k, p in enumerate(params) if p.rstrip().endswith(("&", "*")) and
                        p.lstrip().startswith(("std::", "const std::")) and
                        _class_name(p.replace("const", "").rstrip(" &*")) in _CXX_OBJECT_CLASSES)
    return member, objects, len(params)


def _top_level_split(text: str) -> list[str]:
    """A parameter list split at its commas outside template arguments and parentheses."""
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        depth += 1 if ch in "<(" else -1 if ch in ">)" else 0
        if ch == "," and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    tail = text[start:]
    return parts + [tail] if tail.strip() else parts


def _last_word(text: str) -> str:
    """The name of a demangled function, its return type before it left out."""
    depth, start = 0, 0
    for k, ch in enumerate(text):
        depth += 1 if ch in "<(" else -1 if ch in ">)" else 0
        if ch == " " and depth == 0:
            start = k + 1
    return text[start:]


def _without_template_arguments(name: str) -> str:
    out, depth = [], 0
    for ch in name:
        depth += (ch == "<") - (ch == ">")
        if depth == 0 and ch != ">":
            out.append(ch)
    return "".join(out)


def _class_name(qualified: str) -> str:
    """`basic_string` of `std::__cxx11::basic_string<char, ...>`."""
    return _without_template_arguments(qualified).rpartition("::")[2].strip()


def cxx_library_header(path: str, name: str) -> bool:
    """Whether a source file is the C++ library's header of this file name."""
    path = path.replace("\\", "/")
    return _CXX_INCLUDE.search(path) is not None and path.rsplit("/", 1)[-1] == name


def cxx_library_io_header(path: str) -> bool:
    """Whether a source file is one of the C++ library's headers of streams and locales: code
    inlined from there that calls through a virtual table the program's sources do not define
    is the library calling itself (a stream's `imbue`), as its named functions are."""
    path = path.replace("\\", "/")
    return _CXX_INCLUDE.search(path) is not None and path.rsplit("/", 1)[-1] in _CXX_IO_HEADERS


__all__ = ["demangle", "cxx_library_header", "cxx_library_io", "cxx_library_io_header", "cxx_library_objects"]
