"""Stage timings for `-v`: each stage of the pipeline reports how long it took."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager


class _Detail:
    """What a stage says beside its time; it may be filled in while the stage runs."""

    def __init__(self, text: str):
        self.text = text


class Stages:
    """Times stages; with `verbose` prints each one's time, with `progress` (on a terminal)
    shows the stage under way on one line that is cleared when the run ends."""

    def __init__(self, verbose: bool = False, stream=None, progress: bool = False):
        self.verbose, self.stream, self.progress = verbose, stream, progress and not verbose
        self.times: list[tuple[str, float]] = []

    @contextmanager
    def stage(self, name: str, detail: str = ""):
        out = self.stream or sys.stderr
        if self.progress:
            print(f"\radgen: {name}{' ' + detail if detail else ''}...\x1b[K", end="", file=out, flush=True)
        start = time.perf_counter()
        note = _Detail(detail)
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


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
