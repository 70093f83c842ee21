/* adgen's gradients for driver.c: within 64 MiB (ckpt) or without a budget (full). */
#include <string.h>
#include "kernels.adgen.h"

double gradient(const char *kernel, const char *mode, double **x, double **dx, int *ints, int *count)
{
    int ckpt = !strcmp(mode, "ckpt");
    int size = ints[0], steps = ints[1];
    (void)count;
    if (!strcmp(kernel, "heat2d"))
        return (ckpt ? heat2d_ckpt : heat2d_full)(x[0], dx[0], x[1], dx[1], size, steps, 1.0);
    if (!strcmp(kernel, "rk4"))
        return (ckpt ? rk4_ckpt : rk4_full)(x[0], dx[0], x[1], dx[1], size, steps, 0.01, 1.0);
    return (ckpt ? rnn_ckpt : rnn_full)(x[0], dx[0], x[1], x[2], dx[2], x[2] + size, dx[2] + size, size, ints[2],
                                       steps, 1.0);
}
