/* The seeds' relu3: pow(x, 3) under a branch. Differentiated after optimization, the
 * derivative is what you would write by hand: 3 x^2 for x > 0, else 0. */
#include <math.h>

// @diff(relu3_tangent: (dual) -> dualonly)
double relu3(double x)
{
    double result;
    if (x > 0)
        result = pow(x, 3);
    else
        result = 0;
    return result;
}
