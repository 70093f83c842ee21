/* Times every kernel of kernels.c in one run, best of `reps` repetitions each, and prints:
 *   NAME reverse  primal_s adgen_gradient_s hand_gradient_s max_relative_difference
 *   NAME forward8 primal_s adgen_forward8_s eight_width1_calls_s max_relative_difference
 * The differences compare adgen's gradient with the hand-written one, and forward[8]'s lanes
 * with the eight width-1 calls. Usage: bench [quick] [reps] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernels.adgen.h"

double rosenbrock(const double *x, int n);
void norm(double *restrict out, const double *restrict in, int n);
double logsumexp(const double *x, int n);
double gmm(const double *alphas, const double *means, const double *logq, const double *x, int n, int k, int d);
double ba(const double *cams, const double *pts, const int *obs, const double *feat, int n_obs);
double lstm(const double *W, const double *b, const double *xs, int T, int H, int layers);
double nbody(double *pos, double *vel, const double *mass, int n, double dt);
double heat(double *u, double *scratch, int n, double alpha, int steps);
double sinexp(const double *x, int n);
void rosenbrock_hand(const double *x, double *gx, int n, double seed);
void norm_hand(double *out, double *dout, const double *in, double *din, int n);
void logsumexp_hand(const double *x, double *gx, int n, double seed);
void gmm_hand(const double *alphas, double *ga, const double *means, double *gm, const double *logq, double *gq,
              const double *x, int n, int k, int d, double seed);
void ba_hand(const double *cams, double *gc, const double *pts, double *gp, const int *obs, const double *feat,
             int n_obs, double seed);
void lstm_hand(const double *W, double *gW, const double *b, double *gb, const double *xs, int T, int H, int layers,
               double seed);
void nbody_hand(double *pos, double *gpos, double *vel, double *gvel, const double *mass, int n, double dt,
                double seed);
double heat_hand(double *u, double *gu, double *scratch, double *gs, int n, double alpha, int steps, double seed);
double sinexp_hand(const double *x, double *gx, int n, double seed);

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

/* eight random directions for an array of n */
static void directions(double *d[8], size_t n, unsigned seed)
{
    for (int k = 0; k < 8; k++)
        d[k] = filled(n, 1.0, seed + 97 * k);
}

static double relative(double a, double b)
{
    return fabs(a - b) / fmax(1e-12, fmax(fabs(a), fabs(b)));
}

static double difference(const double *a, const double *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(a[i] - b[i]) / fmax(1e-8, fmax(fabs(a[i]), fabs(b[i]))));
    return worst;
}

static void report(const char *name, const char *mode, double primal, double adgen, double other, double diff)
{
    printf("%s %s %.9f %.9f %.9f %.3e\n", name, mode, primal, adgen, other, diff);
    fflush(stdout);
}

/* forward[8] against eight width-1 calls, for kernels returning a scalar; `one_call` computes
 * singles[lane] for direction `lane` */
#define FORWARD8(name, primal_time, one_call, eight_call)                                          \
    do {                                                                                           \
        double lanes[8], singles[8], t8, t1;                                                       \
        BEST(t8, { eight_call; });                                                                 \
        BEST(t1, for (int lane = 0; lane < 8; lane++) { one_call; });                                       \
        double diff = 0;                                                                           \
        for (int lane = 0; lane < 8; lane++)                                                       \
            diff = fmax(diff, relative(lanes[lane], singles[lane]));                               \
        report(name, "forward8", primal_time, t8, t1, diff);                                       \
    } while (0)

static void bench_rosenbrock(int n)
{
    double *x = filled(n, 2.0, 1), *g1 = zeros(n), *g2 = zeros(n), *d[8], p, a, h;
    directions(d, n, 2);
    BEST(p, sink += rosenbrock(x, n));
    BEST(a, memset(g1, 0, n * sizeof *g1); rosenbrock_grad(x, g1, n, 1.0));
    BEST(h, memset(g2, 0, n * sizeof *g2); rosenbrock_hand(x, g2, n, 1.0));
    report("rosenbrock", "reverse", p, a, h, difference(g1, g2, n));
    FORWARD8("rosenbrock", p, singles[lane] = rosenbrock_fwd(x, d[lane], n),
             rosenbrock_fwd8_result r = rosenbrock_fwd8(x, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], n);
             memcpy(lanes, r.d_ret, sizeof lanes));
}

