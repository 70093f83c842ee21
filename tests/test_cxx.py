"""C++ sources (specs/cxx.md): annotated free functions, in namespaces or not, with scalars,
pointers and references for parameters, whose code uses C++ (classes with operators, templates,
lambdas, `std::vector`, `new` and `delete`), differentiated in both modes against central finite
differences and forward against reverse; the header called from C++ built by g++ (libstdc++) and
by the bundled clang (libc++); what is not supported yet a located error."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import quick_first, zig_cc

NBODY = r"""
#include <algorithm>
#include <cmath>
#include <vector>

namespace nbody {
struct vec3 {
    double x = 0, y = 0, z = 0;
    vec3 operator+(const vec3 &o) const { return {x + o.x, y + o.y, z + o.z}; }
    vec3 operator-(const vec3 &o) const { return {x - o.x, y - o.y, z - o.z}; }
    vec3 operator*(double s) const { return {x * s, y * s, z * s}; }
    vec3 &operator+=(const vec3 &o) { x += o.x; y += o.y; z += o.z; return *this; }
    double norm2() const { return x * x + y * y + z * z; }
};
struct Planet { vec3 pos, vel; double mass; };

template <typename T> static T sq(T v) { return v * v; }

static vec3 force(const Planet &a, const Planet &b) {
    vec3 d = b.pos - a.pos;
    double r2 = d.norm2() + 1e-3;
    return d * (a.mass * b.mass / (r2 * std::sqrt(r2)));
}

/* leapfrog steps of n planets (state: position then velocity, 6 per planet); the energy after */
// @diff(simulate_grad: (dup, dup, const, const) -> activeonly)
// @diff(simulate_fwd: forward (dual, dual, const, const) -> dualonly)
double simulate(const double *state, const double *mass, int n, int steps) {
    std::vector<Planet> ps(n);
    for (int i = 0; i < n; i++) {
        ps[i].pos = {state[6 * i], state[6 * i + 1], state[6 * i + 2]};
        ps[i].vel = {state[6 * i + 3], state[6 * i + 4], state[6 * i + 5]};
        ps[i].mass = mass[i];
    }
    const double dt = 0.01;
    std::vector<vec3> f(n);
    for (int s = 0; s < steps; s++) {
        std::fill(f.begin(), f.end(), vec3{});
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (i != j) f[i] += force(ps[i], ps[j]);
        for (int i = 0; i < n; i++) {
            ps[i].vel += f[i] * (dt / ps[i].mass);
            ps[i].pos += ps[i].vel * dt;
        }
    }
    double e = 0;
    auto kinetic = [](const Planet &p) { return 0.5 * p.mass * p.vel.norm2(); };
    for (const Planet &p : ps) e += kinetic(p) + sq(p.pos.x);
    return e;
}
}  // namespace nbody

/* references: the shadow of a reference is a reference */
// @diff(cube_grad: (dup, dup))
// @diff(cube_fwd: forward (dual, dual))
void cube(double &y, const double &x) { y = x * x * x; }

namespace norms {
/* overloads, told apart by the declaration each annotation stands before; their derived
   functions overloads of one name */
// @diff(norm_grad: (dup, const) -> active)
double norm(const double *v, int n) { double s = 0; for (int i = 0; i < n; i++) s += v[i] * v[i]; return std::sqrt(s); }
// @diff(norm_grad: (dup, const) -> active)
float norm(const float *v, int n) { float s = 0; for (int i = 0; i < n; i++) s += std::fabs(v[i]); return s; }
}

/* C names in a namespace */
namespace cnames { extern "C" {
// @diff(twice_grad: (dup, const) -> active)
double twice(const double *x, int n) { double s = 0; for (int i = 0; i < n; i++) s += 2 * x[i] * x[i]; return s; }
} }

/* new[] and delete[] of a scratch array */
// @diff(smooth_grad: (dup, dup, const))
void smooth(double *out, const double *in, int n) {
    double *tmp = new double[n];
    for (int i = 0; i < n; i++) tmp[i] = std::exp(in[i]);
    for (int i = 0; i < n; i++) out[i] = 0.5 * tmp[i] + 0.25 * (tmp[(i + 1) % n] + tmp[(i + n - 1) % n]);
    delete[] tmp;
}
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    import adgen

    work = tmp_path_factory.mktemp("cxx")
    src = work / "nbody.cpp"
    src.write_text(NBODY)
    return adgen.load(src, build_dir=work / "build")


def _state(n: int) -> np.ndarray:
    return np.sin(1.7 * np.arange(6 * n) + 0.3)


def test_nbody_with_vector_operators_templates_and_lambda(lib):
    n, steps = 5, 40
    state, mass = _state(n), 1 + 0.3 * np.arange(n)
    simulate = getattr(lib, "nbody::simulate")
    grad = np.zeros(6 * n)
    getattr(lib, "nbody::simulate_grad")(state, grad, mass, np.zeros(n), n, steps, 1.0)
    h = 1e-6
    for i in range(6 * n):
        e = np.zeros(6 * n)
        e[i] = h
        fd = (simulate(state + e, mass, n, steps) - simulate(state - e, mass, n, steps)) / (2 * h)
        assert grad[i] == pytest.approx(fd, rel=1e-6, abs=1e-8), i
    direction = np.cos(np.arange(6 * n))
    tangent = getattr(lib, "nbody::simulate_fwd")(state, direction, mass, np.zeros(n), n, steps)
    assert tangent == pytest.approx(np.dot(grad, direction), rel=1e-10)


def test_references_in_both_modes(lib):
    y, dy, x, dx = np.zeros(1), np.ones(1), np.array([1.5]), np.zeros(1)
    lib.cube_grad(y, dy, x, dx)
    assert dx[0] == pytest.approx(3 * 1.5 ** 2) and y[0] == pytest.approx(1.5 ** 3)
    y, ty = np.zeros(1), np.zeros(1)
    lib.cube_fwd(y, ty, np.array([1.5]), np.array([2.0]))
    assert ty[0] == pytest.approx(2 * 3 * 1.5 ** 2)


def test_c_names_in_a_namespace(lib):
    x, g = np.array([1.0, 2.0]), np.zeros(2)
    assert getattr(lib, "cnames::twice")(x, 2) == pytest.approx(10.0)
    assert lib.twice_grad(x, g, 2, 1.0) == pytest.approx(10.0)
    np.testing.assert_allclose(g, 4 * x)


def test_overloads_are_told_apart(lib):
    v = np.array([3.0, -4.0, 12.0])
    g = np.zeros(3)
    assert getattr(lib, "norms::norm_grad(const double *, double *, int, double)")(v, g, 3, 1.0) == pytest.approx(13.0)
    np.testing.assert_allclose(g, v / 13.0)
    f, gf = v.astype(np.float32), np.zeros(3, dtype=np.float32)
    assert getattr(lib, "norms::norm_grad(const float *, float *, int, float)")(f, gf, 3, 1.0) == pytest.approx(19.0)
    np.testing.assert_allclose(gf, np.sign(v))


