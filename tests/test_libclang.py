"""libclang, checked (frontend/libclang.py): the PyPI package `libclang` (TensorFlow requires it)
installs the same files as libclang-ng; where its older library is what the clang module loads,
a build stops with an error saying how to put libclang-ng back, rather than read C++ wrongly."""

from __future__ import annotations

import pytest

from adgen.base.diagnostics import AdgenError
from adgen.frontend import libclang


def test_this_installation_reads_with_libclang_ng():
    assert libclang.version().startswith(f"clang version {libclang.NEEDED}."), libclang.version()


def test_an_older_libclang_is_an_error_saying_what_to_do(monkeypatch):
    monkeypatch.setattr(libclang, "version", lambda: "clang version 18.1.1")
    with pytest.raises(AdgenError) as caught:
        libclang.index()
    (diagnostic,) = caught.value.diagnostics
    assert "adgen reads sources with libclang 22 (the libclang-ng package), but the clang module holds 18" \
        in diagnostic.message
    assert "pip install --force-reinstall --no-deps libclang-ng" in diagnostic.message
    monkeypatch.setattr(libclang, "version", lambda: "")  # (a library that cannot say: trusted, as before)
    assert libclang.index() is not None
