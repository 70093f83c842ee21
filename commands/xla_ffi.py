"""Entries of an `adgen.load` library as XLA FFI handlers, for `adgen.jax`: one plain C function
per entry (its parameters as `entry_layout.py` sorts them), written from the manifest, which XLA
calls from compiled programs (no Python in the call). C, not C++: XLA's C API
(`xla/ffi/api/c_api.h`, from `jax.ffi.include_dir()`) is all a handler needs, and the bundled
clang compiles a C file in a fraction of a second where the C++ header would first have zig
build its libc++."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from adgen.base.templates import render_text
from adgen.base.toolchain import bundled_cc
from adgen.base.user_cache import NotPrivate, private_folder
from adgen.commands.entry_layout import Layout
from adgen.commands.load_errors import BuildError, CacheError


def handler_library(layouts: list[Layout], include_dir: str, version: str = "") -> Path:
    """A shared library of one handler per layout (`adgen_xla_ENTRY`), compiled once and kept in
    the user's private cache (`~/.cache/adgen/xla`) under the digest of its source, the headers'
    folder and the `version` of the library that holds them."""
    source = render_text("xla_ffi.c.j2", layouts=layouts)
    key = hashlib.sha256((source + include_dir + version).encode()).hexdigest()[:24]
    try:
        folder = private_folder("xla")
    except NotPrivate as exc:
        raise CacheError(f"adgen: error: the cache {exc.folder} {exc.why}; adgen.jax loads the handlers it finds there, "
                         "so it must be yours alone\n") from exc
    library = folder / f"handlers-{key}.so"
    if library.exists():
        return library
    with tempfile.TemporaryDirectory(prefix="adgen-xla-") as scratch:
        c_file = Path(scratch) / "handlers.c"
        c_file.write_text(source)
        fd, aside = tempfile.mkstemp(prefix=".handlers-", suffix=".so", dir=folder)
        os.close(fd)
        try:
            done = subprocess.run([*bundled_cc(), "-shared", "-fPIC", "-O2", "-std=c11", "-isystem", include_dir,
                                   str(c_file), "-o", aside], capture_output=True, text=True)
            if done.returncode != 0:
                raise BuildError(f"adgen: internal error: the XLA handlers did not compile:\n{done.stderr}")
            os.replace(aside, library)  # (whole or not at all: another process may be loading it)
        finally:
            if os.path.exists(aside):
                os.unlink(aside)
    return library
