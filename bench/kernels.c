/* The benchmark kernels, written for this project and annotated for adgen: each has a
 * reverse-mode gradient (NAME_grad), a width-1 forward derivative (NAME_fwd) and a width-8
 * one (NAME_fwd8). bench/hand.c holds hand-written gradients of the same functions. */
#include <math.h>
#include <stdlib.h>

/* Extended Rosenbrock. */
// @diff(rosenbrock_grad: (dup, const) -> activeonly;
//       rosenbrock_fwd: (dual, const) -> dualonly;
//       rosenbrock_fwd8: forward[8] (dual, const) -> dualonly;
//       rosenbrock_hvp: forward of rosenbrock_grad (dual, dual, const, const))
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
// @diff(norm_grad: (dup, dup, const);
//       norm_fwd: (dual, dual, const);
//       norm_fwd8: forward[8] (dual, dual, const))
void norm(double *restrict out, const double *restrict in, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = in[i] / mag(in, n);
}

// @diff(logsumexp_grad: (dup, const) -> activeonly;
//       logsumexp_fwd: (dual, const) -> dualonly;
//       logsumexp_fwd8: forward[8] (dual, const) -> dualonly;
//       logsumexp_hvp: forward of logsumexp_grad (dual, dual, const, const))
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

/* ADBench's Gaussian mixture log-likelihood with diagonal precisions in log form (without the
 * Wishart prior): the sum over points of a logsumexp over components. k <= 64. */
// @diff(gmm_grad: (dup, dup, dup, const, const, const, const) -> activeonly;
//       gmm_fwd: (dual, dual, dual, const, const, const, const) -> dualonly;
//       gmm_fwd8: forward[8] (dual, dual, dual, const, const, const, const) -> dualonly)
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

/* Bundle adjustment: the summed squared reprojection residuals of observations of points
 * by cameras. A camera is 15 numbers: a 3x3 linear map R, a translation t, a focal length f,
 * radial distortion k1, k2. obs holds (camera, point) pairs, feat the observed 2-D features. */
// @diff(ba_grad: (dup, dup, const, const, const) -> activeonly;
//       ba_fwd: (dual, dual, const, const, const) -> dualonly;
//       ba_fwd8: forward[8] (dual, dual, const, const, const) -> dualonly)
double ba(const double *cams, const double *pts, const int *obs, const double *feat, int n_obs)
{
    double total = 0;
    for (int o = 0; o < n_obs; o++) {
        const double *c = cams + 15 * obs[2 * o], *p = pts + 3 * obs[2 * o + 1];
        double X[3];
        for (int r = 0; r < 3; r++)
            X[r] = c[3 * r] * p[0] + c[3 * r + 1] * p[1] + c[3 * r + 2] * p[2] + c[9 + r];
        double u = X[0] / X[2], v = X[1] / X[2];
        double r2 = u * u + v * v, distort = 1.0 + c[13] * r2 + c[14] * r2 * r2;
        double eu = c[12] * distort * u - feat[2 * o], ev = c[12] * distort * v - feat[2 * o + 1];
        total += eu * eu + ev * ev;
    }
    return total;
}

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* One LSTM cell: gates from the input and the hidden state, then the new cell and hidden state. */
static inline void cell(const double *W, const double *b, const double *in, double *h, double *c, int H)
{
    double z[128];
    for (int r = 0; r < 4 * H; r++) {
        double acc = b[r];
        for (int k = 0; k < H; k++)
            acc += W[r * 2 * H + k] * in[k] + W[r * 2 * H + H + k] * h[k];
        z[r] = acc;
    }
    for (int k = 0; k < H; k++) {
        double i = sigmoid(z[k]), f = sigmoid(z[H + k]), o = sigmoid(z[2 * H + k]), g = tanh(z[3 * H + k]);
        c[k] = f * c[k] + i * g;
        h[k] = o * tanh(c[k]);
    }
}

/* ADBench-style LSTM: `layers` stacked LSTM cells run over a sequence, each layer's hidden state
 * the next one's input, predicting the next input: the squared error summed over time.
 * Per layer, W is 4H x 2H (input and hidden) and b is 4H. H <= 32, layers <= 4. */
