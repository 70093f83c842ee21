#include <math.h>
#include <stdio.h>
#include "spring.adgen.h"

void report(const char *what, double value, double check);

int main(void)
{
    enum { N = 5 };
    double x[N] = { 0.0, 1.3, 2.1, 3.6, 4.2 }, g[N] = { 0 };
    spring_params p = { 4.0, 1.0 };
    spring_energy_grad(x, g, N, &p, 1.0);
    int failures = 0;
    for (int i = 0; i < N; i++) {
        double h = 1e-6, xp[N], xm[N];
        for (int j = 0; j < N; j++)
            xp[j] = xm[j] = x[j];
        xp[i] += h;
        xm[i] -= h;
        double fd = (spring_energy(xp, N, &p) - spring_energy(xm, N, &p)) / (2 * h);
        char what[32];
        snprintf(what, sizeof what, "d energy / d x[%d]", i);
        report(what, g[i], fd);
        failures += fabs(g[i] - fd) > 1e-6 * fmax(1.0, fabs(fd));
    }
    return failures != 0;
}
