#include "../check.h"
#include "relu3.adgen.h"

double relu3(double x);

int main(void)
{
    const double h = 1e-6;
    for (double x = -1.5; x <= 2.0; x += 0.875) {
        char what[64];
        snprintf(what, sizeof what, "relu3'(%.3f)", x);
        check(what, relu3_tangent(x, 1.0), CENTRAL(relu3(x + h), relu3(x - h), h));
    }
    return failures != 0;
}
