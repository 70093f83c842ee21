"""Globals of read-only data, read from their IR text: what a pointer into one may reach."""

from __future__ import annotations

import re

from adgen.ir_ad.ir.module import Module

_GLOBAL = re.compile(r'@(?:"[^"]*"|[-\w.$]+)')
_NAMED_TYPE = re.compile(r'%(?:"[^"]*"|[-\w.$]+)')
_BYTES = re.compile(r'c"[^"]*"')
_FLOATING = re.compile(r"\b(?:half|bfloat|float|double|x86_fp80|fp128|ppc_fp128)\b")
# The C++ ABI's virtual tables, their tables (VTTs), type information and type names: read-only,
# holding pointers to functions and to one another, whatever their declaration (an `external
# global` of the C++ runtime's) says.
_CXX_TABLES = ("@_ZTV", "@_ZTT", "@_ZTI", "@_ZTS")


def read_only(module: Module, ref: str) -> bool:
    """Whether a constant pointer operand (a global, a constant expression of globals) points
    into read-only memory holding no floating data and no pointers but to functions and to
    such memory: a string literal, a table of them, a C++ virtual table. A global `constant`
    the module defines, or one of the C++ ABI's tables."""
    return bool(_GLOBAL.search(ref)) and _read_only(module, ref, set())


def _read_only(module: Module, text: str, seen: set[str]) -> bool:
    for name in _GLOBAL.findall(_BYTES.sub("", text)):
        if name in seen or name in module.functions or name.startswith(_CXX_TABLES):
            continue
        seen.add(name)
        line = module.globals.get(name)
        if line is None:
            return False
        rest = _BYTES.sub('c""', line.split(" = ", 1)[1]) if " = " in line else ""
        words = rest.split()
        at = next((k for k, w in enumerate(words) if w in ("constant", "global")), 0)
        if not words or words[at] != "constant" or {"external", "extern_weak"} & set(words[:at]) or \
                _floating_text(module, rest, set()) or not _read_only(module, rest, seen):
            return False
    return True


def _floating_text(module: Module, text: str, seen: set[str]) -> bool:
    """Whether IR text names a floating type, itself or through the named types it uses."""
    if _FLOATING.search(text):
        return True
    for name in _NAMED_TYPE.findall(text):
        if name not in seen:
            seen.add(name)
            if _floating_text(module, module.named_types.get(name, "double"), seen):
                return True
    return False
