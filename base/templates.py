"""The templates folder, and generated text that needs nothing of the frontend's types (the
lowering wrapper, the reverse-mode runtime)."""

from __future__ import annotations

import os
import stat
from functools import cache
from pathlib import Path

import jinja2

from adgen.base import __version__

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
    and more): `$XDG_CACHE_HOME/adgen/templates` (`~/.cache/adgen/templates`), mode 0700, Python
    code this process runs, so only where that folder is the user's alone and its parent is
    closed to others' writes; else none (templates compiled at each build). Not in the temporary
    directory, where a build leaves nothing."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    folder = (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "adgen" / "templates"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        mine, parent = os.lstat(folder), os.lstat(folder.parent)
    except (OSError, RuntimeError):  # (RuntimeError: no home folder to be found)
        return None
    if not stat.S_ISDIR(mine.st_mode) or mine.st_uid != os.geteuid() or stat.S_IMODE(mine.st_mode) & 0o077 or \
            parent.st_uid != os.geteuid() or parent.st_mode & 0o022:
        return None
    return jinja2.FileSystemBytecodeCache(str(folder))


@cache
def _plain() -> jinja2.Environment:
    return environment()


def render_text(template: str, **context) -> str:
    """Generated text from its template, with adgen's version in the context."""
    return _plain().get_template(template).render(version=__version__, **context)
