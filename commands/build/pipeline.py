"""`adgen build`, top to bottom: parse → check → render (the frontend) → lower → link and
optimize → analyze (calls through function pointers made direct) → differentiate → optimize
again → emit, one object per source. A large build does what follows linking in batches of its
derived functions, each from a module of only what they reach, and joins each source's
objects (batches.py)."""

from __future__ import annotations

import gc
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from adgen.frontend.abi import Signature
from adgen.base.diagnostics import AdgenError, Collector
from adgen.frontend.generate import Generated, generate
from adgen.frontend.model import Activity, Mode
from adgen.commands.outputs import depfile_rule, write_all
from adgen.base.timing import Stages, plural
from adgen.frontend.rust_source import is_rust
from adgen.frontend.languages import is_cxx
from adgen.base.mpi_wrapper import includes_mpi
from adgen.base.naming import BY_ADDRESS_PREFIX
from adgen.base.toolchain import Compiler, cores, openmp_lacks_dispatch_deinit, select_rustc

from adgen.ir_ad import mpi, optimize
from adgen.ir_ad.cc1 import Cc1, sections
from adgen.ir_ad.ir.builder import Declarations
from adgen.ir_ad.diagnose import IrreducibleLoop, Unsupported, located, source_name
from adgen.ir_ad.dispatch import devirtualize
from adgen.ir_ad.reverse.plan.explain import explain as explain_plans
from adgen.ir_ad.forward.mode import ZEROS, ForwardMode
from adgen.ir_ad.ir import Module, count_instructions
from adgen.ir_ad.ir import identical
from adgen.ir_ad.ir.edit import rename_locals, without_tail_calls
from adgen.ir_ad.ir.parallel import fork_again, with_empty_dispatch_deinit
from adgen.commands.build import batches
from adgen.commands.build.kernels import check_primal, forward_kernel, kernel_name, reverse_kernel, split_kernel, tape_size
from adgen.commands.build.levels import entry_levels, primal_ir_name
from adgen.commands.build.lower import (LIBC_FUNCTIONS, custom_array, inactive_array, keep_array, lower_libc, lower_mpi, lower_rust, lower_source,
                    lower_stubs, primal_functions)
from adgen.ir_ad.reverse.mode import ReverseMode
from adgen.ir_ad.custom import HandDerivatives, ReverseByHand
from adgen.ir_ad.rules import hand_rule, written_by_hand


def build(sources: list[Path], out_dir: Path, read_flags: list[str], flags: list[str], extra: list[str],
          compiler: Compiler, stages: Stages, target: str | None = None, march: str | None = None,
          emit_llvm: bool = False, jobs: int | None = None, depfile: Path | None = None, crate=None,
          explain: bool = True) -> tuple[list[tuple[list[Path], list[str]]], list[Generated], str]:
    """`read_flags` are what libclang reads the sources with; `flags` (-I, -D) and `extra` (after
    --) what clang lowers them with; `jobs`, how many clang processes may optimize and compile
    derivative code at once (optimize.compile_text; default: one per core this process may
    run on); `depfile`, where to write a Makefile rule of the objects' dependencies (with the
    other outputs, all or none); `crate`, a cargo package's lowering of all the sources at once
    (crate.py: its library compiled by cargo) instead of each source's own. Returns what was
    written (paths and derived functions per source), the frontend's results, and the cache plans
    of the reverse-mode derivatives as text (`--explain`)."""
    generated = generate(sources, out_dir, read_flags + extra, stages, crate.package.crate if crate else "",
                         crate.closure_calls if crate else None)
    jobs = jobs or cores()
    chosen = replace(optimize.machine(target, march), sections=sections(flags + extra))
    tm, cc1 = optimize.create(chosen), Cc1.bundled(compiler, chosen)
    if cc1 is None and chosen.sections:  # (llvmlite's target machines cannot give each function a section)
        cc1 = Cc1.emitter(chosen)
    target_flags = ["-target", target] if target else []
    if march:
        target_flags.append(f"-march={march}")
    with tempfile.TemporaryDirectory(prefix="adgen-") as tmp:
        linked = lower(sources, generated, compiler, flags + target_flags, extra, Path(tmp), stages, tm, crate)
    primals = [_primals(linked, i, g) for i, g in enumerate(generated)]
    # OpenMP's parallel regions: serialized for the analyses, forked again by the derivatives (specs/openmp.md)
    linked = optimize.without_unwinding(linked, sources, shared_variables=True)  # C++: no exceptions, no aliases
    linked, outlined = optimize.serialize_parallel(linked)
    plan = _batches(linked, sources, generated, primals, emit_llvm, cc1, outlined, stages)
    if plan is None:  # one module, as small builds are
        objects, explained = _whole(linked, sources, generated, primals, outlined, out_dir, tm, cc1, jobs, emit_llvm,
                                    stages, explain)
    else:  # in batches, each released before the next (batches.py), of the module's bitcode
        bitcode = linked.as_bitcode()
        del linked
        objects, explained = _in_batches(plan, bitcode, sources, generated, primals, out_dir, tm, cc1, jobs, stages,
                                         explain)
    written = [([*g.files, *(p for p in objects if p.name.startswith(src.stem + ".adgen."))],
                [getattr(g.unit, "rust_name", str)(s.name) for s in g.signatures]) for src, g in zip(sources, generated)]
    files = {path: text for g in generated for path, text in g.files.items()} | objects
    if depfile is not None:
        files[depfile] = depfile_rule([p for p in objects if p.suffix == ".o"], generated)
    with stages.stage("write"):  # only now, all or none: nothing is written when any stage fails
        write_all(files)
    return written, generated, "".join(explained)