def test_new_and_delete_of_an_array(lib):
    n, rng = 7, np.random.default_rng(2)
    x, w = rng.normal(size=n), rng.normal(size=n)
    gx = np.zeros(n)
    lib.smooth_grad(np.zeros(n), w.copy(), x, gx, n)
    t = np.exp(x)
    jac = np.diag(0.5 * t)
    for i in range(n):
        jac[i, (i + 1) % n] += 0.25 * t[(i + 1) % n]
        jac[i, (i - 1) % n] += 0.25 * t[(i - 1) % n]
    np.testing.assert_allclose(gx, jac.T @ w, rtol=1e-12)


MAIN = r"""
#include <cmath>
#include <cstdio>
#include <vector>
namespace nbody { double simulate(const double *state, const double *mass, int n, int steps); }
#include "nbody.adgen.h"
int main() {
    const int n = 4, steps = 30;
    std::vector<double> st(6 * n), d(6 * n), dm(n), m(n);
    for (int i = 0; i < 6 * n; i++) st[i] = std::sin(1.7 * i + 0.3);
    for (int i = 0; i < n; i++) m[i] = 1 + 0.3 * i;
    nbody::simulate_grad(st.data(), d.data(), m.data(), dm.data(), n, steps, 1.0);
    double worst = 0;
    for (int i = 0; i < 6 * n; i++) {
        std::vector<double> a = st, b = st;
        a[i] += 1e-6; b[i] -= 1e-6;
        double fd = (nbody::simulate(a.data(), m.data(), n, steps) - nbody::simulate(b.data(), m.data(), n, steps)) / 2e-6;
        worst = std::fmax(worst, std::fabs(fd - d[i]) / (1 + std::fabs(fd)));
    }
    std::printf("worst %g\n", worst);
    return worst > 1e-6;
}
"""


def _program(adgen, tmp_path, source: str, text: str, main: str, compiler: str = "bundled") -> str:
    """`source` (its `text`) built by adgen, then a program of `main` (its own file beside it), the
    source and adgen's object, built by `compiler` (g++, or the bundled clang: C or C++ by the
    name) and run: it exits 0 where its checks hold; the derivatives compiled against the
    program's C++ library (libstdc++ with g++, which this machine's C++ compiler is; the bundled
    libc++ with the bundled clang: --cxx-library=libc++). The header adgen made."""
    src = tmp_path / source
    src.write_text(text)
    entry = tmp_path / ("main.c" if source.endswith(".c") else "main.cpp")
    entry.write_text(main)
    library = ["--cxx-library=libc++"] if compiler == "bundled" else []
    result = adgen("build", "-q", src, "-o", tmp_path, *library)
    assert result.status == 0, result.err
    files = [str(entry), str(src), str(tmp_path / f"{src.stem}.adgen.o"), "-lm", "-o", str(tmp_path / "app")]
    command = ["g++", "-O2", *files] if compiler == "g++" else zig_cc("-O2", *files, cxx=entry.suffix == ".cpp")
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "app")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    return (tmp_path / f"{src.stem}.adgen.h").read_text()


@pytest.mark.parametrize("compiler", ["g++", "bundled"])
@pytest.mark.slow
def test_header_and_object_link_with_gcc_and_clang(adgen, tmp_path, compiler):
    """The object, compiled against the program's C++ library, links into a program built by g++
    (libstdc++) or by the bundled clang (libc++)."""
    if compiler == "g++" and shutil.which("g++") is None:
        pytest.skip("no g++ on this machine")
    _program(adgen, tmp_path, "nbody.cpp", NBODY, MAIN, compiler)


@pytest.mark.slow
def test_adgen_check_reads_cpp(adgen, c_file):
    src = c_file(NBODY, "nbody.cpp")
    result = adgen("check", src, "--size", "state=24", "--size", "mass=n", "--size", "n=4", "--size", "steps=10",
                   "--size", "v=n", "--size", "out=n", "--size", "in=n", "--size", "x=n")
    assert result.status == 0, result.out + result.err
    assert "checks pass" in result.out and "MISMATCH" not in result.out


@pytest.mark.parametrize("what, code", [
    ("a constructor", "struct S {\n    double v;\n    // @diff(f_grad: (dup, active))\n    S(double x) : v(x) {}\n};\n"),
    ("a member function template",
     "struct S {\n    // @diff(f_grad: (dup, active) -> active)\n    template <typename T> T f(T x) const { return x; }\n};\n"),
    ("a member function of a class template",
     "template <typename T> struct S {\n    // @diff(f_grad: (dup, active) -> active)\n    T f(T x) const { return x; }\n};\n"),
])
def test_annotation_before_what_is_not_supported_yet(adgen, c_file, tmp_path, what, code):
    src = c_file(code, "m.cpp")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1, result.err
    line = 3 if what == "a constructor" else 2
    assert f"{src}:{line}:" in result.err and f"{what} cannot be differentiated directly yet" in result.err
    assert "Traceback" not in result.err and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_throw_is_a_located_error(adgen, c_file, tmp_path):
    """A `throw` of the source where a derivative runs, and a `try`/`catch` around a call of a
    function outside the sources (which may really throw): errors at their lines."""
    src = c_file("#include <stdexcept>\n#include <string>\n// @diff(f_grad: (active) -> active)\n"
                 "double f(double x) {\n    if (x < 0) throw std::domain_error(\"negative\");\n    return x * x;\n}\n"
                 "// @diff(h_grad: (active) -> active)\ndouble h(double x) {\n    double r = x;\n"
                 "    try { r += std::stod(\"1.5\"); } catch (const std::exception &) { r = 0; }\n    return r * x;\n}\n",
                 "t.cpp")
    result = adgen("build", src, "-o", tmp_path / "out", "--cxx-library=libc++")  # (libc++'s std::stod is out of
    # line, in its library: what may really throw; libstdc++'s is inlined, its strtod an error of its own)
    assert result.status == 1, result.err
    assert f"{src}:5:16: error: cannot differentiate a C++ exception thrown (`throw`) where derivatives run: they do " \
           "not pass exceptions (specs/cxx.md) in function 'f(double)' (needed by 'f_grad')" in result.err
    assert f"{src}:11:16: error: cannot differentiate a call whose C++ exception the source catches (`try`/`catch`): " \
           "derivatives do not catch exceptions (specs/cxx.md) in function 'h(double)' (needed by 'h_grad')" in result.err
    assert "Traceback" not in result.err and not (tmp_path / "out").exists()


EXCEPTIONS = r"""
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>
/* not differentiated: throws and catches as it likes */
double parse(const std::string &s) {
    try { return std::stod(s); } catch (const std::invalid_argument &) { throw std::runtime_error("bad " + s); }
}
// @diff(f_grad: (dup, const) -> active)
double f(const double *x, int n) {
    std::vector<double> t;
    for (int i = 0; i < n; i++) t.push_back(std::sin(x[i]) * x[i]);  /* may throw length_error: aborts here */
    double s = 0;
    try { for (double v : t) s += v * v; } catch (...) { s = -1; }   /* nothing in it throws */
    return s + t.at(0);                                              /* may throw out_of_range: aborts here */
}
"""

