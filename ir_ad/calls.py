"""What a call is, by its callee: one table, as rules.py is for instructions, that every stage
asks (the activity analyses, forward mode, the reverse sweeps, the memory analysis) instead of
recognising library functions and intrinsics by name itself.

A callee is one kind: an intrinsic that neither reads nor writes derivatives (LIFETIME, INERT),
a copy or fill of memory (COPY, MOVE, SET), an allocation (ALLOCATE, REALLOCATE, FREE), a
function that carries no derivatives (INACTIVE), one with a derivative rule (RULE: libm and
intrinsics, rules.py), a function of the sources (DEFINED), an intrinsic without a rule
(INTRINSIC), adgen's runtime (RUNTIME), or anything else (UNDEFINED). The first that applies,
in that order."""

from __future__ import annotations

from adgen.base.cxx_names import cxx_library_header, cxx_library_io, cxx_library_objects
from adgen.ir_ad.ir.builder import Builder, V
from weakref import WeakKeyDictionary

from adgen.ir_ad.ir import I64, Instruction, Module, Operand, Type, rust_path
from adgen.ir_ad.ir.unwinding import CATCHES
from adgen.ir_ad import mpi
from adgen.ir_ad.rules import rule_for

LIFETIME, INERT = "lifetime", "inert"
COPY, MOVE, SET = "copy", "move", "set"
ALLOCATE, REALLOCATE, FREE = "allocate", "reallocate", "free"
INACTIVE, RULE, DEFINED = "inactive", "rule", "defined"
INTRINSIC, RUNTIME, UNDEFINED = "intrinsic", "runtime", "undefined"

IGNORED = (LIFETIME, INERT)  # calls neither mode differentiates nor checks: copied as they are
COPIES = (COPY, MOVE)

# Intrinsics that neither read nor write derivatives, whatever their arguments.
_INERT_INTRINSICS = ("llvm.dbg.", "llvm.assume", "llvm.experimental.noalias.scope.decl", "llvm.invariant.",
                     "llvm.prefetch", "llvm.donothing", "llvm.sideeffect", "llvm.stacksave", "llvm.stackrestore",
                     "llvm.pseudoprobe", "llvm.var.annotation")
# By prefix (the intrinsics, overloaded by type) or by the C library's name.
_MEMORY = ((("llvm.memcpy", "memcpy"), COPY), (("llvm.memmove", "memmove"), MOVE), (("llvm.memset", "memset"), SET))
# The C library's allocators -> the index of their size argument (calloc's is a product of both),
# and C++'s `operator new` (arrays, alignment, nothrow; a 32-bit size_t's too), whose memory is
# the C library's where C++'s library is libc++ or libstdc++: it is released with `free` once the
# reverse sweep is done with it (specs/cxx.md).
_CXX_NEW = {f"_Zn{kind}{size}{rest}" for kind in ("w", "a") for size in ("m", "j")
            for rest in ("", "RKSt9nothrow_t", "St11align_val_t", "St11align_val_tRKSt9nothrow_t")}
ALLOCATORS = {"malloc": 0, "calloc": None, "aligned_alloc": 1} | {name: 0 for name in _CXX_NEW}
# Rust's global allocator, as rustc's code calls it: `__rust_alloc` (the v0 mangling's
# `_RNvCs..._7___rustc12___rust_alloc`) and its kin -> their kind. Under Rust's default allocator
# (System) that memory is the C library's, as C++'s is: adgen's shadows and deferred frees are
# malloc's and free's (specs/annotations.md, "Rust crates"). `__rust_realloc` takes the memory,
# its old size, the alignment and the new size.
_RUST_ALLOCATOR = {"__rust_alloc": ALLOCATE, "__rust_alloc_zeroed": ALLOCATE, "__rust_realloc": REALLOCATE,
                   "__rust_dealloc": FREE}
_RUST_SHIM = ("__rust_no_alloc_shim_is_unstable", "__rust_no_alloc_shim_is_unstable_v2")  # (markers: no effect)


def _rust_shim(name: str) -> str:
    """A call of Rust's allocator shims, by the shim's own name (`__rust_alloc`), or ""."""
    if name.startswith("__rust_"):
        return name
    if name.startswith("_RNv") and "___rust_" in name:
        return name[name.rindex("___rust_") + 1:]
    return ""


