"""`adgen cc`, one C file written for Enzyme's API, top to bottom: read its calls to Enzyme's
entry points from the lowered file (calls.py) → give each distinct request a derivation
(as if an annotation asked for it) → lower, optimize and differentiate the file as `adgen build`
does, level by level where a differentiated function itself calls Enzyme's API (a derivative
of a derivative), those calls made adapter calls between levels → compile the file as the
user's flags say, rewrite its calls as adapter calls (adapters.py), link the derivatives in,
sharing the file's global variables → one object."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import llvmlite.binding as llvm

from adgen.base import __version__
from adgen.frontend.abi import Signature, signatures
from adgen.frontend.annotations import Entry, Word
from adgen.base.diagnostics import AdgenError, SourceFile, Span, error
from adgen.frontend.generate import Generated
from adgen.frontend.model import Derivation
from adgen.frontend.prototypes import Prototype, instances_referenced, read_unit
from adgen.frontend.render import output_names, render
from adgen.base.timing import Stages, plural
from adgen.base.toolchain import Compiler, cxx_command, zig_spelling
from adgen.frontend.languages import is_cxx

from adgen.ir_ad import optimize
from adgen.ir_ad.cc1 import Cc1, Machine, sections
from adgen.ir_ad.dispatch import USERS_COPY
from adgen.commands.cc.adapters import TAPE_ALIGN, Kernel, kernel_types, rewrite, too_small
from adgen.commands.build.pipeline import Prepared, _primals, differentiate, lower
from adgen.ir_ad.diagnose import Unsupported, at_instruction, source_name
from adgen.ir_ad.reverse.plan.explain import explain as explain_plans
from adgen.commands.cc.calls import (ByValue, Call, Declared, Registrations, Request, bare, differentiated,
                                     find_calls, hinted, iterated, registrations, shown, steering_calls)
from adgen.ir_ad.ir import Module
from adgen.ir_ad.ir.edit import declare_globals, define_line, make_external, string_attribute, without_tail_calls
from adgen.ir_ad.ir.init_array import init_arrays, without_constructors
from adgen.ir_ad.ir.parallel import fork_again
from adgen.commands.build.kernels import kernel_name
from adgen.commands.build.lower import lower_source
from adgen.ir_ad.rules import rule_for, written_by_hand


@dataclass
class EnzymeRequests:
    """What one C file asks of Enzyme's API."""

    source: Path
    calls: list[Call]
    requests: dict[Request, int]  # each distinct request, by first appearance -> its level (1, 2...)
    probe: Module  # the file lowered as it is, where the calls were read
    prototypes: object  # the file's prototypes (frontend.prototypes.read_unit)
    functions: dict[str, Prototype]  # the functions of the file, and the instances the calls name, by IR name
    declared: dict[str, Declared]  # those passing or returning structs by value, as calls.py reads them


def compile_unit(source: Path, flags: list[str], user_flags: list[str], compiler: Compiler, stages: Stages,
                 read_flags: list[str], explain: bool = False, assembly: bool = False, emit_llvm: bool = False
                 ) -> tuple[bytes | None, str]:
    """The object of `source`, or None when it makes no call to Enzyme's API (the caller then
    compiles it as it is). `flags` are what clang lowers the file with for differentiation
    (preprocessor and language flags), `user_flags` all the user gave for the object itself,
    `read_flags` what libclang reads it with. Also gives the cache plans of the reverse-mode
    derivatives (`--adgen-explain`). `assembly`: assembly text (-S) instead of an object; with
    `emit_llvm`, LLVM's IR (-S -emit-llvm) or bitcode (-c -emit-llvm), as clang writes them (Enzyme's
    tests run that IR with lli)."""
    with tempfile.TemporaryDirectory(prefix="adgen-cc-") as tmp, ThreadPoolExecutor(max_workers=1) as clang:
        work = Path(tmp)
        # the file's own object compiled meanwhile (the driver found it names Enzyme's API: it is needed)
        compiled = clang.submit(_compile, source, user_flags, compiler, work)
        with stages.stage("read", source.name):
            unit = read_calls(source, compiler, flags, read_flags, work)
        if unit is None:
            return None, ""
        user = _parsed(*compiled.result())
        machine = _machine_of(user, user_flags)
        tm = optimize.create(machine)
        optimizer = Cc1.bundled(compiler, machine)  # (clang optimizes where it is the bundled one: optimize.py)
        kernels, tapes, derivatives, explained = {}, {}, None, ""
        if unit.requests:
            derivatives, kernels, tapes, explained = _derivatives(unit, source, flags, compiler, read_flags, work,
                                                                  user, tm, stages, explain, optimizer)
        with stages.stage("link", "the file's own code, its calls made adapter calls"):
            obj = _link(user, derivatives, kernels, tapes, tm, user_flags, unit.declared, assembly, emit_llvm,
                        Cc1.emitter(machine) if machine.sections else None, optimizer)
    return obj, explained