EXCEPTIONS_MAIN = r"""
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
double parse(const std::string &s);
double f(const double *x, int n);
#include "exceptions.adgen.h"
int main() {
    double x[3] = {0.5, -1.2, 2.0}, g[3] = {0, 0, 0}, worst = 0;
    double v = f_grad(x, g, 3, 1.0);
    for (int i = 0; i < 3; i++) {
        double p[3] = {x[0], x[1], x[2]}, m[3] = {x[0], x[1], x[2]};
        p[i] += 1e-6; m[i] -= 1e-6;
        worst = std::fmax(worst, std::fabs((f(p, 3) - f(m, 3)) / 2e-6 - g[i]));
    }
    int caught = 0;
    try { parse("x"); } catch (const std::runtime_error &) { caught = 1; }  /* the program's own exceptions */
    std::printf("%g %g %d\n", v - f(x, 3), worst, caught);
    return !(v == f(x, 3) && worst < 1e-6 && caught);
}
"""


@pytest.mark.parametrize("compiler", ["g++", "bundled"])
@pytest.mark.slow
def test_exceptions_elsewhere_and_where_they_only_might_pass(adgen, tmp_path, compiler):
    """A source that throws and catches in a function no derivative runs builds; a differentiated
    function whose library code may throw (a vector's growth, `at`) and with a `try` around code
    that cannot throw is differentiated; the program keeps its own exceptions; the object needs
    nothing of the C++ library the program is not built with (libc++'s throwing helpers, left out
    of line, are no comdat of a header's that the linker could drop)."""
    if compiler == "g++" and shutil.which("g++") is None:
        pytest.skip("no g++ on this machine")
    _program(adgen, tmp_path, "exceptions.cpp", EXCEPTIONS, EXCEPTIONS_MAIN, compiler)
    undefined = subprocess.run(["nm", "-u", str(tmp_path / "exceptions.adgen.o")], capture_output=True, text=True).stdout
    assert "__cxa" not in undefined and "__gxx_personality" not in undefined and "St3__1" not in undefined, undefined


def test_a_class_of_a_namespace_by_reference_declared_ahead(adgen, tmp_path):
    """The header declares the source's own class ahead in its namespace, so a program may
    include it before the class's definition; the shadow of `const geo::vec3 &` is a `geo::vec3 &`."""
    header = _program(
        adgen, tmp_path, "ns.cpp", "namespace geo {\nstruct vec3 { double x, y, z; };\n// @diff(len2_grad: (dup) -> active)\n"
        "double len2(const vec3 &v) { return v.x * v.x + v.y * v.y + v.z * v.z; }\n}\n",
        '#include "ns.adgen.h"\nnamespace geo { struct vec3 { double x, y, z; }; double len2(const vec3 &v); }\n'
        "int main() { geo::vec3 v{1, 2, 3}, d{}; double r = len2_grad(v, d, 1.0);\n"
        "  return !(r == 14 && d.x == 2 && d.y == 4 && d.z == 6 && geo::len2(v) == 14); }\n")
    assert "namespace geo { struct vec3; }\n" in header
    assert "inline double len2_grad(const geo::vec3 &v, geo::vec3 &d_v, double d_ret) {" in header


TENSOR_TYPES = r"""
template <typename T, int... n> struct tensor;  // declared ahead, defined by its partial specializations
template <typename T, int n> struct tensor<T, n> { T value[n]; };
template <typename T, int first, int... rest> struct tensor<T, first, rest...> { tensor<T, rest...> value[first]; };
"""
TENSORS = TENSOR_TYPES + r"""// @diff(trace_grad: (dup) -> active)
double trace(const tensor<double, 2, 2> &a) { return a.value[0].value[0] * a.value[1].value[1]; }
"""


def test_a_class_template_instance_brings_its_template_and_specializations(adgen, tmp_path):
    """The stubs copy the source's class template whole, primary declaration and partial
    specializations, where a parameter's type is one of its instances."""
    _program(adgen, tmp_path, "tensors.cpp", TENSORS,
             TENSOR_TYPES + '#include "tensors.adgen.h"\nint main() { tensor<double, 2, 2> a{{{{1, 2}}, {{3, 4}}}}, d{};\n'
             '  double r = trace_grad(a, d, 1.0);\n'
             '  return !(r == 4 && d.value[0].value[0] == 4 && d.value[1].value[1] == 1 && d.value[0].value[1] == 0); }\n')


VECTORS = r"""
#include <cmath>
#include <vector>
// @diff(softplus_grad: (dup, dup))
// @diff(softplus_fwd: forward (dual, dual))
void softplus(std::vector<double> &y, const std::vector<double> &x) {
    for (size_t i = 0; i < x.size(); i++) y[i] = std::log1p(std::exp(x[i])) * (i + 1);
}
"""

VECTORS_MAIN = r"""
#include <cmath>
#include <vector>
#include "vectors.adgen.h"
void softplus(std::vector<double> &y, const std::vector<double> &x);
int main() {
    std::vector<double> x = {0.5, -1, 2}, y(3), dy = {1, 1, 1}, dx(3), ty(3), tx = {0.3, -0.2, 0.1};
    softplus_grad(y, dy, x, dx);
    softplus_fwd(y, ty, x, tx);
    double bad = 0;
    for (int i = 0; i < 3; i++) {
        double slope = (i + 1) / (1 + std::exp(-x[i]));
        bad += std::fabs(dx[i] - slope) + std::fabs(ty[i] - slope * tx[i]) + std::fabs(dy[i]);
    }
    return bad > 1e-12;
}
"""


@pytest.mark.parametrize("compiler", ["g++", "bundled"])
@pytest.mark.slow
def test_vector_parameters_with_vector_shadows(adgen, tmp_path, compiler):
    """`std::vector<double> &` duplicated: the shadow is a vector of the same size, whatever C++
    library the program's vectors come from (libstdc++'s with g++)."""
    if compiler == "g++" and shutil.which("g++") is None:
        pytest.skip("no g++ on this machine")
    header = _program(adgen, tmp_path, "vectors.cpp", VECTORS, VECTORS_MAIN, compiler)
    assert "inline void softplus_grad(std::vector<double> &y, std::vector<double> &d_y, const std::vector<double> &x, " \
           "std::vector<double> &d_x) {" in header


@pytest.mark.slow
def test_check_says_it_cannot_make_a_vector(adgen, c_file):
    result = adgen("check", c_file(VECTORS, "vectors.cpp"))
    assert result.status == 1 and "Traceback" not in result.err
    assert "'softplus' has parameter 'y' pointing to data that reaches its floats through pointers (a std::vector, " \
           "a struct holding a pointer): adgen check cannot make one" in result.err


def test_a_c_struct_holding_a_pointer_is_duplicated_with_its_shadow_pointer(adgen, tmp_path):
    """The same in C: `dup` on a struct whose field points to doubles; the shadow struct's field
    points to their shadows."""
    _program(adgen, tmp_path, "buf.c",
             "#include <math.h>\nstruct buf { double *data; int n; };\n// @diff(norm_grad: (dup) -> active)\n"
             "double norm(const struct buf *b) { double s = 0;\n"
             "  for (int i = 0; i < b->n; i++) s += b->data[i] * b->data[i]; return sqrt(s); }\n",
             'struct buf { double *data; int n; };\n#include "buf.adgen.h"\n'
             "int main(void) { double x[3] = {3, 4, 12}, dx[3] = {0}; struct buf b = {x, 3}, db = {dx, 3};\n"
             "  double r = norm_grad(&b, &db, 1.0);\n"
             "  return !(r == 13 && dx[0] == 3.0 / 13 && dx[1] == 4.0 / 13 && dx[2] == 12.0 / 13); }\n")



