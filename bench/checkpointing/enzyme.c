/* Enzyme's gradients of the same kernels, for driver.c (clang-19 with Enzyme's plugin); the
 * result reported is 0 (Enzyme's call gives the gradient only). */
#include "kernels.c"

extern int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);

double gradient(const char *kernel, const char *mode, double **x, double **dx, int *ints, int *count)
{
    int size = ints[0], steps = ints[1];
    (void)mode;
    (void)count;
    if (kernel[0] == 'h') {
        __enzyme_autodiff((void *)heat2d, enzyme_dup, x[0], dx[0], enzyme_dup, x[1], dx[1], enzyme_const, size,
                          enzyme_const, steps);
        return 0;
    }
    if (kernel[1] == 'k') {
        __enzyme_autodiff((void *)rk4, enzyme_dup, x[0], dx[0], enzyme_dup, x[1], dx[1], enzyme_const, size,
                          enzyme_const, steps, enzyme_const, 0.01);
        return 0;
    }
    __enzyme_autodiff((void *)rnn, enzyme_dup, x[0], dx[0], enzyme_const, x[1], enzyme_dup, x[2], dx[2], enzyme_dup,
                      x[2] + size, dx[2] + size, enzyme_const, size, enzyme_const, ints[2], enzyme_const, steps);
    return 0;
}
