"""C++ exceptions in the code adgen differentiates (specs/cxx.md). adgen lowers C++ with
exceptions, as its users compile it, so that a `throw` or a `try` anywhere in a source builds;
before anything reads the code, unwinding is taken out of it:

- an `invoke` becomes a call followed by a branch to its normal destination, so no exception
  passes through code a derivative runs (its landing pads are left without predecessors, for
  the optimizer to drop); where the callee is not the sources' (a library function, a call
  through a pointer: what may really throw) and the landing pad catches, a call of CATCHES
  goes before it, which the modes refuse, naming the line (a `try`/`catch` the derivative would
  not honour);
- a throw in a header (the C++ library's: a `std::vector` grown past its maximum size, an `at()`
  out of range; Eigen's failed allocation) aborts before the exception object is made (with a
  constructor of the library's, which the object must not need), as libc++ does without
  exceptions;
- a throw in a source file itself stays, for the modes to refuse (calls.py): an error at its
  line.

What is left of exception handling (landing pads, `resume`, the personality) is unreachable,
and goes with the optimizer's first pass."""

from __future__ import annotations

import os
import re

from adgen.ir_ad.ir import debuginfo
from adgen.ir_ad.ir.instructions import parse_instruction, strip_metadata

CATCHES = "@__adgen_catches"  # marks a call whose exception the source would catch
_ALLOCATE = "@__cxa_allocate_exception("
_CONTINUED = re.compile(r"\n[ \t]+(to label |unwind label |cleanup|catch |filter )")
_TARGETS = re.compile(r"\s+to label (%[-\w.$]+|%\"[^\"]*\") unwind label (%[-\w.$]+|%\"[^\"]*\")")
_LABEL = re.compile(r'^([-\w.$]+|"[^"]*"):')
_METADATA = re.compile(r"^(![0-9]+) = (.*)$", re.M)


def may_unwind(text: str) -> bool:
    """Whether the module's text has anything to take out (a quick test before reading it)."""
    return " invoke " in text or "@__cxa_allocate_exception" in text


def without_unwinding(text: str, sources: set[str]) -> str:
    """The module's text with its invokes made calls, the headers' throws aborts and the calls
    whose exceptions the sources catch marked (see the module's docstring). `sources`: the real
    paths of the source files, whose throws stay."""
    text = _CONTINUED.sub(r" \1", text)
    metadata = dict(_METADATA.findall(text))
    defined = {m.group(1) for m in re.finditer(r"^define [^@]*(@[-\w.$]+|@\"[^\"]*\")\(", text, re.M)}
    out: list[str] = []
    body: list[str] = []
    for line in text.split("\n"):
        if body or line.startswith("define "):
            body.append(line)
            if line == "}":
                out += _function(body, metadata, defined, sources)
                body = []
            continue
        out.append(line)
    declared = "\n".join(out)
    if "call void @abort() noreturn" in declared and not re.search(r"^(declare|define) [^@]*@abort\(", declared, re.M):
        out.append("declare void @abort()")
    if CATCHES in declared:
        out.append(f"define internal void {CATCHES}() noinline {{\n  call void asm sideeffect \"\", \"\"()\n"
                   "  ret void\n}")
    return "\n".join(out)


def _function(lines: list[str], metadata: dict[str, str], defined: set[str], sources: set[str]) -> list[str]:
    catching = _catching_pads(lines)
    out = []
    for line in lines:
        if line.startswith("  ") and _ALLOCATE in line:
            where = debuginfo.location(metadata, strip_metadata(line)[1])
            if where is None or os.path.realpath(where.file) not in sources:
                out.append("  call void @abort() noreturn nounwind")
        targets = _TARGETS.search(line) if re.match(r"^\s+(%[-\w.$\"]+ = )?invoke ", line) else None
        if targets is None:
            out.append(line)
            continue
        call = re.sub(r"^(\s+(?:%[-\w.$\"]+ = )?)invoke ", r"\1call ", line[:targets.start()] + line[targets.end():], 1)
        callee = parse_instruction(call).callee
        dbg = strip_metadata(line)[1]
        if targets.group(2).lstrip("%") in catching and (callee.startswith("%") or callee not in defined):
            out.append(f"  call void {CATCHES}()" + (f", !dbg {dbg}" if dbg else ""))
        out += [call, f"  br label {targets.group(1)}"]
    return out


def _catching_pads(lines: list[str]) -> set[str]:
    """The labels of the function's landing pads with a `catch` or `filter` clause (not only
    `cleanup`): where the source catches an exception. Not a `noexcept` function's (catching
    all, to call `std::terminate`: the program ends there as the derivative's would)."""
    pads, label, terminating = set(), None, set()
    for line in lines:
        m = _LABEL.match(line)
        if m:
            label = m.group(1)
        elif " landingpad " in line and re.search(r"\b(catch|filter) ", line.split(" landingpad ", 1)[1]):
            pads.add(label)
        elif label in pads and re.search(r"call void @(__clang_call_terminate|_ZSt9terminatev)\(", line):
            terminating.add(label)
    return pads - terminating
