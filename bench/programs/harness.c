/* Times one way of computing a program's loss or gradient, in a process of its own so that its
 * peak resident memory is that way's alone: VmHWM of /proc/self/status, the high-water mark of
 * resident memory since the program started (every page touched: the parameter and activation
 * blocks, their shadows and whatever the derivative allocates). getrusage's ru_maxrss would not
 * do: Linux carries it over from the process that exec'd the harness, here the Python runner.
 *
 *   harness MODE REPS GRADIENT_FILE SIZES...
 *
 * MODE is primal, hand, adgen or enzyme, or count: adgen's gradient once, callgrind collecting
 * only then (under `valgrind --tool=callgrind --collect-atstart=no`: bench/instructions.py). Else
 * one warm-up call, then REPS timed calls; each gradient
 * call zeroes grads and grad_acts first, inside the timed region, as a training step would. It
 * prints `loss=L median_s=S min_s=S peak_kb=K` and, for a gradient, writes it (n_params floats)
 * to GRADIENT_FILE for the caller to compare. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "harness.h"
#if defined(__has_include) && __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

static unsigned long long state = 0x9e3779b97f4a7c15ull;

float harness_random(float scale)
{
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return ((float)(state >> 40) / (float)(1ull << 24) * 2.0f - 1.0f) * scale;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* VmHWM in kB, or -1 where /proc does not say */
static long peak_resident_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *status = fopen("/proc/self/status", "r");
    while (status != NULL && fgets(line, sizeof line, status) != NULL)
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    if (status != NULL)
        fclose(status);
    return kb;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *allocate(size_t n)
{
    float *p = calloc(n, sizeof(float));
    if (p == NULL) {
        fprintf(stderr, "harness: out of memory (%zu floats)\n", n);
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s primal|hand|adgen|enzyme REPS GRADIENT_FILE SIZES...\n", argv[0]);
        return 2;
    }
    int counting = strcmp(argv[1], "count") == 0;
    const char *mode = counting ? "adgen" : argv[1];
    int reps = atoi(argv[2]);
    Program program = program_setup(argc - 4, argv + 4);
    void (*gradient)(float *, float *, float *, float *) = strcmp(mode, "hand") == 0     ? program.hand
                                                           : strcmp(mode, "adgen") == 0  ? program.adgen
                                                           : strcmp(mode, "enzyme") == 0 ? program.enzyme
                                                                                         : NULL;
    if (strcmp(mode, "primal") != 0 && gradient == NULL) {
        fprintf(stderr, "harness: no %s gradient in this build\n", mode);
        return 2;
    }
    float *params = allocate(program.n_params), *acts = allocate(program.n_acts);
    for (size_t i = 0; i < program.n_params; i++)
        params[i] = harness_random(0.25f);
    float *grads = NULL, *grad_acts = NULL;
    if (gradient != NULL) {
        grads = allocate(program.n_params);
        grad_acts = allocate(program.n_acts);
    }
    if (counting && gradient != NULL) {
        CALLGRIND_TOGGLE_COLLECT;
        gradient(params, grads, acts, grad_acts);
        CALLGRIND_TOGGLE_COLLECT;
        return 0;
    }
    double *times = malloc((reps + 1) * sizeof(double));
    float loss = 0.0f;
    for (int r = 0; r <= reps; r++) { /* r = 0: the warm-up */
        double start = now();
        if (gradient == NULL) {
            loss = program.loss(params, acts);
        } else {
            memset(grads, 0, program.n_params * sizeof(float));
            memset(grad_acts, 0, program.n_acts * sizeof(float));
            gradient(params, grads, acts, grad_acts);
        }
        times[r] = now() - start;
    }
    if (gradient != NULL) {
        loss = program.loss(params, acts);
        FILE *out = fopen(argv[3], "wb");
        if (out == NULL || fwrite(grads, sizeof(float), program.n_params, out) != program.n_params) {
            fprintf(stderr, "harness: cannot write %s\n", argv[3]);
            return 1;
        }
        fclose(out);
    }
    qsort(times + 1, reps, sizeof(double), by_value);
    printf("loss=%.9g median_s=%.9g min_s=%.9g peak_kb=%ld\n", loss, times[1 + reps / 2], times[1],
           peak_resident_kb());
    return 0;
}
