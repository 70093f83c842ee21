"""llvmlite's side of the pipeline: link the lowered modules, optimize before differentiation
(O2 simplification, with vectorization left for after), name every value, and,
after differentiation, internalize, optimize again (O3, vectorization on: what the exported
functions do not reach is dropped) and emit objects, a large module in parts at once
(`compile_text`).

The optimizing and emitting functions take `timings`: a list that, where given, gets (pass,
seconds) of LLVM's pass timers for each pass run (`-v` prints the largest). Given a `Cc1` (the
bundled clang's, cc1.py), the optimizing and emitting run there instead of in llvmlite's LLVM."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import cache
from typing import Iterator

import llvmlite.binding as llvm

from adgen.base.diagnostics import AdgenError, error
from adgen.base.timing import pass_times
from adgen.ir_ad import parts
from adgen.ir_ad.cc1 import Cc1, Machine
from adgen.ir_ad.ir import captures, linkage, parallel, split, unwinding
from adgen.ir_ad.ir.edit import pointers_through_integers, with_function_attribute, without_poison_lanes
from adgen.ir_ad.ir import (branching_back, count_instructions, global_addresses, stored_global_addresses,
                            without_comdats, without_target_attributes)
from adgen.ir_ad.ir.reach import bare, definitions, reached, spelled


@cache
def _init() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.initialize_native_asmparser()  # the program's inline assembly, in objects for this machine


def machine(triple: str | None, march: str | None, cpu: str = "", features: str = "") -> Machine:
    """What objects are emitted for: the host triple by default, generic CPU unless --march
    names one (`native` for this machine's CPU and features), or `cpu` and `features` as a
    clang module's functions name them."""
    _init()
    triple = triple or llvm.get_process_triple()
    try:
        llvm.Target.from_triple(triple)
    except RuntimeError as exc:
        raise AdgenError(error(f"unknown target '{triple}': {exc}"))
    if march == "native":
        cpu = llvm.get_host_cpu_name()
        features = llvm.get_host_cpu_features().flatten()
    elif march:
        cpu = march
    return Machine(triple, cpu, features)


def create(chosen: Machine):
    """llvmlite's target machine for a choice."""
    _init()
    target = llvm.Target.from_triple(chosen.triple)
    return target.create_target_machine(cpu=chosen.cpu, features=chosen.features, opt=3, reloc="pic",
                                        codemodel="default")


def target_machine(triple: str | None, march: str | None, cpu: str = "", features: str = ""):
    """llvmlite's target machine (see `machine`)."""
    return create(machine(triple, march, cpu, features))


def link(bitcodes: list[bytes], stubs: list[tuple[bytes, set[str]]] = ()):
    """The sources' modules (`bitcodes`) linked into one, then the stub files' (`stubs`: each
    with the names of its derived functions), whose other definitions become declarations
    first: what a stub file defines besides comes from the user's headers it includes, which a
    source defines as well (ir/linkage.py)."""
    _init()
    modules = []
    for code in bitcodes:
        try:
            modules.append(llvm.parse_bitcode(code, _context()))
        except RuntimeError as exc:
            raise AdgenError(error(f"llvmlite could not read the bitcode clang wrote: {exc}"))
    for code, own in stubs:
        module = parse_bitcode(code)
        text = str(module)
        bound = linkage.declarations_but(text, own)
        modules.append(module if bound is text else parse(bound))
    main = modules[0]
    for other in modules[1:]:
        try:
            main.link_in(other)
        except RuntimeError as exc:
            raise AdgenError(error(f"linking the sources failed: {exc}"))
    return main


def exported_only(bitcodes: list[bytes], exported: dict[str, str]) -> bytes:
    """The modules linked into one whose definitions are all internal but the functions of
    `exported` (bare names), each renamed as it says and external: another crate's compile
    linked beside the one differentiated, so that nothing of it clashes with the same code there
    (commands/build/closures.py)."""
    with apart():
        module = link(bitcodes)
        for fn in module.functions:
            if fn.is_declaration or fn.name.startswith("llvm."):
                continue
            if fn.name in exported:
                fn.name, fn.linkage = exported[fn.name], llvm.Linkage.external
            else:
                fn.linkage = llvm.Linkage.internal
            fn.visibility = llvm.Visibility.default
        for g in module.global_variables:
            if not g.is_declaration and not g.name.startswith("llvm.") and \
                    g.linkage != llvm.Linkage.appending:
                g.linkage, g.visibility = llvm.Linkage.internal, llvm.Visibility.default
        return module.as_bitcode()


def parse_bitcode(code: bytes):
    _init()
    try:
        return llvm.parse_bitcode(code, _context())
    except RuntimeError as exc:
        raise AdgenError(error(f"llvmlite could not read the bitcode clang wrote: {exc}"))


def declared(module) -> set[str]:
    """The functions the module calls without defining them."""
    return {fn.name for fn in module.functions if fn.is_declaration}


def text_of_bitcode(code: bytes) -> str:
    """A module's text from its bitcode."""
    _init()
    return str(llvm.parse_bitcode(code, _context()))


def bitcode_of(text: str) -> bytes:
    """A module's bitcode from its text."""
    return parse(text).as_bitcode()


def link_into(module, code: bytes) -> None:
    module.link_in(llvm.parse_bitcode(code, _context()))


def _run(module, tm, level: int, vectorize: bool, timings: list | None = None) -> None:
    options = llvm.create_pipeline_tuning_options(level)
    options.loop_vectorization = vectorize
    options.slp_vectorization = vectorize
    options.loop_unrolling = True  # full unrolling only (_partial_unrolling)
    builder = llvm.create_pass_builder(tm, options)
    if timings is None:
        builder.getModulePassManager().run(module, builder)
        return
    builder.start_pass_timing()
    start = time.perf_counter()
    builder.getModulePassManager().run(module, builder)
    timings += pass_times(builder.finish_pass_timing(), time.perf_counter() - start)


def kept(module, array: str) -> list[str]:
    """The functions a keep array of the lowered sources points to, in order (names as linked);
    for a Rust source, those the function of that name returns the addresses of."""
    for g in module.global_variables:
        if g.name == array:
            return [n[1:].strip('"') for n in global_addresses(str(g))]
    for fn in module.functions:
        if fn.name == array and not fn.is_declaration:
            return [n[1:].strip('"') for n in stored_global_addresses(str(fn))]
    return []


# LLVM contexts the modules read meanwhile are made in (`apart`), innermost last: none, LLVM's global one.
_CONTEXTS: list = []


def _context():
    return _CONTEXTS[-1] if _CONTEXTS else None


@contextmanager
def apart():
    """The modules read meanwhile (parsed from text or bitcode) made in an LLVM context of
    their own, which is freed with the last of them: the constants, types and metadata they
    make stay in a context until it goes (in LLVM's global one, until the program ends), so a
    build in batches reads each batch's modules apart. (A module that Python objects in a
    reference cycle hold goes with them, at the next `gc.collect()`.)"""
    _init()
    _CONTEXTS.append(llvm.create_context())
    try:
        yield
    finally:
        _CONTEXTS.pop()


def batch_modules(bitcode: bytes, reached: list[set[str]], arrays: list[str], tm) -> Iterator[bytes]:
    """The bitcode of a module for each batch of a build (commands/build/batches.py), in order,
    of the linked module's `bitcode`, whose keep arrays are the batches' (`arrays[k]` batch
    k's: regroup_keep_arrays): what batch k does not reach (`reached[k]`, bare names of the
    functions and globals it keeps) made internal, the other batches' arrays with it, for
    LLVM's dead code elimination to drop. What stays keeps its linkage, as in a build of one
    batch. Made by halves, each half's module read into a context of its own and written to
    bitcode again: the time grows as the module's size times the log of the number of batches,
    and the memory held meanwhile is the bitcode of the halves to come."""
    yield from _halves(bitcode, list(range(len(reached))), reached, arrays, tm)


def _halves(bitcode: bytes, ks: list[int], reached: list[set[str]], arrays: list[str], tm) -> Iterator[bytes]:
    """The modules of batches `ks` (of `bitcode`, which holds what they reach and no more)."""
    if len(ks) == 1:
        yield bitcode
        return
    first, second = ks[:len(ks) // 2], ks[len(ks) // 2:]
    left, right = (_pruned(bitcode, set().union(*(reached[k] for k in group)),
                           {arrays[k] for k in range(len(arrays)) if k not in group}, tm) for group in (first, second))
    del bitcode
    yield from _halves(left, first, reached, arrays, tm)
    del left
    yield from _halves(right, second, reached, arrays, tm)


def _pruned(bitcode: bytes, keep: set[str], arrays: set[str], tm) -> bytes:
    with apart():
        module = parse_bitcode(bitcode)
        _keep_only(module, keep, arrays, tm)
        return module.as_bitcode()


def _keep_only(module, keep: set[str], arrays: set[str], tm) -> None:
    """The module less the functions not in `keep` and the global `arrays` (made internal, then
    dropped by LLVM's dead code elimination with what only they reach), as drop_unneeded."""
    for fn in module.functions:
        if not fn.is_declaration and fn.name not in keep:
            fn.linkage = llvm.Linkage.internal
    for g in module.global_variables:
        if g.name in arrays:
            g.linkage = llvm.Linkage.internal
    pm = llvm.create_new_module_pass_manager()
    pm.add_global_dead_code_eliminate_pass()
    pm.run(module, llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(0)))


def regroup_keep_arrays(module, arrays: set[str], groups: dict[str, list[str]]) -> None:
    """The keep arrays `arrays` (bare names, kept by `@llvm.used` or `@llvm.compiler.used`)
    replaced by one array for each group of functions (by its name; bare names), with external
    linkage and in no `@llvm.used`: making one internal lets LLVM drop it and what only it
    keeps (batch_modules). LLVM's API cannot edit an initializer, nor take a global out of
    `@llvm.used`, and reading the module's text again would take as long as reading it did: so
    the arrays of `@llvm.used` that name the keep arrays are renamed (plain internal arrays
    then, which LLVM drops with the keep arrays), and a small module linked in defines new
    ones, of what else they kept, and the groups' arrays. (Linking resolves names to external
    definitions only: those that are internal are made external meanwhile.) The module is one
    read in the current context (`apart`, else LLVM's global one)."""
    lines, names = [], {}
    for g in list(module.global_variables):
        if g.name in ("llvm.used", "llvm.compiler.used"):
            entries = [bare(a) for a in global_addresses(str(g))]
            if not set(entries) & arrays:
                continue
            rest = [e for e in entries if e not in arrays]
            section = ', section "llvm.metadata"'
            kind = g.name
            g.name, g.linkage = f"__adgen_kept_by_{kind}", llvm.Linkage.internal
            if rest:
                lines.append(f"@{kind} = appending global [{len(rest)} x ptr] "
                             f"[{', '.join('ptr ' + spelled(e) for e in rest)}]{section}")
            names.update(dict.fromkeys(rest))
    for array, group in groups.items():
        addresses = ", ".join("ptr " + spelled(f) for f in group)
        lines.append(f"{spelled(array)} = constant [{len(group)} x ptr] [{addresses}]")
        names.update(dict.fromkeys(group))
    linkages = {}
    variables = {g.name: g for g in module.global_variables}  # (get_global_variable finds no internal one)
    for name in names:
        if name in variables:
            value, declaration = variables[name], f"{spelled(name)} = external global i8"
        else:
            value, declaration = module.get_function(name), f"declare void {spelled(name)}()"
        lines.insert(0, declaration)
        if value.linkage in (llvm.Linkage.internal, llvm.Linkage.private):
            linkages[name] = (value, value.linkage)
            value.linkage = llvm.Linkage.external
    lines[:0] = [f'target datalayout = "{module.data_layout}"', f'target triple = "{module.triple}"']
    module.link_in(llvm.parse_assembly("\n".join(lines) + "\n", _context()))
    for value, kept in linkages.values():
        value.linkage = kept


def only(module, prefix: str, needed: set[str]) -> None:
    """The functions defined under a prefix (a runtime linked in whole) other than those `needed`
    made internal: the first global optimization drops them."""
    for fn in module.functions:
        if fn.name.startswith(prefix) and not fn.is_declaration and fn.name not in needed:
            fn.linkage = llvm.Linkage.internal


def settled(module, prefixes: tuple[str, ...]) -> None:
    """The functions defined under these prefixes (adgen's own C, optimized when compiled: MPI's
    rules), which no derivative differentiates, neither optimized again nor inlined before or after
    differentiation (`optnone`, and with it LLVM's quick code generation): they cost the build a
    fifth of its time where they were optimized with the sources, and again with the derivatives."""
    for fn in module.functions:
        if not fn.is_declaration and fn.name.startswith(prefixes):
            fn.add_function_attribute("noinline")
            fn.add_function_attribute("optnone")


def taken_globals(module, prefix: str) -> dict[str, str]:
    """The text of each global variable defined under a prefix, by name, each then made internal:
    read, not kept (the first global optimization drops them)."""
    taken = {}
    for g in module.global_variables:
        if g.name.startswith(prefix) and not g.is_declaration:
            taken[g.name] = str(g)
            g.linkage = llvm.Linkage.internal
    return taken


def drop_unneeded(module, roots: set[str], tm) -> None:
    """Make internal every function the `roots` (by name; and the globals the module keeps, such
    as the lowering's arrays of annotated functions) cannot reach through calls or addresses, so
    that the first global optimization drops it: a file's other functions are neither optimized
    nor read for differentiation (bench/programs/gpt2.c's hand-written backward pass cost 0.2 s
    of its build). What is reachable keeps its linkage, and with it how LLVM treats it. Found on a
    copy of the module, every other function made internal there, by LLVM's dead code
    elimination."""
    probe = module.clone()
    for fn in probe.functions:
        if not fn.is_declaration and fn.name not in roots:
            fn.linkage = llvm.Linkage.internal
    pm = llvm.create_new_module_pass_manager()
    pm.add_global_dead_code_eliminate_pass()
    pm.run(probe, llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(0)))
    reached = {fn.name for fn in probe.functions if not fn.is_declaration}
    for fn in module.functions:
        if not fn.is_declaration and fn.name not in reached:
            fn.linkage = llvm.Linkage.internal


