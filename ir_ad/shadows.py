"""How the N derivatives of a value are held, in both modes.

With separate shadows (`dual`, `dup`: the LANES layout) a value has N derivative *parts* of its
own type: N doubles for a double, N pointers for a pointer, one per lane. Each lane is its own
scalar stream, so a loop over arrays vectorizes across iterations, lane by lane, as the primal
does; width 1 is plain scalar code. With the interleaved layout (`dualv`, `dupv`) a value has one
part: `<N x T>` for a float of type T, one pointer for a pointer, into memory where the N lanes
of the scalar at primal byte offset o lie together at byte offset N*o, so a lane vector is one
load. `Layout` does the arithmetic on parts that both modes share."""

from __future__ import annotations

import math
from dataclasses import dataclass

from adgen.ir_ad.ir.builder import SHADOW as SHADOW_MEMORY, Builder, Declarations, V, bare, local
from adgen.ir_ad.ir.edit import constant_address
from adgen.ir_ad.ir.instructions import INTEGER_STEPS
from adgen.ir_ad.ir import (I1, I8, I64, PTR, Instruction, Module, Operand, Type, array, floating, int_type, read_only,
                            renamed_global, struct, vector)

LANES, INTERLEAVED = "lanes", "interleaved"
Shadow = tuple  # of V: `Layout.parts` values
FLAGS = "reassoc nsz contract"  # of derivative arithmetic (see Layout.scale)
ALIGN = 16  # the alignment of shadow memory adgen allocates (calloc's), each lane's included

# Both modes refuse vector values carrying derivatives with interleaved lanes, and say why.
VECTOR_VALUES = ("vector values (SIMD code: vector types or intrinsics in the source, Eigen's packets) are "
                 "differentiated with separate lanes (dual, dup, and forward[N] or reverse[N] of them), not "
                 "interleaved ones (dualv, dupv)")
# Both modes refuse floats' bits moved as an integer wider than a double (analysis/uses.py).
WIDE_INTEGER = ("an integer of {bits} bits loaded from memory holding derivatives, whose bits become floating-point "
                "values (the optimizer's copy of several at once): adgen does not follow derivatives through them")


def wide_integer(t: Type) -> str:
    """WIDE_INTEGER for a loaded integer type: wider than a double, or a vector of integers
    (floats moved as integer lanes, other than by a bitcast of the whole vector)."""
    if t.kind == "vector":
        return (f"a vector of integers ('{t.text}') loaded from memory holding derivatives, whose bits become "
                "floating-point values other than by a bitcast of the whole vector: adgen does not follow derivatives "
                "through them")
    return WIDE_INTEGER.format(bits=t.bits)


# Both modes refuse a pointer whose shadow is known only on some paths where a mask cannot follow it,
# and then make the derivation again with runtime activity (below), which lifts this but with
# interleaved lanes; this says what to do instead.
MIXED_POINTER = ("a pointer that may point both into memory holding derivatives and into memory adgen keeps none of"
                 " (a 'const' argument or a global): give that argument a shadow too, or copy its data into a local array")


# Runtime activity. A derivation that meets a pointer into memory adgen keeps no derivatives of
# (a 'const' argument's, a global's) where it needs a shadow (stored into memory holding
# derivatives beside pointers that have them, merged with such a pointer by a phi or select and
# passed on: Eigen's expressions and evaluators hold pointers to every operand, and its product
# kernels pick between them) is made again, all its derived functions, with such pointers their
# own shadows, as Enzyme's runtime activity does (Unsupported.shadowless says when). A shadow is
# then its pointer exactly where the pointer points into memory without derivatives: shadow
# memory is never the primal's, an address computed from both stays equal, and a pointer loaded
# through one is its own shadow too. So each access to shadow memory through a pointer that may
# be so (all but those into the function's own allocations) compares the two: a derivative read
# there is zero, one added or written there goes to a scratch sink, and a value carrying
# derivatives stored there, whose derivatives memory without them would lose, aborts the program
# with a message (SELF_STORE). Derivations that meet no such pointer are made as before, without
# a comparison.
SELF_STORE = '@"adgen.self.store"'
# What a derivative written by hand cannot be given: it would write derivatives into the primal's memory.
BY_HAND_ITSELF = ("a call to a function with a derivative written by hand, passing a pointer that may be its own "
                  "shadow (runtime activity, where pointers into memory adgen keeps no derivatives of meet pointers "
                  "with derivatives): give the arguments it comes from shadows")
