"""`adgen c++` (specs/cxx.md, "adgen c++"): C++ programs written for Enzyme's API, each checking
its own results against closed forms and exiting non-zero on a mismatch, built at -O0 and -O2
with C++ exceptions on (calls to Enzyme's entry points as `invoke`s) and off: functions and
function templates by their instantiations (`(void *)f<double>`, one inside another template),
Enzyme's attributes on a template, the C++ library's streams and strings inside a
differentiated function, inline assembly on integers; and the located errors."""

from __future__ import annotations

import subprocess
from functools import partial
from pathlib import Path

import pytest
from conftest import adgen_compiler

from adgen.base.cxx_names import cxx_library_io
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
def test_templates_streams_and_exceptions(tmp_path, level, exceptions):
    out = build_and_run(tmp_path, PROGRAM, level, exceptions, "-std=c++17")
    assert "energy 14" in out


INTEGER_ASM = r"""
#include <stdio.h>
double __enzyme_autodiff(void *, ...);
static int opaque(int i) { __asm__ volatile("nop" : "+r"(i)); return i; }  // inline assembly on an int
double f(double x) { return x * opaque(3); }
int main() { double d = __enzyme_autodiff((void *)f, 2.0); printf("%g\n", d); return d != 3.0; }
"""


@LEVELS
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


def test_inline_assembly_on_doubles_is_a_located_error(tmp_path):
    src = tmp_path / "fasm.cpp"
    src.write_text(FLOAT_ASM)
    done = adgen_cxx("-O2", src, "-o", tmp_path / "fasm", cwd=tmp_path, check=False)
    assert done.returncode == 1
    assert "fasm.cpp:5:" in done.stderr and "inline assembly" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "fasm").exists()


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
def test_enzyme_sugar_header(tmp_path, level):
    """adgen's own <enzyme/enzyme>: every mode, activity and return activity of its API."""
    build_and_run(tmp_path, SUGAR, level, "-std=c++17")


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
def test_comparing_bytes_carries_no_derivative(tmp_path, level):
    build_and_run(tmp_path, BYTES, level)