// @diff(lstm_grad: (dup, dup, const, const, const, const) -> activeonly;
//       lstm_fwd: (dual, dual, const, const, const, const) -> dualonly;
//       lstm_fwd8: forward[8] (dual, dual, const, const, const, const) -> dualonly)
double lstm(const double *W, const double *b, const double *xs, int T, int H, int layers)
{
    double h[4][32] = { { 0 } }, c[4][32] = { { 0 } }, loss = 0;
    for (int t = 0; t < T - 1; t++) {
        cell(W, b, xs + t * H, h[0], c[0], H);
        for (int l = 1; l < layers; l++)
            cell(W + l * 8 * H * H, b + l * 4 * H, h[l - 1], h[l], c[l], H);
        for (int k = 0; k < H; k++) {
            double e = h[layers - 1][k] - xs[(t + 1) * H + k];
            loss += e * e;
        }
    }
    return loss;
}

/* One step of an n-body system, positions and velocities updated in place, then an energy-like
 * objective of the new state: the reverse sweep needs the overwritten values. */
// @diff(nbody_grad: (dup, dup, const, const, const) -> activeonly;
//       nbody_fwd: (dual, dual, const, const, const) -> dualonly;
//       nbody_fwd8: forward[8] (dual, dual, const, const, const) -> dualonly)
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

/* A 2-D heat equation on an n x n grid with fixed boundaries, `steps` explicit steps from the
 * field u (updated in place, through a scratch grid), then the field's squared norm. */
// @diff(heat_grad: (dup, dup, const, active, const) -> activeonly;
//       heat_fwd: (dual, dual, const, dual, const) -> dualonly;
//       heat_fwd8: forward[8] (dual, dual, const, dual, const) -> dualonly)
double heat(double *u, double *scratch, int n, double alpha, int steps)
{
    for (int s = 0; s < steps; s++) {
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                scratch[i * n + j] = u[i * n + j] + alpha * (u[(i - 1) * n + j] + u[(i + 1) * n + j] +
                                                             u[i * n + j - 1] + u[i * n + j + 1] - 4.0 * u[i * n + j]);
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                u[i * n + j] = scratch[i * n + j];
    }
    double e = 0;
    for (int i = 0; i < n * n; i++)
        e += u[i] * u[i];
    return e;
}

/* The forward-mode design kernel: a loop mixing products, sin and exp. */
// @diff(sinexp_grad: (dup, const) -> activeonly;
//       sinexp_fwd: (dual, const) -> dualonly;
//       sinexp_fwd8: forward[8] (dual, const) -> dualonly;
//       sinexp_hvp: forward of sinexp_grad (dual, dual, const, const))
double sinexp(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += sin(x[i]) * exp(0.5 * x[i]) * x[i];
    return s;
}

/* ADBench's GMM objective, shaped as its C code is: temporaries allocated once and reused for
 * every point and component (so the reverse sweep needs values that are overwritten), icf
 * holding each component's log-diagonal then the strictly lower triangle of its inverse
 * Cholesky factor, log-sum-exp over components, and a Wishart prior. The result goes to *err. */
static double arr_max(int n, const double *x)
{
    double m = x[0];
    for (int i = 1; i < n; i++)
        if (m < x[i])
            m = x[i];
    return m;
}

static double sqnorm(int n, const double *x)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return s;
}

static void subtract(int d, const double *x, const double *y, double *out)
{
    for (int id = 0; id < d; id++)
        out[id] = x[id] - y[id];
}

static double log_sum_exp(int n, const double *x)
{
    double mx = arr_max(n, x), s = 0;
    for (int i = 0; i < n; i++)
        s += exp(x[i] - mx);
    return log(s) + mx;
}

/* out = L x, L lower triangular with diagonal qdiag and below it the entries of ltri by columns */
static void qtimesx(int d, const double *qdiag, const double *ltri, const double *x, double *out)
{
    for (int id = 0; id < d; id++)
        out[id] = qdiag[id] * x[id];
    int at = 0;
    for (int i = 0; i < d; i++)
        for (int j = i + 1; j < d; j++)
            out[j] += ltri[at++] * x[i];
}

