/* Shared by the examples' drivers: print a derivative beside its central finite difference. */
#ifndef ADGEN_EXAMPLE_CHECK_H
#define ADGEN_EXAMPLE_CHECK_H
#include <math.h>
#include <stdio.h>

static int failures = 0;

static void check(const char *what, double derivative, double finite_difference)
{
    double error = fabs(derivative - finite_difference) / fmax(1.0, fabs(finite_difference));
    int ok = error < 1e-6;
    printf("%-30s %15.9f   finite differences %15.9f   %s\n", what, derivative, finite_difference,
           ok ? "ok" : "MISMATCH");
    failures += !ok;
}

/* Central difference of f at x in the direction of one argument. */
#define CENTRAL(expr_plus, expr_minus, h) (((expr_plus) - (expr_minus)) / (2 * (h)))

#endif
