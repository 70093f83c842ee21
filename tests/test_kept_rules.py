"""MPI's rules compiled once per installation (commands/build/kept_rules.py): kept with the
headers their compile read, used again only while each header is as it was."""

from __future__ import annotations

import os

from adgen.commands.build import kept_rules


def test_make_rules_are_read_with_continuations_and_escaped_spaces():
    rule = "adgen-mpi.o: /w/adgen-mpi.c /usr/include/mpi.h \\\n  /opt/my\\ mpi/include/mpi_portable.h /x.h\n"
    assert kept_rules._dependencies(rule) == ["/w/adgen-mpi.c", "/usr/include/mpi.h",
                                              "/opt/my mpi/include/mpi_portable.h", "/x.h"]


def test_kept_code_is_used_again_until_a_header_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source, header, other = tmp_path / "rules.c", tmp_path / "mpi.h", tmp_path / "mpi_ext.h"
    for f in (source, header, other):
        f.write_text("/* */\n")
    name = kept_rules.key("rules", ("clang",), ["-I", str(tmp_path)])
    assert kept_rules.kept(name) is None
    kept_rules.keep(name, b"BC\xc0\xde", f"rules.o: {source} {header} {other}\n", source)
    assert kept_rules.kept(name) == b"BC\xc0\xde"
    assert oct(os.stat(tmp_path / "cache" / "adgen" / "mpi-rules").st_mode & 0o777) == "0o700"
    header.write_text("/* another MPI */\n")  # (an MPI upgraded: compiled anew)
    assert kept_rules.kept(name) is None
    kept_rules.keep(name, b"BC2", f"rules.o: {source} {header}\n", source)
    assert kept_rules.kept(name) == b"BC2"
    header.unlink()
    assert kept_rules.kept(name) is None
    assert kept_rules.kept(kept_rules.key("other flags")) is None


def test_entries_beyond_the_most_recent_are_forgotten(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(kept_rules, "KEPT", 2)
    source, header = tmp_path / "rules.c", tmp_path / "mpi.h"
    source.write_text("/* */\n")
    header.write_text("/* */\n")
    names = [kept_rules.key("flags", k) for k in range(4)]
    for k, name in enumerate(names):
        kept_rules.keep(name, b"BC%d" % k, f"rules.o: {source} {header}\n", source)
        os.utime(tmp_path / "cache" / "adgen" / "mpi-rules" / f"{name}.json", (1000 + k, 1000 + k))
    assert [kept_rules.kept(n) for n in names] == [None, None, b"BC2", b"BC3"]
    assert len(list((tmp_path / "cache" / "adgen" / "mpi-rules").iterdir())) == 4