_GLOBAL_ALLOCATOR: WeakKeyDictionary = WeakKeyDictionary()


def _own_global_allocator(module: Module) -> bool:
    """Whether the sources define a `#[global_allocator]` (rustc then defines the shims, or
    `__rg_alloc`): its memory is not the C library's, so its calls are what they are (its code
    differentiated where the module has it, else refused), not malloc's and free's."""
    if module not in _GLOBAL_ALLOCATOR:
        names = [n for n in module.functions if _rust_shim(n.lstrip("@").strip('"')) in _RUST_ALLOCATOR or
                 n.lstrip("@").strip('"').endswith("__rg_alloc")]
        _GLOBAL_ALLOCATOR[module] = any(not module.functions.signature(n).declaration for n in names)
    return _GLOBAL_ALLOCATOR[module]


# C++'s `operator delete` (sized, aligned, nothrow), a `free` to adgen.
_CXX_DELETE = {f"_Zd{kind}Pv{size}{rest}" for kind in ("l", "a") for size in ("", "m", "j")
               for rest in ("", "St11align_val_t", "RKSt9nothrow_t")}
# adgen's stack of the sweeps' storage, as an earlier level's derivative code calls it: its
# allocations are malloc's, realloc's and free's to a derivative of that code (whose forward
# sweep keeps the memory, so no gradient's stack), and a gradient's bracket around its sweeps is
# dropped. (A growing buffer of the tape moves by adgen.stack.realloc, whose copy of records
# mixing floats, integers and pointers no later level could type: as a realloc's, its
# derivatives move with the bytes.) A realloc's first two arguments are the memory and its new size.
_RUNTIME_KINDS = {"stack.alloc": ALLOCATE, "stack.realloc": REALLOCATE, "stack.free": FREE, "arena.enter": LIFETIME,
                  "arena.leave": LIFETIME}
# C library functions that carry no derivatives, whatever their arguments.
INACTIVE_CALLS = {"printf", "fprintf", "puts", "fputs", "putchar", "fflush", "abort", "exit", "_exit", "rand", "srand",
                  "time", "clock", "__assert_fail", "assert", "perror", "fwrite", "sprintf", "snprintf"}
# ... and those that compare or measure bytes: an integer from memory, whatever it holds.
_BYTES = {"memcmp", "bcmp", "strcmp", "strncmp", "strlen"}
INACTIVE_CALLS |= _BYTES
# OpenMP's bookkeeping: thread numbers, the serialized regions differentiation sees
# (ir/parallel.py), barriers and critical sections. They carry no derivatives and write no memory
# the program sees (a lock or a barrier orders other threads' writes, of which the serialized
# regions reverse mode differentiates have none).
_OPENMP_BOOKKEEPING = {"__kmpc_global_thread_num", "__kmpc_serialized_parallel", "__kmpc_end_serialized_parallel",
                       "__kmpc_barrier", "__kmpc_critical", "__kmpc_end_critical", "__kmpc_for_static_fini",
                       "__kmpc_push_num_threads", "__kmpc_dispatch_deinit", "omp_get_thread_num", "omp_get_num_threads",
                       "omp_get_max_threads", "omp_in_parallel", "omp_get_wtime", "__adgen_omp_end_critical"}
# ... of which these are reversed where a team runs the reverse sweep (reverse/sweeps/adjoints.py).
SYNCHRONIZATION = {"__kmpc_barrier", "__kmpc_critical", "__adgen_omp_end_critical"}
# OpenMP's worksharing loops' bounds (static and dynamic schedules): no derivatives either, but
# written through their pointer arguments, which the memory analysis assumes of any function it
# cannot see. Forward mode copies both kinds.
_OPENMP_SCHEDULES = {f"__kmpc_{what}_{width}" for what in ("for_static_init", "dispatch_init", "dispatch_next",
                                                            "dispatch_fini") for width in ("4", "4u", "8", "8u")}
INACTIVE_CALLS |= _OPENMP_BOOKKEEPING | _OPENMP_SCHEDULES
# Calls through a pointer inside the C++ library's streams (dispatch.py): the library calling itself.
LIBRARY_IO = "adgen.library_io."
# Library functions the memory analysis knows write no memory the caller can see.
_WRITE_NOTHING = {"printf", "puts", "fprintf"} | _BYTES | _OPENMP_BOOKKEEPING


