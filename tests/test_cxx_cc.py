"""`adgen c++` (specs/cxx.md, "adgen c++"): C++ programs written for Enzyme's API, each checking
its own results against closed forms and exiting non-zero on a mismatch, built at -O0 and -O2
with C++ exceptions on (calls to Enzyme's entry points as `invoke`s) and off: functions and
function templates by their instantiations (`(void *)f<double>`, one inside another template),
Enzyme's attributes on a template, the C++ library's streams and strings inside a
differentiated function, inline assembly on integers, a header of the user's defining functions
and constructors defined out of their class (linked once); and the located errors."""

from __future__ import annotations

import subprocess
from functools import partial
from pathlib import Path

import pytest
from conftest import adgen_compiler

from adgen.base.cxx_names import cxx_library_io, cxx_library_io_header
from adgen.ir_ad.ir import Module
from adgen.ir_ad.ir.instructions import parse_instruction

CHECK = r"""
#include <cmath>
#include <cstdio>
#include <cstdlib>
#define CHECK(got, want) do { double g_ = (got), w_ = (want); \
    if (!(std::fabs(g_ - w_) <= 1e-7 * (1 + std::fabs(w_)))) { \
        std::fprintf(stderr, "%s:%d: %s = %.17g, want %.17g\n", __FILE__, __LINE__, #got, g_, w_); std::exit(1); } \
    } while (0)
extern "C" int enzyme_dup, enzyme_const, enzyme_out;
"""


adgen_cxx = partial(adgen_compiler, "c++")


def build_and_run(tmp_path: Path, source: str, *flags: str) -> str:
    src = tmp_path / "prog.cpp"
    src.write_text(CHECK + source)
    exe = tmp_path / "prog"
    adgen_cxx(*flags, src, "-o", exe, cwd=tmp_path)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


LEVELS = pytest.mark.parametrize("level", ["-O0", "-O2"])
EXCEPTIONS = pytest.mark.parametrize("exceptions", ["-fexceptions", "-fno-exceptions"])

PROGRAM = r"""
#include <iostream>
#include <string>
#include <vector>

template <typename T> T __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);

// a function template, differentiated by its instantiations
template <typename T> T cube(T x) { return x * x * x; }

// a vector inside, and the C++ library's streams and strings, which carry no derivatives
double energy(const double *x, int n) {
    std::vector<double> squares(x, x + n);
    double s = 0;
    for (double &v : squares) { v = v * v; s += v; }
    std::string label = "energy";
    std::cout << label << " " << s << "\n";
    return s * x[0];
}

// Enzyme's attribute on a template: its instantiations are differentiated as log1p is
template <typename T> __attribute__((enzyme_function_like("log1p"))) T like_log1p(T a) { return 2 * a; }
template <typename T> T through(T a) { return like_log1p(a) * 3; }

// an instantiation named inside another template
template <typename T> T quartic(T x) { return x * x * x * x; }
template <typename T> T d_quartic(T x) { return __enzyme_autodiff<T>((void *)quartic<T>, x); }

struct Vec { double x, y; };
double dot(const Vec &a, const Vec &b) { return a.x * b.x + a.y * b.y; }

int main() {
    std::string keep_alive = "an object with a destructor, alive across the calls";
    CHECK(__enzyme_autodiff<double>((void *)cube<double>, 1.5), 3 * 1.5 * 1.5);
    CHECK(__enzyme_autodiff<float>((void *)cube<float>, 2.0f), 12.0);
    double x[3] = {1, 2, 3}, dx[3] = {0, 0, 0};
    __enzyme_autodiff<void>((void *)energy, enzyme_dup, x, dx, enzyme_const, 3);
    CHECK(dx[0], 14 + 2 * 1 * 1);  // s + x0 * 2 x0
    CHECK(dx[1], 2 * 2 * 1);
    CHECK(dx[2], 2 * 3 * 1);
    CHECK(__enzyme_autodiff<double>((void *)through<double>, 2.0), 3 / 3.0);  // 3 log1p'(2)
    CHECK(d_quartic(2.0), 4 * 8.0);
    CHECK(__enzyme_fwddiff((void *)cube<double>, 2.0, 1.0), 12.0);
    Vec a{1, 2}, b{3, 4}, da{0, 0};
    __enzyme_autodiff<void>((void *)dot, enzyme_dup, &a, &da, enzyme_const, &b);
    CHECK(da.x, 3);
    CHECK(da.y, 4);
    return keep_alive.empty();
}
"""


@LEVELS
@EXCEPTIONS
@pytest.mark.slow
def test_templates_streams_and_exceptions(tmp_path, level, exceptions):
    out = build_and_run(tmp_path, PROGRAM, level, exceptions, "-std=c++17")
    assert "energy 14" in out