_SELF_MESSAGE = ("adgen: a value carrying derivatives was stored into memory adgen keeps no derivatives of (a 'const' "
                 "argument's, or a global's, reached through memory holding derivatives): give that argument a shadow")


def with_runtime_activity(mode, pattern, undo):
    """`mode._derive(pattern)`, both modes' outermost derivation (an entry's, with its callees);
    where it meets a pointer without a shadow where one is needed (Unsupported.shadowless),
    `undo()` what it made and derive again with runtime activity (`pattern.runtime`), keeping
    the run-time check that then needs (its definitions) and the result in the mode's memo.
    `mode._depth` counts the derivations under way, so that callees are derived directly."""
    from dataclasses import replace

    from adgen.ir_ad.diagnose import Unsupported

    mode._depth += 1
    try:
        try:
            return mode._derive(pattern)
        except Unsupported as exc:
            if not exc.shadowless or pattern.runtime or pattern.kind == INTERLEAVED:  # (no shadow is its own there)
                raise
            undo()
            checks = self_store_runtime(mode.decls)  # (known before the code written calls it)
            try:
                derived = mode._derive(replace(pattern, runtime=True))
            except Unsupported as second:
                raise exc if second.shadowless else second from None
            mode.memo[pattern] = derived
            mode.definitions += checks
            return derived
    finally:
        mode._depth -= 1


# The runtime's frees and reallocs that wait for an undo log alive (templates/runtime.ll.j2), and
# their `.now` twins, which do not look for one.
_LATER = {'@"adgen.free.later"': '@"adgen.free.now"', '@"adgen.realloc.later"': '@"adgen.realloc.now"',
          '@"adgen.shadow.release"': '@"adgen.shadow.release.now"',
          '@"adgen.shadow.drop.text"': '@"adgen.shadow.drop.text.now"',
          '@"adgen.shadow.realloc"': '@"adgen.shadow.realloc.now"'}


def at_once(text: str) -> str:
    """A derived function's text freeing and reallocating at once: where no undo log may be alive
    while it runs (a derivative a later level differentiates, which keeps none; forward mode's),
    and where a later level may differentiate it, which could not differentiate the log's code."""
    for later, now in _LATER.items():
        if later in text:
            text = renamed_global(text, later, now)
    return text


def own_copies(b: Builder, layout: Layout, objects: list[tuple[Operand, int]], shadow) -> None:
    """The shadows (`shadow(pointer)`) of objects holding no derivatives but pointers made copies
    of their bytes (`objects`: pointer and size, calls.library_objects: what the C++ library's
    own code wrote), as runtime activity takes a pointer without a shadow for its own. Not with
    interleaved lanes, whose shadows are not the objects' layout."""
    if layout.kind == INTERLEAVED:
        return
    for obj, size in objects:
        for part in shadow(obj):
            b.memcpy(part, V(PTR, obj.value), V(I64, str(size)), move=True)


def self_store_runtime(decls: Declarations) -> list[str]:
    """The definition of SELF_STORE(i1 lost), which aborts with a message where `lost`, once per
    module (what `decls` knows): the text to add to the module, if not there yet."""
    if SELF_STORE in decls.known:
        return []
    decls.known.add(SELF_STORE)
    decls.need("@write", I64, [int_type(32), PTR, I64])
    decls.need("@abort", Type("void", "void"), [])
    n = len(_SELF_MESSAGE) + 1
    return [f"define internal void {SELF_STORE}(i1 %lost) alwaysinline {{\nentry:\n"
            f"  br i1 %lost, label %bad, label %ok\n"
            f"bad:\n  call void @\"adgen.self.abort\"()\n  unreachable\nok:\n  ret void\n}}\n"
            f"define internal void @\"adgen.self.abort\"() cold noinline noreturn {{\nentry:\n"
            f"  %w = call i64 @write(i32 2, ptr @\"adgen.self.message\", i64 {n})\n  call void @abort()\n"
            f"  unreachable\n}}\n"
            f"@\"adgen.self.message\" = internal constant [{n} x i8] c\"{_SELF_MESSAGE}\\0A\""]