def without_unwinding(module, sources: list, shared_variables: bool = False):
    """C++ exceptions taken out of the code to differentiate (ir/unwinding.py), `sources` the
    paths of the source files, and aliases resolved to what they alias (ir/linkage.py: C++'s
    complete constructors and destructors are aliases, which neither the differentiation reads
    nor the derivative object may export); with `shared_variables`, the sources' variables
    declared, the program's (ir/linkage.py): the module, a new one where there were any."""
    text = str(module)
    plain = linkage.without_aliases(text)
    if shared_variables:  # (`adgen build`: the program's variables, ir/linkage.py)
        plain = linkage.shared_variables(plain)
    if not unwinding.may_unwind(plain):
        return module if plain is text else parse(plain)
    return parse(unwinding.without_unwinding(plain, {os.path.realpath(p) for p in sources}))


def serialize_parallel(module):
    """OpenMP's parallel regions serialized for differentiation (ir/parallel.py), their outlined
    functions kept out of line and external (their parameters, then, those the runtime passes):
    the module (a new one where it forks) and the outlined functions' IR names."""
    if "__kmpc_fork_call" not in declared(module):
        return module, set()
    text, outlined = parallel.serialize(str(module))
    return parse(text), outlined


JUMP_THREADING = 6  # LLVM's default duplication threshold of jump threading


