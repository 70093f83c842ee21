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
    """The path a mangled Rust symbol names (legacy `_ZN5model5rosen17h0123456789abcdefE`, or v0,
    nightly's default, which a stable rustc follows under RUSTC_BOOTSTRAP=1 as adgen's compile
    sets it for @inactive, `_RNvCs1234_5model5rosen`: ["model", "rosen"]), its hash dropped and
    a closure spelled `{{closure}}`; None for a name that is not such a symbol."""
    if symbol.startswith("_R"):
        try:
            return _V0(symbol[2:].split(".", 1)[0]).path()
        except (ValueError, IndexError, RecursionError):
            return None
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


_BASE62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_BASIC = {"a": "i8", "b": "bool", "c": "char", "d": "f64", "e": "str", "f": "f32", "h": "u8", "i": "isize",
          "j": "usize", "l": "i32", "m": "u32", "n": "i128", "o": "u128", "s": "i16", "t": "u16", "u": "()",
          "v": "...", "x": "i64", "y": "u64", "z": "!", "p": "_"}


class _V0:
    """A reader of Rust's v0 mangling (RFC 2603), enough to name a function by its path:
    crate roots, namespaces, impls, generic arguments and the types in them, back references."""

    def __init__(self, text: str, at: int = 0):
        self.s, self.i = text, at

    def _take(self) -> str:
        c = self.s[self.i]
        self.i += 1
        return c

    def _peek(self, c: str) -> bool:
        if self.s.startswith(c, self.i):
            self.i += 1
            return True
        return False

    def _number(self) -> int:  # <base-62-number>: "_" is 0, digits then "_" are their value + 1
        if self._peek("_"):
            return 0
        n = 0
        while (c := self._take()) != "_":
            n = n * 62 + _BASE62.index(c)
        return n + 1

    def _backref(self, read):
        at = self._number()
        if at >= self.i:
            raise ValueError("a back reference forwards")
        return read(_V0(self.s, at))

    def _ident(self) -> str:
        if self._peek("s"):
            self._number()  # (a disambiguator)
        self._peek("u")  # (punycode: shown as it is)
        digits = re.match(r"0|[1-9]\d*", self.s[self.i:])  # (no leading zeros: `0` then the next)
        if digits is None:
            raise ValueError("not an identifier")
        self.i += digits.end()
        self._peek("_")
        name = self.s[self.i:self.i + int(digits.group())]
        self.i += int(digits.group())
        return name

    def path(self) -> list[str]:
        c = self._take()
        if c == "C":
            return [self._ident()]
        if c == "N":
            namespace, prefix = self._take(), self.path()
            name = self._ident()
            return prefix + ["{{closure}}" if namespace == "C" else name] if name or namespace == "C" else prefix
        if c in "MX":
            if self._peek("s"):
                self._number()
            self.path()  # (the impl's own path: where it stands)
            of = self.type()
            return [f"<{of} as {'::'.join(self.path())}>" if c == "X" else of]
        if c == "Y":
            of = self.type()
            return [f"<{of} as {'::'.join(self.path())}>"]
        if c == "I":
            base, arguments = self.path(), []
            while not self._peek("E"):
                arguments.append(self._argument())
            shown = ", ".join(a for a in arguments if a)
            return base[:-1] + [f"{base[-1]}<{shown}>" if shown else base[-1]]
        if c == "B":
            return self._backref(lambda r: r.path())
        raise ValueError(f"not a path: {c}")

    def _argument(self) -> str:
        if self._peek("L"):
            self._number()
            return ""
        if self._peek("K"):
            return self._const()
        return self.type()

    def _const(self) -> str:
        if self._peek("p"):
            return "_"
        if self._peek("B"):
            return self._backref(lambda r: r._const())
        kind = self._take()
        negative = self._peek("n")
        digits = self.s[self.i:self.s.index("_", self.i)]
        self.i += len(digits) + 1
        value = int(digits or "0", 16)
        if kind == "b":
            return "true" if value else "false"
        return f"{'-' if negative else ''}{value}"

    def type(self) -> str:
        c = self._take()
        if c in _BASIC:
            return _BASIC[c]
        if c in "RQ":
            if self._peek("L"):
                self._number()
            return ("&mut " if c == "Q" else "&") + self.type()
        if c in "PO":
            return ("*mut " if c == "O" else "*const ") + self.type()
        if c == "A":
            of = self.type()
            return f"[{of}; {self._const()}]"
        if c == "S":
            return f"[{self.type()}]"
        if c == "T":
            items = []
            while not self._peek("E"):
                items.append(self.type())
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if c == "B":
            return self._backref(lambda r: r.type())
        if c == "F":
            if self._peek("G"):
                self._number()
            self._peek("U")
            if self._peek("K") and not self._peek("C"):
                self._ident()
            params = []
            while not self._peek("E"):
                params.append(self.type())
            result = self.type()
            return f"fn({', '.join(params)})" + (f" -> {result}" if result != "()" else "")
        if c == "D":
            if self._peek("G"):
                self._number()
            traits = []
            while not self._peek("E"):
                traits.append("::".join(self.path()))
                while self._peek("p"):
                    self._ident()
                    self.type()
            if self._peek("L"):
                self._number()
            return "dyn " + " + ".join(traits)
        self.i -= 1
        return "::".join(self.path())