def _whole(linked, sources: list[Path], generated: list[Generated], primals: list[dict[str, str]], outlined: set[str],
           out_dir: Path, tm, cc1: Cc1 | None, jobs: int, emit_llvm: bool, stages: Stages, explain: bool = True
           ) -> tuple[dict[Path, bytes | str], list[str]]:
    """The derivatives of one module, an object for each source (with --emit-llvm, the module
    too), and the cache plans explained."""
    text, explained, shared = _derivatives(linked, generated, primals, tm, cc1, stages, explain=explain)
    objects = {}
    before = count_instructions(text)
    for src, g in zip(sources, generated):
        stem, exported = src.stem, {s.linker_name for s in g.signatures}
        if emit_llvm:  # the optimized module kept, to write
            with stages.stage("optimize", f"{stem}: after differentiation; {before} instructions before") as note:
                final = optimize.finish(optimize.parse(without_tail_calls(fork_again(text, outlined))), exported,
                                        tm, shared, timings=note.parts, cc1=cc1)
                note.text += f", {optimize.instruction_count(final)} after"
            with stages.stage("emit", f"{stem}.adgen.o") as note:
                objects[out_dir / f"{stem}.adgen.o"] = optimize.emit_object(final, tm, timings=note.parts, cc1=cc1)
                objects[out_dir / f"{stem}.adgen.ll"] = str(final)
        else:
            with stages.stage("compile", f"{stem}.adgen.o from {before} instructions") as note:
                objects[out_dir / f"{stem}.adgen.o"], how = optimize.compile_text(
                    without_tail_calls(fork_again(text, outlined)), exported, tm, shared, jobs, timings=note.parts,
                    cc1=cc1)
                note.text += f", {how}"
    return objects, explained


def _batches(linked, sources: list[Path], generated: list[Generated], primals: list[dict[str, str]], emit_llvm: bool,
             cc1: Cc1 | None, outlined: set[str], stages: Stages) -> batches.Plan | None:
    """How to build in batches (batches.py), where the build is large and allows it, the linked
    module's keep arrays made the batches' (optimize.regroup_keep_arrays); else None."""
    if not batches.batchable(sources, generated, emit_llvm, cc1 is not None and cc1.joins, outlined):
        return None
    text = str(linked)
    if not batches.large(text):
        return None
    with stages.stage("batches") as note:
        arrays = [keep_array(i) for i in range(len(generated))]
        plan = batches.plan(text, generated, primals, arrays)
        del text
        if isinstance(plan, str):
            note.text = f"one: {plan}"
            return None
        optimize.regroup_keep_arrays(linked, set(arrays), {a: b.primals for a, b in zip(plan.arrays, plan.batches)})
        note.text = f"{plural(sum(len(g.signatures) for g in generated), 'derivative function')} in {plan.describe()}"
    return plan