BY_VALUE = r"""
#include <vector>
template <typename T> T __enzyme_autodiff(void *, ...);
extern "C" int enzyme_dupnoneed;

namespace gmm {  // as GradBench's gmm: a struct by value after eight arguments, its call's registers spent
struct Wishart { double gamma; int m; };
template <typename T>
void objective(int d, int k, int n, const T *alpha, const T *mu, const T *q, const T *l, const double *x,
               Wishart wishart, T *err) {
    T s = 0;
    for (int i = 0; i < d; i++) s += alpha[i] * mu[i] * std::exp(q[i]) - l[i] * x[i];
    *err = wishart.gamma * s * s + wishart.m * k * n;
}
}  // namespace gmm

class Scale {  // private data: not an aggregate, yet passed in a register
    double s_;
public:
    explicit Scale(double s) : s_(s) {}
    double s() const { return s_; }
};
template <typename T> T scaled(Scale s, const T *x) { return s.s() * x[0] * x[0] * x[1]; }

const double H = 1e-6;
template <typename F> double central(F f, double &v) {
    v += H; double p = f(); v -= 2 * H; double m = f(); v += H;
    return (p - m) / (2 * H);
}

int main() {
    std::vector<double> alpha{1, 2, 3}, mu{0.5, -1, 2}, q{0.1, 0.2, -0.3}, l{2, 0, 1}, x{1, 2, 1};
    std::vector<double> dalpha(3), dmu(3), dq(3), dl(3);
    gmm::Wishart w{1.5, 3};
    double err, derr = 1;
    __enzyme_autodiff<void>((void *)gmm::objective<double>, enzyme_const, 3, enzyme_const, 2, enzyme_const, 4,
                            enzyme_dup, alpha.data(), dalpha.data(), enzyme_dup, mu.data(), dmu.data(),
                            enzyme_dup, q.data(), dq.data(), enzyme_dup, l.data(), dl.data(),
                            enzyme_const, x.data(), enzyme_const, w, enzyme_dupnoneed, &err, &derr);
    auto objective = [&] { double e; gmm::objective(3, 2, 4, alpha.data(), mu.data(), q.data(), l.data(),
                                                    x.data(), w, &e); return e; };
    for (int i = 0; i < 3; i++) {
        CHECK(dalpha[i], central(objective, alpha[i]));
        CHECK(dmu[i], central(objective, mu[i]));
        CHECK(dq[i], central(objective, q[i]));
        CHECK(dl[i], central(objective, l[i]));
    }
    Scale s(2.5);
    double v[2] = {0.7, 1.3}, dv[2] = {0, 0};
    __enzyme_autodiff<void>((void *)scaled<double>, enzyme_const, s, enzyme_dup, v, dv);
    for (int i = 0; i < 2; i++) CHECK(dv[i], central([&] { return scaled(s, v); }, v[i]));
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_a_class_by_value_as_a_constant(tmp_path, level):
    """GradBench's gmm: a template instance taking a struct by value (enzyme_const) after eight
    arguments, which the call passes in memory and the function takes in registers or in
    memory as its own ABI says; a class with private data by value; against central differences."""
    build_and_run(tmp_path, BY_VALUE, level, "-std=c++17")


INTEGER_ASM = r"""
#include <stdio.h>
double __enzyme_autodiff(void *, ...);
static int opaque(int i) { __asm__ volatile("nop" : "+r"(i)); return i; }  // inline assembly on an int
double f(double x) { return x * opaque(3); }
int main() { double d = __enzyme_autodiff((void *)f, 2.0); printf("%g\n", d); return d != 3.0; }
"""


@LEVELS
@pytest.mark.slow
def test_inline_assembly_on_integers_is_inactive(tmp_path, level):
    src = tmp_path / "asm.cpp"
    src.write_text(INTEGER_ASM)
    adgen_cxx(level, src, "-o", tmp_path / "asm", cwd=tmp_path)
    assert subprocess.run([str(tmp_path / "asm")]).returncode == 0


FLOAT_ASM = r"""
double __enzyme_autodiff(void *, ...);
double f(double x) {
    double y = x;
    __asm__ volatile("" : "+x"(y));
    return y * y;
}
int main() { return __enzyme_autodiff((void *)f, 2.0) != 4.0; }
"""


def build_fails(tmp_path: Path, name: str, source: str) -> str:
    """`adgen c++` refusing a program: exit status 1, no traceback, no program; its stderr."""
    src = tmp_path / f"{name}.cpp"
    src.write_text(source)
    done = adgen_cxx("-O2", src, "-o", tmp_path / name, cwd=tmp_path, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / name).exists()
    return done.stderr


@pytest.mark.slow
def test_inline_assembly_on_doubles_is_a_located_error(tmp_path):
    err = build_fails(tmp_path, "fasm", FLOAT_ASM)
    assert "fasm.cpp:5:" in err and "inline assembly" in err, err


@pytest.mark.slow
def test_a_template_instance_the_source_never_names_is_an_error_at_the_call(tmp_path):
    """An instantiation named only inside another template, with an argument libclang cannot
    spell (a lambda's type): an error at the call, not a wrong derivative."""
    src = tmp_path / "lam.cpp"
    src.write_text(r"""
template <typename T> T __enzyme_autodiff(void *, ...);
template <typename F> double apply(double x) { F f; return f(x); }
template <typename F> double d_apply(double x) { return __enzyme_autodiff<double>((void *)apply<F>, x); }
int main() {
    auto sq = [](double v) { return v * v; };
    return d_apply<decltype(sq)>(3.0) != 6.0;
}
""")
    done = adgen_cxx("-O2", "-std=c++20", src, "-o", tmp_path / "lam", cwd=tmp_path, check=False)
    if done.returncode == 0:  # differentiated after all: then it must be right
        assert subprocess.run([str(tmp_path / "lam")]).returncode == 0
        return
    assert "lam.cpp:4:" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_cxx_library_io_by_mangled_name():
    """C++'s streams, strings and locales carry no derivatives; its containers and algorithms do."""
    for name in ("_ZNSt3__16localeD1Ev", "_ZNSolsEd", "_ZNSt3__113basic_ostreamIcNS_11char_traitsIcEEElsEd",
                 "_ZStlsISt11char_traitsIcEERSt13basic_ostreamIcT_ES5_PKc",
                 "_ZNSt3__124__put_character_sequenceB9nin220108IcNS_11char_traitsIcEEEERNS_13basic_ostreamIT_T0_"
                 "EES7_PKS4_m", "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEED1Ev"):
        assert cxx_library_io(name), name
    for name in ("_ZNSt3__16vectorIdNS_9allocatorIdEEE9push_backEOd", "_ZNSt3__14sortB9nin220108IPdEEvT_S2_",
                 "_ZSt4sqrtf", "_Z6squared", "sin"):
        assert not cxx_library_io(name), name


def test_invoke_and_inline_assembly_are_read():
    asm = parse_instruction('  %r = call { i32, i32 } asm sideeffect "cpuid", "={ax},={bx},0"(i32 7) #3, !srcloc !5')
    assert (asm.opcode, asm.callee, asm.asm, [a.value for a, _ in asm.call_args]) == \
        ("call", "asm", "={ax},={bx},0", ["7"])
    module = Module("define double @f(ptr %p) personality ptr @__gxx_personality_v0 {\n"
                    "entry:\n"
                    "  %r = invoke double @g(ptr %p)\n"
                    "          to label %ok unwind label %lp, !dbg !4\n"
                    "ok:\n  ret double %r\n"
                    "lp:\n  %x = landingpad { ptr, i32 } cleanup\n  resume { ptr, i32 } %x\n}\n")
    invoke = next(i for i in module.functions["@f"].instructions() if i.opcode == "invoke")
    assert (invoke.callee, invoke.targets, invoke.dbg) == ("@g", ["%ok", "%lp"], "!4")


SUGAR = r"""
#include <enzyme/enzyme>
#include <vector>

double mul(double x, double y) { return x * std::sin(y); }
float halve(float x) { return x * x / 2; }
double norm2(const double *v, int n) { double s = 0; for (int i = 0; i < n; i++) s += v[i] * v[i]; return s; }
double by_ref(const double &x, const std::vector<double> &w) { return x * (w[0] + 2 * w[1]); }
struct Point { double x, y; };
double area(Point p, double k) { return k * p.x * p.y; }
std::vector<double> twice(const std::vector<double> &v) { return {2 * v[0], 2 * v[1] * v[1]}; }
struct Scaled {
    double k;
    double operator()(double x) { return k * x * x; }
    float operator()(float x) { return 3 * x; }
};

int main() {
    using namespace enzyme;
    auto r = autodiff<Reverse>(mul, Active<double>(2.0), Active<double>(0.5));
    CHECK(get<0>(get<0>(r)), std::sin(0.5));
    CHECK(get<1>(get<0>(r)), 2 * std::cos(0.5));
    auto p = autodiff<ReverseWithPrimal>(mul, Active<double>(2.0), Const<double>(0.5));
    CHECK(get<0>(get<0>(p)), std::sin(0.5));
    CHECK(get<1>(p), 2 * std::sin(0.5));
    CHECK(get<0>(get<0>(autodiff<Reverse>(halve, Active<float>(3.0f)))), 3.0);
    double v[3] = {1, 2, 3}, dv[3] = {0, 0, 0};
    autodiff<Reverse>(norm2, Duplicated<double *>(v, dv), Const<int>(3));
    CHECK(dv[2], 6);
    double x = 1.5, dx = 0;
    std::vector<double> u0{1, 2}, du0{0, 5};
    std::vector<double> w{1, 2}, dw{0, 0};
    autodiff<Reverse>(by_ref, Duplicated<const double &>(x, dx), Duplicated<const std::vector<double> &>(w, dw));
    CHECK(dx, 5);
    CHECK(dw[1], 3);
    autodiff<Reverse>(by_ref, Const<double *>(&x), Duplicated<std::vector<double> *>(&w, &dw));  // pointers for
    CHECK(dw[1], 6);                                                                           // references
    CHECK(get<0>(autodiff<Forward>(twice, Duplicated<std::vector<double> *>(&u0, &du0)))[1], 4 * 2 * 5);
    CHECK(get<0>(get<0>(autodiff<Reverse>(Scaled{4}, Active<double>(3.0)))), 24);
    CHECK(get<0>(get<0>(autodiff<Reverse>(Scaled{4}, Active<float>(3.0f)))), 3);
    // forward mode: the tangent alone, with the value, or the value alone
    CHECK(get<0>(autodiff<Forward>(mul, Duplicated<double>(2.0, 1.0), Const<double>(0.5))), std::sin(0.5));
    auto both = autodiff<Forward, Duplicated<double>>(mul, Duplicated<double>(2.0, 0.0), Duplicated<double>(0.5, 1.0));
    CHECK(get<0>(both), 2 * std::sin(0.5));
    CHECK(get<1>(both), 2 * std::cos(0.5));
    CHECK(get<0>(autodiff<Forward, Const<double>>(mul, Duplicated<double>(2.0, 1.0), Const<double>(0.5))),
          2 * std::sin(0.5));
    CHECK(get<0>(autodiff<Forward>(area, Duplicated{Point{2, 3}, Point{1, 0}}, Const<double>(5))), 15);
    std::vector<double> u{3, 4}, du{1, 1};
    auto t = autodiff<Forward, Duplicated<std::vector<double>>>(twice, Duplicated<const std::vector<double> &>(u, du));
    CHECK(get<0>(t)[1], 32);
    CHECK(get<1>(t)[0], 2);
    CHECK(get<1>(t)[1], 16);
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_enzyme_sugar_header(tmp_path, level):
    """adgen's own <enzyme/enzyme>: every mode, activity and return activity of its API."""
    build_and_run(tmp_path, SUGAR, level, "-std=c++17")


@pytest.mark.slow
def test_adgen_header_before_enzymes_on_the_include_path(tmp_path):
    """A build moving from Enzyme keeps Enzyme's `-I.../enzyme/include`: adgen's own
    <enzyme/enzyme> is read first (Enzyme's would expand to calls adgen does not read); the
    folder's other headers are still found."""
    decoy = tmp_path / "enzyme-include" / "enzyme"
    decoy.mkdir(parents=True)
    (decoy / "enzyme").write_text('#error "Enzyme\'s own header was read"\n')
    (decoy / "extra").write_text("inline int enzyme_extra() { return 0; }\n")
    source = SUGAR.replace("#include <enzyme/enzyme>", "#include <enzyme/enzyme>\n#include <enzyme/extra>")
    assert source != SUGAR
    build_and_run(tmp_path, source, "-O2", "-std=c++17", "-I", str(tmp_path / "enzyme-include"))


def test_x_cxx_on_a_c_file_is_an_error(tmp_path):
    src = tmp_path / "p.c"
    src.write_text("int main() { return 0; }\n")
    done = adgen_cxx("-x", "c++", src, "-o", tmp_path / "p", cwd=tmp_path, check=False)
    assert done.returncode == 1 and "-x c++" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "p").exists()


