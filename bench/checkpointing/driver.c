/* The runner of `python -m bench.checkpointing`: one kernel, one way of computing, in a process
 * of its own: `driver KERNEL MODE SIZE STEPS`, MODE one of primal, ckpt (adgen within 64 MiB),
 * full (adgen without a budget), enzyme (Enzyme's gradient). Prints the time of one call, the
 * result, a checksum of the gradient and the process's peak resident memory (VmHWM). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double heat2d(double *a, double *b, int n, int steps);
double rk4(double *y, double *work, int m, int steps, double h);
double rnn(double *w, const double *x, double *h, double *hn, int hid, int in, int steps);
double gradient(const char *kernel, const char *mode, double **x, double **dx, int *ints, int *count);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static long peak_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: driver heat2d|rk4|rnn primal|ckpt|full|enzyme SIZE STEPS\n");
        return 2;
    }
    const char *kernel = argv[1], *mode = argv[2];
    int size = atoi(argv[3]), steps = atoi(argv[4]);
    double *x[3] = {0}, *dx[3] = {0};
    int ints[3] = {size, steps, 0}, count = 0;
    long n[3] = {0};
    if (!strcmp(kernel, "heat2d")) {
        n[0] = n[1] = (long)size * size;
        count = 2;
    } else if (!strcmp(kernel, "rk4")) {
        n[0] = 2 * size;
        n[1] = 10 * size;
        count = 2;
    } else {
        int in = 32;
        ints[2] = in;
        n[0] = (long)size * size + (long)size * in + 2 * size;  /* W, U, b, v */
        n[1] = (long)steps * in;  /* the inputs */
        n[2] = 2 * size;  /* h and hn */
        count = 3;
    }
    for (int k = 0; k < count; k++) {
        x[k] = calloc(n[k], sizeof(double));
        dx[k] = calloc(n[k], sizeof(double));
        for (long i = 0; i < n[k]; i++)
            x[k][i] = !strcmp(kernel, "rnn") && k == 0 ? 0.05 * sin(0.37 * i) : 0.5 + 0.4 * sin(0.013 * i + k);
    }
    double start = now(), result;
    if (!strcmp(mode, "primal")) {
        if (!strcmp(kernel, "heat2d")) result = heat2d(x[0], x[1], size, steps);
        else if (!strcmp(kernel, "rk4")) result = rk4(x[0], x[1], size, steps, 0.01);
        else result = rnn(x[0], x[1], x[2], x[2] + size, size, ints[2], steps);
    } else {
        result = gradient(kernel, mode, x, dx, ints, &count);
    }
    double seconds = now() - start, check = 0;
    for (long i = 0; i < n[0]; i++) check += dx[0][i] * (1 + i % 7);
    printf("seconds=%.6f result=%.17g check=%.17g peak_kb=%ld\n", seconds, result, check, peak_kb());
    return 0;
}