def _in_batches(plan: batches.Plan, bitcode: bytes, sources: list[Path], generated: list[Generated],
                primals: list[dict[str, str]], out_dir: Path, tm, cc1: Cc1, jobs: int, stages: Stages,
                explain: bool = True) -> tuple[dict[Path, bytes], list[str]]:
    """The derivatives batch by batch, of the linked module's `bitcode` (optimize.batch_modules
    makes each batch's module), each batch's objects made and all else it made released before
    the next; then each source's objects joined into one. Every batch's errors are reported
    together, as a build of one module reports every derivative's."""
    pieces: list[list[bytes]] = [[] for _ in sources]
    explained: list[str] = []
    problems = Collector()
    made = optimize.batch_modules(bitcode, [b.reached for b in plan.batches], plan.arrays, tm)
    del bitcode
    for k in range(len(plan.batches)):
        with stages.stage("split", f"batch {k + 1} of {len(plan.batches)}: its module") as note:
            code = next(made)
            note.text += f", {len(code) >> 10:,} KB of bitcode"
        try:
            with optimize.apart():  # (LLVM's constants and metadata of the batch freed with its modules)
                objects, plans = _batch(code, k, plan, sources, generated, primals, tm, cc1, jobs, stages,
                                        compiling=not problems.diagnostics, explain=explain)
        except AdgenError as exc:
            problems.diagnostics += exc.diagnostics
            continue
        finally:
            gc.collect()  # (what the batch made, its Python objects' cycles too, and with them its LLVM context)
        explained += plans
        for i, obj in objects.items():
            pieces[i].append(obj)
    problems.raise_if_any()
    objects = {}
    for src, parts in zip(sources, pieces):
        if len(parts) == 1:
            objects[out_dir / f"{src.stem}.adgen.o"] = parts[0]
            continue
        with stages.stage("join", f"{src.stem}.adgen.o from {len(parts)} batches' objects"):
            objects[out_dir / f"{src.stem}.adgen.o"] = cc1.join(parts)
    return objects, explained


def _batch(code: bytes, k: int, plan: batches.Plan, sources: list[Path], generated: list[Generated],
           primals: list[dict[str, str]], tm, cc1: Cc1, jobs: int, stages: Stages, compiling: bool = True,
           explain: bool = True) -> tuple[dict[int, bytes], list[str]]:
    """Batch k's derivatives, of its module's bitcode `code`: an object for each source with
    derived functions in it (and, from the first batch, for a source with none in any), by
    source index (none unless `compiling`); and its cache plans explained."""
    batch, label = plan.batches[k], f"batch {k + 1} of {len(plan.batches)}"
    text, explained, shared = _derivatives(optimize.parse_bitcode(code), generated, primals, tm, cc1, stages,
                                           batch.entries, label, explain)
    objects = {}
    before = count_instructions(text)
    for i, src in enumerate(sources if compiling else []):
        exported = {s.linker_name for j, s in batch.entries if j == i}
        if not exported and (k > 0 or any(j == i for b in plan.batches for j, _ in b.entries)):
            continue
        with stages.stage("compile", f"{src.stem}.adgen.o, {label}, from {before} instructions") as note:
            # (no OpenMP region to fork again: batches.batchable)
            objects[i], how = optimize.compile_text(without_tail_calls(text), exported, tm, shared, jobs,
                                                    timings=note.parts, cc1=cc1)
            note.text += f", {how}"
    return objects, explained


def _derivatives(linked, generated: list[Generated], primals: list[dict[str, str]], tm, cc1: Cc1 | None,
                 stages: Stages, entries: list[tuple[int, Signature]] | None = None, label: str = "",
                 explain: bool = True) -> tuple[str, list[str], set[str]]:
    """The module optimized, analyzed and differentiated (`entries`: the derived functions to
    make, by source index; all by default; `label` says which batch, for -v): the text with the
    derivatives, their cache plans explained, and the functions shared with the user's object
    (dispatch.py); the plans explained only where `explain` asks (their text takes a while)."""
    prepared = Prepared(linked, generated, tm, stages, cc1=cc1, label=label)
    del linked  # (a batch's module, which nothing else holds, freed before differentiating)
    made = [(s, primals[i]) for i, s in entries] if entries is not None else \
        [(s, names) for g, names in zip(generated, primals) for s in g.signatures]
    with stages.stage("differentiate", plural(len(made), "derivative function") + (f", {label}" if label else "")) \
            as note, written_by_hand(prepared.by_hand):
        prepared.timings = note.parts
        text, explained = prepared.levels(lambda: _levels(prepared, made, explain))
        text = optimize.scalar_where_straight(text, {s.linker_name for s, _ in made if s.derivation.width == 1
                                                     and s.derivation.mode.family is Mode.REVERSE})
    if openmp_lacks_dispatch_deinit():  # (the object links with this machine's runtime, older than the code
        text = with_empty_dispatch_deinit(text)  # the bundled clang writes)
    return text, explained, prepared.shared


