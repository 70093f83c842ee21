/* The kernels of `python -m bench.checkpointing` (specs/abi.md, "Memory budgets"): long loops
 * whose reverse mode stores, for each step, what the step overwrites. Each is differentiated
 * twice by adgen: within a 64 MiB budget (checkpointed) and without one; Enzyme's gradient
 * (enzyme.c) differentiates the same functions. */
#include <math.h>

/* A 2-D reaction-diffusion step on an n x n grid, explicit Euler, ping-pong buffers: `steps`
 * steps; the result weighs the final field. */
// @diff(heat2d_ckpt: (dup, dup, const, const) -> active within 64MiB; heat2d_full: (dup, dup, const, const) -> active)
double heat2d(double *a, double *b, int n, int steps)
{
    double *now = a, *next = b;
    for (int t = 0; t < steps; t++) {
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++) {
                double c = now[i * n + j];
                next[i * n + j] = c + 0.2 * (now[(i - 1) * n + j] + now[(i + 1) * n + j] + now[i * n + j - 1]
                                             + now[i * n + j + 1] - 4 * c) + 0.001 * c * (1 - c);
            }
        double *swap = now;
        now = next;
        next = swap;
    }
    double s = 0;
    for (int i = 0; i < n * n; i++) s += now[i] * now[i];
    return s;
}

/* A chain of m pendulums coupled by springs, integrated by classical Runge-Kutta over `steps`
 * steps of h; the state (angles, then velocities) is updated in place. */
static void rhs(const double *y, double *dy, int m, double k)
{
    for (int i = 0; i < m; i++) {
        double left = i > 0 ? y[i - 1] : 0, right = i < m - 1 ? y[i + 1] : 0;
        dy[i] = y[m + i];
        dy[m + i] = -sin(y[i]) + k * (left - 2 * y[i] + right) - 0.01 * y[m + i];
    }
}

// @diff(rk4_ckpt: (dup, dup, const, const, const) -> active within 64MiB; rk4_full: (dup, dup, const, const, const) -> active)
double rk4(double *y, double *work, int m, int steps, double h)
{
    double *k1 = work, *k2 = work + 2 * m, *k3 = work + 4 * m, *k4 = work + 6 * m, *tmp = work + 8 * m;
    for (int t = 0; t < steps; t++) {
        rhs(y, k1, m, 0.5);
        for (int i = 0; i < 2 * m; i++) tmp[i] = y[i] + 0.5 * h * k1[i];
        rhs(tmp, k2, m, 0.5);
        for (int i = 0; i < 2 * m; i++) tmp[i] = y[i] + 0.5 * h * k2[i];
        rhs(tmp, k3, m, 0.5);
        for (int i = 0; i < 2 * m; i++) tmp[i] = y[i] + h * k3[i];
        rhs(tmp, k4, m, 0.5);
        for (int i = 0; i < 2 * m; i++) y[i] += h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]);
    }
    double s = 0;
    for (int i = 0; i < 2 * m; i++) s += y[i] * y[i];
    return s;
}

/* An Elman recurrent network over `steps` time steps: h' = tanh(W h + U x_t + b), hidden size
 * hid, inputs of size in; the loss sums (v . h)^2 over the steps. w holds W, U, b, v. */
// @diff(rnn_ckpt: (dup, const, dup, dup, const, const, const) -> active within 64MiB; rnn_full: (dup, const, dup, dup, const, const, const) -> active)
double rnn(double *w, const double *x, double *h, double *hn, int hid, int in, int steps)
{
    const double *W = w, *U = w + hid * hid, *bias = U + hid * in, *v = bias + hid;
    double *now = h, *next = hn, loss = 0;
    for (int t = 0; t < steps; t++) {
        const double *xt = x + (long)t * in;
        for (int i = 0; i < hid; i++) {
            double s = bias[i];
            for (int j = 0; j < hid; j++) s += W[i * hid + j] * now[j];
            for (int j = 0; j < in; j++) s += U[i * in + j] * xt[j];
            next[i] = tanh(s);
        }
        double y = 0;
        for (int i = 0; i < hid; i++) y += v[i] * next[i];
        loss += y * y;
        double *swap = now;
        now = next;
        next = swap;
    }
    return loss / steps;
}
