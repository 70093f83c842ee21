"""The manifest `<stem>.adgen.json`: each annotated function of the source and each derived
function, with its parameters and results in the form `adgen.load` turns into ctypes calls,
so loading never parses C again."""

from __future__ import annotations

import json
from collections import Counter

from adgen.frontend.abi import Signature, Slot, signature


def manifest(source: str, version: str, signatures: list[Signature], cxx_library: str | None = None) -> str:
    """`cxx_library`: a C++ source's, the C++ library its derivatives were compiled against
    (libstdc++ or libc++: base/cxx_library.py), which a program linking them must use too."""
    functions: dict[str, dict] = {}
    overloaded = _overloaded(signatures)
    for sig in signatures:
        primal = sig.derivation.primal
        functions.setdefault(_key(primal, overloaded), {
            "kind": "primal",
            "params": [_primal_param(p) for p in primal.params],
            "returns": _value(primal.returns.ffi, primal.returns.fields),
            **({"symbol": primal.symbol} if primal.symbol else {}),  # (C++: the name the linker knows)
            **({"member": True} if primal.member else {}),  # (C++: not callable from C)
            **({"address": primal.address} if primal.function_type and not primal.member else {}),  # (C++: what
            # adgen.load takes, so that an inline function or a template's instantiation is compiled)
        })
    shared = _shared(signatures)
    for sig in signatures:
        functions[_derived_key(sig, shared)] = _derived(sig, overloaded)
        if sig.part == "forward":  # the split entry as a whole: what adgen.load calls both halves as
            whole = signature(sig.derivation)
            functions[_derived_key(whole, shared)] = {
                **_derived(whole, overloaded), "kind": "split",
                "parts": {s.part: _derived_key(s, shared) for s in signatures if s.derivation is sig.derivation}}
    library = {"cxx_library": cxx_library} if cxx_library else {}
    return json.dumps({"adgen": version, "source": source, **library, "functions": functions}, indent=1,
                      sort_keys=True) + "\n"


def _overloaded(signatures: list[Signature]) -> set[str]:
    """The names of C++ overloads among the annotated functions."""
    types: dict[str, set[str]] = {}
    for sig in signatures:
        primal = sig.derivation.primal
        types.setdefault(primal.name, set()).add(primal.function_type)
    return {name for name, seen in types.items() if len(seen) > 1}


def _shared(signatures: list[Signature]) -> set[str]:
    """The qualified names C++ overloads of derived functions share."""
    return {name for name, count in Counter(sig.qualified for sig in signatures).items() if count > 1}


def _derived_key(sig: Signature, shared: set[str]) -> str:
    """A derived function's name in the manifest: as it is declared, with its namespaces (C++
    linkage), and its parameter types where overloads share the name."""
    return sig.qualified + (sig.parameter_types() if sig.qualified in shared else "")


def _key(primal, overloaded: set[str]) -> str:
    """A primal's name in the manifest: with its parameter types where overloads share the name
    (`norms::norm(const float *, int)`)."""
    return primal.key if primal.name in overloaded else primal.name


def _derived(sig: Signature, overloaded: set[str]) -> dict:
    d = sig.derivation
    return {
        "kind": "derived",
        "of": _key(d.primal, overloaded),
        "mode": d.mode.value,
        "width": d.width,
        "activities": [a.word for a in d.activities],
        "returns_activity": d.returns.word if d.returns else None,
        "prefix": d.prefix,
        **({"part": sig.part} if sig.part else {}),
        **({"symbol": sig.linker_name} if sig.linker_name != sig.name else {}),  # (declared in C++: the function
        # of C linkage its inline definition calls)
        "params": [_slot(p) for p in sig.params],
        "returns": ({"struct": sig.result_struct, "fields": [_slot(f) for f in sig.fields]}
                    if sig.result_struct else {**_slot(sig.fields[0]), "field": sig.fields[0].name}
                    if sig.fields else {"ffi": "void"}),
    }


def _primal_param(p) -> dict:
    """A pointer's element also says its size and, when it holds only doubles or only floats,
    which: what `adgen check` needs to fill a buffer of structs or rows with random numbers."""
    entry = {"name": p.name, "role": "", **_value(p.ctype.ffi, p.ctype.fields)}
    if p.ctype.is_pointer:
        entry["element"] = {"size": p.ctype.element_size, "floating": p.ctype.element_float}
        if p.ctype.shadow_spelling != p.ctype.spelling:  # (a pointer to const: the function reads it only)
            entry["element"]["const"] = True
    if p.ctype.reference:  # (one element)
        entry["reference"] = True
    if p.ctype.through_pointers:  # (a std::vector: adgen check cannot make one)
        entry["element"]["pointers"] = True
    return entry


def _slot(slot: Slot) -> dict:
    return {"name": slot.name, "count": slot.count, "role": slot.role, **_value(slot.ffi, slot.fields)}


def _value(ffi: str, fields: tuple) -> dict:
    """How ctypes passes a value; a struct by value also lists its fields, nested the same way."""
    if ffi != "struct":
        return {"ffi": ffi}
    return {"ffi": ffi, "fields": [{"name": n, "count": c, **_value(f, sub)} for n, f, c, sub in fields]}
