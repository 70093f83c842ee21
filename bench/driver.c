/* Times every kernel of kernels.c in one run, best of `reps` repetitions each, and prints one
 * line per kernel and mode, as key=value fields:
 *
 *   kernel=NAME mode=reverse primal=S adgen=S [hand=S] [enzyme=S] diff=R [enzyme_diff=R]
 *                            adgen_bytes=B [enzyme_bytes=B]
 *   kernel=NAME mode=forward8 primal=S adgen=S scalar=S [enzyme=S] diff=R [enzyme_diff=R]
 *
 * Times are seconds. For reverse mode, diff compares adgen's gradient with the hand-written
 * one where there is one, else with central finite differences on a few components;
 * enzyme_diff compares Enzyme's gradient with adgen's. *_bytes is the peak of heap memory in
 * use during one gradient call, above what was in use before it (stored values, caches and shadow
 * memory the derivative allocates): malloc, calloc, realloc and free are wrapped at link time
 * (-Wl,--wrap=...). For forward8, scalar is eight width-1 calls, diff compares forward[8]'s
 * lanes with them and enzyme_diff Enzyme's lanes with adgen's. Enzyme's columns are there when
 * built with -DWITH_ENZYME and bench/enzyme.c. Usage: bench [quick|full] [reps|0] [KERNEL], where
 * 0 repetitions means the default (3 quick, 10 full) and KERNEL runs that kernel alone.
 *
 * `bench count KERNEL` runs adgen's gradient of one kernel once, at small sizes, with callgrind
 * collecting only then (run it under `valgrind --tool=callgrind --collect-atstart=no`): the
 * instructions one gradient executes, which bench/instructions.py keeps in a baseline. */
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernels.adgen.h"
#if defined(__has_include) && __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

double rosenbrock(const double *x, int n);
void norm(double *restrict out, const double *restrict in, int n);
double logsumexp(const double *x, int n);
double gmm(const double *alphas, const double *means, const double *logq, const double *x, int n, int k, int d);
double ba(const double *cams, const double *pts, const int *obs, const double *feat, int n_obs);
double lstm(const double *W, const double *b, const double *xs, int T, int H, int layers);
double nbody(double *pos, double *vel, const double *mass, int n, double dt);
double heat(double *u, double *scratch, int n, double alpha, int steps);
double sinexp(const double *x, int n);
void gmm_objective(int d, int k, int n, const double *alphas, const double *means, const double *icf,
                   const double *x, double wishart_gamma, int wishart_m, double *err);
void reproj_error(const double *cam, const double *X, const double *w, const double *feat, double *err);
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

#ifdef WITH_ENZYME
typedef struct {
    double d[8];
} lanes8;
void rosenbrock_enzyme_grad(const double *x, double *gx, int n);
lanes8 rosenbrock_enzyme_fwd8(const double *x, double **dx, int n);
void rosenbrock_enzyme_hvp(const double *x, const double *v, double *gx, double *hv, int n);
void logsumexp_enzyme_hvp(const double *x, const double *v, double *gx, double *hv, int n);
void sinexp_enzyme_hvp(const double *x, const double *v, double *gx, double *hv, int n);
void norm_enzyme_grad(double *out, double *dout, const double *in, double *din, int n);
void norm_enzyme_fwd8(double *out, double **dout, const double *in, double **din, int n);
void logsumexp_enzyme_grad(const double *x, double *gx, int n);
lanes8 logsumexp_enzyme_fwd8(const double *x, double **dx, int n);
void gmm_enzyme_grad(const double *al, double *ga, const double *mu, double *gm, const double *lq, double *gq,
                     const double *x, int n, int k, int d);
lanes8 gmm_enzyme_fwd8(const double *al, double **da, const double *mu, double **dm, const double *lq, double **dq,
                       const double *x, int n, int k, int d);
void ba_enzyme_grad(const double *cams, double *gc, const double *pts, double *gp, const int *obs, const double *feat,
                    int n_obs);
lanes8 ba_enzyme_fwd8(const double *cams, double **dc, const double *pts, double **dp, const int *obs,
                      const double *feat, int n_obs);
void lstm_enzyme_grad(const double *W, double *gW, const double *b, double *gb, const double *xs, int T, int H,
                      int layers);
lanes8 lstm_enzyme_fwd8(const double *W, double **dW, const double *b, double **db, const double *xs, int T, int H,
                        int layers);
void nbody_enzyme_grad(double *pos, double *gpos, double *vel, double *gvel, const double *mass, int n, double dt);
lanes8 nbody_enzyme_fwd8(double *pos, double **dp, double *vel, double **dv, const double *mass, int n, double dt);
double heat_enzyme_grad(double *u, double *gu, double *s, double *gs, int n, double alpha, int steps);
lanes8 heat_enzyme_fwd8(double *u, double **du, double *s, double **ds, int n, double alpha, const double *dalpha,
                        int steps);
void sinexp_enzyme_grad(const double *x, double *gx, int n);
lanes8 sinexp_enzyme_fwd8(const double *x, double **dx, int n);
void gmm_objective_enzyme_grad(int d, int k, int n, const double *al, double *ga, const double *mu, double *gm,
                               const double *icf, double *gi, const double *x, double gamma, int m, double *err,
                               double *gerr);
void gmm_objective_enzyme_fwd8(int d, int k, int n, const double *al, double **da, const double *mu, double **dm,
                               const double *icf, double **di, const double *x, double gamma, int m, double *err,
                               double **derr);
void reproj_error_enzyme_grad(const double *cam, double *gc, const double *X, double *gX, const double *w, double *gw,
                              const double *feat, double *err, double *gerr);
void reproj_error_enzyme_fwd8(const double *cam, double **dc, const double *X, double **dX, const double *w,
                              double **dw, const double *feat, double *err, double **derr);
#define ENZYME(statement) statement
#else
#define ENZYME(statement)
#endif

static int reps = 10;
static const char *only; /* run this kernel alone (NULL: all) */
static int counting;     /* `bench count KERNEL`: one gradient, collected by callgrind, then exit */
static int peaking = -1; /* `bench peak KERNEL K`: the peak bytes of the first gradient of its Kth size
                          * in this process, nothing run before it (adgen's runtime keeps its stack's
                          * memory for the next gradient, which would then allocate nothing), then exit */

