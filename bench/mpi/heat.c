/* A 2-D heat equation over MPI ranks, written for adgen's MPI bench (bench/mpi): each rank owns
 * `rows` rows of an nx-wide grid, with a halo row above and below exchanged by Isend/Irecv at
 * every step (MPI_PROC_NULL at the edges of the domain, which hold zero), explicit steps of the
 * 5-point stencil, and the global energy's root reduced by Allreduce. The gradient of that root
 * with respect to the initial field and the diffusion coefficient is what the bench computes. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>

// @diff(heat_grad: (dup, active, const, const, const) -> active)
double heat(const double *u, double kappa, int nx, int rows, int steps)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
    double *a = calloc((size_t)nx * (rows + 2), sizeof(double)), *b = calloc((size_t)nx * (rows + 2), sizeof(double));
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < nx; c++)
            a[(r + 1) * nx + c] = u[r * nx + c];
    for (int s = 0; s < steps; s++) {
        MPI_Request q[4];
        MPI_Irecv(a, nx, MPI_DOUBLE, up, 0, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(a + (rows + 1) * nx, nx, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, &q[1]);
        MPI_Isend(a + nx, nx, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &q[2]);
        MPI_Isend(a + rows * nx, nx, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, &q[3]);
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        for (int r = 1; r <= rows; r++)
            for (int c = 0; c < nx; c++) {
                double left = c > 0 ? a[r * nx + c - 1] : 0, right = c + 1 < nx ? a[r * nx + c + 1] : 0;
                double here = a[r * nx + c];
                b[r * nx + c] = here + kappa * (a[(r - 1) * nx + c] + a[(r + 1) * nx + c] + left + right - 4 * here);
            }
        double *t = a;
        a = b;
        b = t;
    }
    double local = 0, global;
    for (int r = 1; r <= rows; r++)
        for (int c = 0; c < nx; c++)
            local += a[r * nx + c] * a[r * nx + c];
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    free(a);
    free(b);
    return sqrt(global);
}