def prepare(module, tm, calls: set[str] = frozenset(), derivatives: bool = False, timings: list | None = None,
            cc1: Cc1 | None = None, level: int = 2) -> str:
    """Optimize before differentiation (by clang with `cc1`) and name every value; the text the
    AD core reads. Functions in `calls` (marked @inactive, or with derivatives written by hand)
    are not inlined. Loops with a small constant trip count are unrolled, which puts small local
    arrays in registers; others stay loops, and nothing is vectorized yet (_partial_unrolling).
    `derivatives`: jump threading off, for derivative code to differentiate again where it
    turned a reverse sweep into a loop with several ways in (which reverse mode cannot reverse).
    GVN's partial redundancy elimination is off here too: the phis of copies it makes cost the
    reverse sweep a stored value per iteration where the copies cost nothing (it runs after
    differentiation). Nor are loops of stores turned into memset or memcpy calls: a store the
    reverse sweep undoes through its log is one value, a block written by a call is not
    (specs/abi.md, "Stores undone"). Last, every loop gets a block of its own that enters it
    (LLVM's LoopSimplify): CFG simplification leaves a loop that follows another entered from
    the first's last block, and what is checked once before a loop (the undo log's checks,
    reverse/plan/undo.py) needs a block that runs once before it. A function of `calls` that
    LLVM finds returns one of its arguments (`returned`, an identity used as a stop-gradient) has
    InstCombine put the argument in place of its calls, and with it the derivative the call was
    to stop: the module is then optimized again (from a copy) with such functions interposable
    (weak) while the optimizer runs, which LLVM infers nothing from; others keep what LLVM infers
    (that a derivative written by hand for `matmul` reads its input, say)."""
    defined = any(fn.name in calls and not fn.is_declaration for fn in module.functions)
    original = module.clone() if defined else None
    module = _optimized(module, tm, calls, set(), derivatives, timings, cc1, level)
    returning = {fn.name for fn in module.functions if fn.name in calls and not fn.is_declaration
                 and any(b"returned" in a for arg in fn.arguments for a in arg.attributes)}
    if returning:
        module = _optimized(original, tm, calls, returning, derivatives, timings, cc1, level)
    namer = llvm.create_new_module_pass_manager()
    namer.add_loop_simplify_pass()
    namer.add_instruction_namer_pass()
    namer.run(module, llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(0)))
    # without per-function CPU choices (zig's clang picks the build machine's): the target
    # machine (--march) decides for all code alike; vectors' undefined lanes made zeros;
    # pointers merged as integers merged as pointers
    return pointers_through_integers(without_poison_lanes(without_comdats(without_target_attributes(str(module)))))


