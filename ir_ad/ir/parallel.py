"""OpenMP's parallel regions, as clang lowers them with -fopenmp: `__kmpc_fork_call(loc, n,
outlined, captures...)` runs `outlined(&gtid, &bound_tid, captures...)` on every thread of a
team. Differentiation sees them serialized: before anything reads the code, each fork becomes
the runtime's serialized region around a direct call of the outlined function (what clang
itself writes for `parallel if(0)`),

    gtid = __kmpc_global_thread_num(loc)
    __kmpc_serialized_parallel(loc, gtid)
    outlined(&gtid, &zero, captures...)
    __kmpc_end_serialized_parallel(loc, gtid)

so that every analysis and both modes see an ordinary call of a function kept out of line
(with the parameters the runtime passes), and a worksharing loop inside runs all its
iterations on the one thread; a reduction becomes a critical section, each of which numbers
the sections a derivative's team leaves (`__adgen_omp_end_critical`, defined by `fork_again`).
After differentiation `fork_again` turns the calls of the outlined functions' forward
derivatives back into forks: each thread computes the tangents of the iterations it runs in the
primal. Reverse mode forks the regions' pairs itself (reverse/mode.py, templates/openmp.ll.j2);
captured variables are passed by value first (captures.py). See specs/openmp.md."""

from __future__ import annotations

import itertools
import re

from adgen.base.templates import render_text
from adgen.base.toolchain import DISPATCH_DEINIT
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
_TICKET = "adgen.omp.ticket."
_END_CRITICAL = "@__adgen_omp_end_critical"


def serialize(text: str) -> tuple[str, set[str]]:
    """The module's text with each parallel region serialized, and the IR names of the outlined
    functions (`@f.omp_outlined`), kept out of line and external: their derivatives fork as
    the primal does (forward mode's by `fork_again`, reverse mode's pairs by their callers)."""
    tickets = itertools.count(1)
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
            out += _reduction_in_critical_section(line, tickets)
            continue
        if line.startswith("  ") and "call void @__kmpc_end_critical(" in line:
            out.append(_ticketed(line, next(tickets)))
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
    text = _out_of_line("\n".join(out), outlined)
    text = re.sub(r"^declare ([^\n]*@__kmpc_(?:for_static_init|dispatch_next)_\w+)\(([^)]*)\)", _not_capturing, text,
                  flags=re.M)
    if _TICKET in text and not re.search(r"^(declare|define)[^\n]*@__adgen_omp_end_critical\(", text, re.M):
        text += f"\ndeclare i64 {_END_CRITICAL}(ptr, i32, ptr)\n"  # (defined by fork_again: opaque till then)
    declared = set(re.findall(r'^declare [^\n]*?(@[-\w$.]+|@"[^"]*")\(', text, re.M))  # (one pass: 138 searches took 37 ms)
    missing = [d for name, d in _DECLARATIONS.items() if name not in declared]
    return text + "\n" + "\n".join(missing) + "\n", outlined


def _not_capturing(m: re.Match) -> str:
    """A worksharing loop's bounds call declared not to keep its pointers (its variables' own
    addresses; true of the runtime): after it, LLVM knows that no store of the loop's body writes
    those variables, and reads the bound once, before the loop, rather than every iteration (the
    range analysis then bounds the loop's accesses)."""
    params = [p.strip() + (" captures(none)" if p.strip() == "ptr" else "") for p in m.group(2).split(",")]
    return f"declare {m.group(1)}({', '.join(params)})"


def _reduction_in_critical_section(line: str, tickets) -> list[str]:
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
    closing = [_ticketed(f"  call void @__kmpc_end_critical(ptr {args[0].value}, i32 {args[1].value}, "
                         f"ptr {args[2].value})", next(tickets))]
    if name == "__kmpc_end_reduce":  # (loc, gtid, lock)
        closing.append(f"  call void @__kmpc_barrier(ptr {args[0].value}, i32 {args[1].value})")
    return closing


