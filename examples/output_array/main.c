#include "../check.h"
#include "output_array.adgen.h"

void softplus(const double *x, double *y, int n);

int main(void)
{
    enum { N = 4 };
    const double h = 1e-6;
    double x[N] = { -2.0, -0.5, 0.25, 1.5 }, dx[N] = { 1.0, 1.0, 1.0, 1.0 };
    double y[N], dy[N], yp[N], ym[N], xp[N], xm[N];
    softplus_tangent(x, dx, y, dy, N);
    for (int i = 0; i < N; i++) {
        xp[i] = x[i] + h;
        xm[i] = x[i] - h;
    }
    softplus(xp, yp, N);
    softplus(xm, ym, N);
    for (int i = 0; i < N; i++) {
        char what[64];
        snprintf(what, sizeof what, "dy[%d]/dx[%d]", i, i);
        check(what, dy[i], CENTRAL(yp[i], ym[i], h));
    }
    return failures != 0;
}
