#include "../check.h"
#include "rosenbrock.adgen.h"

double rosen(double a, double b, double x, double y);

int main(void)
{
    const double a = 1.0, b = 100.0, x = -1.2, y = 1.0, h = 1e-6;
    const double fd_x = CENTRAL(rosen(a, b, x + h, y), rosen(a, b, x - h, y), h);
    const double fd_y = CENTRAL(rosen(a, b, x, y + h), rosen(a, b, x, y - h), h);

    rosen_grad_result g = rosen_grad(a, b, x, y, 1.0);
    printf("rosen(%.1f, %.1f) = %.9f\n", x, y, g.ret);
    printf("reverse mode, one call for the whole gradient:\n");
    check("  d rosen / dx", g.d_x, fd_x);
    check("  d rosen / dy", g.d_y, fd_y);

    printf("forward mode, one direction per call:\n");
    check("  d rosen / dx", rosen_tangent(a, b, x, 1.0, y, 0.0).d_ret, fd_x);
    check("  d rosen / dy", rosen_tangent(a, b, x, 0.0, y, 1.0).d_ret, fd_y);

    printf("forward mode, width 4: four directions in one call:\n");
    rosen_tangent4_result t = rosen_tangent4(a, b, x, 1.0, 0.0, 1.0, 0.5, y, 0.0, 1.0, -1.0, 2.0);
    const double dirs[4][2] = { { 1, 0 }, { 0, 1 }, { 1, -1 }, { 0.5, 2 } };
    for (int k = 0; k < 4; k++) {
        char what[64];
        snprintf(what, sizeof what, "  along (%.1f, %.1f)", dirs[k][0], dirs[k][1]);
        check(what, t.d_ret[k], dirs[k][0] * fd_x + dirs[k][1] * fd_y);
    }
    return failures != 0;
}
