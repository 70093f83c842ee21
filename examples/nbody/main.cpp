#include "../check.h"
#include "nbody.h"
#include "nbody.adgen.h"

using nbody::Planet;

int main() {
    std::vector<Planet> planets = {
        {{0, 0, 0}, {0, 0, 0.01}, 10.0}, {{1, 0, 0.1}, {0, 3, 0}, 0.1}, {{-1.5, 0.2, 0}, {0.1, -2.5, 0}, 0.2}};
    const int steps = 100;
    const double dt = 0.001, h = 1e-6;

    printf("energy after %d steps: gradient by reverse mode, one call (nbody::energy_grad)\n", steps);
    std::vector<Planet> grad(planets.size(), Planet{{}, {}, 0.0});  // the shadow: the same shape, zeros
    double e = nbody::energy_grad(planets, grad, steps, dt, 1.0);
    printf("energy %.9f\n", e);
    for (size_t i = 0; i < planets.size(); i++) {
        double *value[] = {&planets[i].pos.x, &planets[i].vel.y, &planets[i].mass};
        double derivative[] = {grad[i].pos.x, grad[i].vel.y, grad[i].mass};
        const char *names[] = {"pos.x", "vel.y", "mass"};
        for (int k = 0; k < 3; k++) {
            double keep = *value[k];
            *value[k] = keep + h;
            double up = nbody::energy_after(planets, steps, dt);
            *value[k] = keep - h;
            double down = nbody::energy_after(planets, steps, dt);
            *value[k] = keep;
            char what[64];
            snprintf(what, sizeof what, "  d energy / d planet %zu %s", i, names[k]);
            check(what, derivative[k], CENTRAL(up, down, h));
        }
    }

    printf("a planet by value: its gradient a Planet (nbody::kinetic_grad)\n");
    Planet p = planets[1];
    nbody::kinetic_grad_result k = kinetic_grad(p, 1.0);  // found by argument-dependent lookup
    Planet plus = p, minus = p;
    plus.vel.y += h;
    minus.vel.y -= h;
    check("  d kinetic / d vel.y", k.d_p.vel.y, CENTRAL(nbody::kinetic(plus), nbody::kinetic(minus), h));
    plus = p, minus = p;
    plus.mass += h;
    minus.mass -= h;
    check("  d kinetic / d mass", k.d_p.mass, CENTRAL(nbody::kinetic(plus), nbody::kinetic(minus), h));
    return failures != 0;
}