def _derivatives(unit: EnzymeRequests, source: Path, flags: list[str], compiler: Compiler, read_flags: list[str], work: Path,
                 user, tm, stages: Stages, explain: bool, optimizer: Cc1 | None = None):
    """The derivatives the file's calls ask for, optimized, with the kernels each call's adapter
    calls, the split entries' tape sizes, and the cache plans (when `explain`)."""
    with stages.stage("check", plural(len(unit.requests), "derivative")):
        prototypes = unit.prototypes
        generated, names = _generated(unit, prototypes, work)
        registered = _registered(unit, prototypes)
    linked = optimize.parse(hinted(str(lower([source], [generated], compiler, flags, [], work, stages)), False))
    # OpenMP's parallel regions: serialized for the analyses, forked again by the derivatives (specs/openmp.md)
    linked = optimize.without_unwinding(linked, [source])  # C++: no exceptions, no aliases
    linked, outlined = optimize.serialize_parallel(linked)
    kept = _primals(linked, 0, generated)
    steering = {n.lstrip("@") for n in steering_calls(Module(str(linked)))}
    prepared = Prepared(linked, [generated], tm, stages, {n.lstrip("@") for n in registered.inactive} | steering,
                        {f: _like(f, name, unit) for f, name in registered.like.items()}, registered.custom,
                        registered.allocators)
    with stages.stage("differentiate", plural(len(unit.requests), "derivative")), written_by_hand(prepared.by_hand):
        text, plans, tapes = prepared.levels(lambda: _differentiate(unit, generated, kept, names, prepared))
    kernels = _kernels(generated, names, text)
    for c in unit.calls:  # here, where the calls have their places even when the file's own object has none
        size = tapes.get(names[c.request], 0)
        if c.allocated is not None and c.allocated < size + TAPE_ALIGN - 1:
            raise _at_call(Unsupported(c.caller, c.inst, too_small(c.allocated, size)), unit.probe)
    with stages.stage("optimize", "after differentiation"):
        derivatives = optimize.parse(hinted(_shared_globals(without_tail_calls(fork_again(text, outlined)), user)))
        derivatives = optimize.finish(derivatives, {k.name.lstrip("@") for k in kernels.values()}, tm, prepared.shared,
                                      cc1=optimizer, unrolled=True)
    return derivatives, kernels, tapes, explain_plans(prepared.module, plans) if explain and plans else ""


def read_calls(source: Path, compiler: Compiler, flags: list[str], read_flags: list[str],
               work: Path) -> EnzymeRequests | None:
    """The file's calls to Enzyme's API, read from the file lowered as it is, with the prototypes
    of the functions they name (`read_flags`: what libclang reads the file with), which say the
    structs passed by value; None if it makes none."""
    lowered = optimize.parse_bitcode(lower_source(compiler, source, _empty(source), 0, flags, [], work))
    optimize.inline_always(lowered, optimize.target_machine(None, None))
    probe = Module(hinted(str(lowered)))
    named = differentiated(probe)
    prototypes, functions = None, {}
    if named:  # (of the functions its includes declare, those named, and those with attributes: _registered)
        prototypes = read_unit(SourceFile(source), read_flags, included=frozenset(named))
        functions = {f.symbol or f.name: f for f in [*prototypes.included, *prototypes.functions]}
        if named - set(functions) and prototypes.cxx:  # instantiations of function templates (`(void *)f<double>`)
            functions |= instances_referenced(prototypes, named - set(functions))
    declared = {name: _declared(f) for name, f in functions.items() if name in named and f.by_value}
    try:
        calls = find_calls(probe, declared)
    except Unsupported as exc:
        raise _at_call(exc, probe)
    if not calls:
        return None
    derived = [c for c in calls if c.entry != "batch"]  # __enzyme_batch calls need no derivative
    return EnzymeRequests(source, derived, _levels(probe, derived), probe, prototypes, functions, declared)


