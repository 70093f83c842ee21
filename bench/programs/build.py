"""Builds one program three ways and times each tool on its file: `adgen build` (and once more
with -v, untimed, for its stage timings), the primal with the clang adgen uses (the ziglang wheel's `zig cc -O2
-fno-math-errno`), and, given Enzyme's plugin, NAME_enzyme.c with clang-19 alone and with the
plugin (the difference is Enzyme's own time). All at -O2 -fno-math-errno for a generic CPU of
this machine's architecture. Each timed step gets an empty zig cache: zig's clang caches the
objects it compiles, and a cached build of the same file takes a tenth of a second. The steps
run `rounds` times, one after another in each round, and each tool's time is the median of its
rounds (the machine's noise then weighs alike on all). Links them with harness.c into one
executable."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from adgen.base.toolchain import bundled_cc, openmp_link_flags, select_compiler
from bench.installed import byte_compiled
from bench.programs import HERE, Program

ZIG_CC = [*bundled_cc(), "-O2", "-fno-math-errno"]
STAGE = re.compile(r"^adgen: (\w[\w ]*?)\s+([\d.]+) ms")


@dataclass
class Built:
    executable: Path
    seconds: dict[str, float] = field(default_factory=dict)  # tool -> wall-clock seconds on the file
    adgen_stages: list[tuple[str, float]] = field(default_factory=list)  # (stage, seconds), in order
    rounds: int = 1  # how many times each tool built the file (its time: the median)


def _timed(command: list[str], fresh_cache: bool = True) -> tuple[float, str]:
    byte_compiled()  # (adgen as pip installs it: bench/installed.py)
    with tempfile.TemporaryDirectory(prefix="zig-cache-") as cache:
        env = dict(os.environ, ZIG_GLOBAL_CACHE_DIR=cache, ZIG_LOCAL_CACHE_DIR=cache) if fresh_cache else None
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stdout}{done.stderr}")
    return seconds, done.stdout + done.stderr


def build(program: Program, work: Path, enzyme: Path | None = None, enzyme_cc: str = "clang-19",
          openmp: bool = False, rounds: int = 1) -> Built:
    """With `openmp`, every compile is with -fopenmp and the executable links the OpenMP runtime."""
    work.mkdir(parents=True, exist_ok=True)
    built = Built(work / program.name, rounds=rounds)
    objects = [work / f"{program.name}.o", work / f"{program.name}.adgen.o"]
    parallel = ["-fopenmp"] if openmp else []
    adgen = [sys.executable, "-m", "adgen.commands.cli", "build", str(program.source()), "-o", str(work),
             *(["--", *parallel] if openmp else [])]
    steps = {"adgen": adgen,
             "clang": [*ZIG_CC, *parallel, "-c", str(program.source()), "-o", str(objects[0])]}
    defines = ["-DWITH_ADGEN"]
    if enzyme is not None:
        source, plain = program.source("_enzyme"), work / f"{program.name}_enzyme_plain.o"
        base = [enzyme_cc, "-O2", "-fno-math-errno", "-w", *parallel, "-c", str(source)]
        steps["clang-19"] = [*base, "-o", str(plain)]
        steps["clang-19 + Enzyme"] = [*base, f"-fplugin={enzyme}", "-o", str(work / f"{program.name}_enzyme.o")]
        objects.append(work / f"{program.name}_enzyme.o")
        defines.append("-DWITH_ENZYME")
    times: dict[str, list[tuple[float, str]]] = {tool: [] for tool in steps}  # (seconds, output) by tool
    for _ in range(rounds):
        for tool, command in steps.items():
            times[tool].append(_timed(command))
    built.seconds = {tool: sorted(runs)[len(runs) // 2][0] for tool, runs in times.items()}
    _, log = _timed([*adgen[:4], "-v", *adgen[4:]])  # its stages (-v times LLVM's passes too: not timed)
    built.adgen_stages = [(m[1], float(m[2]) / 1e3) for m in map(STAGE.match, log.splitlines()) if m]
    runtime = openmp_link_flags(select_compiler(None), parallel)
    link = [*ZIG_CC, *defines, "-I", str(work), "-I", str(HERE), str(HERE / "harness.c"),
            str(program.source("_bench")), *map(str, objects), *runtime, "-lm", "-o", str(built.executable)]
    _timed(link, fresh_cache=False)
    return built
