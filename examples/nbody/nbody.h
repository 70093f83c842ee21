/* The n-body simulator's types and functions (nbody.cpp). */
#ifndef NBODY_H
#define NBODY_H
#include <vector>

namespace nbody {
struct vec3 {
    double x = 0, y = 0, z = 0;
    vec3 operator+(const vec3 &o) const { return {x + o.x, y + o.y, z + o.z}; }
    vec3 operator-(const vec3 &o) const { return {x - o.x, y - o.y, z - o.z}; }
    vec3 operator*(double s) const { return {x * s, y * s, z * s}; }
    vec3 &operator+=(const vec3 &o) { x += o.x; y += o.y; z += o.z; return *this; }
    double norm2() const { return x * x + y * y + z * z; }
};
struct Planet { vec3 pos, vel; double mass; };

double kinetic(Planet p);
double energy_after(const std::vector<Planet> &start, int steps, double dt);
}  // namespace nbody
#endif