// @diff(gmm_objective_grad: (const, const, const, dup, dup, dup, const, const, const, dup);
//       gmm_objective_fwd: (const, const, const, dual, dual, dual, const, const, const, dual);
//       gmm_objective_fwd8: forward[8] (const, const, const, dual, dual, dual, const, const, const, dual))
void gmm_objective(int d, int k, int n, const double *alphas, const double *means, const double *icf,
                   const double *x, double wishart_gamma, int wishart_m, double *err)
{
    int icf_sz = d * (d + 1) / 2;
    double *qdiags = malloc(sizeof(double) * d * k), *sum_qs = malloc(sizeof(double) * k);
    double *xcentered = malloc(sizeof(double) * d), *qxcentered = malloc(sizeof(double) * d);
    double *main_term = malloc(sizeof(double) * k);
    for (int ik = 0; ik < k; ik++) {
        sum_qs[ik] = 0;
        for (int id = 0; id < d; id++) {
            double q = icf[ik * icf_sz + id];
            sum_qs[ik] += q;
            qdiags[ik * d + id] = exp(q);
        }
    }
    double slse = 0;
    for (int ix = 0; ix < n; ix++) {
        for (int ik = 0; ik < k; ik++) {
            subtract(d, &x[ix * d], &means[ik * d], xcentered);
            qtimesx(d, &qdiags[ik * d], &icf[ik * icf_sz + d], xcentered, qxcentered);
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sqnorm(d, qxcentered);
        }
        slse += log_sum_exp(k, main_term);
    }
    double lse_alphas = log_sum_exp(k, alphas);
    double prior = 0;
    for (int ik = 0; ik < k; ik++) {
        double frobenius = sqnorm(d, &qdiags[ik * d]) + sqnorm(icf_sz - d, &icf[ik * icf_sz + d]);
        prior += 0.5 * wishart_gamma * wishart_gamma * frobenius - wishart_m * sum_qs[ik];
    }
    *err = -0.5 * n * d * 1.8378770664093453 + slse - n * lse_alphas + prior;
    free(qdiags);
    free(sum_qs);
    free(xcentered);
    free(qxcentered);
    free(main_term);
}

/* ADBench's bundle-adjustment residual for one observation, the function whose gradients
 * build the Jacobian two rows at a time: a camera of 11 numbers (Rodrigues rotation, centre,
 * focal length, principal point, two radial distortion coefficients), a 3-D point, a weight
 * and the observed feature; err gets the weighted 2-D reprojection error. Small functions,
 * called once per observation and output. */
static void cross(const double *a, const double *b, double *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

static void rodrigues_rotate_point(const double *rot, const double *pt, double *rotated)
{
    double sqtheta = sqnorm(3, rot);
    if (sqtheta != 0) {
        double theta = sqrt(sqtheta), costheta = cos(theta), sintheta = sin(theta), inv = 1.0 / theta;
        double w[3] = { rot[0] * inv, rot[1] * inv, rot[2] * inv }, w_cross_pt[3];
        cross(w, pt, w_cross_pt);
        double tmp = (w[0] * pt[0] + w[1] * pt[1] + w[2] * pt[2]) * (1.0 - costheta);
        for (int i = 0; i < 3; i++)
            rotated[i] = pt[i] * costheta + w_cross_pt[i] * sintheta + w[i] * tmp;
    } else {
        double rot_cross_pt[3];
        cross(rot, pt, rot_cross_pt);
        for (int i = 0; i < 3; i++)
            rotated[i] = pt[i] + rot_cross_pt[i];
    }
}

static void radial_distort(const double *rad, double *proj)
{
    double rsq = proj[0] * proj[0] + proj[1] * proj[1], l = 1.0 + rad[0] * rsq + rad[1] * rsq * rsq;
    proj[0] *= l;
    proj[1] *= l;
}

static void project(const double *cam, const double *X, double *proj)
{
    double Xo[3] = { X[0] - cam[3], X[1] - cam[4], X[2] - cam[5] }, Xcam[3];
    rodrigues_rotate_point(cam, Xo, Xcam);
    proj[0] = Xcam[0] / Xcam[2];
    proj[1] = Xcam[1] / Xcam[2];
    radial_distort(&cam[9], proj);
    proj[0] = proj[0] * cam[6] + cam[7];
    proj[1] = proj[1] * cam[6] + cam[8];
}

// @diff(reproj_error_grad: (dup, dup, dup, const, dup);
//       reproj_error_fwd: (dual, dual, dual, const, dual);
//       reproj_error_fwd8: forward[8] (dual, dual, dual, const, dual))
void reproj_error(const double *cam, const double *X, const double *w, const double *feat, double *err)
{
    double proj[2];
    project(cam, X, proj);
    err[0] = *w * (proj[0] - feat[0]);
    err[1] = *w * (proj[1] - feat[1]);
}
