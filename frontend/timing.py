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
    def __init__(self, verbose: bool = False, stream=None):
        self.verbose, self.stream = verbose, stream
        self.times: list[tuple[str, float]] = []

    @contextmanager
    def stage(self, name: str, detail: str = ""):
        start = time.perf_counter()
        note = _Detail(detail)
        yield note
        elapsed = time.perf_counter() - start
        self.times.append((name, elapsed))
        if self.verbose:
            extra = f"  ({note.text})" if note.text else ""
            print(f"adgen: {name:<13} {elapsed * 1000:8.1f} ms{extra}", file=self.stream or sys.stderr)


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