# C++'s inline functions and template instances (linkonce_odr), and explicit instantiations
# (weak_odr): LLVM infers nothing of a function whose definition another module may replace
# (readonly, nocapture, what memory it writes), though the language makes every definition the
# same. Internal while the sources are optimized for differentiation, so that it does (their
# linkage given back after: ir_ad/dispatch.py tells functions called through pointers by it):
# GradBench's gmm passed `const T*` arrays to a template it called, whose parameters were then
# not read-only, and reverse mode stored what they pointed to once per point where nothing
# writes it.
_ODR = (llvm.Linkage.linkonce_odr, llvm.Linkage.weak_odr)


def _optimized(module, tm, calls: set[str], interposable: set[str], derivatives: bool, timings: list | None,
               cc1: Cc1 | None, level: int):
    """`prepare`'s optimization: functions in `calls` not inlined, those in `interposable` weak
    meanwhile."""
    linkages, odr = {}, {}
    for fn in module.functions:
        if fn.name in calls:  # @inactive, or with a derivative written by hand: calls to it stay calls
            fn.add_function_attribute("noinline")
            if fn.name in interposable:
                linkages[fn.name] = fn.linkage
                fn.linkage = llvm.Linkage.weak_any
        elif not fn.is_declaration and fn.linkage in _ODR:
            odr[fn.name] = fn.linkage
            fn.linkage = llvm.Linkage.internal  # (see _ODR)
    inline_aggregates(module)
    options = [*_partial_unrolling(),
               f"-jump-threading-threshold={0 if derivatives else JUMP_THREADING}", "-disable-loop-idiom-all=true"]
    if cc1 is not None:
        module = llvm.parse_bitcode(cc1.optimize(module.as_bitcode(), options, timings, level=level, vectorize=False),
                                    _context())
    else:
        for option in options:
            llvm.set_option("adgen", option)
        try:
            _run(module, tm, level, vectorize=False, timings=timings)
        finally:
            llvm.set_option("adgen", f"-jump-threading-threshold={JUMP_THREADING}")
            llvm.set_option("adgen", "-enable-pre=true")
            llvm.set_option("adgen", "-disable-loop-idiom-all=false")
    for name, kept in linkages.items():
        module.get_function(name).linkage = kept
    defined = {fn.name for fn in module.functions if not fn.is_declaration}
    for name in odr.keys() & defined:  # (what is left of them: a virtual function the program's
        module.get_function(name).linkage = odr[name]  # vtables name is its own object's, ir_ad/dispatch.py)
    return module


