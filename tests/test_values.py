"""Structs and complex numbers passed by value (specs/abi.md): as parameters and results of an
annotated function in both modes and at width 2, through helpers that take or return them
inside the differentiated code, and complex arithmetic with the <complex.h> functions, each
against central finite differences and forward mode against reverse mode."""

from __future__ import annotations

import cmath

import numpy as np
import pytest

import adgen

H = 1e-6

STRUCTS = r"""
typedef struct { double lo, hi; } range;
typedef struct { double gamma; int m; } wishart;                  /* a double and an int */
typedef struct { double a[5]; float f; } big;                     /* passed in memory (byval, sret) */

// @diff(span_rev: (active, active) -> active; span_fwd: (dual, dual) -> dual)
// @diff(span_rev2: reverse[2] (active, const) -> activeonly; span_fwd2: forward[2] (dual, const) -> dualonly)
range span(double a, double b) { range r = { a < b ? a : b, a * b * b }; return r; }

// @diff(prior_rev: (active, active) -> active; prior_const: (active, const) -> active)
// @diff(prior_fwd: (dual, dual) -> dual)
double prior(double x, wishart w) { return 0.5 * w.gamma * w.gamma * x * x - w.m * log(w.gamma); }

// @diff(big_rev: (active, active) -> active; big_fwd: (dual, dual) -> dual)
big scale(big s, double t)
{
    big r;
    for (int i = 0; i < 5; i++)
        r.a[i] = s.a[i] * t * s.a[(i + 1) % 5];
    r.f = s.f * (float)t;
    return r;
}
"""


@pytest.fixture(scope="module")
def structs(tmp_path_factory):
    src = tmp_path_factory.mktemp("structs") / "structs.c"
    src.write_text("#include <math.h>\n" + STRUCTS)
    return adgen.load(src, build_dir=src.parent / "build")


def test_struct_results_and_parameters_in_both_modes(structs):
    a, b = 1.3, 0.7
    fwd = structs.span_fwd(a, 0.25, b, -0.5)
    plus, minus = structs.span(a + 0.25 * H, b - 0.5 * H), structs.span(a - 0.25 * H, b + 0.5 * H)
    for k in ("lo", "hi"):
        assert fwd.d_ret[k] == pytest.approx((plus[k] - minus[k]) / (2 * H), rel=1e-7)
    assert fwd.ret == structs.span(a, b)
    seed = {"lo": 0.3, "hi": -1.1}
    rev = structs.span_rev(a, b, seed)
    # <J u, v> = <u, J^T v> for u = (0.25, -0.5)
    assert 0.25 * rev.d_a - 0.5 * rev.d_b == pytest.approx(sum(fwd.d_ret[k] * seed[k] for k in seed), rel=1e-12)
    assert rev.ret == structs.span(a, b)


def test_struct_derivatives_at_width_two(structs):
    a, b = 0.4, 0.9
    fwd = structs.span_fwd2(a, 1.0, 2.0, b)
    assert [d["hi"] for d in fwd.d_ret] == pytest.approx([b * b, 2 * b * b])
    assert [d["lo"] for d in fwd.d_ret] == pytest.approx([1.0, 2.0])
    rev = structs.span_rev2(a, b, {"lo": 1.0, "hi": 0.0}, {"lo": 0.0, "hi": 1.0})
    assert list(rev.d_a) == pytest.approx([1.0, b * b])  # lo = a (a < b), hi = a b^2


def test_a_struct_with_an_int_field(structs):
    x, w = 0.8, {"gamma": 1.7, "m": 3}
    g = structs.prior_rev(x, w, 1.0)
    f = lambda x, gamma: structs.prior(x, {"gamma": gamma, "m": 3})
    assert g.d_x == pytest.approx((f(x + H, 1.7) - f(x - H, 1.7)) / (2 * H), rel=1e-7)
    assert g.d_w["gamma"] == pytest.approx((f(x, 1.7 + H) - f(x, 1.7 - H)) / (2 * H), rel=1e-7)
    assert g.d_w["m"] == 0  # an integer field carries no derivative
    assert structs.prior_const(x, w, 1.0).d_x == pytest.approx(g.d_x)
    assert structs.prior_fwd(x, 0.5, w, {"gamma": 2.0, "m": 0}).d_ret == pytest.approx(0.5 * g.d_x + 2.0 * g.d_w["gamma"])


