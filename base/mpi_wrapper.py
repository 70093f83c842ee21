"""MPI's headers, found as the MPI compiler wrapper finds them: where a source includes `mpi.h`
and the flags given do not already reach it, adgen asks the wrapper (`$MPICC`, else `mpicc` on
the PATH) for its compile flags (Open MPI's `mpicc -showme:compile`, MPICH's `mpicc
-compile_info`) and reads and lowers the sources with its `-I` and `-D` flags. Linking stays the
user's (`mpicc`, or `$(mpicc -showme:link)`)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from functools import cache
from pathlib import Path

_INCLUDES_MPI = re.compile(r'^\s*#\s*include\s*[<"]mpi\.h[>"]', re.M)


def mpi_include_flags(sources: list[Path], flags: list[str]) -> list[str]:
    """The wrapper's -I and -D flags where a source includes mpi.h that `flags` do not reach;
    none where there is no wrapper (libclang then says mpi.h is not found, at the #include)."""
    if not any(includes_mpi(_text(Path(s))) for s in sources) or _reaches_mpi_h(flags):
        return []
    return list(_wrapper_flags(os.environ.get("MPICC") or shutil.which("mpicc") or ""))


def includes_mpi(text: str) -> bool:
    """Whether a source's text includes mpi.h itself (not through a header of its own)."""
    return "mpi.h" in text and _INCLUDES_MPI.search(text) is not None


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _reaches_mpi_h(flags: list[str]) -> bool:
    folders = [f[2:] for f in flags if f.startswith("-I") and len(f) > 2]
    folders += [b for a, b in zip(flags, flags[1:]) if a in ("-I", "-isystem")]
    return any((Path(d) / "mpi.h").is_file() for d in folders)


@cache
def _wrapper_flags(wrapper: str) -> tuple[str, ...]:
    if not wrapper:
        return ()
    for ask in (["-showme:compile"], ["-compile_info"]):  # (Open MPI's, then MPICH's)
        try:
            done = subprocess.run([wrapper, *ask], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return ()
        if done.returncode == 0 and done.stdout.strip():
            words = shlex.split(done.stdout)
            kept, skip = [], False
            for i, w in enumerate(words):
                if skip:
                    skip = False
                    continue
                if w in ("-I", "-isystem", "-D") and i + 1 < len(words):
                    kept += [w, words[i + 1]]
                    skip = True
                elif w.startswith(("-I", "-D", "-isystem")):
                    kept.append(w)
            return tuple(kept)
    return ()