def test_a_class_reaching_its_floats_through_a_base_and_a_member_struct(adgen, tmp_path):
    """`dup` on a class whose pointer to doubles sits in its base class's member struct (as
    Eigen's `Matrix` keeps it in its base's storage): its shadow is an object of the same class."""
    _program(adgen, tmp_path, "based.cpp",
             "struct Storage { double *data; long n; };\nstruct Base { Storage s; };\n"
             "struct Vec : Base { double norm2() const { double t = 0;\n"
             "  for (long i = 0; i < s.n; i++) t += s.data[i] * s.data[i] * (i + 1); return t; } };\n"
             "// @diff(sumsq_grad: (dup) -> activeonly)\ndouble sumsq(const Vec &v) { return v.norm2(); }\n",
             "struct Storage { double *data; long n; };\nstruct Base { Storage s; };\nstruct Vec : Base {};\n"
             '#include "based.adgen.h"\n'
             "int main() { double x[3] = {1, 2, 3}, dx[3] = {0, 0, 0}; Vec v, dv; v.s = {x, 3}; dv.s = {dx, 3};\n"
             "  sumsq_grad(v, dv, 1.0); return !(dx[0] == 2 && dx[1] == 8 && dx[2] == 18); }\n")


MEMBERS = r"""
#include <cmath>
namespace geo {
struct Body {
    double x, y, m;
    // @diff(potential_grad: (dup, const) -> active)
    double potential(double k) const { return k * m / std::sqrt(x * x + y * y); }
    // @diff(push_grad: (dup, dup, const))
    void push(const double &f, double dt);
    // @diff(weighted_grad: (dup, const) -> active)
    static double weighted(const double *v, int n);
};
void Body::push(const double &f, double dt) { x += f * dt * dt / m; y += f * dt; }
double Body::weighted(const double *v, int n) { double s = 0; for (int i = 0; i < n; i++) s += v[i] * v[i] * (i + 1); return s; }
}
"""

MEMBERS_MAIN = r"""
#include <cmath>
#include "members.adgen.h"
namespace geo {
struct Body { double x, y, m; double potential(double k) const; void push(const double &f, double dt);
              static double weighted(const double *v, int n); };
}
int main() {
    geo::Body b{3, 4, 2}, db{};
    double r = potential_grad(&b, &db, 1.5, 1.0);  /* k m / |(x, y)|: d/dx = -k m x / r^3, d/dm = k / r */
    int bad = std::fabs(r - 0.6) > 1e-12 || std::fabs(db.x + 1.5 * 2 * 3 / 125.0) > 1e-12 ||
              std::fabs(db.y + 1.5 * 2 * 4 / 125.0) > 1e-12 || std::fabs(db.m - 1.5 / 5) > 1e-12;
    geo::Body c{1, 1, 2}, dc{1, 1, 0};  /* seeds of the new x and y */
    double f = 3, df = 0;
    push_grad(&c, &dc, f, df, 0.5);     /* x += f dt^2 / m, y += f dt */
    bad |= std::fabs(df - (0.25 / 2 + 0.5)) > 1e-12 || std::fabs(dc.m + 3 * 0.25 / 4) > 1e-12 || dc.x != 1 || dc.y != 1;
    bad |= c.x != 1 + 3 * 0.25 / 2 || c.y != 1 + 1.5;
    double v[3] = {1, 2, 3}, dv[3] = {};
    bad |= geo::weighted_grad(v, dv, 3, 1.0) != 1 + 8 + 27 || dv[0] != 2 || dv[1] != 8 || dv[2] != 18;
    bad |= geo::Body::weighted(v, 3) != 36;
    return bad;
}
"""


@pytest.mark.slow
def test_member_functions_take_their_object_first(adgen, tmp_path):
    """A const member function (its object `const geo::Body *self`, shadow `geo::Body *d_self`), a
    non-const one defined outside its class, and a static one (no object): their derived
    functions in the class's namespace (found by argument-dependent lookup from a `geo::Body *`)."""
    header = _program(adgen, tmp_path, "members.cpp", MEMBERS, MEMBERS_MAIN)
    assert "inline double potential_grad(const geo::Body *self, geo::Body *d_self, double k, double d_ret) {" in header
    assert "inline void push_grad(geo::Body *self, geo::Body *d_self, const double &f, double &d_f, double dt) {" \
        in header
    assert "inline double weighted_grad(const double *v, double *d_v, int n, double d_ret) {" in header
    assert header.index("namespace geo {") < header.index("potential_grad") < header.index("} /* namespace geo */")


@pytest.mark.slow
def test_check_of_members(adgen, c_file):
    """adgen check checks a static member function defined outside its class, and says it cannot
    call a member function's primal yet."""
    src = c_file(MEMBERS, "members.cpp")
    result = adgen("check", src, "--size", "v=n", "--only", "geo::weighted_grad")
    assert result.status == 0, result.out + result.err
    result = adgen("check", src, "--size", "v=n")
    assert result.status == 1 and "Traceback" not in result.err
    assert "'geo::potential_grad' differentiates the C++ member function 'geo::Body::potential', which adgen check " \
           "cannot call yet" in result.err


TEMPLATES = r"""
#include <cmath>
namespace norms {
// @diff(norm_grad<double>: (dup, const) -> active; norm_grad<float>: (dup, const) -> active)
template <typename T>
T norm(const T *v, int n) { T s = 0; for (int i = 0; i < n; i++) s += v[i] * v[i]; return std::sqrt(s); }

// @diff(horner3_grad<3>: (active) -> active)
template <int N>
double horner(double x) { double p = 1; for (int i = 0; i < N; i++) p = p * x + i; return p; }
}
"""


@pytest.mark.slow
def test_function_templates_by_instantiation(tmp_path):
    """Each entry names the instantiation it derives; adgen.load calls the instantiations too. The
    two instantiations' derived functions are overloads of one name in the header, which
    adgen.load tells apart by their parameter types."""
    import adgen as package

    src = tmp_path / "templates.cpp"
    src.write_text(TEMPLATES)
    lib = package.load(src, build_dir=tmp_path / "build")
    v, g = np.array([3.0, 4.0]), np.zeros(2)
    assert getattr(lib, "norms::norm_grad(const double *, double *, int, double)")(v, g, 2, 1.0) == pytest.approx(5.0)
    np.testing.assert_allclose(g, v / 5.0)
    f, gf = v.astype(np.float32), np.zeros(2, dtype=np.float32)
    assert getattr(lib, "norms::norm_grad(const float *, float *, int, float)")(f, gf, 2, 1.0) == pytest.approx(5.0)
    assert getattr(lib, "norms::norm<double>")(v, 2) == pytest.approx(5.0)
    got = getattr(lib, "norms::horner3_grad")(2.0, 1.0)  # ((x + 0) x + 1) x + 2 = x^3 + x + 2
    assert got.ret == pytest.approx(12.0) and got.d_x == pytest.approx(13.0)
    header = (tmp_path / "build" / "templates.adgen.h").read_text()
    assert "inline float norm_grad(const float *v, float *d_v, int n, float d_ret) {" in header
    assert "inline double norm_grad(const double *v, double *d_v, int n, double d_ret) {" in header


