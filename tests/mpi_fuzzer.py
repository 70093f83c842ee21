"""Random MPI programs, differentiated and checked on several ranks (specs/mpi.md, specs/testing.md).

Each program is a function of a rank's N values: it copies them into a state vector, then runs a
random sequence of steps — local arithmetic (libm calls, products, quotients), halo exchanges
(a ring or a line with MPI_PROC_NULL ends, by Sendrecv, by Isend/Irecv with Waitall or Wait, by
blocking Send/Recv ordered by the rank's parity, with MPI_ANY_SOURCE receives, or by a derived
datatype of every other value made in the function by one of MPI's constructors (vector, hvector,
indexed, indexed_block, struct), freed before the reverse sweep), reductions
(Allreduce or Reduce then Bcast, SUM, PROD, MAX or MIN, in place or not, Reduce_scatter_block,
Scan and Exscan of each operation, Iallreduce, on a communicator MPI_Comm_split made), persistent
requests started twice, requests completed by Waitall, Wait, Waitany or Test in a loop, and moves
(Allgather, Allgatherv, Alltoall, Gather then Scatter); the scans, reduce-scatters and Allgatherv
blocking or started (MPI_Iscan...) and waited for — and returns a weighted sum of the state. The objective J is the
sum over the ranks of what each returns. A driver built with the programs checks, on every rank,
the reverse-mode gradient against central differences of J (every rank evaluating J with one
value of one rank moved, at steps 1e-6 and 2e-6, extrapolated, and 1e-8) and against forward mode (the tangents summed over
the ranks), of width 1, 2 or 3 (a shadow to each lane, or the lanes side by side: dualv), lane k given k + 1 times the
direction of lane 0.

    python tests/mpi_fuzzer.py [--long N] [--seed S] [--ranks 2,3] [--batch B] [--mpi openmpi|mpich]

A program whose finite differences do not converge (the step sizes disagreeing beyond the
tolerance, which allows for the rounding of J's last bits over the step: `sin` of a value in the
millions oscillates within a step of 1e-6) while forward and reverse mode agree is inconclusive,
not wrong. A failing batch is printed with its seed. Needs Open MPI's mpicc and mpirun (or MPICH's
mpicc.mpich and mpirun.mpich, with --mpi mpich); run from a
checkout whose venv has adgen (`adgen` on the PATH, or `python -m adgen.commands.cli`)."""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

N = 4  # values per rank
# The MPI libraries, as Debian installs them side by side: each one's compiler wrapper (adgen finds
# mpi.h through it, $MPICC) and how to run a program on its ranks.
LIBRARIES = {"openmpi": ("mpicc", ["mpirun", "--allow-run-as-root", "--oversubscribe"]),
             "mpich": ("mpicc.mpich", ["mpirun.mpich"])}


def _expression(rng: random.Random, v: str, i: str) -> str:
    """A smooth function of the state's element v[i] and its neighbour (the steps keep the state's
    values of order one: a value in the millions would make finite differences no reference)."""
    a = f"{v}[{i}]"
    b = f"{v}[({i} + 1) % {N}]"
    c = round(rng.uniform(0.2, 0.9), 2)
    return rng.choice([f"sin({a}) + {c} * {b}", f"tanh({a} * {b} * {c})", f"{a} / (1.5 + {b} * {b})",
                       f"exp({c} * sin({a})) + 0.5 * {b}", f"{c} * tanh({a}) * {a} - 0.5 * {b}", f"tanh({a} + {c} * {b})"])


def _local(rng: random.Random) -> list[str]:
    return [f"for (int i = 0; i < {N}; i++) t[i] = {_expression(rng, 'v', 'i')};",
            f"for (int i = 0; i < {N}; i++) v[i] = t[i];"]


def _neighbours(rng: random.Random) -> list[str]:
    if rng.random() < 0.5:  # a ring
        return ["int right = (rank + 1) % size, left = (rank + size - 1) % size;"]
    return ["int right = rank + 1 < size ? rank + 1 : MPI_PROC_NULL, left = rank > 0 ? rank - 1 : MPI_PROC_NULL;"]