def _ticketed(line: str, k: int) -> str:
    """`__kmpc_end_critical(loc, gtid, lock)` made `__adgen_omp_end_critical`, which also
    numbers the critical sections a derivative's team leaves (templates/openmp.ll.j2), so that
    its reverse sweep reverses them in the opposite order: a product's or a maximum's adjoint
    depends on the order the threads combined in."""
    head = strip_metadata(line)[0]
    args = parse_instruction(head).operands
    return (f'  %"{_TICKET}{k}" = call i64 @__adgen_omp_end_critical(ptr {args[0].value}, i32 {args[1].value}, '
            f"ptr {args[2].value})" + line[len(head):])


def names_region(line: str) -> bool:
    """Whether an instruction's text may be a fork or a serialized region's call (else it is
    neither, and need not be read: a module's calls are thousands)."""
    return FORK in line or _TID in line


def region_call(inst) -> bool:
    """Whether a call is of an outlined function, in a region serialization made (not one clang
    serialized itself, `if(0)`): reverse mode forks its derivatives again (reverse/mode.py)."""
    return inst.opcode == "call" and bool(inst.operands) and inst.operands[0].value.strip('%"').startswith(_TID)


def _out_of_line(text: str, functions: set[str]) -> str:
    """The text with `functions` external and never inlined (their parameters then those the
    runtime passes): each `define` line given an attribute group of its own, its old group's
    attributes but `alwaysinline`, and `noinline`."""
    groups = {m.group(1): m.group(2) for m in re.finditer(r"^attributes #(\d+) = \{ (.*) \}$", text, re.M)}
    fresh = max((int(n) for n in groups), default=0)
    added = []

    def edited(m: re.Match) -> str:
        nonlocal fresh
        line = m.group(0)
        name = re.search(r"(@(?:\"[^\"]*\"|[-\w.$]+))\(", line).group(1)
        if name not in functions:
            return line
        line = re.sub(r"^define (?:internal |private )", "define ", line)
        group = re.search(r"\) #(\d+)", line)
        kept = [a for a in (groups.get(group.group(1), "").split(" ") if group else []) if a and a != "alwaysinline"]
        fresh += 1
        added.append(f"attributes #{fresh} = {{ {' '.join([*kept, 'noinline'])} }}")
        return line[:group.start()] + f") #{fresh}" + line[group.end():] if group else line.replace(") {", f") #{fresh} {{", 1)

    text = re.sub(r"^define [^\n]*$", edited, text, flags=re.M)
    return text + "\n" + "\n".join(added)


def fork_again(text: str, outlined: set[str]) -> str:
    """The text with each call of a forward derivative of an outlined function (`@"f.omp_outlined'fwd..."`),
    in its serialized region, made a fork of that derivative: the region's brackets dropped,
    the call's first two arguments (the thread ids, which the runtime passes) left out."""
    text = _with_tickets(text)
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


def _with_tickets(text: str) -> str:
    """The text with the critical sections' tickets defined (templates/openmp.ll.j2) where it
    calls them: only now, in the code to compile, so that no optimization before it knows that
    no derivative's team had started when the sources were optimized (and the tickets all 0)."""
    if f"{_END_CRITICAL}(" not in text or re.search(r"^define[^\n]*" + _END_CRITICAL + r"\(", text, re.M):
        return text
    text = re.sub(r"^declare[^\n]*" + _END_CRITICAL + r"\([^\n]*\n?", "", text, flags=re.M)
    team = re.search(r'^@"?__adgen_omp_team"? = ', text, re.M) is not None
    if not re.search(r"^declare[^\n]*@__kmpc_end_critical\(", text, re.M):
        text += "\n" + _DECLARATIONS["@__kmpc_end_critical"]
    return text + "\n" + render_text("openmp.ll.j2", PART="primal", TEAM_DEFINED=team)


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


def with_empty_dispatch_deinit(text: str) -> str:
    """The text defining `__kmpc_dispatch_deinit` as LLVM 19 to 22's runtimes do (empty:
    templates/openmp_dispatch_deinit.ll.j2) where it declares it: for an object built with
    -fopenmp that is to link with an older runtime, which lacks it (base/toolchain.py decides)."""
    declared = re.search(rf"^declare [^\n]*@{DISPATCH_DEINIT}\(.*$", text, re.M)
    if declared is None:
        return text
    return text[:declared.start()] + render_text("openmp_dispatch_deinit.ll.j2").rstrip("\n") + text[declared.end():]
