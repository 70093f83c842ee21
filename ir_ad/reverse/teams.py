"""Reverse mode on OpenMP teams (specs/openmp.md): which pairs a team's threads can run at once,
and the pair a parallel region's call gets, which forks the region's team pair in both sweeps
or calls its single-thread pair (templates/openmp.ll.j2 holds all of their code)."""

from __future__ import annotations

from dataclasses import replace

from adgen.base.templates import render_text
from adgen.ir_ad.calls import SYNCHRONIZATION, callee_name
from adgen.ir_ad.custom import FixedRecord
from adgen.ir_ad.ir import I32, PTR, VOID, Module
from adgen.ir_ad.ir.builder import Declarations, bare, local
from adgen.ir_ad.reverse.sweeps.sharing import SPAN
from adgen.ir_ad.reverse.types import ReverseFacts, RevDerived, aug_params
from adgen.ir_ad.shadows import Layout

# What templates/openmp.ll.j2 calls.
DECLARATIONS = [("@omp_get_thread_num", I32, []), ("@omp_get_num_threads", I32, []),
                ("@omp_get_max_threads", I32, []), ("@omp_in_parallel", I32, []),
                ("@__kmpc_barrier", VOID, [PTR, I32]), ("@__kmpc_global_thread_num", I32, [PTR]),
                ("@__kmpc_push_num_threads", VOID, [PTR, I32, I32]), ("@__kmpc_serialized_parallel", VOID, [PTR, I32]),
                ("@__kmpc_end_serialized_parallel", VOID, [PTR, I32]), ("@getenv", PTR, [PTR])]
TEAM = "@__adgen_omp_team"  # the team a thread runs a region's sweeps for (thread-local)
# From how many threads a region's sweeps fork: 2, unless its reverse sweep adds atomically in a loop wherever the
# threads' accesses are (then only where ADGEN_PARALLEL_REVERSE=always says so: the adds, contended, cost more than
# the threads gain; gpt2.c's, with its matrix products' weights added so, took 7.5 times as long on two threads)
FEW_THREADS, NEVER = 2, (1 << 31) - 1


def on_teams(d: ReverseFacts) -> None:
    """What a pair's facts say of running it on a team's threads at once: whether it (or a
    callee) logs stores or meets OpenMP's synchronization, and whether it must run on one thread:
    where it puts stores back from its record, logs stores between barriers or critical sections
    (one thread's putting back would race with another's reading, and the log's order across
    threads is not the forward sweep's), nests critical sections (each waits for its turn, which
    the one around it holds), or calls a pair that must (one written by hand, a checkpointed
    loop, a recursive call)."""
    derived, calls = d.derived, d.calls.values()
    derived.logs = d.logged or any(c.derived.logs for c in calls)
    derived.synchronizes = any(c.derived.synchronizes for c in calls) or any(
        i.opcode == "call" and callee_name(i) in SYNCHRONIZATION for i in d.fn.instructions())
    derived.serial_only = (bool(d.undoable) and not d.logged) or (derived.logs and derived.synchronizes) or \
        _nested_critical(d) or any(c.derived.plan is None or c.derived.serial_only for c in calls)


SPARES = 4  # private buffers of adjoints a thread keeps for its next (templates/openmp.ll.j2)


def openmp_reverse_text() -> str:
    """What reverse mode's parallel regions share (templates/openmp.ll.j2), alone."""
    return render_text("openmp.ll.j2", PART="reverse", SPAN=SPAN, SPARES=SPARES)


def openmp_runtime(module: Module, decls: Declarations) -> str:
    """What the team pairs share (templates/openmp.ll.j2), with its declarations."""
    for name, ret, params in DECLARATIONS:
        decls.need(name, ret, params)
    text = openmp_reverse_text()
    if "@__kmpc_fork_call" not in decls.known:  # (variadic: not what `need` declares)
        decls.known.add("@__kmpc_fork_call")
        text += "\ndeclare void @__kmpc_fork_call(ptr, i32, ptr, ...)\n"
    if not any(g in module.globals for g in (TEAM, f'@"{TEAM[1:]}"')):
        text = f"{TEAM} = internal thread_local global ptr null\n" + text
    return text