static void bench_norm(int n)
{
    double *in = filled(n, 2.0, 2), *out = zeros(n), *seed = filled(n, 1.0, 3), *d1 = zeros(n), *d2 = zeros(n);
    double *s1 = zeros(n), *s2 = zeros(n), *d[8], *o[8], *single = zeros(n), p, a, h;
    directions(d, n, 4);
    for (int k = 0; k < 8; k++)
        o[k] = zeros(n);
    BEST(p, norm(out, in, n));
    BEST(a, memcpy(s1, seed, n * sizeof *s1); memset(d1, 0, n * sizeof *d1); norm_grad(out, s1, in, d1, n));
    BEST(h, memcpy(s2, seed, n * sizeof *s2); memset(d2, 0, n * sizeof *d2); norm_hand(out, s2, in, d2, n));
    char name[32];
    snprintf(name, sizeof name, "norm/%d", n);
    report(name, "reverse", p, a, h, difference(d1, d2, n));
    double lanes[8], singles[8], t8, t1;
    BEST(t8, norm_fwd8(out, o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], in, d[0], d[1], d[2], d[3], d[4], d[5],
                       d[6], d[7], n));
    BEST(t1, for (int k = 0; k < 8; k++) norm_fwd(out, single, in, d[k], n));
    double diff = 0;
    for (int k = 0; k < 8; k++) {
        norm_fwd(out, single, in, d[k], n);
        diff = fmax(diff, difference(o[k], single, n));
    }
    (void)lanes, (void)singles;
    report(name, "forward8", p, t8, t1, diff);
}

static void bench_logsumexp(int n)
{
    double *x = filled(n, 8.0, 4), *g1 = zeros(n), *g2 = zeros(n), *d[8], p, a, h;
    directions(d, n, 5);
    BEST(p, sink += logsumexp(x, n));
    BEST(a, memset(g1, 0, n * sizeof *g1); logsumexp_grad(x, g1, n, 1.0));
    BEST(h, memset(g2, 0, n * sizeof *g2); logsumexp_hand(x, g2, n, 1.0));
    report("logsumexp", "reverse", p, a, h, difference(g1, g2, n));
    FORWARD8("logsumexp", p, singles[lane] = logsumexp_fwd(x, d[lane], n),
             logsumexp_fwd8_result r = logsumexp_fwd8(x, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], n);
             memcpy(lanes, r.d_ret, sizeof lanes));
}

static void bench_gmm(int n, int k, int d)
{
    double *al = filled(k, 1.0, 5), *mu = filled(k * d, 2.0, 6), *lq = filled(k * d, 0.5, 7), *x = filled(n * d, 2.0, 8);
    double *ga[2] = { zeros(k), zeros(k) }, *gm[2] = { zeros(k * d), zeros(k * d) }, *gq[2] = { zeros(k * d), zeros(k * d) };
    double *da[8], *dm[8], *dq[8], p, a, h;
    directions(da, k, 9);
    directions(dm, k * d, 10);
    directions(dq, k * d, 11);
    BEST(p, sink += gmm(al, mu, lq, x, n, k, d));
    BEST(a, memset(ga[0], 0, k * 8); memset(gm[0], 0, k * d * 8); memset(gq[0], 0, k * d * 8);
         gmm_grad(al, ga[0], mu, gm[0], lq, gq[0], x, n, k, d, 1.0));
    BEST(h, memset(ga[1], 0, k * 8); memset(gm[1], 0, k * d * 8); memset(gq[1], 0, k * d * 8);
         gmm_hand(al, ga[1], mu, gm[1], lq, gq[1], x, n, k, d, 1.0));
    double diff = fmax(difference(ga[0], ga[1], k), fmax(difference(gm[0], gm[1], k * d), difference(gq[0], gq[1], k * d)));
    report("gmm", "reverse", p, a, h, diff);
    FORWARD8("gmm", p, singles[lane] = gmm_fwd(al, da[lane], mu, dm[lane], lq, dq[lane], x, n, k, d),
             gmm_fwd8_result r = gmm_fwd8(al, da[0], da[1], da[2], da[3], da[4], da[5], da[6], da[7], mu, dm[0], dm[1],
                                          dm[2], dm[3], dm[4], dm[5], dm[6], dm[7], lq, dq[0], dq[1], dq[2], dq[3],
                                          dq[4], dq[5], dq[6], dq[7], x, n, k, d);
             memcpy(lanes, r.d_ret, sizeof lanes));
}

