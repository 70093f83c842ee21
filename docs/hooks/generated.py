"""MkDocs hook: the reference pages generated from the code, so that they cannot drift from it.

A page holding `<!-- generated: cli -->` gets every command's `--help` (from the argparse parsers
and `adgen cc`'s help text); `<!-- generated: error-examples -->` gets each case of
specs/golden/errors/ — the source, what adgen prints (the very text the tests compare) and the fix
of docs/reference/error_fixes.toml, applied to the source — then that file's examples of the
other stages' errors (`[[more]]`), which the tests run too."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ERRORS = ROOT / "specs" / "golden" / "errors"
FIXES = ROOT / "docs" / "reference" / "error_fixes.toml"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- generated: cli -->" in markdown:
        markdown = markdown.replace("<!-- generated: cli -->", cli_reference())
    if "<!-- generated: error-examples -->" in markdown:
        markdown = markdown.replace("<!-- generated: error-examples -->", error_examples())
    return markdown


def cli_reference() -> str:
    os.environ["COLUMNS"] = "100"  # (argparse wraps to the terminal's width: the page's is fixed)
    from adgen.commands.cc.driver import HELP
    from adgen.commands.cli import _parser

    parser = _parser()
    commands = parser._subparsers._group_actions[0].choices  # (argparse keeps its subparsers there)
    parts = ["## adgen\n", _block(parser.format_help())]
    for name in ("generate", "build", "check"):
        parts += [f"## adgen {name}\n", _block(commands[name].format_help())]
    parts += ["## adgen cc, adgen c++\n", _block("usage: adgen cc [C compiler flags] FILE... [-c] [-o OUT]\n"
                                                 "       adgen c++ [C++ compiler flags] FILE... [-c] [-o OUT]\n"
                                                 + HELP)]
    return "\n".join(parts)


def error_examples() -> str:
    fixes = tomllib.loads(FIXES.read_text())
    parts = ["### Annotations\n"]
    for source in sorted(ERRORS.glob("*.c")):
        case = fixes[source.stem]
        printed = (ERRORS / f"{source.stem}.err").read_text()
        message = printed.split("error: ", 1)[1].split("\n", 1)[0]
        parts += [f"#### {message}\n", f'```c title="{source.name}"\n{source.read_text()}```\n',
                  f"```\n$ adgen generate {source.name}\n{printed}```\n",
                  f"**Fix.** {case['fix']}\n", f"```c\n{fixed_source(source.read_text(), case['edits'])}```\n"]
    stages: dict[str, list[dict]] = {}
    for case in fixes["more"]:
        stages.setdefault(case["stage"], []).append(case)
    for stage, cases in stages.items():
        parts.append(f"### {stage}\n")
        for case in cases:
            message = case["output"].split("error: ", 1)[1].split("\n", 1)[0]
            language = {".rs": "rust", ".cpp": "cpp"}.get(Path(case["file"]).suffix, "c")
            fixed = (f"```console\n$ {case['fixed_command']}\n```\n" if "fixed_command" in case else
                     f'```{language}\n{case["fixed"].lstrip()}```\n')
            parts += [f"#### {message}\n", f'```{language} title="{case["file"]}"\n{case["source"].lstrip()}```\n',
                      f"```\n$ {case['command']}\n{case['output'].lstrip()}```\n",
                      f"**Fix.** {case['fix']}\n", fixed]
    return "\n".join(parts)


def fixed_source(text: str, edits: list[list[str]]) -> str:
    for old, new in edits:
        if old not in text:
            raise ValueError(f"error_fixes.toml: {old!r} is not in the source")
        text = text.replace(old, new)
    return text


def _block(text: str) -> str:
    return f"```text\n{text.rstrip()}\n```\n"
