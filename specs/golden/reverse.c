/* Reverse mode: dup, duponly, dupv, activeonly, widths, and types from a header. */
#include "include/geometry.h"

// @diff(norm_grad: (dup, const) -> activeonly)
// @diff(norm_grad2: reverse[2] (dup, const) -> active)
// @diff(norm_gradv: reverse[4] (dupv, const) -> activeonly)
double norm(const vec3 *restrict v, size_t n);

// @diff(dot_grad: (duponly, dup, const) -> activeonly)
double dot(const_reals a, double *b, int n);

// @diff(lerp_grad: reverse[2] (active, active, const) -> active)
double lerp(double a, double b, double t);

// @diff(axpy_grad: (active, dup, dup, const))
void axpy(double alpha, const double x[], double y[], int n);
