"""Record files: what `--json FILE` of each benchmark writes, and `python -m bench --report DIR
--from FILE` reads. One JSON object: `kind` (kernels, programs, llmc, gradbench, checkpointing, bridges, mpi),
where and when it was measured (`machine`: the CPU's model and cores, `os`, `commit`: adgen's
`git rev-parse --short HEAD`, with "+changes" where tracked files differ from it, `date`), the
run's `settings`, its `records` and, for some kinds, `builds`. A bare list is an older
`python -m bench --json` file (kernels, its provenance unknown)."""

from __future__ import annotations

import datetime
import json
import platform
import subprocess
from pathlib import Path

from bench import machine

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("kernels", "programs", "llmc", "gradbench", "checkpointing", "bridges", "mpi")
PROVENANCE = ("machine", "os", "commit", "date")
UNKNOWN = "unknown"


def os_name() -> str:
    """The distribution (os-release's PRETTY_NAME), the kernel and the architecture."""
    try:
        release = platform.freedesktop_os_release().get("PRETTY_NAME", "")
    except OSError:
        release = ""
    system = f"{platform.system()} {platform.release()} {platform.machine()}"
    return f"{release}, {system}" if release else system


def commit(path: Path = ROOT, *within: str) -> str:
    """HEAD's short hash (of this checkout, or of another's: llm.c's, GradBench's), with "+changes"
    where the tracked files (those `within`, where given) differ from it."""
    head = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return UNKNOWN
    dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no", "--",
                            *(within or ["."])], capture_output=True, text=True).stdout.strip()
    return head.stdout.strip() + ("+changes" if dirty else "")


def provenance() -> dict[str, str]:
    return {"machine": machine(), "os": os_name(), "commit": commit(), "date": datetime.date.today().isoformat()}


def envelope(kind: str, records: list, settings: dict | None = None, **more) -> dict:
    """A record file's content, measured here and now."""
    assert kind in KINDS, kind
    return {"kind": kind, **provenance(), "settings": settings or {}, "records": records, **more}


def write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")


def read(path: Path) -> dict:
    """A record file, its provenance filled in with "unknown" where it has none."""
    data = json.loads(Path(path).read_text())
    if isinstance(data, list):
        data = {"kind": "kernels", "settings": {}, "records": data}
    if not isinstance(data, dict) or data.get("kind") not in KINDS:
        raise ValueError(f"{path}: not a benchmark record file (no kind among {', '.join(KINDS)})")
    for key in PROVENANCE:
        data.setdefault(key, UNKNOWN)
    data.setdefault("settings", {})
    data.setdefault("records", [])
    return data
