/* Forward mode: dual, dualonly, dualv and widths. */
#include <math.h>

/* @diff(f_tangent: (dual, dual) -> dual;
 *       f_tangent_only: (dual, const) -> dualonly;
 *       f_batch: forward[4] (dual, const) -> dual;
 *       f_interleaved: forward[8] (dualv, dualv) -> dualonly) */
double f(double x, double y)
{
    return x * x * sin(y);
}

// @diff(scale_fwd: forward[2] (dual, const, dual, const))
void scale(const float *in, float s, float *out, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = s * in[i];
}
