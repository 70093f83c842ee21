/* Structs and complex numbers passed by value: derivatives of the same type (specs/abi.md). */
#include <complex.h>
#include "include/by_value.h"

// @diff(prior_grad: (active, active) -> active; prior_fwd: (dual, const) -> dual)
double prior(double x, wishart w);

// @diff(span_grad: (active, const) -> active; span_fwd: forward[2] (dual, dual) -> dualonly)
struct range span(double a, double b);

// @diff(mobius_grad: (active, const) -> activeonly)
double complex mobius(double complex z, double complex c);
