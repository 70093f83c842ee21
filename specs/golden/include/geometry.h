#ifndef GEOMETRY_H
#define GEOMETRY_H
#include <stddef.h>

typedef struct { double x, y, z; } vec3;
typedef const double *const_reals;

#endif
