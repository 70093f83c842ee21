"""MPI programs (ir_ad/mpi.py, templates/mpi_rules.c.j2, base/mpi_wrapper.py, specs/mpi.md):
derivatives of functions that communicate — point to point, nonblocking, collectives, in place —
in both modes, built with `adgen build` (mpi.h found through the wrapper), with `adgen cc` as the
wrapper's compiler (`OMPI_CC="adgen cc" mpicc`) and with CMake, run on 2 and 3 ranks and checked
against finite differences of the whole distributed program and forward against reverse; what
cannot be differentiated refused at its line, or, where only the running program shows it, when
it runs. Runs where Open MPI's mpicc and mpirun are installed (.ci/run installs libopenmpi-dev and
openmpi-bin), and is skipped with that reason elsewhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from adgen.base.mpi_wrapper import mpi_include_flags

MPICC, MPIRUN = shutil.which("mpicc"), shutil.which("mpirun")
pytestmark = pytest.mark.skipif(not (MPICC and MPIRUN), reason="Open MPI is not installed (.ci/run installs "
                                "libopenmpi-dev and openmpi-bin; apt-get install libopenmpi-dev openmpi-bin)")

LOCAL = r"""
#include <mpi.h>

/* @diff(local_grad: (dup, const) -> active; local_fwd: forward (dual, const) -> dual) */
double local(const double *x, int n)
{
    int rank, size, total;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&n, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);  /* integers: no derivatives */
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (rank + 1) * x[i] * x[i] * x[i] / (size * total);
    return s;
}
"""

DRIVER = r"""
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include "local.adgen.h"
double local(const double *x, int n);

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x[3] = {0.5 + rank, -1.0, 2.0}, dx[3] = {0}, worst = 0, h = 1e-6;
    local_grad(x, dx, 3, 1.0);
    for (int i = 0; i < 3; i++) {
        double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]}, t[3] = {0}, fd;
        xp[i] += h; xm[i] -= h; t[i] = 1;
        fd = (local(xp, 3) - local(xm, 3)) / (2 * h);
        worst = fmax(worst, fmax(fabs(fd - dx[i]), fabs(local_fwd(x, t, 3).d_ret - dx[i])));
    }
    printf("rank %d: %s\n", rank, worst < 1e-6 ? "ok" : "WRONG");
    MPI_Finalize();
    return worst < 1e-6 ? 0 : 1;
}
"""

ENZYME = r"""
#include <mpi.h>
#include <stdio.h>
extern int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);

