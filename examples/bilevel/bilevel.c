/* Bilevel optimization: a particle descends a potential shaped by parameters p for a few
 * steps, with the gradient adgen makes of the potential; the outer problem chooses p so that
 * the particle ends near a target, with the gradient adgen makes of that whole descent, which
 * differentiates the inner gradient's own code (the "particle" problem of AD benchmarks). */
#include <math.h>
#include <string.h>
#include "bilevel.adgen.h"

enum { N_MAX = 8 };

// @size(x=n, d_x=n, p=n, d_p=n, x0=n, n=4, steps=5)  (what `adgen check bilevel.c` calls with)

/* the potential the particle at x feels */
// @diff(potential_grad: (dup, const, const) -> active)
double potential(const double *x, const double *p, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += p[i] * x[i] * x[i] + sin(x[i] * p[(i + 1) % n]);
    return s;
}

/* `steps` steps of gradient descent on the potential from x0, then the squared distance from
 * the target 1 */
// @diff(landing_grad: (const, dup, const, const) -> active)
// @diff(landing_dir: forward (const, dual, const, const) -> dualonly)
double landing(const double *x0, const double *p, int n, int steps)
{
    double x[N_MAX], g[N_MAX];
    memcpy(x, x0, n * sizeof *x);
    for (int t = 0; t < steps; t++) {
        memset(g, 0, n * sizeof *g);
        potential_grad(x, g, p, n, 1.0);
        for (int i = 0; i < n; i++)
            x[i] -= 0.1 * g[i];
    }
    double f = 0;
    for (int i = 0; i < n; i++)
        f += (x[i] - 1) * (x[i] - 1);
    return f;
}
