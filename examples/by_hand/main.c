#include "../check.h"
#include "by_hand.adgen.h"

double volume(double a, double b);

int main(void)
{
    const double h = 1e-6, a = 1.5, b = 4.0;
    volume_grad_result g = volume_grad(a, b, 1.0);
    check("d volume / d a (reverse)", g.d_a, CENTRAL(volume(a + h, b), volume(a - h, b), h));
    check("d volume / d b (reverse)", g.d_b, CENTRAL(volume(a, b + h), volume(a, b - h), h));
    check("d volume / d a (forward)", volume_tangent(a, 1.0, b, 0.0).d_ret, g.d_a);
    check("d volume / d b (forward)", volume_tangent(a, 0.0, b, 1.0).d_ret, g.d_b);
    return failures != 0;
}