def _levels(prepared: "Prepared", entries: list[tuple[Signature, dict[str, str]]], explain: bool = True
            ) -> tuple[str, list[str]]:
    """The derivatives, level by level, each from the optimized code of the one before: an
    entry is made at the level after those of the derived functions its primal reaches
    (levels.py), so that a derivative differentiates their code (`of INNER`, or a derived
    function called in a differentiated function); the text, and the cache plans explained."""
    explained, text, module = [], "", prepared.module
    levels, again = entry_levels(module, entries, prepared.calls)
    last = max(levels.values(), default=1)
    for level in range(1, last + 1):
        if level > 1:  # of the optimized code of the levels before
            module = prepared.again(text, level)
        made = [(s, names) for s, names in entries if levels[s.derivation.name] == level]
        text, plans, _ = differentiate(module, made, level, kept=level < last, again=again)
        explained += [explain_plans(module, plans)] if plans and explain else []
    return text, explained


def lower(sources: list[Path], generated: list[Generated], compiler: Compiler, flags: list[str], extra: list[str],
          work: Path, stages: Stages, tm=None, crate=None):
    """Each source (through its lowering wrapper; or, given a cargo package's `crate`, all at
    once) and stub file lowered and linked into one module, with adgen's C definitions of the
    library functions they call; given LLVM's target machine `tm`, the functions that neither the
    derived functions nor the sources' arrays of kept functions reach made internal, for the
    optimizer to drop."""
    with stages.stage("lower", plural(len(sources), "source")), \
            ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as compilers:  # each compile a process of its own
        if crate is not None:
            lowered = [compilers.submit(crate, sources, generated, work)]
        else:
            lowered = [compilers.submit(_lower_source, compiler, src, g, i, flags, extra, work, generated)
                       for i, (src, g) in enumerate(zip(sources, generated))]
        stubs = [compilers.submit(lower_stubs, compiler, g, i, flags, extra, work) for i, g in enumerate(generated)]
        # MPI's rules, compiled meanwhile where a source includes mpi.h and names a call that has rules (the link
        # below takes them if it needs them, compiling them then where no source named one: a header's inline code)
        rules_code = compilers.submit(lower_mpi, compiler, flags, extra, work) \
            if crate is None and any(includes_mpi(g.source.text) and any(name in g.source.text for name in mpi.RULES)
                                     for g in generated) else None
        bitcode, problems = [], Collector()
        for done in lowered:
            try:
                bitcode += done.result() if crate is not None else [done.result()]
            except AdgenError as exc:  # every source's errors, reported together
                problems.diagnostics += exc.diagnostics
        problems.raise_if_any()
        own = [(done.result(), {s.linker_name for s in g.signatures}) for done, g in zip(stubs, generated)]
    with stages.stage("link"):
        linked = optimize.link(bitcode, own)
        if optimize.declared(linked) & LIBC_FUNCTIONS:  # their code, to differentiate
            optimize.link_into(linked, lower_libc(compiler, flags, extra, work))
        called = optimize.declared(linked)
        modes = {m for g in generated for s in g.signatures for m in s.derivation.modes}
        rules = mpi.needed_rules(called, Mode.FORWARD in modes, Mode.REVERSE in modes)
        if rules or called & set(mpi.COMMUNICATIONS):  # the derivatives of MPI's calls, which derived code
            # calls (those of the calls made), and its datatypes as the IR spells them (mpi.handles)
            optimize.link_into(linked, rules_code.result() if rules_code is not None else
                               lower_mpi(compiler, flags, extra, work))
            optimize.only(linked, mpi.RULE_PREFIX, rules)
            optimize.settled(linked, (mpi.RULE_PREFIX, mpi.HELPER_PREFIX))
        if tm is not None:
            arrays = (keep_array, inactive_array, custom_array)  # (globals in C, functions in Rust)
            optimize.drop_unneeded(linked, {s.linker_name for g in generated for s in g.signatures} |
                                   {array(i) for i in range(len(generated)) for array in arrays} | rules, tm)
    return linked


