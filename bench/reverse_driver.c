/* Times each kernel's primal, adgen gradient and hand-written gradient in one run (best of
 * REPS), checks that the two gradients agree, and prints one line per kernel:
 * name primal_s adgen_s hand_s max_relative_difference */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "reverse_kernels.adgen.h"

double rosenbrock(const double *x, int n);
void norm(double *restrict out, const double *restrict in, int n);
double logsumexp(const double *x, int n);
double gmm(const double *alphas, const double *means, const double *logq, const double *x, int n, int k, int d);
double nbody(double *pos, double *vel, const double *mass, int n, double dt);
double lstm(const double *W, const double *b, const double *xs, int T, int H);
void rosenbrock_hand(const double *x, double *gx, int n, double seed);
void norm_hand(double *out, double *dout, const double *in, double *din, int n);
void logsumexp_hand(const double *x, double *gx, int n, double seed);
void gmm_hand(const double *alphas, double *ga, const double *means, double *gm, const double *logq, double *gq,
              const double *x, int n, int k, int d, double seed);
void nbody_hand(double *pos, double *gpos, double *vel, double *gvel, const double *mass, int n, double dt,
                double seed);
void lstm_hand(const double *W, double *gW, const double *b, double *gb, const double *xs, int T, int H, double seed);

static int reps = 10;
static volatile double sink;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

#define BEST(result, statement)                                                                    \
    do {                                                                                           \
        result = 1e30;                                                                             \
        for (int rep = 0; rep < reps; rep++) {                                                     \
            double start = now();                                                                  \
            statement;                                                                             \
            double took = now() - start;                                                           \
            if (took < result)                                                                     \
                result = took;                                                                     \
        }                                                                                          \
    } while (0)

static double *filled(size_t n, double scale, unsigned seed)
{
    double *a = malloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        a[i] = scale * ((double)(seed >> 8) / (1u << 24) - 0.5);
    }
    return a;
}

static double *zeros(size_t n)
{
    return calloc(n, sizeof(double));
}

static double difference(const double *a, const double *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(a[i] - b[i]) / fmax(1e-8, fmax(fabs(a[i]), fabs(b[i]))));
    return worst;
}

static void report(const char *name, double primal, double adgen, double hand, double diff)
{
    printf("%s %.9f %.9f %.9f %.3e\n", name, primal, adgen, hand, diff);
    fflush(stdout);
}

static void bench_rosenbrock(int n)
{
    double *x = filled(n, 2.0, 1), *g1 = zeros(n), *g2 = zeros(n), p, a, h;
    BEST(p, sink += rosenbrock(x, n));
    BEST(a, memset(g1, 0, n * sizeof *g1); rosenbrock_grad(x, g1, n, 1.0));
    BEST(h, memset(g2, 0, n * sizeof *g2); rosenbrock_hand(x, g2, n, 1.0));
    report("rosenbrock", p, a, h, difference(g1, g2, n));
}

static void bench_norm(int n)
{
    double *in = filled(n, 2.0, 2), *out = zeros(n), *seed = filled(n, 1.0, 3), *d1 = zeros(n), *d2 = zeros(n);
    double *s1 = zeros(n), *s2 = zeros(n), p, a, h;
    BEST(p, norm(out, in, n));
    BEST(a, memcpy(s1, seed, n * sizeof *s1); memset(d1, 0, n * sizeof *d1); norm_grad(out, s1, in, d1, n));
    BEST(h, memcpy(s2, seed, n * sizeof *s2); memset(d2, 0, n * sizeof *d2); norm_hand(out, s2, in, d2, n));
    char name[32];
    snprintf(name, sizeof name, "norm/%d", n);
    report(name, p, a, h, difference(d1, d2, n));
}

static void bench_logsumexp(int n)
{
    double *x = filled(n, 8.0, 4), *g1 = zeros(n), *g2 = zeros(n), p, a, h;
    BEST(p, sink += logsumexp(x, n));
    BEST(a, memset(g1, 0, n * sizeof *g1); logsumexp_grad(x, g1, n, 1.0));
    BEST(h, memset(g2, 0, n * sizeof *g2); logsumexp_hand(x, g2, n, 1.0));
    report("logsumexp", p, a, h, difference(g1, g2, n));
}

