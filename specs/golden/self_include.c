/* A source that includes its own generated header and defines the type it uses. */
#include <stdio.h>

typedef struct particle { double pos[3]; double mass; } particle;

// @diff(energy_grad: (dup, const) -> activeonly)
double energy(const particle *p, int n);

#include "self_include.adgen.h"

int main(void)
{
    particle p = {{1, 2, 3}, 4}, dp = {{0}, 0};
    energy_grad(&p, &dp, 1, 1.0);
    printf("%g\n", dp.mass);
    return 0;
}
