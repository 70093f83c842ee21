"""Builds leave nothing of the user's sources in zig's cache (issue 42, item 3): zig stored the
bitcode of every build's compiles there, never to be used again. And what builds do keep, their
compiled templates, stay in a folder of the user's alone (not in the temporary directory)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SOURCE = """// @diff(f_grad: (active) -> active)
double f(double x) { return x * x; }
"""


def _bitcode_folders(cache: Path) -> list[Path]:
    """The folders of zig's cache holding bitcode (of the user's sources: adgen compiles nothing
    else to bitcode)."""
    return sorted({p.parent for p in (cache / "zig" / "o").glob("*/*.bc")})


def test_a_second_build_stores_no_more_bitcode_in_zigs_cache(tmp_path):
    (tmp_path / "f.c").write_text(SOURCE)
    home, temporary = tmp_path / "home", tmp_path / "tmp"
    temporary.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZIG_")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), TMPDIR=str(temporary))
    stored = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "build", "-q", "f.c", "-o", "out"],
                              cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        stored.append(_bitcode_folders(home / ".cache"))
    assert stored == [[], []]
    # the first build's own cache is gone (the command line exits without removing its own: the next one does)
    assert len(list(temporary.glob("adgen-zig-*"))) <= 1


def test_templates_compile_once_into_a_folder_of_this_users_alone(tmp_path, monkeypatch):
    """Each build compiled its templates again (60 ms of a 3 s build): Jinja's cache of compiled
    templates keeps them in `$XDG_CACHE_HOME/adgen/templates`, mode 0700; a folder others may
    write (or whose parent they may) is not used, and templates compile as before."""
    import stat

    import jinja2

    from adgen.base import templates

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    templates._compiled.cache_clear()
    try:
        cache = templates._compiled()
        assert isinstance(cache, jinja2.FileSystemBytecodeCache)
        assert cache.directory == str(tmp_path / "cache" / "adgen" / "templates")
        info = os.lstat(cache.directory)
        assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) == 0o700
        environment = templates.environment()
        assert environment.bytecode_cache is cache and environment.get_template("libc.c.j2").render(version="x")
        assert os.listdir(cache.directory)  # (kept for the next build)
        for folder, mode in ((cache.directory, 0o770), (str(tmp_path / "cache" / "adgen"), 0o777)):
            os.chmod(folder, mode)
            templates._compiled.cache_clear()
            assert templates._compiled() is None and templates.environment().bytecode_cache is None
            os.chmod(folder, 0o700)
    finally:
        templates._compiled.cache_clear()