static void bench_gmm(int n, int k, int d)
{
    double *al = filled(k, 1.0, 5), *mu = filled(k * d, 2.0, 6), *lq = filled(k * d, 0.5, 7), *x = filled(n * d, 2.0, 8);
    double *ga[2] = { zeros(k), zeros(k) }, *gm[2] = { zeros(k * d), zeros(k * d) }, *gq[2] = { zeros(k * d), zeros(k * d) };
    double p, a, h;
    BEST(p, sink += gmm(al, mu, lq, x, n, k, d));
    BEST(a, memset(ga[0], 0, k * 8); memset(gm[0], 0, k * d * 8); memset(gq[0], 0, k * d * 8);
         gmm_grad(al, ga[0], mu, gm[0], lq, gq[0], x, n, k, d, 1.0));
    BEST(h, memset(ga[1], 0, k * 8); memset(gm[1], 0, k * d * 8); memset(gq[1], 0, k * d * 8);
         gmm_hand(al, ga[1], mu, gm[1], lq, gq[1], x, n, k, d, 1.0));
    double diff = fmax(difference(ga[0], ga[1], k), fmax(difference(gm[0], gm[1], k * d), difference(gq[0], gq[1], k * d)));
    report("gmm", p, a, h, diff);
}

static void bench_nbody(int n)
{
    double *pos0 = filled(3 * n, 10.0, 9), *vel0 = filled(3 * n, 1.0, 10), *mass = filled(n, 1.0, 11);
    for (int i = 0; i < n; i++)
        mass[i] += 1.0;
    double *pos = zeros(3 * n), *vel = zeros(3 * n), *g[2][2] = { { zeros(3 * n), zeros(3 * n) }, { zeros(3 * n), zeros(3 * n) } };
    size_t bytes = 3 * n * sizeof(double);
    double p, a, h;
    BEST(p, memcpy(pos, pos0, bytes); memcpy(vel, vel0, bytes); sink += nbody(pos, vel, mass, n, 0.01));
    BEST(a, memcpy(pos, pos0, bytes); memcpy(vel, vel0, bytes); memset(g[0][0], 0, bytes); memset(g[0][1], 0, bytes);
         nbody_grad(pos, g[0][0], vel, g[0][1], mass, n, 0.01, 1.0));
    BEST(h, memcpy(pos, pos0, bytes); memcpy(vel, vel0, bytes); memset(g[1][0], 0, bytes); memset(g[1][1], 0, bytes);
         nbody_hand(pos, g[1][0], vel, g[1][1], mass, n, 0.01, 1.0));
    report("nbody", p, a, h, fmax(difference(g[0][0], g[1][0], 3 * n), difference(g[0][1], g[1][1], 3 * n)));
}

static void bench_lstm(int T, int H)
{
    double *W = filled(8 * H * H, 0.5, 12), *b = filled(4 * H, 0.2, 13), *xs = filled(T * H, 1.0, 14);
    double *gW[2] = { zeros(8 * H * H), zeros(8 * H * H) }, *gb[2] = { zeros(4 * H), zeros(4 * H) };
    double p, a, h;
    BEST(p, sink += lstm(W, b, xs, T, H));
    BEST(a, memset(gW[0], 0, 8 * H * H * 8); memset(gb[0], 0, 4 * H * 8); lstm_grad(W, gW[0], b, gb[0], xs, T, H, 1.0));
    BEST(h, memset(gW[1], 0, 8 * H * H * 8); memset(gb[1], 0, 4 * H * 8); lstm_hand(W, gW[1], b, gb[1], xs, T, H, 1.0));
    report("lstm", p, a, h, fmax(difference(gW[0], gW[1], 8 * H * H), difference(gb[0], gb[1], 4 * H)));
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    reps = quick ? 3 : 10;
    bench_rosenbrock(quick ? 100000 : 1000000);
    bench_norm(20000);
    bench_norm(80000);
    bench_logsumexp(quick ? 100000 : 1000000);
    bench_gmm(quick ? 200 : 1000, 25, 10);
    bench_nbody(quick ? 60 : 200);
    bench_lstm(quick ? 30 : 100, 32);
    return 0;
}