@pytest.mark.slow
def test_check_of_templates(adgen, c_file):
    result = adgen("check", c_file(TEMPLATES, "templates.cpp"), "--size", "v=n")
    assert result.status == 0, result.out + result.err
    assert "3 of 3 checks pass" in result.out


@quick_first("entry, message", [
    ("norm_grad: (dup, const) -> active",
     "'norms::norm' is a function template: name the instantiation each entry derives, as `norm_grad<double>: ...`"),
    ("norm_grad<nosuch>: (dup, const) -> active", "cannot instantiate 'norms::norm<nosuch>': "),
])
def test_template_entries_name_an_instantiation(adgen, c_file, tmp_path, entry, message):
    src = c_file(TEMPLATES.replace("norm_grad<double>: (dup, const) -> active; norm_grad<float>: (dup, const) -> "
                                   "active", entry), "t.cpp")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1 and "Traceback" not in result.err
    assert f"{src}:4:" in result.err and message in result.err, result.err
    assert not (tmp_path / "out").exists()


def test_template_arguments_on_a_function_are_an_error(adgen, c_file, tmp_path):
    src = c_file("// @diff(sq_grad<double>: (active) -> active)\ndouble sq(double x) { return x * x; }\n", "s.cpp")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1
    assert f"{src}:1:17: error: 'sq' is not a function template: its entries name no template arguments" in result.err


EIGEN = next((d for d in ("/usr/include/eigen3", "/usr/local/include/eigen3") if Path(d, "Eigen").is_dir()), None)

EIGEN_SOURCE = r"""#include <Eigen/Dense>
// @diff(energy_grad: (dup, dup) -> active; energy_fwd: forward (dual, dual) -> dual)
double energy(const Eigen::VectorXd &x, const Eigen::MatrixXd &A) {
    Eigen::VectorXd Ax = A * x;
    return x.dot(Ax) + x.array().sin().sum() + A.squaredNorm();
}
// @diff(rot_grad: (dup, dup) -> activeonly)
double rot(const Eigen::Vector3d &v, const Eigen::Matrix3d &R) { return (R * v).norm() * v.x(); }
// @diff(mapped_grad: (dup, const) -> active)
double mapped(const double *p, int n) { Eigen::Map<const Eigen::VectorXd> v(p, n); return v.squaredNorm() * v.sum(); }
"""

EIGEN_MAIN = r"""#include <Eigen/Dense>
#include <cstdio>
#include <cmath>
#include "eigen.adgen.h"
double energy(const Eigen::VectorXd &x, const Eigen::MatrixXd &A);
double rot(const Eigen::Vector3d &v, const Eigen::Matrix3d &R);
double mapped(const double *p, int n);
int main() {
    int n = 4; double h = 1e-6, bad = 0;
    Eigen::VectorXd x(n); x << 0.3, -0.7, 1.1, 0.2;
    Eigen::MatrixXd A(n, n); for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) A(i, j) = std::sin(i + 2.0 * j);
    Eigen::VectorXd dx = Eigen::VectorXd::Zero(n); Eigen::MatrixXd dA = Eigen::MatrixXd::Zero(n, n);
    energy_grad(x, dx, A, dA, 1.0);
    for (int i = 0; i < n; i++) { Eigen::VectorXd p = x, m = x; p(i) += h; m(i) -= h;
        double fd = (energy(p, A) - energy(m, A)) / (2 * h); bad = std::fmax(bad, std::fabs(fd - dx(i))); }
    for (int i = 0; i < n * n; i++) { Eigen::MatrixXd p = A, m = A; p.data()[i] += h; m.data()[i] -= h;
        double fd = (energy(x, p) - energy(x, m)) / (2 * h); bad = std::fmax(bad, std::fabs(fd - dA.data()[i])); }
    Eigen::VectorXd u(n); u << 0.5, -1, 0.25, 2; Eigen::MatrixXd U = A.transpose() * 0.1;
    energy_fwd_result r = energy_fwd(x, u, A, U);
    double jvp = dx.dot(u) + (dA.array() * U.array()).sum();
    std::printf("fd err %g, fwd %g vs %g\n", bad, r.d_ret, jvp);
    Eigen::Vector3d v(0.2, -0.4, 0.9), dv = Eigen::Vector3d::Zero(); Eigen::Matrix3d R = Eigen::Matrix3d::Identity() * 1.5, dR = Eigen::Matrix3d::Zero();
    R(0, 1) = 0.3;
    rot_grad(v, dv, R, dR, 1.0);
    double b2 = 0; for (int i = 0; i < 3; i++) { Eigen::Vector3d p = v, m = v; p(i) += h; m(i) -= h; b2 = std::fmax(b2, std::fabs((rot(p, R) - rot(m, R)) / (2 * h) - dv(i))); }
    for (int i = 0; i < 9; i++) { Eigen::Matrix3d p = R, m = R; p.data()[i] += h; m.data()[i] -= h; b2 = std::fmax(b2, std::fabs((rot(v, p) - rot(v, m)) / (2 * h) - dR.data()[i])); }
    double q[3] = {0.5, 1.5, -0.5}, dq[3] = {0, 0, 0};
    mapped_grad(q, dq, 3, 1.0);
    double b3 = 0; for (int i = 0; i < 3; i++) { double p[3] = {q[0], q[1], q[2]}, m[3] = {q[0], q[1], q[2]}; p[i] += h; m[i] -= h; b3 = std::fmax(b3, std::fabs((mapped(p, 3) - mapped(m, 3)) / (2 * h) - dq[i])); }
    std::printf("fixed-size err %g, mapped err %g\n", b2, b3);
    return !(bad < 1e-6 && std::fabs(r.d_ret - jvp) < 1e-9 && b2 < 1e-6 && b3 < 1e-6);
}
"""


