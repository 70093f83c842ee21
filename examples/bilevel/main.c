#include <stdio.h>
#include <string.h>
#include "../check.h"
#include "bilevel.adgen.h"

double landing(const double *x0, const double *p, int n, int steps);

enum { N = 4, STEPS = 5 };

int main(void)
{
    const double x0[N] = {0.1, 0.4, 0.6, 0.9};
    double p[N] = {0.5, 0.8, 1.2, 1.5};

    /* the gradient in p of where the particle lands, against finite differences */
    double dp[N] = {0};
    landing_grad(x0, p, dp, N, STEPS, 1.0);
    for (int i = 0; i < N; i++) {
        const double h = 1e-6;
        double e[N] = {0}, up[N], down[N];
        e[i] = 1;
        for (int k = 0; k < N; k++) {
            up[k] = p[k] + h * e[k];
            down[k] = p[k] - h * e[k];
        }
        double fd = CENTRAL(landing(x0, up, N, STEPS), landing(x0, down, N, STEPS), h);
        char what[40];
        snprintf(what, sizeof what, "d landing / d p[%d]", i);
        check(what, dp[i], fd);
        snprintf(what, sizeof what, "  the same, forward mode");
        check(what, landing_dir(x0, p, e, N, STEPS), fd);
    }

    /* the outer problem: gradient descent on p */
    double before = landing(x0, p, N, STEPS);
    for (int it = 0; it < 200; it++) {
        memset(dp, 0, sizeof dp);
        landing_grad(x0, p, dp, N, STEPS, 1.0);
        for (int i = 0; i < N; i++)
            p[i] -= 0.05 * dp[i];
    }
    printf("landing: %.6f before, %.6f after 200 outer steps\n", before, landing(x0, p, N, STEPS));
    return failures != 0;
}