static void bench_ba(int n_cams, int n_pts, int n_obs)
{
    double *cams = filled(15 * n_cams, 0.2, 12), *pts = filled(3 * n_pts, 2.0, 13), *feat = filled(2 * n_obs, 1.0, 14);
    for (int c = 0; c < n_cams; c++) {
        double *cam = cams + 15 * c;
        cam[0] += 1.0, cam[4] += 1.0, cam[8] += 1.0; /* near the identity */
        cam[11] += 5.0;                               /* points in front of the camera */
        cam[12] = 1.0 + 0.1 * cam[12];
    }
    int *obs = malloc(2 * n_obs * sizeof *obs);
    for (int o = 0; o < n_obs; o++)
        obs[2 * o] = o % n_cams, obs[2 * o + 1] = (o * 7919) % n_pts;
    double *gc[2] = { zeros(15 * n_cams), zeros(15 * n_cams) }, *gp[2] = { zeros(3 * n_pts), zeros(3 * n_pts) };
    double *dc[8], *dp[8], p, a, h;
    directions(dc, 15 * n_cams, 15);
    directions(dp, 3 * n_pts, 16);
    BEST(p, sink += ba(cams, pts, obs, feat, n_obs));
    BEST(a, memset(gc[0], 0, 15 * n_cams * 8); memset(gp[0], 0, 3 * n_pts * 8);
         ba_grad(cams, gc[0], pts, gp[0], obs, feat, n_obs, 1.0));
    BEST(h, memset(gc[1], 0, 15 * n_cams * 8); memset(gp[1], 0, 3 * n_pts * 8);
         ba_hand(cams, gc[1], pts, gp[1], obs, feat, n_obs, 1.0));
    report("ba", "reverse", p, a, h, fmax(difference(gc[0], gc[1], 15 * n_cams), difference(gp[0], gp[1], 3 * n_pts)));
    FORWARD8("ba", p, singles[lane] = ba_fwd(cams, dc[lane], pts, dp[lane], obs, feat, n_obs),
             ba_fwd8_result r = ba_fwd8(cams, dc[0], dc[1], dc[2], dc[3], dc[4], dc[5], dc[6], dc[7], pts, dp[0], dp[1],
                                        dp[2], dp[3], dp[4], dp[5], dp[6], dp[7], obs, feat, n_obs);
             memcpy(lanes, r.d_ret, sizeof lanes));
}

static void bench_lstm(int T, int H, int layers)
{
    size_t nw = (size_t)layers * 8 * H * H, nb = (size_t)layers * 4 * H;
    double *W = filled(nw, 0.5, 17), *b = filled(nb, 0.2, 18), *xs = filled((size_t)T * H, 1.0, 19);
    double *gW[2] = { zeros(nw), zeros(nw) }, *gb[2] = { zeros(nb), zeros(nb) }, *dW[8], *db[8], p, a, h;
    directions(dW, nw, 20);
    directions(db, nb, 21);
    BEST(p, sink += lstm(W, b, xs, T, H, layers));
    BEST(a, memset(gW[0], 0, nw * 8); memset(gb[0], 0, nb * 8); lstm_grad(W, gW[0], b, gb[0], xs, T, H, layers, 1.0));
    BEST(h, memset(gW[1], 0, nw * 8); memset(gb[1], 0, nb * 8); lstm_hand(W, gW[1], b, gb[1], xs, T, H, layers, 1.0));
    report("lstm", "reverse", p, a, h, fmax(difference(gW[0], gW[1], nw), difference(gb[0], gb[1], nb)));
    FORWARD8("lstm", p, singles[lane] = lstm_fwd(W, dW[lane], b, db[lane], xs, T, H, layers),
             lstm_fwd8_result r = lstm_fwd8(W, dW[0], dW[1], dW[2], dW[3], dW[4], dW[5], dW[6], dW[7], b, db[0], db[1],
                                            db[2], db[3], db[4], db[5], db[6], db[7], xs, T, H, layers);
             memcpy(lanes, r.d_ret, sizeof lanes));
}

/* puts in-place kernels' inputs (and tangents, when given) back before each run */
static void restore(double *a, const double *a0, double *b, const double *b0, double *da[8], double *da0[8],
                    double *db[8], double *db0[8], size_t bytes)
{
    memcpy(a, a0, bytes);
    if (b)
        memcpy(b, b0, bytes);
    for (int q = 0; q < 8; q++) {
        memcpy(da[q], da0[q], bytes);
        if (db)
            memcpy(db[q], db0[q], bytes);
    }
}

