/* Hand-written gradients of the kernels in reverse_kernels.c, with the same calling
 * convention as adgen's (the primal result is computed too, shadows accumulate, the seed of
 * written memory is consumed): the reference limit for adgen's speed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

void rosenbrock_hand(const double *x, double *gx, int n, double seed)
{
    for (int i = 0; i < n - 1; i++) {
        double a = x[i + 1] - x[i] * x[i], b = 1.0 - x[i];
        gx[i] += seed * (-400.0 * x[i] * a - 2.0 * b);
        gx[i + 1] += seed * 200.0 * a;
    }
}

void norm_hand(double *restrict out, double *restrict dout, const double *restrict in, double *restrict din, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += in[i] * in[i];
    double m = sqrt(s), dot = 0;
    for (int i = 0; i < n; i++) {
        out[i] = in[i] / m;
        dot += dout[i] * in[i];
    }
    double k = dot / (m * m * m);
    for (int i = 0; i < n; i++) {
        din[i] += dout[i] / m - k * in[i];
        dout[i] = 0;
    }
}

void logsumexp_hand(const double *x, double *gx, int n, double seed)
{
    double m = x[0];
    for (int i = 1; i < n; i++)
        m = fmax(m, x[i]);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += exp(x[i] - m);
    double lse = log(s) + m;
    for (int i = 0; i < n; i++)
        gx[i] += seed * exp(x[i] - lse);
}

void gmm_hand(const double *alphas, double *ga, const double *means, double *gm, const double *logq, double *gq,
              const double *x, int n, int k, int d, double seed)
{
    double s[64], q[64 * 64];
    for (int c = 0; c < k * d; c++)
        q[c] = exp(logq[c]);
    for (int i = 0; i < n; i++) {
        double m = -INFINITY;
        for (int c = 0; c < k; c++) {
            double acc = alphas[c];
            for (int j = 0; j < d; j++) {
                double z = q[c * d + j] * (x[i * d + j] - means[c * d + j]);
                acc += logq[c * d + j] - 0.5 * z * z;
            }
            s[c] = acc;
            m = fmax(m, acc);
        }
        double e = 0;
        for (int c = 0; c < k; c++)
            e += exp(s[c] - m);
        double lse = log(e) + m;
        for (int c = 0; c < k; c++) {
            double p = seed * exp(s[c] - lse);
            ga[c] += p;
            for (int j = 0; j < d; j++) {
                double z = q[c * d + j] * (x[i * d + j] - means[c * d + j]);
                gm[c * d + j] += p * z * q[c * d + j];
                gq[c * d + j] += p * (1.0 - z * z);
            }
        }
    }
}

void nbody_hand(double *pos, double *gpos, double *vel, double *gvel, const double *mass, int n, double dt,
                double seed)
{
    double *p0 = malloc(3 * n * sizeof *p0);
    memcpy(p0, pos, 3 * n * sizeof *p0);
    for (int i = 0; i < n; i++) {
        double a[3] = { 0, 0, 0 };
        for (int j = 0; j < n; j++) {
            if (j == i)
                continue;
            double d[3], r2 = 0.01;
            for (int u = 0; u < 3; u++) {
                d[u] = p0[3 * j + u] - p0[3 * i + u];
                r2 += d[u] * d[u];
            }
            double w = mass[j] / (r2 * sqrt(r2));
            for (int u = 0; u < 3; u++)
                a[u] += d[u] * w;
        }
        for (int u = 0; u < 3; u++)
            vel[3 * i + u] += dt * a[u];
    }
    for (int i = 0; i < 3 * n; i++)
        pos[i] += dt * vel[i];
    /* reverse: E = sum m (p'^2 + v'^2 / 2), p' = p + dt v', v' = v + dt a(p) */
    double *ga = malloc(3 * n * sizeof *ga);
    for (int i = 0; i < 3 * n; i++) {
        double gp = seed * mass[i / 3] * 2.0 * pos[i];
        double gv = seed * mass[i / 3] * vel[i] + dt * gp;
        gpos[i] += gp;
        gvel[i] += gv;
        ga[i] = dt * gv;
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            if (j == i)
                continue;
            double d[3], r2 = 0.01, dot = 0;
            for (int u = 0; u < 3; u++) {
                d[u] = p0[3 * j + u] - p0[3 * i + u];
                r2 += d[u] * d[u];
            }
            double r = sqrt(r2), w = mass[j] / (r2 * r), w5 = 3.0 * mass[j] / (r2 * r2 * r);
            for (int u = 0; u < 3; u++)
                dot += d[u] * ga[3 * i + u];
            for (int u = 0; u < 3; u++) {
                double gd = w * ga[3 * i + u] - w5 * dot * d[u];
                gpos[3 * j + u] += gd;
                gpos[3 * i + u] -= gd;
            }
        }
    }
    free(ga);
    free(p0);
}

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

void lstm_hand(const double *W, double *gW, const double *b, double *gb, const double *xs, int T, int H, double seed)
{
    /* forward, keeping every step's gates and states */
    int steps = T - 1;
    double *gates = malloc((size_t)steps * 4 * H * sizeof *gates);
    double *cs = calloc((size_t)(steps + 1) * H, sizeof *cs), *hs = calloc((size_t)(steps + 1) * H, sizeof *hs);
    for (int t = 0; t < steps; t++) {
        const double *x = xs + t * H, *h = hs + t * H, *c = cs + t * H;
        double *g = gates + t * 4 * H;
        for (int r = 0; r < 4 * H; r++) {
            double acc = b[r];
            for (int k = 0; k < H; k++)
                acc += W[r * 2 * H + k] * x[k] + W[r * 2 * H + H + k] * h[k];
            g[r] = r < 3 * H ? sigmoid(acc) : tanh(acc);
        }
        for (int k = 0; k < H; k++) {
            cs[(t + 1) * H + k] = g[H + k] * c[k] + g[k] * g[3 * H + k];
            hs[(t + 1) * H + k] = g[2 * H + k] * tanh(cs[(t + 1) * H + k]);
        }
    }
    /* backward through time */
    double dh[64] = { 0 }, dc[64] = { 0 }, dz[256];
    for (int t = steps - 1; t >= 0; t--) {
        const double *x = xs + t * H, *h = hs + t * H, *g = gates + t * 4 * H;
        for (int k = 0; k < H; k++) {
            double c1 = cs[(t + 1) * H + k], tc = tanh(c1);
            dh[k] += seed * 2.0 * (hs[(t + 1) * H + k] - xs[(t + 1) * H + k]);
            double dct = dc[k] + dh[k] * g[2 * H + k] * (1.0 - tc * tc);
            dz[2 * H + k] = dh[k] * tc * g[2 * H + k] * (1.0 - g[2 * H + k]);
            dz[k] = dct * g[3 * H + k] * g[k] * (1.0 - g[k]);
            dz[3 * H + k] = dct * g[k] * (1.0 - g[3 * H + k] * g[3 * H + k]);
            dz[H + k] = dct * cs[t * H + k] * g[H + k] * (1.0 - g[H + k]);
            dc[k] = dct * g[H + k];
            dh[k] = 0;
        }
        for (int r = 0; r < 4 * H; r++) {
            gb[r] += dz[r];
            for (int k = 0; k < H; k++) {
                gW[r * 2 * H + k] += dz[r] * x[k];
                gW[r * 2 * H + H + k] += dz[r] * h[k];
                dh[k] += W[r * 2 * H + H + k] * dz[r];
            }
        }
    }
    free(gates);
    free(cs);
    free(hs);
}
