#include "../check.h"
#include "batched_square.adgen.h"

double square(double x);

int main(void)
{
    const double x = 3.0, h = 1e-6;
    const double fd = CENTRAL(square(x + h), square(x - h), h);
    char what[64];
    square_1_result one = square_1(x, 1.0);
    check("width 1, seed 1", one.d_ret, fd);
    square_2_result two = square_2(x, 1.0, 2.0);
    for (int k = 0; k < 2; k++) {
        snprintf(what, sizeof what, "width 2, seed %d", k + 1);
        check(what, two.d_ret[k], (k + 1) * fd);
    }
    square_4_result four = square_4(x, 1.0, 2.0, 3.0, 4.0);
    for (int k = 0; k < 4; k++) {
        snprintf(what, sizeof what, "width 4, seed %d", k + 1);
        check(what, four.d_ret[k], (k + 1) * fd);
    }
    square_8_result eight = square_8(x, 1, 2, 3, 4, 5, 6, 7, 8);
    for (int k = 0; k < 8; k++) {
        snprintf(what, sizeof what, "width 8, seed %d", k + 1);
        check(what, eight.d_ret[k], (k + 1) * fd);
    }
    return failures != 0;
}
