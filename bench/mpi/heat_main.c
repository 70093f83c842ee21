/* The driver of bench/mpi's heat program (bench/mpi/__main__.py runs it):
 *   heat_main check NX GLOBAL_ROWS STEPS  -- the gradient over the whole grid, gathered on rank 0 and
 *                                           printed there (one value a line, then d kappa, then d kappa
 *                                           by central differences)
 *   heat_main time NX ROWS STEPS REPS     -- each rank ROWS rows (weak scaling): the primal's and the
 *                                           gradient's seconds (the median over REPS, the slowest rank's)
 * Built with -DENZYME, the gradient is Enzyme's (__enzyme_autodiff) instead of adgen's. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "timing.h"

double heat(const double *u, double kappa, int nx, int rows, int steps);
#ifdef ENZYME
extern int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
static double gradient(const double *u, double *du, double kappa, int nx, int rows, int steps, double seed)
{
    (void)seed;  /* Enzyme's return adjoint is 1 on every rank: its J is the same on each, so scale after */
    return __enzyme_autodiff((void *)heat, enzyme_dup, u, du, kappa, enzyme_const, nx, enzyme_const, rows,
                             enzyme_const, steps);
}
#define SEEDED_ON_EVERY_RANK 1
#else
#include "heat.adgen.h"
static double gradient(const double *u, double *du, double kappa, int nx, int rows, int steps, double seed)
{
    return heat_grad(u, du, kappa, nx, rows, steps, seed).d_kappa;
}
#define SEEDED_ON_EVERY_RANK 0
#endif

typedef struct {
    const double *u;
    double *du, kappa, seed;
    int nx, rows, steps;
} run_state;

static double run_primal(void *p)
{
    run_state *r = p;
    return heat(r->u, r->kappa, r->nx, r->rows, r->steps);
}

static double run_gradient(void *p)
{
    run_state *r = p;
    memset(r->du, 0, sizeof(double) * r->nx * r->rows);
    return gradient(r->u, r->du, r->kappa, r->nx, r->rows, r->steps, r->seed);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int nx = atoi(argv[2]), rows = atoi(argv[3]), steps = atoi(argv[4]), first = 0;
    int check = !strcmp(argv[1], "check");
    if (check) {  /* the whole grid's rows split over the ranks */
        first = rows / size * rank;
        rows /= size;
    } else
        first = rows * rank;
    double *u = malloc(sizeof(double) * nx * rows), *du = calloc((size_t)nx * rows, sizeof(double)), kappa = 0.2;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < nx; c++)
            u[r * nx + c] = 1.0 / (1 + 0.01 * (((first + r) * 31 + c * 17) % 97)) + 0.001 * c;
    /* J is the same on every rank: its gradient seeded on rank 0 alone (Enzyme's on each: divided) */
    double seed = rank == 0 ? 1 : 0, scale = SEEDED_ON_EVERY_RANK ? 1.0 / size : 1;
    if (check) {
        double dk = gradient(u, du, kappa, nx, rows, steps, seed) * scale, total;
        for (int i = 0; i < nx * rows; i++)
            du[i] *= scale;
        MPI_Reduce(&dk, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        double *all = rank == 0 ? malloc(sizeof(double) * nx * rows * size) : NULL;
        MPI_Gather(du, nx * rows, MPI_DOUBLE, all, nx * rows, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        double h = 1e-6, up = heat(u, kappa + h, nx, rows, steps), down = heat(u, kappa - h, nx, rows, steps);
        if (rank == 0) {
            for (int i = 0; i < nx * rows * size; i++)
                printf("%.17g\n", all[i]);
            printf("%.17g\n", total);
            printf("%.17g\n", (up - down) / (2 * h));  /* d kappa by central differences */
        }
    } else {
        run_state r = {u, du, kappa, seed, nx, rows, steps};
        bench_time(run_primal, run_gradient, &r, atoi(argv[5]), rank);
    }
    MPI_Finalize();
    return 0;
}