def test_template_instances_by_their_mangled_names():
    """An instantiation's template and arguments, as C++, from its symbol (the C++ runtime's
    demangler); what cannot be spelled (a lambda) is None. Attributes of a template apply to the
    symbols of its instantiations."""
    from adgen.frontend.prototypes import Template, _demangled_instance

    assert _demangled_instance("_Z7quarticIdET_S0_") == ("quartic", "<double>")
    assert _demangled_instance("_ZN2ns5powerILi3EEEdd") == ("ns::power", "<3>")
    name, arguments = _demangled_instance("_Z6squareINSt3__16vectorIdNS0_9allocatorIdEEEEEvRT_")
    assert name == "square" and arguments.startswith("<std::__1::vector<double")
    assert _demangled_instance("_Z6squared") is None  # not a template's
    assert _demangled_instance("main") is None
    span = None
    assert Template("log1p_like", (), 0, span).instantiates("_Z10log1p_likeIdET_S0_")
    assert Template("ns::f", (), 0, span).instantiates("_ZN2ns1fIfEET_S1_")
    assert not Template("f", (), 0, span).instantiates("_Z1gIdEvT_")


BYTES = r"""
#include <cstring>
#include <string>
template <typename T> T __enzyme_autodiff(void *, ...);
double pick(const double *x, const char *name) {
    double v = std::strcmp(name, "square") == 0 ? x[0] * x[0] : x[0];
    return std::strlen(name) > 3 ? 3 * v : v;  // (memcmp, strlen: integers from bytes)
}
int main() {
    double x[1] = {3}, dx[1] = {0};
    __enzyme_autodiff<void>((void *)pick, enzyme_dup, x, dx, enzyme_const, "square");
    CHECK(dx[0], 3 * 2 * 3);
    dx[0] = 0;
    __enzyme_autodiff<void>((void *)pick, enzyme_dup, x, dx, enzyme_const, "id");
    CHECK(dx[0], 1);
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_comparing_bytes_carries_no_derivative(tmp_path, level):
    build_and_run(tmp_path, BYTES, level)


VIRTUAL_SHADOW = r"""
template <typename T> T __enzyme_virtualreverse(T);
template <typename T> T __enzyme_autodiff(void *, ...);
template <typename T> T __enzyme_fwddiff(void *, ...);
struct Shape { virtual double area(double s) const = 0; double scale; };
struct Square : Shape { double area(double s) const override { return scale * s * s; } };
struct Circle : Shape { double area(double s) const override { return 3.0 * scale * s * s * s; } };
double total(const Shape &a, double s) { return a.area(s) + a.scale; }
struct Hook { double (*fn)(double); double v; };
double twice(double x) { return 2 * x; }
double apply(Hook *h) { return h->fn(h->v) * h->v; }
int main() {
    Shape *shapes[2] = {new Square, new Circle}, *shadows[2] = {new Square, new Circle};
    for (int k = 0; k < 2; ++k) {
        shapes[k]->scale = 2;
        // Enzyme's idiom: the shadow object's virtual table made its derivative's
        *(void **)shadows[k] = __enzyme_virtualreverse(*(void **)shadows[k]);
        shadows[k]->scale = 0;
        double ds = __enzyme_autodiff<double>((void *)total, enzyme_dup, shapes[k], shadows[k], 1.5);
        CHECK(ds, k == 0 ? 2 * 2 * 1.5 : 3.0 * 2 * 3 * 1.5 * 1.5);
        CHECK(shadows[k]->scale, (k == 0 ? 1.5 * 1.5 : 3.0 * 1.5 * 1.5 * 1.5) + 1);
        shadows[k]->scale = 1;
        CHECK(__enzyme_fwddiff<double>((void *)total, enzyme_dup, shapes[k], shadows[k], 1.5, 0.0),
              (k == 0 ? 1.5 * 1.5 : 3.0 * 1.5 * 1.5 * 1.5) + 1);
    }
    Hook h{twice, 3}, dh{__enzyme_virtualreverse(twice), 0};  // a function pointer's shadow
    __enzyme_autodiff<void>((void *)apply, enzyme_dup, &h, &dh);
    CHECK(dh.v, 4 * 3);
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_virtual_tables_and_function_pointers_in_shadows(tmp_path, level):
    """`__enzyme_virtualreverse(f)` is what the shadow holds where the primal holds f (a
    virtual table, a function pointer): adgen calls through the primal's, so f itself."""
    build_and_run(tmp_path, VIRTUAL_SHADOW, level)


COPIED_OBJECTS = r"""
#include <cstdlib>
#include <cstring>
template <typename T> T __enzyme_autodiff(void *, ...);
struct Dims { long rows, cols; };
struct Matrix { double *data; Dims dims; };
// As Eigen's evaluators: an object copying a matrix's pointer and sizes, its floats held elsewhere
struct Evaluator {
    const double *data; Dims dims; int flags;
    __attribute__((noinline)) Evaluator(const Matrix &m) : data(m.data), dims(m.dims), flags(1) {}
    // a copy of the floats through the loaded pointer, into memory only bytes were written to
    __attribute__((noinline)) double *preload() const {
        void *copy = std::malloc(dims.rows * dims.cols * sizeof(double));
        std::memcpy(copy, data, dims.rows * dims.cols * sizeof(double));
        return static_cast<double *>(copy);
    }
};
double sum_of_squares(const Matrix &m) {
    Evaluator e(m);
    double *v = e.preload(), s = 0;
    for (long i = 0; i < e.dims.rows * e.dims.cols; i++) s += v[i] * v[i] * (i + 1);
    std::free(v);
    return s;
}
int main() {
    double x[6] = {1, 2, 3, 4, 5, 6}, dx[6] = {0};
    Matrix m{x, {2, 3}}, dm{dx, {2, 3}};
    __enzyme_autodiff<void>((void *)sum_of_squares, enzyme_dup, &m, &dm);
    for (int i = 0; i < 6; i++) CHECK(dx[i], 2 * x[i] * (i + 1));
    return 0;
}
"""


@pytest.mark.slow
def test_copies_typed_by_the_objects_they_lie_in(tmp_path):
    """A copy whose floating type no access shows: the sizes an object copies (the bytes of a
    local object's type, at the call making it), the floats it copies through a `double *`
    member (the member's load says so in its TBAA; clang writes none at -O0)."""
    build_and_run(tmp_path, COPIED_OBJECTS, "-O2")


LITERALS_STORED = r"""
#include <cstring>
#include <unordered_map>
template <typename T> T __enzyme_autodiff(void *, ...);
template <typename T> T __enzyme_fwddiff(void *, ...);
struct Named { const char *name; double value; };
__attribute__((noinline)) void fill(Named *n, const double *x) {
    n[0] = {"a", x[0]};  // a string literal's address, stored where derivatives are kept
    n[1] = {"bb", x[1]};
}
double labelled(const double *x) {
    Named n[2];
    fill(n, x);
    double s = 0;
    for (auto &e : n) s += e.value * e.value * std::strlen(e.name);
    return s;
}
void square(std::unordered_map<const char *, double> &vals) { vals["x"] = vals["x"] * vals["x"]; }
int main() {
    double x[2] = {3, 4}, dx[2] = {0, 0};
    __enzyme_autodiff<void>((void *)labelled, enzyme_dup, x, dx);
    CHECK(dx[0], 2 * 3);
    CHECK(dx[1], 2 * 4 * 2);
    double tx[2] = {1, 0.5};
    CHECK(__enzyme_fwddiff<double>((void *)labelled, enzyme_dup, x, tx), 2 * 3 + 2 * 4 * 2 * 0.5);
    std::unordered_map<const char *, double> vals, dvals;
    vals["x"] = 3;
    dvals["x"] = 1;
    __enzyme_autodiff<void>((void *)square, enzyme_dup, &vals, &dvals);
    CHECK(dvals["x"], 6);
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_pointers_to_read_only_data_are_their_own_shadows(tmp_path, level):
    """A string literal's address (a map's key, a name beside a value) stored into memory holding
    derivatives: its shadow is itself, read-only data holding no floats."""
    build_and_run(tmp_path, LITERALS_STORED, level)


FLOAT_TABLE_STORED = r"""
extern "C" int enzyme_dup;
template <typename T> T __enzyme_autodiff(void *, ...);
static const double table[2] = {1.5, 2.5};
struct Pair { const double *w; double v; };
__attribute__((noinline)) void fill(Pair *p, const double *x) { p->w = table; p->v = x[0]; }
double use(const double *x) { Pair p; fill(&p, x); return p.v * p.w[1]; }
int main() {
    double x[1] = {2}, dx[1] = {0};
    __enzyme_autodiff<void>((void *)use, enzyme_dup, x, dx);
    return dx[0] == 2.5 && table[0] == 1.5 && table[1] == 2.5 ? 0 : 1;
}
"""


@pytest.mark.slow
def test_a_pointer_to_floats_of_a_global_stored_with_derivatives_gets_runtime_activity(tmp_path):
    """Read-only floats stored where derivatives are kept: the derivation is made again with
    runtime activity (specs/cxx.md), the table its own shadow, checked at each access: the
    gradient is right and the table is never written (before: an error at the store)."""
    build_and_run(tmp_path, FLOAT_TABLE_STORED, "-O2")


STREAMS_INSIDE = r"""
#include <iostream>
#include <locale>
#include <sstream>
template <typename T> T __enzyme_autodiff(void *, ...);
template <typename T> T __enzyme_fwddiff(void *, ...);
// a stream made inside (its virtual tables stored into a local object), parsing numbers
double parsed(double x) {
    std::stringstream in("2.5 4");
    double a;
    float b;
    in >> a >> b;
    return x * x * a * b;
}
// the library's own virtual calls (a wide stream's imbue) inside a differentiated function
double printed(double x) {
    std::wcout.put(L'w');
    std::wcout.imbue(std::locale());
    std::wcout << 1 << L"\n";
    return x * x * x;
}
int main() {
    CHECK(__enzyme_autodiff<double>((void *)parsed, 3.0), 2 * 3.0 * 2.5 * 4);
    CHECK(__enzyme_fwddiff<double>((void *)parsed, 3.0, 1.0), 2 * 3.0 * 2.5 * 4);
    CHECK(__enzyme_autodiff<double>((void *)printed, 2.0), 3 * 4.0);
    CHECK(__enzyme_fwddiff<double>((void *)printed, 2.0, 1.0), 3 * 4.0);
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_streams_made_inside_a_differentiated_function(tmp_path, level):
    """A `std::stringstream` made and read inside; `std::wcout.imbue`, whose virtual call is the
    C++ library calling itself: neither carries derivatives, as the library's named functions."""
    build_and_run(tmp_path, STREAMS_INSIDE, level)


@pytest.mark.parametrize("path, expected", [
    ("/x/ziglang/lib/libcxx/include/streambuf", True),
    ("/usr/include/c++/12/bits/basic_ios.h", True),
    ("/usr/lib/llvm-19/include/c++/v1/sstream", True),
    ("/usr/include/c++/12/bits/stl_vector.h", False),
    ("/home/me/project/streambuf", False),  # the program's own file of that name
])
def test_library_io_headers(path, expected):
    assert cxx_library_io_header(path) is expected


UNWRITTEN_SHADOW_TABLE = r"""
#include <fstream>
template <typename T> T __enzyme_autodiff(void *, ...);
void unrelated(void *) {}  // (a function of the destructor's type: the call goes through a dispatcher)
double run(double x) {
    std::filebuf *buffer = new std::filebuf();  // made by the library: its shadow's table stays zeros
    char bytes[64];
    buffer->pubsetbuf(bytes, sizeof bytes);
    double y = x * x;
    buffer->close();
    delete buffer;  // a virtual call: the library's destructor, which the dispatcher does not know
    return y;
}
int main() { return __enzyme_autodiff<double>((void *)run, 2.0) != 4.0; }
"""


@LEVELS
@pytest.mark.slow
def test_a_virtual_call_reads_no_shadow_of_the_table(tmp_path, level):
    """The function pointer of a virtual call is called through as the primal's (a dispatcher
    compares it): neither it nor the table it is read from needs a shadow, here one nothing
    wrote. The library's destructor, outside the sources but in the C++ library's object code,
    is called as it is."""
    src = tmp_path / "table.cpp"
    src.write_text(UNWRITTEN_SHADOW_TABLE)
    adgen_cxx(level, src, "-o", tmp_path / "table", cwd=tmp_path)
    run = subprocess.run([str(tmp_path / "table")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, (run.returncode, run.stderr)


OUTSIDE_THE_SOURCES = r"""
extern "C" int enzyme_const;
double __enzyme_autodiff(void *, ...);
double (*pick())(double);  // another file's: a pointer to a function of its own
double twice(double (*f)(double), double x) { return 2 * f(x); }
double cube(double x) { return x * x * x; }  // (a function of the pointer's type: a dispatcher)
int main() { return __enzyme_autodiff((void *)twice, enzyme_const, pick(), 0.5) > 0; }
"""


@pytest.mark.slow
def test_a_pointer_to_a_function_outside_the_sources_aborts(tmp_path):
    """A function pointer reaching a function of neither the file differentiated nor the C++
    library's object code (another file's static function): the derivative says so and aborts,
    never a silent zero."""
    (tmp_path / "outside.cpp").write_text(OUTSIDE_THE_SOURCES)
    (tmp_path / "other.cpp").write_text("static double hidden(double x) { return x * x; }\n"
                                        "double (*pick())(double) { return hidden; }\n")
    adgen_cxx("-O2", "outside.cpp", "other.cpp", "-o", "outside", cwd=tmp_path)
    run = subprocess.run([str(tmp_path / "outside")], capture_output=True, text=True, timeout=60)
    assert run.returncode == -6 and "reached a function outside the sources" in run.stderr, (run.returncode, run.stderr)


DEFINITIONS = r"""
#include <cstddef>
typedef std::size_t count;  // (a derived function's parameter type: the stubs include this header)
int helper(int a) { return a + 1; }  // not inline: defined by the file including it, once
double weight = 0.5;
inline double scale(count n) { return 1.0 / (double)n; }
struct Counter { int n; Counter(); ~Counter(); };
Counter::Counter() : n(3) {}  // out of the class: the complete constructor an alias of the base one's
Counter::~Counter() {}
"""

ONE_DEFINITION = r"""
#include "definitions.h"
extern double __enzyme_autodiff(void *, ...);
struct Model { int k; Model(); virtual ~Model(); virtual int order() const; };
Model::Model() : k(2) {}
Model::~Model() {}
int Model::order() const { return k; }
double f(double *x, count n) {
    Counter c;
    Model m;
    double s = 0;
    for (count i = 0; i < n; i++) s += x[i] * x[i] * x[i];
    return s * scale(n) * helper(c.n) * m.order() * weight;
}
double central(double *x, count n, count i) {
    double h = 1e-6, kept = x[i];
    x[i] = kept + h; double a = f(x, n);
    x[i] = kept - h; double b = f(x, n);
    x[i] = kept;
    return (a - b) / (2 * h);
}
int main() {
    double x[3] = {1, -2, 0.5}, d[3] = {0, 0, 0};
    __enzyme_autodiff((void *)f, x, d, (count)3);
    for (count i = 0; i < 3; i++) CHECK(d[i], central(x, 3, i));
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_definitions_of_a_users_header_and_constructors_out_of_their_class(tmp_path, level):
    """A header of the user's that defines functions and a variable (not inline), included by
    the file and so by the stubs adgen makes for it, links once; constructors and destructors
    defined out of their class (complete ones aliases of base ones, in the header and in the
    file, one of them virtual) are differentiated, and the derivatives linked into the file's
    object define none of them again. Against central differences."""
    (tmp_path / "definitions.h").write_text(DEFINITIONS)
    build_and_run(tmp_path, ONE_DEFINITION, level)


GROWING_TAPE = r"""
#include <vector>
extern "C" int enzyme_dupnoneed;
void __enzyme_autodiff(...) noexcept;
void __enzyme_fwddiff(...) noexcept;
struct Point { double x, y; };
// Its gradient keeps a record per iteration of a loop whose trip count only its end tells (a
// vector walked by pointer): past 16 records its tape grows, copying them (adgen.stack.realloc),
// in code that the derivatives of `walk`, which calls the gradient, differentiate in turn.
double potential(const std::vector<Point> &charges, const Point &p) {
    double a = 0;
    for (auto c : charges) a += 1 / std::sqrt((c.x - p.x) * (c.x - p.x) + (c.y - p.y) * (c.y - p.y));
    return a;
}
void potential_of(const std::vector<Point> *charges, const Point *p, double *out) { *out = potential(*charges, *p); }
double walk(double w) {  // steps down the potential's gradient, as GradBench's particle does
    std::vector<Point> charges;
    for (int i = 0; i < 40; i++) charges.push_back(Point{1.0 + 0.25 * i, 2.0 - w * i});
    Point p{0, 0.5}, v{0.75, 0};
    for (int k = 0; k < 4; k++) {
        Point g{0, 0};
        double dummy, unit = 1;
        __enzyme_autodiff((void *)potential_of, enzyme_const, &charges, enzyme_dup, &p, &g, enzyme_dupnoneed, &dummy,
                          &unit);
        v.x -= 0.1 * g.x; v.y -= 0.1 * g.y;
        p.x += 0.1 * v.x; p.y += 0.1 * v.y;
    }
    return p.x * p.x + p.y;
}
void walk_of(const double *w, double *out) { *out = walk(*w); }
int main() {
    double w = 0.1, h = 1e-6, dw = 0, dummy, unit = 1, tangent = 1, fw = 0;
    __enzyme_autodiff((void *)walk_of, enzyme_dup, &w, &dw, enzyme_dupnoneed, &dummy, &unit);
    __enzyme_fwddiff((void *)walk_of, enzyme_dup, &w, &tangent, enzyme_dupnoneed, &dummy, &fw);
    double central = (walk(w + h) - walk(w - h)) / (2 * h);
    CHECK(dw, central);
    CHECK(fw, central);
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_a_derivative_of_a_gradient_whose_tape_grows(tmp_path, level):
    """Reverse and forward mode over a gradient whose tape grows: the outer level takes the
    inner gradient's growth of its buffer for a realloc (ir_ad/calls.py), whatever the records
    hold. Against central differences."""
    build_and_run(tmp_path, GROWING_TAPE, level)


VECTOR_HOLDS_THE_CALL = r"""
#include <vector>
template <typename R, typename... T> R __enzyme_autodiff_template(void *, T...);
template <typename R, typename... T> R __enzyme_fwddiff_template(void *, T...);
struct double2 { double x, y; };
template <typename T> T objective(T x1, T y1, T x2, T y2) { return x1 * x1 + y1 * y1 - (x2 * x2 + y2 * y2) + x1 * x2; }
// The inner entry point in a member function that a function template holding vectors calls:
// with C++ exceptions on, an `invoke` (the vectors' destructors run if it throws), through which
// the level of the outer derivative is read (GradBench's saddle).
struct Cost {
    const double *p1;
    void gradient(const double *p2, double *out) const {
        double2 g = __enzyme_autodiff_template<double2>((void *)objective<double>, enzyme_const, p1[0], enzyme_const,
                                                        p1[1], enzyme_out, p2[0], enzyme_out, p2[1]);
        out[0] = g.x;
        out[1] = g.y;
    }
};
template <typename F> std::vector<double> ascend(const F &f, const double *start) {
    std::vector<double> x(start, start + 2), g(2);
    for (int k = 0; k < 5; k++) {
        f.gradient(x.data(), g.data());
        for (int j = 0; j < 2; j++) x[j] += 0.1 * g[j];
    }
    return x;
}
double best(double p1x, double p1y, double p2x, double p2y) {
    double p1[2] = {p1x, p1y}, p2[2] = {p2x, p2y};
    std::vector<double> x = ascend(Cost{p1}, p2);
    return objective(p1x, p1y, x[0], x[1]);
}
int main() {
    double x = 0.5, y = 0.25, h = 1e-6;
    double2 d = __enzyme_autodiff_template<double2>((void *)best, enzyme_out, x, enzyme_out, y, enzyme_const, 1.0,
                                                    enzyme_const, 1.0);
    double fx = __enzyme_fwddiff_template<double>((void *)best, enzyme_dup, x, 1.0, enzyme_dup, y, 0.0, enzyme_const,
                                                  1.0, enzyme_const, 1.0);
    double cx = (best(x + h, y, 1, 1) - best(x - h, y, 1, 1)) / (2 * h);
    double cy = (best(x, y + h, 1, 1) - best(x, y - h, 1, 1)) / (2 * h);
    CHECK(d.x, cx);
    CHECK(fx, cx);
    CHECK(d.y, cy);
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_an_inner_entry_point_reached_through_invokes(tmp_path, level):
    """A derivative of a function reaching an Enzyme call through functions using std::vector
    (calls made `invoke`s) is of the level after that call's: the inner call is an adapter's
    call by then. Against central differences."""
    build_and_run(tmp_path, VECTOR_HOLDS_THE_CALL, level)


GROWING_VECTORS = r"""
#include <vector>
void __enzyme_autodiff(...) noexcept;
void __enzyme_fwddiff(...) noexcept;
// A vector of structs of pointers into the parameters, and one of structs of doubles, growing
// one element at a time: the library relocates their elements by copies of their bytes, typed
// only by their `!tbaa.struct` (GradBench's lstm: std::vector<LayerParams<double>>).
struct Slice { const double *w, *b; Slice(const double *p, int h) : w(p), b(p + h) {} };
struct Layer { const Slice first, second; Layer(const double *p, int h) : first(p, h), second(p + 2 * h, h) {} };
struct Moments { double m1, m2, m3, m4; };
double loss(const double *p, int h, int n) {
    std::vector<Layer> layers;
    for (int i = 0; i < n; i++) layers.emplace_back(p + 4 * h * i, h);
    std::vector<Moments> moments;
    for (const Layer &l : layers) {
        Moments m{0, 0, 0, 0};
        for (int k = 0; k < h; k++) {
            double v = l.first.w[k] * l.second.b[k] + l.first.b[k] - l.second.w[k] * l.second.w[k];
            m.m1 += v; m.m2 += v * v; m.m3 += v * v * v; m.m4 += std::sin(v);
        }
        moments.push_back(m);
    }
    double s = 0;
    for (const Moments &m : moments) s += m.m1 * m.m2 - m.m3 + m.m4;
    return s;
}
void loss_of(const double *p, int h, int n, double *out) { *out = loss(p, h, n); }
int main() {
    const int h = 3, n = 5;
    double p[4 * h * n], d[4 * h * n] = {0}, t[4 * h * n] = {0}, dummy, unit = 1, f = 0, hh = 1e-6;
    for (int i = 0; i < 4 * h * n; i++) p[i] = 0.3 * std::sin(1.7 * i);
    __enzyme_autodiff((void *)loss_of, enzyme_dup, p, d, enzyme_const, h, enzyme_const, n, enzyme_dup, &dummy, &unit);
    for (int i = 0; i < 4 * h * n; i++) {
        double kept = p[i];
        p[i] = kept + hh; double up = loss(p, h, n);
        p[i] = kept - hh; double down = loss(p, h, n);
        p[i] = kept;
        CHECK(d[i], (up - down) / (2 * hh));
        t[i] = 1; f = 0;
        __enzyme_fwddiff((void *)loss_of, enzyme_dup, p, t, enzyme_const, h, enzyme_const, n, enzyme_dup, &dummy, &f);
        t[i] = 0;
        CHECK(f, d[i]);
    }
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_vectors_of_structs_growing(tmp_path, level):
    """Elements relocated as bytes when a vector grows, typed by the copy's `!tbaa.struct`:
    pointers (their shadows copied with them) and doubles (their adjoints moved back). Reverse
    and forward mode against central differences."""
    build_and_run(tmp_path, GROWING_VECTORS, level)


BUFFERS_OF_ITS_OWN = r"""
#include <algorithm>
#include <vector>
void __enzyme_autodiff(...) noexcept;
void __enzyme_fwddiff(...) noexcept;
// Runge-Kutta steps over vectors the function makes itself (GradBench's ode): their buffers,
// allocated on one of two paths, are no argument's memory, so what is read of `x` is read again,
// not stored; the library fills them by pointer (loops whose trip count is known by their ends).
static void rate(size_t n, const double *__restrict__ x, const double *__restrict__ y, double *__restrict__ z) {
    z[0] = x[0];
    for (size_t i = 1; i < n; i++) z[i] = x[i] * y[i - 1] - 0.25 * y[i];
}
void integrate(size_t n, const double *__restrict__ x, size_t steps, double *__restrict__ y) {
    double h = 1.0 / steps;
    std::vector<double> k1(n), k2(n), tmp(n);
    std::fill(y, y + n, 0.5);
    for (size_t s = 0; s < steps; s++) {
        rate(n, x, y, k1.data());
        for (size_t i = 0; i < n; i++) tmp[i] = y[i] + h * k1[i];
        rate(n, x, tmp.data(), k2.data());
        for (size_t i = 0; i < n; i++) y[i] += h * (k1[i] + k2[i]) / 2;
    }
}
int main() {
    const size_t n = 9, steps = 4;
    double x[n], dx[n] = {0}, y[n], adj[n] = {0}, t[n] = {0}, ty[n];
    for (size_t i = 0; i < n; i++) x[i] = 0.4 + 0.1 * i;
    adj[n - 1] = 1;
    __enzyme_autodiff((void *)integrate, enzyme_const, n, enzyme_dup, x, dx, enzyme_const, steps, enzyme_dup, y, adj);
    for (size_t i = 0; i < n; i++) {
        double h = 1e-6, kept = x[i], up, down, z[n];
        x[i] = kept + h; integrate(n, x, steps, z); up = z[n - 1];
        x[i] = kept - h; integrate(n, x, steps, z); down = z[n - 1];
        x[i] = kept;
        CHECK(dx[i], (up - down) / (2 * h));
        t[i] = 1;
        __enzyme_fwddiff((void *)integrate, enzyme_const, n, enzyme_dup, x, t, enzyme_const, steps, enzyme_dup, y, ty);
        t[i] = 0;
        CHECK(ty[n - 1], dx[i]);
    }
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_buffers_a_function_allocates_itself(tmp_path, level):
    """Vectors a differentiated function makes (on either of two paths the optimizer made),
    filled by the library's pointer loops: the reverse sweep reads the arguments again rather
    than storing them. Reverse and forward mode against central differences."""
    build_and_run(tmp_path, BUFFERS_OF_ITS_OWN, level)
    plan = adgen_cxx(level, "--adgen-explain", "-c", "prog.cpp", "-o", "prog.o", cwd=tmp_path).stdout
    stored = [line for line in plan.splitlines() if line.startswith("    per iteration of the loop at prog.cpp:")]
    assert stored and all(line.endswith(("(8 B):", "(1 B):")) for line in stored), plan  # y[i - 1] alone
    assert "growing as it runs" not in plan, plan  # (the library's loops by pointer: counted when they start)


LOCAL_FUNCTION_POINTERS = r"""
#include <vector>
#include <enzyme/enzyme>
double __enzyme_autodiff(void *, ...);
// Function pointers the file makes of its own local functions (a lambda's conversion, `+f`; a
// static function), called through inside what is differentiated: the dispatcher recognizes the
// file's own copies (Enzyme's gh_issue_1785).
static double wave(double x, double k) { return k * std::sin(x); }
double apply(double (*f)(double, double), double x) { return f(x, 2.0) * x; }
int main() {
    auto cubic = [](double x, double k) { return k * x * x * x; };
    double (*fp)(double, double) = +cubic;
    double x = 0.7, h = 1e-6;
    for (auto f : {fp, &wave}) {
        double d = __enzyme_autodiff((void *)apply, enzyme_const, f, x);
        CHECK(d, (apply(f, x + h) - apply(f, x - h)) / (2 * h));
    }
    auto grow = [](const std::vector<double> &v, const double &k) {
        std::vector<double> r(v);
        for (double &e : r) e = e * e * k;
        return r;
    };
    std::vector<double> v = {1.0, 2.0, 3.0}, dv = {1.0, 0.5, 0.0};
    double k = 1.5;
    auto got = enzyme::autodiff<enzyme::Forward, enzyme::Duplicated<std::vector<double>>>(
        +grow, enzyme::Duplicated<std::vector<double> *>{&v, &dv}, enzyme::Const<double *>{&k});
    std::vector<double> r = enzyme::get<0>(got), dr = enzyme::get<1>(got);
    for (int i = 0; i < 3; i++) {
        CHECK(r[i], v[i] * v[i] * k);
        CHECK(dr[i], 2 * v[i] * dv[i] * k);
    }
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_function_pointers_to_the_files_local_functions(tmp_path, level):
    """A lambda made a function pointer and a static function, called through pointers inside
    differentiated code, in reverse mode and through the header's forward mode returning a
    vector. Against central differences and closed forms."""
    build_and_run(tmp_path, LOCAL_FUNCTION_POINTERS, level)


LIBRARY_OBJECTS = r"""
#include <fstream>
#include <sstream>
#include <string>
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
// Strings longer than their inline buffer, grown, moved and destroyed by the C++ library's own
// code (its shared object's), a string stream's text, and a file buffer deleted through the
// library's virtual destructor, all inside a differentiated function (Enzyme's fbuff.cpp).
double weight(double v) {
    std::ostringstream out;
    out << "a line longer than a string's inline buffer" << std::endl << "and another" << std::endl;
    std::string text = out.str();
    std::string twice = text + text + " and a tail of characters";
    std::streambuf *buffer = new std::filebuf();
    delete buffer;
    double k = 1.0 + (double)(twice.size() % 5);
    return k * v * v * std::sin(v);
}
int main() {
    double v = 0.8, h = 1e-6;
    double central = (weight(v + h) - weight(v - h)) / (2 * h);
    CHECK(__enzyme_autodiff((void *)weight, v), central);
    CHECK(__enzyme_fwddiff((void *)weight, v, 1.0), central);
    return 0;
}
"""


@LEVELS
@EXCEPTIONS
@pytest.mark.slow
def test_the_libraries_strings_streams_and_buffers_inside(tmp_path, level, exceptions):
    """The C++ library's objects made and changed by its shared object inside a differentiated
    function: their shadows follow them (calls.library_objects), a string's buffer is freed as
    characters (calls.frees_characters), a virtual call into the library's object code runs it
    as it is (dispatch.py); with C++ exceptions off, as the program is built, the library's own
    try and catch are not there to refuse. Reverse and forward mode against central differences."""
    build_and_run(tmp_path, LIBRARY_OBJECTS, level, exceptions)


COMPLEX_PRODUCTS = r"""
#include <complex>
double __enzyme_autodiff(void *, ...);
// std::complex products and quotients call __muldc3 and __divdc3, which adgen defines in C: built
// with the program's flags but its C++ standard (Enzyme's cmplx.cpp with -std=c++17).
double norm_of(double a) {
    std::complex<double> z(a, 2 * a), w(1 - a, a * a);
    return std::abs(z * w / (w + 3.0));
}
int main() {
    double a = 0.6, h = 1e-6;
    CHECK(__enzyme_autodiff((void *)norm_of, a), (norm_of(a + h) - norm_of(a - h)) / (2 * h));
    return 0;
}
"""


@pytest.mark.slow
def test_complex_products_with_a_cxx_standard(tmp_path):
    build_and_run(tmp_path, COMPLEX_PRODUCTS, "-O2", "-std=c++17")


STD_FUNCTIONS = r"""
#include <functional>
#include <vector>
double __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
// std::function made and called inside a differentiated function (a call through its invoker,
// its destructor `noexcept`: the landing pad that would call std::terminate is no catch).
double apply(double x) {
    std::function<double(double)> g = [](double v) { return std::sin(v) * v; };
    double k = 3;
    std::function<double(double)> h = [k](double v) { return k * v * v; };
    std::vector<std::function<double(double)>> both = {g, h};
    double s = 0;
    for (auto &f : both) s += f(x);
    return s;
}
int main() {
    double x = 0.7, e = 1e-6, central = (apply(x + e) - apply(x - e)) / (2 * e);
    CHECK(__enzyme_autodiff((void *)apply, x), central);
    CHECK(__enzyme_fwddiff((void *)apply, x, 1.0), central);
    return 0;
}
"""


@LEVELS
@pytest.mark.slow
def test_std_function_made_and_called_inside(tmp_path, level):
    build_and_run(tmp_path, STD_FUNCTIONS, level)


TEMPLATE_READING_ONLY = r"""
#include <vector>
void __enzyme_autodiff(...) noexcept;
// A template (linkonce_odr: LLVM infers nothing of such a function, whose definition another
// module may replace) called after a loop, given the loop's buffer `const T*`: it only reads it,
// but calls lgamma, which may write memory. Read-only inferred, the reverse sweep reads `e` again
// rather than storing it each iteration (GradBench's gmm and its log_wishart_prior).
template <typename T> __attribute__((noinline)) T prior(const T *q, int n) {
    T s = 0;
    for (int i = 0; i < n; i++) s += q[i] * q[i];
    return s + std::lgamma(s + 3.0);
}
template <typename T> T loss(const T *x, int n) {
    std::vector<T> e(n);
    for (int i = 0; i < n; i++) e[i] = std::exp(x[i]);
    T s = 0;
    for (int i = 0; i < n; i++) s += e[i] * e[(i + 1) % n];
    return s + prior(e.data(), n);
}
int main() {
    const int n = 7;
    double x[n], dx[n] = {0}, h = 1e-6;
    for (int i = 0; i < n; i++) x[i] = 0.1 * i - 0.3;
    __enzyme_autodiff((void *)loss<double>, enzyme_dup, x, dx, enzyme_const, n);
    for (int i = 0; i < n; i++) {
        double kept = x[i];
        x[i] = kept + h; double up = loss(x, n);
        x[i] = kept - h; double down = loss(x, n);
        x[i] = kept;
        CHECK(dx[i], (up - down) / (2 * h));
    }
    return 0;
}
"""


@pytest.mark.slow
def test_a_template_reading_a_buffer_leaves_it_to_be_read_again(tmp_path):
    build_and_run(tmp_path, TEMPLATE_READING_ONLY, "-O2")
    plan = adgen_cxx("-O2", "--adgen-explain", "-c", "prog.cpp", "-o", "prog.o", cwd=tmp_path).stdout
    assert "per iteration of the loop at prog.cpp:26" not in plan, plan  # (`e[i]`, `e[(i + 1) % n]`: 16 B each)
    assert "a call to double prior<double>(double const*, int) (prog.cpp:27) may overwrite" not in plan, plan