# Values 0 and 2 of a buffer, by each way MPI has of making such a datatype.
EVERY_OTHER = (
    "MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &every_other);",
    "MPI_Type_create_hvector(2, 1, 2 * sizeof(double), MPI_DOUBLE, &every_other);",
    "MPI_Type_indexed(2, (int[]){1, 1}, (int[]){0, 2}, MPI_DOUBLE, &every_other);",
    "MPI_Type_create_indexed_block(2, 1, (int[]){0, 2}, MPI_DOUBLE, &every_other);",
    "MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 2 * sizeof(double)}, "
    "(MPI_Datatype[]){MPI_DOUBLE, MPI_DOUBLE}, &every_other);",
)


def _halo(rng: random.Random, tag: int) -> list[str]:
    how = rng.choice(["sendrecv", "nonblocking", "blocking", "derived", "persistent"])
    k = 2 if how == "derived" else rng.randint(1, N - 1)  # how many values go each way
    lines = ["{", *_neighbours(rng), f"double from_left[{k}] = {{0}}, from_right[{k}] = {{0}};"]
    if how == "derived":  # every other value, by a derived datatype, into contiguous doubles
        lines += ["MPI_Datatype every_other;", rng.choice(EVERY_OTHER), "MPI_Type_commit(&every_other);",
                  f"MPI_Sendrecv(v, 1, every_other, right, {tag}, from_left, 2, MPI_DOUBLE, left, {tag}, "
                  "MPI_COMM_WORLD, MPI_STATUS_IGNORE);",
                  f"MPI_Sendrecv(v + 1, 1, every_other, left, {tag + 1}, from_right, 2, MPI_DOUBLE, right, {tag + 1}, "
                  "MPI_COMM_WORLD, MPI_STATUS_IGNORE);",
                  "MPI_Type_free(&every_other);"]
    elif how == "persistent":  # started twice, the halo of the first start used between
        lines += ["MPI_Request q[4];",
                  f"MPI_Recv_init(from_left, {k}, MPI_DOUBLE, left, {tag}, MPI_COMM_WORLD, &q[0]);",
                  f"MPI_Recv_init(from_right, {k}, MPI_DOUBLE, right, {tag + 1}, MPI_COMM_WORLD, &q[1]);",
                  f"MPI_Send_init(v + {N - k}, {k}, MPI_DOUBLE, right, {tag}, MPI_COMM_WORLD, &q[2]);",
                  f"MPI_Send_init(v, {k}, MPI_DOUBLE, left, {tag + 1}, MPI_COMM_WORLD, &q[3]);",
                  "MPI_Startall(4, q);", "MPI_Waitall(4, q, MPI_STATUSES_IGNORE);",
                  f"for (int i = 0; i < {k}; i++) v[i] += 0.1 * from_right[i];",
                  "for (int i = 0; i < 4; i++) MPI_Start(&q[i]);", "MPI_Waitall(4, q, MPI_STATUSES_IGNORE);",
                  "for (int i = 0; i < 4; i++) MPI_Request_free(&q[i]);"]
    elif how == "sendrecv":
        lines += [f"MPI_Sendrecv(v + {N - k}, {k}, MPI_DOUBLE, right, {tag}, from_left, {k}, MPI_DOUBLE, left, {tag}, "
                  "MPI_COMM_WORLD, MPI_STATUS_IGNORE);",
                  f"MPI_Sendrecv(v, {k}, MPI_DOUBLE, left, {tag + 1}, from_right, {k}, MPI_DOUBLE, right, {tag + 1}, "
                  "MPI_COMM_WORLD, MPI_STATUS_IGNORE);"]
    elif how == "nonblocking":
        source = rng.choice(["left", "left", "MPI_ANY_SOURCE"])
        lines += ["MPI_Request q[4];",
                  f"MPI_Irecv(from_left, {k}, MPI_DOUBLE, {source} == MPI_ANY_SOURCE && left == MPI_PROC_NULL ? "
                  f"MPI_PROC_NULL : {source}, {tag}, MPI_COMM_WORLD, &q[0]);",
                  f"MPI_Irecv(from_right, {k}, MPI_DOUBLE, right, {tag + 1}, MPI_COMM_WORLD, &q[1]);",
                  f"MPI_Isend(v + {N - k}, {k}, MPI_DOUBLE, right, {tag}, MPI_COMM_WORLD, &q[2]);",
                  f"MPI_Isend(v, {k}, MPI_DOUBLE, left, {tag + 1}, MPI_COMM_WORLD, &q[3]);"]
        lines += rng.choice([["MPI_Waitall(4, q, MPI_STATUSES_IGNORE);"],
                             ["MPI_Waitall(2, q + 2, MPI_STATUSES_IGNORE);", "MPI_Wait(&q[1], MPI_STATUS_IGNORE);",
                              "MPI_Wait(&q[0], MPI_STATUS_IGNORE);"],
                             ["for (int c = 0, i; c < 4; c++) MPI_Waitany(4, q, &i, MPI_STATUS_IGNORE);"],
                             ["for (int c = 0; c < 4; c++) { int done = 0; "
                              "while (!done) MPI_Test(&q[c], &done, MPI_STATUS_IGNORE); }"]])
    else:  # even ranks send first (Ssend: no buffering to rely on)
        lines += ["if (rank % 2 == 0) {",
                  f"MPI_Ssend(v + {N - k}, {k}, MPI_DOUBLE, right, {tag}, MPI_COMM_WORLD);",
                  f"MPI_Recv(from_left, {k}, MPI_DOUBLE, left, {tag}, MPI_COMM_WORLD, MPI_STATUS_IGNORE);",
                  "} else {",
                  f"MPI_Recv(from_left, {k}, MPI_DOUBLE, left, {tag}, MPI_COMM_WORLD, MPI_STATUS_IGNORE);",
                  f"MPI_Send(v + {N - k}, {k}, MPI_DOUBLE, right, {tag}, MPI_COMM_WORLD);",
                  "}",
                  f"MPI_Sendrecv(v, {k}, MPI_DOUBLE, left, {tag + 1}, from_right, {k}, MPI_DOUBLE, right, {tag + 1}, "
                  "MPI_COMM_WORLD, MPI_STATUS_IGNORE);"]
    c = round(rng.uniform(0.2, 0.8), 2)
    lines += [f"for (int i = 0; i < {k}; i++) v[i] = 0.7 * v[i] + {c} * from_left[i] * tanh(from_left[i]);",
              f"for (int i = 0; i < {k}; i++) v[{N - 1} - i] += 0.5 * sin(from_right[i]);", "}"]
    return lines


