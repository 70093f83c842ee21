"""Forward mode's library calls on memory, and what each does to the shadows: memcpy and
memmove copy tangents, memset clears them, malloc/calloc allocate zeroed shadow memory, realloc
moves it, free releases it. A part of the forward writer (_FunctionWriter), kept apart."""

from __future__ import annotations

from adgen.ir_ad.ir.builder import V
from adgen.ir_ad.ir import I64, PTR, VOID
from adgen.ir_ad.shadows import INTERLEAVED, allocation_size, callee_name


class MemoryCalls:
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
        self.layout.zero_memory(self.b, self.shadow(dst), length)

    def allocate(self, inst):
        """Shadow memory for malloc/calloc: zeroed, N times the size, freed with the primal."""
        self.copy(inst)
        name = callee_name(inst)
        size = allocation_size(self.mode.module, name, [V(a.type, a.value) for a in inst.operands], self.b)
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
        ptr, size = inst.operands
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
        if self._on(ptr):
            self.b.call('@"adgen.shadow.dispose"' if self._tracked() else "@free", VOID, [self.shadow(ptr)[0]])