@pytest.mark.skipif(EIGEN is None, reason="no Eigen headers (Debian's libeigen3-dev, which .ci/run installs)")
@pytest.mark.parametrize("compiler", ["g++", "bundled"])
@pytest.mark.slow
def test_eigen_matrices_and_vectors_by_reference(adgen, tmp_path, compiler):
    """Eigen's dense matrices and vectors by reference (dynamic: their floats through a pointer;
    fixed-size: held), `dup` and `dual` with shadows of the same type, and `Eigen::Map` over a
    pointer inside: gradients against central finite differences, forward against reverse, from
    a program built by g++ (libstdc++) or the bundled clang (libc++)."""
    if compiler == "g++" and shutil.which("g++") is None:
        pytest.skip("no g++ on this machine")
    src, entry = tmp_path / "eigen.cpp", tmp_path / "main.cpp"
    src.write_text(EIGEN_SOURCE)
    entry.write_text(EIGEN_MAIN)
    library = ["--cxx-library=libc++"] if compiler == "bundled" else []  # (the program's C++ library)
    result = adgen("build", "-q", src, "-o", tmp_path, *library, "--", "-I", EIGEN)
    assert result.status == 0, result.err
    files = ["-I", EIGEN, str(entry), str(src), str(tmp_path / "eigen.adgen.o"), "-o", str(tmp_path / "app")]
    command = ["g++", "-O2", *files] if compiler == "g++" else zig_cc("-O2", *files, cxx=True)
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    run = subprocess.run([str(tmp_path / "app")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


LIBRARY_CLASSES = r"""#include <array>
#include <complex>
// @diff(cabs2_grad: (dup, dup) -> active)
double cabs2(const std::complex<double> &z, const std::array<double, 3> &w) { return std::norm(z) * w[0] + w[1] * w[2] * z.real(); }
"""


@pytest.mark.slow
def test_complex_and_array_by_reference(adgen, tmp_path):
    """`std::complex<double>` and `std::array<double, 3>` by reference, `dup`: shadows of the same
    types, the gradient exact (a polynomial)."""
    _program(adgen, tmp_path, "lib.cpp", LIBRARY_CLASSES, r"""#include <array>
#include <complex>
#include <cstdio>
#include "lib.adgen.h"
int main() {
    std::complex<double> z(0.5, -1.5), dz(0, 0); std::array<double, 3> w{2, 3, 4}, dw{0, 0, 0};
    double r = cabs2_grad(z, dz, w, dw, 1.0);
    std::printf("%g | %g %g | %g %g %g\n", r, dz.real(), dz.imag(), dw[0], dw[1], dw[2]);
    // want dz = (2*0.5*2 + 12, 2*-1.5*2) = (14, -6); dw = (2.5, 4*0.5, 3*0.5) = (2.5, 2, 1.5)
    return !(dz.real() == 14 && dz.imag() == -6 && dw[0] == 2.5 && dw[1] == 2 && dw[2] == 1.5);
}
""")


BY_VALUE = r"""
#include <cmath>
#include <vector>
namespace geo {
struct vec3 { double x, y, z; vec3 operator*(double s) const { return {x * s, y * s, z * s}; } };
// @diff(len_grad: (active) -> active; len_fwd: forward (dual) -> dual)
double len(vec3 v) { return std::sqrt(v.x * v.x + v.y * v.y + v.z * v.z); }
// @diff(scale_grad: (active, active) -> active)
vec3 scale(vec3 v, double s) { return v * s; }
// @diff(wsum_grad: (const, dup, const) -> active)
double wsum(std::vector<double> w, const double *x, int n) { double s = 0; for (int i = 0; i < n; i++) s += w[i] * x[i]; return s; }
// @diff(sq_grad: (dup) -> active)
double sq(std::vector<double> &&w) { double s = 0; for (double v : w) s += v * v * v; return s; }
struct Body {
    vec3 p; double m;
    // @diff(shifted_grad: (dup, active, const) -> active)
    double shifted(vec3 d, double k) const { return m * ((p.x + d.x) * (p.x + d.x) + k * d.y); }
};
// @diff(dotv_grad<geo::vec3>: (active, active) -> active)
template <typename T> T dotv(T a, T b) { return T{a.x * b.x, a.y * b.y, a.z * b.z}; }
/* overloads whose derived functions are overloads too */
// @diff(total_grad: (dup, const) -> active)
double total(const double *v, int n) { double s = 0; for (int i = 0; i < n; i++) s += v[i] * v[i]; return s; }
// @diff(total_grad: (dup, const) -> active)
float total(const float *v, int n) { float s = 0; for (int i = 0; i < n; i++) s += 3 * v[i]; return s; }
}
"""

BY_VALUE_MAIN = r"""
#include <cmath>
#include <cstdio>
#include <vector>
namespace geo {
struct vec3 { double x, y, z; vec3 operator*(double s) const { return {x * s, y * s, z * s}; } };
struct Body { vec3 p; double m; };
}
#include "byvalue.adgen.h"
static int bad = 0;
static void expect(double got, double want, const char *what) {
    if (std::fabs(got - want) > 1e-12 * (1 + std::fabs(want))) { std::printf("%s: %g, not %g\n", what, got, want); bad = 1; }
}
int main() {
    geo::vec3 v{1, 2, 3};
    geo::len_grad_result r = len_grad(v, 1.0);  /* found by argument-dependent lookup */
    expect(r.ret, std::sqrt(14.0), "len"); expect(r.d_v.x, 1 / std::sqrt(14.0), "d_v.x"); expect(r.d_v.z, 3 / std::sqrt(14.0), "d_v.z");
    expect(geo::len_fwd(v, geo::vec3{0.5, 1, -1}).d_ret, (0.5 + 2 - 3) / std::sqrt(14.0), "len tangent");
    geo::scale_grad_result s = geo::scale_grad(v, 2.0, geo::vec3{1, -1, 0.5});
    expect(s.ret.y, 4, "scale"); expect(s.d_v.x, 2, "d_v"); expect(s.d_v.y, -2, "d_v"); expect(s.d_s, 1 - 2 + 1.5, "d_s");
    std::vector<double> w{1, 2, 3}; double x[3] = {4, 5, 6}, dx[3] = {0, 0, 0};
    expect(geo::wsum_grad(w, x, dx, 3, 1.0), 32, "wsum"); expect(dx[2], 3, "d_x");
    std::vector<double> dw(3);
    expect(geo::sq_grad(std::vector<double>{1, 2, 3}, dw, 1.0), 36, "sq"); expect(dw[1], 12, "d_w");
    geo::Body b{{1, 2, 3}, 2.0}, db{{0, 0, 0}, 0};
    geo::shifted_grad_result h = shifted_grad(&b, &db, geo::vec3{0.5, 1, 0}, 3.0, 1.0);
    expect(h.ret, 2 * (2.25 + 3), "shifted"); expect(db.p.x, 6, "d_p.x"); expect(db.m, 5.25, "d_m");
    expect(h.d_d.x, 6, "d_d.x"); expect(h.d_d.y, 6, "d_d.y");
    geo::dotv_grad_result t = dotv_grad(geo::vec3{1, 2, 3}, geo::vec3{4, 5, 6}, geo::vec3{1, -1, 2});
    expect(t.d_a.y, -5, "d_a.y"); expect(t.d_b.z, 6, "d_b.z");
    double vd[2] = {3, 4}, dvd[2] = {0, 0}; float vf[2] = {3, 4}, dvf[2] = {0, 0};
    expect(geo::total_grad(vd, dvd, 2, 1.0), 25, "total (double)"); expect(dvd[1], 8, "d_v (double)");
    expect(geo::total_grad(vf, dvf, 2, 1.0f), 21, "total (float)"); expect(dvf[1], 3, "d_v (float)");
    return bad;
}
"""


@pytest.mark.parametrize("compiler", ["g++", "bundled"])
@pytest.mark.slow
def test_classes_by_value_rvalue_references_and_overloads(adgen, tmp_path, compiler):
    """Classes by value as annotated parameters and results (active and dual, with the rules of
    C's structs by value; a `std::vector` by value const), an rvalue reference duplicated, a
    member function and a template's instantiation taking a class by value; the header's
    declarations in the function's namespace, two overloads' derived functions overloads of one
    name; from a program built by g++ (libstdc++) or the bundled clang (libc++)."""
    if compiler == "g++" and shutil.which("g++") is None:
        pytest.skip("no g++ on this machine")
    header = _program(adgen, tmp_path, "byvalue.cpp", BY_VALUE, BY_VALUE_MAIN, compiler)
    assert "inline len_grad_result len_grad(geo::vec3 v, double d_ret) {" in header
    assert "inline double sq_grad(std::vector<double> &&w, std::vector<double> &d_w, double d_ret) {" in header
    assert "inline float total_grad(const float *v, float *d_v, int n, float d_ret) {" in header
    assert 'extern "C" float __adgen_c_total_grad__2(const float *v, float *d_v, int n, float d_ret);' in header


@pytest.mark.slow
def test_by_value_and_overloads_from_python(tmp_path):
    """adgen.load names derived functions declared in C++ with their namespaces, and overloads
    of one name with their parameter types too; a class by value is a ctypes structure."""
    import adgen as package

    src = tmp_path / "byvalue.cpp"
    src.write_text(BY_VALUE)
    lib = package.load(src, build_dir=tmp_path / "build")
    assert {"geo::len_grad", "geo::total_grad(const double *, double *, int, double)",
            "geo::total_grad(const float *, float *, int, float)"} <= set(lib.functions)
    got = getattr(lib, "geo::len_grad")({"x": 1.0, "y": 2.0, "z": 2.0}, 1.0)
    assert got.ret == pytest.approx(3.0) and got.d_v == pytest.approx({"x": 1 / 3, "y": 2 / 3, "z": 2 / 3})
    g = np.zeros(2, dtype=np.float32)
    assert getattr(lib, "geo::total_grad(const float *, float *, int, float)")(
        np.array([1.0, 2.0], dtype=np.float32), g, 2, 1.0) == pytest.approx(9.0)
    np.testing.assert_allclose(g, [3, 3])
    with pytest.raises(TypeError, match="cannot pass parameter 'w': it is passed by value, of a type ctypes cannot"):
        getattr(lib, "geo::wsum_grad")


@pytest.mark.slow
def test_check_of_classes_by_value(adgen, c_file):
    """adgen check makes a class holding floats by value (its fields random), and says it cannot
    make one holding a std::vector."""
    src = c_file(BY_VALUE, "byvalue.cpp")
    for name in ("geo::scale_grad", "geo::len_fwd", "geo::dotv_grad"):
        result = adgen("check", src, "--only", name)
        assert result.status == 0 and "1 of 1 checks pass" in result.out, result.out + result.err
    result = adgen("check", src, "--only", "geo::wsum_grad", "--size", "x=n")
    assert result.status == 1 and "Traceback" not in result.err
    assert "'geo::wsum' takes parameter 'w' by value, of a type Python cannot make" in result.err


NESTED = r"""
namespace opt {
// @diff(rosen_grad: (dup, const) -> active; rosen_hvp: forward of rosen_grad (dual, dual, const, const) -> dual)
double rosen(const double *x, int n) {
    double s = 0;
    for (int i = 0; i + 1 < n; i++) s += 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]);
    return s;
}
}
"""


@pytest.mark.slow
def test_a_derivative_of_a_derived_function_declared_in_cxx(tmp_path):
    """`of` an entry whose derived function is declared in C++: forward over reverse gives
    Hessian-vector products, against central differences of the gradient."""
    import adgen as package

    src = tmp_path / "nested.cpp"
    src.write_text(NESTED)
    lib = package.load(src, build_dir=tmp_path / "build")
    grad, hvp = getattr(lib, "opt::rosen_grad"), getattr(lib, "opt::rosen_hvp")
    x, u, n = np.array([0.5, -0.3, 1.2, 0.8]), np.array([1.0, 0.5, -0.25, 2.0]), 4

    def gradient(at):
        g = np.zeros(n)
        grad(at, g, n, 1.0)
        return g

    tangent = np.zeros(n)
    hvp(x, u, np.zeros(n), tangent, n, 1.0)
    h = 1e-6
    np.testing.assert_allclose(tangent, (gradient(x + h * u) - gradient(x - h * u)) / (2 * h), rtol=1e-6)


@pytest.mark.parametrize("entries, message", [
    ("total_grad: (dup, const) -> active", "derived name 'total_grad' is used twice"),
    ("twice_hvp: forward of total_grad (dual, dual, const, const) -> dual",
     "'total_grad' names C++ overloads, derived from different functions: give the one 'twice_hvp' derives a name of "
     "its own"),
])
def test_overloaded_derived_names_that_cannot_be(adgen, c_file, tmp_path, entries, message):
    """Two entries of one name whose derived functions take the same parameter types are one name
    used twice; an `of` entry cannot name overloads."""
    src = c_file("namespace k {\n// @diff(total_grad: (dup, const) -> active)\ndouble total(const double *v, int n);\n"
                 f"// @diff({entries})\ndouble other(const double *v, int n);\n"
                 "// @diff(total_grad: (dup, const) -> active)\nfloat total(const float *v, int n);\n}\n", "o.cpp")
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1 and "Traceback" not in result.err
    assert f"{src}:4:" in result.err and message in result.err, result.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, code", [
    ("p.c", "struct S { double a; double *p; };\n// @diff(g_fwd: forward (dual) -> dual)\n"
            "double g(struct S s) { return s.a * s.p[0]; }\n"),
    ("p.cpp", "#include <vector>\nstruct S { double a; std::vector<double> v; };\n// @diff(g_grad: (active) -> active)\n"
              "double g(S s) { return s.a * s.v[0]; }\n"),
])
def test_a_struct_by_value_reaching_floats_through_a_pointer_is_not_active(adgen, c_file, tmp_path, name, code):
    """A struct (or class) by value holding a pointer to floating data besides its floats is not
    `active` or `dual`: the derivatives of what the pointer reaches have no place in its gradient
    (they would be lost) or tangent (whose null pointer forward mode read: a segfault before)."""
    src = c_file(code, name)
    result = adgen("build", src, "-o", tmp_path / "out")
    assert result.status == 1 and "Traceback" not in result.err
    line = 2 if name.endswith(".c") else 3
    assert f"{src}:{line}:" in result.err and "a struct by value holding a pointer to floating data: the derivatives " \
        "of what it points to have no place in a gradient or tangent of its type" in result.err, result.err
    assert not (tmp_path / "out").exists()


