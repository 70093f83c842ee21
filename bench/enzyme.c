/* The same kernels differentiated by Enzyme, for `python -m bench --enzyme PLUGIN`: compiled by
 * clang-19 with Enzyme's plugin (-O2 -fno-math-errno -march=native), with the primal functions
 * renamed so that they do not clash with kernels.o. NAME_enzyme_grad has the activities of
 * NAME_grad, NAME_enzyme_fwd8 those of NAME_fwd8 (it returns the eight tangents of the result),
 * NAME_enzyme_hvp those of NAME_hvp (forward mode over Enzyme's own gradient). */
#define rosenbrock e_rosenbrock
#define mag e_mag
#define norm e_norm
#define logsumexp e_logsumexp
#define gmm e_gmm
#define ba e_ba
#define lstm e_lstm
#define nbody e_nbody
#define heat e_heat
#define sinexp e_sinexp
#define gmm_objective e_gmm_objective
#define reproj_error e_reproj_error
#include "kernels.c"

extern int enzyme_dup, enzyme_const, enzyme_width;
double __enzyme_autodiff(void *, ...);
typedef struct {
    double d[8];
} lanes8;
lanes8 __enzyme_fwddiff(void *, ...);
void __enzyme_fwddiff_void(void *, ...);

#define D8(p) p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]
#define FWD8 enzyme_width, 8

void rosenbrock_enzyme_grad(const double *x, double *gx, int n)
{
    __enzyme_autodiff((void *)rosenbrock, enzyme_dup, x, gx, enzyme_const, n);
}

lanes8 rosenbrock_enzyme_fwd8(const double *x, double **dx, int n)
{
    return __enzyme_fwddiff((void *)rosenbrock, FWD8, enzyme_dup, x, D8(dx), enzyme_const, n);
}

void rosenbrock_enzyme_hvp(const double *x, const double *v, double *gx, double *hv, int n)
{
    __enzyme_fwddiff_void((void *)rosenbrock_enzyme_grad, enzyme_dup, x, v, enzyme_dup, gx, hv, enzyme_const, n);
}

void norm_enzyme_grad(double *out, double *dout, const double *in, double *din, int n)
{
    __enzyme_autodiff((void *)norm, enzyme_dup, out, dout, enzyme_dup, in, din, enzyme_const, n);
}

void norm_enzyme_fwd8(double *out, double **dout, const double *in, double **din, int n)
{
    __enzyme_fwddiff_void((void *)norm, FWD8, enzyme_dup, out, D8(dout), enzyme_dup, in, D8(din), enzyme_const, n);
}

void logsumexp_enzyme_grad(const double *x, double *gx, int n)
{
    __enzyme_autodiff((void *)logsumexp, enzyme_dup, x, gx, enzyme_const, n);
}

lanes8 logsumexp_enzyme_fwd8(const double *x, double **dx, int n)
{
    return __enzyme_fwddiff((void *)logsumexp, FWD8, enzyme_dup, x, D8(dx), enzyme_const, n);
}

void logsumexp_enzyme_hvp(const double *x, const double *v, double *gx, double *hv, int n)
{
    __enzyme_fwddiff_void((void *)logsumexp_enzyme_grad, enzyme_dup, x, v, enzyme_dup, gx, hv, enzyme_const, n);
}

void gmm_enzyme_grad(const double *al, double *ga, const double *mu, double *gm, const double *lq, double *gq,
                     const double *x, int n, int k, int d)
{
    __enzyme_autodiff((void *)gmm, enzyme_dup, al, ga, enzyme_dup, mu, gm, enzyme_dup, lq, gq, enzyme_const, x,
                      enzyme_const, n, enzyme_const, k, enzyme_const, d);
}

lanes8 gmm_enzyme_fwd8(const double *al, double **da, const double *mu, double **dm, const double *lq, double **dq,
                       const double *x, int n, int k, int d)
{
    return __enzyme_fwddiff((void *)gmm, FWD8, enzyme_dup, al, D8(da), enzyme_dup, mu, D8(dm), enzyme_dup, lq, D8(dq),
                            enzyme_const, x, enzyme_const, n, enzyme_const, k, enzyme_const, d);
}

void ba_enzyme_grad(const double *cams, double *gc, const double *pts, double *gp, const int *obs, const double *feat,
                    int n_obs)
{
    __enzyme_autodiff((void *)ba, enzyme_dup, cams, gc, enzyme_dup, pts, gp, enzyme_const, obs, enzyme_const, feat,
                      enzyme_const, n_obs);
}

lanes8 ba_enzyme_fwd8(const double *cams, double **dc, const double *pts, double **dp, const int *obs,
                      const double *feat, int n_obs)
{
    return __enzyme_fwddiff((void *)ba, FWD8, enzyme_dup, cams, D8(dc), enzyme_dup, pts, D8(dp), enzyme_const, obs,
                            enzyme_const, feat, enzyme_const, n_obs);
}

