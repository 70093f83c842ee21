/* bench/mpi's timing, for its drivers: `reps` runs each of the primal and of the gradient, between
 * barriers, each run's seconds the slowest rank's; their medians printed on rank 0 as one JSON line. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

typedef double (*bench_run)(void *state);  /* one run; returns something to keep (the optimizer may not drop it) */

static int bench_compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double bench_seconds(bench_run run, void *state, double *sink)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    *sink += run(state);
    double mine = MPI_Wtime() - start, slowest;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

static void bench_time(bench_run primal, bench_run gradient, void *state, int reps, int rank)
{
    double *p = malloc(sizeof(double) * reps), *g = malloc(sizeof(double) * reps), sink = 0;
    for (int k = 0; k < reps; k++) {
        p[k] = bench_seconds(primal, state, &sink);
        g[k] = bench_seconds(gradient, state, &sink);
    }
    qsort(p, reps, sizeof(double), bench_compare);
    qsort(g, reps, sizeof(double), bench_compare);
    if (rank == 0)
        printf("{\"primal_s\": %.6g, \"gradient_s\": %.6g, \"sink\": %g}\n", p[reps / 2], g[reps / 2], sink);
    free(p), free(g);
}