def self_shadow(b: Builder, shadow: Shadow, pointer: V) -> V:
    """i1: whether a shadow is its pointer itself (runtime activity, above): every lane's is
    where one's is, so the first lane's tells."""
    return b.value(I1, f"icmp eq {shadow[0]}, {pointer.ref}")


# Pointer constants that point nowhere. Their shadow is one too (no code reads through them, nor
# through an address computed from them: points_nowhere), and one passed to a function of the
# sources that is differentiated anyway is passed with it: the callee may be given memory with
# derivatives for that parameter by other calls, and write derivatives through it where it is
# not null (libc++'s `std::stable_sort` passes its merge buffer, or a null one where no memory
# was to be had; a linked list's `next`).
NOWHERE = ("null", "undef", "poison")


def points_nowhere(op: Operand, defs: dict[str, Instruction] | None = None, depth: int = 0) -> bool:
    """A pointer constant that points nowhere (see NOWHERE), or given the function's definitions
    (`defs`), an address computed from one (libstdc++'s end of an empty `std::vector`, null plus
    its size in bytes, merged with a real one's in a phi): its shadow is null too."""
    if op.type.kind != "ptr":
        return False
    if op.value in NOWHERE:
        return True
    address = constant_address(op.value)
    if address is not None and address < 4096:  # (an address in the null page, where nothing lies: an
        return True  # alignment, Rust's `NonNull::dangling` for memory not allocated yet)
    inst = (defs or {}).get(op.value) if op.value.startswith("%") else None
    if inst is not None and inst.opcode == "inttoptr":
        return _no_address(inst.operands[0].value, defs or {})
    if inst is None or depth > 64 or inst.opcode not in ("getelementptr", "bitcast", "addrspacecast", "freeze"):
        return False
    return points_nowhere(inst.operands[0], defs, depth + 1)




def _no_address(value: str, defs: dict[str, Instruction]) -> bool:
    """Whether an integer is computed, by arithmetic, phis and selects, from constants and the
    function's integer parameters only (an alignment: Rust's `NonNull::dangling` of a layout's),
    never from an address (`ptrtoint`) or memory: a pointer made of it points at nothing adgen
    keeps derivatives of, as forward mode's `inttoptr` says."""
    seen, work = set(), [value]
    while work:
        v = work.pop()
        if not v.startswith("%") or v in seen:
            continue
        seen.add(v)
        inst = defs.get(v)
        if inst is None:
            continue  # a parameter
        if inst.opcode not in INTEGER_STEPS or len(seen) > 256:
            return False
        if inst.opcode == "phi":
            work += [v.value for v, _ in inst.incoming]
        else:
            work += [o.value for o in inst.operands[1 if inst.opcode == "select" else 0:]]
    return True


def mask_name(value: str) -> str:
    """The i1 saying whether a pointer made by a phi or select has a real shadow."""
    return local(bare(value) + "'mask")


def carries(module: Module, t: Type) -> bool:
    """Whether values of this type carry derivatives of their own (integers only when loaded
    from floating memory, which the modes decide)."""
    if t.kind in ("float", "ptr") or floating(t):
        return True
    if t.kind == "named":
        return carries(module, module.struct_type(t))
    if t.kind in ("struct", "array"):
        return any(carries(module, e) for e in t.elems)
    return False


def self_shadowed(module: Module, ref: str, defs: dict[str, Instruction] | None = None, depth: int = 0) -> bool:
    """Whether a pointer operand points into read-only memory holding no floating data and no
    pointers but to functions and to such memory: a string literal, a C++ virtual table. Nothing
    there carries a derivative or is ever written, so the pointer is its own shadow (where a
    program stores it into memory holding derivatives, say). The operand is a global, a
    constant expression of globals, or, given the function's definitions (`defs`), a pointer
    loaded from such memory (a virtual table's address read from a C++ VTT) or an address
    computed from one."""
    if ref.startswith("%"):
        inst = (defs or {}).get(ref)
        if inst is None or depth > 64 or not (inst.opcode in ("getelementptr", "bitcast", "addrspacecast") or
                                              (inst.opcode == "load" and inst.type.kind == "ptr")):
            return False
        return self_shadowed(module, inst.operands[0].value, defs, depth + 1)
    return read_only(module, ref)


