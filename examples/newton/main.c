#include <string.h>
#include "../check.h"
#include "newton.adgen.h"

double rosen(const double *x, int n);

enum { N = 10 };

static double dot(const double *a, const double *b)
{
    double s = 0;
    for (int i = 0; i < N; i++)
        s += a[i] * b[i];
    return s;
}

static void gradient(const double *x, double *g)
{
    memset(g, 0, N * sizeof *g);
    rosen_grad(x, g, N, 1.0);
}

/* H v at x, from one call (the gradient it also computes goes to scratch) */
static void hessian_times(const double *x, const double *v, double *hv)
{
    double g[N] = {0};
    memset(hv, 0, N * sizeof *hv);
    rosen_hvp(x, v, g, hv, N, 1.0);
}

/* p ~ -H^-1 g by conjugate gradients, stopping at negative curvature */
static void newton_direction(const double *x, const double *g, double *p)
{
    double r[N], d[N], hd[N];
    for (int i = 0; i < N; i++) {
        p[i] = 0;
        r[i] = -g[i];
        d[i] = r[i];
    }
    double rr = dot(r, r);
    for (int k = 0; k < 2 * N && rr > 1e-24; k++) {
        hessian_times(x, d, hd);
        double curvature = dot(d, hd);
        if (curvature <= 0) {
            if (k == 0)
                memcpy(p, r, sizeof r);  /* steepest descent */
            return;
        }
        double alpha = rr / curvature;
        for (int i = 0; i < N; i++) {
            p[i] += alpha * d[i];
            r[i] -= alpha * hd[i];
        }
        double next = dot(r, r);
        for (int i = 0; i < N; i++)
            d[i] = r[i] + next / rr * d[i];
        rr = next;
    }
}

int main(void)
{
    double x[N], g[N], p[N], v[N], hv[N], plus[N], minus[N], xp[N], xm[N];
    const double h = 1e-6;
    for (int i = 0; i < N; i++) {
        x[i] = 0.2 * i - 0.5;
        v[i] = cos(i);
    }
    /* H v against central differences of the gradient */
    hessian_times(x, v, hv);
    for (int i = 0; i < N; i++) {
        xp[i] = x[i] + h * v[i];
        xm[i] = x[i] - h * v[i];
    }
    gradient(xp, plus);
    gradient(xm, minus);
    check("(H v)[0]", hv[0], CENTRAL(plus[0], minus[0], h));
    check("(H v)[5]", hv[5], CENTRAL(plus[5], minus[5], h));

    /* Newton-CG with a backtracking line search */
    int step = 0;
    for (; step < 100; step++) {
        gradient(x, g);
        double f = rosen(x, N);
        if (sqrt(dot(g, g)) < 1e-9)
            break;
        newton_direction(x, g, p);
        double t = 1;
        while (t > 1e-12) {
            double trial[N];
            for (int i = 0; i < N; i++)
                trial[i] = x[i] + t * p[i];
            if (rosen(trial, N) <= f + 1e-4 * t * dot(g, p)) {
                memcpy(x, trial, sizeof x);
                break;
            }
            t /= 2;
        }
        if (step % 5 == 0)
            printf("step %2d: f = %.3e, |g| = %.3e, step length %g\n", step, f, sqrt(dot(g, g)), t);
    }
    double worst = 0;
    for (int i = 0; i < N; i++)
        worst = fmax(worst, fabs(x[i] - 1));
    printf("minimum after %d Newton steps: f = %.3e, max |x_i - 1| = %.1e\n", step, rosen(x, N), worst);
    return failures != 0 || worst > 1e-8;
}