def callee_name(inst: Instruction) -> str:
    return inst.callee.lstrip("@").strip('"')


def is_intrinsic(name: str) -> bool:
    """An LLVM intrinsic, by a callee's or function's name (with or without its '@')."""
    return name.lstrip("@").startswith("llvm.")


def kind_by_name(module: Module, name: str) -> str | None:
    """The kinds a callee's name alone decides (the module's allocators included), else None."""
    if name.startswith("llvm.lifetime."):
        return LIFETIME
    if name.startswith(_INERT_INTRINSICS):
        return INERT
    for (prefix, libc), kind in _MEMORY:
        if name.startswith(prefix) or name == libc:
            return kind
    if name in ALLOCATORS or name in module.allocators:
        return ALLOCATE
    if _runtime(name):  # an earlier level's storage (templates/runtime.ll.j2), differentiated as malloc's
        return _RUNTIME_KINDS.get(name.partition(".")[2])
    if name in _CXX_DELETE:
        return FREE
    rust = _rust_shim(name)
    if rust and not _own_global_allocator(module):
        return _RUST_ALLOCATOR.get(rust, INACTIVE if rust in _RUST_SHIM else None)
    return {"realloc": REALLOCATE, "free": FREE}.get(name)


def kind_of(module: Module, inst: Instruction) -> str:
    """The kind of a call's callee (see the module's docstring)."""
    name = callee_name(inst)
    if inst.callee == "asm":  # inline assembly: inactive on integers alone (x86's cpuid, say)
        return UNDEFINED if _asm_touches_floats_or_memory(inst) else INACTIVE
    named = kind_by_name(module, name)
    if named is not None:
        return named
    if name in INACTIVE_CALLS or inst.callee in module.inactive or module.noreturn(inst.callee) or \
            cxx_library_io(name) or name.startswith(LIBRARY_IO) or \
            (mpi.is_mpi(name) and mpi.inactive(name, inst, module.mpi_handles)):
        return INACTIVE  # (a function marked `@inactive`; one that never returns: a panic, abort; C++'s I/O;
        # MPI's queries and its communications of integers, mpi.py)
    if mpi.is_mpi(name) and inst.callee in module.custom and not mpi.every_rank(name, inst, module.mpi_handles):
        return UNDEFINED  # (a datatype the rules refuse: mpi.refusal says which)
    if rule_for(inst.callee) is not None:
        return RULE
    if is_intrinsic(name):
        return INACTIVE if _integers_of_values(inst) else INTRINSIC
    target = module.functions.get(inst.callee)
    if target is not None and (not target.declaration or inst.callee in module.custom):
        return DEFINED
    return RUNTIME if _runtime(name) else UNDEFINED


def every_rank(module: Module, inst: Instruction) -> bool:
    """A call each rank differentiates whatever flows through it here (MPI's communications: the
    derivative messages of one rank meet those of another, mpi.py)."""
    return inst.opcode == "call" and inst.callee in module.custom and \
        mpi.every_rank(callee_name(inst), inst, module.mpi_handles)


def inlined_from(module: Module, inst: Instruction, *headers: str) -> bool:
    """Whether an instruction is code of one of the C++ library's headers of these file names,
    inlined there (at any depth): a string's free, `char_traits`' copy of characters."""
    return any(where is not None and cxx_library_header(where.file, h)
               for where, _ in module.inline_chain(inst.dbg) for h in headers)


def frees_characters(module: Module, inst: Instruction) -> bool:
    """A free inlined from the C++ library's strings (a `std::string`'s buffer released): memory
    of characters, whatever shadow the analysis gave its pointer (the library moves buffers
    between strings where no shadow follows)."""
    return inlined_from(module, inst, "basic_string.h", "basic_string.tcc", "string")


