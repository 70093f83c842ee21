"""MPICH (ir_ad/mpi.py's `handles`, templates/mpi_rules.c.j2, specs/mpi.md): its handles are
numbers (`MPI_DOUBLE` is `(MPI_Datatype)0x4c00080b`), not Open MPI's addresses, so the IR says which
communications are of integers and which of doubles only through the constants the rules' module
makes of them; and it gives every request that completed at once the same handle, and leaves the
status of a nonblocking receive from MPI_PROC_NULL unwritten. The kernels of test_mpi.py, built
with `adgen build` through MPICH's wrapper and run on 2 and 3 ranks against finite differences and
forward against reverse; a communication of integers; a refused datatype at its line; `adgen cc`
as the wrapper's compiler (MPICH_CC); a fixed-seed fuzz run. Three ranks only where there are three
cores: MPICH's ranks (ch4:ucx, as Debian builds it) wait by polling, and never yield, so three on two
cores take about 500 times as long as two (47 s against 0.1 s for the fuzz run's program, whatever
MPIR_CVAR_POLLS_BEFORE_YIELD, UCX_TLS or the shared-memory queue say); Open MPI's tests run three
ranks on two cores (--oversubscribe makes its ranks yield). Runs where Debian's MPICH is installed beside Open MPI (.ci/run installs libmpich-dev and
mpich: mpicc.mpich, mpirun.mpich), and is skipped with that reason elsewhere."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from test_mpi import DRIVER, KERNELS, KERNELS_DRIVER, LOCAL, enzyme_api_through_wrapper, refused_datatype_at_its_line

MPICC, MPIRUN = shutil.which("mpicc.mpich"), shutil.which("mpirun.mpich")
RANKS = [2, 3] if (os.cpu_count() or 1) >= 3 else [2]  # (see above: MPICH's ranks poll)
pytestmark = pytest.mark.skipif(not (MPICC and MPIRUN), reason="MPICH is not installed as Debian installs it beside "
                                "Open MPI (.ci/run installs libmpich-dev and mpich; apt-get install libmpich-dev mpich)")


@pytest.fixture
def through_mpich(monkeypatch):
    """adgen finds mpi.h through MPICH's wrapper ($MPICC, base/mpi_wrapper.py)."""
    monkeypatch.setenv("MPICC", MPICC)


def _build_and_run(adgen, tmp_path, source: str, driver: str, ranks: list[int]) -> list[str]:
    src = tmp_path / "kernels.c"
    src.write_text(source)
    (tmp_path / "main.c").write_text(driver.replace('"local.adgen.h"', '"kernels.adgen.h"'))
    assert adgen("build", "-q", src, "-o", tmp_path / "out").status == 0
    subprocess.run([MPICC, "-O2", "-I", str(tmp_path / "out"), str(tmp_path / "main.c"), str(src),
                    str(tmp_path / "out" / "kernels.adgen.o"), "-lm", "-o", str(tmp_path / "prog")], check=True,
                   capture_output=True)
    outputs = []
    for n in ranks:
        run = subprocess.run([MPIRUN, "-np", str(n), str(tmp_path / "prog")], capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        outputs.append(run.stdout)
    return outputs


def test_the_kernels_against_finite_differences(adgen, tmp_path, through_mpich):
    """Every kernel of test_mpi.py (point to point, nonblocking, persistent, collectives and their
    nonblocking forms, derived datatypes, split communicators), both modes, forward mode at widths 3 and 2
    (dualv) too, on 2 and 3 ranks (2 only on fewer than three cores)."""
    for n, out in zip(RANKS, _build_and_run(adgen, tmp_path, KERNELS, KERNELS_DRIVER, RANKS)):
        assert out.count(": ok") == 2 * 13 * n and "WRONG" not in out, out


def test_communications_of_integers_carry_no_derivatives(adgen, tmp_path, through_mpich):
    _build_and_run(adgen, tmp_path, LOCAL, DRIVER, [2])


def test_a_datatype_the_rules_refuse_is_an_error_at_its_line(adgen, c_file, tmp_path, through_mpich):
    refused_datatype_at_its_line(adgen, c_file, tmp_path)


def test_adgen_cc_as_the_wrappers_compiler(tmp_path):
    """Code written for Enzyme, built with `MPICH_CC="adgen cc" mpicc.mpich`."""
    enzyme_api_through_wrapper(tmp_path, MPICC, "MPICH_CC", [MPIRUN])


def test_quick_fuzz_run_with_mpich():
    """tests/mpi_fuzzer.py at a fixed seed, built and run with MPICH."""
    import mpi_fuzzer

    failures, inconclusive = mpi_fuzzer.fuzz(programs=20, seed=20261201, ranks=RANKS, batch=20, library="mpich")
    assert failures == [], failures[0][:4000]
    assert inconclusive <= 2


def test_the_library_is_mpich():
    """(These tests would pass with Open MPI too: the wrapper must be MPICH's.)"""
    shown = subprocess.run([MPICC, "-show"], capture_output=True, text=True)
    assert shown.returncode == 0 and "mpich" in shown.stdout, shown.stdout
    assert os.path.realpath(MPICC) != os.path.realpath(shutil.which("mpicc") or "")
