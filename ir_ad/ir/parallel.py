"""OpenMP's parallel regions, as clang lowers them with -fopenmp: `__kmpc_fork_call(loc, n,
outlined, captures...)` runs `outlined(&gtid, &bound_tid, captures...)` on every thread of a
team. Differentiation sees them serialized: before anything reads the code, each fork becomes
the runtime's serialized region around a direct call of the outlined function (what clang
itself writes for `parallel if(0)`),

    gtid = __kmpc_global_thread_num(loc)
    __kmpc_serialized_parallel(loc, gtid)
    outlined(&gtid, &zero, captures...)
    __kmpc_end_serialized_parallel(loc, gtid)

so that every analysis and both modes see an ordinary call, and a worksharing loop inside runs
all its iterations on the one thread; a reduction becomes a critical section. For forward mode
alone the outlined functions stay out of line, and `fork_again` turns the calls of their
derivatives back into forks after differentiation: each thread computes the tangents of the
iterations it runs in the primal. Where reverse mode is made too, they are inlined, and a static
schedule's bounds are written out as the runtime computes them for a team of one
(specs/openmp.md)."""

from __future__ import annotations

import re

from adgen.ir_ad.ir.instructions import parse_instruction, strip_metadata

FORK = "@__kmpc_fork_call"
_SERIAL, _END_SERIAL = "@__kmpc_serialized_parallel", "@__kmpc_end_serialized_parallel"
_DECLARATIONS = {"@__kmpc_global_thread_num": "declare i32 @__kmpc_global_thread_num(ptr)",
                 _SERIAL: f"declare void {_SERIAL}(ptr, i32)", _END_SERIAL: f"declare void {_END_SERIAL}(ptr, i32)",
                 "@__kmpc_critical": "declare void @__kmpc_critical(ptr, i32, ptr)",
                 "@__kmpc_end_critical": "declare void @__kmpc_end_critical(ptr, i32, ptr)",
                 "@__kmpc_barrier": "declare void @__kmpc_barrier(ptr, i32)"}
_REDUCTION = r"call (?:i32|void) @__kmpc_(?:end_)?reduce(?:_nowait)?\("
_TID = "adgen.omp.tid."  # the names serialization gives its values, numbered
_GTID = "adgen.omp.gtid."
_ZERO = "adgen.omp.zero."


def serialize(text: str, out_of_line: bool = True) -> tuple[str, set[str]]:
    """The module's text with each parallel region serialized, and the IR names of the outlined
    functions (`@f.omp_outlined`): kept out of line where `out_of_line`, so that forward
    derivatives fork again; else inlined into their callers like any small function, for
    reverse mode, whose analyses then see a region's loops as the caller's own (the range
    analysis, the undo log: out of line, the loads of a region's captured arrays, read through
    stack slots and written by the caller afterwards, were stored for the reverse sweep, and
    bench/programs/gpt2.c's gradient with its matrix products and attention parallel took 1 GB
    and 10x the time without the pragmas; inlined, 45 MB, as without them)."""
    out: list[str] = []
    outlined: set[str] = set()
    entry_at = None  # where the allocas of the current function go
    count = 0
    for line in text.split("\n"):
        if line.startswith("define "):
            out.append(line)
            entry_at = len(out)
            continue
        if entry_at is not None and len(out) == entry_at and re.match(r"^[-\w.$\"]+:", line):
            out.append(line)  # the entry block's label: the allocas go after it
            entry_at = len(out)
            continue
        if "@__kmpc_" in line and line.startswith("  ") and re.search(_REDUCTION, line):
            out += _reduction_in_critical_section(line)
            continue
        if not out_of_line and "@__kmpc_for_static_init_" in line and line.startswith("  "):
            count += 1
            out += _static_schedule_of_one(line, count)
            continue
        if f"{FORK}(" not in line or not line.startswith("  "):
            out.append(line)
            continue
        inst = parse_instruction(line)
        loc, _, function, *captures = inst.operands
        attached = line[len(strip_metadata(line)[0]):]  # `, !dbg !N` and the like
        k = count = count + 1
        tid, gtid, zero = f'%"{_TID}{k}"', f'%"{_GTID}{k}"', f'%"{_ZERO}{k}"'
        out[entry_at:entry_at] = [f"  {tid} = alloca i32, align 4", f"  {zero} = alloca i32, align 4",
                                  f"  store i32 0, ptr {zero}, align 4"]
        args = ", ".join([f"ptr {tid}", f"ptr {zero}", *(f"{a.type.text} {a.value}" for a in captures)])
        out += [f"  {gtid} = call i32 @__kmpc_global_thread_num(ptr {loc.value})",
                f"  store i32 {gtid}, ptr {tid}, align 4",
                f"  call void {_SERIAL}(ptr {loc.value}, i32 {gtid})",
                f"  call void {function.value}({args}){attached}",
                f"  call void {_END_SERIAL}(ptr {loc.value}, i32 {gtid})"]
        outlined.add(function.value)
    text = _out_of_line("\n".join(out), outlined) if out_of_line else _inlined("\n".join(out), outlined)
    missing = [d for name, d in _DECLARATIONS.items() if not re.search(r"^declare [^\n]*" + re.escape(name) + r"\(",
                                                                        text, re.M)]
    return text + "\n" + "\n".join(missing) + "\n", outlined


