"""The examples of README.md and docs/, read as a reader sees them, so that the tests can run them.

A page's fenced block with a title (```` ```c title="rosen.c" ````) is a file the reader writes,
in the page's order; a ```` ```console ```` block is a terminal session: each `$ ` line a command
(a trailing `\\` continues it), the lines after it its output (stdout and stderr as a terminal
shows them). In an expected line, `...` stands for any text; a line of `...` alone for any number
of lines; a last line `[exit status N]` says the command fails with status N (else it must
succeed). Blocks of other languages (`sh`, untitled `c`) are shown, not run. A page's front matter
may say what it needs, `requires: [rustc, cargo, python:torch]`: without it the page is skipped,
saying why."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^\n]*)$")
_TITLE = re.compile(r'title="([^"]+)"')
_EXIT = re.compile(r"^\[exit status (\d+)\]$")


@dataclass
class Step:
    """A file to write (`path`, `text`) or a command to run (`command`, `expected`, `status`)."""
    line: int
    path: str | None = None
    text: str = ""
    command: str | None = None
    expected: list[str] = field(default_factory=list)
    status: int = 0


@dataclass
class Page:
    path: Path
    requires: list[str]
    steps: list[Step]

    @property
    def runs(self) -> bool:
        return any(step.command for step in self.steps)


def read_page(path: Path) -> Page:
    lines = path.read_text().split("\n")
    requires, start = _front_matter(lines)
    steps: list[Step] = []
    i = start
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, info = len(match["indent"]), match["fence"], match["info"].strip()
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        language = info.split()[0] if info else ""
        title = _TITLE.search(info)
        if title:
            steps.append(Step(line=i + 1, path=title[1], text="\n".join(body) + "\n"))
        elif language == "console":
            steps.extend(_session(body, i + 2))
        i = j + 1
    return Page(path, requires, steps)


def _front_matter(lines: list[str]) -> tuple[list[str], int]:
    if not lines or lines[0] != "---":
        return [], 0
    end = lines.index("---", 1)
    requires: list[str] = []
    for line in lines[1:end]:
        key, _, value = line.partition(":")
        if key.strip() == "requires":
            requires = [item.strip() for item in value.strip().strip("[]").split(",") if item.strip()]
    return requires, end + 1


def _session(body: list[str], first_line: int) -> list[Step]:
    steps: list[Step] = []
    k = 0
    while k < len(body):
        if not body[k].startswith("$ "):
            raise ValueError(f"line {first_line + k}: a console block's output must follow a `$ ` command")
        command, line = body[k][2:], first_line + k
        while command.endswith("\\") and k + 1 < len(body):
            k += 1
            command = command[:-1] + body[k].strip()
        k += 1
        expected = []
        while k < len(body) and not body[k].startswith("$ "):
            expected.append(body[k].rstrip())
            k += 1
        while expected and not expected[-1]:
            expected.pop()
        status = 0
        if expected and _EXIT.match(expected[-1]):
            status = int(_EXIT.match(expected.pop())[1])
        steps.append(Step(line=line, command=command, expected=expected, status=status))
    return steps


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether the actual lines are the expected ones, `...` standing for any text in a line and,
    alone on a line, for any number of lines."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head.strip() == "...":
        return any(matches(rest, actual[skip:]) for skip in range(len(actual) + 1))
    if not actual:
        return False
    pattern = ".*".join(re.escape(part) for part in head.split("..."))
    return re.fullmatch(pattern, actual[0].rstrip()) is not None and matches(rest, actual[1:])


def shown(step: Step) -> str:
    return "$ " + step.command + "".join("\n" + line for line in step.expected)


def program(step: Step) -> str:
    """The program a command starts: its first word after the environment it sets (`NAME=VALUE`)."""
    words = shlex.split(step.command)
    return next((w for w in words if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)), words[0])
