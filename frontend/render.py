"""Renders the header and the stub file from checked signatures. Every character of generated
text is in templates/; this module only gathers what the templates print."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

from adgen.frontend.abi import Signature
from adgen.frontend.ctype import DeclRef, declare, pointer_to
from adgen.frontend.languages import is_rust
from adgen.base.naming import KERNEL_PREFIX
from adgen.base import __version__
from adgen.base.templates import environment
from adgen.frontend.local_type import LocalType
from adgen.frontend.prototypes import Prototype, Unit


@dataclass(frozen=True)
class Outputs:
    header: str
    stubs: str


def output_names(source: Path) -> tuple[str, str]:
    """The declarations' file (a C header, or for a Rust source the Rust wrappers) and the stubs'."""
    return f"{source.stem}.adgen.{'rs' if is_rust(source) else 'h'}", f"{source.stem}.adgen.c"


@dataclass(frozen=True)
class Block:
    """A run of derived functions declared together: with C linkage, or with C++ linkage in
    their namespaces (`scope`)."""

    c_linkage: bool
    scope: tuple[str, ...]
    signatures: tuple[Signature, ...]


def blocks(signatures: list[Signature]) -> list[Block]:
    """The signatures in order, in blocks of the same linkage and namespaces."""
    out: list[Block] = []
    for sig in signatures:
        c_linkage, scope = not sig.cxx_linkage, sig.derivation.primal.scope if sig.cxx_linkage else ()
        if out and (out[-1].c_linkage, out[-1].scope) == (c_linkage, scope):
            out[-1] = Block(c_linkage, scope, (*out[-1].signatures, sig))
        else:
            out.append(Block(c_linkage, scope, (sig,)))
    return out


@cache
def c_environment() -> jinja2.Environment:
    """adgen's templates, with the filters that spell C declarations."""
    return environment(declare=declare, pointer_to=pointer_to)


def render(unit: Unit, signatures: list[Signature], out_dir: Path, version: str) -> Outputs:
    source = unit.source
    header, _ = output_names(source.path)
    decls = [r for s in signatures for t in _types(s.derivation.primal) for r in t.decls]
    local_types = _local_types(unit, decls) + list(getattr(unit, "c_types", []))  # a Rust source's structs
    context = dict(
        version=version,
        source=source.path.name,
        stem=source.path.stem,
        header=header,
        guard="ADGEN_" + re.sub(r"[^A-Za-z0-9]", "_", header).upper(),
        includes=_includes(unit, decls, out_dir) + _system(signatures),
        stub_includes=_includes(unit, decls, out_dir, before=max((t.line for t in local_types), default=0)) +
        _system(signatures),
        local_types=local_types,
        ahead=sorted({tag for s in signatures for t in _types(s.derivation.primal) for tag in t.ahead}),
        uses_restrict=any(re.search(r"\brestrict\b", s.prototype()) for s in signatures),
        signatures=signatures,
        blocks=blocks(signatures),
        where=lambda f: f"{source.path.name}:{source.line_col(f.span.offset)[0]}",
        kernel_prefix=KERNEL_PREFIX,
        cxx=getattr(unit, "cxx", False),
        cxx_library=getattr(unit, "cxx_library", None),  # (C++: checked against the program's, header.h.j2)
    )
    env = c_environment()
    return Outputs(env.get_template("header.h.j2").render(context), env.get_template("stubs.c.j2").render(context))


def _system(signatures: list[Signature]) -> list[str]:
    """The C library headers the generated declarations need themselves (size_t, for a tape)."""
    return ["<stddef.h>"] if any(s.part for s in signatures) else []


def _types(f: Prototype):
    yield f.returns
    for p in f.params:
        yield p.ctype


def _includes(unit: Unit, decls: list[DeclRef], out_dir: Path, before: int = 0) -> list[str]:
    """The source's own #include lines that bring in the declarations the signatures use, and
    all those above line `before` (what the source's own type definitions copied into the stubs
    may use: `double complex` is a macro), and in C++ all its `<...>` includes (the libraries'
    class templates its signatures name). A quoted include found beside the source is
    rewritten relative to the output directory."""
    main = os.path.realpath(unit.source.path)
    needed = {unit.includes[p] for p in (os.path.realpath(r.file) for r in decls) if p != main and p in unit.includes}
    needed |= {i for i in unit.includes.values() if i.line < before}
    if getattr(unit, "cxx", False):  # C++ library types (`Eigen::Matrix<double, -1, 1>`) are not declared ahead
        needed |= {i for i in unit.includes.values() if i.spelling.startswith("<")}
    spellings = []
    for include in sorted(needed, key=lambda i: i.line):
        spelling = include.spelling
        beside = unit.source.path.parent / spelling[1:-1]
        if spelling.startswith('"') and beside.exists() and os.path.samefile(beside, include.path):
            spelling = '"' + Path(os.path.relpath(include.path, out_dir.resolve())).as_posix() + '"'
        spellings.append(spelling)
    return list(dict.fromkeys(spellings))


def _local_types(unit: Unit, decls: list[DeclRef]) -> list[LocalType]:
    """Declarations of types the source defines itself, copied into the stub file."""
    main = os.path.realpath(unit.source.path)
    found: dict[tuple, LocalType] = {}
    src = unit.source
    for ref in decls:
        if os.path.realpath(ref.file) == main and ref.start not in found:
            text = src.text[src.offset(*ref.start) : src.offset(*ref.end)]
            found[ref.start] = LocalType(ref.name, text, ref.start[0], ref.namespaces)
    return [found[k] for k in sorted(found)]


def render_text(template: str, **context) -> str:
    """Any other generated text that spells C declarations (the lowering wrapper, say)."""
    return c_environment().get_template(template).render(version=__version__, **context)
