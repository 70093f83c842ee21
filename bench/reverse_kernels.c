/* The reverse-mode benchmark kernels, each annotated for adgen; bench/hand_gradients.c holds
 * hand-written gradients of the same functions, the limit to compare against. */
#include <math.h>

// @diff(rosenbrock_grad: (dup, const) -> activeonly)
double rosenbrock(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n - 1; i++) {
        double a = x[i + 1] - x[i] * x[i], b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    return s;
}

__attribute__((noinline)) double mag(const double *restrict x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}

/* The seeds' vector normalization: optimized first, mag is computed once, so the gradient is O(n). */
// @diff(norm_grad: (dup, dup, const))
void norm(double *restrict out, const double *restrict in, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = in[i] / mag(in, n);
}

// @diff(logsumexp_grad: (dup, const) -> activeonly)
double logsumexp(const double *x, int n)
{
    double m = x[0];
    for (int i = 1; i < n; i++)
        m = fmax(m, x[i]);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += exp(x[i] - m);
    return log(s) + m;
}

/* A Gaussian-mixture log-likelihood with diagonal precisions in log form (ADBench's GMM,
 * without the Wishart prior): sum over points of logsumexp over components. */
// @diff(gmm_grad: (dup, dup, dup, const, const, const, const) -> activeonly)
double gmm(const double *alphas, const double *means, const double *logq, const double *x, int n, int k, int d)
{
    double total = 0, s[64];
    for (int i = 0; i < n; i++) {
        double m = -INFINITY;
        for (int c = 0; c < k; c++) {
            double acc = alphas[c];
            for (int j = 0; j < d; j++) {
                double z = exp(logq[c * d + j]) * (x[i * d + j] - means[c * d + j]);
                acc += logq[c * d + j] - 0.5 * z * z;
            }
            s[c] = acc;
            m = fmax(m, acc);
        }
        double e = 0;
        for (int c = 0; c < k; c++)
            e += exp(s[c] - m);
        total += log(e) + m;
    }
    return total;
}

/* One step of an n-body system, positions and velocities updated in place, then an energy-like
 * objective of the new state: the reverse sweep needs the overwritten values. */
// @diff(nbody_grad: (dup, dup, const, const, const) -> activeonly)
double nbody(double *pos, double *vel, const double *mass, int n, double dt)
{
    for (int i = 0; i < n; i++) {
        double ax = 0, ay = 0, az = 0;
        for (int j = 0; j < n; j++) {
            if (j == i)
                continue;
            double dx = pos[3 * j] - pos[3 * i], dy = pos[3 * j + 1] - pos[3 * i + 1], dz = pos[3 * j + 2] - pos[3 * i + 2];
            double r2 = dx * dx + dy * dy + dz * dz + 0.01;
            double w = mass[j] / (r2 * sqrt(r2));
            ax += dx * w;
            ay += dy * w;
            az += dz * w;
        }
        vel[3 * i] += dt * ax;
        vel[3 * i + 1] += dt * ay;
        vel[3 * i + 2] += dt * az;
    }
    double e = 0;
    for (int i = 0; i < 3 * n; i++) {
        pos[i] += dt * vel[i];
        e += mass[i / 3] * (pos[i] * pos[i] + 0.5 * vel[i] * vel[i]);
    }
    return e;
}

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* An LSTM cell run over a sequence, predicting the next input: the squared error summed over
 * time. W is 4H x 2H (input and hidden), b is 4H; H <= 64. */
// @diff(lstm_grad: (dup, dup, const, const, const) -> activeonly)
double lstm(const double *W, const double *b, const double *xs, int T, int H)
{
    double h[64] = { 0 }, c[64] = { 0 }, z[256], loss = 0;
    for (int t = 0; t < T - 1; t++) {
        const double *x = xs + t * H;
        for (int r = 0; r < 4 * H; r++) {
            double acc = b[r];
            for (int k = 0; k < H; k++)
                acc += W[r * 2 * H + k] * x[k] + W[r * 2 * H + H + k] * h[k];
            z[r] = acc;
        }
        for (int k = 0; k < H; k++) {
            double in = sigmoid(z[k]), forget = sigmoid(z[H + k]), out = sigmoid(z[2 * H + k]), g = tanh(z[3 * H + k]);
            c[k] = forget * c[k] + in * g;
            h[k] = out * tanh(c[k]);
            double e = h[k] - xs[(t + 1) * H + k];
            loss += e * e;
        }
    }
    return loss;
}