def _started(rng: random.Random, call: str, arguments: str) -> list[str]:
    """A collective, blocking or its nonblocking form (MPI_Iscan...) completed by a Wait."""
    if rng.random() < 0.5:
        return [f"{call}({arguments});"]
    return ["{", "MPI_Request started;", f"MPI_I{call[4:].lower()}({arguments}, &started);",
            "MPI_Wait(&started, MPI_STATUS_IGNORE);", "}"]


def _reduction(rng: random.Random) -> list[str]:
    op = rng.choice(["MPI_SUM", "MPI_SUM", "MPI_PROD", "MPI_MAX", "MPI_MIN"])
    scale = "0.5" if op == "MPI_PROD" else "1"
    lines = ["{", f"double r[{N}];", f"for (int i = 0; i < {N}; i++) r[i] = {scale} + v[i] * {scale};"]
    how = rng.choice(["allreduce", "in place", "reduce and bcast", "reduce-scatter", "scan", "nonblocking",
                      "split"])
    if how == "allreduce":
        lines += [f"double s[{N}];", f"MPI_Allreduce(r, s, {N}, MPI_DOUBLE, {op}, MPI_COMM_WORLD);"]
    elif how == "in place":
        lines += ["double *s = r;", f"MPI_Allreduce(MPI_IN_PLACE, r, {N}, MPI_DOUBLE, {op}, MPI_COMM_WORLD);"]
    elif how == "nonblocking":  # started, the request completed later
        lines += [f"double s[{N}];", "MPI_Request q;",
                  f"MPI_Iallreduce(r, s, {N}, MPI_DOUBLE, {op}, MPI_COMM_WORLD, &q);",
                  f"for (int i = 0; i < {N}; i++) t[i] = r[i] * r[i];", "MPI_Wait(&q, MPI_STATUS_IGNORE);",
                  f"for (int i = 0; i < {N}; i++) s[i] += 0.1 * t[i];"]
    elif how == "split":  # on a communicator of the even or odd ranks, numbered backwards
        lines += [f"double s[{N}];", "MPI_Comm half;", "MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);",
                  f"MPI_Allreduce(r, s, {N}, MPI_DOUBLE, {op}, half);", "MPI_Comm_free(&half);"]
    elif how == "reduce-scatter":  # every rank's N values a chunk: size * N reduced, N back
        lines += [f"double all[4 * {N}], s[{N}];",
                  f"for (int i = 0; i < {N} * size; i++) all[i] = r[i % {N}] * (1 + 0.1 * i);",
                  *_started(rng, "MPI_Reduce_scatter_block", f"all, s, {N}, MPI_DOUBLE, {op}, MPI_COMM_WORLD")]
    elif how == "scan":
        scan = rng.choice(["MPI_Scan", "MPI_Exscan"])
        lines += [f"double s[{N}] = {{0}};", *_started(rng, scan, f"r, s, {N}, MPI_DOUBLE, {op}, MPI_COMM_WORLD"),
                  *(["if (rank == 0) for (int i = 0; i < 4; i++) s[i] = 0;"] if scan == "MPI_Exscan" else [])]
    else:
        root = rng.choice(["0", "size - 1"])
        lines += [f"double s[{N}] = {{0}};", f"MPI_Reduce(r, s, {N}, MPI_DOUBLE, {op}, {root}, MPI_COMM_WORLD);",
                  f"MPI_Bcast(s, {N}, MPI_DOUBLE, {root}, MPI_COMM_WORLD);"]
    c = round(rng.uniform(0.1, 0.5), 2)
    return lines + [f"for (int i = 0; i < {N}; i++) v[i] = v[i] * {c} + tanh(s[i] * (rank + 1) * {c});", "}"]


