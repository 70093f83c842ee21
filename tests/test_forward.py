"""Forward mode against central finite differences: every construct clang emits for numeric C
(arithmetic, control flow, casts, memory, calls, libm), and batching at several widths."""

from __future__ import annotations

import ctypes as C
import math

import pytest

from conftest import central_difference

D, F, I, P = C.c_double, C.c_float, C.c_int, C.POINTER(C.c_double)


def fn(lib, name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


def pair(t=D):
    class Pair(C.Structure):
        _fields_ = [("ret", t), ("d_ret", t)]

    return Pair


def batch(n, t=D, primal=True):
    class Batch(C.Structure):
        _fields_ = ([("ret", t)] if primal else []) + [("d_ret", t * n)]

    return Batch


def arr(values, t=D):
    return (t * len(values))(*values)


def close(a, b, rtol=1e-6, atol=1e-8):
    return abs(a - b) <= atol + rtol * abs(b)


SCALARS = r"""
#include <math.h>

// @diff(arith_d: (dual, dual) -> dual; arith_r: (active, active) -> active)
double arith(double x, double y)
{
    double r = x * y - x / (y + 3.0) + (-x);
    if (x > y)
        r = r * x;
    else
        r = r + y * y;
    return r;
}

// @diff(pick_d: (dual, const) -> dualonly; pick_r: (active, const) -> activeonly)
double pick(double x, int k)
{
    switch (k) {
    case 0: return x * x;
    case 1: return sin(x);
    case 2: return exp(x) - x;
    case 7: return 1.0 / x;
    default: __builtin_unreachable();
    }
}

// @diff(heron_d: (dual) -> dualonly)
double heron(double a)
{
    double x = a;
    while (fabs(x * x - a) > 1e-14 * a)
        x = 0.5 * (x + a / x);
    return x;
}

// @diff(relu3_d: (dual) -> dualonly; relu3_r: (active) -> activeonly)
double relu3(double x)
{
    double result;
    if (x > 0)
        result = pow(x, 3);
    else
        result = 0;
    return result;
}

// @diff(mixed_d: (dual, const) -> dual; mixed_r: (active, const) -> active)
float mixed(float x, int n)
{
    double d = x;
    double m = d * d * (double)n;
    int k = (int)(d * 10.0);
    return (float)(m + sin(d) * k);
}

// @diff(f3_d: (dual, dual) -> dual)
double f3(double x, double y)
{
    return x * x * sin(y);
}

// @diff(frac_r: (active, active) -> activeonly)
double frac(double x, double y)
{
    return fmod(x * y, 1.5) + copysign(x, -y) + fmax(x, y) * floor(y);
}
"""


@pytest.fixture(scope="module")
def scalars(tmp_path_factory):
    return _build_module(tmp_path_factory, SCALARS)


def _build_module(tmp_path_factory, source: str, *flags: str):
    """One build per source for all tests of a module (builds take a second)."""
    from conftest import compile_c
    from adgen.commands.cli import main

    work = tmp_path_factory.mktemp("fwd")
    src = work / "src.c"
    src.write_text(source)
    assert main(["build", "-q", str(src), "-o", str(work / "out"), *flags]) == 0
    compile_c("-c", "-O2", "-fPIC", "-I", work / "out", src, "-o", work / "src.o")
    compile_c("-shared", work / "src.o", work / "out" / "src.adgen.o", "-o", work / "lib.so", "-lm")
    return C.CDLL(str(work / "lib.so"))


def test_arithmetic_branches_and_phis(scalars):
    primal = fn(scalars, "arith", D, D, D)
    d = fn(scalars, "arith_d", pair(), D, D, D, D)
    for x, y in [(0.7, 1.9), (2.5, -0.4), (-1.2, -3.3)]:
        rx = d(x, 1.0, y, 0.0)
        ry = d(x, 0.0, y, 1.0)
        assert rx.ret == pytest.approx(primal(x, y), rel=1e-12)  # FMA contraction may differ
        assert close(rx.d_ret, central_difference(lambda t: primal(t, y), x))
        assert close(ry.d_ret, central_difference(lambda t: primal(x, t), y))


def test_switch_and_unreachable(scalars):
    primal = fn(scalars, "pick", D, D, I)
    d = fn(scalars, "pick_d", D, D, D, I)
    for k in (0, 1, 2, 7):
        assert close(d(0.8, 1.0, k), central_difference(lambda t: primal(t, k), 0.8))


def test_data_dependent_while_loop(scalars):
    d = fn(scalars, "heron_d", D, D, D)
    for a in (0.3, 2.0, 17.0):
        assert close(d(a, 1.0), 0.5 / math.sqrt(a), rtol=1e-9)


def test_relu3_pow_under_a_branch(scalars):
    d = fn(scalars, "relu3_d", D, D, D)
    assert close(d(1.5, 1.0), 3 * 1.5 ** 2)
    assert d(-1.5, 1.0) == 0.0


def test_casts_float_double_int(scalars):
    primal = fn(scalars, "mixed", F, F, I)
    d = fn(scalars, "mixed_d", pair(F), F, F, I)
    x = 0.33
    got = d(x, 1.0, 3)
    expected = 2 * x * 3 + math.cos(x) * int(x * 10)
    assert abs(got.d_ret - expected) < 1e-5
    assert got.ret == pytest.approx(primal(x, 3), rel=1e-6)


def test_x_squared_sin_y(scalars):
    d = fn(scalars, "f3_d", pair(), D, D, D, D)
    x, y = 1.3, 0.4
    assert close(d(x, 1.0, y, 0.0).d_ret, 2 * x * math.sin(y))
    assert close(d(x, 0.0, y, 1.0).d_ret, x * x * math.cos(y))
    assert close(d(x, 0.5, y, -2.0).d_ret, 0.5 * 2 * x * math.sin(y) - 2.0 * x * x * math.cos(y))


MEMORY = r"""
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct { double x, y, z; } vec3;
typedef struct { double a, b; } pair;

// @diff(norm_d: (dual) -> dualonly)
double norm(const vec3 *v)
{
    return sqrt(v->x * v->x + v->y * v->y + v->z * v->z);
}

// @diff(square_all_d: (dual, dual, const))
void square_all(const double *x, double *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = x[i] * x[i] + sin(x[i]);
}

// @diff(stack_d: (dual, const) -> dualonly)
double stack(const double *x, int n)
{
    volatile int salt = 3;
    double t[8];
    for (int i = 0; i < 8; i++)
        t[i] = x[i % n] * (i + 1);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += t[(i * salt) % 8] * t[i];
    return s;
}

// @diff(mem_d: (dual) -> dualonly)
double mem(const double *x)
{
    double a[4], b[4];
    memcpy(a, x, sizeof a);
    memmove(a + 1, a, 3 * sizeof(double));
    memset(b, 0, sizeof b);
    b[2] = a[3];
    return a[0] * b[2] + a[1] * a[2];
}

// @diff(copy8_d: (dual, dual))
void copy8(double *dst, const double *src)
{
    memcpy(dst, src, 8);
}

// @diff(temp_d: (dual, const) -> dualonly)
double temp(const double *x, int n)
{
    double *t = malloc(n * sizeof(double));
    double *u = calloc(n, sizeof(double));
    for (int i = 0; i < n; i++) {
        t[i] = x[i] * x[i];
        u[i] += t[i] * x[i];
    }
    double s = 0;
    for (int i = 0; i < n; i++)
        s += t[i] + u[(i + 1) % n];
    free(t);
    free(u);
    return s;
}

__attribute__((noinline)) static pair polar(double r, double t)
{
    pair p = { r * cos(t), r * sin(t) };
    return p;
}

// @diff(area_d: (dual, dual) -> dualonly)
double area(double r, double t)
{
    pair p = polar(r, t);
    return p.a * p.b;
}

static const double W[4] = { 0.5, -1.25, 2.0, 3.5 };

// @diff(weighted_d: (dual, const) -> dualonly)
double weighted(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += W[i % 4] * x[i] * x[i];
    return s;
}
"""


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    return _build_module(tmp_path_factory, MEMORY)


def _grad_fd(f, x: list[float], k: int) -> float:
    def at(t):
        y = list(x)
        y[k] = t
        return f(y)

    return central_difference(at, x[k])


def test_struct_pointer(memory):
    class Vec3(C.Structure):
        _fields_ = [("x", D), ("y", D), ("z", D)]

    d = fn(memory, "norm_d", D, C.POINTER(Vec3), C.POINTER(Vec3))
    v = Vec3(1.0, -2.0, 2.0)
    for k, name in enumerate("xyz"):
        dv = Vec3(*(1.0 if j == k else 0.0 for j in range(3)))
        assert close(d(v, dv), getattr(v, name) / 3.0)


def test_output_array_through_dual_pointers(memory):
    d = fn(memory, "square_all_d", None, P, P, P, P, I)
    x = [0.3, -1.1, 2.0]
    dx = [1.0, 0.5, -2.0]
    y, dy = arr([0.0] * 3), arr([0.0] * 3)
    d(arr(x), arr(dx), y, dy, 3)
    for i in range(3):
        assert close(y[i], x[i] ** 2 + math.sin(x[i]))
        assert close(dy[i], (2 * x[i] + math.cos(x[i])) * dx[i])


def test_stack_array_with_dynamic_index(memory):
    primal = fn(memory, "stack", D, P, I)
    d = fn(memory, "stack_d", D, P, P, I)
    x = [0.5, 1.5, -0.25, 2.0, 1.0]
    for k in range(5):
        seed = [1.0 if j == k else 0.0 for j in range(5)]
        assert close(d(arr(x), arr(seed), 5), _grad_fd(lambda v: primal(arr(v), 5), x, k))


def test_memcpy_memmove_memset(memory):
    primal = fn(memory, "mem", D, P)
    d = fn(memory, "mem_d", D, P, P)
    x = [0.5, 1.5, -0.25, 2.0]
    for k in range(4):
        seed = [1.0 if j == k else 0.0 for j in range(4)]
        assert close(d(arr(x), arr(seed)), _grad_fd(lambda v: primal(arr(v)), x, k), atol=1e-7)


def test_untyped_copy_moves_tangents(memory):
    d = fn(memory, "copy8_d", None, P, P, P, P)
    dst, ddst = arr([0.0]), arr([0.0])
    d(dst, ddst, arr([3.5]), arr([1.25]))
    assert (dst[0], ddst[0]) == (3.5, 1.25)


def test_malloc_calloc_free(memory):
    primal = fn(memory, "temp", D, P, I)
    d = fn(memory, "temp_d", D, P, P, I)
    x = [0.5, 1.5, -0.25]
    for k in range(3):
        seed = [1.0 if j == k else 0.0 for j in range(3)]
        assert close(d(arr(x), arr(seed), 3), _grad_fd(lambda v: primal(arr(v), 3), x, k))


def test_struct_returned_by_a_helper(memory):
    d = fn(memory, "area_d", D, D, D, D, D)
    r, t = 1.7, 0.6
    assert close(d(r, 1.0, t, 0.0), 2 * r * math.cos(t) * math.sin(t))
    assert close(d(r, 0.0, t, 1.0), r * r * math.cos(2 * t))


def test_global_constants(memory):
    d = fn(memory, "weighted_d", D, P, P, I)
    x = [0.5, 1.5, -0.25, 2.0, 1.0]
    w = [0.5, -1.25, 2.0, 3.5, 0.5]
    for k in range(5):
        seed = [1.0 if j == k else 0.0 for j in range(5)]
        assert close(d(arr(x), arr(seed), 5), 2 * w[k] * x[k])


CALLS = r"""
#include <math.h>

__attribute__((noinline)) double helper(double x, const double *w)
{
    return sin(x * w[0]) + w[1] * x * x;
}

// @diff(sum_d: (dual, dual, const) -> dualonly)
double sum(const double *x, const double *w, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += helper(x[i], w);
    return s;
}

// @diff(tree_d: (dual, const) -> dual)
double tree(double x, int depth)
{
    if (depth == 0)
        return sin(x) + 2.0;
    return tree(x * 0.9, depth - 1) * tree(x * 1.1 + 0.2, depth - 1);
}
"""


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    return _build_module(tmp_path_factory, CALLS)


def test_non_inlined_helper_in_a_loop(calls):
    primal = fn(calls, "sum", D, P, P, I)
    d = fn(calls, "sum_d", D, P, P, P, P, I)
    x, w = [0.3, -0.7, 1.2], [1.5, 0.25]
    for k in range(3):
        seed = [1.0 if j == k else 0.0 for j in range(3)]
        assert close(d(arr(x), arr(seed), arr(w), arr([0.0, 0.0]), 3), _grad_fd(lambda v: primal(arr(v), arr(w), 3), x, k))
    for k in range(2):
        seed = [1.0 if j == k else 0.0 for j in range(2)]
        assert close(d(arr(x), arr([0.0] * 3), arr(w), arr(seed), 3), _grad_fd(lambda v: primal(arr(x), arr(v), 3), w, k))


def test_recursion(calls):
    primal = fn(calls, "tree", D, D, I)
    d = fn(calls, "tree_d", pair(), D, D, I)
    for depth in (0, 1, 4):
        got = d(0.8, 1.0, depth)
        assert got.ret == pytest.approx(primal(0.8, depth), rel=1e-12)
        assert close(got.d_ret, central_difference(lambda t: primal(t, depth), 0.8))


# name, arity, a point inside the domain
LIBM = [("sin", 1, 0.7), ("cos", 1, 0.7), ("tan", 1, 0.7), ("asin", 1, 0.3), ("acos", 1, 0.3), ("atan", 1, 0.7),
        ("atan2", 2, (0.7, -1.3)), ("sinh", 1, 0.7), ("cosh", 1, 0.7), ("tanh", 1, 0.7), ("exp", 1, 0.7),
        ("exp2", 1, 0.7), ("expm1", 1, 0.7), ("log", 1, 1.7), ("log2", 1, 1.7), ("log10", 1, 1.7),
        ("log1p", 1, 1.7), ("pow", 2, (1.7, 2.3)), ("sqrt", 1, 1.7), ("cbrt", 1, 1.7), ("hypot", 2, (1.7, -0.4)),
        ("fabs", 1, -0.7), ("fmin", 2, (0.7, 1.3)), ("fmax", 2, (0.7, 1.3)), ("fmod", 2, (5.3, 1.7)),
        ("floor", 1, 1.7), ("ceil", 1, 1.7), ("round", 1, 1.7), ("trunc", 1, 1.7), ("copysign", 2, (1.7, -2.0)),
        ("erf", 1, 0.7), ("erfc", 1, 0.7), ("fma", 3, (0.7, -1.3, 2.1)), ("asinh", 1, -0.7), ("acosh", 1, 1.7),
        ("atanh", 1, 0.3), ("fdim", 2, (1.7, 0.4)), ("remainder", 2, (5.3, 1.7)), ("logb", 1, 5.3),
        ("lgamma", 1, 2.3), ("tgamma", 1, 2.3), ("nextafter", 2, (0.7, 1.3))]


def libm_source(prefix: str, activity: str, returns: str) -> str:
    """One wrapper per libm function and precision, each annotated for one mode (the reverse tests reuse it)."""
    lines = ["#include <math.h>"]
    for name, arity, _ in LIBM:
        for t, suffix in (("double", ""), ("float", "f")):
            params = ", ".join(f"{t} a{i}" for i in range(arity))
            acts = ", ".join([activity] * arity)
            args = ", ".join(f"a{i}" for i in range(arity))
            lines.append(f"// @diff({prefix}_{name}{suffix}: ({acts}) -> {returns})\n"
                         f"{t} m_{name}{suffix}({params}) {{ return {name}{suffix}({args}); }}")
    lines.append(f"// @diff({prefix}_powi: ({activity}, const) -> {returns})\n"
                 "double m_powi(double x, int n) { return __builtin_powi(x, n); }")
    for name, t, suffix in (("ldexp", "double", ""), ("ldexp", "float", "f"), ("scalbn", "double", "")):
        lines.append(f"// @diff({prefix}_{name}{suffix}: ({activity}, const) -> {returns})\n"
                     f"{t} m_{name}{suffix}({t} x, int n) {{ return {name}{suffix}(x, n); }}")
    for t, suffix in (("double", ""), ("float", "f")):  # the mantissa, and the exponent through memory
        lines.append(f"// @diff({prefix}_frexp{suffix}: ({activity}) -> {returns})\n"
                     f"{t} m_frexp{suffix}({t} x) {{ int e; {t} m = frexp{suffix}(x, &e); return m * m + e; }}")
    lines.append(f"// @diff({prefix}_fdim_below: ({activity}, {activity}) -> {returns})\n"
                 "double m_fdim_below(double x, double y) { return fdim(x, y) + 0.5 * x; }")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def libm(tmp_path_factory):
    return _build_module(tmp_path_factory, libm_source("d", "dual", "dualonly"))


@pytest.mark.parametrize("name, arity, point", LIBM, ids=[n for n, _, _ in LIBM])
@pytest.mark.parametrize("precision", ["double", "float"])
def test_libm(libm, name, arity, point, precision):
    point = point if isinstance(point, tuple) else (point,)
    t, suffix = (D, "") if precision == "double" else (F, "f")
    primal = fn(libm, f"m_{name}{suffix}", t, *[t] * arity)
    d = fn(libm, f"d_{name}{suffix}", t, *[t] * (2 * arity))
    for k in range(arity):
        args = []
        for j, v in enumerate(point):
            args += [v, 1.0 if j == k else 0.0]
        expected = _grad_fd(lambda v: primal(*v), list(point), k) if precision == "double" else \
            _libm_exact(name, point, k)
        tol = 1e-6 if precision == "double" else 1e-4
        assert close(d(*args), expected, rtol=tol, atol=tol), (name, k)


def _libm_exact(name, point, k):
    """Derivatives at the float test points, from Python's double-precision math."""
    f = {"fmin": min, "fmax": max, "fma": lambda a, b, c: a * b + c, "exp2": lambda x: 2 ** x,
         "cbrt": lambda x: x ** (1 / 3), "round": round, "fabs": abs, "fdim": lambda x, y: max(x - y, 0.0),
         "logb": lambda x: float(math.floor(math.log2(abs(x)))), "tgamma": math.gamma,
         "nextafter": lambda x, y: x}.get(name) or getattr(math, name)
    return _grad_fd(lambda v: f(*v), list(point), k)


def test_powi_intrinsic(libm):
    d = fn(libm, "d_powi", D, D, D, I)
    assert close(d(1.3, 1.0, 5), 5 * 1.3 ** 4)
    assert close(d(1.3, 1.0, -2), -2 * 1.3 ** -3)


@pytest.mark.parametrize("name, t", [("ldexp", D), ("ldexpf", F), ("scalbn", D)])
def test_scaling_by_a_power_of_two(libm, name, t):
    d = fn(libm, f"d_{name}", t, t, t, I)
    for x, n in ((1.3, 5), (-0.7, -3), (0.0, 2)):
        assert close(d(x, 1.0, n), 2.0 ** n)


@pytest.mark.parametrize("name, t", [("frexp", D), ("frexpf", F)])
def test_frexp_mantissa(libm, name, t):
    d = fn(libm, f"d_{name}", t, t, t)
    for x in (5.3, -0.3, 1e-3):  # m = x 2^-e, m in [0.5, 1): dm/dx = 2^-e
        scale = 2.0 ** -math.frexp(x)[1]
        assert close(d(x, 1.0), 2 * x * scale * scale, rtol=1e-6)


# digamma, the derivative of lgamma, at points of each branch of its evaluation (reflected below
# 0.5, shifted and summed above), from mpmath at 50 digits
DIGAMMA = [(0.1, -10.423754940411076), (1.0, -0.5772156649015329), (10.3, 2.282815446439123),
           (-0.3, 2.113309779635399), (-2.7, -1.1153471291406896), (1e-3, -1000.5755719318103)]


@pytest.mark.parametrize("x, psi", DIGAMMA)
def test_lgamma_and_tgamma_derivatives_are_digamma(libm, x, psi):
    assert close(fn(libm, "d_lgamma", D, D, D)(x, 1.0), psi, rtol=1e-12, atol=1e-12)
    assert close(fn(libm, "d_tgamma", D, D, D)(x, 1.0), math.gamma(x) * psi, rtol=1e-12, atol=1e-12)


def test_fdim_below_its_kink_is_flat(libm):
    d = fn(libm, "d_fdim_below", D, D, D, D, D)
    assert close(d(0.4, 1.0, 1.7, 0.0), 0.5) and close(d(0.4, 0.0, 1.7, 1.0), 0.0)


BATCHED = r"""
// @diff(sq1: forward[1] (dual) -> dual; sq2: forward[2] (dual) -> dual;
//       sq4: forward[4] (dual) -> dual; sq8: forward[8] (dual) -> dual;
//       sq8v: forward[8] (dualv) -> dualonly)
double square(double x)
{
    return x * x;
}

// @diff(poly1: (dual, const, dual) -> dual;
//       poly4: forward[4] (dual, const, dual) -> dual;
//       poly4v: forward[4] (dualv, const, dualv) -> dual)
double poly(const double *c, int n, double x)
{
    double s = 0;
    for (int i = n - 1; i >= 0; i--)
        s = s * x + c[i];
    return s;
}

// @diff(vmap4: forward[4] (dual, dual, const); vmap4v: forward[4] (dualv, dualv, const))
void vmap(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = x[i] * x[i] * x[i];
}
"""


@pytest.fixture(scope="module")
def batched(tmp_path_factory):
    return _build_module(tmp_path_factory, BATCHED)


@pytest.mark.parametrize("width", [1, 2, 4, 8])
def test_batched_square(batched, width):
    d = fn(batched, f"sq{width}", batch(width) if width > 1 else pair(), D, *[D] * width)
    seeds = [0.5 * k - 1.0 for k in range(width)]
    got = d(3.0, *seeds)
    assert got.ret == 9.0
    lanes = list(got.d_ret) if width > 1 else [got.d_ret]
    assert lanes == [6.0 * s for s in seeds]


def test_batched_square_interleaved(batched):
    d = fn(batched, "sq8v", batch(8, primal=False), D, P)
    seeds = [float(k) for k in range(8)]
    assert list(d(3.0, arr(seeds)).d_ret) == [6.0 * s for s in seeds]


def test_batched_pointers_match_width_one(batched):
    c = [0.5, -1.0, 0.25, 2.0]
    one = fn(batched, "poly1", pair(), P, P, I, D, D)
    four = fn(batched, "poly4", batch(4), P, P, P, P, P, I, D, D, D, D, D)
    fourv = fn(batched, "poly4v", batch(4), P, P, I, D, P)
    dc = [[1.0 if j == k else 0.0 for j in range(4)] for k in range(4)]
    dx = [0.0, 0.5, 0.0, -1.0]
    singles = [one(arr(c), arr(dc[k]), 4, 1.3, dx[k]).d_ret for k in range(4)]
    assert list(four(arr(c), *[arr(s) for s in dc], 4, 1.3, *dx).d_ret) == pytest.approx(singles, rel=1e-14)
    interleaved = [dc[k][j] for j in range(4) for k in range(4)]  # lane k of element j at [j*4 + k]
    assert list(fourv(arr(c), arr(interleaved), 4, 1.3, arr(dx)).d_ret) == pytest.approx(singles, rel=1e-14)
    for k in range(4):
        assert close(singles[k], _grad_fd(lambda v: _horner(v, 1.3), c, k) + dx[k] * _horner_dx(c, 1.3))


def _horner(c, x):
    return sum(ci * x ** i for i, ci in enumerate(c))


def _horner_dx(c, x):
    return sum(i * ci * x ** (i - 1) for i, ci in enumerate(c) if i)


def test_batched_output_arrays_both_layouts(batched):
    FP = C.POINTER(F)
    n = 5
    x = [0.1 * (i + 1) for i in range(n)]
    four = fn(batched, "vmap4", None, FP, FP, FP, FP, FP, FP, FP, FP, FP, FP, I)
    fourv = fn(batched, "vmap4v", None, FP, FP, FP, FP, I)
    seeds = [[float(k + j) for j in range(n)] for k in range(4)]
    y = arr([0.0] * n, F)
    outs = [arr([0.0] * n, F) for _ in range(4)]
    four(arr(x, F), *[arr(s, F) for s in seeds], y, *outs, n)
    yv, dyv = arr([0.0] * n, F), arr([0.0] * (4 * n), F)
    fourv(arr(x, F), arr([seeds[k][j] for j in range(n) for k in range(4)], F), yv, dyv, n)
    for k in range(4):
        for j in range(n):
            expected = 3 * x[j] ** 2 * seeds[k][j]
            assert abs(outs[k][j] - expected) < 1e-5 * max(1, abs(expected))
            assert abs(dyv[j * 4 + k] - expected) < 1e-5 * max(1, abs(expected))


def test_unsupported_construct_is_a_located_error(adgen, c_file, tmp_path):
    src = c_file("double ext(double);\n\n// @diff(u_d: (dual) -> dual)\n"
                 "double u(double x)\n{\n    return 2.0 * ext(x);\n}\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    first = result.err.splitlines()[0]
    assert first.endswith("src.c:6:18: error: cannot differentiate a call to 'ext', which is not defined in the "
                          "sources and has no derivative rule in function 'u' (needed by 'u_d')")
    assert "note: the LLVM instruction is: %i = tail call double @ext(double noundef %arg)" in result.err
    assert not (tmp_path / "out" / "src.adgen.o").exists()


def test_store_to_a_global_is_a_located_error(adgen, c_file, tmp_path):
    src = c_file("double last;\n// @diff(g_d: (dual) -> dual)\ndouble g(double x)\n{\n    last = x * x;\n"
                 "    return x;\n}\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    assert "src.c:5:10: error: cannot differentiate a store of a value carrying derivatives to the global variable " \
           "'last' (a global has no shadow)" in result.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("entry", ["g_grad: (dup, const, const) -> active", "g_tan: forward (dual, const, const) -> dual"])
def test_store_through_a_const_argument_says_which_parameter(adgen, c_file, tmp_path, entry):
    """In a callee, through a pointer made from a 'const' argument: the callee's parameter named."""
    src = c_file("static void step(double *s, const double *w, int n)\n{\n    for (int i = 0; i < n; i++)\n"
                 "        s[i] = s[i] * w[i] + 1.0;\n}\n"
                 f"// @diff({entry})\n"
                 "double g(const double *w, double *s, int n)\n{\n    step(s, w, n);\n    step(s, w, n);\n"
                 "    return s[0] * s[1];\n}\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    assert "src.c:4:14: error: cannot differentiate a store of a value carrying derivatives through parameter 2, a " \
           "pointer without a shadow (a 'const' argument, or a pointer made from one: give that argument a shadow, " \
           "dup) in function 'g'" in result.err, result.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("entry, message", [
    ("f_fwd: forward (dual, const) -> dualonly", "an integer turned into a pointer (inttoptr)"),
    ("f_grad: (dup, const) -> active", "an integer turned into a pointer (inttoptr) from the address of memory with "
     "derivatives")])
def test_a_pointer_moved_through_its_address_is_a_located_error(adgen, c_file, tmp_path, entry, message):
    """An address aligned through an integer (`(double *)(((uintptr_t)x + 8) & ~7)`): its
    derivatives are where x's are, which adgen cannot follow through integers; never a zero
    derivative (reverse mode's was, silently, before it was refused)."""
    src = c_file(f"#include <stdint.h>\n// @diff({entry})\ndouble f(double *x, int n)\n{{\n"
                 "    double *p = (double *)(((uintptr_t)x + 8) & ~(uintptr_t)7);\n    double s = 0;\n"
                 "    for (int i = 0; i < n - 1; i++) s += p[i] * p[i];\n    return s;\n}\n")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1 and f"src.c:5:17: error: cannot differentiate {message}" in result.err, result.err
    assert not (tmp_path / "out").exists()


MATRICES = r"""
#include <stdlib.h>
typedef struct { int rows, cols; double *data; } Matrix;

static void mat_scale(Matrix *m, double s) { for (int i = 0; i < m->rows * m->cols; i++) m->data[i] *= s; }

/* pointers to memory with derivatives, kept in local structs and loaded back (ADBench's hand
 * model keeps its matrices so) */
// @diff(h_v4: forward[4] (dualv, const, dualv) -> dualonly; h_1: (dual, const, dual) -> dualonly)
double h(const double *theta, int n, double *out)
{
    Matrix m[2];
    for (int k = 0; k < 2; k++) {
        m[k].rows = n;
        m[k].cols = 1;
        m[k].data = malloc(n * sizeof(double));
        for (int i = 0; i < n; i++)
            m[k].data[i] = theta[i] * (k + 1);
    }
    mat_scale(&m[1], theta[0]);
    double s = 0;
    for (int i = 0; i < n; i++) {
        out[i] = m[0].data[i] * m[1].data[i];
        s += out[i];
    }
    free(m[0].data);
    free(m[1].data);
    return s;
}
"""


def test_interleaved_tangents_through_pointers_kept_in_memory(tmp_path):
    import numpy as np

    import adgen

    src = tmp_path / "matrices.c"
    src.write_text(MATRICES)
    lib = adgen.load(src, build_dir=tmp_path / "build")
    n, width = 3, 4
    theta = np.array([0.5, -1.2, 0.8])
    u = np.random.default_rng(1).normal(size=(n, width))  # lane k of element j at j*N + k
    dout = np.zeros(n * width)
    lanes = lib.h_v4(theta, np.ascontiguousarray(u.reshape(-1)), n, np.zeros(n), dout).d_ret
    value = lambda t: lib.h(t, n, np.zeros(n))
    for k in range(width):
        fd = (value(theta + 1e-6 * u[:, k]) - value(theta - 1e-6 * u[:, k])) / 2e-6
        assert lanes[k] == pytest.approx(fd, rel=1e-7)
        one = np.zeros(n)
        assert lib.h_1(theta, np.ascontiguousarray(u[:, k]), n, np.zeros(n), one) == pytest.approx(lanes[k])
        assert dout.reshape(n, width)[:, k] == pytest.approx(one, rel=1e-14)


GROWING = r"""
#include <math.h>
#include <stdlib.h>
/* a growing buffer: the sines of the running products of x, its capacity doubled as needed */
// @diff(g_fwd: (dual, const) -> dual; g_fwd4: forward[4] (dualv, const) -> dualonly)
// @diff(g_lanes: forward[4] (dual, const) -> dualonly)
double g(const double *x, int n)
{
    int cap = 1, len = 0;
    double *buf = malloc(cap * sizeof(double)), p = 1;
    for (int i = 0; i < n; i++) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap * sizeof(double));
        }
        p *= x[i];
        buf[len++] = sin(p);
    }
    double s = 0;
    for (int i = 0; i < len; i++)
        s += buf[i] * buf[i];
    free(buf);
    return s;
}
"""


def test_realloc_moves_tangents_with_the_memory(tmp_path):
    import numpy as np

    import adgen

    src = tmp_path / "growing.c"
    src.write_text(GROWING)
    lib = adgen.load(src, build_dir=tmp_path / "build")
    n = 11
    x = np.linspace(0.6, 1.3, n)
    u = np.random.default_rng(0).normal(size=(n, 4))
    lanes = lib.g_fwd4(x, np.ascontiguousarray(u.reshape(-1)), n).d_ret
    for k in range(4):
        fd = (lib.g(x + 1e-6 * u[:, k], n) - lib.g(x - 1e-6 * u[:, k], n)) / 2e-6
        assert lanes[k] == pytest.approx(fd, rel=1e-7)
        assert lib.g_fwd(x, np.ascontiguousarray(u[:, k]), n).d_ret == pytest.approx(lanes[k], rel=1e-12)
    separate = lib.g_lanes(x, *(np.ascontiguousarray(u[:, k]) for k in range(4)), n).d_ret
    assert list(separate) == pytest.approx(lanes, rel=1e-12)


SINCOS = r"""
#define _GNU_SOURCE
#include <math.h>
// @diff(g_grad: (active, active) -> active; g_fwd: (dual, dual) -> dual)
double g(double x, double y)
{
    double s, c;
    sincos(x * y, &s, &c);
    return s * c + 3 * s;
}
// @diff(gf_grad: (active) -> active; gf_fwd: (dual) -> dual)
float gf(float x) { float s, c; sincosf(x, &s, &c); return s * c + c; }
"""


@pytest.mark.slow
def test_sincos_two_results_through_pointers(tmp_path):
    """From adgen's definition of it (templates/libc.c.j2), in both modes and precisions."""
    import adgen

    src = tmp_path / "sincos.c"
    src.write_text(SINCOS)
    lib = adgen.load(src, build_dir=tmp_path / "build")
    x, y = 0.7, 1.3
    g = lib.g_grad(x, y, 1.0)
    assert g.d_x == pytest.approx(y * math.cos(2 * x * y) + 3 * y * math.cos(x * y), rel=1e-12)
    assert g.d_y == pytest.approx(x * math.cos(2 * x * y) + 3 * x * math.cos(x * y), rel=1e-12)
    assert lib.g_fwd(x, 0.4, y, -0.2).d_ret == pytest.approx(0.4 * g.d_x - 0.2 * g.d_y, rel=1e-12)
    assert lib.gf_grad(x, 1.0).d_x == pytest.approx(math.cos(2 * x) - math.sin(x), rel=1e-6)
    assert lib.gf_fwd(x, 1.0).d_ret == pytest.approx(math.cos(2 * x) - math.sin(x), rel=1e-6)