def _lower_source(compiler: Compiler, src: Path, g: Generated, i: int, flags: list[str], extra: list[str], work: Path,
                  generated: list[Generated]) -> bytes:
    if is_rust(src):
        return lower_rust(select_rustc(), src, g, i, work)
    return lower_source(compiler, src, g, i, flags, extra, work, generated)


class Prepared:
    """The linked module optimized for differentiation, calls through pointers made direct;
    what its @inactive and @derivative annotations say; `again` for a later level."""

    def __init__(self, linked, generated: list[Generated], tm, stages: Stages, inactive: set[str] = frozenset(),
                 rules: dict | None = None, custom: dict | None = None, allocators: dict | None = None,
                 cc1: Cc1 | None = None, label: str = ""):
        """`inactive`, `rules` (by IR name), `custom` (custom.py) and `allocators` are what
        Enzyme's API registered, for `adgen cc`; with `cc1`, clang optimizes (ir_ad/cc1.py);
        `label`, which batch of a build (batches.py) the module is, for -v."""
        self.tm, self.cc1 = tm, cc1
        self.inactive = {n for i in range(len(generated)) for n in optimize.kept(linked, inactive_array(i))} | inactive
        self.by_hand = _rules_by_hand(linked, generated) | (rules or {})
        self.custom = _communications(linked) | _reverse_by_hand(linked, generated) | (custom or {})
        self.mpi_handles = _mpi_handles(linked)
        self.threading = True  # jump threading when preparing derivative code again (see `levels`)
        self.timings: list | None = None  # (what, seconds) of `again`'s work, for -v
        self.allocators = {name.lstrip("@"): index for name, index in (allocators or {}).items()}
        with stages.stage("optimize", "before differentiation" + (f", {label}" if label else "")) as note:
            text = optimize.with_captures_by_value(optimize.prepare(linked, tm, self.calls, timings=note.parts,
                                                                    cc1=cc1), tm, self.calls, note.parts, cc1)
        with stages.stage("analyze") as note:
            text, self.shared = devirtualize(text, {s.linker_name for g in generated for s in g.signatures})
            self.module = self._module(text)
            note.text = f"{plural(self.module.instruction_count(), 'instruction')} in the optimized sources" + \
                (f", {label}" if label else "")

    @property
    def calls(self) -> set[str]:
        """Functions whose calls stay calls: @inactive, or with derivatives written by hand."""
        return self.inactive | set(self.allocators) | {name.lstrip("@") for name in [*self.by_hand, *self.custom]}

    def levels(self, run):
        """`run()`, which makes the derivatives level by level; again with jump threading off
        when preparing derivative code (see `again`) if it met a loop with more than one way
        in, which jump threading can make of a reverse sweep and reverse mode cannot reverse."""
        try:
            return run()
        except IrreducibleLoop:
            if not self.threading:
                raise
            self.threading = False
            return run()

    def again(self, text: str, level: int) -> Module:
        """A module's text (with the derivatives of an earlier level), optimized again, the
        local names an earlier level made (all have a `'`) marked with the level, so that the
        names the next one makes from labels and values cannot meet them."""
        with self._part(f"optimizing for level {level}"):
            text = optimize.prepare(optimize.parse(text), self.tm, self.calls, derivatives=not self.threading,
                                    cc1=self.cc1)
            text = rename_locals(text, lambda name: f"{level}~{name}" if "'" in name else None)
        with self._part(f"reading level {level}'s module"):
            return self._module(text)

    @contextmanager
    def _part(self, what: str):
        start = time.perf_counter()
        yield
        if self.timings is not None:
            self.timings.append((what, time.perf_counter() - start))

    def _module(self, text: str) -> Module:
        module = Module(text)
        module.inactive = {"@" + name for name in self.inactive}
        module.custom = self.custom
        module.mpi_handles = self.mpi_handles
        module.allocators = self.allocators
        return module