def _move(rng: random.Random) -> list[str]:
    how = rng.choice(["allgather", "alltoall", "gather and scatter", "allgatherv"])
    lines = ["{", "double all[4 * 8], back[8];"]
    if how == "allgather":
        lines += ["MPI_Allgather(v, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, MPI_COMM_WORLD);",
                  f"for (int i = 0; i < 2 * size; i++) v[i % {N}] += 0.3 * tanh(all[i] * all[(i + 1) % (2 * size)]);"]
    elif how == "allgatherv":  # rank q gives 1 + q % 2 values, at gaps of one
        lines += ["int counts[4], displs[4], at = 0;",
                  "for (int q = 0; q < size; q++) { counts[q] = 1 + q % 2; displs[q] = at + 1; at += counts[q] + 1; }",
                  "for (int i = 0; i < 32; i++) all[i] = 0;",
                  *_started(rng, "MPI_Allgatherv",
                            "v + 1, 1 + rank % 2, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD"),
                  f"for (int i = 0; i < at; i++) v[i % {N}] += 0.25 * tanh(all[i] * all[(i + 2) % at]);"]
    elif how == "alltoall":
        lines += [f"for (int i = 0; i < size; i++) {{ all[2 * i] = v[i % {N}] * (i + 1); all[2 * i + 1] = v[(i + 1) % {N}]; }}",
                  "MPI_Alltoall(all, 2, MPI_DOUBLE, back, 2, MPI_DOUBLE, MPI_COMM_WORLD);",
                  f"for (int i = 0; i < 2 * size; i++) v[i % {N}] = 0.8 * v[i % {N}] + 0.2 * tanh(back[i] * back[i]);"]
    else:
        lines += ["double mine[2];",
                  "MPI_Gather(v + 1, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);",
                  "if (rank == 0) for (int i = 0; i < 2 * size; i++) all[i] = all[i] * all[(i + 3) % (2 * size)];",
                  "MPI_Scatter(all, 2, MPI_DOUBLE, mine, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);",
                  "v[0] += tanh(mine[0]); v[3] -= 0.5 * tanh(mine[1]);"]
    return lines + ["}"]