SAMPLES_H = r"""
#pragma once
#include <cstddef>
struct Sample { double x, w; };  // a parameter's type: the stub file includes this header
int helper(int a) { return a + 1; }  // not inline: defined by each file including it (one here)
double weight = 0.5;
struct Counter { int n; Counter(); };
Counter::Counter() : n(3) {}  // out of its class: the complete constructor an alias of the base one's
"""

SAMPLES = r"""
#include <cmath>
#include <cstdio>
#include "samples.h"
// @diff(moment_grad: (dup, const) -> active)
double moment(const Sample *s, std::size_t n) {
    Counter c;
    double m = 0;
    for (std::size_t i = 0; i < n; i++) m += s[i].w * std::pow(s[i].x, c.n);
    return m * weight * helper(1) / n;
}
#include "samples.adgen.h"
int check() {  /* here, where the program includes the header defining things: once */
    Sample s[3] = {{1, 0.5}, {-2, 1}, {0.5, 2}}, d[3] = {};
    moment_grad(s, d, 3, 1.0);
    double worst = 0;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++) {
            double *v = k ? &s[i].w : &s[i].x, kept = *v, h = 1e-6;
            *v = kept + h; double a = moment(s, 3);
            *v = kept - h; double b = moment(s, 3);
            *v = kept;
            double fd = (a - b) / (2 * h), got = k ? d[i].w : d[i].x;
            worst = std::fmax(worst, std::fabs(fd - got) / (1 + std::fabs(fd)));
        }
    std::printf("worst %g\n", worst);
    return worst > 1e-7;
}
"""


