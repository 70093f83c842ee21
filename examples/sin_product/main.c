#include "../check.h"
#include "sin_product.adgen.h"

double f(double x, double y);

int main(void)
{
    const double x = 1.3, y = 0.4, h = 1e-6;
    f_tangent_result dx = f_tangent(x, 1.0, y, 0.0);
    f_tangent_result dy = f_tangent(x, 0.0, y, 1.0);
    f_tangent_result dv = f_tangent(x, 0.6, y, -0.8);
    printf("f(%.2f, %.2f) = %.9f\n", x, y, dx.ret);
    check("df/dx", dx.d_ret, CENTRAL(f(x + h, y), f(x - h, y), h));
    check("df/dy", dy.d_ret, CENTRAL(f(x, y + h), f(x, y - h), h));
    check("df/d(0.6, -0.8)", dv.d_ret, CENTRAL(f(x + 0.6 * h, y - 0.8 * h), f(x - 0.6 * h, y + 0.8 * h), h));
    return failures != 0;
}