@dataclass(frozen=True)
class Program:
    name: str
    text: str
    width: int  # forward mode's
    lanes: str  # dual (a shadow to each lane) or dualv (side by side)


def program(rng: random.Random, name: str) -> Program:
    """A random function `name` of a rank's N values, annotated for both modes."""
    steps: list[str] = []
    for k in range(rng.randint(3, 6)):
        step = rng.choice([_local, _local, _halo, _halo, _reduction, _move])
        steps += step(rng, 10 * k) if step is _halo else step(rng)
    weights = [round(rng.uniform(-1, 1), 2) for _ in range(N)]
    body = "\n    ".join(steps)
    result = " + ".join(f"{w} * v[{i}]" for i, w in enumerate(weights))
    width = rng.choice([1, 1, 2, 3])  # forward mode's width: a shadow to each lane, or side by side (dualv)
    mode = "forward" if width == 1 else f"forward[{width}]"
    lanes = "dualv" if width > 1 and rng.random() < 0.5 else "dual"
    return Program(name, f"// @diff({name}_grad: (dup) -> active; {name}_fwd: {mode} ({lanes}) -> dual)\n"
                         f"double {name}(const double *x)\n{{\n"
                         "    int rank, size;\n    MPI_Comm_rank(MPI_COMM_WORLD, &rank);\n"
                         "    MPI_Comm_size(MPI_COMM_WORLD, &size);\n"
                         f"    double v[{N}], t[{N}];\n    for (int i = 0; i < {N}; i++) v[i] = x[i];\n"
                         f"    (void)t;\n    {body}\n    return {result};\n}}\n", width, lanes)


