#include <math.h>
#include "spring.h"

/* The chain's elastic energy, STIFFNESS_SCALE coming from the build's compile definitions. */
// @diff(spring_energy_grad: (dup, const, const) -> activeonly)
double spring_energy(const double *x, int n, const spring_params *p)
{
    double e = 0;
    for (int i = 0; i < n - 1; i++) {
        double stretch = fabs(x[i + 1] - x[i]) - p->rest_length;
        e += 0.5 * STIFFNESS_SCALE * p->stiffness * stretch * stretch;
    }
    return e;
}