void lstm_enzyme_grad(const double *W, double *gW, const double *b, double *gb, const double *xs, int T, int H,
                      int layers)
{
    __enzyme_autodiff((void *)lstm, enzyme_dup, W, gW, enzyme_dup, b, gb, enzyme_const, xs, enzyme_const, T,
                      enzyme_const, H, enzyme_const, layers);
}

lanes8 lstm_enzyme_fwd8(const double *W, double **dW, const double *b, double **db, const double *xs, int T, int H,
                        int layers)
{
    return __enzyme_fwddiff((void *)lstm, FWD8, enzyme_dup, W, D8(dW), enzyme_dup, b, D8(db), enzyme_const, xs,
                            enzyme_const, T, enzyme_const, H, enzyme_const, layers);
}

void nbody_enzyme_grad(double *pos, double *gpos, double *vel, double *gvel, const double *mass, int n, double dt)
{
    __enzyme_autodiff((void *)nbody, enzyme_dup, pos, gpos, enzyme_dup, vel, gvel, enzyme_const, mass, enzyme_const,
                      n, enzyme_const, dt);
}

lanes8 nbody_enzyme_fwd8(double *pos, double **dp, double *vel, double **dv, const double *mass, int n, double dt)
{
    return __enzyme_fwddiff((void *)nbody, FWD8, enzyme_dup, pos, D8(dp), enzyme_dup, vel, D8(dv), enzyme_const, mass,
                            enzyme_const, n, enzyme_const, dt);
}

double heat_enzyme_grad(double *u, double *gu, double *s, double *gs, int n, double alpha, int steps)
{
    return __enzyme_autodiff((void *)heat, enzyme_dup, u, gu, enzyme_dup, s, gs, enzyme_const, n, alpha, enzyme_const,
                             steps);
}

lanes8 heat_enzyme_fwd8(double *u, double **du, double *s, double **ds, int n, double alpha, const double *dalpha,
                        int steps)
{
    return __enzyme_fwddiff((void *)heat, FWD8, enzyme_dup, u, D8(du), enzyme_dup, s, D8(ds), enzyme_const, n,
                            alpha, D8(dalpha), enzyme_const, steps);
}

void sinexp_enzyme_grad(const double *x, double *gx, int n)
{
    __enzyme_autodiff((void *)sinexp, enzyme_dup, x, gx, enzyme_const, n);
}

lanes8 sinexp_enzyme_fwd8(const double *x, double **dx, int n)
{
    return __enzyme_fwddiff((void *)sinexp, FWD8, enzyme_dup, x, D8(dx), enzyme_const, n);
}

void sinexp_enzyme_hvp(const double *x, const double *v, double *gx, double *hv, int n)
{
    __enzyme_fwddiff_void((void *)sinexp_enzyme_grad, enzyme_dup, x, v, enzyme_dup, gx, hv, enzyme_const, n);
}

void gmm_objective_enzyme_grad(int d, int k, int n, const double *al, double *ga, const double *mu, double *gm,
                               const double *icf, double *gi, const double *x, double gamma, int m, double *err,
                               double *gerr)
{
    __enzyme_autodiff((void *)gmm_objective, enzyme_const, d, enzyme_const, k, enzyme_const, n, enzyme_dup, al, ga,
                      enzyme_dup, mu, gm, enzyme_dup, icf, gi, enzyme_const, x, enzyme_const, gamma, enzyme_const, m,
                      enzyme_dup, err, gerr);
}

void gmm_objective_enzyme_fwd8(int d, int k, int n, const double *al, double **da, const double *mu, double **dm,
                               const double *icf, double **di, const double *x, double gamma, int m, double *err,
                               double **derr)
{
    __enzyme_fwddiff_void((void *)gmm_objective, FWD8, enzyme_const, d, enzyme_const, k, enzyme_const, n, enzyme_dup,
                          al, D8(da), enzyme_dup, mu, D8(dm), enzyme_dup, icf, D8(di), enzyme_const, x, enzyme_const,
                          gamma, enzyme_const, m, enzyme_dup, err, D8(derr));
}

void reproj_error_enzyme_grad(const double *cam, double *gc, const double *X, double *gX, const double *w, double *gw,
                              const double *feat, double *err, double *gerr)
{
    __enzyme_autodiff((void *)reproj_error, enzyme_dup, cam, gc, enzyme_dup, X, gX, enzyme_dup, w, gw, enzyme_const,
                      feat, enzyme_dup, err, gerr);
}

void reproj_error_enzyme_fwd8(const double *cam, double **dc, const double *X, double **dX, const double *w,
                              double **dw, const double *feat, double *err, double **derr)
{
    __enzyme_fwddiff_void((void *)reproj_error, FWD8, enzyme_dup, cam, D8(dc), enzyme_dup, X, D8(dX), enzyme_dup, w,
                          D8(dw), enzyme_const, feat, enzyme_dup, err, D8(derr));
}