DRIVER = r"""
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include "programs.adgen.h"
enum { N = %(n)d };
typedef double (*primal)(const double *);
typedef double (*gradient)(const double *, double *, double);
typedef double (*tangent)(const double *, const double *);
static int lanes_wrong;
/* Forward mode at width W: lane k given (k + 1) times the direction must give (k + 1) times lane 0's. */
static void lanes(const double *d, int w)
{
    for (int k = 1; k < w; k++)
        if (fabs(d[k] - (k + 1) * d[0]) > 1e-9 * fmax(1, fabs((k + 1) * d[0])))
            lanes_wrong = 1;
}
%(declarations)s
static double J(primal f, const double *x)
{
    double v = f(x), all;
    MPI_Allreduce(&v, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, failed = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    primal fs[] = {%(primals)s};
    gradient gs[] = {%(gradients)s};
    tangent ts[] = {%(tangents)s};
    for (int k = 0; k < (int)(sizeof fs / sizeof fs[0]); k++) {
        double x[N], dx[N] = {0};
        int wrong = 0, unsure = 0;
        for (int i = 0; i < N; i++) x[i] = 0.3 + 0.17 * i + 0.41 * rank + 0.05 * k;
        gs[k](x, dx, 1.0);
        double J0 = fabs(J(fs[k], x));
        for (int q = 0; q < size; q++)
            for (int i = 0; i < N; i++) {
                double keep = x[i], fd[3], h[3] = {1e-6, 2e-6, 1e-8};
                for (int s = 0; s < 3; s++) {
                    if (rank == q) x[i] = keep + h[s];
                    double up = J(fs[k], x);
                    if (rank == q) x[i] = keep - h[s];
                    double down = J(fs[k], x);
                    x[i] = keep;
                    fd[s] = (up - down) / (2 * h[s]);
                }
                double t[N] = {0}, d, D;
                if (rank == q) t[i] = 1;
                d = ts[k](x, t);
                if (lanes_wrong) {
                    wrong = 1, lanes_wrong = 0;
                    printf("program %%d rank %%d value %%d: the lanes of forward mode disagree\n", k, rank, i);
                }
                MPI_Allreduce(&d, &D, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                if (rank == q) {
                    /* the differences' rounding (J's last bits over the step) and the tolerance */
                    double scale = fmax(1, fabs(dx[i])), tol = 1e-5 * scale + 8 * J0 * 2.2e-16 / h[0];
                    double fine = 1e-5 * scale + 8 * J0 * 2.2e-16 / h[2];  /* (the small step's rounding) */
                    double richardson = (4 * fd[0] - fd[1]) / 3;  /* (the h^2 term of the error gone) */
                    int modes = fabs(D - dx[i]) <= 1e-9 * scale;  /* forward against reverse */
                    int close = fmin(fabs(fd[0] - dx[i]), fabs(richardson - dx[i])) <= tol || fabs(fd[2] - dx[i]) <= fine;
                    /* converged: the steps agree (a term oscillating within the step does not, at 1e-8) */
                    int converged = fabs(fd[0] - fd[1]) <= tol && fabs(fd[0] - fd[2]) <= fine;
                    if (!modes || (!close && converged)) {
                        wrong = 1;
                        printf("program %%d rank %%d value %%d: reverse %%.12g forward %%.12g differences %%.12g %%.12g "
                               "%%.12g\n", k, rank, i, dx[i], D, fd[0], fd[1], fd[2]);
                    } else if (!close)
                        unsure = 1;  /* the differences have not converged: no reference */
                }
            }
        int both[2] = {wrong, unsure}, all[2];
        MPI_Allreduce(both, all, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        failed += all[0];
        if (rank == 0 && all[1] && !all[0]) printf("inconclusive %%d\n", k);
    }
    int any;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) printf("%%s\n", any ? "WRONG" : "ok");
    MPI_Finalize();
    return any ? 1 : 0;
}
"""


def adgen_command() -> list[str]:
    return [sys.executable, "-m", "adgen.commands.cli"]


def _tangent(p: Program) -> str:
    """The driver's tangent of a program: forward mode's lane 0, the other lanes checked (`lanes`)."""
    name, width = p.name, p.width
    if width == 1:
        return f"static double {name}_tangent(const double *x, const double *t) {{ return {name}_fwd(x, t).d_ret; }}\n"
    if p.lanes == "dualv":
        fill = f"double tv[{width} * N];\n    for (int i = 0; i < N * {width}; i++) tv[i] = (i % {width} + 1) * t[i / {width}];"
        call = f"{name}_fwd(x, tv)"
    else:
        fill = f"double l[{width}][N];\n    for (int i = 0; i < N * {width}; i++) l[i / N][i % N] = (i / N + 1) * t[i % N];"
        call = f"{name}_fwd(x, {', '.join(f'l[{k}]' for k in range(width))})"
    return (f"static double {name}_tangent(const double *x, const double *t)\n{{\n    {fill}\n"
            f"    {name}_fwd_result r = {call};\n    lanes(r.d_ret, {width});\n    return r.d_ret[0];\n}}\n")