def differentiate(module: Module, entries: list[tuple[Signature, dict[str, str]]], level: int = 1,
                  needed_by=lambda sig: sig.name, kept: bool = False, again: set[str] = frozenset()
                  ) -> tuple[str, list, dict[str, int]]:
    """The module's text with the derivative functions and the kernels the stubs call, the
    cache plans of the reverse-mode ones (titled), and the tape bytes of split-mode entries,
    by derived name. `entries`: the signatures to make (of one level: 1 for derivatives of
    C functions, 2 for those of level 1's derived functions...), each with the IR names of the
    functions its source keeps for differentiation, by C name. `needed_by(sig)` names what
    an error is for. `kept`: the sources' keep arrays stay, for a later level to differentiate
    the functions they keep. `again`: the derivations a later level differentiates, made
    without the undo log (the later level would have to differentiate it); the others keep it (a
    store's old value logged only where the reverse sweep reads the memory again, rather than
    stored each time), their callees' derivatives made apart (RevPattern.logged)."""
    numbers = [int(k[1:]) for k in module.metadata if k[1:].isdigit()]
    decls = Declarations(set(module.functions), max(numbers, default=0) + 1, f"{level}." if level > 1 else "")
    signatures = [s for s, _ in entries]
    forward = ForwardMode(module, decls, level)
    reverse = ReverseMode(module, decls, level, releases=any(s.derivation.mode is Mode.SPLIT for s in signatures))
    kernels: list[str] = []
    top: dict[str, list[str]] = {}  # a derived function -> the annotations that call it
    primal_of: dict[str, str] = {}
    tapes: dict[str, int] = {}
    problems, failed = [], set()  # every entry's error, each derivation's once
    for sig, names in entries:
        d = sig.derivation
        reverse.log = d.name not in again  # (its patterns say so: RevPattern.logged)
        fn = check_primal(module, sig, primal_ir_name(sig, names))
        if d.name in failed:
            continue
        try:
            if d.mode is Mode.FORWARD:
                kernels.append(forward_kernel(forward, decls, sig, fn))
                continue
            if d.mode is Mode.SPLIT:
                kernel, derived = split_kernel(reverse, decls, sig, fn)
                tapes[d.name] = tape_size(fn, derived)
            else:
                kernel, derived = reverse_kernel(reverse, decls, sig, fn)
            kernels.append(kernel)
            top.setdefault(derived.aug, []).append(needed_by(sig))
            primal_of[derived.aug] = d.primal.name
        except Unsupported as exc:
            failed.add(d.name)
            problems.append(located(exc, module, needed_by(sig), fn.name, d.entry.name.span))
    if problems:
        irreducible = any(isinstance(p, IrreducibleLoop) for p in problems)
        raise (IrreducibleLoop if irreducible else AdgenError)([x for p in problems for x in p.diagnostics])
    runtime = [reverse.runtime_text()] if reverse.definitions or forward.uses_runtime else []
    if forward.uses_zeros:
        runtime.append(ZEROS)
    replaced = {kernel_name(s) for s in signatures}
    lines = [line for line in module.text.split("\n") if not _dropped(line, replaced, kept)]
    added, derived, tail = ("\n".join(t) for t in (decls.added, forward.definitions + reverse.definitions,
                                                    runtime + kernels + decls.scopes.definitions()))
    if level > 1:  # its own runtime: the optimizer may have changed an earlier level's (dropped a parameter)
        added, derived, tail = (t.replace('@"adgen.', f'@"adgen{level}.') for t in (added, derived, tail))
    # the derived functions that came out the same kept once (not the kernels: found by their names)
    derived, (source, added, tail), _ = identical.merged(derived, ["\n".join(lines), added, tail])
    text = "\n".join([source, added, derived, tail]) + "\n"
    plans = [(f"{', '.join(dict.fromkeys(top[d.aug]))}: reverse mode of {primal_of[d.aug]}", plan)
             for d, plan in reverse.explained if d.aug in top]
    steps = {ck.outlined.step.name: ck for ck in module.checkpointed.values()}
    plans += [(f"{source_name(d.pattern.function)}, one iteration of its loop at {steps[d.pattern.function].where}"
               if d.pattern.function in steps else
               f"{source_name(d.pattern.function)}, as a callee of the derivatives above ({_activities(d.pattern)})"
               + (", each thread's, on an OpenMP team" if d.pattern.team else ""),
               plan) for d, plan in reverse.explained if d.aug not in top]
    loops = {id(ck): ck for _, ck in reverse.checkpoints}  # (one loop may get two pairs: see ReverseMode._calls)
    plans += [(source_name(ck.function), ck) for ck in loops.values()]
    return text, plans, tapes


