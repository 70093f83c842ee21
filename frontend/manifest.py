"""The manifest `<stem>.adgen.json`: each annotated function of the source and each derived
function, with its parameters and results in the form `adgen.load` turns into ctypes calls,
so loading never parses C again."""

from __future__ import annotations

import json

from .abi import Signature, Slot


def manifest(source: str, version: str, signatures: list[Signature]) -> str:
    functions: dict[str, dict] = {}
    for sig in signatures:
        primal = sig.derivation.primal
        functions.setdefault(primal.name, {
            "kind": "primal",
            "params": [_primal_param(p) for p in primal.params],
            "returns": {"ffi": primal.returns.ffi},
        })
    for sig in signatures:
        d = sig.derivation
        functions[sig.name] = {
            "kind": "derived",
            "of": d.primal.name,
            "mode": d.mode.value,
            "width": d.width,
            "activities": [a.word for a in d.activities],
            "returns_activity": d.returns.word if d.returns else None,
            "params": [_slot(p) for p in sig.params],
            "returns": ({"struct": sig.result_struct, "fields": [_slot(f) for f in sig.fields]}
                        if sig.result_struct else {"ffi": sig.fields[0].ffi, "field": sig.fields[0].name}
                        if sig.fields else {"ffi": "void"}),
        }
    return json.dumps({"adgen": version, "source": source, "functions": functions}, indent=1, sort_keys=True) + "\n"


def _primal_param(p) -> dict:
    """A pointer's element also says its size and, when it holds only doubles or only floats,
    which: what `adgen check` needs to fill a buffer of structs or rows with random numbers."""
    entry = {"name": p.name, "ffi": p.ctype.ffi, "role": ""}
    if p.ctype.is_pointer:
        entry["element"] = {"size": p.ctype.element_size, "floating": p.ctype.element_float}
    return entry


def _slot(slot: Slot) -> dict:
    return {"name": slot.name, "ffi": slot.ffi, "count": slot.count, "role": slot.role}
