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

void ba_hand(const double *cams, double *gc, const double *pts, double *gp, const int *obs, const double *feat,
             int n_obs, double seed)
{
    for (int o = 0; o < n_obs; o++) {
        const double *c = cams + 15 * obs[2 * o], *p = pts + 3 * obs[2 * o + 1];
        double *dc = gc + 15 * obs[2 * o], *dp = gp + 3 * obs[2 * o + 1];
        double X[3];
        for (int r = 0; r < 3; r++)
            X[r] = c[3 * r] * p[0] + c[3 * r + 1] * p[1] + c[3 * r + 2] * p[2] + c[9 + r];
        double u = X[0] / X[2], v = X[1] / X[2];
        double r2 = u * u + v * v, D = 1.0 + c[13] * r2 + c[14] * r2 * r2;
        double eu = c[12] * D * u - feat[2 * o], ev = c[12] * D * v - feat[2 * o + 1];
        double geu = 2.0 * seed * eu, gev = 2.0 * seed * ev;
        dc[12] += geu * D * u + gev * D * v;
        double gD = (geu * u + gev * v) * c[12];
        double gu = geu * c[12] * D, gv = gev * c[12] * D;
        dc[13] += gD * r2;
        dc[14] += gD * r2 * r2;
        double gr2 = gD * (c[13] + 2.0 * c[14] * r2);
        gu += gr2 * 2.0 * u;
        gv += gr2 * 2.0 * v;
        double gX[3] = { gu / X[2], gv / X[2], -(gu * u + gv * v) / X[2] };
        for (int r = 0; r < 3; r++) {
            for (int k = 0; k < 3; k++) {
                dc[3 * r + k] += gX[r] * p[k];
                dp[k] += gX[r] * c[3 * r + k];
            }
            dc[9 + r] += gX[r];
        }
    }
}

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

void lstm_hand(const double *W, double *gW, const double *b, double *gb, const double *xs, int T, int H, int layers,
               double seed)
{
    /* forward, keeping every step's gates and states, per layer */
    int steps = T - 1, LH = layers * H;
    double *gates = malloc((size_t)steps * layers * 4 * H * sizeof *gates);
    double *cs = calloc((size_t)(steps + 1) * LH, sizeof *cs), *hs = calloc((size_t)(steps + 1) * LH, sizeof *hs);
    for (int t = 0; t < steps; t++) {
        const double *in = xs + t * H;
        for (int l = 0; l < layers; l++) {
            const double *Wl = W + l * 8 * H * H, *bl = b + l * 4 * H, *h = hs + t * LH + l * H;
            const double *c = cs + t * LH + l * H;
            double *g = gates + ((size_t)t * layers + l) * 4 * H;
            for (int r = 0; r < 4 * H; r++) {
                double acc = bl[r];
                for (int k = 0; k < H; k++)
                    acc += Wl[r * 2 * H + k] * in[k] + Wl[r * 2 * H + H + k] * h[k];
                g[r] = r < 3 * H ? sigmoid(acc) : tanh(acc);
            }
            double *c1 = cs + (t + 1) * LH + l * H, *h1 = hs + (t + 1) * LH + l * H;
            for (int k = 0; k < H; k++) {
                c1[k] = g[H + k] * c[k] + g[k] * g[3 * H + k];
                h1[k] = g[2 * H + k] * tanh(c1[k]);
            }
            in = h1;
        }
    }
    /* backward through time and through the layers */
    double dh[4][32] = { { 0 } }, dc[4][32] = { { 0 } }, dz[128];
    for (int t = steps - 1; t >= 0; t--) {
        const double *top = hs + (t + 1) * LH + (layers - 1) * H;
        for (int k = 0; k < H; k++)
            dh[layers - 1][k] += seed * 2.0 * (top[k] - xs[(t + 1) * H + k]);
        for (int l = layers - 1; l >= 0; l--) {
            const double *Wl = W + l * 8 * H * H, *g = gates + ((size_t)t * layers + l) * 4 * H;
            const double *in = l == 0 ? xs + t * H : hs + (t + 1) * LH + (l - 1) * H;
            const double *h = hs + t * LH + l * H, *c = cs + t * LH + l * H, *c1 = cs + (t + 1) * LH + l * H;
            double *gWl = gW + l * 8 * H * H, *gbl = gb + l * 4 * H;
            for (int k = 0; k < H; k++) {
                double tc = tanh(c1[k]);
                double dct = dc[l][k] + dh[l][k] * g[2 * H + k] * (1.0 - tc * tc);
                dz[2 * H + k] = dh[l][k] * tc * g[2 * H + k] * (1.0 - g[2 * H + k]);
                dz[k] = dct * g[3 * H + k] * g[k] * (1.0 - g[k]);
                dz[3 * H + k] = dct * g[k] * (1.0 - g[3 * H + k] * g[3 * H + k]);
                dz[H + k] = dct * c[k] * g[H + k] * (1.0 - g[H + k]);
                dc[l][k] = dct * g[H + k];
                dh[l][k] = 0;
            }
            for (int r = 0; r < 4 * H; r++) {
                gbl[r] += dz[r];
                for (int k = 0; k < H; k++) {
                    gWl[r * 2 * H + k] += dz[r] * in[k];
                    gWl[r * 2 * H + H + k] += dz[r] * h[k];
                    dh[l][k] += Wl[r * 2 * H + H + k] * dz[r];
                    if (l > 0)
                        dh[l - 1][k] += Wl[r * 2 * H + k] * dz[r];
                }
            }
        }
    }
    free(gates);
    free(cs);
    free(hs);
}