def with_captures_by_value(text: str, tm, calls: set[str] = frozenset(), timings: list | None = None,
                           cc1: Cc1 | None = None) -> str:
    """The prepared text with OpenMP regions' captured variables passed by value
    (ir/captures.py), then optimized again as `prepare` does: the slots left only stored into and
    loaded from made values again (SROA), so that nothing stores an array's address in memory
    (which derivatives with interleaved lanes refuse), and what the regions computed in their
    loops from a slot's value there (a loop's bound, converted from the value loaded in its latch)
    hoisted before the loops, where loop analysis finds the trip counts (`calls`, `timings`,
    `cc1`: prepare's; at -O1, which does that, the rest done already)."""
    promoted = captures.promote_captures(text)
    if promoted == text:
        return text
    return prepare(parse(promoted), tm, calls, timings=timings, cc1=cc1, level=1)


def _partial_unrolling() -> list[str]:
    """LLVM's options for unrolling before differentiation: loops are unrolled fully where their
    trip count is a small constant, never partially nor by a run-time count (x86's default
    unrolls every small loop so), for the reverse sweep's sake: it differentiates a loop once,
    not its unrolled copies and their remainder."""
    return ["-unroll-runtime=false", "-unroll-allow-partial=false"]


def _unrolling_after(in_process: bool, unrolled: bool) -> list[str]:
    """LLVM's options for unrolling after differentiation. `adgen build` keeps
    `_partial_unrolling`'s: on bench/programs/gpt2.c run-time and partial unrolling made 47% more
    code (13,305 instructions against 9,034) and took 0.7 s of its 4-5 s build, with the
    gradient's time the same, and bench/kernels.c's logsumexp, its loops calling `exp`, took 7.05
    ms against 5.76. `adgen cc` and `adgen c++`, which stand in for clang, unroll the file's loops
    and the derivatives' as clang does at -O2 and above (`unrolled`): partially and by a run-time
    count where LLVM's cost model for the target says so. The forward sweep's loops are then the
    primal's as clang compiles them, as Enzyme's are (it differentiates clang's unrolled loops):
    GradBench's kmeans ran at 1.17 of Enzyme's time with its 8-element distance loop rolled, 0.95
    unrolled; llsq 1.04 and 0.98; ht, whose loops of 3 iterations once ran slower unrolled by 4
    (188 ms against 159), at 1.00 either way now. A clang process of its own (cc1.py) takes
    LLVM's default where no option is given; in this process `_partial_unrolling`'s options, once
    set, stay set (LLVM's options cannot be unset), so they are set on, which unrolls loops that
    call functions too."""
    if not unrolled:
        return _partial_unrolling()
    return ["-unroll-runtime=true", "-unroll-allow-partial=true"] if in_process else []


