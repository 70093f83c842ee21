/* Data-parallel least squares over MPI ranks, written for adgen's MPI bench (bench/mpi): each rank
 * holds `rows` rows of A and b, every rank the same x; the loss, half the squared residual summed
 * over the ranks by Allreduce, is what every rank returns. Its gradient with respect to x, summed
 * over the ranks, is the one-rank program's. */
#include <mpi.h>

// @diff(lsq_grad: (const, const, dup, const, const) -> active)
double lsq(const double *a, const double *b, const double *x, int rows, int cols)
{
    double local = 0, global;
    for (int i = 0; i < rows; i++) {
        double r = -b[i];
        for (int j = 0; j < cols; j++)
            r += a[i * cols + j] * x[j];
        local += 0.5 * r * r;
    }
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return global;
}