def _reduction_in_critical_section(line: str) -> list[str]:
    """A reduction's runtime call made a critical section: `__kmpc_reduce[_nowait]` (which picks
    how each thread adds its private copy to the shared variable: 1, in a critical section or by
    a tree of threads whose combining function only the runtime calls; 2, atomically) becomes
    entering the reduction's critical section and the answer 1, `__kmpc_end_reduce[_nowait]`
    leaving it (and the barrier the variant without `nowait` implies). Every thread then
    combines its copy under the lock, in code both modes differentiate, for any operator
    (`+`, `*`, `min`, `max`), and the atomic path, which neither does, is dead code."""
    inst = parse_instruction(line)
    args = inst.operands
    name = inst.callee.lstrip("@")
    if name.startswith("__kmpc_reduce"):  # (loc, gtid, n, size, data, combine, lock)
        return [f"  call void @__kmpc_critical(ptr {args[0].value}, i32 {args[1].value}, ptr {args[6].value})",
                f"  {inst.result} = add i32 0, 1"]
    closing = [f"  call void @__kmpc_end_critical(ptr {args[0].value}, i32 {args[1].value}, ptr {args[2].value})"]
    if name == "__kmpc_end_reduce":  # (loc, gtid, lock)
        closing.append(f"  call void @__kmpc_barrier(ptr {args[0].value}, i32 {args[1].value})")
    return closing


def _static_schedule_of_one(line: str, k: int) -> list[str]:
    """`__kmpc_for_static_init_{4,4u,8,8u}(loc, gtid, schedule, plast, plower, pupper, pstride,
    incr, chunk)` as the runtime computes it for a team of one (a serialized region, any static
    schedule): the bounds stay, the thread runs the last iteration (unless there is none), the
    stride is the trip count (or `incr` for an empty loop). Written out, so that the optimizer
    sees the loop run from its start to its end, and the range analysis bounds its accesses by
    them (through the runtime's call, every load of the loop was stored for the reverse sweep)."""
    inst = parse_instruction(line)
    _, _, _, plast, plower, pupper, pstride, incr, _ = inst.operands
    t = incr.type.text
    less = "ult" if inst.callee.endswith("u") else "slt"
    v = lambda what: f'%"adgen.omp.static.{k}.{what}"'
    return [f"  {v('lower')} = load {t}, ptr {plower.value}, align 4",
            f"  {v('upper')} = load {t}, ptr {pupper.value}, align 4",
            f"  {v('up')} = icmp sgt {t} {incr.value}, 0",
            f"  {v('below')} = icmp {less} {t} {v('upper')}, {v('lower')}",
            f"  {v('above')} = icmp {less} {t} {v('lower')}, {v('upper')}",
            f"  {v('empty')} = select i1 {v('up')}, i1 {v('below')}, i1 {v('above')}",
            f"  {v('last')} = select i1 {v('empty')}, i32 0, i32 1",
            f"  store i32 {v('last')}, ptr {plast.value}, align 4",
            f"  {v('span')} = sub {t} {v('upper')}, {v('lower')}",
            f"  {v('count')} = add {t} {v('span')}, 1",
            f"  {v('back')} = sub {t} {v('span')}, 1",
            f"  {v('trip')} = select i1 {v('up')}, {t} {v('count')}, {t} {v('back')}",
            f"  {v('stride')} = select i1 {v('empty')}, {t} {incr.value}, {t} {v('trip')}",
            f"  store {t} {v('stride')}, ptr {pstride.value}, align 4"]


