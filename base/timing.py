"""Stage timings for `-v`: each stage of the pipeline reports how long it took, and a stage
that runs LLVM (optimizing, emitting) the passes that took most of it, indented beneath."""

from __future__ import annotations

import re
import sys
import time
from contextlib import contextmanager


class _Detail:
    """What a stage says beside its time; it may be filled in while the stage runs. `parts`
    (None unless verbose, so that nothing is measured for nobody) collects (what, seconds) of
    the work inside the stage, printed beneath it largest first."""

    def __init__(self, text: str, verbose: bool):
        self.text = text
        self.parts: list[tuple[str, float]] | None = [] if verbose else None


# Parts of a stage printed beneath it: the largest few, and only those worth a look.
SHOWN_PARTS, SHOWN_SHARE = 4, 0.05


class Stages:
    """Times stages; with `verbose` prints each one's time, with `progress` (on a terminal)
    shows the stage under way on one line that is cleared when the run ends."""

    def __init__(self, verbose: bool = False, stream=None, progress: bool = False, quiet: bool = False):
        self.verbose, self.stream, self.progress = verbose, stream, progress and not verbose
        self.quiet = quiet  # no remarks
        self.times: list[tuple[str, float]] = []
        self.started = time.perf_counter()

    def remark(self, text: str) -> None:
        """Something the user should know that is no error (an annotation the build does not
        honor, and why), unless quiet."""
        if not self.quiet:
            print(text, file=self.stream or sys.stderr)

    def total(self) -> None:
        """With `verbose`, the time since these stages were made, the stages' and what lies
        between them (Python's own start, before, is not in it)."""
        if self.verbose:
            elapsed = time.perf_counter() - self.started
            print(f"adgen: {'total':<13} {elapsed * 1000:8.1f} ms", file=self.stream or sys.stderr)

    @contextmanager
    def stage(self, name: str, detail: str = ""):
        out = self.stream or sys.stderr
        if self.progress:
            print(f"\radgen: {name}{' ' + detail if detail else ''}...\x1b[K", end="", file=out, flush=True)
        start = time.perf_counter()
        note = _Detail(detail, self.verbose)
        try:
            yield note
        finally:
            if self.progress:
                print("\r\x1b[K", end="", file=out, flush=True)
        elapsed = time.perf_counter() - start
        self.times.append((name, elapsed))
        if self.verbose:
            extra = f"  ({note.text})" if note.text else ""
            print(f"adgen: {name:<13} {elapsed * 1000:8.1f} ms{extra}", file=out)
            for part, seconds in _largest(note.parts or [], elapsed):
                print(f"adgen:   {part:<34} {seconds * 1000:8.1f} ms", file=out)


def _largest(parts: list[tuple[str, float]], total: float) -> list[tuple[str, float]]:
    """The parts worth printing: the same names summed, the largest few that are a share of the total."""
    summed: dict[str, float] = {}
    for name, seconds in parts:
        summed[name] = summed.get(name, 0.0) + seconds
    ranked = sorted(summed.items(), key=lambda item: -item[1])[:SHOWN_PARTS]
    return [(name, seconds) for name, seconds in ranked if seconds >= SHOWN_SHARE * total]


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


# A row of LLVM's -time-passes report: "seconds (share%)" columns (user, system, both, wall),
# then the pass's name (the new pass manager's end in "Pass"), numbered (" #2") where it runs
# more than once.
_TIMER_COLUMN = re.compile(r"([\d.]+) \(\s*[\d.]+%\)")


def section(report: str, title: str) -> str:
    """The tables of an LLVM timing report under a title (clang's -ftime-report prints several:
    passes, analyses, its own phases, which count the same time again)."""
    parts = re.split(r"^\s*(\S.*? report)\s*$", report, flags=re.M)
    return "".join(body for head, body in zip(parts[1::2], parts[2::2]) if head == title)


def pass_times(report: str, elapsed: float) -> list[tuple[str, float]]:
    """(pass or analysis, seconds) of each row of LLVM's timing report: its share of the
    report's wall-clock time, of the `elapsed` seconds measured around the run (llvmlite's
    timers of the new pass manager report every pass twice, and their total twice over)."""
    rows = []
    for line in report.splitlines():
        columns = _TIMER_COLUMN.findall(line)
        name = re.sub(r"Pass$", "", re.sub(r" #\d+$", "", _TIMER_COLUMN.split(line)[-1].strip()))
        if columns and name and name != "Total":
            rows.append((name, float(columns[-1])))
    total = sum(seconds for _, seconds in rows) or 1.0
    return [(name, seconds / total * elapsed) for name, seconds in rows]