static int wanted(const char *kernel)
{
    return only == NULL || strcmp(only, kernel) == 0;
}
enum { FULL, QUICK, COUNT }; /* the sizes run_all uses */
static void run_all(int size);
static volatile double sink;

/* ------------------------------------------------------------------ heap accounting */
void *__real_malloc(size_t);
void *__real_calloc(size_t, size_t);
void *__real_realloc(void *, size_t);
void __real_free(void *);
static size_t heap_now, heap_peak;

static void *counted(void *p)
{
    if (p) {
        heap_now += malloc_usable_size(p);
        if (heap_now > heap_peak)
            heap_peak = heap_now;
    }
    return p;
}

void *__wrap_malloc(size_t n)
{
    return counted(__real_malloc(n));
}

void *__wrap_calloc(size_t n, size_t size)
{
    return counted(__real_calloc(n, size));
}

void __wrap_free(void *p)
{
    if (p)
        heap_now -= malloc_usable_size(p);
    __real_free(p);
}

void *__wrap_realloc(void *p, size_t n)
{
    size_t old = p ? malloc_usable_size(p) : 0;
    void *q = __real_realloc(p, n);
    if (q || n == 0)
        heap_now -= old;
    return counted(q);
}

/* the peak of heap memory above what was in use before, during one run of `statement` */
#define PEAK(bytes, ...)                                                                           \
    do {                                                                                           \
        size_t before = heap_now;                                                                  \
        heap_peak = heap_now;                                                                      \
        __VA_ARGS__;                                                                               \
        bytes = heap_peak - before;                                                                \
    } while (0)

/* adgen's gradient where PEAK measures it; when counting, that call alone is collected, then the
 * driver exits */
#define ADGEN_PEAK(bytes, ...)                                                                     \
    do {                                                                                           \
        if (peaking >= 0) {                                                                        \
            PEAK(bytes, __VA_ARGS__);                                                              \
            printf("%zu\n", (size_t)(bytes));                                                      \
            exit(0);                                                                               \
        }                                                                                          \
        if (counting) {                                                                            \
            CALLGRIND_TOGGLE_COLLECT;                                                              \
            __VA_ARGS__;                                                                           \
            CALLGRIND_TOGGLE_COLLECT;                                                              \
            exit(0);                                                                               \
        }                                                                                          \
        PEAK(bytes, __VA_ARGS__);                                                                  \
    } while (0)

/* ------------------------------------------------------------------ timing and checks */
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* one timed run of the statement, kept in `result` where it is the fastest yet (variadic: a
 * statement expanded from other macros may hold commas) */
#define TIMED(result, ...)                                                                         \
    do {                                                                                           \
        double start = now();                                                                      \
        __VA_ARGS__;                                                                               \
        double took = now() - start;                                                               \
        if (took < result)                                                                         \
            result = took;                                                                         \
    } while (0)

/* the best of `reps` runs; a run of over LONG_RUN seconds is not repeated, its noise small beside
 * it (norm's primal at n = 80,000, which is O(n^2) as written: 12 s a run) */
#define LONG_RUN 1.0
#define BEST(result, ...)                                                                          \
    do {                                                                                           \
        result = 1e30;                                                                             \
        for (int rep = 0; rep < reps && (rep == 0 || result < LONG_RUN); rep++)                     \
            TIMED(result, __VA_ARGS__);                                                            \
    } while (0)

/* adgen's gradient and Enzyme's, timed in turns (a repetition of one, then of the other), so that
 * the machine's drift over the run (its clock, other processes) falls on both alike; adgen's
 * alone where Enzyme is not built in */
#ifdef WITH_ENZYME
#define BEST_BESIDE_ENZYME(result, statement, enzyme_result, enzyme_statement)                     \
    do {                                                                                           \
        result = enzyme_result = 1e30;                                                             \
        for (int rep = 0; rep < reps; rep++) {                                                     \
            TIMED(result, statement);                                                              \
            TIMED(enzyme_result, enzyme_statement);                                                \
        }                                                                                          \
    } while (0)
#else
#define BEST_BESIDE_ENZYME(result, statement, enzyme_result, enzyme_statement) BEST(result, statement)
#endif

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

/* Central differences of `value` (an expression evaluating the primal) in a[j] for a few j,
 * against the gradient g; the worst relative error, beyond what rounding in the difference of
 * two large values explains. */
#define FD_CHECK(result, a, g, n, value)                                                           \
    do {                                                                                           \
        result = 0;                                                                                \
        for (int probe = 0; probe < 3; probe++) {                                                  \
            size_t j = ((size_t)probe * 7919u + 13u) % (size_t)(n);                                \
            double keep = a[j], h = 1e-6 * fmax(1.0, fabs(keep));                                 \
            a[j] = keep + h;                                                                       \
            double up = (value);                                                                   \
            a[j] = keep - h;                                                                       \
            double down = (value);                                                                 \
            a[j] = keep;                                                                           \
            double fd = (up - down) / (2 * h);                                                     \
            double noise = 100 * 2.2e-16 * fabs(up) / h; /* rounding in up - down */               \
            double err = fabs(fd - g[j]) / (fmax(1e-4, fmax(fabs(fd), fabs(g[j]))) + noise);        \
            result = fmax(result, err > 1e-3 ? err : 0); /* finite differences' own accuracy */   \
        }                                                                                          \
    } while (0)

struct record {
    const char *kernel, *mode;
    double primal, adgen, hand, enzyme, scalar, diff, enzyme_diff;
    size_t adgen_bytes, enzyme_bytes;
};

/* Every kernel is measured in several rounds (the first warms caches, branch predictors and
 * the CPU's clock for all); each time is the best over the rounds, printed at the end. */
static struct record results[64];
static int n_results;

static void report(struct record r)
{
    for (int i = 0; i < n_results; i++) {
        struct record *k = &results[i];
        if (strcmp(k->kernel, r.kernel) || strcmp(k->mode, r.mode))
            continue;
        k->primal = fmin(k->primal, r.primal), k->adgen = fmin(k->adgen, r.adgen);
        k->hand = fmin(k->hand, r.hand), k->enzyme = fmin(k->enzyme, r.enzyme), k->scalar = fmin(k->scalar, r.scalar);
        k->diff = fmax(k->diff, r.diff), k->enzyme_diff = fmax(k->enzyme_diff, r.enzyme_diff);
        return;
    }
    r.kernel = strdup(r.kernel);
    results[n_results++] = r;
}

