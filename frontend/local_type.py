"""A type a source defines itself: the generated stubs copy its definition, since they cannot
include the source. Its own module so that the C renderer and the Rust reader (whose
#[repr(C)] structs become such types) share it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LocalType:
    name: str
    text: str
    line: int  # where the source defines it
    namespaces: tuple[str, ...] = ()  # C++: the namespaces it stands in, outermost first
