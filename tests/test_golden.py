"""The golden cases of specs/golden: annotated C in, the expected header or diagnostics out."""

from __future__ import annotations

import shutil

import pytest

from conftest import GOLDEN

GOOD = sorted(p.name for p in GOLDEN.glob("*.c"))
BAD = sorted(p.name for p in (GOLDEN / "errors").glob("*.c"))


@pytest.fixture
def golden_copy(tmp_path, monkeypatch):
    copy = tmp_path / "golden"
    shutil.copytree(GOLDEN, copy)
    return copy


@pytest.mark.parametrize("name", GOOD)
def test_golden_header(name, golden_copy, monkeypatch, adgen):
    monkeypatch.chdir(golden_copy)
    result = adgen("generate", "-q", name, "-o", "out")
    assert result.status == 0, result.err
    stem = name[:-2]
    expected = (GOLDEN / f"{stem}.adgen.h").read_text()
    assert (golden_copy / "out" / f"{stem}.adgen.h").read_text() == expected
    assert (golden_copy / "out" / f"{stem}.adgen.c").exists()


@pytest.mark.parametrize("name", BAD)
def test_golden_error(name, golden_copy, monkeypatch, adgen):
    monkeypatch.chdir(golden_copy / "errors")
    result = adgen("generate", name, "-o", "out")
    assert result.status == 1
    assert result.err == (GOLDEN / "errors" / f"{name[:-2]}.err").read_text()
    assert not (golden_copy / "errors" / "out").exists(), "nothing is written on error"


def test_every_error_case_has_expectation():
    for name in BAD:
        assert (GOLDEN / "errors" / f"{name[:-2]}.err").exists(), name
    for name in GOOD:
        assert (GOLDEN / f"{name[:-2]}.adgen.h").exists(), name
