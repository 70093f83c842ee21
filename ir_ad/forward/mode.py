"""Forward mode: for a function and a pattern of which arguments carry derivatives, a new
function computing the primal and, alongside it, N directional derivatives (tangents).

A value's tangent has the parts `shadows.Layout` describes: with separate shadows (`dual`) N
values of the value's own type, one scalar stream per lane, so that loops vectorize across
iterations as the primal does; with the interleaved layout (`dualv`) one `<N x T>` vector.
Pointers into memory that holds derivatives have shadows of the same layout.

Integers loaded from shadowed memory carry the shadow's bits, so `memcpy`-like copies that the
optimizer turned into i64 loads and stores move tangents too; integer arithmetic drops them.

The writer of one function is forward/function.py; its rules per instruction are in
forward/arithmetic.py, forward/memory.py and forward/call_sites.py."""

from __future__ import annotations

from adgen.ir_ad.ir.builder import Declarations, bare, local
from adgen.ir_ad.custom import forward_wrapper
from adgen.ir_ad.ir import Module, struct
from adgen.ir_ad.forward.derived import Derived, Pattern
from adgen.ir_ad.forward.function import FunctionWriter
from adgen.ir_ad.shadows import Layout, at_once, carries, with_runtime_activity

ZEROS = '@"adgen.zeros" = internal constant [64 x i64] zeroinitializer, align 64'  # 512 bytes to read

__all__ = ["ForwardMode", "Pattern", "Derived", "ZEROS"]


class ForwardMode:
    """Generates forward-mode derivative functions into `self.definitions`, memoized by pattern."""

    def __init__(self, module: Module, decls: Declarations, level: int = 1):
        self.module = module
        self.decls = decls
        self.tag = "" if level == 1 else str(level)  # in names: apart from an earlier level's, still in the module
        self.memo: dict[Pattern, Derived] = {}
        self.definitions: list[str] = []
        self.uses_zeros = False
        self.uses_runtime = False  # adgen's runtime (templates/runtime.ll.j2): shadows that realloc moves
        self._depth = 0  # derivations under way: the outermost is an entry's (see derive)

    def derive(self, pattern: Pattern) -> Derived:
        """The derivative function for a pattern, written once. A derivation (an entry's, and
        its callees') that meets a pointer without a shadow where it needs one is made again
        with runtime activity (shadows.py), what the first try made undone."""
        if pattern in self.memo or self._depth:
            return self._derive(pattern)
        memo, definitions, flags = dict(self.memo), len(self.definitions), (self.uses_zeros, self.uses_runtime)

        def undo() -> None:
            self.memo = memo
            del self.definitions[definitions:]
            self.uses_zeros, self.uses_runtime = flags

        return with_runtime_activity(self, pattern, undo)

    def _derive(self, pattern: Pattern) -> Derived:
        if pattern in self.memo:
            return self.memo[pattern]
        fn = self.module.functions[pattern.function]
        custom = self.module.custom.get(pattern.function)
        if custom is not None and custom.forwards:  # written by hand (or MPI's rules): a wrapper calls it
            name = "@" + local(f"{bare(fn.name)}'fwd{self.tag}.custom.{len(self.memo)}")[1:]
            text, ret, returns_tangent = forward_wrapper(self.module, custom, fn, name, pattern.active, pattern.width,
                                                     pattern.kind)
            self.memo[pattern] = derived = Derived(name, pattern, returns_tangent, ret)
            self.definitions.append(text)
            return derived
        layout = Layout(self.module, pattern.width, pattern.kind)
        ret_part = layout.part_type(fn.ret) if carries(self.module, fn.ret) else None
        ret_type = struct(fn.ret, *[ret_part] * layout.parts) if ret_part else fn.ret
        mask = "".join("d" if a else "c" for a in pattern.active)
        name = local(f"{bare(fn.name)}'fwd{self.tag}.{mask}.{pattern.kind[0]}{pattern.width}" +
                     (".runtime" if pattern.runtime else ""))
        derived = Derived("@" + name[1:], pattern, ret_part is not None, ret_type)
        self.memo[pattern] = derived
        self.definitions.append(at_once(FunctionWriter(self, fn, derived, layout).write()))  # (no log in forward mode)
        return derived
