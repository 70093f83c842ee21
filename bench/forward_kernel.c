/* The forward-mode benchmark kernel: a loop over n elements mixing products, sin and exp. */
#include <math.h>

// @diff(kernel_fwd: (dual, const) -> dual;
//       kernel_fwd8: forward[8] (dual, const) -> dual;
//       kernel_fwd8v: forward[8] (dualv, const) -> dual)
double kernel(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += sin(x[i]) * exp(0.5 * x[i]) * x[i];
    return s;
}
