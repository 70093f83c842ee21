/* Code written for Enzyme's C API, unchanged: `adgen cc` builds it with no LLVM plugin. The
 * seeds' vector normalization (out = in / |in|), its gradient through __enzyme_autodiff, a
 * Jacobian-vector product through __enzyme_fwddiff, and the gradient again in two halves
 * (__enzyme_augmentfwd now, __enzyme_reverse later) with the tape in the caller's memory. */
#include <math.h>

extern int enzyme_dup, enzyme_const, enzyme_allocated, enzyme_tape;
void __enzyme_autodiff(void *, ...);
void __enzyme_fwddiff(void *, ...);
void __enzyme_augmentfwd(void *, ...);
void __enzyme_reverse(void *, ...);

static double mag(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}

void normalize(double *restrict out, const double *restrict in, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = in[i] / mag(in, n); /* O(n^2) as written; optimized (restrict), mag is hoisted: O(n) */
}

/* d_in += J^T d_out (d_out is zeroed) */
void normalize_grad(double *out, double *d_out, const double *in, double *d_in, int n)
{
    __enzyme_autodiff((void *)normalize, enzyme_dup, out, d_out, enzyme_dup, in, d_in, enzyme_const, n);
}

/* d_out = J d_in */
void normalize_jvp(double *out, double *d_out, const double *in, const double *d_in, int n)
{
    __enzyme_fwddiff((void *)normalize, enzyme_dup, out, d_out, enzyme_dup, in, d_in, enzyme_const, n);
}

#define TAPE 256
void normalize_forward(double *out, double *d_out, const double *in, double *d_in, int n, void *tape)
{
    __enzyme_augmentfwd((void *)normalize, enzyme_dup, out, d_out, enzyme_dup, in, d_in, enzyme_const, n,
                        enzyme_allocated, TAPE, enzyme_tape, tape);
}

void normalize_reverse(double *out, double *d_out, const double *in, double *d_in, int n, void *tape)
{
    __enzyme_reverse((void *)normalize, enzyme_dup, out, d_out, enzyme_dup, in, d_in, enzyme_const, n,
                     enzyme_allocated, TAPE, enzyme_tape, tape);
}