def inline_aggregates(module) -> None:
    """Functions that pass or return structs as values (`{ double, double }`, `<2 x float>`, or
    a copy in memory, `byval`, as the target's ABI has them) are inlined wherever they are
    called, unless marked noinline (or recursive): the values of their parts are then scalars
    to reverse mode, which has no adjoints of aggregates, and neither mode sees a copy the
    callee owns."""
    for fn in module.functions:
        if fn.is_declaration or any(b"noinline" in a for a in fn.attributes):
            continue
        kind = str(fn.global_value_type)
        result, _, params = kind.partition(" (")
        byval = any(b"byval" in attr for arg in fn.arguments for attr in arg.attributes)
        if result[:1] in "{[<%" or any(t in params for t in ("{", "[", "<", "%")) or byval:
            fn.add_function_attribute("alwaysinline")


def parse(text: str):
    _init()
    try:
        module = llvm.parse_assembly(text, _context())
        module.verify()
    except RuntimeError as exc:
        import tempfile

        with tempfile.NamedTemporaryFile("w", prefix="adgen-invalid-", suffix=".ll", delete=False) as kept:
            kept.write(text)
        raise AdgenError(error(f"internal error: the differentiated module is not valid LLVM IR (kept as "
                               f"{kept.name} for a bug report): {exc}"))
    return module


# The SLP vectorizer's widest bundle in derivative code. A derivative of a small function is
# many independent scalar streams (each operation and its adjoints or its 8 tangents); on an
# AVX-512 machine LLVM packs them 8 or 24 doubles wide, and the shuffles that gather the lanes
# cost more than the arithmetic saves (bundle adjustment's gradient and the reprojection error's
# forward[8] measured 5-10% slower than with 4 lanes, vector normalization's forward[8] 30-50%).
# Four lanes is one 256-bit register of doubles, the width clang prefers on Intel's AVX-512
# CPUs; narrower targets are unaffected, and the loop vectorizer still uses the full width.
SLP_MAX_LANES = 4

# The SLP vectorizer's bias. LLVM packs a bundle only where its cost model finds the vector code
# strictly cheaper than the scalar code (-slp-threshold=0); -1 packs the ties too. Derivative code
# is many short independent streams whose operands lie side by side (a value and its adjoint, a
# shadow's fields), and the model prices the shuffles that gather them in full: bundle
# adjustment's gradient measured 0.96-0.97 of Enzyme's time with -1 against 1.01-1.02 with 0
# (-2 the same as -1, -5 and below 0.99, +2 1.06; docs/performance/method.md).
SLP_THRESHOLD = -1

RUNTIME = "adgen."  # the prefix of the runtime's functions (templates/runtime.ll.j2, undo_log.ll.j2)


