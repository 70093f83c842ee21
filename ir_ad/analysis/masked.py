"""Values whose adjoint may be a masked zero: the operands a select may not choose, those of a
rule whose partials give an argument a zero by comparison (fmax, fmin, fdim), and those some path
computes but does not use (`_maybe_unused`: the incoming value of a phi on an edge not taken, a
value hoisted before a branch or a loop that may not run), with everything they are computed
from. The optimizer computes both sides of a branch and selects one
(`x > 0 ? sqrt(x) : 0.5 * x`), so the side not chosen gets a zero adjoint while its partials may
be infinite or NaN (sqrt of -1, the 1/x of log at 0), and zero times those would turn a finite
gradient into NaN. The reverse sweep gives the values of this slice a "strong zero" product
(exactly zero where the adjoint is zero); every other partial is a plain product.

Across calls not inlined (a checkpointed loop's step is one): the arguments a callee may mask
(`maskable_params`, a summary of its own slice) are masked in the caller, an argument a callee
may not read (`unread_params`) is not a use that reads it on that path; a callee whose
result the caller may mask masks what it returns (`ret_masked`, part of its derivative's
pattern)."""

from __future__ import annotations

from weakref import WeakKeyDictionary

from adgen.ir_ad.analysis.flow import CFG, Memory
from adgen.ir_ad.calls import DEFINED, kind_of
from adgen.ir_ad.ir import Function, Module, floating, intrinsic_family
from adgen.ir_ad.rules import rule_for


def masked_slice(fn: Function, cfg: CFG, memory: Memory, floaty: dict, module: Module | None = None,
                 ret_masked: bool = False) -> frozenset[str]:
    """The floating values that are transitive SSA ancestors of an operand some instruction may
    mask. A load in the slice brings in the values stored where it may read (by the pointers'
    bases), since their adjoints come back through the same shadow memory. With `module`, the
    arguments of calls to its functions that those may mask; with `ret_masked`, what `fn`
    returns."""
    stores = [inst for inst in fn.instructions() if inst.opcode == "store" and inst.operands[0].value in floaty]
    work = []
    for inst in fn.instructions():
        if inst.opcode == "select":
            work += [inst.operands[1].value, inst.operands[2].value]
        elif inst.opcode == "call" and (rule := rule_for(inst.callee)) is not None and rule.masks:
            work += [o.value for o in inst.operands]
        elif inst.opcode == "call" and module is not None and kind_of(module, inst) == DEFINED:
            maskable = maskable_params(module, module.functions[inst.callee], False)
            work += [o.value for k, o in enumerate(inst.operands) if k in maskable]
        elif inst.opcode == "ret" and ret_masked and inst.operands:
            work.append(inst.operands[0].value)
    work += _maybe_unused(fn, cfg, floaty, module=module)
    found: set[str] = set()
    while work:
        v = work.pop()
        if v in found or v not in floaty:
            continue
        found.add(v)
        inst = cfg.defs.get(v)
        if inst is None:
            continue
        if inst.opcode == "phi":
            work += [x.value for x, _ in inst.incoming]
        elif inst.opcode == "load":
            read = memory.base(inst.operands[0].value)
            work += [s.operands[0].value for s in stores if memory.may_alias(read, memory.base(s.operands[1].value))]
        else:
            work += [o.value for o in inst.operands]
    return frozenset(found)


# Uses that pass no adjoint back to what they use.
_NOT_BACK = {"fcmp", "icmp", "fptosi", "fptoui"}


def _maybe_unused(fn: Function, cfg: CFG, floaty: dict, params: bool = False, module: Module | None = None) -> list[str]:
    """The floating values some path takes from where they are computed to a return, or to
    their own definition again (the next iteration's value), without a use that passes an
    adjoint back to them: there their adjoint is zero, where partials may be infinite (the
    recovery of infinities in a complex product, hoisted out of its loop and read on a branch
    the loop does not take: tests/fuzz_regressions/f2643_108979.c)."""
    uses: dict[str, list[tuple[str, int]]] = {}  # value -> (block, index) of its uses, phis left out
    edges: dict[str, set[tuple[str, str]]] = {}  # value -> the edges (from, to) on which a phi reads it
    for b in fn.blocks:
        for k, inst in enumerate(b.instructions):
            if inst.opcode == "phi":
                for v, frm in inst.incoming:
                    if v.value in floaty:
                        edges.setdefault(v.value, set()).add((frm, b.label))
            elif inst.opcode not in _NOT_BACK:
                unread = unread_params(module, module.functions[inst.callee]) \
                    if module is not None and inst.opcode == "call" and kind_of(module, inst) == DEFINED else ()
                for j, o in enumerate(inst.operands):
                    if o.value in floaty and j not in unread:  # (an argument the callee may not read: no use)
                        uses.setdefault(o.value, []).append((b.label, k))
    found = []
    start = {p.name: (cfg.entry, -1) for p in fn.params}
    tame: dict[str, bool] = {}
    for v in ([p.name for p in fn.params if p.name in floaty] if params else floaty):
        if not params and _tame(v, cfg, floaty, tame):
            continue  # its partials are finite wherever its inputs are: a zero adjoint gives zeros
        home, at = start[v] if v in start else cfg.index_in_block[id(cfg.defs[v])] if v in cfg.defs else (None, 0)
        if home is None or home in cfg.doomed:
            continue
        used = {}
        for block, k in uses.get(v, []):
            used.setdefault(block, []).append(k)
        if any(k > at for k in used.get(home, [])):
            continue  # used after it in its own block: on every path
        if _escapes(cfg, home, at, used, edges.get(v, set())):
            found.append(v)
    return found