double heat_hand(double *u, double *gu, double *scratch, double *gs, int n, double alpha, int steps, double seed)
{
    (void)gs; /* scratch is overwritten before it is read: its gradient stays zero */
    size_t nn = (size_t)n * n;
    double *fields = malloc((size_t)steps * nn * sizeof *fields), *bar = malloc(nn * sizeof *bar);
    for (int s = 0; s < steps; s++) {
        memcpy(fields + s * nn, u, nn * sizeof *u);
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                scratch[i * n + j] = u[i * n + j] + alpha * (u[(i - 1) * n + j] + u[(i + 1) * n + j] +
                                                             u[i * n + j - 1] + u[i * n + j + 1] - 4.0 * u[i * n + j]);
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                u[i * n + j] = scratch[i * n + j];
    }
    double galpha = 0;
    for (size_t i = 0; i < nn; i++)
        bar[i] = 2.0 * seed * u[i];
    double *next = malloc(nn * sizeof *next);
    for (int s = steps - 1; s >= 0; s--) {
        const double *f = fields + s * nn;
        memcpy(next, bar, nn * sizeof *bar);
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++) {
                double sb = next[i * n + j];
                galpha += sb * (f[(i - 1) * n + j] + f[(i + 1) * n + j] + f[i * n + j - 1] + f[i * n + j + 1] -
                                4.0 * f[i * n + j]);
                bar[i * n + j] -= 4.0 * alpha * sb; /* u_ij + alpha * (... - 4 u_ij) */
            }
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++) {
                double sb = alpha * next[i * n + j];
                bar[(i - 1) * n + j] += sb;
                bar[(i + 1) * n + j] += sb;
                bar[i * n + j - 1] += sb;
                bar[i * n + j + 1] += sb;
            }
    }
    for (size_t i = 0; i < nn; i++)
        gu[i] += bar[i];
    free(next);
    free(bar);
    free(fields);
    return galpha;
}

double sinexp_hand(const double *x, double *gx, int n, double seed)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        double e = exp(0.5 * x[i]), sn = sin(x[i]);
        s += sn * e * x[i];
        gx[i] += seed * e * (cos(x[i]) * x[i] + 0.5 * sn * x[i] + sn);
    }
    return s;
}