def _inlined(text: str, functions: set[str]) -> str:
    """The text with `functions` always inlined (clang marks outlined regions so at -O0 only)."""
    return _with_group(text, functions, lambda kept: [*(a for a in kept if a != "noinline"), "alwaysinline"], False)


def _out_of_line(text: str, functions: set[str]) -> str:
    """The text with `functions` external and never inlined (their parameters then those the
    runtime passes)."""
    return _with_group(text, functions, lambda kept: [*(a for a in kept if a != "alwaysinline"), "noinline"], True)


def _with_group(text: str, functions: set[str], attributes, external: bool) -> str:
    """The text with each of `functions`'s `define` line given an attribute group of its own:
    `attributes(its old group's attributes)`; made external where `external`."""
    groups = {m.group(1): m.group(2) for m in re.finditer(r"^attributes #(\d+) = \{ (.*) \}$", text, re.M)}
    fresh = max((int(n) for n in groups), default=0)
    added = []

    def edited(m: re.Match) -> str:
        nonlocal fresh
        line = m.group(0)
        name = re.search(r"(@(?:\"[^\"]*\"|[-\w.$]+))\(", line).group(1)
        if name not in functions:
            return line
        if external:
            line = re.sub(r"^define (?:internal |private )", "define ", line)
        group = re.search(r"\) #(\d+)", line)
        kept = [a for a in (groups.get(group.group(1), "").split(" ") if group else []) if a]
        fresh += 1
        added.append(f"attributes #{fresh} = {{ {' '.join(attributes(kept))} }}")
        return line[:group.start()] + f") #{fresh}" + line[group.end():] if group else line.replace(") {", f") #{fresh} {{", 1)

    text = re.sub(r"^define [^\n]*$", edited, text, flags=re.M)
    return text + "\n" + "\n".join(added)


def fork_again(text: str, outlined: set[str]) -> str:
    """The text with each call of a forward derivative of an outlined function (`@"f.omp_outlined'fwd..."`),
    in its serialized region, made a fork of that derivative: the region's brackets dropped,
    the call's first two arguments (the thread ids, which the runtime passes) left out."""
    prefixes = tuple(f'@"{name.lstrip("@").strip(chr(34))}\'fwd' for name in outlined)
    if not prefixes:
        return text
    lines = text.split("\n")
    drop: set[int] = set()
    for i, line in enumerate(lines):
        if not line.startswith("  ") or "call void @\"" not in line or not any(p in line for p in prefixes):
            continue
        inst = parse_instruction(line)
        if not inst.callee.startswith(prefixes) or _TID not in inst.operands[0].value:
            continue  # (a region clang serialized itself, `if(0)`, stays serial)
        opened, closed = _bracket(lines, i)
        if opened is None or closed is None:
            continue  # not in a region serialization made (a derivative of a later level, say)
        loc = parse_instruction(lines[opened]).operands[0].value
        captures = inst.operands[2:]
        attached = line[len(strip_metadata(line)[0]):]
        indent = line[:len(line) - len(line.lstrip())]
        lines[i] = (f"{indent}call void (ptr, i32, ptr, ...) {FORK}(ptr {loc}, i32 {len(captures)}, ptr {inst.callee}"
                    + "".join(f", {a.type.text} {a.value}" for a in captures) + f"){attached}")
        drop |= {opened, closed}
    if not drop:
        return text
    text = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    if not re.search(r"^declare [^\n]*" + re.escape(FORK) + r"\(", text, re.M):
        text += f"\ndeclare void {FORK}(ptr, i32, ptr, ...)\n"
    return text


def _bracket(lines: list[str], at: int) -> tuple[int | None, int | None]:
    """The serialized region's opening and closing calls around line `at`, in its block."""
    opened = closed = None
    for j in range(at - 1, -1, -1):
        if not lines[j].startswith("  "):
            break  # the block's label, or the function's start
        if f"call void {_SERIAL}(" in lines[j]:
            opened = j
            break
    for j in range(at + 1, len(lines)):
        if not lines[j].startswith("  "):
            break
        if f"call void {_END_SERIAL}(" in lines[j]:
            closed = j
            break
    if opened is None or closed is None:
        return None, None
    gtid = parse_instruction(lines[opened]).operands[1].value
    if parse_instruction(lines[closed]).operands[1].value != gtid:
        return None, None
    return opened, closed