def test_structs_passed_in_memory(structs):
    s = {"a": [0.3, -0.6, 0.9, 0.2, 1.4], "f": 1.5}
    t = 0.9
    seed = {"a": [0.5, -1.0, 0.25, 2.0, 1.0], "f": 0.75}
    rev = structs.big_rev(s, t, seed)

    def loss(a, f, t):
        r = structs.scale({"a": a, "f": f}, t)
        return float(np.dot(r["a"], seed["a"]) + r["f"] * seed["f"])

    for i in range(5):
        up, down = list(s["a"]), list(s["a"])
        up[i] += H
        down[i] -= H
        assert rev.d_s["a"][i] == pytest.approx((loss(up, s["f"], t) - loss(down, s["f"], t)) / (2 * H), rel=1e-6)
    h = 1e-3  # the loss is linear in t, but its float field rounds t: a step far above float's
    assert rev.d_t == pytest.approx((loss(s["a"], s["f"], t + h) - loss(s["a"], s["f"], t - h)) / (2 * h), rel=1e-5)
    assert rev.d_s["f"] == pytest.approx(seed["f"] * t, rel=1e-6)
    u = {"a": [1.0, 0.0, -1.0, 0.5, 0.0], "f": 0.0}
    fwd = structs.big_fwd(s, u, t, 0.3)
    ju = float(np.dot(fwd.d_ret["a"], seed["a"]) + fwd.d_ret["f"] * seed["f"])
    assert ju == pytest.approx(float(np.dot(rev.d_s["a"], u["a"])) + 0.3 * rev.d_t, rel=1e-6)


FLOAT_PAIRS = r"""
#include <math.h>
typedef struct { float x, y; } vec2f;  /* x86-64 passes and returns it as one <2 x float> */
// @diff(rot_rev: (active, active) -> active; rot_fwd: (dual, dual) -> dual)
vec2f rot(vec2f v, float t) { vec2f r = { v.x * cosf(t) - v.y * sinf(t), (v.x * sinf(t) + v.y * cosf(t)) * v.x }; return r; }
"""


def test_a_float_pair_by_value(tmp_path):
    """A struct of two floats in and out by value (one <2 x float> on x86-64: a vector value,
    specs/abi.md) in both modes, against central finite differences, forward against reverse."""
    src = tmp_path / "pairs.c"
    src.write_text(FLOAT_PAIRS)
    lib = adgen.load(src, build_dir=tmp_path / "build")
    v, t, seed, h = {"x": 0.8, "y": -0.3}, 0.4, {"x": 1.0, "y": 0.5}, 1e-3

    def loss(x, y, t):
        r = lib.rot({"x": x, "y": y}, t)
        return r["x"] * seed["x"] + r["y"] * seed["y"]

    rev = lib.rot_rev(v, t, seed)
    assert rev.d_v["x"] == pytest.approx((loss(v["x"] + h, v["y"], t) - loss(v["x"] - h, v["y"], t)) / (2 * h), rel=1e-3)
    assert rev.d_v["y"] == pytest.approx((loss(v["x"], v["y"] + h, t) - loss(v["x"], v["y"] - h, t)) / (2 * h), rel=1e-3)
    assert rev.d_t == pytest.approx((loss(v["x"], v["y"], t + h) - loss(v["x"], v["y"], t - h)) / (2 * h), rel=1e-3)
    u, dt = {"x": 0.3, "y": -1.0}, 0.7
    fwd = lib.rot_fwd(v, u, t, dt)
    assert fwd.d_ret["x"] * seed["x"] + fwd.d_ret["y"] * seed["y"] == pytest.approx(
        rev.d_v["x"] * u["x"] + rev.d_v["y"] * u["y"] + rev.d_t * dt, rel=1e-5)


