/* The driver of bench/mpi's least squares (bench/mpi/__main__.py runs it):
 *   lsq_main check COLS GLOBAL_ROWS 0      -- the gradient (summed over the ranks) printed on rank 0,
 *                                              then its first entry by central differences
 *   lsq_main time COLS ROWS 0 REPS         -- each rank ROWS rows (weak scaling): the primal's and the
 *                                              gradient's seconds (the median over REPS, the slowest rank's)
 * Built with -DENZYME, the gradient is Enzyme's (__enzyme_autodiff) instead of adgen's. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "timing.h"

double lsq(const double *a, const double *b, const double *x, int rows, int cols);
#ifdef ENZYME
extern int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
static void gradient(const double *a, const double *b, const double *x, double *dx, int rows, int cols, double seed)
{
    (void)seed;  /* Enzyme seeds the result on every rank: its sum over the ranks is scaled after */
    __enzyme_autodiff((void *)lsq, enzyme_const, a, enzyme_const, b, enzyme_dup, x, dx, enzyme_const, rows,
                      enzyme_const, cols);
}
#define SEEDED_ON_EVERY_RANK 1
#else
#include "lsq.adgen.h"
static void gradient(const double *a, const double *b, const double *x, double *dx, int rows, int cols, double seed)
{
    lsq_grad(a, b, x, dx, rows, cols, seed);
}
#define SEEDED_ON_EVERY_RANK 0
#endif

typedef struct {
    const double *a, *b, *x;
    double *dx, seed;
    int rows, cols;
} run_state;

static double run_primal(void *p)
{
    run_state *r = p;
    return lsq(r->a, r->b, r->x, r->rows, r->cols);
}

static double run_gradient(void *p)
{
    run_state *r = p;
    memset(r->dx, 0, sizeof(double) * r->cols);
    gradient(r->a, r->b, r->x, r->dx, r->rows, r->cols, r->seed);
    return r->dx[0];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int cols = atoi(argv[2]), rows = atoi(argv[3]), check = !strcmp(argv[1], "check"), first;
    if (check)
        rows /= size, first = rows * rank;
    else
        first = rows * rank;
    double *a = malloc(sizeof(double) * rows * cols), *b = malloc(sizeof(double) * rows);
    double *x = malloc(sizeof(double) * cols), *dx = calloc(cols, sizeof(double)), *all = calloc(cols, sizeof(double));
    for (int i = 0; i < rows; i++) {
        b[i] = 1.0 / (1 + (first + i) % 13);
        for (int j = 0; j < cols; j++)
            a[i * cols + j] = 1.0 / (1 + ((first + i) * 7 + j * 3) % 29) - 0.05;
    }
    for (int j = 0; j < cols; j++)
        x[j] = 0.1 * (j % 5) - 0.2;
    double seed = rank == 0 ? 1 : 0, scale = SEEDED_ON_EVERY_RANK ? 1.0 / size : 1;
    if (check) {
        gradient(a, b, x, dx, rows, cols, seed);
        for (int j = 0; j < cols; j++)
            dx[j] *= scale;
        MPI_Allreduce(dx, all, cols, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);  /* (x is every rank's) */
        double h = 1e-6, keep = x[0];
        x[0] = keep + h;
        double up = lsq(a, b, x, rows, cols);
        x[0] = keep - h;
        double down = lsq(a, b, x, rows, cols);
        x[0] = keep;
        if (rank == 0) {
            for (int j = 0; j < cols; j++)
                printf("%.17g\n", all[j]);
            printf("%.17g\n", (up - down) / (2 * h));
        }
    } else {
        run_state r = {a, b, x, dx, seed, rows, cols};
        bench_time(run_primal, run_gradient, &r, atoi(argv[5]), rank);
    }
    MPI_Finalize();
    return 0;
}