def scalar_where_straight(text: str, entries: set[str]) -> str:
    """The module's text with the `entries` (bare names) that run straight through, calling
    only functions that do too (no loop anywhere, no call through a pointer), marked
    `noimplicitfloat`: the SLP vectorizer then leaves them scalar. Given the width-1 reverse-mode
    derivatives: such a derivative is one chain of dependent operations, its forward sweep's and
    then its reverse sweep's, and packing its few independent operations into vectors puts
    shuffles on that chain (the reprojection error's gradient, a function without a loop: 0.94
    of Enzyme's time scalar, 0.99-1.01 packed). Not for forward mode, whose value and tangent
    are two chains side by side that packing serves (the same function's forward derivative: 3%
    slower scalar), nor for a derivative with a loop, whose iterations packing serves (bundle
    adjustment's gradient: 7% slower scalar). Only for `adgen build`'s exported functions: LLVM
    gives a function the attribute of each function inlined into it, and `adgen cc`'s
    derivatives are inlined into the user's code. The loops of adgen's runtime (the undo log's
    search, its growth) count for nothing: they do none of the derivative's arithmetic."""
    spelled_entries = {spelled(e): e for e in entries}
    back = branching_back(text)
    straight = {n for n in spelled_entries if n not in back}
    if not straight:
        return text
    defs = definitions(text)
    looping = {n for n in {bare(n) for n in back} | {d.name for d in defs.values() if d.function and d.pointer_calls}
               if not n.startswith(RUNTIME)}
    chosen = {n for n in straight if not (reached(defs, {spelled_entries[n]}, {}) & looping)}
    return with_function_attribute(text, chosen, "noimplicitfloat")


def finish(module, exported: set[str], tm, shared: set[str] = frozenset(), timings: list | None = None,
           cc1: Cc1 | None = None, unrolled: bool = False):
    """Keep only `exported` visible (`_internalize`), then optimize for speed (vectorizing),
    which drops what they do not reach: the sources' own functions are in the user's object.
    (Dropping them before O3 instead was measured to save nothing on bench/programs/gpt2.c:
    O3's global optimization drops them right after the cheap early simplification; those that
    no derived function reaches are gone earlier, `drop_unneeded`.) With `cc1`, clang optimizes
    (cc1.py): returns the optimized module, a new one then. `unrolled`: see `_unrolling_after`."""
    _internalize(module, exported, shared)
    return _optimized_after(module, tm, 3, unrolled, cc1, timings)


def compile_text(text: str, exported: set[str], tm, shared: set[str] = frozenset(), jobs: int = 1,
                 timings: list | None = None, cc1: Cc1 | None = None) -> tuple[bytes, str]:
    """The object code of a module's text, only `exported` visible (`_internalize`), optimized
    (`finish`) and emitted, and what was done, for -v. Where clang does the work and the module
    is large, in parts (ir_ad/parts.py), each optimized and compiled by a clang of its own, at
    most `jobs` at once, their objects joined into one: bench/programs/gpt2.c's derivative took
    0.85 s whole and takes 0.43 s in two parts on two cores. How the module is cut depends on
    the module alone, not on `jobs`. Cut, the text is internalized as text (ir/linkage.py) and
    not read and printed again by llvmlite (llm.c's derivative: 80 ms of its build; clang
    verifies each part as it reads it, cc1.py)."""
    if cc1 is not None and cc1.joins and split.splittable(text):
        made = _in_parts(linkage.internalized(text, exported, shared, tm.triple), jobs, timings, cc1)
        if made is not None:
            return made
    module = parse(text)
    if cc1 is not None and cc1.joins:
        module.triple = tm.triple
    final = finish(module, exported, tm, shared, timings, cc1)
    return emit_object(final, tm, timings=timings, cc1=cc1), "in one part"


def _in_parts(text: str, jobs: int, timings: list | None, cc1: Cc1) -> tuple[bytes, str] | None:
    """The object of an internalized, splittable module's text compiled in parts, each by a
    clang of its own (parts.py), at most `jobs` at once; None where it is not to be cut."""
    pieces = split.live(split.read_pieces(text))
    cut = parts.plan(pieces) if pieces else None
    if cut is None:
        return None
    texts = split.part_texts(pieces, cut.owner(), cut.copied, len(cut.parts), split.tag_of(text))
    each: list[list | None] = [[] if timings is not None else None for _ in texts]
    order = sorted(range(len(texts)), key=lambda k: -cut.sizes[k])  # the largest first
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:  # each a process of its own
        done = {k: pool.submit(cc1.compile, texts[k], _final_options(False, False), each[k]) for k in order}
        objects = [done[k].result() for k in range(len(texts))]
    if timings is not None:
        timings += [t for part in each for t in part]
    return cc1.join(objects), cut.describe()


