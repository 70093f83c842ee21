#include "../include/geometry.h"

double helper(double x);

// @diff(helper: (active) -> active;
//       vec3: (active) -> active)
double f(double x);
