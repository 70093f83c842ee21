#include "../check.h"
#include "helper_loop.adgen.h"

double total(const double *x, int n, double width);

int main(void)
{
    enum { N = 5 };
    const double h = 1e-6, width = 0.8;
    double x[N] = { -1.0, -0.4, 0.1, 0.7, 1.2 }, zero[N] = { 0 };
    for (int k = 0; k < N; k++) {
        double seed[N] = { 0 }, xp[N], xm[N];
        seed[k] = 1.0;
        for (int i = 0; i < N; i++) {
            xp[i] = x[i] + (i == k) * h;
            xm[i] = x[i] - (i == k) * h;
        }
        char what[64];
        snprintf(what, sizeof what, "d total / d x[%d]", k);
        check(what, total_tangent(x, seed, N, width, 0.0), CENTRAL(total(xp, N, width), total(xm, N, width), h));
    }
    check("d total / d width", total_tangent(x, zero, N, width, 1.0),
          CENTRAL(total(x, N, width + h), total(x, N, width - h), h));
    return failures != 0;
}