def _declared(f: Prototype) -> Declared:
    """A function passing or returning structs by value, for calls.py."""
    def struct(c) -> ByValue | None:
        return ByValue(c.spelling, c.size, c.holds_floating or c.pointing_by_value,
                       c.size <= 1 and not c.fields) if c.by_value else None

    return Declared(tuple(struct(p.ctype) for p in f.params), f.returns.spelling if f.returns.by_value else "")


def _registered(unit: EnzymeRequests, prototypes) -> Registrations:
    """What the file registers, in its globals and in the attributes of Enzyme's plugin on its
    functions (`enzyme_inactive`, `enzyme_function_like("log1p")`), by IR name."""
    found = registrations(unit.probe)
    attributed = [("@" + (f.symbol or f.name), f.attributes) for f in [*prototypes.included, *prototypes.functions]]
    attributed += [(name, t.attributes) for t in prototypes.templates.values() if t.attributes
                   for name in unit.probe.functions if t.instantiates(name.lstrip("@"))]
    for ir_name, attributes in attributed:
        for attribute in attributes:
            m = re.fullmatch(r'enzyme_function_like\("([^"]*)"\)', attribute)
            if attribute == "enzyme_inactive":
                found.inactive.add(ir_name)
            elif m:
                found.like[ir_name] = m.group(1)
    return found


def _like(function: str, name: str, unit: EnzymeRequests):
    """The rule of a libm function, for a function registered as like it."""
    rule = rule_for("@" + name)
    if rule is None:
        raise AdgenError(error(f"'{function.lstrip('@')}' is registered as like '{name}', which is not a function "
                               "adgen has a derivative rule for"))
    return rule


def _levels(module: Module, calls: list[Call]) -> dict[Request, int]:
    """Each request's level: 1 when the function it differentiates reaches no call to Enzyme's
    API, else one more than the highest level among the calls it reaches."""
    def callees(name: str) -> set[str]:  # (C++: `invoke` where a vector's destructor must run; the module's
        return {i.callee for i in module.functions[name].instructions()  # functions read as they are reached)
                if i.opcode in ("call", "invoke") and i.callee in module.functions}
    asked: dict[str, list[Call]] = {}
    for c in calls:
        asked.setdefault(c.caller, []).append(c)
    levels: dict[Request, int] = {}

    def level(request: Request, path: tuple[Request, ...]) -> int:
        if request in levels:
            return levels[request]
        if request in path:
            raise AdgenError(error(f"'{request.function.lstrip('@')}' is differentiated by a call that it reaches "
                                   "itself: derivatives cannot derive each other in a cycle"))
        seen, todo, deepest = set(), [request.function], 0
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo += callees(name) if name in module.functions else ()
            deepest = max([deepest] + [level(c.request, path + (request,)) for c in asked.get(name, [])])
        levels[request] = deepest + 1
        return deepest + 1

    for c in calls:
        level(c.request, ())
    return {c.request: levels[c.request] for c in calls}


def _generated(unit: EnzymeRequests, prototypes, work: Path) -> tuple[Generated, dict[Request, str]]:
    """A derivation for each request, as if an annotation above its function asked for it,
    with the stubs its kernels are declared by. Its function may be declared in any file the
    translation unit includes (a unity build's other .c files)."""
    functions = unit.functions
    names: dict[Request, str] = {}
    sigs: list[Signature] = []
    first = {}
    for c in unit.calls:
        first.setdefault(c.request, c)
    for k, request in enumerate(unit.requests):
        call = first[request]
        c_name = _ir_name(request)
        proto = functions.get(c_name)
        if proto is None or proto.returns.by_value or len(proto.params) != len(request.activities):
            what = ("returns a struct by value, which Enzyme's API returns in the target's own way"
                    if proto is not None and proto.returns.by_value else "is not a function declared in this file")
            raise _at_call(Unsupported(call.caller, call.inst, f"'{shown(c_name)}' {what}"), unit.probe)
        names[request] = f"__adgen_enzyme_{k}"
        sigs += signatures(_derivation(request, names[request], proto, _span(unit.probe, call)))
    stubs = render(prototypes, sigs, work, __version__).stubs
    path = work / output_names(unit.source)[1]
    path.write_text(stubs)
    return Generated(prototypes.source, prototypes, sigs, {path: stubs}), names