# Operations whose partials are finite wherever their operands are (sums, products, the bounded
# derivatives of sin and cos, conversions), and calls of these intrinsics.
_TAME = {"fadd", "fsub", "fneg", "fmul", "sitofp", "uitofp", "fpext", "fptrunc", "load", "phi", "select",
         "extractelement", "insertelement", "shufflevector", "bitcast", "freeze"}
_TAME_CALLS = {"fmuladd", "fma", "fabs", "copysign", "sin", "cos", "minnum", "maxnum", "minimum", "maximum"}


def _tame(v: str, cfg: CFG, floaty: dict, memo: dict[str, bool]) -> bool:
    """Whether a value and every floating value it is computed from come of tame operations only
    (`_TAME`, with no infinite or NaN constant), so that no partial on the way is infinite or NaN
    where the leaves (arguments, loads) are finite: then a zero adjoint propagates zeros, and
    a value some path does not read needs no strong zero. (Taking every such value would cost
    bench/kernels.c's reprojection error 40% for its sum of squares that one branch does not read.)"""
    work, order = [v], []
    while work:
        x = work.pop()
        if x in memo or x not in floaty:
            continue
        inst = cfg.defs.get(x)
        if inst is None:
            memo[x] = True  # an argument
            continue
        family = intrinsic_family(inst.callee) if inst.opcode == "call" else None
        if (inst.opcode not in _TAME and family not in _TAME_CALLS) or any(_infinite(o.value) for o in inst.operands):
            memo[x] = False
            continue
        memo[x] = True  # (provisionally: loops through phis)
        order.append(x)
        work += [o.value for o in inst.operands] + [i.value for i, _ in inst.incoming]
    changed = True
    while changed:  # (to a fixed point: a phi's value comes back around its loop)
        changed = False
        for x in reversed(order):
            inst = cfg.defs[x]
            now = memo[x] and all(memo.get(o.value, True) for o in [*inst.operands, *(i for i, _ in inst.incoming)])
            changed |= now != memo[x]
            memo[x] = now
    return memo[v]


def _infinite(value: str) -> bool:
    return value in ("0x7FF0000000000000", "0xFFF0000000000000") or value.startswith("0x7FF8") or \
        value.lower() in ("inf", "-inf", "nan")


def _escapes(cfg: CFG, home: str, at: int, used: dict[str, list[int]], edges: set) -> bool:
    """Whether a path from just after instruction `at` of block `home` reaches a return, or that
    instruction again, before a use (`used`: indices by block; `edges`: phi uses on edges)."""
    if not cfg.succs[home]:
        return True  # its own block returns, with no use after it (the caller saw to that)
    seen, work = set(), [s for s in cfg.succs[home] if (home, s) not in edges]
    while work:
        b = work.pop()
        if b in seen or b in cfg.doomed:
            continue
        seen.add(b)
        ks = used.get(b, [])
        if b == home:
            if any(k < at for k in ks):
                continue
            return True  # computed again, the value before it unused
        if ks:
            continue
        if not cfg.succs[b]:
            return True  # a return
        work += [s for s in cfg.succs[b] if (b, s) not in edges]
    return False


def _floating_values(fn: Function) -> dict:
    """Every floating parameter and value of `fn`: a summary counts them all (no activity analysis)."""
    floaty = {p.name: p.type for p in fn.params if floating(p.type)}
    return floaty | {i.result: i.type for i in fn.instructions() if i.result and floating(i.type)}


_SUMMARIES: WeakKeyDictionary = WeakKeyDictionary()  # module -> {(function, ret_masked or "unread"): positions}


def unread_params(module: Module, fn: Function) -> frozenset[int]:
    """The positions of `fn`'s floating parameters that some path through it does not read
    (`_maybe_unused` of the parameters, tame or not: whether their partials may be infinite is
    the caller's to say). A caller passing a value there does not read it on that path (a complex
    product's recovery of infinities hoisted before a checkpointed loop, its step the callee)."""
    if fn.declaration:  # (its derivative written by hand, no body here: it reads them all)
        return frozenset()
    done = _SUMMARIES.setdefault(module, {})
    key = (fn.name, "unread")
    if key not in done:
        done[key] = frozenset()  # (while in progress: a recursion reads its arguments)
        cfg, floaty = CFG(fn), _floating_values(fn)
        unread = set(_maybe_unused(fn, cfg, floaty, params=True, module=module))
        done[key] = frozenset(k for k, p in enumerate(fn.params) if p.name in unread)
    return done[key]


def maskable_params(module: Module, fn: Function, ret_masked: bool) -> frozenset[int]:
    """The positions of `fn`'s floating parameters that its masked slice holds: where a caller
    passes a value there, that value's adjoint may be a masked zero. Every floating value of `fn`
    counts (no activity analysis); a function called while its own summary is being made (a
    recursion), or one declared only (its derivative written by hand), is taken to mask every
    floating parameter."""
    if fn.declaration:  # (a function with a derivative by hand and no body here: any of them, as for a recursion)
        return frozenset(k for k, p in enumerate(fn.params) if floating(p.type))
    done = _SUMMARIES.setdefault(module, {})
    key = (fn.name, ret_masked)
    if key not in done:
        done[key] = frozenset(k for k, p in enumerate(fn.params) if floating(p.type))  # (while in progress)
        cfg, floaty = CFG(fn), _floating_values(fn)
        found = masked_slice(fn, cfg, Memory(fn, cfg, module), floaty, module, ret_masked)
        done[key] = frozenset(k for k, p in enumerate(fn.params) if p.name in found)
    return done[key]


