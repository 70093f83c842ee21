"""What the names of IR functions say: the family of an LLVM intrinsic (`@llvm.sin.f64` is a
`sin`), and the source path of a mangled Rust symbol."""

from __future__ import annotations

import re

# A type in an overloaded intrinsic's name (LLVM's getMangledTypeStr): `f64`, `i32`, `p0`, `v4f64`...
_MANGLED_TYPE = re.compile(r"(?:nxv\d+|v\d+|a\d+)*(?:[if]\d+|bf16|ppcf128|x86amx|x86mmx|p\d+|isVoid|Metadata|"
                           r"s_\w*|sl_\w*|f_\w*)")
_RUST_SYMBOL = re.compile(r"_ZN(\d+[^\d]\S*)E")  # the legacy mangling: _ZN, length-prefixed parts, E
_RUST_HASH = re.compile(r"h[0-9a-f]{16}")
_RUST_CLOSURE = "_$u7b$$u7b$closure$u7d$$u7d$"


def intrinsic_family(callee: str) -> str | None:
    """The intrinsic a call target or function name is, without `llvm.` and the types that
    overload it (`@llvm.sin.f64` -> "sin", `@llvm.is.fpclass.f64` -> "is.fpclass",
    `@llvm.memcpy.p0.p0.i64` -> "memcpy"); None for a name that is not an overloaded intrinsic's."""
    name = callee.lstrip("@").strip('"')
    if not name.startswith("llvm."):
        return None
    parts = name.split(".")[1:]
    k = next((k for k, part in enumerate(parts) if _MANGLED_TYPE.fullmatch(part)), None)
    return ".".join(parts[:k]) if k else None


def rust_path(symbol: str) -> list[str] | None:
    """The path a legacy-mangled Rust symbol names (`_ZN5model5rosen17h0123456789abcdefE` ->
    ["model", "rosen"]), its hash dropped and a closure spelled `{{closure}}`; None for a name
    that is not such a symbol."""
    if not _RUST_SYMBOL.fullmatch(symbol):
        return None
    parts, at = [], 3
    while at < len(symbol) - 1:
        m = re.match(r"\d+", symbol[at:])
        if m is None:
            return None
        length = int(m.group())
        at += m.end()
        parts.append(symbol[at:at + length].replace(_RUST_CLOSURE, "{{closure}}"))
        at += length
    if parts and _RUST_HASH.fullmatch(parts[-1]):
        parts.pop()
    return parts
