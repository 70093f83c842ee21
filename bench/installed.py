"""adgen timed as pip installs it. `pip install .` byte-compiles every module as it installs
them; an editable install (a developer's) compiles each module when it is first imported and
keeps the result, unless the environment says not to (PYTHONDONTWRITEBYTECODE, which some
machines set): then every `adgen build` compiled its 200 modules again, 0.2-0.3 s a build, which
the build times beside clang and Enzyme counted as adgen's own. The benches that time builds
call `byte_compiled()` first, so that they time the program users run."""

from __future__ import annotations

import compileall
import importlib.util
from functools import cache

# adgen's packages, each a folder of its own in the source tree (pyproject.toml's package-dir):
# their subpackages are compiled with them
_TOP = ("adgen", "adgen.base", "adgen.commands", "adgen.frontend", "adgen.ir_ad")


@cache
def byte_compiled() -> None:
    """Every module of adgen's compiled to bytecode where it is not yet (once per process;
    a folder that cannot be written is left as it is)."""
    for name in _TOP:
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(folder, quiet=2)
