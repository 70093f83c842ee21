/* Times the primal, the width-1 forward derivative, 8 width-1 calls, and forward[8] with
 * separate (dual) and interleaved (dualv) tangents; best of REPS runs each, in seconds. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "forward_kernel.adgen.h"

double kernel(const double *x, int n);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

#define BEST(result, statement)                                        \
    do {                                                               \
        result = 1e30;                                                 \
        for (int rep = 0; rep < reps; rep++) {                         \
            double start = now();                                      \
            statement;                                                 \
            double took = now() - start;                               \
            if (took < result)                                         \
                result = took;                                         \
        }                                                              \
    } while (0)

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100000, reps = argc > 2 ? atoi(argv[2]) : 20;
    double *x = malloc(n * sizeof *x), *dx[8], *dxv = malloc(8 * n * sizeof *dxv);
    for (int i = 0; i < n; i++)
        x[i] = 0.001 * (i % 1000) - 0.3;
    for (int k = 0; k < 8; k++) {
        dx[k] = malloc(n * sizeof **dx);
        for (int i = 0; i < n; i++)
            dxv[i * 8 + k] = dx[k][i] = (i + k) % 3 - 1.0;
    }
    volatile double sink = 0;
    double primal, one, eight_calls, batched, interleaved;
    BEST(primal, sink += kernel(x, n));
    BEST(one, sink += kernel_fwd(x, dx[0], n).d_ret);
    BEST(eight_calls, for (int k = 0; k < 8; k++) sink += kernel_fwd(x, dx[k], n).d_ret);
    BEST(batched, sink += kernel_fwd8(x, dx[0], dx[1], dx[2], dx[3], dx[4], dx[5], dx[6], dx[7], n).d_ret[7]);
    BEST(interleaved, sink += kernel_fwd8v(x, dxv, n).d_ret[7]);
    /* the lanes must agree */
    kernel_fwd8_result a = kernel_fwd8(x, dx[0], dx[1], dx[2], dx[3], dx[4], dx[5], dx[6], dx[7], n);
    kernel_fwd8v_result b = kernel_fwd8v(x, dxv, n);
    for (int k = 0; k < 8; k++) {
        double single = kernel_fwd(x, dx[k], n).d_ret;
        if (fabs(a.d_ret[k] - single) > 1e-9 * fabs(single) || fabs(b.d_ret[k] - single) > 1e-9 * fabs(single)) {
            fprintf(stderr, "lane %d disagrees\n", k);
            return 1;
        }
    }
    printf("%d %.9f %.9f %.9f %.9f %.9f\n", n, primal, one, eight_calls, batched, interleaved);
    return 0;
}
