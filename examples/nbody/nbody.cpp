/* The n-body simulator of the seeds' Enzyme talk, in C++: planets in a std::vector, a vec3 with
 * operators, a force function. adgen differentiates the energy after some leapfrog steps with
 * respect to every planet's position, velocity and mass, and a planet's kinetic energy with
 * respect to the planet passed by value. */
#include "nbody.h"

#include <cmath>

namespace nbody {

static vec3 force(const Planet &a, const Planet &b) {
    vec3 d = b.pos - a.pos;
    double r2 = d.norm2() + 1e-3;  // softened
    return d * (a.mass * b.mass / (r2 * std::sqrt(r2)));
}

// @diff(kinetic_grad: (active) -> active)
double kinetic(Planet p) { return 0.5 * p.mass * p.vel.norm2(); }

// @diff(energy_grad: (dup, const, const) -> active)
double energy_after(const std::vector<Planet> &start, int steps, double dt) {
    std::vector<Planet> ps = start;
    std::vector<vec3> f(ps.size());
    for (int s = 0; s < steps; s++) {
        for (vec3 &fi : f) fi = vec3{};
        for (size_t i = 0; i < ps.size(); i++)
            for (size_t j = 0; j < ps.size(); j++)
                if (i != j) f[i] += force(ps[i], ps[j]);
        for (size_t i = 0; i < ps.size(); i++) {
            ps[i].vel += f[i] * (dt / ps[i].mass);
            ps[i].pos += ps[i].vel * dt;
        }
    }
    double e = 0;
    for (size_t i = 0; i < ps.size(); i++) {
        e += kinetic(ps[i]);
        for (size_t j = 0; j < i; j++)
            e -= ps[i].mass * ps[j].mass / std::sqrt((ps[i].pos - ps[j].pos).norm2() + 1e-3);
    }
    return e;
}

}  // namespace nbody
