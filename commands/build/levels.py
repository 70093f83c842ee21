"""Which level makes each derived function: a derivative is made from code in which every
derived function it reaches is already made, so an entry comes one level after the highest
among the derived functions its primal calls, directly or through other functions (`of
INNER` is one such call: the stub of INNER calls INNER's kernel). Read from the call graph of
the optimized sources, where each call of a derived function is a call of its kernel."""

from __future__ import annotations

from adgen.frontend.abi import Signature
from adgen.base.diagnostics import Collector, error, note
from adgen.base.naming import BY_ADDRESS_PREFIX

from adgen.ir_ad.diagnose import user_span
from adgen.ir_ad.ir import Instruction, Module
from adgen.ir_ad.ir.reach import spelled
from adgen.commands.build.kernels import kernel_name


def primal_ir_name(sig: Signature, names: dict[str, str]) -> str:
    """The IR name of the function an entry differentiates (`names`: its source's kept
    functions, by the name the source gives them)."""
    d = sig.derivation
    kept = (BY_ADDRESS_PREFIX if d.primal.by_value else "") + d.primal.key
    return spelled(names.get(kept, kept))


def entry_levels(module: Module, entries: list[tuple[Signature, dict[str, str]]], calls: set[str]
                 ) -> tuple[dict[str, int], set[str]]:
    """Each derivation's level (1, 2...), by its name, and the derivations a later level
    differentiates again (reached by another's primal). `calls`: functions whose code is not
    differentiated (@inactive, derivatives by hand), so what they call does not count. Every
    derivation reaching its own derived function (a cycle) is an error at its annotation."""
    owner = {kernel_name(s): s.derivation.name for s, _ in entries}
    derivations = {s.derivation.name: s.derivation for s, _ in entries}
    opaque = {"@" + c for c in calls}
    reached: dict[str, dict[str, list[Instruction]]] = {}  # derivation -> those it reaches, by the calls to each
    for sig, names in entries:
        if sig.derivation.name not in reached:
            reached[sig.derivation.name] = _kernel_calls(module, primal_ir_name(sig, names), owner, opaque)
    below = {name: set(reached[name]) | ({d.inner.name} if d.inner is not None else set())
             for name, d in derivations.items()}
    problems = Collector()
    for name in derivations:
        back = [n for n in sorted(below[name]) if name in _closure(below, n)]
        if back:
            problems.add(_cycle_error(module, derivations[name], back[0], reached[name].get(back[0], [])))
    problems.raise_if_any()
    levels: dict[str, int] = {}

    def level(name: str) -> int:
        if name not in levels:
            levels[name] = 1 + max((level(n) for n in below[name]), default=0)
        return levels[name]

    return {name: level(name) for name in derivations}, set().union(*below.values())


def _closure(below: dict[str, set[str]], start: str) -> set[str]:
    """The derivations `start` reaches, itself included."""
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += below[name]
    return seen


def _kernel_calls(module: Module, primal: str, owner: dict[str, str], calls: set[str]) -> dict[str, list[Instruction]]:
    """The derivations whose kernels `primal` reaches, each with the calls leading to it from
    `primal` (the first path met)."""
    found: dict[str, list[Instruction]] = {}
    todo: list[tuple[str, list[Instruction]]] = [(primal, [])]
    seen = set()
    while todo:
        name, path = todo.pop()
        if name in seen or name in calls or name not in module.functions:
            continue
        seen.add(name)
        for inst in module.functions[name].instructions():
            if inst.opcode == "call" and inst.callee:
                if inst.callee in owner:
                    found.setdefault(owner[inst.callee], path + [inst])
                else:
                    todo.append((inst.callee, path + [inst]))
    return found


def _cycle_error(module: Module, d, after: str, path: list[Instruction]):
    """At the annotation of a derivation on a cycle, with where its primal calls the derived
    function `after` leading back to it (the last call on the way that stands in the user's
    source)."""
    through = " itself" if after == d.name else f", whose code reaches '{d.name}' in turn"
    message = (f"'{d.name}' cannot be made: it differentiates '{d.primal.name}', which calls '{after}'{through}; "
               "a derivative cannot differentiate its own code")
    span = next((s for s in (user_span(module, call) for call in reversed(path)) if s is not None), None)
    notes = [note(f"'{d.primal.name}' calls '{after}' here", span)] if span else []
    return error(message, d.entry.name.span, notes)