def _ir_name(request: Request) -> str:
    """The name of the function a request differentiates, as the source's C or C++ compiler
    names it (linking may rename a static function `f` to `f.1`)."""
    return bare(request.function)


def _derivation(request: Request, name: str, proto: Prototype, span: Span | None) -> Derivation:
    entry = Entry(Word(name, span), None, None, (), None, span)
    return Derivation(name, proto, request.mode, request.width, request.activities, request.returns, entry)


def _differentiate(unit: EnzymeRequests, generated: Generated, kept: dict[str, str], names: dict[Request, str],
                   prepared: Prepared) -> tuple[str, list, dict[str, int]]:
    """Level by level; between levels, the calls of the levels done become adapter calls, so
    that the next level differentiates code that calls the derivatives (`dd_f` of `d_f`).
    Gives the text, the cache plans, and the split entries' tape sizes."""
    by_name = {v: k for k, v in names.items()}
    what = {s.name: _what(unit, by_name[s.derivation.name]) for s in generated.signatures}
    module, text, plans, tapes = prepared.module, "", [], {}
    for level in range(1, max(unit.requests.values()) + 1):
        if level > 1:
            module = Module(text)
            done = [c for c in _calls(module, unit.declared)
                    if c.request in unit.requests and unit.requests[c.request] < level]
            module = prepared.again(_rewritten(module, done, _kernels(generated, names, text), tapes), level)
        entries = [(s, kept) for s in generated.signatures if unit.requests[by_name[s.derivation.name]] == level]
        text, level_plans, level_tapes = differentiate(module, entries, level, needed_by=lambda s: what[s.name])
        text = iterated(text, set(module.functions))
        text = _exported(text, _kernels(generated, names, text))  # kept through the next levels' optimization
        plans += level_plans
        tapes |= level_tapes
    return text, plans, tapes


def _rewritten(module: Module, calls: list[Call], kernels: dict, tapes: dict[str, int]) -> str:
    try:
        return rewrite(module, calls, kernels, tapes)
    except Unsupported as exc:
        raise _at_call(exc, module)


def _calls(module: Module, declared: dict[str, Declared]) -> list[Call]:
    try:
        return find_calls(module, declared)
    except Unsupported as exc:
        raise _at_call(exc, module)


def _what(unit: EnzymeRequests, request: Request) -> str:
    """An Enzyme call, for errors: `the __enzyme_autodiff call at f.c:12`."""
    call = next(c for c in unit.calls if c.request == request)
    where = unit.probe.location(call.inst.dbg)
    at = f" at {Path(where.file).name}:{where.line}" if where else ""
    return f"the {source_name(call.inst.callee).split('(')[0]} call{at}"  # (a C++ declaration's, demangled)


def _kernels(generated: Generated, names: dict[Request, str], text: str) -> dict:
    """The kernel each (request, part) calls, with its IR parameter types (those made so far)."""
    by_name = {v: k for k, v in names.items()}
    kernels = {}
    for s in generated.signatures:
        name = kernel_name(s)
        if define_line(text, name) is not None:  # else of a later level
            kernels[(by_name[s.derivation.name], s.part)] = Kernel(s, name, kernel_types(text, name))
    return kernels


def _exported(text: str, kernels: dict) -> str:
    """The kernels made visible to the file's own code, which calls them through adapters."""
    for k in {k.name for k in kernels.values()}:
        text = make_external(text, k)
    return text


def _shared_globals(text: str, user) -> str:
    """The derivative code's copies of the file's variables become declarations, so that the
    derivatives read and write the program's own (a counter a derivative written by hand
    increments, a buffer an allocator hands out)."""
    defined = {g.name for g in user.global_variables if not g.is_declaration and not g.name.startswith("llvm.")}
    return without_constructors(declare_globals(text, defined))  # (the program's own initializers: run once)


def _compile(source: Path, user_flags: list[str], compiler: Compiler, work: Path) -> tuple[bytes, str]:
    """The file compiled as the user's flags say, to LLVM bitcode, and clang's warnings (run in a
    thread of its own: nothing of LLVM's here, whose context is not shared between threads)."""
    out = work / "user.bc"
    driver = cxx_command(compiler) if is_cxx(source) else compiler.command
    command = zig_spelling([*driver, *user_flags, "-c", "-emit-llvm", str(source), "-o", str(out)])
    done = subprocess.run(command, capture_output=True, text=True, errors="replace")  # it may quote bytes not UTF-8
    if done.returncode != 0:
        raise AdgenError(error(f"{compiler.description} could not compile {source}:\n{done.stderr.rstrip()}"))
    return out.read_bytes(), done.stderr


