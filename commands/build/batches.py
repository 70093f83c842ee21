"""A large build in batches: its derived functions grouped by the code their primals reach,
each batch optimized, differentiated and compiled from a module of only that code, and
released before the next, so that memory stays that of a batch, not of the build, and time
grows as the source does.

The module is lowered and linked once; its text is read once (ir/reach.py) for what each
annotated function and each derived function reaches. Derivations of one primal stay together,
and the groups are taken in the sources' order (neighbours tend to share their helpers) into
batches of about the same size, `BATCH_INSTRUCTIONS` lowered instructions or fewer; a build
whose derived functions reach fewer is one batch, built as it always was. The sources' keep
arrays become one array per batch, and each batch's module is the linked module with the
other batches' arrays, and every function its own entries do not reach, dropped
(optimize.batch_modules).

A function reached by several batches is in each of their modules, optimized and compiled in
each, internal to each batch's object (a shared `static` helper; a primal also called by
another batch's primal); a function called through pointers that the user's object shares
(dispatch.py) is a weak definition in each, one of which the linker keeps. A call through a
pointer may reach every function of the sources of its type that has external linkage
(dispatch.py's candidates), so a function making one reaches all of them.

Batched only where each batch's derivatives come out as the whole build's would: derivatives of
C functions at one level (no `of` entry, no primal reaching a derived function), objects that
clang makes and lld joins (cc1.joins), no --emit-llvm (which writes one module), no OpenMP
region (forked again from the whole module), no module assembly or constructors (copied into
each batch's object), and batches that repeat less than the module's code again."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from adgen.base.diagnostics import AdgenError, error
from adgen.commands.build.levels import primal_ir_name
from adgen.frontend.abi import Signature
from adgen.frontend.generate import Generated
from adgen.frontend.languages import is_cxx, is_rust
from adgen.ir_ad.ir.reach import Definition, bare, definitions, reached

# Lowered instructions (before any optimization) of the code a batch's primals reach: a module
# reaching fewer is built whole (bench/programs/gpt2.c's reach 4,500). An instruction is about
# ten after differentiation; memory grows with the batch, time hardly: 1,000 functions of
# bench/scale.py built in 101 s with 450 MB at this size, in 99 s with 700 MB at 80,000 (the
# environment's ADGEN_BATCH_INSTRUCTIONS sets another size).
BATCH_INSTRUCTIONS = 20_000
ARRAY_PREFIX = "__adgen_primals_batch"  # a batch's keep array: this and its number
# (the prefix of the sources' keep arrays: the derivative module's text drops them, pipeline._dropped)
REPEATED = 2.0  # batches whose modules hold more than this many times the code are not made


def batch_instructions() -> int:
    """BATCH_INSTRUCTIONS, or what the environment's ADGEN_BATCH_INSTRUCTIONS says."""
    value = os.environ.get("ADGEN_BATCH_INSTRUCTIONS", "").strip()
    if not value:
        return BATCH_INSTRUCTIONS
    if not value.isdigit() or int(value) == 0:
        raise AdgenError(error(f"ADGEN_BATCH_INSTRUCTIONS must be a positive number of instructions, not '{value}'"))
    return int(value)


@dataclass
class Batch:
    entries: list[tuple[int, Signature]]  # (source index, signature), in the sources' order
    primals: list[str]  # the primals its keep array holds (bare names)
    reached: set[str] = field(default_factory=set)  # the definitions its module keeps, bare names
    size: int = 0  # their lowered instructions


@dataclass
class Plan:
    batches: list[Batch]
    arrays: list[str]  # each batch's keep array, bare names
    total: int  # lowered instructions reached by all batches

    def describe(self) -> str:
        sizes = sorted(b.size for b in self.batches)
        return (f"{len(self.batches)} batches of {sizes[0]:,} to {sizes[-1]:,} lowered instructions, "
                f"{self.total:,} in all")


