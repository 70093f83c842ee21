#ifndef SPRING_H
#define SPRING_H

/* A chain of masses joined by springs. */
typedef struct {
    double stiffness;
    double rest_length;
} spring_params;

double spring_energy(const double *x, int n, const spring_params *p);

#endif