def _parsed(bitcode: bytes, warnings: str):
    sys.stderr.write(warnings)  # its warnings, as a C compiler prints them
    return optimize.parse_bitcode(bitcode)


def _machine_of(user, user_flags: list[str]) -> Machine:
    """What the file's object is for: its triple and the CPU clang chose for it (zig's clang
    chooses this machine's unless -march or -mcpu says otherwise), in the sections the user's
    flags ask for."""
    text = str(user)
    chosen = optimize.machine(user.triple or None, None, string_attribute(text, "target-cpu") or "",
                              string_attribute(text, "target-features") or "")
    return replace(chosen, sections=sections(user_flags))


def _link(user, derivatives, kernels: dict, tapes: dict[str, int], tm, user_flags: list[str],
          declared: dict[str, Declared], assembly: bool = False, emit_llvm: bool = False, cc1: Cc1 | None = None,
          optimizer: Cc1 | None = None) -> bytes:
    """The file's own module, its calls rewritten, with the derivatives linked in; its object by
    `cc1`'s code generator where one is given (for sections: Machine.sections), optimized again by
    `optimizer`'s clang where one is given."""
    module = Module(hinted(str(user)))
    calls = _calls(module, declared)
    final = optimize.parse(_rewritten(module, calls, kernels, tapes))
    if derivatives is not None:
        private = [g for g in final.global_variables if g.linkage == llvm.Linkage.internal]
        for g in private:  # for a moment, so that the derivatives' declarations of them bind to them
            g.linkage = llvm.Linkage.external
        local = _local_targets(final, derivatives)
        for name, f in local.items():  # (and their dispatchers' names of the file's own local functions)
            f.name, f.linkage = USERS_COPY + name, llvm.Linkage.external
        final.link_in(derivatives)
        for g in private:
            g.linkage = llvm.Linkage.internal
        for name, f in local.items():
            f.name, f.linkage = name, llvm.Linkage.internal
    for fn in final.functions:
        if fn.name in {k.name.lstrip("@") for k in kernels.values()}:
            fn.linkage = llvm.Linkage.internal
    level = _opt_level(user_flags)
    if level:
        final = optimize.reoptimize(final, tm, level, optimizer)
    if not re.search(r"apple|darwin|windows", tm.triple):  # (ELF: constructors lld runs, ir/init_array.py)
        text = str(final)
        if "@llvm.global_ctors" in text or "@llvm.global_dtors" in text:
            final = optimize.parse(init_arrays(text))
    if emit_llvm:
        final.triple = tm.triple
        return str(final).encode() if assembly else final.as_bitcode()
    if assembly:
        final.triple = tm.triple
        return tm.emit_assembly(final).encode()
    return optimize.emit_object(final, tm, cc1=cc1)


def _local_targets(user, derivatives) -> dict:
    """The file's local functions that the derivatives' dispatchers compare a function pointer
    with (ir_ad/dispatch.py: a lambda made a function pointer in the file), by name."""
    wanted = {f.name[len(USERS_COPY):] for f in derivatives.functions
              if f.is_declaration and f.name.startswith(USERS_COPY)}
    return {f.name: f for f in user.functions if f.name in wanted and f.linkage == llvm.Linkage.internal}


def _opt_level(flags: list[str]) -> int:
    level = 0
    for f in flags:
        m = re.fullmatch(r"-O([0-3sz]?|fast)", f)
        if m:
            level = {"": 2, "s": 2, "z": 2, "fast": 3}.get(m.group(1), None) or int(m.group(1) or 2)
    return level


def _text(bitcode: bytes) -> str:
    return str(optimize.parse_bitcode(bitcode))


def _empty(source: Path) -> Generated:
    return Generated(SourceFile(source), None, [], {})


def _span(module: Module, call: Call) -> Span | None:
    where = module.location(call.inst.dbg)
    if where is None:
        return None
    try:
        sf = SourceFile(where.file)
    except OSError:
        return None
    return Span(sf, sf.offset(where.line, where.column))


def _at_call(exc: Unsupported, module: Module) -> AdgenError:
    """An error about a call to Enzyme's API, at the call (or the argument it is about)."""
    return AdgenError(at_instruction(module, exc.function, exc.inst, exc.what))