def library_objects(inst: Instruction) -> list[tuple[Operand, int]]:
    """The objects a call of the C++ library's I/O writes as it pleases, with their sizes in
    bytes (`dereferenceable`): its result (`sret`), the object of a member function, parameters
    referring to strings and streams (base/cxx_names.py). They hold no derivatives, but pointers
    (a string's buffer, grown): their shadows, where they have them, are made their copies
    after the call, as runtime activity takes a pointer without a shadow for its own."""
    read = cxx_library_objects(callee_name(inst)) if cxx_library_io(callee_name(inst)) else None
    if read is None:
        return []
    member, objects, count = read
    plain = [(a, attrs) for a, attrs in inst.call_args if "sret" not in attrs]
    chosen = [a for a, attrs in inst.call_args if "sret" in attrs]
    if member and plain:
        chosen.append(plain[0][0])
    if len(plain) == count + member:  # (each parameter one argument: the references' are)
        chosen += [plain[k + member][0] for k in sorted(objects)]
    sizes = {id(a): int(attrs["dereferenceable"]) for a, attrs in inst.call_args
             if attrs.get("dereferenceable", "").isdigit()}
    return [(a, sizes[id(a)]) for a in chosen if a.type.kind == "ptr" and id(a) in sizes]


def _asm_touches_floats_or_memory(inst: Instruction) -> bool:
    """Whether inline assembly takes or gives floating-point values or pointers (or may write
    memory: a "~{memory}" clobber), which adgen cannot see through."""
    def reaches(t: Type) -> bool:
        return t.kind in ("float", "ptr") or any(reaches(e) for e in t.elems)

    return "~{memory}" in inst.asm or any(reaches(t) for t in [inst.type, *(a.type for a, _ in inst.call_args)])


def _integers_of_values(inst: Instruction) -> bool:
    """Whether an intrinsic takes floating-point values and no pointer (it reads and writes no
    memory) and gives integers: a predicate or a conversion (`llvm.is.fpclass`, `llvm.lround`),
    whose result carries no derivative. (Intrinsics of integers alone stay what they were.)"""
    def integers(t: Type) -> bool:
        return t.kind == "int" or (t.kind in ("vector", "struct", "array") and all(integers(e) for e in t.elems))

    def holds(t: Type, kind: str) -> bool:
        return t.kind == kind or any(holds(e, kind) for e in t.elems)

    args = [a.type for a, _ in inst.call_args]
    return integers(inst.type) and any(holds(t, "float") for t in args) and not any(holds(t, "ptr") for t in args)


def _runtime(name: str) -> bool:
    """adgen.alloc, adgen.shadow.*, ... (templates/runtime.ll.j2), adgen2.* at a second level."""
    stem, dot, _ = name.partition(".")
    return dot == "." and stem.startswith("adgen") and (stem == "adgen" or stem[5:].isdigit())


def allocates(module: Module, inst: Instruction) -> bool:
    """A call returning fresh memory (malloc and the like, realloc), whose memory gets a shadow."""
    return kind_by_name(module, callee_name(inst)) in (ALLOCATE, REALLOCATE)


def allocation_size(module: Module, inst: Instruction, b: Builder) -> V:
    """The bytes an allocator's call allocates, as i64."""
    name, args = callee_name(inst), [V(a.type, a.value) for a in inst.operands]
    if name == "calloc":
        return b.binary("mul", *args)
    size = args[ALLOCATORS[name] if name in ALLOCATORS else module.allocators.get(name, 0)]
    return size if size.type.text == "i64" else b.cast("zext", size, I64)


def reallocated(inst: Instruction) -> tuple[Operand, Operand]:
    """A reallocation's memory and its new size: realloc's (and adgen.stack.realloc's) first two
    arguments, Rust's `__rust_realloc(memory, old size, alignment, new size)` first and last."""
    ops = inst.operands
    return (ops[0], ops[3]) if _rust_shim(callee_name(inst)) == "__rust_realloc" else (ops[0], ops[1])


def writes_first_argument(module: Module, inst: Instruction) -> bool | None:
    """For the memory analysis: True for a call that writes (or frees) only the memory its first
    argument points to, False for one that writes nothing the caller sees (an intrinsic, the C
    library's allocators, printing), None when the callee itself must be asked."""
    name = callee_name(inst)
    kind = kind_by_name(module, name)
    if kind in (COPY, MOVE, SET, REALLOCATE, FREE):
        return True
    if is_intrinsic(name) or name in ALLOCATORS or name in _WRITE_NOTHING or (_runtime(name) and kind is not None) or \
            kind in (ALLOCATE, INACTIVE) and _rust_shim(name):
        return False
    return None