double local(const double *x, int n)
{
    int rank, size, total;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&n, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double s = 0;
    for (int i = 0; i < n; i++) s += (rank + 1) * x[i] * x[i] / (size * total);
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x[2] = {1.0, -2.0}, dx[2] = {0, 0};
    __enzyme_autodiff((void *)local, enzyme_dup, x, dx, enzyme_const, 2);
    double want = 2.0 * (rank + 1) / (size * 2 * size);
    int right = dx[0] == want * x[0] && dx[1] == want * x[1];
    printf("rank %d: %s\n", rank, right ? "ok" : "WRONG");
    MPI_Finalize();
    return right ? 0 : 1;
}
"""


def _mpirun(exe, ranks: int) -> subprocess.CompletedProcess:
    return subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), str(exe)],
                          capture_output=True, text=True, timeout=120)


def test_mpi_h_is_found_through_the_wrapper(tmp_path):
    src = tmp_path / "local.c"
    src.write_text(LOCAL)
    flags = mpi_include_flags([src], [])
    assert any(f.startswith("-I") and os.path.isfile(os.path.join(f[2:], "mpi.h")) for f in flags), flags
    assert mpi_include_flags([src], flags) == []  # (the flags given reach mpi.h already)
    plain = tmp_path / "plain.c"
    plain.write_text("double f(double x) { return x; }\n")
    assert mpi_include_flags([plain], []) == []


@pytest.mark.parametrize("ranks", [2, 3])
def test_rank_size_and_integer_reductions_carry_no_derivatives(adgen, tmp_path, ranks):
    src = tmp_path / "local.c"
    src.write_text(LOCAL)
    (tmp_path / "main.c").write_text(DRIVER)
    assert adgen("build", "-q", src, "-o", tmp_path / "out").status == 0  # (no flags: the wrapper's)
    subprocess.run([MPICC, "-O2", "-I", str(tmp_path / "out"), str(tmp_path / "main.c"), str(src),
                    str(tmp_path / "out" / "local.adgen.o"), "-lm", "-o", str(tmp_path / "prog")], check=True)
    run = _mpirun(tmp_path / "prog", ranks)
    assert run.returncode == 0 and run.stdout.count(": ok") == ranks, run.stdout + run.stderr


def test_adgen_cc_as_the_wrappers_compiler(tmp_path):
    enzyme_api_through_wrapper(tmp_path, MPICC, "OMPI_CC", [MPIRUN, "--allow-run-as-root", "--oversubscribe"])


def enzyme_api_through_wrapper(tmp_path, mpicc: str, variable: str, mpirun: list[str]) -> None:
    """ENZYME built by an MPI wrapper whose compiler is `adgen cc` (`variable`: Open MPI's OMPI_CC,
    MPICH's MPICH_CC), run on 2 ranks."""
    src = tmp_path / "enzyme.c"
    src.write_text(ENZYME)
    env = {**os.environ, variable: f"{sys.executable} -m adgen.commands.cli cc"}
    built = subprocess.run([mpicc, "-O2", str(src), "-o", str(tmp_path / "prog")], capture_output=True, text=True,
                           env=env, cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    run = subprocess.run([*mpirun, "-np", "2", str(tmp_path / "prog")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.count(": ok") == 2, run.stdout + run.stderr


# Each kernel a rank's share of a global objective J (the sum over the ranks of what each returns),
# of N = 6 values per rank; up to 4 ranks.
KERNELS = r"""#include <mpi.h>
#include <math.h>

/* Each kernel: a rank's share of a global objective; N = 6 values per rank. */

/* @diff(p2p_grad: (dup, const) -> active; p2p_fwd: forward (dual, const) -> dual; p2p_fwd3: forward[3] (dual, const) -> dual; p2p_fwdv: forward[2] (dualv, const) -> dual) */
double p2p(double *x, int n)   /* blocking send/recv to the right (Send, Ssend, Bsend), ANY_SOURCE receive,
                                  PROC_NULL edges */
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    double got[6] = {0};
    int right = rank + 1 < size ? rank + 1 : MPI_PROC_NULL, left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    if (rank % 2 == 0) {
        if (rank % 4 == 0) MPI_Send(x, n, MPI_DOUBLE, right, 3, MPI_COMM_WORLD);
        else MPI_Ssend(x, n, MPI_DOUBLE, right, 3, MPI_COMM_WORLD);
        MPI_Recv(got, n, MPI_DOUBLE, left == MPI_PROC_NULL ? MPI_PROC_NULL : MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        static char space[4096 + MPI_BSEND_OVERHEAD];
        void *detached;
        int bytes;
        MPI_Recv(got, n, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Buffer_attach(space, sizeof space);
        MPI_Bsend(x, n, MPI_DOUBLE, right, 3, MPI_COMM_WORLD);
        MPI_Buffer_detach(&detached, &bytes);
    }
    double s = 0;
    for (int i = 0; i < n; i++) s += sin(got[i]) * x[i] + x[i] * x[i] * (rank + 1);
    return s;
}

/* @diff(halo_grad: (dup, const) -> active; halo_fwd: forward (dual, const) -> dual; halo_fwd3: forward[3] (dual, const) -> dual; halo_fwdv: forward[2] (dualv, const) -> dual) */
double halo(double *x, int n)  /* nonblocking halo exchange on a ring, Waitall and Wait */
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    double fromleft[2], fromright[2];
    MPI_Request r[4];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Irecv(fromleft, 2, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(fromright, 2, MPI_DOUBLE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &r[1]);
    MPI_Isend(x + n - 2, 2, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &r[2]);
    MPI_Isend(x, 2, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &r[3]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    MPI_Wait(&r[2], MPI_STATUS_IGNORE);
    MPI_Wait(&r[3], MPI_STATUS_IGNORE);
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    s += fromleft[0] * x[0] * fromleft[1] + exp(fromright[1]) * x[n - 1] + fromright[0];
    return s;
}

/* @diff(reductions_grad: (dup, const) -> active; reductions_fwd: forward (dual, const) -> dual; reductions_fwd3: forward[3] (dual, const) -> dual; reductions_fwdv: forward[2] (dualv, const) -> dual) */
double reductions(double *x, int n)  /* Reduce and Allreduce: SUM, PROD, MAX, MIN; in place */
{
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double sum[6], prod[6], mx[6], mn[6], inplace[6], r[6] = {0};
    MPI_Allreduce(x, sum, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(x, prod, n, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD);
    MPI_Allreduce(x, mx, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Reduce(x, mn, n, MPI_DOUBLE, MPI_MIN, 1, MPI_COMM_WORLD);
    MPI_Reduce(x, r, n, MPI_DOUBLE, MPI_PROD, 0, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) inplace[i] = x[i] * x[i];
    MPI_Allreduce(MPI_IN_PLACE, inplace, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double s = 0;
    for (int i = 0; i < n; i++) {
        s += sum[i] * x[i] + prod[i] * (rank + 1) + mx[i] * mx[i] + inplace[i] * x[i] + r[i];
        if (rank == 1) s += 3 * mn[i];
    }
    return s;
}

/* @diff(moves_grad: (dup, const) -> active; moves_fwd: forward (dual, const) -> dual; moves_fwd3: forward[3] (dual, const) -> dual; moves_fwdv: forward[2] (dualv, const) -> dual) */
double moves(double *x, int n)  /* Bcast, Gather, Scatter, Allgather, Alltoall, Sendrecv_replace */
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    double b[2] = {x[0], x[1] * x[1]}, all[8], g[8] = {0}, sc[2], a2a[8], rep[2] = {x[2], x[3]};
    MPI_Bcast(b, 2, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
    MPI_Gather(x + 1, 2, MPI_DOUBLE, g, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double src[8];
    for (int i = 0; i < 2 * size; i++) src[i] = x[i % n] * (i + 1);
    MPI_Scatter(src, 2, MPI_DOUBLE, sc, 2, MPI_DOUBLE, 1, MPI_COMM_WORLD);
    MPI_Allgather(x + 3, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    double out[8];
    for (int i = 0; i < 2 * size; i++) out[i] = x[(i + 2) % n] * x[i % n];
    MPI_Alltoall(out, 2, MPI_DOUBLE, a2a, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Sendrecv_replace(rep, 2, MPI_DOUBLE, (rank + 1) % size, 5, (rank + size - 1) % size, 5, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
    double s = b[0] * x[2] + b[1] * x[3] + sc[0] * sc[1] + rep[0] * x[4] + rep[1] * rep[1];
    for (int i = 0; i < 2 * size; i++) s += all[i] * x[i % n] * 0.5 + a2a[i] * (i + 1) + g[i] * g[i];
    return s;
}

/* @diff(inplace_grad: (dup, const) -> active; inplace_fwd: forward (dual, const) -> dual; inplace_fwd3: forward[3] (dual, const) -> dual; inplace_fwdv: forward[2] (dualv, const) -> dual) */
double inplace(double *x, int n)  /* MPI_IN_PLACE at the roots of Reduce, Gather, Scatter; Allgather, Alltoall in place */
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    double red[2] = {x[0] * x[1], x[2]}, g[8], sc[8], ag[8], a2a[8];
    for (int i = 0; i < 2 * size; i++) g[i] = sc[i] = ag[i] = a2a[i] = x[i % n] * (rank + i + 1);
    if (rank == 0) MPI_Reduce(MPI_IN_PLACE, red, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else MPI_Reduce(red, 0, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 1) MPI_Gather(MPI_IN_PLACE, 2, MPI_DOUBLE, g, 2, MPI_DOUBLE, 1, MPI_COMM_WORLD);
    else MPI_Gather(g, 2, MPI_DOUBLE, 0, 2, MPI_DOUBLE, 1, MPI_COMM_WORLD);
    if (rank == 0) MPI_Scatter(sc, 2, MPI_DOUBLE, MPI_IN_PLACE, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else MPI_Scatter(0, 2, MPI_DOUBLE, sc, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Allgather(MPI_IN_PLACE, 2, MPI_DOUBLE, ag, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Alltoall(MPI_IN_PLACE, 2, MPI_DOUBLE, a2a, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    double s = (rank == 0 ? red[0] * red[1] : 0);
    for (int i = 0; i < 2 * size; i++) s += (rank == 1 ? g[i] * g[i] : 0) + ag[i] * ag[i] + a2a[i] * x[i % n] + (i < 2 ? sc[i] * sc[i] : 0);
    if (rank == 0) for (int i = 2; i < 2 * size; i++) s += sc[i] * x[1];
    return s;
}

/* @diff(columns_grad: (dup, const) -> active; columns_fwd: forward (dual, const) -> dual; columns_fwd3: forward[3] (dual, const) -> dual; columns_fwdv: forward[2] (dualv, const) -> dual) */
double columns(double *x, int n)  /* derived datatypes: halo columns of MPI_Type_vector, pairs of MPI_Type_contiguous,
                                    elements picked by MPI_Type_indexed and MPI_Type_create_struct, a column by bytes
                                    (MPI_Type_create_hvector) */
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    double g[3][4], t[3][4], pairs[3][2];
    for (int r = 0; r < 3; r++) { g[r][0] = g[r][3] = 0; g[r][1] = x[r]; g[r][2] = x[r + 3] * x[r]; }
    MPI_Datatype column, two;
    MPI_Type_vector(3, 1, 4, MPI_DOUBLE, &column);
    MPI_Type_commit(&column);
    MPI_Type_contiguous(2, MPI_DOUBLE, &two);
    MPI_Type_commit(&two);
    int right = rank + 1 < size ? rank + 1 : MPI_PROC_NULL, left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    MPI_Sendrecv(&g[0][2], 1, column, right, 0, &g[0][0], 1, column, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Request q[2];
    MPI_Irecv(&g[0][3], 1, column, right, 1, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(&g[0][1], 1, column, left, 1, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    for (int r = 0; r < 3; r++)
        for (int c = 1; c < 3; c++)
            t[r][c] = g[r][c] + 0.2 * (g[r][c - 1] + g[r][c + 1] - 2 * g[r][c]) * g[r][c];
    for (int r = 0; r < 3; r++) { pairs[r][0] = t[r][1]; pairs[r][1] = t[r][2] * t[r][2]; }
    MPI_Sendrecv_replace(pairs, 3, two, (rank + 1) % size, 2, (rank + size - 1) % size, 2, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
    MPI_Allreduce(MPI_IN_PLACE, pairs, 6, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(&g[0][1], 1, column, 0, MPI_COMM_WORLD);
    MPI_Datatype picked, bytes;
    int lengths[2] = {1, 2}, starts[2] = {0, 2};
    MPI_Type_indexed(2, lengths, starts, MPI_DOUBLE, &picked);  /* elements 0, 2 and 3 */
    MPI_Type_commit(&picked);
    MPI_Type_create_hvector(3, 1, 4 * sizeof(double), MPI_DOUBLE, &bytes);
    MPI_Type_commit(&bytes);
    double some[4] = {t[0][1] * x[rank % 6], t[1][2], t[2][1] + x[5], t[0][2] * t[1][1]};
    MPI_Bcast(some, 1, picked, size - 1, MPI_COMM_WORLD);
    MPI_Datatype ends;  /* elements 0 and 3, by a struct of the handles in an array of its own */
    MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 3 * sizeof(double)},
                           (MPI_Datatype[]){MPI_DOUBLE, MPI_DOUBLE}, &ends);
    MPI_Type_commit(&ends);
    MPI_Bcast(some, 1, ends, 0, MPI_COMM_WORLD);
    MPI_Type_free(&ends);
    MPI_Sendrecv_replace(&g[0][2], 1, bytes, (rank + 1) % size, 3, (rank + size - 1) % size, 3, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
    MPI_Type_free(&column);
    MPI_Type_free(&two);
    MPI_Type_free(&picked);
    MPI_Type_free(&bytes);
    double s = some[0] * some[3] + some[2] * some[1];
    for (int r = 0; r < 3; r++)
        s += pairs[r][0] * pairs[r][1] * 0.1 + g[r][1] * t[r][2] + sin(g[r][0]) * t[r][1] + 0.3 * g[r][2] * g[r][2];
    return s;
}

/* @diff(persistent_grad: (dup, const) -> active; persistent_fwd: forward (dual, const) -> dual; persistent_fwd3: forward[3] (dual, const) -> dual; persistent_fwdv: forward[2] (dualv, const) -> dual) */
double persistent(double *x, int n)  /* persistent requests: Send_init, Recv_init, Start(all) three times, freed */
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    double out[2], in[2] = {0}, s = 0;
    MPI_Request q[2];
    MPI_Recv_init(in, 2, MPI_DOUBLE, (rank + size - 1) % size, 4, MPI_COMM_WORLD, &q[0]);
    MPI_Send_init(out, 2, MPI_DOUBLE, (rank + 1) % size, 4, MPI_COMM_WORLD, &q[1]);
    for (int step = 0; step < 3; step++) {
        out[0] = x[step] * x[step + 1];
        out[1] = sin(x[step + 2]) + in[1];
        if (step == 1) { MPI_Start(&q[0]); MPI_Start(&q[1]); }
        else MPI_Startall(2, q);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        s += in[0] * x[step] + in[1] * in[1];
    }
    MPI_Request_free(&q[0]);
    MPI_Request_free(&q[1]);
    return s;
}

/* @diff(scans_grad: (dup, const) -> active; scans_fwd: forward (dual, const) -> dual; scans_fwd3: forward[3] (dual, const) -> dual; scans_fwdv: forward[2] (dualv, const) -> dual) */
double scans(double *x, int n)  /* Scan, Exscan (SUM in place too, MAX, PROD, MIN), Reduce_scatter_block (SUM, MAX),
                                   Reduce_scatter */
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    double sc[3], ex[3] = {0}, ip[3] = {x[3], x[4], x[5] * x[5]}, all[8], mx[8], rs[2], rsm[2], rv[8];
    MPI_Scan(x, sc, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(x + 1, ex, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Scan(MPI_IN_PLACE, ip, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double smx[3], spr[3], emn[3] = {0}, wave[3] = {sin(3 * x[0] + rank), cos(x[1] * (rank + 1)), x[2] * (2 - rank)};
    MPI_Scan(wave, smx, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Scan(x + 2, spr, 3, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD);
    MPI_Exscan(wave, emn, 3, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0) emn[0] = emn[1] = emn[2] = 0;
    for (int i = 0; i < 2 * size; i++) { all[i] = x[i % n] * (i + 1); mx[i] = x[(i + rank) % n] + 0.1 * i * rank; }
    MPI_Reduce_scatter_block(all, rs, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce_scatter_block(mx, rsm, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int counts[4];
    for (int q = 0; q < size; q++) counts[q] = 1 + q % 2;
    double in[8];
    int total = 0;
    for (int q = 0; q < size; q++) total += counts[q];
    for (int i = 0; i < total; i++) in[i] = x[(i + 2) % n] * x[i % n];
    MPI_Reduce_scatter(in, rv, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double s = rs[0] * rs[1] + rsm[0] * x[0] + rsm[1] * rsm[1] + rv[0] * rv[0];
    for (int i = 0; i < 3; i++) s += sc[i] * x[i] + ex[i] * ex[i] + ip[i] * sin(x[i]) + smx[i] * smx[i] + spr[i] * x[i]
                                    + emn[i] * (i + 1);
    if (rank % 2 == 1) s += rv[1] * x[2];
    return s;
}

/* @diff(vees_grad: (dup, const) -> active; vees_fwd: forward (dual, const) -> dual; vees_fwd3: forward[3] (dual, const) -> dual; vees_fwdv: forward[2] (dualv, const) -> dual) */
double vees(double *x, int n)  /* Gatherv, Scatterv, Allgatherv (in place too), Alltoallv: rank q's chunks of 1 + q % 2 */
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    int counts[4], displs[4], total = 0, mine = 1 + rank % 2;
    for (int q = 0; q < size; q++) { counts[q] = 1 + q % 2; displs[q] = total + q; total += counts[q] + 1; }
    double g[16] = {0}, ag[16] = {0}, ip[16] = {0}, src[16], sc[2] = {0}, a2a_in[16], a2a_out[16] = {0};
    for (int i = 0; i < total; i++) src[i] = x[i % n] * (i + 1);
    MPI_Gatherv(x + 1, mine, MPI_DOUBLE, g, counts, displs, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
    MPI_Scatterv(src, counts, displs, MPI_DOUBLE, sc, mine, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Allgatherv(x + 2, mine, MPI_DOUBLE, ag, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int i = 0; i < mine; i++) ip[displs[rank] + i] = x[i] * x[i + 3];
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DOUBLE, ip, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    int sendc[4], sendd[4], recvc[4], recvd[4], st = 0, rt = 0;  /* rank r sends 1 + (r + q) % 2 to rank q */
    for (int q = 0; q < size; q++) {
        sendc[q] = 1 + (rank + q) % 2; sendd[q] = st; st += sendc[q];
        recvc[q] = 1 + (q + rank) % 2; recvd[q] = rt; rt += recvc[q] + 1;
    }
    for (int i = 0; i < st; i++) a2a_in[i] = x[(i + rank) % n] + x[i % n] * x[i % n];
    MPI_Alltoallv(a2a_in, sendc, sendd, MPI_DOUBLE, a2a_out, recvc, recvd, MPI_DOUBLE, MPI_COMM_WORLD);
    double s = sc[0] * sc[0] + (mine > 1 ? sc[1] * x[0] : 0);
    for (int i = 0; i < 16; i++) s += g[i] * g[i] * (rank == size - 1) + ag[i] * x[i % n] + ip[i] * ip[i] + a2a_out[i] * (i + 1);
    return s;
}

/* @diff(icoll_grad: (dup, const) -> active; icoll_fwd: forward (dual, const) -> dual; icoll_fwd3: forward[3] (dual, const) -> dual; icoll_fwdv: forward[2] (dualv, const) -> dual) */
double icoll(double *x, int n)  /* nonblocking collectives, completed by Wait and Waitall in another order;
                                   a communicator of MPI_Comm_split, freed */
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    double b[2] = {x[0] * x[1], x[2]}, sum[3], mx[3], pr[3] = {0}, ag[8], a2a_in[8], a2a[8], g[8] = {0}, sc[2];
    for (int i = 0; i < 2 * size; i++) a2a_in[i] = x[i % n] * (i + 1) + x[(i + 1) % n];
    MPI_Request q[7];
    MPI_Ibcast(b, 2, MPI_DOUBLE, size - 1, MPI_COMM_WORLD, &q[0]);
    MPI_Iallreduce(x, sum, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[1]);
    MPI_Iallreduce(x + 3, mx, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &q[2]);
    MPI_Ireduce(x + 1, pr, 3, MPI_DOUBLE, MPI_PROD, 0, MPI_COMM_WORLD, &q[3]);
    MPI_Iallgather(x + 2, 2, MPI_DOUBLE, ag, 2, MPI_DOUBLE, MPI_COMM_WORLD, &q[4]);
    MPI_Ialltoall(a2a_in, 2, MPI_DOUBLE, a2a, 2, MPI_DOUBLE, MPI_COMM_WORLD, &q[5]);
    MPI_Igather(x + 4, 2, MPI_DOUBLE, g, 2, MPI_DOUBLE, 1, MPI_COMM_WORLD, &q[6]);
    MPI_Wait(&q[4], MPI_STATUS_IGNORE);
    MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    MPI_Waitall(2, q + 5, MPI_STATUSES_IGNORE);
    MPI_Request r;
    MPI_Iscatter(ag, 2, MPI_DOUBLE, sc, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Comm half;  /* a communicator made and freed here: the reverse sweep still reduces on it */
    double hs[2];
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
    MPI_Allreduce(x + 4, hs, 2, MPI_DOUBLE, MPI_PROD, half);
    MPI_Comm_free(&half);
    double s = b[0] * b[1] + sc[0] * sc[1] + hs[0] * hs[1];
    for (int i = 0; i < 3; i++) s += sum[i] * x[i] + mx[i] * mx[i] + pr[i];
    for (int i = 0; i < 2 * size; i++) s += ag[i] * x[i % n] + a2a[i] * a2a[i] + g[i] * g[i] * 0.5;
    return s;
}

/* @diff(iscans_grad: (dup, const) -> active; iscans_fwd: forward (dual, const) -> dual; iscans_fwd3: forward[3] (dual, const) -> dual; iscans_fwdv: forward[2] (dualv, const) -> dual) */
double iscans(double *x, int n)  /* the other nonblocking collectives: Iscan (SUM, PROD), Iexscan (MAX, MIN),
                                    Ireduce_scatter_block (SUM, MAX), Ireduce_scatter (SUM, PROD), Igatherv,
                                    Iscatterv, Iallgatherv (in place too), Ialltoallv; completed in another order */
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    double sc[3], pr[3], ex[3] = {0}, emn[3] = {0}, wave[3] = {sin(3 * x[0] + rank), cos(x[1] * (rank + 1)), x[2] * (2 - rank)};
    double all[8], mx[8], rs[2], rsm[2], rv[2] = {0}, rvp[2] = {0}, in[8];
    int counts[4], displs[4], total = 0, mine = 1 + rank % 2;
    for (int q = 0; q < size; q++) { counts[q] = 1 + q % 2; displs[q] = total + q; total += counts[q] + 1; }
    for (int i = 0; i < 2 * size; i++) { all[i] = x[i % n] * (i + 1); mx[i] = x[(i + rank) % n] + 0.1 * i * rank; }
    int packed = 0;
    for (int q = 0; q < size; q++) packed += counts[q];
    for (int i = 0; i < packed; i++) in[i] = x[(i + 2) % n] * x[i % n] + 0.5;
    double g[16] = {0}, ag[16] = {0}, ip[16] = {0}, src[16], sv[2] = {0}, a2a_in[16], a2a_out[16] = {0};
    for (int i = 0; i < total; i++) src[i] = x[i % n] * (i + 1);
    for (int i = 0; i < mine; i++) ip[displs[rank] + i] = x[i] * x[i + 3];
    int sendc[4], sendd[4], recvc[4], recvd[4], st = 0, rt = 0;
    for (int q = 0; q < size; q++) {
        sendc[q] = 1 + (rank + q) % 2; sendd[q] = st; st += sendc[q];
        recvc[q] = 1 + (q + rank) % 2; recvd[q] = rt; rt += recvc[q] + 1;
    }
    for (int i = 0; i < st; i++) a2a_in[i] = x[(i + rank) % n] + x[i % n] * x[i % n];
    MPI_Request q[12];
    MPI_Iscan(x, sc, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    MPI_Iscan(x + 2, pr, 3, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD, &q[1]);
    MPI_Iexscan(wave, ex, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &q[2]);
    MPI_Iexscan(x + 1, emn, 3, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD, &q[3]);
    MPI_Ireduce_scatter_block(all, rs, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[4]);
    MPI_Ireduce_scatter_block(mx, rsm, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &q[5]);
    MPI_Ireduce_scatter(in, rv, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[6]);
    MPI_Ireduce_scatter(in, rvp, counts, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD, &q[7]);
    MPI_Igatherv(x + 1, mine, MPI_DOUBLE, g, counts, displs, MPI_DOUBLE, size - 1, MPI_COMM_WORLD, &q[8]);
    MPI_Iscatterv(src, counts, displs, MPI_DOUBLE, sv, mine, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q[9]);
    MPI_Iallgatherv(x + 2, mine, MPI_DOUBLE, ag, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD, &q[10]);
    MPI_Ialltoallv(a2a_in, sendc, sendd, MPI_DOUBLE, a2a_out, recvc, recvd, MPI_DOUBLE, MPI_COMM_WORLD, &q[11]);
    MPI_Waitall(6, q + 6, MPI_STATUSES_IGNORE);
    MPI_Wait(&q[3], MPI_STATUS_IGNORE);
    MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
    MPI_Waitall(2, q + 4, MPI_STATUSES_IGNORE);
    MPI_Request r;
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DOUBLE, ip, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    if (rank == 0) for (int i = 0; i < 3; i++) ex[i] = emn[i] = 0;
    double s = rs[0] * rs[1] + rsm[0] * x[0] + rsm[1] * rsm[1] + rv[0] * rv[0] + rvp[0] * x[3] + sv[0] * sv[0]
               + (mine > 1 ? sv[1] * x[0] + rv[1] * x[2] + rvp[1] : 0);
    for (int i = 0; i < 3; i++) s += sc[i] * x[i] + pr[i] * x[i] + ex[i] * ex[i] + emn[i] * (i + 1);
    for (int i = 0; i < 16; i++) s += g[i] * g[i] * (rank == size - 1) + ag[i] * x[i % n] + ip[i] * ip[i] + a2a_out[i] * (i + 1);
    return s;
}

/* @diff(completions_grad: (dup, const) -> active; completions_fwd: forward (dual, const) -> dual; completions_fwd3: forward[3] (dual, const) -> dual; completions_fwdv: forward[2] (dualv, const) -> dual) */
double completions(double *x, int n)  /* Waitany, Test (in a loop), Testall, Testany, Waitsome */
{
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, index, flag = 0, done = 0, some[4], count;
    double in[4][2] = {{0}}, s = 0;
    MPI_Request q[4];
    for (int round = 0; round < 3; round++) {
        MPI_Irecv(in[0], 2, MPI_DOUBLE, left, round, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(in[1], 2, MPI_DOUBLE, right, 10 + round, MPI_COMM_WORLD, &q[1]);
        MPI_Isend(x + round, 2, MPI_DOUBLE, right, round, MPI_COMM_WORLD, &q[2]);
        MPI_Isend(x + 3, 2, MPI_DOUBLE, left, 10 + round, MPI_COMM_WORLD, &q[3]);
        if (round == 0) {
            for (int k = 0; k < 4; k++) MPI_Waitany(4, q, &index, MPI_STATUS_IGNORE);
        } else if (round == 1) {
            for (int k = 0; k < 2; k++) { flag = 0; while (!flag) MPI_Test(&q[k], &flag, MPI_STATUS_IGNORE); }
            flag = 0;
            while (!flag) MPI_Testall(2, q + 2, &flag, MPI_STATUSES_IGNORE);
        } else {
            done = 0;
            while (done < 2) { flag = 0; MPI_Testany(2, q, &index, &flag, MPI_STATUS_IGNORE); done += flag && index != MPI_UNDEFINED; }
            done = 0;
            while (done < 2) { MPI_Waitsome(2, q + 2, &count, some, MPI_STATUSES_IGNORE); done += count; }
        }
        s += in[0][0] * in[1][1] * (round + 1) + in[0][1] * in[0][1] + sin(in[1][0]) * x[round];
    }
    return s;
}

/* @diff(floats_grad: (dup, const) -> active; floats_fwd: forward (dual, const) -> dual; floats_fwd3: forward[3] (dual, const) -> dual; floats_fwdv: forward[2] (dualv, const) -> dual) */
float floats(float *x, int n)  /* MPI_FLOAT */
{
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    float m[6];
    MPI_Allreduce(x, m, n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    float s = 0;
    for (int i = 0; i < n; i++) s += m[i] * x[i];
    return s;
}
"""

# Each kernel's gradient on every rank, and its tangents, against central differences of J: every
# rank evaluates J with one value of one rank moved.
KERNELS_DRIVER = r"""#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "kernels.adgen.h"
double p2p(double *, int), halo(double *, int), reductions(double *, int), moves(double *, int), inplace(double *, int);
double columns(double *, int), persistent(double *, int), scans(double *, int), vees(double *, int),
       icoll(double *, int), completions(double *, int), iscans(double *, int);
float floats(float *, int);
enum { N = 6 };
typedef double (*primal)(double *, int);
typedef void (*gradient)(double *, double *, int, double);
typedef struct { const char *name; primal f; gradient g; } kernel;

static double total(primal f, double *x) { double v = f(x, N), J; MPI_Allreduce(&v, &J, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); return J; }

static void g_p2p(double *x, double *d, int n, double s) { p2p_grad(x, d, n, s); }
static void g_halo(double *x, double *d, int n, double s) { halo_grad(x, d, n, s); }
static void g_red(double *x, double *d, int n, double s) { reductions_grad(x, d, n, s); }
static void g_moves(double *x, double *d, int n, double s) { moves_grad(x, d, n, s); }
static void g_inplace(double *x, double *d, int n, double s) { inplace_grad(x, d, n, s); }
static void g_columns(double *x, double *d, int n, double s) { columns_grad(x, d, n, s); }
static void g_persistent(double *x, double *d, int n, double s) { persistent_grad(x, d, n, s); }
static void g_scans(double *x, double *d, int n, double s) { scans_grad(x, d, n, s); }
static void g_vees(double *x, double *d, int n, double s) { vees_grad(x, d, n, s); }
static void g_icoll(double *x, double *d, int n, double s) { icoll_grad(x, d, n, s); }
static void g_completions(double *x, double *d, int n, double s) { completions_grad(x, d, n, s); }
static void g_iscans(double *x, double *d, int n, double s) { iscans_grad(x, d, n, s); }
static double f_fwd(const char *name, double *x, double *t) {
    if (!strcmp(name, "p2p")) return p2p_fwd(x, t, N).d_ret;
    if (!strcmp(name, "halo")) return halo_fwd(x, t, N).d_ret;
    if (!strcmp(name, "reductions")) return reductions_fwd(x, t, N).d_ret;
    if (!strcmp(name, "moves")) return moves_fwd(x, t, N).d_ret;
    if (!strcmp(name, "columns")) return columns_fwd(x, t, N).d_ret;
    if (!strcmp(name, "persistent")) return persistent_fwd(x, t, N).d_ret;
    if (!strcmp(name, "scans")) return scans_fwd(x, t, N).d_ret;
    if (!strcmp(name, "vees")) return vees_fwd(x, t, N).d_ret;
    if (!strcmp(name, "icoll")) return icoll_fwd(x, t, N).d_ret;
    if (!strcmp(name, "completions")) return completions_fwd(x, t, N).d_ret;
    if (!strcmp(name, "iscans")) return iscans_fwd(x, t, N).d_ret;
    return inplace_fwd(x, t, N).d_ret;
}

/* Forward mode at width 3 (a shadow to each lane) and at width 2 (dualv: the lanes side by side in one
 * shadow), lane by lane against width 1: the largest difference relative to the tangent. */
static double lanes_worst(const char *name, double *x, double t[3][N])
{
    double one[3], tv[2 * N], worst = 0;
    for (int k = 0; k < 3; k++) one[k] = f_fwd(name, x, t[k]);
    for (int i = 0; i < N; i++) tv[2 * i] = t[0][i], tv[2 * i + 1] = t[1][i];
#define WIDE(K, W, ...) if (!strcmp(name, #K)) { K##_fwd##W##_result r = K##_fwd##W(x, __VA_ARGS__, N); \
        for (int k = 0; k < (int)(sizeof r.d_ret / sizeof r.d_ret[0]); k++) \
            worst = fmax(worst, fabs(r.d_ret[k] - one[k]) / fmax(1, fabs(one[k]))); }
#define WIDE3(K) WIDE(K, 3, t[0], t[1], t[2])
#define WIDEV(K) WIDE(K, v, tv)
    WIDE3(p2p) WIDE3(halo) WIDE3(reductions) WIDE3(moves) WIDE3(inplace) WIDE3(columns) WIDE3(persistent) WIDE3(scans)
    WIDE3(vees) WIDE3(icoll) WIDE3(completions) WIDE3(iscans)
    WIDEV(p2p) WIDEV(halo) WIDEV(reductions) WIDEV(moves) WIDEV(inplace) WIDEV(columns) WIDEV(persistent) WIDEV(scans)
    WIDEV(vees) WIDEV(icoll) WIDEV(completions) WIDEV(iscans)
    return worst;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    kernel ks[] = {{"p2p", p2p, g_p2p}, {"halo", halo, g_halo}, {"reductions", reductions, g_red}, {"moves", moves, g_moves}, {"inplace", inplace, g_inplace}, {"columns", columns, g_columns},
                  {"persistent", persistent, g_persistent}, {"scans", scans, g_scans},
                  {"vees", vees, g_vees}, {"icoll", icoll, g_icoll},
                  {"completions", completions, g_completions}, {"iscans", iscans, g_iscans}};
    int bad = 0;
    for (int k = 0; k < 12; k++) {
        double x[N], dx[N] = {0}, worst = 0, h = 1e-6;
        for (int i = 0; i < N; i++) x[i] = 0.3 + 0.1 * i + 0.7 * rank;
        ks[k].g(x, dx, N, 1.0);
        for (int q = 0; q < size; q++)
            for (int i = 0; i < N; i++) {
                double keep = x[i];
                if (rank == q) x[i] = keep + h;
                double up = total(ks[k].f, x);
                if (rank == q) x[i] = keep - h;
                double down = total(ks[k].f, x);
                x[i] = keep;
                double t[N] = {0};
                if (rank == q) t[i] = 1;
                double tangent = f_fwd(ks[k].name, x, t), J;
                MPI_Allreduce(&tangent, &J, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                if (rank == q) {
                    double fd = (up - down) / (2 * h), e = fmax(fabs(fd - dx[i]), fabs(J - dx[i])) / fmax(1, fabs(fd));
                    worst = fmax(worst, e);
                    if (e > 1e-6) printf("%s rank %d i %d: fd %g rev %g fwd %g\n", ks[k].name, rank, i, fd, dx[i], J);
                }
            }
        printf("%s rank %d: %s (%g)\n", ks[k].name, rank, worst < 1e-6 ? "ok" : "WRONG", worst);
        bad |= worst >= 1e-6;
        double t3[3][N];
        for (int l = 0; l < 3; l++)
            for (int i = 0; i < N; i++) t3[l][i] = sin(1.0 + i + 7 * l + 3 * rank);
        double lanes = lanes_worst(ks[k].name, x, t3);
        printf("%s lanes rank %d: %s (%g)\n", ks[k].name, rank, lanes < 1e-12 ? "ok" : "WRONG", lanes);
        bad |= lanes >= 1e-12;
    }
    {
        float x[N], dx[N] = {0};
        for (int i = 0; i < N; i++) x[i] = 0.3f + 0.1f * i + 0.7f * ((rank + 1) % size);
        floats_grad(x, dx, N, 1.0f);
        /* d/dx_r of sum_ranks sum_i max_i * x_i: the winner gets sum_ranks x_i, others their max */
        double worst = 0;
        for (int i = 0; i < N; i++) {
            float m, all; MPI_Allreduce(&x[i], &m, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
            MPI_Allreduce(&x[i], &all, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            float want = m + (x[i] == m ? all : 0);
            float t[N] = {0}; t[i] = 1;
            worst = fmax(worst, fabs(want - dx[i]));
        }
        printf("floats rank %d: %s (%g)\n", rank, worst < 1e-5 ? "ok" : "WRONG", worst);
        bad |= worst >= 1e-5;
        float t[3][N], tv[2 * N], one[3], lanes = 0;  /* MPI_FLOAT's tangents at widths 3 and 2 (dualv) */
        for (int l = 0; l < 3; l++)
            for (int i = 0; i < N; i++) t[l][i] = (float)sin(2.0 + i + 5 * l + rank);
        for (int i = 0; i < N; i++) tv[2 * i] = t[0][i], tv[2 * i + 1] = t[1][i];
        for (int l = 0; l < 3; l++) one[l] = floats_fwd(x, t[l], N).d_ret;
        floats_fwd3_result r3 = floats_fwd3(x, t[0], t[1], t[2], N);
        floats_fwdv_result rv = floats_fwdv(x, tv, N);
        for (int l = 0; l < 3; l++) lanes = fmaxf(lanes, fabsf(r3.d_ret[l] - one[l]) / fmaxf(1, fabsf(one[l])));
        for (int l = 0; l < 2; l++) lanes = fmaxf(lanes, fabsf(rv.d_ret[l] - one[l]) / fmaxf(1, fabsf(one[l])));
        printf("floats lanes rank %d: %s (%g)\n", rank, lanes < 1e-6 ? "ok" : "WRONG", lanes);
        bad |= lanes >= 1e-6;
    }
    MPI_Finalize();
    return bad;
}
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """The kernels' program, built once with `adgen build` (mpi.h found through the wrapper)."""
    from adgen.commands.cli import main

    tmp = tmp_path_factory.mktemp("mpi-kernels")
    (tmp / "kernels.c").write_text(KERNELS)
    (tmp / "main.c").write_text(KERNELS_DRIVER)
    assert main(["build", "-q", str(tmp / "kernels.c"), "-o", str(tmp / "out")]) == 0
    subprocess.run([MPICC, "-O2", "-I", str(tmp / "out"), str(tmp / "main.c"), str(tmp / "kernels.c"),
                    str(tmp / "out" / "kernels.adgen.o"), "-lm", "-o", str(tmp / "prog")], check=True)
    return tmp / "prog"


@pytest.mark.parametrize("ranks", [2, 3])
def test_communications_against_finite_differences(kernels, ranks):
    """Send, Ssend, Bsend, Recv (MPI_ANY_SOURCE, MPI_PROC_NULL), Isend, Irecv, Wait, Waitall, Sendrecv,
    Sendrecv_replace, Bcast, Reduce and Allreduce (SUM, PROD, MAX, MIN), Gather, Scatter, Allgather,
    Alltoall, MPI_IN_PLACE, MPI_FLOAT, derived datatypes (MPI_Type_vector columns, MPI_Type_contiguous,
    MPI_Type_indexed, MPI_Type_create_hvector, MPI_Type_create_struct, each made in the function),
    persistent requests (Send_init, Recv_init, Start, Startall, Request_free), Scan, Exscan,
    Reduce_scatter(_block), Gatherv, Scatterv, Allgatherv, Alltoallv, the nonblocking collectives
    (Ibcast, Ireduce, Iallreduce, Igather, Iscatter, Iallgather, Ialltoall, Iscan, Iexscan,
    Ireduce_scatter(_block), Igatherv, Iscatterv, Iallgatherv, Ialltoallv), Waitany, Test, Testall, Testany,
    Waitsome: both modes, on each rank; forward mode also at width 3 (a shadow to each lane) and width 2
    (dualv, the lanes side by side), lane by lane against width 1."""
    run = _mpirun(kernels, ranks)
    assert run.returncode == 0 and run.stdout.count(": ok") == 2 * 13 * ranks, run.stdout + run.stderr


ENZYME_MPI = r"""
#include <mpi.h>
#include <stdio.h>
#include <math.h>
extern int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);

/* a rank's share of J: a halo from the left neighbour (nonblocking), a global norm */
double share(const double *x, int n)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double from_left = 0, local = 0, norm;
    MPI_Request r[2];
    MPI_Irecv(&from_left, 1, MPI_DOUBLE, (rank + size - 1) % size, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&x[n - 1], 1, MPI_DOUBLE, (rank + 1) % size, 0, MPI_COMM_WORLD, &r[1]);
    for (int i = 0; i < n; i++) local += x[i] * x[i];
    MPI_Allreduce(&local, &norm, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    return sqrt(norm) * x[0] + from_left * from_left * x[0];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x[3] = {1.0 + rank, 0.5, 2.0 - rank}, dx[3] = {0}, t[3] = {0, 0, 1}, worst = 0;
    __enzyme_autodiff((void *)share, enzyme_dup, x, dx, enzyme_const, 3);
    double all[16], dall[16];  /* every rank's x, to check by hand: J = sum_r sqrt(N) x_r0 + x_{r-1,2}^2 x_r0 */
    MPI_Allgather(x, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, MPI_COMM_WORLD);
    double N = 0, S0 = 0;
    for (int i = 0; i < 3 * size; i++) N += all[i] * all[i];
    for (int q = 0; q < size; q++) S0 += all[3 * q];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < 3; i++) {
        double want = S0 * x[i] / sqrt(N) + (i == 0) * (sqrt(N) + all[3 * left + 2] * all[3 * left + 2])
                      + (i == 2) * 2 * x[2] * all[3 * right];
        worst = fmax(worst, fabs(want - dx[i]));
    }
    double d = __enzyme_fwddiff((void *)share, enzyme_dup, x, t, enzyme_const, 3), D;
    MPI_Allreduce(&d, &D, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);  /* every rank's x[2] moved: dJ = sum of dx[2] */
    MPI_Allgather(dx, 3, MPI_DOUBLE, dall, 3, MPI_DOUBLE, MPI_COMM_WORLD);
    double sum2 = 0;
    for (int q = 0; q < size; q++) sum2 += dall[3 * q + 2];
    worst = fmax(worst, fabs(D - sum2));
    printf("rank %d: %s (%g)\n", rank, worst < 1e-12 ? "ok" : "WRONG", worst);
    MPI_Finalize();
    return worst < 1e-12 ? 0 : 1;
}
"""


ENZYME_WIDTH = r"""#include <mpi.h>
#include <stdio.h>
#include <math.h>
extern int enzyme_width, enzyme_dup, enzyme_const;
typedef struct { double d0, d1; } Two;
Two __enzyme_fwddiff(void *, ...);
double __enzyme_fwddiff1(void *, ...) __asm__("__enzyme_fwddiff");

double share(const double *x, int n)
{
    double local = 0, norm;
    for (int i = 0; i < n; i++) local += x[i] * x[i];
    MPI_Allreduce(&local, &norm, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double got;
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Sendrecv(&x[0], 1, MPI_DOUBLE, (rank + 1) % size, 0, &got, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return sqrt(norm) * x[1] + got * got;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x[3] = {1.0 + rank, 0.5, 2.0 - rank}, t0[3] = {1, 0.5, 0}, t1[3] = {0, 1 + rank, -1};
    Two both = __enzyme_fwddiff((void *)share, enzyme_width, 2, enzyme_dup, x, t0, t1, enzyme_const, 3);
    double a = __enzyme_fwddiff1((void *)share, enzyme_dup, x, t0, enzyme_const, 3);
    double b = __enzyme_fwddiff1((void *)share, enzyme_dup, x, t1, enzyme_const, 3);
    int ok = fabs(both.d0 - a) < 1e-12 && fabs(both.d1 - b) < 1e-12;
    printf("rank %d: %s %g %g %g %g\n", rank, ok ? "ok" : "WRONG", both.d0, a, both.d1, b);
    MPI_Finalize();
    return !ok;
}
"""


@pytest.mark.parametrize("program", ["ENZYME_MPI", "ENZYME_WIDTH"])
def test_enzyme_api_communications_through_the_wrapper(tmp_path, program):
    """`OMPI_CC="adgen cc" mpicc`, on 3 ranks: __enzyme_autodiff and __enzyme_fwddiff of Isend, Irecv,
    Waitall and Allreduce against the gradient written by hand (ENZYME_MPI); __enzyme_fwddiff with
    `enzyme_width, 2` of Allreduce and a wildcard Sendrecv, each lane as the width-1 tangent of its
    direction (ENZYME_WIDTH)."""
    src = tmp_path / "share.c"
    src.write_text(globals()[program])
    env = {**os.environ, "OMPI_CC": f"{sys.executable} -m adgen.commands.cli cc"}
    built = subprocess.run([MPICC, "-O2", str(src), "-o", str(tmp_path / "prog"), "-lm"], capture_output=True,
                           text=True, env=env, cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    run = _mpirun(tmp_path / "prog", 3)
    assert run.returncode == 0 and run.stdout.count(": ok") == 3, run.stdout + run.stderr


def test_a_datatype_the_rules_refuse_is_an_error_at_its_line(adgen, c_file, tmp_path):
    refused_datatype_at_its_line(adgen, c_file, tmp_path)


def refused_datatype_at_its_line(adgen, c_file, tmp_path) -> None:
    """A reduction of MPI_BYTE where derivatives flow: the build error at the call's line."""
    src = c_file("#include <mpi.h>\n"
                 "// @diff(dot_grad: (dup, dup, const) -> active)\n"
                 "double dot(const double *x, const double *y, int n)\n{\n"
                 "    double local = 0, global = 0;\n"
                 "    for (int i = 0; i < n; i++) local += x[i] * y[i];\n"
                 "    MPI_Allreduce(&local, &global, sizeof local, MPI_BYTE, MPI_SUM, MPI_COMM_WORLD);\n"
                 "    return global;\n}\n", "dot.c")
    _refused_at(adgen, src, tmp_path, f"{src}:7:5: error: cannot differentiate MPI's 'MPI_Allreduce' of a datatype "
                "other than MPI_DOUBLE and MPI_FLOAT")


def _refused_at(adgen, src, tmp_path, message: str) -> None:
    """`adgen build` of src fails with `message` (its file:line:col first), no traceback, nothing written."""
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1 and "Traceback" not in result.err
    assert message in result.err, result.err
    assert not (tmp_path / "out").exists()


RUNTIME_REFUSALS = r"""
#include <mpi.h>
#include <stdio.h>
#include "refused.adgen.h"
double twice(const double *x, int how);

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    double x[2] = {1, 2}, dx[2] = {0};
    twice_grad(x, dx, argc > 1 ? 1 : 0, 1.0);
    printf("not refused\n");
    MPI_Finalize();
    return 0;
}
"""


def _refusing_program(adgen, src: Path, main: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """`src` built by adgen with a `main` that prints "not refused" after the derivative, run on
    2 ranks: it must stop before that."""
    (tmp_path / "main.c").write_text(main)
    assert adgen("build", "-q", src, "-o", tmp_path / "out").status == 0
    subprocess.run([MPICC, "-O2", "-I", str(tmp_path / "out"), str(tmp_path / "main.c"), str(src),
                    str(tmp_path / "out" / f"{src.stem}.adgen.o"), "-o", str(tmp_path / "prog")], check=True)
    run = _mpirun(tmp_path / "prog", 2)
    assert run.returncode != 0 and "not refused" not in run.stdout
    return run


def test_what_only_the_running_program_shows_is_refused_when_it_runs(adgen, c_file, tmp_path):
    """A datatype held in a variable (one of bytes here) and MPI_ANY_TAG in reverse mode: a message
    naming the call and MPI_Abort, never a wrong derivative or a hang."""
    src = c_file("#include <mpi.h>\n"
                 "// @diff(twice_grad: (dup, const) -> active)\n"
                 "double twice(const double *x, int how)\n{\n"
                 "    int rank, size;\n"
                 "    MPI_Comm_rank(MPI_COMM_WORLD, &rank);\n"
                 "    MPI_Comm_size(MPI_COMM_WORLD, &size);\n"
                 "    double got[2];\n"
                 "    MPI_Datatype pair;\n"
                 "    MPI_Type_contiguous(16, MPI_BYTE, &pair);  /* two doubles' bytes */\n"
                 "    MPI_Type_commit(&pair);\n"
                 "    MPI_Sendrecv(x, 1, how ? MPI_DOUBLE : pair, (rank + 1) % size, 0, got, 1, how ? MPI_DOUBLE : pair,\n"
                 "                 MPI_ANY_SOURCE, how ? MPI_ANY_TAG : 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n"
                 "    return got[0] * x[0];\n}\n", "refused.c")
    run = _refusing_program(adgen, src, RUNTIME_REFUSALS, tmp_path)
    assert "adgen: cannot differentiate MPI's 'MPI_Sendrecv': its datatype is neither MPI_DOUBLE nor MPI_FLOAT" \
        in run.stderr, run.stderr
    run = subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2", str(tmp_path / "prog"), "tag"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "not refused" not in run.stdout
    assert "adgen: cannot differentiate MPI's 'MPI_Sendrecv': its tag is MPI_ANY_TAG" in run.stderr, run.stderr


MISALIGNED_MAIN = r"""
#include <mpi.h>
#include <stdio.h>
#include "odd.adgen.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    double x[4] = {1, 2, 3, 4}, dx[8] = {0};
    spread_fwd(x, dx, 0);
    printf("not refused\n");
    MPI_Finalize();
    return 0;
}
"""


def test_lanes_side_by_side_of_a_datatype_not_aligned_to_its_base_are_refused_when_it_runs(adgen, c_file,
                                                                                           tmp_path):
    """A `dualv` shadow of a buffer of doubles 12 bytes apart (MPI_Type_create_hvector): its lanes
    cannot be taken apart element by element (templates/mpi_rules.c.j2, adgen_mpi_take_apart); the
    program stops naming the call, never a wrong tangent."""
    src = c_file("#include <mpi.h>\n"
                 "// @diff(spread_fwd: forward[2] (dualv, const) -> dualonly)\n"
                 "double spread(double *x, int root)\n{\n"
                 "    MPI_Datatype odd;\n"
                 "    MPI_Type_create_hvector(2, 1, 12, MPI_DOUBLE, &odd);\n"
                 "    MPI_Type_commit(&odd);\n"
                 "    MPI_Bcast(x, 1, odd, root, MPI_COMM_WORLD);\n"
                 "    MPI_Type_free(&odd);\n"
                 "    return x[0] * x[0];\n}\n", "odd.c")
    run = _refusing_program(adgen, src, MISALIGNED_MAIN, tmp_path)
    assert ("adgen: cannot differentiate MPI's 'MPI_Bcast': a buffer of a derived datatype whose elements are not "
            "aligned to its base type") in run.stderr, run.stderr


def test_a_communicating_loop_is_not_checkpointed(adgen, c_file, tmp_path):
    """A memory budget's checkpointed loop runs its iterations again on one rank: one that
    communicates (in a function it calls too) is an error at its line, not a hang."""
    src = c_file("#include <mpi.h>\n"
                 "static double norm(const double *x, int n) {\n"
                 "    double s = 0, all;\n"
                 "    for (int i = 0; i < n; i++) s += x[i] * x[i];\n"
                 "    MPI_Allreduce(&s, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);\n"
                 "    return all;\n}\n"
                 "// @diff(steps_grad: (dup, const, const) -> active within 1KiB)\n"
                 "double steps(double *x, int n, int k)\n{\n"
                 "    double s = 0;\n"
                 "    for (int t = 0; t < k; t++) {\n"
                 "        for (int i = 0; i < n; i++) x[i] = x[i] * 0.5 + 1e-3 * x[i] * x[i];\n"
                 "        s += norm(x, n);\n"
                 "    }\n"
                 "    return s;\n}\n", "steps.c")
    _refused_at(adgen, src, tmp_path, f"{src}:5:5: error: cannot differentiate MPI's 'MPI_Allreduce' in a loop "
                "checkpointed to keep the gradient within its memory budget")


CMAKE_MAIN = r"""
#include <mpi.h>
#include <stdio.h>
#include "local.adgen.h"
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x[2] = {1.0, 2.0}, dx[2] = {0, 0};
    local_grad(x, dx, 2, 1.0);
    double c = 3.0 * (rank + 1) / (size * 2 * size);  /* d/dx of (rank + 1) x^3 / (size * total) */
    int right = dx[0] == c * 1.0 && dx[1] == c * 4.0;
    printf("rank %d: %s\n", rank, right ? "ok" : "WRONG");
    MPI_Finalize();
    return right ? 0 : 1;
}
"""


def test_cmake_with_find_package_mpi(tmp_path):
    """`find_package(MPI)` and `MPI::MPI_C` beside `adgen_add_derivatives`: mpi.h reaches adgen."""
    from test_cmake import cmake_dir, tool

    (tmp_path / "local.c").write_text(LOCAL)
    (tmp_path / "main.c").write_text(CMAKE_MAIN)
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(mpidemo C)\nfind_package(MPI REQUIRED COMPONENTS C)\n"
        "find_package(adgen REQUIRED)\nadd_executable(demo main.c local.c)\n"
        "target_link_libraries(demo PRIVATE MPI::MPI_C m)\nadgen_add_derivatives(TARGET demo SOURCES local.c)\n")
    build = tmp_path / "build"
    done = subprocess.run([tool("cmake"), "-S", str(tmp_path), "-B", str(build), "-G", "Ninja",
                           f"-DCMAKE_MAKE_PROGRAM={tool('ninja')}", f"-Dadgen_DIR={cmake_dir()}",
                           f"-DADGEN_EXECUTABLE={tool('adgen')}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([tool("cmake"), "--build", str(build)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    run = _mpirun(build / "demo", 2)
    assert run.returncode == 0 and run.stdout.count(": ok") == 2, run.stdout + run.stderr


@pytest.mark.slow
def test_quick_fuzz_run_of_mpi_programs():
    """tests/mpi_fuzzer.py at a fixed seed: random halo exchanges, reductions, moves, on 2 and 3 ranks."""
    import mpi_fuzzer

    failures, inconclusive = mpi_fuzzer.fuzz(programs=40, seed=20261130, ranks=[2, 3], batch=20)
    assert failures == [], failures[0][:4000]
    assert inconclusive <= 4


HYBRID = r"""
#include <math.h>
#include <mpi.h>

/* OpenMP threads inside each rank, a memory budget whose checkpointed loop does not communicate,
   and communication around them */
// @diff(hybrid_grad: (dup, const) -> active within 2KiB; hybrid_fwd: forward (dual, const) -> dual)
double hybrid(const double *x, int n)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double y[64], local = 0, global, halo = 0;
    #pragma omp parallel for
    for (int i = 0; i < n; i++)
        y[i] = sin(x[i]) * (rank + 1);
    for (int step = 0; step < 20; step++)  /* checkpointed: nothing of MPI's inside */
        for (int i = 1; i < n; i++)
            y[i] = 0.9 * y[i] + 0.2 * tanh(y[i - 1]);
    MPI_Sendrecv(&y[n - 1], 1, MPI_DOUBLE, (rank + 1) % size, 0, &halo, 1, MPI_DOUBLE, (rank + size - 1) % size, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    #pragma omp parallel for reduction(+: local)
    for (int i = 0; i < n; i++)
        local += y[i] * y[i];
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sqrt(global) + halo * x[0];
}
"""

HYBRID_DRIVER = r"""
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include "hybrid.adgen.h"
double hybrid(const double *x, int n);
static double J(const double *x) { double v = hybrid(x, 8), all; MPI_Allreduce(&v, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); return all; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x[8], dx[8] = {0}, worst = 0, h = 1e-6;
    for (int i = 0; i < 8; i++) x[i] = 0.1 + 0.05 * i + 0.2 * rank;
    hybrid_grad(x, dx, 8, 1.0);
    for (int q = 0; q < size; q++)
        for (int i = 0; i < 8; i++) {
            double keep = x[i];
            if (rank == q) x[i] = keep + h;
            double up = J(x);
            if (rank == q) x[i] = keep - h;
            double down = J(x);
            x[i] = keep;
            double t[8] = {0}, d, D;
            if (rank == q) t[i] = 1;
            d = hybrid_fwd(x, t, 8).d_ret;
            MPI_Allreduce(&d, &D, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            if (rank == q)
                worst = fmax(worst, fmax(fabs((up - down) / (2 * h) - dx[i]), fabs(D - dx[i])) / fmax(1, fabs(dx[i])));
        }
    printf("rank %d: %s (%g)\n", rank, worst < 1e-6 ? "ok" : "WRONG", worst);
    MPI_Finalize();
    return worst < 1e-6 ? 0 : 1;
}
"""


def test_openmp_inside_ranks_and_a_memory_budget(tmp_path):
    """-fopenmp parallel loops in each rank, and `within` checkpointing a loop between communications:
    both modes against finite differences on 2 ranks of 2 threads."""
    from adgen.commands.cli import main
    from fuzzer import libomp

    if libomp() is None:
        pytest.skip("no OpenMP runtime (libomp: Debian's libomp-dev, which .ci/run installs)")
    (tmp_path / "hybrid.c").write_text(HYBRID)
    (tmp_path / "main.c").write_text(HYBRID_DRIVER)
    assert main(["build", "-q", str(tmp_path / "hybrid.c"), "-o", str(tmp_path / "out"), "--", "-fopenmp"]) == 0
    subprocess.run([MPICC, "-O2", "-fopenmp", "-I", str(tmp_path / "out"), str(tmp_path / "main.c"),
                    str(tmp_path / "hybrid.c"), str(tmp_path / "out" / "hybrid.adgen.o"), libomp(), "-lm", "-o",
                    str(tmp_path / "prog")], check=True)
    run = subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x", "OMP_NUM_THREADS=2",
                          str(tmp_path / "prog")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.count(": ok") == 2, run.stdout + run.stderr


def test_a_reverse_batch_of_a_communicating_function_is_an_error_at_its_line(adgen, c_file, tmp_path):
    src = c_file("#include <mpi.h>\n"
                 "// @diff(w_d: reverse[2] (dup, const) -> active)\n"
                 "double w(const double *x, int n)\n{\n"
                 "    double local = 0, global;\n"
                 "    for (int i = 0; i < n; i++) local += x[i] * x[i];\n"
                 "    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);\n"
                 "    return global;\n}\n", "w.c")
    _refused_at(adgen, src, tmp_path, f"{src}:7:5: error: cannot differentiate MPI's 'MPI_Allreduce' in a reverse "
                "derivative of width 2 (reverse mode differentiates MPI's calls one adjoint at a time; forward mode "
                "takes any width)")