def _by_hand(linked, generated: list[Generated]):
    """Each derivative written by hand (@derivative): the IR names of the function it is of and
    of the glue derivative code calls it through (lowering.c.j2's, rust_wrappers.BY_HAND's), and
    what the source says of it."""
    for i, g in enumerate(generated):
        kept = optimize.kept(linked, custom_array(i)) if g.customs else []
        for k, c in enumerate(g.customs):
            yield kept[k], kept[len(g.customs) + k], c


def _rules_by_hand(linked, generated: list[Generated]) -> dict:
    """The rules of the functions given derivatives by hand (@derivative), by IR name."""
    return {"@" + name: hand_rule("@" + name, "@" + glue, c.active, [p.name for p in c.primal.params],
                                  f"'{c.function.name}'")
            for name, glue, c in _by_hand(linked, generated) if not c.of_arrays}


def _mpi_handles(linked) -> dict[str, str]:
    """MPI's predefined datatypes as the IR spells them (mpi.handles), from the constants of the
    rules' module, which are then made internal (the first global optimization drops them)."""
    return mpi.handles(optimize.taken_globals(linked, mpi.HANDLE_PREFIX))


def _communications(linked) -> dict[str, HandDerivatives]:
    """MPI's calls whose derivatives are linked in (ir_ad/mpi.py), by IR name."""
    defined = {fn.name for fn in linked.functions if not fn.is_declaration}
    return {"@" + name: HandDerivatives("@" + name, communication=mpi.DIFFERENTIATED.get(name, ()))
            for name in mpi.RULES if any(r.lstrip("@") in defined for r in mpi.rule_names(name))}


def _reverse_by_hand(linked, generated: list[Generated]) -> dict[str, HandDerivatives]:
    """The functions given reverse derivatives of arrays by hand (@derivative with dup pointers),
    by IR name: reverse mode calls the C glue calling each (lowering.c.j2)."""
    out = {}
    for name, glue, c in _by_hand(linked, generated):
        if c.of_arrays:
            d = c.derivation
            hand = ReverseByHand("@" + glue, c.function.name, tuple(a.word for a in d.activities),
                                 tuple(p.name for p in c.primal.params), d.returns in (Activity.ACTIVE, Activity.ACTIVEONLY))
            out["@" + name] = HandDerivatives("@" + name, reverse=hand)
    return out


def _activities(pattern) -> str:
    marks = ", ".join("active" if on else "const" for on in pattern.active)
    return f"arguments ({marks})" + (", active result" if pattern.ret_active else "")


def _primals(linked, index: int, g: Generated) -> dict[str, str]:
    """A source's kept functions, by the name the source gives them -> their IR name."""
    names = optimize.kept(linked, keep_array(index))
    if is_rust(g.source.path):  # mangled: in the order the lowering keeps them
        return {f.name: name for f, name in zip(primal_functions(g), names)}
    if is_cxx(g.source.path):  # mangled too (a wrapper's name among them, where it passes structs by value),
        # as are the derived functions with C++ linkage that `of` entries derive
        kept = {(BY_ADDRESS_PREFIX if f.by_value else "") + f.key: name for f, name in zip(primal_functions(g), names)}
        return kept | {s.qualified: s.linker_name for s in g.signatures if s.cxx_linkage}
    return _by_c_name(names)


def _by_c_name(names: list[str]) -> dict[str, str]:
    """C name -> IR name (linking may rename a static function `f` to `f.1`)."""
    return {n.split(".")[0]: n for n in names}


def _dropped(line: str, kernels: set[str], kept: bool = False) -> bool:
    """Lines of the linked module the output must not keep: the stubs' kernel declarations
    (now defined) and, unless `kept`, what kept the annotated functions alive."""
    if line.startswith("declare") and any(f" {k}(" in line for k in kernels):
        return True
    return not kept and line.startswith(("@__adgen_primals_", "@__adgen_inactive_", "@__adgen_custom_",
                                         "@llvm.used", "@llvm.compiler.used"))