@pytest.mark.parametrize("compiler", ["g++", "bundled"])
@pytest.mark.slow
def test_a_users_header_defining_functions_and_variables(adgen, tmp_path, compiler):
    """A derived function's parameter type from a header of the user's that also defines a
    function, a variable and a constructor out of its class (not inline): the stub file includes
    the header, and its definitions stay the source's, so the sources link and the program (the
    source, adgen's object) links too. Against central differences."""
    if compiler == "g++" and shutil.which("g++") is None:
        pytest.skip("no g++ on this machine")
    (tmp_path / "samples.h").write_text(SAMPLES_H)
    _program(adgen, tmp_path, "samples.cpp", SAMPLES, "int check();\nint main() { return check(); }\n", compiler)


MODEL_H = r"""
#pragma once
namespace fit {
struct Base { virtual ~Base(); virtual double bias() const { return 0.5; } };
struct LogisticModel : Base {
    double w0, w1;
    LogisticModel(double a, double b);
    ~LogisticModel() override;
    double bias() const override;
};
}
"""

MODEL = r"""
#include <cmath>
#include "model.h"
namespace fit {
Base::~Base() {}
LogisticModel::LogisticModel(double a, double b) : w0(a), w1(b) {}
LogisticModel::~LogisticModel() {}
double LogisticModel::bias() const { return w0; }
// @diff(loss_grad: (dup, const, const) -> active)
double loss(const double *w, const double *x, int n) {
    LogisticModel m(w[0], w[1]);
    const Base *b = &m;  // (a virtual call)
    double s = 0;
    for (int i = 0; i < n; i++) s += std::log(1 + std::exp(-(b->bias() + m.w1 * x[i])));
    return s;
}
}
"""

MODEL_MAIN = r"""
#include <cmath>
#include <cstdio>
#include "model.h"
namespace fit { double loss(const double *w, const double *x, int n); }
#include "model.adgen.h"
int main() {
    fit::LogisticModel own(1, 2);  // the program's own use of the class
    double w[2] = {0.3, -0.7}, d[2] = {0, 0}, x[4] = {0.5, -1, 2, 0.25};
    fit::loss_grad(w, d, x, 4, 1.0);
    double worst = 0;
    for (int i = 0; i < 2; i++) {
        double a[2] = {w[0], w[1]}, b[2] = {w[0], w[1]};
        a[i] += 1e-6; b[i] -= 1e-6;
        double fd = (fit::loss(a, x, 4) - fit::loss(b, x, 4)) / 2e-6;
        worst = std::fmax(worst, std::fabs(fd - d[i]) / (1 + std::fabs(fd)));
    }
    std::printf("worst %g\n", worst);
    return worst > 1e-7 || own.bias() != 1;
}
"""


def _global_symbols(path: Path) -> tuple[set[str], set[str]]:
    """The strong and the weak global symbols an ELF object defines."""
    from elftools.elf.elffile import ELFFile

    with open(path, "rb") as f:
        symbols = [s for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols() if s["st_shndx"] != "SHN_UNDEF"]
    return ({s.name for s in symbols if s["st_info"]["bind"] == "STB_GLOBAL"},
            {s.name for s in symbols if s["st_info"]["bind"] == "STB_WEAK"})


@pytest.mark.parametrize("compiler", ["g++", "bundled"])
@pytest.mark.slow
def test_a_class_with_constructors_and_a_virtual_destructor_out_of_it(adgen, tmp_path, compiler):
    """A class whose constructor and virtual destructor the source defines (out of the class:
    clang makes the complete ones aliases of the base ones) is differentiated, and the object
    exports the derived function only: the program linking it with its own object of the source
    meets no second definition of them. (A function the derivatives call through a pointer is a
    weak definition, which the program's overrides: specs/abi.md.)"""
    if compiler == "g++" and shutil.which("g++") is None:
        pytest.skip("no g++ on this machine")
    (tmp_path / "model.h").write_text(MODEL_H)
    _program(adgen, tmp_path, "model.cpp", MODEL, MODEL_MAIN, compiler)
    strong, weak = _global_symbols(tmp_path / "model.adgen.o")
    assert strong == {"__adgen_c_loss_grad"}, strong
    assert not [name for name in weak if re.search(r"[CD][0-9]E", name)], weak  # no constructor nor destructor


REFLECT = r"""
namespace geo {
struct vec3 { double x, y, z; vec3(double a, double b, double c) : x(a), y(b), z(c) {} };
// @diff(reflect_grad: (active, active) -> active)
vec3 reflect(vec3 v, vec3 n) {
    double d = 2 * (v.x * n.x + v.y * n.y + v.z * n.z);
    return vec3(v.x - d * n.x, v.y - d * n.y, v.z - d * n.z);
}
}
"""

REFLECT_MAIN = r"""
#include <cmath>
#include <cstdio>
namespace geo {
struct vec3 { double x, y, z; vec3(double a, double b, double c) : x(a), y(b), z(c) {} };
vec3 reflect(vec3 v, vec3 n);
}
#include "reflect.adgen.h"
static double &at(geo::vec3 &v, int k) { return k == 0 ? v.x : k == 1 ? v.y : v.z; }
static double seeded(geo::vec3 r, geo::vec3 seed) { return r.x * seed.x + r.y * seed.y + r.z * seed.z; }
int main() {
    geo::vec3 v(1, -2, 0.5), n(0.3, 0.4, -0.2), seed(1, -1, 0.5);
    geo::reflect_grad_result r = geo::reflect_grad(v, n, seed);
    double worst = std::fabs(r.ret.y - geo::reflect(v, n).y);
    for (int which = 0; which < 2; which++)
        for (int k = 0; k < 3; k++) {
            geo::vec3 a = which ? n : v, b = a;
            at(a, k) += 1e-6; at(b, k) -= 1e-6;
            double fd = which ? (seeded(geo::reflect(v, a), seed) - seeded(geo::reflect(v, b), seed)) / 2e-6
                              : (seeded(geo::reflect(a, n), seed) - seeded(geo::reflect(b, n), seed)) / 2e-6;
            double got = at(which ? r.d_n : r.d_v, k);
            worst = std::fmax(worst, std::fabs(fd - got) / (1 + std::fabs(fd)));
        }
    std::printf("worst %g\n", worst);
    return worst > 1e-7;
}
"""


@quick_first("compiler", ["g++", "bundled"])
def test_a_class_with_a_constructor_by_value_as_parameters_and_result(adgen, tmp_path, compiler):
    """A class by value whose only constructor takes arguments, as active parameters and result:
    the stub file, which cannot initialize the result struct holding it with `{0}` or `{}`,
    builds it in zeroed bytes. Against central differences."""
    if compiler == "g++" and shutil.which("g++") is None:
        pytest.skip("no g++ on this machine")
    _program(adgen, tmp_path, "reflect.cpp", REFLECT, REFLECT_MAIN, compiler)