def _finite_constant(ref: str) -> bool:
    """Whether an IR operand is a finite floating constant (`1.000000e+00`, `0x3FB999999999999A`;
    LLVM writes infinities and NaN in hex, as doubles' bits for float and double alike)."""
    if ref.startswith("0x") and ref[2:].isalnum() and len(ref) == 18:
        return (int(ref[2:], 16) >> 52) & 0x7FF != 0x7FF
    try:
        return math.isfinite(float(ref))
    except ValueError:
        return False


@dataclass(frozen=True)
class Layout:
    module: Module
    width: int
    kind: str

    @property
    def parts(self) -> int:
        return self.width if self.kind == LANES else 1

    def part_type(self, t: Type) -> Type | None:
        """The type of each part of a value's derivative, or None when it has none."""
        if self.kind == LANES:
            if t.kind in ("float", "ptr") or (t.kind == "int" and t.bits in (32, 64)) or floating(t):
                return t
            if t.kind == "named":
                return t if self.part_type(self.module.struct_type(t)) else None
            if t.kind in ("struct", "array"):
                return t if carries(self.module, t) else None
            return None
        n = self.width
        if t.kind == "float":
            return vector(t, n)
        if t.kind == "ptr":
            return PTR
        if t.kind == "int" and t.bits in (32, 64):
            return vector(t, n)  # the bits of floating data moved as integers
        if t.kind == "named":
            return self.part_type(self.module.struct_type(t))
        if t.kind == "struct":
            elems = [self.part_type(e) or vector(int_type(8), n) for e in t.elems]
            return struct(*elems) if any(self.part_type(e) for e in t.elems) else None
        if t.kind == "array":
            e = self.part_type(t.elems[0])
            return array(e, t.count) if e else None
        return None

    # ------------------------------------------------------------------ names and constants
    def names(self, ref: str) -> list[str]:
        """The canonical names of a value's derivative parts: %"x'" or %"x'0" … %"x'{N-1}"."""
        if self.parts == 1:
            return [local(bare(ref) + "'")]
        return [local(f"{bare(ref)}'{k}") for k in range(self.parts)]

    def named(self, ref: str, t: Type) -> Shadow:
        pt = self.part_type(t)
        return tuple(V(pt, name) for name in self.names(ref))

    def zero(self, t: Type) -> Shadow:
        """Zero derivatives of type `t`; for an integer of no derivative (a byte stored into memory
        that has a shadow: a came-byte of a tape differentiated again), zero bytes of its size."""
        pt = self.part_type(t)
        if pt is None and t.kind == "int":
            pt = t if self.kind == LANES else vector(t, self.width)
        text = "0" if pt.kind == "int" else "null" if pt.kind == "ptr" else \
            "0.000000e+00" if pt.kind == "float" else "zeroinitializer"
        return tuple(V(pt, text) for _ in range(self.parts))

    def itself(self, ref: str) -> Shadow | None:
        """The shadow of a pointer that is its own (self_shadowed) in every lane; None with
        interleaved lanes, whose shadow memory is laid out unlike the primal's."""
        return tuple(V(PTR, ref) for _ in range(self.parts)) if self.kind == LANES else None

    def bind(self, b: Builder, ref: str, s: Shadow) -> Shadow:
        """Gives a derivative its canonical names (so that phis can refer to it ahead)."""
        out = []
        for name, part in zip(self.names(ref), s):
            b.emit(f"{name} = {_move(part)}")
            out.append(V(part.type, name))
        return tuple(out)

    # ------------------------------------------------------------------ arithmetic
    # Derivative arithmetic may fuse into FMAs (`contract`), its sums, which loops accumulate (a
    # tangent of a running sum, an adjoint of a value used every iteration), may be reassociated
    # (`reassoc`), which vectorizes them, and the sign of a zero derivative is left open (`nsz`),
    # which lets the lanes of a derivative be combined freely: the results change by rounding
    # only, as any reordering of a sum does. No assumption about NaN or infinities is made, and
    # the primal computation keeps its own flags.
    def scale(self, b: Builder, partial: V, s: Shadow) -> Shadow:
        """partial * s, lane by lane (partial is a primal scalar)."""
        if self.kind == LANES:
            return tuple(b.binary(f"fmul {FLAGS}", partial, x) for x in s)
        return (b.binary(f"fmul {FLAGS}", b.splat(partial, self.width), s[0]),)

    def divide(self, b: Builder, s: Shadow, divisor: V) -> Shadow:
        """s / divisor, lane by lane (divisor is a primal scalar), which LLVM may compute as a
        product with 1 / divisor (`arcp`: one reciprocal for several, hoisted where a loop does
        not change the divisor)."""
        if self.kind == LANES:
            return tuple(b.binary(f"fdiv {FLAGS} arcp", x, divisor) for x in s)
        return (b.binary(f"fdiv {FLAGS} arcp", s[0], b.splat(divisor, self.width)),)

    def scale_adjoint(self, b: Builder, partial: V, s: Shadow) -> Shadow:
        """partial * s, but exactly zero wherever s is zero ("strong zero"): for the values whose
        adjoint may be a zero a select or min/max masked, whose partials may be infinite or NaN
        there (masked.py). A finite constant partial (fadd's 1) needs no guard."""
        if _finite_constant(partial.ref):
            return self.scale(b, partial, s)
        return tuple(b.select(b.fcmp("oeq", x, b.zero(x.type)), x, y) for x, y in zip(s, self.scale(b, partial, s)))

    def scale_masked(self, b: Builder, partial: V, s: Shadow) -> Shadow:
        """partial * s, but exactly zero wherever the partial is zero: forward mode's tangent of
        min/max, whose argument not chosen may have an infinite or NaN tangent."""
        zero = b.fcmp("oeq", partial, b.zero(partial.type))
        return tuple(b.select(zero, b.zero(y.type), y) for y in self.scale(b, partial, s))

    def add(self, b: Builder, a: Shadow, c: Shadow) -> Shadow:
        return tuple(b.binary(f"fadd {FLAGS}", x, y) for x, y in zip(a, c))

    def select(self, b: Builder, cond: V, a: Shadow, c: Shadow) -> Shadow:
        return tuple(b.select(cond, x, y) for x, y in zip(a, c))

    def cast(self, b: Builder, op: str, s: Shadow, to: Type) -> Shadow:
        pt = self.part_type(to)
        return tuple(b.cast(op, x, pt) for x in s)

    def convert(self, b: Builder, s: Shadow, to: Type) -> Shadow:
        """Adjoints of one float type as another (fpext or fptrunc), where a value's type and its
        adjoint's differ."""
        pt = self.part_type(to)
        if s[0].type == pt:
            return s
        bits = lambda t: (t.elems[0] if t.kind == "vector" else t).bits
        return tuple(b.cast("fpext" if bits(x.type) < bits(pt) else "fptrunc", x, pt) for x in s)

    # ------------------------------------------------------------------ memory
    def memory(self, lane: int) -> str:
        """The alias scope of a lane's shadow memory (see builder.AliasScopes)."""
        return SHADOW_MEMORY if self.kind == INTERLEAVED else f"{SHADOW_MEMORY} lane {lane}"

    def load(self, b: Builder, t: Type, ptrs: Shadow, align: int | None) -> Shadow:
        """`align`: the primal access's; the shadow's assumes no more than its element's either
        (Builder.load): the caller's shadow of a `double *` is only 8-byte aligned, whatever the
        primal code knows of the primal pointer (`__builtin_assume_aligned`)."""
        if self.kind == LANES:
            return tuple(b.load(t, p, align, self.memory(k)) for k, p in enumerate(ptrs))
        return (b.load(self.part_type(t), ptrs[0], align, self.memory(0)),)

    def store(self, b: Builder, s: Shadow, ptrs: Shadow, align: int | None) -> None:
        for k, (x, p) in enumerate(zip(s, ptrs)):
            b.store(x, p, align, self.memory(k))

    def atomic_add(self, b: Builder, s: Shadow, ptrs: Shadow, operation: str = "fadd") -> None:
        """Adds `s` to shadow memory atomically (or subtracts it: `fsub`), element by element:
        where the threads of an OpenMP team may add to the same derivative at once
        (specs/openmp.md)."""
        for x, p in zip(s, ptrs):
            elem = x.type.elems[0] if x.type.kind == "vector" else x.type
            size = elem.bits // 8
            for k in range(x.type.count if x.type.kind == "vector" else 1):
                at = b.gep(elem, p, V(I64, str(k))) if k else p
                part = b.extract(x, k) if x.type.kind == "vector" else x
                b.value(elem, f"atomicrmw {operation} ptr {at.ref}, {part} monotonic, align {size}")

    def gep(self, b: Builder, inst: Instruction, base: Shadow, value) -> Shadow:
        """The shadow of `getelementptr`: the same indices on each lane's pointer, or for the
        interleaved layout the primal byte offset times N. `value(operand)` gives primal operands."""
        if self.kind == LANES:
            flags = " ".join(w for w in inst.text.split("getelementptr", 1)[1].split()[:3]
                             if w in ("inbounds", "nuw", "nusw"))
            indices = [value(o) for o in inst.operands[1:]]
            return tuple(b.gep(inst.source_type, p, *indices, flags=flags) for p in base)
        primal, origin = value(_result(inst)), value(inst.operands[0])
        offset = b.binary("sub", b.cast("ptrtoint", primal, I64), b.cast("ptrtoint", origin, I64))
        return (b.gep(I8, base[0], b.binary("mul", offset, V(I64, str(self.width)))),)

    def allocate(self, b: Builder, size: V, on_stack: bool, tracked: bool = False) -> Shadow:
        """Zeroed shadow memory for `size` primal bytes: one allocation for all lanes (on the heap,
        with calloc, or on the stack), the lanes apart by a multiple of 16 bytes so that each is
        as aligned as the allocation (see ALIGN). `tracked`: the reverse mode's heap memory, with
        the header its runtime reads (adgen.shadow.alloc in templates/runtime.ll.j2)."""
        stride = self._stride(b, size)
        if on_stack:
            total = b.binary("mul", stride, V(I64, str(self.width)))
            memory = b.value(PTR, f"alloca i8, {total}, align {ALIGN}")
            b.memset0(memory, total)
        elif tracked:
            memory = b.call('@"adgen.shadow.alloc"', PTR, [V(I64, str(self.width)), stride, size])
        else:
            memory = b.call("@calloc", PTR, [V(I64, str(self.width)), stride])
        return self._lanes(b, memory, stride)

    def reallocate(self, b: Builder, result: str, primal: V, shadow: Shadow, size: V) -> Shadow:
        """realloc in reverse mode (adgen.shadow.realloc): names the new memory `result` and
        returns its shadow, laid out as `allocate(tracked=True)` lays it out."""
        both = b.call('@"adgen.shadow.realloc"', struct(PTR, PTR), [
            primal, shadow[0], size, V(I64, str(self.width)), V(I64, "1" if self.parts > 1 else "0")])
        b.emit(f"{result} = extractvalue {both}, 0")
        return self._lanes(b, b.value(PTR, f"extractvalue {both}, 1"), self._stride(b, size))

    def _stride(self, b: Builder, size: V) -> V:
        if self.parts == 1:
            return size
        return b.binary("and", b.binary("add", size, V(I64, str(ALIGN - 1))), V(I64, str(-ALIGN)))

    def _lanes(self, b: Builder, memory: V, stride: V) -> Shadow:
        if self.parts == 1:
            return (memory,)
        return tuple(b.gep(I8, memory, b.binary("mul", stride, V(I64, str(k)))) if k else memory
                     for k in range(self.width))

    def zero_memory(self, b: Builder, ptrs: Shadow, length: V) -> None:
        """Zeroes `length` primal bytes' worth of shadow memory."""
        if self.kind == INTERLEAVED:
            b.memset0(ptrs[0], b.binary("mul", length, V(I64, str(self.width))))
        else:
            for p in ptrs:
                b.memset0(p, length)


def _result(inst: Instruction) -> Operand:
    return Operand(PTR, inst.result)


def _move(value: V) -> str:
    """An instruction whose result is `value` (so a derivative can be given its own name)."""
    t = value.type
    if floating(t):
        zero = "-0.000000e+00" if t.kind == "float" else f"splat ({t.elems[0].text} -0.000000e+00)"
        return f"fadd {value}, {zero}"
    return f"select i1 true, {value}, {value}"
