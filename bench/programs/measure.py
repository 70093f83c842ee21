"""Runs each way of computing a program's loss or gradient in a process of its own (harness.c),
so that the peak resident memory it reports is that way's alone, and compares each gradient
with the hand-written one."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MODES = ("primal", "hand", "adgen", "enzyme")


@dataclass
class Run:
    mode: str
    loss: float
    median_s: float
    min_s: float
    peak_bytes: int  # VmHWM: the process's peak resident memory
    gradient: np.ndarray | None  # None for the primal


def run(executable: Path, mode: str, reps: int, sizes: tuple[int, ...], work: Path, threads: int | None = None) -> Run:
    """`threads`: OpenMP's team size (OMP_NUM_THREADS), for an executable built with -fopenmp.
    Mode `adgen-forked`: `adgen` with ADGEN_PARALLEL_REVERSE=always."""
    gradient_file = work / f"{executable.name}.{mode}.grad"
    env = dict(os.environ, OMP_NUM_THREADS=str(threads)) if threads else None
    if mode == "adgen-forked":  # (adgen's gradient, its parallel regions' reverse sweeps forked: specs/openmp.md)
        mode, env = "adgen", dict(env or os.environ, ADGEN_PARALLEL_REVERSE="always")
    done = subprocess.run([str(executable), mode, str(reps), str(gradient_file), *map(str, sizes)],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{executable.name} {mode} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    line = next(line for line in reversed(done.stdout.splitlines()) if "median_s=" in line)  # (the program may print)
    fields = dict(item.split("=", 1) for item in line.split())
    gradient = np.fromfile(gradient_file, dtype=np.float32) if mode != "primal" else None
    return Run(mode, float(fields["loss"]), float(fields["median_s"]), float(fields["min_s"]),
               int(fields["peak_kb"]) * 1024, gradient)


def relative_error(gradient: np.ndarray, reference: np.ndarray) -> float:
    """|gradient - reference| / |reference|, in double, over all parameters."""
    difference = gradient.astype(np.float64) - reference.astype(np.float64)
    return float(np.linalg.norm(difference) / np.linalg.norm(reference.astype(np.float64)))


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def mb(count: int) -> str:
    return f"{count / 1e6:.1f}"


def row(cells: list[str]) -> str:
    """One row of a Markdown table."""
    return "| " + " | ".join(cells) + " |"