static void print(struct record r)
{
    printf("kernel=%s mode=%s primal=%.9f adgen=%.9f", r.kernel, r.mode, r.primal, r.adgen);
    if (r.hand > 0)
        printf(" hand=%.9f", r.hand);
    if (r.scalar > 0)
        printf(" scalar=%.9f", r.scalar);
    printf(" diff=%.3e", r.diff);
    if (strcmp(r.mode, "reverse") == 0)
        printf(" adgen_bytes=%zu", r.adgen_bytes);
#ifdef WITH_ENZYME
    printf(" enzyme=%.9f enzyme_diff=%.3e", r.enzyme, r.enzyme_diff);
    if (strcmp(r.mode, "reverse") == 0)
        printf(" enzyme_bytes=%zu", r.enzyme_bytes);
#endif
    printf("\n");
}

/* forward[8] against eight width-1 calls and Enzyme's forward[8], for kernels returning a
 * scalar; `one_call` computes singles[lane] for direction `lane`, `eight_call` lanes[],
 * `enzyme_call` elanes[] */
#define FORWARD8(name, primal_time, one_call, eight_call, enzyme_call)                             \
    do {                                                                                           \
        double lanes[8], singles[8], elanes[8] = { 0 };                                            \
        struct record fr = { name, "forward8", primal_time };                                      \
        BEST(fr.adgen, { eight_call; });                                                           \
        BEST(fr.scalar, for (int lane = 0; lane < 8; lane++) { one_call; });                       \
        ENZYME(BEST(fr.enzyme, { enzyme_call; }));                                                 \
        for (int lane = 0; lane < 8; lane++) {                                                     \
            fr.diff = fmax(fr.diff, relative(lanes[lane], singles[lane]));                         \
            ENZYME(fr.enzyme_diff = fmax(fr.enzyme_diff, relative(elanes[lane], lanes[lane])));    \
        }                                                                                          \
        (void)elanes;                                                                              \
        report(fr);                                                                                \
    } while (0)

/* Forward over reverse (NAME_hvp: forward of NAME_grad) for a kernel of one array x of n,
 * timed beside the gradient (`scalar` holds its time) and Enzyme's forward mode over its own
 * gradient; checked against central differences of the gradient along v at a few components
 * (beyond finite differences' own accuracy), Enzyme's against adgen's. */