def region_pair(module: Module, decls: Declarations, team: RevDerived, serial: RevDerived | None,
                releases: bool) -> tuple[RevDerived, str]:
    """The pair a parallel region's call gets, and its code: the forward sweep forks `team`
    (each thread its own record and log, adjoints other threads may add to added as sharing.py
    decides)
    where enough threads are there to gain from it, else calls `serial`; the reverse sweep and
    split mode's release follow its choice, which its record keeps, before the chosen pair's.
    Without `serial` (a team whose adds are not atomic in loops, which runs as fast on one
    thread), the team's pair runs on a team of the calling thread alone instead: one pair's code
    where there were two."""
    one = serial or team
    pattern = replace(team.pattern, team=False, forked=False)
    fn = module.functions[pattern.function]
    layout = Layout(module, pattern.width, pattern.kind)
    types = [p.rsplit(" ", 1)[0] for p in aug_params(fn, pattern.active, layout)[2:-1]]
    grads = [t.text for t in one.rev_ret.elems] if one.rev_ret.kind != "void" else []
    names = {part: _name(team.aug, f"region.{part}") for part in ("aug", "rev", "free")}
    wrappers = {"AUG_TEAM": _name(team.aug, "team"), "REV_TEAM": _name(team.rev, "team"),
                "FREE_TEAM": _name(team.free, "team"), "RESULT": _name(team.rev, "team.result")}
    decls.known |= set(wrappers.values()) | set(names.values())
    every = tuple(True for _ in fn.params)
    region = RevDerived(names["aug"], names["rev"], pattern, one.aug_ret, one.rev_ret, one.scalars,
                        FixedRecord(16 + (one.record_size + 7) // 8 * 8 if serial else 24), names["free"],
                        (False, False) + every[2:], every, one.undoes_writes and team.undoes_writes)
    args = "".join(f', {t} %"arg.{k}"' for k, t in enumerate(types))
    text = render_text(
        "openmp.ll.j2", PART="team", AUG=team.aug, REV=team.rev, FREE=team.free,
        SERIAL_AUG=serial.aug if serial else "", SERIAL_REV=serial.rev if serial else "",
        SERIAL_FREE=serial.free if serial else "", REGION_AUG=names["aug"], REGION_REV=names["rev"],
        REGION_FREE=names["free"], REV_RET=one.rev_ret.text, GRADS=grads, RELEASES=releases, PARAMS=args,
        ARGS=args, COUNT=len(types) + 1, SLOT=16 + SPAN * team.shared_arrays + (team.record_size + 15) // 16 * 16,
        EXTENTS=SPAN * team.shared_arrays, HEADER=(56 + 8 * len(grads) + 15) // 16 * 16, THREADS=NEVER if team.atomic_in_loops else FEW_THREADS,
        **wrappers)
    return region, text


def _name(function: str, part: str) -> str:
    """The name of a region's function (templates/openmp.ll.j2): `part` of a pair's function."""
    return "@" + local(bare("%" + function[1:]) + "." + part)[1:]


def _nested_critical(d: ReverseFacts) -> bool:
    """Whether a critical section may enter another, directly or in a function it calls that
    meets OpenMP's synchronization."""
    blocks = {b.label: b for b in d.fn.blocks}
    for block in d.fn.blocks:
        for k, inst in enumerate(block.instructions):
            if inst.opcode != "call" or callee_name(inst) != "__kmpc_critical":
                continue
            work, seen = [(block.label, k + 1)], set()
            while work:
                label, start = work.pop()
                for later in blocks[label].instructions[start:]:
                    if later.opcode == "call" and callee_name(later) == "__adgen_omp_end_critical":
                        break
                    if later.opcode == "call" and (callee_name(later) == "__kmpc_critical" or (
                            id(later) in d.calls and d.calls[id(later)].derived.synchronizes)):
                        return True
                else:
                    for successor in d.cfg.succs[label]:
                        if successor not in seen:
                            seen.add(successor)
                            work.append((successor, 0))
    return False