def written_pointer_arguments(inst: Instruction) -> list[Operand] | None:
    """For the memory analysis: the pointer arguments a call may write through, where it writes
    nothing else, or None: OpenMP's worksharing loops' bounds, into the caller's own variables
    (not the source location, the first argument), and MPI's calls (mpi.writes_arguments_only:
    not through the library's predefined handles)."""
    name = callee_name(inst)
    if name in _OPENMP_SCHEDULES:
        return [a for a in inst.operands[1:] if a.type.kind == "ptr"]
    if mpi.writes_arguments_only(name):
        return [a for a in inst.operands if a.type.kind == "ptr" and not mpi.predefined_handle(a.value)]
    return None


def refused(module: Module, inst: Instruction) -> str | None:
    """Why a call cannot be differentiated, whatever flows through it, or None: a C++ exception
    thrown or caught by the sources (ir/unwinding.py), a call of OpenMP's runtime (a task's body
    runs where the runtime calls it, out of adgen's sight; the calls INACTIVE_CALLS names are
    differentiated, the others refused: no_derivative says what)."""
    name = callee_name(inst)
    if inst.opcode == "call" and name in _EXCEPTIONS:
        return _EXCEPTIONS[name]
    if inst.opcode != "call" or not name.startswith(("__kmpc_", "omp_")) or kind_of(module, inst) != UNDEFINED:
        return None
    return no_derivative(inst) if _openmp_construct(name) is not None else None


_THROWN = "a C++ exception thrown (`throw`) where derivatives run: they do not pass exceptions (specs/cxx.md)"
_EXCEPTIONS = {"__cxa_allocate_exception": _THROWN, "__cxa_throw": _THROWN, "__cxa_rethrow": _THROWN,
               CATCHES.lstrip("@"): "a call whose C++ exception the source catches (`try`/`catch`): derivatives do "
                                    "not catch exceptions (specs/cxx.md)"}


def no_derivative(inst: Instruction) -> str:
    """What to say of a call that neither mode can differentiate."""
    if inst.callee.startswith("%"):  # dispatch.py found no function the pointer may point to
        types = ", ".join(a.type.text for a, _ in inst.call_args)
        return (f"a call through a function pointer, and no function of the sources has its type "
                f"('{inst.type.text} ({types})')")
    if inst.callee == "asm":
        return "inline assembly on floating-point values or memory (its effect on derivatives is unknown)"
    name = callee_name(inst)
    construct = _openmp_construct(name)
    if construct is not None:
        return f"{construct}: OpenMP's '{name}' is not differentiated yet (specs/openmp.md)"
    path = rust_path(name)  # (a Rust symbol: its path, `alloc::fmt::format::format_inner`)
    shown = "::".join(path) if path else name
    return mpi.refusal(name) or f"a call to '{shown}', which is not defined in the sources and has no derivative rule"


# What OpenMP's runtime calls adgen cannot differentiate are made of, by prefix, for errors.
_OPENMP_CONSTRUCTS = (("__kmpc_reduce", "a reduction (`reduction(...)`)"), ("__kmpc_end_reduce", "a reduction"),
                      ("__kmpc_omp_task", "a task (`task`, `taskloop`)"), ("__kmpc_taskloop", "a task loop"),
                      ("__kmpc_ordered", "an `ordered` region"), ("__kmpc_end_ordered", "an `ordered` region"),
                      ("__kmpc_single", "a `single` region"), ("__kmpc_master", "a `master` region"),
                      ("__kmpc_masked", "a `masked` region"), ("__kmpc_fork_teams", "a `teams` region"),
                      ("__kmpc_copyprivate", "`copyprivate`"), ("omp_set_lock", "a lock"),
                      ("omp_unset_lock", "a lock"), ("omp_set_nest_lock", "a lock"), ("__kmpc_", "an OpenMP construct"))


def _openmp_construct(name: str) -> str | None:
    """The OpenMP construct a runtime function adgen does not differentiate is part of, for errors."""
    return next((what for prefix, what in _OPENMP_CONSTRUCTS if name.startswith(prefix)), None)