#define HVP(name, kernel, grad_time)                                                               \
    do {                                                                                           \
        double *v = filled(n, 1.0, 71), *gh = zeros(n), *hv = zeros(n), *ehv = zeros(n);           \
        double *up = zeros(n), *down = zeros(n), h = 1e-5;                                         \
        struct record hr = { name, "hvp", grad_time, 0, 0, 0, grad_time };                         \
        BEST(hr.adgen, memset(gh, 0, n * sizeof *gh); memset(hv, 0, n * sizeof *hv);               \
             kernel##_hvp(x, v, gh, hv, n, 1.0));                                                  \
        ENZYME(BEST(hr.enzyme, memset(gh, 0, n * sizeof *gh); memset(ehv, 0, n * sizeof *ehv);     \
                    kernel##_enzyme_hvp(x, v, gh, ehv, n));                                        \
               hr.enzyme_diff = difference(ehv, hv, n));                                           \
        for (int i = 0; i < n; i++) x[i] += h * v[i];                                              \
        kernel##_grad(x, up, n, 1.0);                                                              \
        for (int i = 0; i < n; i++) x[i] -= 2 * h * v[i];                                          \
        kernel##_grad(x, down, n, 1.0);                                                            \
        for (int i = 0; i < n; i++) x[i] += h * v[i];                                              \
        for (int probe = 0; probe < 3; probe++) {                                                  \
            int j = (probe * 7919 + 13) % n;                                                       \
            double fd = (up[j] - down[j]) / (2 * h);                                               \
            double err = fabs(fd - hv[j]) / fmax(1e-2, fmax(fabs(fd), fabs(hv[j])));              \
            hr.diff = fmax(hr.diff, err > 1e-4 ? err : 0);                                         \
        }                                                                                          \
        report(hr);                                                                                \
        free(v), free(gh), free(hv), free(ehv), free(up), free(down);                              \
    } while (0)

/* ------------------------------------------------------------------ the kernels */

/* A kernel of one array giving one number (rosenbrock, logsumexp, sinexp): bench_KERNEL(n) times
 * the primal, adgen's, the hand-written and Enzyme's gradients, and forward[8]. */
#define ONE_ARRAY_BENCH(kernel, scale, seed)                                                       \
    static void bench_##kernel(int n)                                                              \
    {                                                                                              \
        double *x = filled(n, scale, seed), *g1 = zeros(n), *g2 = zeros(n), *g3 = zeros(n), *d[8]; \
        struct record r = { #kernel, "reverse" };                                                  \
        directions(d, n, seed + 1);                                                                \
        BEST(r.primal, sink += kernel(x, n));                                                      \
        BEST_BESIDE_ENZYME(r.adgen, memset(g1, 0, n * sizeof *g1); kernel##_grad(x, g1, n, 1.0),        \
                           r.enzyme, memset(g3, 0, n * sizeof *g3); kernel##_enzyme_grad(x, g3, n));     \
        ADGEN_PEAK(r.adgen_bytes, kernel##_grad(x, g1, n, 1.0));                                         \
        BEST(r.hand, memset(g2, 0, n * sizeof *g2); kernel##_hand(x, g2, n, 1.0));                 \
        ENZYME(PEAK(r.enzyme_bytes, kernel##_enzyme_grad(x, g3, n)); memset(g3, 0, n * sizeof *g3);  \
               kernel##_enzyme_grad(x, g3, n); r.enzyme_diff = difference(g3, g2, n));             \
        memset(g1, 0, n * sizeof *g1);                                                             \
        kernel##_grad(x, g1, n, 1.0);                                                              \
        r.diff = difference(g1, g2, n);                                                            \
        report(r);                                                                                 \
        FORWARD8(#kernel, r.primal, singles[lane] = kernel##_fwd(x, d[lane], n),                   \
                 kernel##_fwd8_result f = kernel##_fwd8(x, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], n); \
                 memcpy(lanes, f.d_ret, sizeof lanes),                                             \
                 lanes8 e = kernel##_enzyme_fwd8(x, d, n); memcpy(elanes, e.d, sizeof elanes));    \
        HVP(#kernel, kernel, r.adgen);                                                             \
    }

ONE_ARRAY_BENCH(rosenbrock, 2.0, 1)
ONE_ARRAY_BENCH(logsumexp, 8.0, 4)
ONE_ARRAY_BENCH(sinexp, 2.0, 29)

static void bench_norm(int n)
{
    double *in = filled(n, 2.0, 2), *out = zeros(n), *seed = filled(n, 1.0, 3), *d1 = zeros(n), *d2 = zeros(n);
    double *d3 = zeros(n), *s1 = zeros(n), *s2 = zeros(n), *d[8], *o[8], *single = zeros(n);
    char name[32];
    snprintf(name, sizeof name, "norm/%d", n);
    struct record r = { name, "reverse" };
    directions(d, n, 4);
    for (int k = 0; k < 8; k++)
        o[k] = zeros(n);
    BEST(r.primal, norm(out, in, n));
    BEST_BESIDE_ENZYME(r.adgen, memcpy(s1, seed, n * sizeof *s1); memset(d1, 0, n * sizeof *d1); norm_grad(out, s1, in, d1, n),
                       r.enzyme, memcpy(s2, seed, n * sizeof *s2); memset(d3, 0, n * sizeof *d3);
                       norm_enzyme_grad(out, s2, in, d3, n));
    ADGEN_PEAK(r.adgen_bytes, norm_grad(out, s1, in, d1, n));
    BEST(r.hand, memcpy(s2, seed, n * sizeof *s2); memset(d2, 0, n * sizeof *d2); norm_hand(out, s2, in, d2, n));
    ENZYME(PEAK(r.enzyme_bytes, norm_enzyme_grad(out, s2, in, d3, n)); memcpy(s2, seed, n * sizeof *s2);
           memset(d3, 0, n * sizeof *d3); norm_enzyme_grad(out, s2, in, d3, n); r.enzyme_diff = difference(d3, d2, n));
    memcpy(s1, seed, n * sizeof *s1);
    memset(d1, 0, n * sizeof *d1);
    norm_grad(out, s1, in, d1, n);
    r.diff = difference(d1, d2, n);
    report(r);
    struct record f = { name, "forward8", r.primal };
    BEST(f.adgen, norm_fwd8(out, o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], in, d[0], d[1], d[2], d[3], d[4],
                            d[5], d[6], d[7], n));
    BEST(f.scalar, for (int k = 0; k < 8; k++) norm_fwd(out, single, in, d[k], n));
    for (int k = 0; k < 8; k++) {
        norm_fwd(out, single, in, d[k], n);
        f.diff = fmax(f.diff, difference(o[k], single, n));
    }
#ifdef WITH_ENZYME
    double *eo[8];
    for (int k = 0; k < 8; k++)
        eo[k] = zeros(n);
    BEST(f.enzyme, norm_enzyme_fwd8(out, eo, in, d, n));
    for (int k = 0; k < 8; k++)
        f.enzyme_diff = fmax(f.enzyme_diff, difference(eo[k], o[k], n));
#endif
    report(f);
}


static void bench_gmm(int n, int k, int d)
{
    double *al = filled(k, 1.0, 5), *mu = filled(k * d, 2.0, 6), *lq = filled(k * d, 0.5, 7), *x = filled(n * d, 2.0, 8);
    double *ga[3] = { zeros(k), zeros(k), zeros(k) }, *gm[3] = { zeros(k * d), zeros(k * d), zeros(k * d) };
    double *gq[3] = { zeros(k * d), zeros(k * d), zeros(k * d) }, *da[8], *dm[8], *dq[8];
    struct record r = { "gmm", "reverse" };
    directions(da, k, 9);
    directions(dm, k * d, 10);
    directions(dq, k * d, 11);
#define GMM_CLEAR(q) memset(ga[q], 0, k * 8), memset(gm[q], 0, k * d * 8), memset(gq[q], 0, k * d * 8)
#define GMM_DIFF(p, q)                                                                             \
    fmax(difference(ga[p], ga[q], k), fmax(difference(gm[p], gm[q], k * d), difference(gq[p], gq[q], k * d)))
    BEST(r.primal, sink += gmm(al, mu, lq, x, n, k, d));
    BEST_BESIDE_ENZYME(r.adgen, GMM_CLEAR(0); gmm_grad(al, ga[0], mu, gm[0], lq, gq[0], x, n, k, d, 1.0),
                       r.enzyme, GMM_CLEAR(2); gmm_enzyme_grad(al, ga[2], mu, gm[2], lq, gq[2], x, n, k, d));
    ADGEN_PEAK(r.adgen_bytes, gmm_grad(al, ga[0], mu, gm[0], lq, gq[0], x, n, k, d, 1.0));
    BEST(r.hand, GMM_CLEAR(1); gmm_hand(al, ga[1], mu, gm[1], lq, gq[1], x, n, k, d, 1.0));
    ENZYME(PEAK(r.enzyme_bytes, gmm_enzyme_grad(al, ga[2], mu, gm[2], lq, gq[2], x, n, k, d)); GMM_CLEAR(2);
           gmm_enzyme_grad(al, ga[2], mu, gm[2], lq, gq[2], x, n, k, d); r.enzyme_diff = GMM_DIFF(2, 1));
    GMM_CLEAR(0);
    gmm_grad(al, ga[0], mu, gm[0], lq, gq[0], x, n, k, d, 1.0);
    r.diff = GMM_DIFF(0, 1);
    report(r);
    FORWARD8("gmm", r.primal, singles[lane] = gmm_fwd(al, da[lane], mu, dm[lane], lq, dq[lane], x, n, k, d),
             gmm_fwd8_result f = gmm_fwd8(al, da[0], da[1], da[2], da[3], da[4], da[5], da[6], da[7], mu, dm[0], dm[1],
                                          dm[2], dm[3], dm[4], dm[5], dm[6], dm[7], lq, dq[0], dq[1], dq[2], dq[3],
                                          dq[4], dq[5], dq[6], dq[7], x, n, k, d);
             memcpy(lanes, f.d_ret, sizeof lanes),
             lanes8 e = gmm_enzyme_fwd8(al, da, mu, dm, lq, dq, x, n, k, d); memcpy(elanes, e.d, sizeof elanes));
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
    size_t nc = 15 * n_cams, np = 3 * n_pts;
    double *gc[3] = { zeros(nc), zeros(nc), zeros(nc) }, *gp[3] = { zeros(np), zeros(np), zeros(np) }, *dc[8], *dp[8];
    struct record r = { "ba", "reverse" };
    directions(dc, nc, 15);
    directions(dp, np, 16);
#define BA_CLEAR(q) memset(gc[q], 0, nc * 8), memset(gp[q], 0, np * 8)
    BEST(r.primal, sink += ba(cams, pts, obs, feat, n_obs));
    BEST_BESIDE_ENZYME(r.adgen, BA_CLEAR(0); ba_grad(cams, gc[0], pts, gp[0], obs, feat, n_obs, 1.0),
                       r.enzyme, BA_CLEAR(2); ba_enzyme_grad(cams, gc[2], pts, gp[2], obs, feat, n_obs));
    ADGEN_PEAK(r.adgen_bytes, ba_grad(cams, gc[0], pts, gp[0], obs, feat, n_obs, 1.0));
    BEST(r.hand, BA_CLEAR(1); ba_hand(cams, gc[1], pts, gp[1], obs, feat, n_obs, 1.0));
    ENZYME(PEAK(r.enzyme_bytes, ba_enzyme_grad(cams, gc[2], pts, gp[2], obs, feat, n_obs)); BA_CLEAR(2);
           ba_enzyme_grad(cams, gc[2], pts, gp[2], obs, feat, n_obs);
           r.enzyme_diff = fmax(difference(gc[2], gc[1], nc), difference(gp[2], gp[1], np)));
    BA_CLEAR(0);
    ba_grad(cams, gc[0], pts, gp[0], obs, feat, n_obs, 1.0);
    r.diff = fmax(difference(gc[0], gc[1], nc), difference(gp[0], gp[1], np));
    report(r);
    FORWARD8("ba", r.primal, singles[lane] = ba_fwd(cams, dc[lane], pts, dp[lane], obs, feat, n_obs),
             ba_fwd8_result f = ba_fwd8(cams, dc[0], dc[1], dc[2], dc[3], dc[4], dc[5], dc[6], dc[7], pts, dp[0], dp[1],
                                        dp[2], dp[3], dp[4], dp[5], dp[6], dp[7], obs, feat, n_obs);
             memcpy(lanes, f.d_ret, sizeof lanes),
             lanes8 e = ba_enzyme_fwd8(cams, dc, pts, dp, obs, feat, n_obs); memcpy(elanes, e.d, sizeof elanes));
}

static void bench_lstm(int T, int H, int layers)
{
    size_t nw = (size_t)layers * 8 * H * H, nb = (size_t)layers * 4 * H;
    double *W = filled(nw, 0.5, 17), *b = filled(nb, 0.2, 18), *xs = filled((size_t)T * H, 1.0, 19);
    double *gW[3] = { zeros(nw), zeros(nw), zeros(nw) }, *gb[3] = { zeros(nb), zeros(nb), zeros(nb) }, *dW[8], *db[8];
    struct record r = { "lstm", "reverse" };
    directions(dW, nw, 20);
    directions(db, nb, 21);
#define LSTM_CLEAR(q) memset(gW[q], 0, nw * 8), memset(gb[q], 0, nb * 8)
    BEST(r.primal, sink += lstm(W, b, xs, T, H, layers));
    BEST_BESIDE_ENZYME(r.adgen, LSTM_CLEAR(0); lstm_grad(W, gW[0], b, gb[0], xs, T, H, layers, 1.0),
                       r.enzyme, LSTM_CLEAR(2); lstm_enzyme_grad(W, gW[2], b, gb[2], xs, T, H, layers));
    ADGEN_PEAK(r.adgen_bytes, lstm_grad(W, gW[0], b, gb[0], xs, T, H, layers, 1.0));
    BEST(r.hand, LSTM_CLEAR(1); lstm_hand(W, gW[1], b, gb[1], xs, T, H, layers, 1.0));
    ENZYME(PEAK(r.enzyme_bytes, lstm_enzyme_grad(W, gW[2], b, gb[2], xs, T, H, layers)); LSTM_CLEAR(2);
           lstm_enzyme_grad(W, gW[2], b, gb[2], xs, T, H, layers);
           r.enzyme_diff = fmax(difference(gW[2], gW[1], nw), difference(gb[2], gb[1], nb)));
    LSTM_CLEAR(0);
    lstm_grad(W, gW[0], b, gb[0], xs, T, H, layers, 1.0);
    r.diff = fmax(difference(gW[0], gW[1], nw), difference(gb[0], gb[1], nb));
    report(r);
    FORWARD8("lstm", r.primal, singles[lane] = lstm_fwd(W, dW[lane], b, db[lane], xs, T, H, layers),
             lstm_fwd8_result f = lstm_fwd8(W, dW[0], dW[1], dW[2], dW[3], dW[4], dW[5], dW[6], dW[7], b, db[0], db[1],
                                            db[2], db[3], db[4], db[5], db[6], db[7], xs, T, H, layers);
             memcpy(lanes, f.d_ret, sizeof lanes),
             lanes8 e = lstm_enzyme_fwd8(W, dW, b, db, xs, T, H, layers); memcpy(elanes, e.d, sizeof elanes));
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
    double *pos = zeros(m), *vel = zeros(m), *g[3][2];
    for (int q = 0; q < 3; q++)
        g[q][0] = zeros(m), g[q][1] = zeros(m);
    double *dp[8], *dv[8], *dp0[8], *dv0[8];
    struct record r = { "nbody", "reverse" };
    directions(dp0, m, 25);
    directions(dv0, m, 26);
    directions(dp, m, 25);
    directions(dv, m, 26);
#define NBODY_RESET(q) memcpy(pos, pos0, bytes), memcpy(vel, vel0, bytes), memset(g[q][0], 0, bytes), memset(g[q][1], 0, bytes)
    BEST(r.primal, memcpy(pos, pos0, bytes); memcpy(vel, vel0, bytes); sink += nbody(pos, vel, mass, n, 0.01));
    BEST_BESIDE_ENZYME(r.adgen, NBODY_RESET(0); nbody_grad(pos, g[0][0], vel, g[0][1], mass, n, 0.01, 1.0),
                       r.enzyme, NBODY_RESET(2); nbody_enzyme_grad(pos, g[2][0], vel, g[2][1], mass, n, 0.01));
    NBODY_RESET(0);
    ADGEN_PEAK(r.adgen_bytes, nbody_grad(pos, g[0][0], vel, g[0][1], mass, n, 0.01, 1.0));
    BEST(r.hand, NBODY_RESET(1); nbody_hand(pos, g[1][0], vel, g[1][1], mass, n, 0.01, 1.0));
    ENZYME(NBODY_RESET(2); PEAK(r.enzyme_bytes, nbody_enzyme_grad(pos, g[2][0], vel, g[2][1], mass, n, 0.01));
           NBODY_RESET(2); nbody_enzyme_grad(pos, g[2][0], vel, g[2][1], mass, n, 0.01);
           r.enzyme_diff = fmax(difference(g[2][0], g[1][0], m), difference(g[2][1], g[1][1], m)));
    NBODY_RESET(0);
    nbody_grad(pos, g[0][0], vel, g[0][1], mass, n, 0.01, 1.0);
    r.diff = fmax(difference(g[0][0], g[1][0], m), difference(g[0][1], g[1][1], m));
    report(r);
    FORWARD8("nbody", r.primal,
             restore(pos, pos0, vel, vel0, dp, dp0, dv, dv0, bytes);
             singles[lane] = nbody_fwd(pos, dp[lane], vel, dv[lane], mass, n, 0.01),
             restore(pos, pos0, vel, vel0, dp, dp0, dv, dv0, bytes);
             nbody_fwd8_result f = nbody_fwd8(pos, dp[0], dp[1], dp[2], dp[3], dp[4], dp[5], dp[6], dp[7], vel, dv[0],
                                              dv[1], dv[2], dv[3], dv[4], dv[5], dv[6], dv[7], mass, n, 0.01);
             memcpy(lanes, f.d_ret, sizeof lanes),
             restore(pos, pos0, vel, vel0, dp, dp0, dv, dv0, bytes);
             lanes8 e = nbody_enzyme_fwd8(pos, dp, vel, dv, mass, n, 0.01); memcpy(elanes, e.d, sizeof elanes));
}

static void bench_heat(int n, int steps)
{
    size_t m = (size_t)n * n, bytes = m * sizeof(double);
    double *u0 = filled(m, 1.0, 27), *u = zeros(m), *s = zeros(m), *g[3] = { zeros(m), zeros(m), zeros(m) };
    double *gs = zeros(m), *du[8], *du0[8], *ds[8], ga = 0, gh = 0, dalpha[8];
    struct record r = { "heat", "reverse" };
    directions(du0, m, 28);
    directions(du, m, 28);
    for (int k = 0; k < 8; k++)
        ds[k] = zeros(m), dalpha[k] = 0.5 + k;
    BEST(r.primal, memcpy(u, u0, bytes); sink += heat(u, s, n, 0.2, steps));
    double ge = 0;
    BEST_BESIDE_ENZYME(r.adgen, memcpy(u, u0, bytes); memset(g[0], 0, bytes); memset(gs, 0, bytes);
                       ga = heat_grad(u, g[0], s, gs, n, 0.2, steps, 1.0),
                       r.enzyme, memcpy(u, u0, bytes); memset(g[2], 0, bytes); memset(gs, 0, bytes);
                       ge = heat_enzyme_grad(u, g[2], s, gs, n, 0.2, steps));
    (void)ge;
    memcpy(u, u0, bytes);
    ADGEN_PEAK(r.adgen_bytes, heat_grad(u, g[0], s, gs, n, 0.2, steps, 1.0));
    BEST(r.hand, memcpy(u, u0, bytes); memset(g[1], 0, bytes); gh = heat_hand(u, g[1], s, gs, n, 0.2, steps, 1.0));
    ENZYME(memcpy(u, u0, bytes); PEAK(r.enzyme_bytes, heat_enzyme_grad(u, g[2], s, gs, n, 0.2, steps));
           memcpy(u, u0, bytes); memset(g[2], 0, bytes); memset(gs, 0, bytes);
           ge = heat_enzyme_grad(u, g[2], s, gs, n, 0.2, steps);
           r.enzyme_diff = fmax(difference(g[2], g[1], m), relative(ge, gh)));
    memcpy(u, u0, bytes);
    memset(g[0], 0, bytes);
    memset(gs, 0, bytes);
    ga = heat_grad(u, g[0], s, gs, n, 0.2, steps, 1.0);
    r.diff = fmax(difference(g[0], g[1], m), relative(ga, gh));
    report(r);
    FORWARD8("heat", r.primal,
             restore(u, u0, NULL, NULL, du, du0, NULL, NULL, bytes);
             singles[lane] = heat_fwd(u, du[lane], s, ds[lane], n, 0.2, dalpha[lane], steps),
             restore(u, u0, NULL, NULL, du, du0, NULL, NULL, bytes);
             heat_fwd8_result f = heat_fwd8(u, du[0], du[1], du[2], du[3], du[4], du[5], du[6], du[7], s, ds[0], ds[1],
                                            ds[2], ds[3], ds[4], ds[5], ds[6], ds[7], n, 0.2, dalpha[0], dalpha[1],
                                            dalpha[2], dalpha[3], dalpha[4], dalpha[5], dalpha[6], dalpha[7], steps);
             memcpy(lanes, f.d_ret, sizeof lanes),
             restore(u, u0, NULL, NULL, du, du0, NULL, NULL, bytes);
             lanes8 e = heat_enzyme_fwd8(u, du, s, ds, n, 0.2, dalpha, steps); memcpy(elanes, e.d, sizeof elanes));
}


static double gmm_objective_value(int d, int k, int n, const double *al, const double *mu, const double *icf,
                                  const double *x)
{
    double err;
    gmm_objective(d, k, n, al, mu, icf, x, 1.0, 0, &err);
    return err;
}

static void bench_gmm_objective(int d, int k, int n)
{
    int nicf = k * d * (d + 1) / 2;
    double *al = filled(k, 1.0, 31), *mu = filled(k * d, 2.0, 32), *icf = filled(nicf, 0.5, 33);
    double *x = filled((size_t)n * d, 2.0, 34), err = 0, gerr = 0, *da[8], *dm[8], *di[8];
    double *ga[2] = { zeros(k), zeros(k) }, *gm[2] = { zeros(k * d), zeros(k * d) }, *gi[2] = { zeros(nicf), zeros(nicf) };
    char name[48];
    snprintf(name, sizeof name, "gmm_objective/d%dk%d", d, k);
    struct record r = { name, "reverse" };
    directions(da, k, 35);
    directions(dm, k * d, 36);
    directions(di, nicf, 37);
#define GO_RUN(q, call)                                                                            \
    memset(ga[q], 0, k * 8), memset(gm[q], 0, k * d * 8), memset(gi[q], 0, nicf * 8), gerr = 1.0, call
#define GO_ADGEN gmm_objective_grad(d, k, n, al, ga[0], mu, gm[0], icf, gi[0], x, 1.0, 0, &err, &gerr)
#define GO_ENZYME gmm_objective_enzyme_grad(d, k, n, al, ga[1], mu, gm[1], icf, gi[1], x, 1.0, 0, &err, &gerr)
    BEST(r.primal, gmm_objective(d, k, n, al, mu, icf, x, 1.0, 0, &err); sink += err);
    BEST_BESIDE_ENZYME(r.adgen, GO_RUN(0, GO_ADGEN),
                       r.enzyme, GO_RUN(1, GO_ENZYME));
    ADGEN_PEAK(r.adgen_bytes, GO_RUN(0, GO_ADGEN));
    ENZYME(PEAK(r.enzyme_bytes, GO_RUN(1, GO_ENZYME));
           r.enzyme_diff = fmax(difference(ga[1], ga[0], k), fmax(difference(gm[1], gm[0], k * d),
                                                                  difference(gi[1], gi[0], nicf))));
    double e1, e2, e3;
    FD_CHECK(e1, al, ga[0], k, gmm_objective_value(d, k, n, al, mu, icf, x));
    FD_CHECK(e2, mu, gm[0], k * d, gmm_objective_value(d, k, n, al, mu, icf, x));
    FD_CHECK(e3, icf, gi[0], nicf, gmm_objective_value(d, k, n, al, mu, icf, x));
    r.diff = fmax(e1, fmax(e2, e3));
    report(r);
    double *derr[8], *ederr[8];
    for (int q = 0; q < 8; q++)
        derr[q] = zeros(1), ederr[q] = zeros(1);
    FORWARD8(name, r.primal,
             gmm_objective_fwd(d, k, n, al, da[lane], mu, dm[lane], icf, di[lane], x, 1.0, 0, &err, derr[0]);
             singles[lane] = derr[0][0],
             gmm_objective_fwd8(d, k, n, al, da[0], da[1], da[2], da[3], da[4], da[5], da[6], da[7], mu, dm[0], dm[1],
                                dm[2], dm[3], dm[4], dm[5], dm[6], dm[7], icf, di[0], di[1], di[2], di[3], di[4], di[5],
                                di[6], di[7], x, 1.0, 0, &err, derr[0], derr[1], derr[2], derr[3], derr[4], derr[5],
                                derr[6], derr[7]);
             for (int q = 0; q < 8; q++) lanes[q] = derr[q][0],
             gmm_objective_enzyme_fwd8(d, k, n, al, da, mu, dm, icf, di, x, 1.0, 0, &err, ederr);
             for (int q = 0; q < 8; q++) elanes[q] = ederr[q][0]);
}

/* d err[0] summed over all observations, in one direction of the cameras' entries */
static double reproj_forward1(const double *cams, const int *cam_of, const double *pts, const int *pt_of,
                              const double *w, const double *feat, int n_obs, const double *dc, const double *dX,
                              const double *dw)
{
    double err[2], derr[2], total = 0;
    for (int o = 0; o < n_obs; o++) {
        reproj_error_fwd(cams + 11 * cam_of[o], dc, pts + 3 * pt_of[o], dX, w + o, dw, feat + 2 * o, err, derr);
        total += derr[0];
    }
    return total;
}

static void reproj_forward8(const double *cams, const int *cam_of, const double *pts, const int *pt_of,
                            const double *w, const double *feat, int n_obs, double **dc, double *dX, double *dw,
                            double **derr, double lanes[8])
{
    double err[2];
    for (int q = 0; q < 8; q++)
        lanes[q] = 0;
    for (int o = 0; o < n_obs; o++) {
        reproj_error_fwd8(cams + 11 * cam_of[o], dc[0], dc[1], dc[2], dc[3], dc[4], dc[5], dc[6], dc[7],
                          pts + 3 * pt_of[o], dX, dX, dX, dX, dX, dX, dX, dX, w + o, dw, dw, dw, dw, dw, dw, dw, dw,
                          feat + 2 * o, err, derr[0], derr[1], derr[2], derr[3], derr[4], derr[5], derr[6], derr[7]);
        for (int q = 0; q < 8; q++)
            lanes[q] += derr[q][0];
    }
}

#ifdef WITH_ENZYME
static void reproj_enzyme_forward8(const double *cams, const int *cam_of, const double *pts, const int *pt_of,
                                   const double *w, const double *feat, int n_obs, double **dc, double *dX, double *dw,
                                   double **derr, double lanes[8])
{
    double err[2], *eX[8] = { dX, dX, dX, dX, dX, dX, dX, dX }, *ew[8] = { dw, dw, dw, dw, dw, dw, dw, dw };
    for (int q = 0; q < 8; q++)
        lanes[q] = 0;
    for (int o = 0; o < n_obs; o++) {
        reproj_error_enzyme_fwd8(cams + 11 * cam_of[o], dc, pts + 3 * pt_of[o], eX, w + o, ew, feat + 2 * o, err, derr);
        for (int q = 0; q < 8; q++)
            lanes[q] += derr[q][0];
    }
}
#endif

/* The Jacobian of every observation's residual, two reverse calls (one per output) each. */
static void bench_reproj_error(int n_cams, int n_pts, int n_obs)
{
    double *cams = filled(11 * n_cams, 0.4, 38), *pts = filled(3 * n_pts, 2.0, 39), *feat = filled(2 * n_obs, 1.0, 40);
    double *w = filled(n_obs, 0.5, 41), *jac[2] = { zeros(30 * (size_t)n_obs), zeros(30 * (size_t)n_obs) };
    for (int c = 0; c < n_cams; c++)
        cams[11 * c + 5] -= 6.0, cams[11 * c + 6] = 1.0 + 0.1 * cams[11 * c + 6]; /* in front, focal near 1 */
    for (int o = 0; o < n_obs; o++)
        w[o] += 1.0;
    int *cam_of = malloc(n_obs * sizeof(int)), *pt_of = malloc(n_obs * sizeof(int));
    for (int o = 0; o < n_obs; o++)
        cam_of[o] = o % n_cams, pt_of[o] = (o * 7919) % n_pts;
    double err[2], gerr[2];
    struct record r = { "reproj_error", "reverse" };
/* row `row` of observation o's Jacobian: 11 camera, 3 point, 1 weight entries */
#define RE_JACOBIAN(q, grad)                                                                       \
    for (int o = 0; o < n_obs; o++)                                                                \
        for (int row = 0; row < 2; row++) {                                                        \
            double *J = jac[q] + 30 * (size_t)o + 15 * row;                                        \
            memset(J, 0, 15 * sizeof *J);                                                          \
            gerr[0] = row == 0, gerr[1] = row == 1;                                                \
            grad(cams + 11 * cam_of[o], J, pts + 3 * pt_of[o], J + 11, w + o, J + 14, feat + 2 * o, err, gerr); \
        }
    BEST(r.primal, for (int o = 0; o < n_obs; o++) {
        reproj_error(cams + 11 * cam_of[o], pts + 3 * pt_of[o], w + o, feat + 2 * o, err);
        sink += err[0];
    });
    BEST_BESIDE_ENZYME(r.adgen, RE_JACOBIAN(0, reproj_error_grad),
                       r.enzyme, RE_JACOBIAN(1, reproj_error_enzyme_grad));
    ADGEN_PEAK(r.adgen_bytes, RE_JACOBIAN(0, reproj_error_grad));
    ENZYME(PEAK(r.enzyme_bytes, RE_JACOBIAN(1, reproj_error_enzyme_grad));
           r.enzyme_diff = difference(jac[1], jac[0], 30 * (size_t)n_obs));
    /* central differences of observation 0's residual in its camera's entries */
    for (int c = 0; c < 11; c++) {
        double *p = cams + 11 * cam_of[0], keep = p[c], h = 1e-6 * fmax(1.0, fabs(keep)), up[2], down[2];
        p[c] = keep + h;
        reproj_error(p, pts + 3 * pt_of[0], w, feat, up);
        p[c] = keep - h;
        reproj_error(p, pts + 3 * pt_of[0], w, feat, down);
        p[c] = keep;
        for (int row = 0; row < 2; row++) {
            double fd = (up[row] - down[row]) / (2 * h), g = jac[0][15 * row + c];
            double e = fabs(fd - g) / fmax(1e-4, fmax(fabs(fd), fabs(g)));
            r.diff = fmax(r.diff, e > 1e-3 ? e : 0);
        }
    }
    report(r);
    /* forward[8]: eight directions in observation 0's first eight camera entries, all observations */
    double *dc[8], *dX = zeros(3), *dw = zeros(1), *derr[8];
    for (int q = 0; q < 8; q++) {
        dc[q] = zeros(11), derr[q] = zeros(2);
        dc[q][q] = 1.0;
    }
    struct record f = { "reproj_error", "forward8", r.primal };
    double lanes[8] = { 0 }, singles[8] = { 0 };
    BEST(f.adgen, reproj_forward8(cams, cam_of, pts, pt_of, w, feat, n_obs, dc, dX, dw, derr, lanes));
    BEST(f.scalar, for (int lane = 0; lane < 8; lane++) singles[lane] = reproj_forward1(cams, cam_of, pts, pt_of, w,
                                                                                       feat, n_obs, dc[lane], dX, dw));
    for (int lane = 0; lane < 8; lane++)
        f.diff = fmax(f.diff, relative(lanes[lane], singles[lane]));
#ifdef WITH_ENZYME
    double elanes[8];
    BEST(f.enzyme, reproj_enzyme_forward8(cams, cam_of, pts, pt_of, w, feat, n_obs, dc, dX, dw, derr, elanes));
    for (int lane = 0; lane < 8; lane++)
        f.enzyme_diff = fmax(f.enzyme_diff, relative(elanes[lane], lanes[lane]));
#endif
    report(f);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "count") == 0) {
        counting = 1, reps = 1, only = argv[2];
        run_all(COUNT);
        fprintf(stderr, "bench count: no kernel %s\n", only);
        return 2;
    }
    if (argc > 3 && strcmp(argv[1], "peak") == 0) {
        peaking = atoi(argv[3]), reps = 0, only = argv[2];  /* (reps 0: nothing timed before it) */
        run_all(argc > 4 && strcmp(argv[4], "quick") == 0 ? QUICK : FULL);
        fprintf(stderr, "bench peak: no kernel %s of size %s\n", only, argv[3]);
        return 2;
    }
    int size = argc > 1 && strcmp(argv[1], "quick") == 0 ? QUICK : FULL;
    reps = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : size == QUICK ? 3 : 10;
    only = argc > 3 ? argv[3] : NULL;
    for (int round = 0; round < 2; round++)
        run_all(size);
    for (int i = 0; i < n_results; i++)
        print(results[i]);
    return 0;
}

/* the sizes: full, quick or counting's */
#define SIZED(full, quick, count) (size == FULL ? (full) : size == QUICK ? (quick) : (count))

static void run_all(int size)
{
    if (wanted("rosenbrock"))
        bench_rosenbrock(SIZED(1000000, 100000, 10000));
    if (wanted("norm") && size != COUNT && peaking != 1)
        bench_norm(20000);
    if (wanted("norm"))
        bench_norm(SIZED(80000, 80000, 2000));
    if (wanted("logsumexp"))
        bench_logsumexp(SIZED(1000000, 100000, 10000));
    if (wanted("gmm"))
        bench_gmm(SIZED(1000, 200, 50), 25, 10);
    if (wanted("gmm_objective") && peaking != 1)
        bench_gmm_objective(10, 25, SIZED(1000, 200, 20));
    if (wanted("gmm_objective") && size != COUNT)
        bench_gmm_objective(64, 50, size == QUICK ? 20 : 1000);
    if (wanted("ba"))
        bench_ba(SIZED(100, 20, 5), SIZED(2000, 400, 50), SIZED(10000, 2000, 200));
    if (wanted("reproj_error"))
        bench_reproj_error(SIZED(100, 20, 5), SIZED(2000, 400, 50), SIZED(20000, 2000, 200));
    if (wanted("lstm"))
        bench_lstm(SIZED(100, 30, 10), 32, 2);
    if (wanted("nbody"))
        bench_nbody(SIZED(200, 60, 20));
    if (wanted("heat"))
        bench_heat(SIZED(128, 64, 16), SIZED(20, 10, 4));
    if (wanted("sinexp"))
        bench_sinexp(SIZED(100000, 100000, 10000));
}