def run_batch(programs: list[Program], ranks: list[int], work: Path, library: str = "openmpi"
              ) -> tuple[list[str], set[int]]:
    """Builds the programs with their driver and runs it on each rank count: what went wrong, and
    the programs whose finite differences did not converge somewhere (no reference: inconclusive)."""
    mpicc, mpirun = LIBRARIES[library]
    names = [p.name for p in programs]
    source = work / "programs.c"
    source.write_text("#include <math.h>\n#include <mpi.h>\n\n" + "\n".join(p.text for p in programs))
    declarations = "".join(f"double {p.name}(const double *);\n{_tangent(p)}" for p in programs)
    (work / "main.c").write_text(DRIVER % {
        "n": N, "declarations": declarations, "primals": ", ".join(names),
        "gradients": ", ".join(f"(gradient){n}_grad" for n in names),
        "tangents": ", ".join(f"{n}_tangent" for n in names)})
    built = subprocess.run([*adgen_command(), "build", "-q", str(source), "-o", str(work / "out")], capture_output=True,
                           text=True, env={**os.environ, "MPICC": mpicc})
    if built.returncode != 0:
        return [f"adgen build failed:\n{built.stderr}"], set()
    linked = subprocess.run([mpicc, "-O2", "-I", str(work / "out"), str(work / "main.c"), str(source),
                             str(work / "out" / "programs.adgen.o"), "-lm", "-o", str(work / "prog")],
                            capture_output=True, text=True)
    if linked.returncode != 0:
        return [f"linking failed:\n{linked.stderr}"], set()
    problems, unsure = [], set()
    for p in ranks:
        try:
            run = subprocess.run([*mpirun, "-np", str(p), str(work / "prog")], capture_output=True, text=True,
                                 timeout=300)
        except subprocess.TimeoutExpired:
            problems.append(f"{p} ranks: did not finish in 300 s (a hang)")
            continue
        if run.returncode != 0 or "ok" not in run.stdout:
            problems.append(f"{p} ranks: exit {run.returncode}\n{run.stdout}{run.stderr[-2000:]}")
        unsure |= {int(line.split()[1]) for line in run.stdout.splitlines() if line.startswith("inconclusive ")}
    return problems, unsure


def fuzz(programs: int, seed: int, ranks: list[int], batch: int = 20, progress=None, library: str = "openmpi"
         ) -> tuple[list[str], int]:
    """Runs `programs` random programs in batches, built and run with an MPI library of LIBRARIES:
    the failures, each with its batch's source, and how many programs were inconclusive."""
    failures, inconclusive = [], 0
    done = 0
    with tempfile.TemporaryDirectory(prefix="adgen-mpi-fuzz-") as tmp:
        while done < programs:
            k = min(batch, programs - done)
            rng = random.Random(f"{seed}:{done}")
            made = [program(rng, f"p{i}") for i in range(k)]
            work = Path(tmp) / f"batch{done}"
            work.mkdir()
            problems, unsure = run_batch(made, ranks, work, library)
            for problem in problems:
                failures.append(f"seed {seed}, programs {done}..{done + k - 1}: {problem}\n"
                                + "\n".join(p.text for p in made))
            inconclusive += len(unsure)
            done += k
            if progress:
                progress(done, len(failures), inconclusive)
    return failures, inconclusive


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--long", type=int, default=40, metavar="N", help="how many programs (default 40)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ranks", default="2,3", help="rank counts each batch runs on (default 2,3)")
    parser.add_argument("--batch", type=int, default=20, help="programs per build")
    parser.add_argument("--mpi", choices=sorted(LIBRARIES), default="openmpi",
                        help="the MPI library (default openmpi: mpicc, mpirun; mpich: mpicc.mpich, mpirun.mpich)")
    args = parser.parse_args()
    ranks = [int(r) for r in args.ranks.split(",")]
    failures, inconclusive = fuzz(args.long, args.seed, ranks, args.batch, lambda done, bad, unsure: print(
        f"{done} programs, {bad} failing batches, {unsure} inconclusive", file=sys.stderr, flush=True), args.mpi)
    for failure in failures:
        print(failure)
    print(f"{args.long} programs on {args.ranks} ranks: {len(failures)} failing batches, {inconclusive} inconclusive")
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    sys.exit(main())