def batchable(sources: list[Path], generated: list[Generated], emit_llvm: bool, joins: bool,
              outlined: set[str]) -> bool:
    """What the build allows (see the module's doc) before its module is read."""
    return (joins and not emit_llvm and not outlined and
            not any(is_rust(p) or is_cxx(p) for p in sources) and
            all(s.derivation.inner is None for g in generated for s in g.signatures))


def large(text: str, limit: int | None = None) -> bool:
    """Whether a linked module's text holds more lowered instructions than a batch (about: its
    indented lines, counted without reading them)."""
    return text.count("\n  ") > (limit or batch_instructions())


def plan(text: str, generated: list[Generated], primals: list[dict[str, str]], keep_arrays: list[str],
         limit: int | None = None) -> Plan | str:
    """The batches of a linked module's text (`primals`: each source's kept functions, by C
    name -> IR name; `keep_arrays`, each source's keep array), or why it is built as one: small
    enough (fewer than `limit` lowered instructions reached, BATCH_INSTRUCTIONS by default), or
    not to be split (see the module's doc)."""
    limit = limit or batch_instructions()
    if "\nmodule asm " in text or "@llvm.global_ctors" in text or "@llvm.global_dtors" in text:
        return "the sources have module assembly or constructors"
    defs = definitions(text)
    for array in keep_arrays:
        defs.pop(array, None)  # (what keeps the primals alive: the batches' arrays will)
    derived = {s.linker_name for g in generated for s in g.signatures}
    pointers: dict[tuple, list[str]] = {}  # by type, what a call through a pointer may reach (dispatch.py)
    for n, d in defs.items():
        if d.function and not d.local and d.type is not None and n not in derived and not n.startswith("__adgen"):
            pointers.setdefault(d.type, []).append(n)
    base = reached(defs, {n for n, d in defs.items() if d.kept}, pointers)  # (in every batch)
    groups: dict[str, list[tuple[int, Signature]]] = {}  # by primal, in the sources' order
    for i, (g, names) in enumerate(zip(generated, primals)):
        for s in g.signatures:
            groups.setdefault(_primal(s, names), []).append((i, s))
    reach = {}
    for primal, entries in groups.items():
        own = {s.linker_name for _, s in entries}
        reach[primal] = reached(defs, {primal} | own, pointers)
        if (reach[primal] - own) & derived:
            return f"'{primal}' reaches a derived function (a derivative of a later level)"
    total = _size(defs, base.union(*reach.values()))
    if total <= limit:
        return f"the derived functions reach {total:,} lowered instructions, a batch {limit:,}"
    count = math.ceil(total / limit)
    target = (total - _size(defs, base)) / count
    if target <= 0:
        return "what every batch keeps (the sources' global variables) reaches all the code"
    order: list[list[str]] = [[] for _ in range(count)]  # each batch's primals
    seen, position = set(base), 0
    for primal in groups:  # each group where the middle of its new code falls
        new = reach[primal] - seen
        seen |= new
        order[min(count - 1, int((position + _size(defs, new) / 2) // target))].append(primal)
        position += _size(defs, new)
    batches = []
    for primals_k in filter(None, order):
        b = Batch([e for p in primals_k for e in groups[p]], primals_k, base.union(*(reach[p] for p in primals_k)))
        b.size = _size(defs, b.reached)
        batches.append(b)
    if len(batches) < 2:
        return "one derived function's primal reaches all the code"
    if sum(b.size for b in batches) > REPEATED * total:
        return f"batches would hold more than {REPEATED:g} times the code, what they share repeated"
    arrays = [f"{ARRAY_PREFIX}{k}" for k in range(len(batches))]
    for b, array in zip(batches, arrays):
        b.reached.add(array)
    return Plan(batches, arrays, total)


def _size(defs: dict[str, Definition], names: set[str]) -> int:
    return sum(defs[n].size for n in names)


def _primal(sig: Signature, names: dict[str, str]) -> str:
    """The bare name of the function an entry differentiates."""
    return bare(primal_ir_name(sig, names))
