#include "../check.h"

void normalize(double *restrict out, const double *restrict in, int n);
void normalize_grad(double *out, double *d_out, const double *in, double *d_in, int n);
void normalize_jvp(double *out, double *d_out, const double *in, const double *d_in, int n);
void normalize_forward(double *out, double *d_out, const double *in, double *d_in, int n, void *tape);
void normalize_reverse(double *out, double *d_out, const double *in, double *d_in, int n, void *tape);

#define N 4

/* sum_i w_i out_i(in): its gradient is J^T w */
static double weighted(const double *in, const double *w)
{
    double out[N], s = 0;
    normalize(out, in, N);
    for (int i = 0; i < N; i++)
        s += w[i] * out[i];
    return s;
}

int main(void)
{
    double in[N] = { 1.0, -2.0, 0.5, 3.0 }, w[N] = { 0.3, -1.0, 2.0, 0.7 }, v[N] = { 1.0, 0.5, -0.5, 2.0 };
    double out[N], d_out[N], d_in[N] = { 0 }, fd[N], h = 1e-6;

    printf("__enzyme_autodiff, the gradient of sum_i w_i out_i:\n");
    for (int i = 0; i < N; i++)
        d_out[i] = w[i];
    normalize_grad(out, d_out, in, d_in, N);
    for (int i = 0; i < N; i++) {
        double up[N], down[N];
        for (int j = 0; j < N; j++)
            up[j] = down[j] = in[j];
        up[i] += h, down[i] -= h;
        fd[i] = CENTRAL(weighted(up, w), weighted(down, w), h);
        char name[32];
        snprintf(name, sizeof name, "  d / d in[%d]", i);
        check(name, d_in[i], fd[i]);
    }

    printf("__enzyme_fwddiff, out's derivative along v:\n");
    double jv[N], up[N], down[N], o_up[N], o_down[N];
    normalize_jvp(out, jv, in, v, N);
    for (int j = 0; j < N; j++)
        up[j] = in[j] + h * v[j], down[j] = in[j] - h * v[j];
    normalize(o_up, up, N);
    normalize(o_down, down, N);
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "  (J v)[%d]", i);
        check(name, jv[i], CENTRAL(o_up[i], o_down[i], h));
    }

    printf("__enzyme_augmentfwd now, __enzyme_reverse later (the tape in 256 bytes of ours):\n");
    _Alignas(16) char tape[256];
    double d_in2[N] = { 0 };
    normalize_forward(out, d_out, in, d_in2, N, tape);
    for (int i = 0; i < N; i++)
        d_out[i] = w[i]; /* the seed may be set between the two halves */
    normalize_reverse(out, d_out, in, d_in2, N, tape);
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "  d / d in[%d]", i);
        check(name, d_in2[i], fd[i]);
    }
    return failures != 0;
}