def _internalize(module, exported: set[str], shared: set[str]) -> None:
    """Only `exported` stays visible, and `shared` (external functions of the sources called
    through pointers) as weak definitions the user's own object overrides, as are the sources'
    variables made weak (ir/linkage.py: the program's). (Twice is once.)"""
    for fn in module.functions:
        if fn.name in shared:
            if fn.linkage == llvm.Linkage.external and not fn.is_declaration:  # (a declaration stays one)
                fn.linkage = llvm.Linkage.weak_odr
        elif not fn.is_declaration and fn.name not in exported:
            fn.linkage = llvm.Linkage.internal
    for g in module.global_variables:
        if not g.is_declaration and not g.name.startswith("llvm.") and g.linkage != llvm.Linkage.weak_any:
            g.linkage = llvm.Linkage.internal


def _final_options(in_process: bool, unrolled: bool) -> list[str]:
    """LLVM's options after differentiation. Reverse sweeps run their loops downward; LLVM's
    alias checks hoisted out of an inner loop assume the outer loop steps upward and always fail
    for these, leaving the vectorized inner loop dead (bench/programs/gpt2.c: the reverse sweep of
    its matrix product was scalar)."""
    return [f"-slp-max-vf={SLP_MAX_LANES}", f"-slp-threshold={SLP_THRESHOLD}", "-hoist-runtime-checks=false",
            *_unrolling_after(in_process, unrolled)]


def inline_always(module, tm) -> None:
    """What clang does at -O0: functions marked always_inline inlined (then dropped where
    nothing else calls them), so that a wrapper around an entry point of Enzyme's API is read
    where its caller names the function to differentiate."""
    pm = llvm.create_new_module_pass_manager()
    pm.add_always_inliner_pass()
    pm.add_global_dead_code_eliminate_pass()
    pm.run(module, llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(0)))


def reoptimize(module, tm, level: int, cc1: Cc1 | None = None):
    """The optimization a C compiler runs at -O`level`, on a module whose own code clang has
    optimized already: what is new (the calls of Enzyme's API, now calls of adapters) is
    inlined and simplified with it, loops unrolled as clang unrolls them (`_unrolling_after`).
    With `cc1`, clang optimizes: returns the optimized module (a new one then)."""
    return _optimized_after(module, tm, level, True, cc1)


def _optimized_after(module, tm, level: int, unrolled: bool, cc1: Cc1 | None, timings: list | None = None):
    """The module optimized after differentiation at -O`level` (vectorizing from -O2), by clang
    where `cc1` is given (a new module, named as the old: its IR's "; ModuleID" line), else in
    this process (the module itself)."""
    if cc1 is not None:
        optimized = llvm.parse_bitcode(cc1.optimize(module.as_bitcode(), _final_options(False, unrolled), timings,
                                                    level=level, vectorize=level >= 2), _context())
        optimized.name = module.name
        return optimized
    for option in _final_options(True, unrolled):
        llvm.set_option("adgen", option)
    _run(module, tm, level, vectorize=level >= 2, timings=timings)
    return module


def emit_object(module, tm, timings: list | None = None, cc1: Cc1 | None = None) -> bytes:
    """The object code (by clang's code generator with `cc1`). Loop strength reduction is most
    of the time on a large derivative (bench/programs/gpt2.c: 0.4-0.8 of 1-1.5 s) but stays on:
    without it gpt2's gradient ran 3-8% slower, and two of bench/kernels.c's 10% slower."""
    module.triple = tm.triple
    if cc1 is not None:
        return cc1.emit(module.as_bitcode(), timings)
    if timings is None:
        return tm.emit_object(module)
    llvm.set_time_passes(True)  # code generation runs the legacy pass manager: its global timers
    start = time.perf_counter()
    try:
        return tm.emit_object(module)
    finally:
        timings += pass_times(llvm.report_and_reset_timings(), time.perf_counter() - start)
        llvm.set_time_passes(False)


def instruction_count(module) -> int:
    """From the module's text (one call into LLVM, not one per instruction)."""
    return count_instructions(str(module))
