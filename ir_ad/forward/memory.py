"""Forward mode's memory: loads and stores move tangents through shadow memory, addresses
get shadow addresses, local arrays zeroed shadows; and the library calls on memory (the kinds
ir_ad/calls.py names): copies copy tangents, fills clear them, allocators allocate zeroed shadow
memory, realloc moves it, free releases it. A part of the forward writer (forward/function.py),
kept apart."""

from __future__ import annotations

from adgen.ir_ad.ir.builder import V
from adgen.ir_ad.calls import allocation_size, frees_characters, reallocated
from adgen.ir_ad.analysis.uses import atomic_update_refusal
from adgen.ir_ad.analysis.typed_bytes import holds_no_floats
from adgen.ir_ad.diagnose import Unsupported
from adgen.ir_ad.analysis.flow import unshadowed_store
from adgen.ir_ad.ir import I1, I64, PTR, VOID, Type, atomic_operation, floating, vector
from adgen.ir_ad.shadows import INTERLEAVED, MIXED_POINTER, SELF_STORE, carries, self_shadow


class MemoryRules:
    def op_load(self, inst):
        self.copy(inst)
        if inst.result not in self.active:
            return
        if " atomic " in inst.text:
            raise self.fail("an atomic load of data carrying derivatives")
        t = self.flow.lanes_as_integers.get(inst.result, inst.type)  # (floats loaded as integer lanes: theirs)
        if t.kind not in ("float", "ptr", "int") and not floating(t):
            raise self.fail(f"a load of '{t.text}' from memory holding derivatives")
        ptr = inst.operands[0]
        if t.kind == "ptr" and ptr.value in self.maybe:
            raise Unsupported(self.fn.name, inst, MIXED_POINTER, shadowless=True)
        # (a pointer loaded through its own shadow is its own shadow too: runtime activity, shadows.py)
        lanes = self.shadow(ptr) if t.kind == "ptr" else self.guarded(ptr, self.shadow(ptr), False)
        self.bind(inst, self.layout.load(self.b, t, lanes, inst.align))

    def op_store(self, inst):
        self.copy(inst)
        value, ptr = inst.operands
        if " atomic " in inst.text and self._on(value):
            raise self.fail("an atomic store of data carrying derivatives")
        if not self._on(ptr):
            if self._on(value) and carries(self.mode.module, value.type):
                raise self.fail(unshadowed_store(self.fn, self.mode.module, ptr.value))
            return
        t = value.type
        if t.kind not in ("float", "ptr", "int") and not floating(t):
            if carries(self.mode.module, t):
                raise self.fail(f"a store of '{t.text}' into memory holding derivatives")
            return
        s = self.shadow(value) if t.kind != "int" or self._on(value) else None
        if s is None:
            if t.kind == "ptr":
                raise Unsupported(self.fn.name, inst, "a pointer into memory adgen keeps no derivatives of, stored "
                                  "where derivatives are kept", shadowless=True)
            s = self.layout.zero(t)
        if value.value in self.maybe:
            raise Unsupported(self.fn.name, inst, MIXED_POINTER, shadowless=True)
        lanes = self.shadow(ptr)
        itself = self.itself(ptr, lanes)
        if itself is not None and self._on(value):  # what it carries is lost there: the program aborts
            carried = self.b.value(I1, f"xor {self_shadow(self.b, s, V(PTR, value.value))}, true") \
                if t.kind == "ptr" else _nonzero(self.b, s)
            self.b.call(SELF_STORE, VOID, [self.b.binary("and", itself, carried)])
        self.layout.store(self.b, s, self.guarded(ptr, lanes, True), inst.align)

    def op_atomicrmw(self, inst):
        """An atomic addition (or subtraction) into memory with tangents (OpenMP's `atomic`):
        the tangent added atomically too, as threads update the same memory at once."""
        self.copy(inst)
        ptr, value = inst.operands
        if not (self._on(ptr) or self._on(value)):
            return
        why = atomic_update_refusal(self.fn, inst)
        if why is not None:
            raise self.fail(why)
        if not self._on(ptr):
            raise self.fail("an atomic update carrying derivatives of memory adgen keeps no derivatives of")
        if self._on(value):
            self.layout.atomic_add(self.b, self.shadow(value), self.guarded(ptr, self.shadow(ptr), True),
                                   atomic_operation(inst))

    def op_getelementptr(self, inst):
        self.copy(inst)
        if inst.result in self.active:
            self.bind(inst, self.layout.gep(self.b, inst, self.shadow(inst.operands[0]), lambda o: V(o.type, o.value)))

    def op_alloca(self, inst):
        self.copy(inst)
        count = V(inst.count.type, inst.count.value) if inst.count else V(I64, "1")
        if count.type.text != "i64":
            count = self.b.cast("zext", count, I64)
        self.bind(inst, self.layout.allocate(self.b, self.b.size_of(inst.source_type, count), on_stack=True))

    # library calls on memory -------------------------------------------------
    def copy_memory(self, inst, move: bool):
        self.copy(inst)
        dst, src, size = inst.operands[0], inst.operands[1], inst.operands[2]
        if not self._on(dst):
            if self._on(src):
                raise self.fail("a copy from memory holding derivatives to memory adgen keeps none of")
            return
        d, s = self.shadow(dst), self.shadow(src) if self._on(src) else None
        length = V(size.type, size.value)
        if length.type.text != "i64":
            length = self.b.cast("zext", length, I64)
        length, s = self._self_copy(inst, d, s, length, move)
        if s is None:
            return self.layout.zero_memory(self.b, d, length)
        if self.layout.kind == INTERLEAVED:
            length = self.b.binary("mul", length, V(I64, str(self.n)))
        for dk, sk in zip(d, s):
            self.b.memcpy(dk, sk, length, move)

    def set_memory(self, inst):
        self.copy(inst)
        dst, size = inst.operands[0], inst.operands[2]
        if not self._on(dst):
            return
        length = V(size.type, size.value)
        if length.type.text != "i64":
            length = self.b.cast("zext", length, I64)
        d = self.shadow(dst)
        itself = self.itself(dst, d)
        self.layout.zero_memory(self.b, d, length if itself is None else self.b.select(itself, V(I64, "0"), length))

    def _self_copy(self, inst, d, s, length, move: bool):
        """A copy's length of shadow memory and its source's shadow (None: zeros), with runtime
        activity (shadows.py): nothing is written into a shadow that is its pointer, and the
        program aborts where the source carries derivatives there; from a source that is or has
        none, what holds no floats by its types (pointers, their own shadows) is copied, anything
        else zeroed."""
        if not self.flow.runtime:
            return length, s
        dst, src, size = inst.operands[0], inst.operands[1], inst.operands[2]
        typed = size.value.isdigit() and holds_no_floats(self.mode.module, self.fn, src.value, int(size.value))
        if s is None and typed and self.layout.itself(src.value):
            s = self.layout.itself(src.value)  # (pointers without shadows: their own)
        into = self.itself(dst, d)
        if into is not None:
            if self._on(src):
                carried = self.b.value(I1, f"xor {self_shadow(self.b, s, V(PTR, src.value))}, true")
                self.b.call(SELF_STORE, VOID, [self.b.binary("and", into, carried)])
            length = self.b.select(into, V(I64, "0"), length)
        source = self.itself(src, s) if s is not None else None
        if source is None or typed:
            return length, s
        for dk, sk in zip(d, s):  # (the tangents of memory without them: zero)
            self.b.memcpy(dk, sk, self.b.select(source, V(I64, "0"), length), move)
        return self.b.select(source, length, V(I64, "0")), None

    def allocate(self, inst):
        """Shadow memory for an allocator's: zeroed, N times the size, freed with the primal."""
        self.copy(inst)
        size = allocation_size(self.mode.module, inst, self.b)
        self.bind(inst, self.layout.allocate(self.b, size, on_stack=False, tracked=self._tracked()))

    def _tracked(self) -> bool:
        """Separate lanes at width N > 1 are one block that realloc cannot move without its size:
        their shadow has the reverse mode's header (adgen.shadow.alloc), which holds it."""
        if self.layout.parts == 1:
            return False
        self.mode.uses_runtime = True
        return True

    def reallocate(self, inst):
        """realloc: the shadow moves with the memory (its grown part, like the primal's, is
        written before it is read); memory that had no shadow gets a zeroed one, as from malloc."""
        ptr, size = reallocated(inst)
        size = V(size.type, size.value)
        if self._tracked():
            shadow = self.shadow(ptr) if self._on(ptr) else self.layout.zero(PTR)
            moved = self.layout.reallocate(self.b, inst.result, V(PTR, ptr.value), shadow, size)
            self.b.call('@"adgen.shadow.release"', VOID, [V(PTR, ptr.value), shadow[0]])
            return self.bind(inst, moved)
        self.copy(inst)
        if not self._on(ptr):
            return self.bind(inst, self.layout.allocate(self.b, size, on_stack=False))
        total = size if self.layout.kind != INTERLEAVED else self.b.binary("mul", size, V(I64, str(self.layout.width)))
        self.bind(inst, (self.b.call("@realloc", PTR, [self.shadow(ptr)[0], total]),))

    def release(self, inst):
        self.copy(inst)
        ptr = inst.operands[0]
        if self._on(ptr) and frees_characters(self.mode.module, inst):  # (a string's: adgen's shadow, or none)
            if self._tracked():
                self.b.call('@"adgen.shadow.dispose.text"', VOID, [self.shadow(ptr)[0]])
        elif self._on(ptr):
            self.b.call('@"adgen.shadow.dispose"' if self._tracked() else "@free", VOID, [self.shadow(ptr)[0]])


def _nonzero(b, parts) -> V:
    """i1: whether any lane of a tangent (floats, or the integer bits of floats) is not zero."""
    out = None
    for x in parts:
        t = x.type
        elem = t.elems[0] if t.kind == "vector" else t
        cmp = f"fcmp une {x}, zeroinitializer" if elem.kind == "float" and t.kind == "vector" else \
            f"fcmp une {x}, 0.0" if elem.kind == "float" else f"icmp ne {x}, zeroinitializer" \
            if t.kind == "vector" else f"icmp ne {x}, 0"
        one = b.value(vector(I1, t.count) if t.kind == "vector" else I1, cmp)
        if t.kind == "vector":
            one = b.value(I1, f"icmp ne {b.cast('bitcast', one, Type(f'i{t.count}', 'int', t.count))}, 0")
        out = one if out is None else b.binary("or", out, one)
    return out