static void bench_nbody(int n)
{
    size_t m = 3 * n, bytes = m * sizeof(double);
    double *pos0 = filled(m, 10.0, 22), *vel0 = filled(m, 1.0, 23), *mass = filled(n, 1.0, 24);
    for (int i = 0; i < n; i++)
        mass[i] += 1.0;
    double *pos = zeros(m), *vel = zeros(m), *g[2][2] = { { zeros(m), zeros(m) }, { zeros(m), zeros(m) } };
    double *dp[8], *dv[8], *dp0[8], *dv0[8], p, a, h;
    directions(dp0, m, 25);
    directions(dv0, m, 26);
    directions(dp, m, 25);
    directions(dv, m, 26);
    BEST(p, memcpy(pos, pos0, bytes); memcpy(vel, vel0, bytes); sink += nbody(pos, vel, mass, n, 0.01));
    BEST(a, memcpy(pos, pos0, bytes); memcpy(vel, vel0, bytes); memset(g[0][0], 0, bytes); memset(g[0][1], 0, bytes);
         nbody_grad(pos, g[0][0], vel, g[0][1], mass, n, 0.01, 1.0));
    BEST(h, memcpy(pos, pos0, bytes); memcpy(vel, vel0, bytes); memset(g[1][0], 0, bytes); memset(g[1][1], 0, bytes);
         nbody_hand(pos, g[1][0], vel, g[1][1], mass, n, 0.01, 1.0));
    report("nbody", "reverse", p, a, h, fmax(difference(g[0][0], g[1][0], m), difference(g[0][1], g[1][1], m)));
    FORWARD8("nbody", p, restore(pos, pos0, vel, vel0, dp, dp0, dv, dv0, bytes); singles[lane] = nbody_fwd(pos, dp[lane], vel, dv[lane], mass, n, 0.01),
             restore(pos, pos0, vel, vel0, dp, dp0, dv, dv0, bytes); nbody_fwd8_result r = nbody_fwd8(pos, dp[0], dp[1], dp[2], dp[3], dp[4], dp[5], dp[6], dp[7], vel,
                                                       dv[0], dv[1], dv[2], dv[3], dv[4], dv[5], dv[6], dv[7], mass, n, 0.01);
             memcpy(lanes, r.d_ret, sizeof lanes));
}

static void bench_heat(int n, int steps)
{
    size_t m = (size_t)n * n, bytes = m * sizeof(double);
    double *u0 = filled(m, 1.0, 27), *u = zeros(m), *s = zeros(m), *g[2] = { zeros(m), zeros(m) }, *gs = zeros(m);
    double *du[8], *du0[8], *ds[8], p, a, h, ga = 0, gh = 0;
    directions(du0, m, 28);
    directions(du, m, 28);
    for (int k = 0; k < 8; k++)
        ds[k] = zeros(m);
    BEST(p, memcpy(u, u0, bytes); sink += heat(u, s, n, 0.2, steps));
    BEST(a, memcpy(u, u0, bytes); memset(g[0], 0, bytes); memset(gs, 0, bytes);
         ga = heat_grad(u, g[0], s, gs, n, 0.2, steps, 1.0));
    BEST(h, memcpy(u, u0, bytes); memset(g[1], 0, bytes); gh = heat_hand(u, g[1], s, gs, n, 0.2, steps, 1.0));
    report("heat", "reverse", p, a, h, fmax(difference(g[0], g[1], m), relative(ga, gh)));
    FORWARD8("heat", p, restore(u, u0, NULL, NULL, du, du0, NULL, NULL, bytes); singles[lane] = heat_fwd(u, du[lane], s, ds[lane], n, 0.2, 0.5 + lane, steps),
             restore(u, u0, NULL, NULL, du, du0, NULL, NULL, bytes); heat_fwd8_result r = heat_fwd8(u, du[0], du[1], du[2], du[3], du[4], du[5], du[6], du[7], s,
                                                          ds[0], ds[1], ds[2], ds[3], ds[4], ds[5], ds[6], ds[7], n, 0.2,
                                                          0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, steps);
             memcpy(lanes, r.d_ret, sizeof lanes));
}

static void bench_sinexp(int n)
{
    double *x = filled(n, 2.0, 29), *g1 = zeros(n), *g2 = zeros(n), *d[8], p, a, h;
    directions(d, n, 30);
    BEST(p, sink += sinexp(x, n));
    BEST(a, memset(g1, 0, n * sizeof *g1); sinexp_grad(x, g1, n, 1.0));
    BEST(h, memset(g2, 0, n * sizeof *g2); sink += sinexp_hand(x, g2, n, 1.0));
    report("sinexp", "reverse", p, a, h, difference(g1, g2, n));
    FORWARD8("sinexp", p, singles[lane] = sinexp_fwd(x, d[lane], n),
             sinexp_fwd8_result r = sinexp_fwd8(x, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], n);
             memcpy(lanes, r.d_ret, sizeof lanes));
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    reps = argc > 2 ? atoi(argv[2]) : quick ? 3 : 10;
    bench_rosenbrock(quick ? 100000 : 1000000);
    bench_norm(20000);
    bench_norm(80000);
    bench_logsumexp(quick ? 100000 : 1000000);
    bench_gmm(quick ? 200 : 1000, 25, 10);
    bench_ba(quick ? 20 : 100, quick ? 400 : 2000, quick ? 2000 : 10000);
    bench_lstm(quick ? 30 : 100, 32, 2);
    bench_nbody(quick ? 60 : 200);
    bench_heat(quick ? 64 : 128, quick ? 10 : 20);
    bench_sinexp(100000);
    return 0;
}
