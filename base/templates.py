"""The templates folder, and generated text that needs nothing of the frontend's types (the
lowering wrapper, the reverse-mode runtime)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2

from adgen.base import __version__
from adgen.base.user_cache import optional_private_folder

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def environment(**filters) -> jinja2.Environment:
    """adgen's Jinja settings over templates/, with the filters a caller's templates use."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, extensions=["jinja2.ext.do"],
                             undefined=jinja2.StrictUndefined, autoescape=False, bytecode_cache=_compiled())
    env.filters.update(filters)
    return env


@cache
def _compiled() -> jinja2.BytecodeCache | None:
    """Jinja's cache of compiled templates (each build used to compile its templates again: 60 ms
    and more): `~/.cache/adgen/templates`, Python code this process runs, so only where that
    folder is the user's alone and its parent closed to others' writes (base/user_cache.py);
    else none (templates compiled at each build). Not in the temporary directory, where a build
    leaves nothing."""
    folder = optional_private_folder("templates")
    return jinja2.FileSystemBytecodeCache(str(folder)) if folder is not None else None


@cache
def _plain() -> jinja2.Environment:
    return environment()


def render_text(template: str, **context) -> str:
    """Generated text from its template, with adgen's version in the context."""
    return _plain().get_template(template).render(version=__version__, **context)