HELPERS = r"""
typedef struct { double re, im; } cpx;
typedef struct { double v[6]; } six;

static cpx cmul(cpx a, cpx b) { cpx r = { a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re }; return r; }

static six twist(six s, double t)
{
    six r;
    for (int i = 0; i < 6; i++)
        r.v[i] = s.v[(i + 1) % 6] * t + s.v[i] * s.v[i];
    return r;
}

// @diff(chain_grad: (dup, const) -> active; chain_fwd: (dual, const) -> dual)
double chain(const double *z, int n)
{
    cpx acc = { 1, 0 };
    six s = { { 0 } };
    for (int i = 0; i < n; i++) {
        cpx t = { z[2 * i], z[2 * i + 1] };
        acc = cmul(acc, t);
        s.v[i % 6] += acc.re;
        s = twist(s, z[i]);
    }
    double out = acc.re + acc.im;
    for (int i = 0; i < 6; i++)
        out += s.v[i];
    return out;
}
"""


def test_helpers_taking_and_returning_structs(tmp_path):
    src = tmp_path / "helpers.c"
    src.write_text(HELPERS)
    lib = adgen.load(src, build_dir=tmp_path / "build")
    z = np.array([0.3, 0.5, -0.7, 0.2, 0.6, 0.4, -0.1, 0.3])
    dz = np.zeros_like(z)
    assert lib.chain_grad(z, dz, 4, 1.0) == pytest.approx(lib.chain(z, 4), rel=1e-14)
    for i in range(len(z)):
        up, down, u = z.copy(), z.copy(), np.zeros_like(z)
        up[i] += H
        down[i] -= H
        u[i] = 1.0
        assert dz[i] == pytest.approx((lib.chain(up, 4) - lib.chain(down, 4)) / (2 * H), rel=1e-6, abs=1e-9)
        assert lib.chain_fwd(z, u, 4).d_ret == pytest.approx(dz[i], rel=1e-12)


