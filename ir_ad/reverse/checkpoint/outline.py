"""Outlining a function's outermost loops for checkpointing (specs/abi.md, "Memory budgets"):
each loop becomes a call of a *loop function* that calls a *step function* once per iteration,
so that reverse mode can run single iterations again from a snapshot of the memory the loop
writes (pair.py writes the loop function's derivative).

The function `f` is copied to `f'checkpointed`, its loops replaced: the values a loop carries
from one iteration to the next (its header's phis) and the values defined in it and used after
it live in a *state* buffer on the copy's stack, the step's first parameter; every value defined
before the loop and used in it is a parameter of the step, named as in `f`. The step runs one
iteration: it loads the carried values, runs the loop's blocks, and returns 0 where the loop
went round again (having stored the next carried values) or the number of the exit it took
(having stored the values used after the loop). The loop function calls the step until it
returns an exit; the copy of `f` loads the values used after the loop and branches on the exit.
The instructions keep their source locations, so an error in a step names the user's line."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from adgen.ir_ad.analysis.flow import CFG
from adgen.ir_ad.analysis.loops import Loop, LoopForest
from adgen.ir_ad.ir import I32, PTR, Argument, Block, Function, Instruction, Module, Type, floating, parse_instruction
from adgen.ir_ad.ir.builder import local
from adgen.ir_ad.ir.edit import rename_incoming, rename_locals, retarget
from adgen.ir_ad.reverse.checkpoint.regions import (STATE, Extents, NotCheckpointed, declared_extents, leaves,
                                                    loop_extents)

@dataclass
class Outlined:
    """One loop of `f`, outlined. `inputs`: the step's parameters after the state, values of
    `f` defined before the loop; `carried` and `live_out`: values kept in the state, at `offsets`."""

    loop: Loop
    loop_fn: Function
    step: Function
    inputs: list[Argument]
    carried: list[Instruction]  # the header's phis
    live_out: list[tuple[str, Type]]
    offsets: dict[str, int] = field(default_factory=dict)
    state_size: int = 0
    pointers: list[tuple[int, list[str] | None]] = field(default_factory=list)  # the state's pointer slots:
    # offset, and the inputs the pointer is always one of (None: it is computed in the loop)


def outermost_loops(fn: Function) -> tuple[CFG, LoopForest, list[Loop]]:
    """The analyses of `fn`, and its loops that no loop contains."""
    cfg = CFG(fn)
    loops = LoopForest(fn, cfg)
    return cfg, loops, [loop for loop in loops.loops if loop.parent is None]


def outline(module: Module, fn: Function, name: str, sizes: tuple = ()) -> tuple[Function, list[tuple[Outlined, Extents]]]:
    """`fn` copied to `name` with each of its outermost loops outlined: the copy, and each loop
    with its extents (regions.py, found before it is outlined; `sizes`: `Derivation.sizes`)."""
    declared = declared_extents(fn, sizes)
    blocks = [Block(b.label, [copy.copy(i) for i in b.instructions]) for b in fn.blocks]
    new = Function(name, fn.ret, fn.params, blocks, False, None, "", fn.variadic, "internal")
    done = []
    while True:  # one loop at a time: an outlined loop is no longer a loop of the copy
        cfg, loops, outer = outermost_loops(new)
        if not outer:
            break
        k = len(done) + 1
        extents = loop_extents(module, new, cfg, loops, outer[0], declared)
        used = {v for group in extents.written.values() for e in group for v in leaves(e)} | \
            {v for reads in extents.read_only.values() for _, e in reads if e is not None for v in leaves(e)}
        stem = f"{name[:-1]}.{k}\"" if name.endswith('"') else f"{name}.{k}"
        done.append((_outline_one(new, outer[0], cfg, stem, k, used), extents))
    new.text = function_text(new)
    return new, done


def _outline_one(f: Function, loop: Loop, cfg: CFG, stem: str, k: int, used: set[str]) -> Outlined:
    """One loop outlined; `used`: values its snapshot's bounds are computed from (step parameters
    too, though the loop may not name them: a parameter whose length `@size` gives)."""
    _vectors_made_inside(f, loop)
    body = [b for b in f.blocks if b.label in loop.body]
    outside = [b for b in f.blocks if b.label not in loop.body]
    header = next(b for b in body if b.label == loop.header)
    defined_in = {i.result for b in body for i in b.instructions if i.result}
    types = {p.name: p.type for p in f.params}
    types |= {i.result: i.type for b in f.blocks for i in b.instructions if i.result}
    carried = [i for i in header.instructions if i.opcode == "phi"]
    inputs = []
    for b in body:
        for inst in b.instructions:
            for v in sorted(inst.mentions()):
                if v in types and v not in defined_in and v not in {a.name for a in inputs}:
                    inputs.append(next((p for p in f.params if p.name == v), None) or Argument(types[v], v, {}))
    for v in sorted(used):
        if v in types and v not in defined_in and v not in {a.name for a in inputs}:
            inputs.append(next((p for p in f.params if p.name == v), None) or Argument(types[v], v, {}))
    live_out = []
    for b in outside:
        for inst in b.instructions:
            for v in sorted(inst.mentions()):
                if v in defined_in and v not in {n for n, _ in live_out}:
                    live_out.append((v, types[v]))
    crossing = [a.type for a in inputs] + [p.type for p in carried] + [t for _, t in live_out]
    vector = next((t for t in crossing if floating(t) and t.kind == "vector"), None)
    if vector is not None:  # (the step is a call, whose vector arguments carry no derivatives)
        raise NotCheckpointed(next((i for i in body[0].instructions if i.dbg), None),
                              f"a vector value ('{vector.text}') going into or out of a loop checkpointed to keep "
                              "the gradient within its memory budget (vector values are differentiated within "
                              "a function, and the loop's step is a function of its own)")
    out = Outlined(loop, None, None, inputs, carried, live_out)
    offset = 0
    for name, t in [(p.result, p.type) for p in carried] + live_out:
        size = _size(t)
        if size is None:
            raise NotCheckpointed(next((i for i in body[0].instructions if i.dbg), None),
                                  f"a value of type {t.text} carried from one iteration to the next, in a loop "
                                  "checkpointed to keep the gradient within its memory budget")
        out.offsets[name] = offset
        offset += (size + 15) // 16 * 16
    out.state_size = max(offset, 16)
    phis = {p.result: p for p in carried}
    for name, t in [(p.result, p.type) for p in carried] + live_out:
        if t.kind == "ptr":
            out.pointers.append((out.offsets[name], _passed_around(name, phis, {a.name for a in inputs})))

    exits = list(dict.fromkeys(loop.exits))
    out.step = _step(out, body, header, exits, cfg, stem.replace("'checkpointed", "'step"))
    out.loop_fn = _loop_function(out, stem.replace("'checkpointed", "'loop"))
    _replace(f, out, exits, k, next((i.dbg for b in body for i in b.instructions if i.dbg), None))
    return out


# Operations on values that compute nothing the step could not compute again from their operands.
_REMADE = {"insertelement", "shufflevector", "extractelement", "fadd", "fsub", "fmul", "fdiv", "fneg", "select",
           "bitcast", "freeze", "sitofp", "uitofp", "fpext", "fptrunc"}


def _vectors_made_inside(f: Function, loop: Loop) -> None:
    """The loop's uses of floating-point vectors made before it, by operations on scalars (a
    splat of a value LLVM hoisted out of the loop), made again at the top of its header from
    those scalars, so that what goes into the step is scalars: a vector argument of the step
    would carry no derivatives (a vector value is differentiated within a function)."""
    defs = {i.result: i for b in f.blocks for i in b.instructions if i.result}
    inside = [i for b in f.blocks if b.label in loop.body for i in b.instructions]
    defined_in = {i.result for i in inside if i.result}
    made: dict[str, str] = {}  # a vector made before the loop -> its copy's name
    order: list[Instruction] = []

    def remake(value: str) -> bool:
        if value in made:
            return True
        inst = defs.get(value)
        if inst is None or inst.opcode not in _REMADE or value in defined_in:
            return False
        for op in inst.operands:
            if op.value in defs and op.value not in defined_in and op.type.kind == "vector" and not remake(op.value):
                return False
        made[value] = local(f"{value.lstrip('%').strip(chr(34))}'in.{bare_label(loop.header)}")
        order.append(inst)
        return True

    wanted = sorted({v for i in inside for v in i.mentions() if v in defs and v not in defined_in
                     and defs[v].type.kind == "vector" and floating(defs[v].type)})
    if not [v for v in wanted if remake(v)]:
        return
    rename = lambda name: made.get("%" + name, made.get(f'%"{name}"'))
    rename_in = lambda text: rename_locals(text, lambda n: rename(n)[1:].strip('"') if rename(n) else None)
    copies = [parse_instruction(f"{made[i.result]} = " + rename_in(i.text.split("=", 1)[1].strip())) for i in order]
    header = next(b for b in f.blocks if b.label == loop.header)
    for b in f.blocks:
        if b.label not in loop.body:
            continue
        for j, inst in enumerate(b.instructions):
            if inst.opcode == "phi" and b is header:
                continue  # (what it takes from before the loop stays; from inside, a value made inside)
            if any(v in made for v in inst.mentions()):
                renamed = parse_instruction(rename_in(inst.text))
                renamed.dbg = inst.dbg
                b.instructions[j] = renamed
    phis = sum(1 for i in header.instructions if i.opcode == "phi")
    header.instructions[phis:phis] = copies


def _step(out: Outlined, body: list[Block], header: Block, exits: list[tuple[str, str]], cfg: CFG,
          name: str) -> Function:
    """The step: load the carried values, the loop's blocks, a return for each way out of an
    iteration (0 where it goes round again, the exit's number where it leaves)."""
    loop, carried, live_out = out.loop, out.carried, out.live_out
    entry = [i for p in carried for i in _loads(p.type, p.result, out.offsets[p.result])]
    blocks, tails = [Block(_ck("entry"), entry + [parse_instruction(f"br label {loop.header}")])], []
    names = {a.name for a in out.inputs}
    for b in body:
        insts = [i for i in b.instructions if not (b is header and i.opcode == "phi") and
                 not _lifetime_of(i, names)]
        term = insts[-1]
        text = term.text
        if loop.header in term.targets:
            nxt = _ck(f"next.{bare_label(b.label)}")
            text = retarget(text, loop.header, nxt)
            stores = [s for p in carried
                      for s in _stores(p.type, _incoming(p, b.label), out.offsets[p.result], nxt)]
            tails.append(Block(nxt, stores + [parse_instruction("ret i32 0")]))
        for j, (inside, target) in enumerate(exits, 1):
            if inside == b.label:
                way = _ck(f"exit.{j}")
                text = retarget(text, target, way)
                kept = [(v, t) for v, t in live_out if _available(cfg, v, inside)]
                stores = [s for v, t in kept for s in _stores(t, v, out.offsets[v], way)]
                tails.append(Block(way, stores + [parse_instruction(f"ret i32 {j}")]))
        if text != term.text:
            new_term = parse_instruction(text)
            new_term.dbg = term.dbg
            insts = insts[:-1] + [new_term]
        blocks.append(Block(b.label, insts))
    step = Function(name, I32, [Argument(PTR, STATE, {})] + out.inputs, blocks + tails, False, None, "", False,
                    "internal")
    step.text = function_text(step)
    return step


def _loop_function(out: Outlined, name: str) -> Function:
    """The loop function: the step, called until it returns an exit."""
    params = out.step.params
    call = f"call i32 {out.step.name}({', '.join(f'{p.type.text} {p.name}' for p in params)})"
    again, more, exit_, done = _ck("again"), _ck("more"), _ck("exit"), _ck("done")
    blocks = [Block(_ck("entry"), [parse_instruction(f"br label {again}")]),
              Block(again, [parse_instruction(f"{exit_} = {call}"),
                            parse_instruction(f"{more} = icmp eq i32 {exit_}, 0"),
                            parse_instruction(f"br i1 {more}, label {again}, label {done}")]),
              Block(done, [parse_instruction(f"ret i32 {exit_}")])]
    fn = Function(name, I32, params, blocks, False, None, "", False, "internal")
    fn.text = function_text(fn)
    return fn


def _replace(f: Function, out: Outlined, exits: list[tuple[str, str]], k: int, dbg: str | None) -> None:
    """In `f`: the loop's blocks replaced by storing the initial carried values, the call of the
    loop function, the loads of the values used after it and a branch to the exit it took."""
    loop = out.loop
    state, run = _ck(f"state.{k}"), _ck(f"run.{k}")
    f.blocks[0].instructions.insert(0, parse_instruction(f"{state} = alloca [{out.state_size} x i8], align 16"))
    kept = [b for b in f.blocks if b.label not in loop.body]
    added = []
    for entry in loop.entries:
        block = next(b for b in kept if b.label == entry)
        pre = _ck(f"enter.{k}.{bare_label(entry)}")
        term = block.instructions[-1]
        new_term = parse_instruction(retarget(term.text, loop.header, pre))
        new_term.dbg = term.dbg
        block.instructions[-1] = new_term
        stores = [s for p in out.carried
                  for s in _stores(p.type, _incoming(p, entry), out.offsets[p.result], pre, state)]
        added.append(Block(pre, stores + [parse_instruction(f"br label {run}")]))
    args = ", ".join(f"{p.type.text} {p.name}" for p in [Argument(PTR, state, {})] + out.inputs)
    call = parse_instruction(f"{_ck(f'exit.{k}')} = call i32 {out.loop_fn.name}({args})")
    call.dbg = dbg
    loads = [i for v, t in out.live_out for i in _loads(t, v, out.offsets[v], state)]
    outs = [_ck(f"out.{k}.{j}") for j in range(1, len(exits) + 1)]
    cases = " ".join(f"i32 {j}, label {o}" for j, o in enumerate(outs, 1) if j > 1)
    switch = parse_instruction(f"switch i32 {_ck(f'exit.{k}')}, label {outs[0]} [{cases}]")
    added.append(Block(run, [call] + loads + [switch]))
    for (inside, target), o in zip(exits, outs):
        added.append(Block(o, [parse_instruction(f"br label {target}")]))
        block = next(b for b in kept if b.label == target)
        for j, inst in enumerate(block.instructions):
            if inst.opcode == "phi" and any(frm == inside for _, frm in inst.incoming):
                renamed = parse_instruction(rename_incoming(inst.text, inside, o))
                renamed.dbg = inst.dbg
                block.instructions[j] = renamed
    at = max(i for i, b in enumerate(f.blocks) if b.label in loop.body) + 1
    position = [b for b in f.blocks[:at] if b.label not in loop.body]
    f.blocks[:] = position + added + [b for b in f.blocks[at:] if b.label not in loop.body]


def _lifetime_of(inst: Instruction, inputs: set[str]) -> bool:
    """A lifetime marker of a local array of `f` (`llvm.lifetime.start`): in the step, the array is
    a parameter, which LLVM's markers cannot name (they are hints: the step goes without)."""
    return inst.opcode == "call" and inst.callee.startswith("@llvm.lifetime.") and \
        any(o.value in inputs for o in inst.operands)


def _passed_around(value: str, phis: dict[str, Instruction], inputs: set[str]) -> list[str] | None:
    """The inputs a carried pointer is always one of, where the header's phis only pass them
    around (pointers swapped each iteration); None where it is computed in the loop."""
    members, seen, todo = [], {value}, [value]
    while todo:
        phi = phis.get(todo.pop())
        if phi is None:
            return None
        for v, _ in phi.incoming:
            if v.value in phis:
                if v.value not in seen:
                    seen.add(v.value)
                    todo.append(v.value)
            elif v.value in inputs:
                members += [v.value] if v.value not in members else []
            else:
                return None
    return members


def _incoming(phi: Instruction, block: str) -> str:
    return next(v.value for v, frm in phi.incoming if frm == block)


def _available(cfg: CFG, value: str, block: str) -> bool:
    """Whether `value` may be used at the end of `block` (its definition dominates it)."""
    return cfg.dominates(cfg.block_of[value], block)


def _slot(offset: int, state: str, hint: str) -> tuple[list[Instruction], str]:
    if offset == 0:
        return [], state
    name = _ck(f"at.{hint}")
    return [parse_instruction(f"{name} = getelementptr inbounds i8, ptr {state}, i64 {offset}")], name


def _loads(t: Type, value: str, offset: int, state: str = STATE) -> list[Instruction]:
    """`value` loaded from its slot of the state (slots are 16-byte aligned)."""
    pre, at = _slot(offset, state, bare_label(value) + ".in")
    return pre + [parse_instruction(f"{value} = load {t.text}, ptr {at}, align 16")]


def _stores(t: Type, value: str, offset: int, block: str, state: str = STATE) -> list[Instruction]:
    """`value` stored into the slot at `offset`, in `block` (which names the address)."""
    pre, at = _slot(offset, state, f"{bare_label(block)}.{offset}")
    return pre + [parse_instruction(f"store {t.text} {value}, ptr {at}, align 16")]


def _size(t: Type) -> int | None:
    if t.kind == "ptr":
        return 8
    if t.kind == "int":
        return max(1, (t.bits + 7) // 8)
    if t.kind == "float":
        return {"half": 2, "bfloat": 2, "float": 4, "double": 8, "x86_fp80": 16, "fp128": 16}.get(t.text)
    if t.kind == "vector":
        e = _size(t.elems[0])
        return None if e is None else e * t.count
    return None


def _ck(name: str) -> str:
    """A name of adgen's in the functions it writes: no value of the sources has a quote in its name."""
    return local(f"ck'{name}")


def bare_label(label: str) -> str:
    return label.lstrip("%").strip('"')


def function_text(fn: Function) -> str:
    """The definition, instructions as the model holds them (without metadata attachments)."""
    params = ", ".join(f"{p.type.text} {p.name}" for p in fn.params)
    lines = [f"define internal {fn.ret.text} {fn.name}({params}) {{"]
    for b in fn.blocks:
        lines.append(f"{b.label[1:]}:")
        lines += ["  " + i.text for i in b.instructions]
    return "\n".join(lines + ["}"])