def test_a_struct_returned_by_a_call_reverse_mode_cannot_inline(adgen, c_file, tmp_path):
    src = c_file("typedef struct { double re, im; } cpx;\n"
                 "__attribute__((noinline)) static cpx twice(cpx a) { cpx r = { 2 * a.re, 2 * a.im }; return r; }\n"
                 "// @diff(g: (active, active) -> active)\n"
                 "double f(double x, double y) { cpx a = { x, y }; cpx b = twice(a); return b.re * b.im; }\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    assert "src.c:4:" in result.err
    assert "error: cannot differentiate a call to 'twice', which returns a struct by value ('{ double, double }') " \
           "and could not be inlined (noinline, or recursive;" in result.err
    assert not (tmp_path / "out" / "src.adgen.o").exists()


OPS = r"""
// @diff(PREFIXops_grad: (dup, const) -> active; PREFIXops_fwd: (dual, const) -> dual)
T PREFIXops(const T *x, int which)
{
    T complex a = x[0] + I * x[1], b = x[2] + I * x[3], r;
    switch (which) {
    case 0: r = a * b; break;
    case 1: r = a / b; break;
    case 2: r = cexpF(a); break;
    case 3: r = clogF(a); break;
    case 4: r = csqrtF(a); break;
    case 5: r = csinF(a); break;
    case 6: r = ccosF(a); break;
    case 7: r = cpowF(a, b); break;
    case 8: r = cabsF(a) + I * cargF(b); break;
    default: r = conjF(a) * b + a * (T)2.5; break;
    }
    return (T)1.5 * crealF(r) - (T)0.7 * cimagF(r);
}
"""

COMPLEX = "#include <complex.h>\n" + "".join(
    OPS.replace("PREFIX", prefix).replace("T", t).replace("F(", suffix + "(") for prefix, t, suffix in
    (("", "double", ""), ("f", "float", "f"))) + r"""
// @diff(mobius_grad: (active, active) -> active; mobius_fwd: (dual, const) -> dual)
double complex mobius(double complex z, double complex c) { return (z - c) / (1.0 - conj(c) * z); }
"""


@pytest.fixture(scope="module")
def complex_lib(tmp_path_factory):
    src = tmp_path_factory.mktemp("complex") / "cplx.c"
    src.write_text(COMPLEX)
    return adgen.load(src, build_dir=src.parent / "build")


@pytest.mark.parametrize("which", range(10))
@pytest.mark.parametrize("precision", ["double", "float"])
def test_complex_arithmetic_and_functions(complex_lib, which, precision):
    f, grad, fwd = ((complex_lib.ops, complex_lib.ops_grad, complex_lib.ops_fwd) if precision == "double" else
                    (complex_lib.fops, complex_lib.fops_grad, complex_lib.fops_fwd))
    dtype, h, rel = (np.float64, H, 1e-6) if precision == "double" else (np.float32, 1e-2, 2e-3)
    x = np.array([0.7, -0.4, 0.3, 0.9], dtype=dtype)
    dx = np.zeros_like(x)
    assert grad(x, dx, which, 1.0) == pytest.approx(f(x, which), rel=1e-6)
    for i in range(4):
        up, down, u = x.astype(np.float64), x.astype(np.float64), np.zeros_like(x)
        up[i] += h
        down[i] -= h
        u[i] = 1
        fd = (f(up.astype(dtype), which) - f(down.astype(dtype), which)) / (2 * h)
        assert dx[i] == pytest.approx(fd, rel=rel, abs=rel)
        assert fwd(x, u, which).d_ret == pytest.approx(dx[i], rel=1e-6 if precision == "double" else 1e-5)


def test_complex_parameters_and_results(complex_lib):
    z, c = 0.3 + 0.2j, -0.1 + 0.4j
    assert complex_lib.mobius(z, c) == pytest.approx((z - c) / (1 - c.conjugate() * z))
    g = complex_lib.mobius_grad(z, c, 1.0)  # seed 1: the gradient of the real part
    re = lambda z, c: complex_lib.mobius(z, c).real
    assert g.d_z.real == pytest.approx((re(z + H, c) - re(z - H, c)) / (2 * H), rel=1e-7)
    assert g.d_z.imag == pytest.approx((re(z + 1j * H, c) - re(z - 1j * H, c)) / (2 * H), rel=1e-7)
    assert g.d_c.imag == pytest.approx((re(z, c + 1j * H) - re(z, c - 1j * H)) / (2 * H), rel=1e-7)
    d = complex_lib.mobius_fwd(z, 1.0, c).d_ret  # holomorphic in z: the tangent is f'(z)
    assert d == pytest.approx((1 - abs(c) ** 2) / (1 - c.conjugate() * z) ** 2)
    assert cmath.isclose(g.ret, complex_lib.mobius(z, c))


GMM = r"""
#include <math.h>
#include <stdlib.h>

/* ADBench's GMM objective in the shape of its C reference: the Wishart prior's parameters in a
 * struct passed by value, to the objective and on to the prior's helper. */
typedef struct { double gamma; int m; } Wishart;

static double log_gamma_distrib(double a, double p)
{
    double out = 0.25 * p * (p - 1) * log(M_PI);
    for (int j = 1; j <= p; j++)
        out += lgamma(a + 0.5 * (1 - j));
    return out;
}

static double sqnorm(int n, const double *x)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return s;
}

static double arr_max(int n, const double *x)
{
    double m = x[0];
    for (int i = 1; i < n; i++)
        if (m < x[i])
            m = x[i];
    return m;
}

static double log_sum_exp(int n, const double *x)
{
    double mx = arr_max(n, x), s = 0;
    for (int i = 0; i < n; i++)
        s += exp(x[i] - mx);
    return log(s) + mx;
}

static double log_wishart_prior(int p, int k, Wishart wishart, const double *sum_qs, const double *Qdiags,
                                const double *icf)
{
    int n = p + wishart.m + 1, icf_sz = p * (p + 1) / 2;
    double C = n * p * (log(wishart.gamma) - 0.5 * log(2)) - log_gamma_distrib(0.5 * n, p), out = 0;
    for (int ik = 0; ik < k; ik++) {
        double frobenius = sqnorm(p, &Qdiags[ik * p]) + sqnorm(icf_sz - p, &icf[ik * icf_sz + p]);
        out += 0.5 * wishart.gamma * wishart.gamma * frobenius - wishart.m * sum_qs[ik];
    }
    return out - k * C;
}

static void Qtimesx(int d, const double *Qdiag, const double *ltri, const double *x, double *out)
{
    for (int id = 0; id < d; id++)
        out[id] = Qdiag[id] * x[id];
    int Lparamsidx = 0;
    for (int i = 0; i < d; i++)
        for (int j = i + 1; j < d; j++)
            out[j] += ltri[Lparamsidx++] * x[i];
}

// @diff(gmm_grad: (const, const, const, dup, dup, dup, const, const, dup))
// @diff(gmm_fwd: (const, const, const, dual, dual, dual, const, const, dual))
void gmm_objective(int d, int k, int n, const double *alphas, const double *means, const double *icf,
                   const double *x, Wishart wishart, double *err)
{
    int icf_sz = d * (d + 1) / 2;
    double *Qdiags = malloc(d * k * sizeof(double)), *sum_qs = malloc(k * sizeof(double));
    double *xcentered = malloc(d * sizeof(double)), *Qxcentered = malloc(d * sizeof(double));
    double *main_term = malloc(k * sizeof(double));
    for (int ik = 0; ik < k; ik++) {
        sum_qs[ik] = 0;
        for (int id = 0; id < d; id++) {
            sum_qs[ik] += icf[ik * icf_sz + id];
            Qdiags[ik * d + id] = exp(icf[ik * icf_sz + id]);
        }
    }
    double slse = 0;
    for (int ix = 0; ix < n; ix++) {
        for (int ik = 0; ik < k; ik++) {
            for (int id = 0; id < d; id++)
                xcentered[id] = x[ix * d + id] - means[ik * d + id];
            Qtimesx(d, &Qdiags[ik * d], &icf[ik * icf_sz + d], xcentered, Qxcentered);
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sqnorm(d, Qxcentered);
        }
        slse += log_sum_exp(k, main_term);
    }
    double lse_alphas = log_sum_exp(k, alphas);
    *err = -0.5 * n * d * log(2 * M_PI) + slse - n * lse_alphas + log_wishart_prior(d, k, wishart, sum_qs, Qdiags, icf);
    free(Qdiags);
    free(sum_qs);
    free(xcentered);
    free(Qxcentered);
    free(main_term);
}
"""


@pytest.mark.slow
def test_adbench_gmm_objective_as_written(tmp_path):
    src = tmp_path / "gmm.c"
    src.write_text(GMM)
    lib = adgen.load(src, build_dir=tmp_path / "build")
    d, k, n = 3, 4, 5
    rng = np.random.default_rng(7)
    alphas, means, icf = rng.normal(size=k), rng.normal(size=k * d), rng.normal(size=k * d * (d + 1) // 2) * 0.3
    x, wishart = rng.normal(size=n * d), {"gamma": 1.3, "m": 2}

    def value(a, m, q):
        err = np.zeros(1)
        lib.gmm_objective(d, k, n, a, m, q, x, wishart, err)
        return err[0]

    grads = [np.zeros_like(alphas), np.zeros_like(means), np.zeros_like(icf)]
    err, derr = np.zeros(1), np.ones(1)
    lib.gmm_grad(d, k, n, alphas, grads[0], means, grads[1], icf, grads[2], x, wishart, err, derr)
    assert err[0] == pytest.approx(value(alphas, means, icf), rel=1e-14)
    params = [alphas, means, icf]
    for which, g in enumerate(grads):
        for i in range(len(g)):
            up, down = [p.copy() for p in params], [p.copy() for p in params]
            up[which][i] += H
            down[which][i] -= H
            assert g[i] == pytest.approx((value(*up) - value(*down)) / (2 * H), rel=1e-6, abs=1e-8)
    u = [rng.normal(size=p.shape) for p in params]  # forward against reverse: <J u, 1> = <u, J^T 1>
    fwd_err, d_err = np.zeros(1), np.zeros(1)
    lib.gmm_fwd(d, k, n, alphas, u[0], means, u[1], icf, u[2], x, wishart, fwd_err, d_err)
    assert d_err[0] == pytest.approx(sum(float(np.dot(gi, ui)) for gi, ui in zip(grads, u)), rel=1e-12)
