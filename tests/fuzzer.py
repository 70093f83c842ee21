"""A differential fuzzer for adgen: random C functions (arithmetic, libm, branches, loops over
arrays, in-place updates, sums over arrays, calls between functions, directly and through
function pointers, structs passed and returned by value, complex arithmetic, memory returned by calls, realloc'd and
freed elsewhere, memory the function allocates itself (at once, on first use into a struct,
carved from a block) and writes in loops after deeper loops read it, float and double) with random activities, checked in forward mode, reverse mode and at width 4
(separate and interleaved lanes: dual, dualv, and dupv) against central finite differences and
against each other, every array the derivative code is given placed at each alignment a
`double *` allows.

    python tests/fuzzer.py --long 10000          # 10,000 programs
    python tests/fuzzer.py --seed 7 --long 200   # another stream
    python tests/fuzzer.py --openmp --long 200   # each with an OpenMP parallel loop (libomp)
    python tests/fuzzer.py --cxx --long 200      # C++: classes with operators, templates, lambdas,
                                                 # std::complex, std::vector, new and delete, the
                                                 # standard algorithms, switches, a class whose
                                                 # constructor is out of line and a function defined
                                                 # in a header the source includes; built by g++
    python tests/fuzzer.py --budget --long 200   # also a gradient within a budget of 512 bytes
                                                 # (its loops checkpointed), which must equal reverse's

Every function has the signature `double f(double *x, double *y, double a, double b)`: x is
read, y updated in place, a and b are scalars, and the result is returned. Each is
differentiated five ways (forward, reverse, forward[4] with separate lanes and interleaved,
reverse[4] interleaved) with activities drawn at random. The arrays each call gets (primal
arrays, shadows, interleaved shadows, the N tangents of an interleaved scalar) start at each
double past a 64-byte boundary in turn, so derivative code assuming more than a `double *`
promises crashes or reads the wrong data here (issue 20). A
failure is minimized (statements removed while it still fails) and written to
tests/fuzz_regressions/, which the test suite builds and checks again. A construct adgen
rejects counts as a pass only if its error names the construct and a line of the source."""

from __future__ import annotations

import argparse
import itertools
import ctypes as C
import json
import math
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REGRESSIONS = HERE / "fuzz_regressions"
L = 5  # array length

# Templates for libm calls and operators, on arguments kept inside each function's domain.
UNARY = [
    "sin({0})", "cos({0})", "tanh({0})", "exp(tanh({0}))", "log(1.0 + ({0}) * ({0}))", "sqrt(1.0 + ({0}) * ({0}))",
    "atan({0})", "pow(1.0 + ({0}) * ({0}), 1.5)", "cbrt(2.0 + tanh({0}))", "erf({0})", "expm1(tanh({0}))",
    "log1p(exp(tanh({0})))", "sinh(tanh({0}))", "cosh(tanh({0}))", "asin(0.5 * tanh({0}))",
    "acos(0.5 * tanh({0}))", "exp2(tanh({0}))", "log2(2.0 + tanh({0}))", "log10(2.0 + sin({0}))", "erfc(tanh({0}))",
    "asinh({0})", "acosh(2.0 + ({0}) * ({0}))", "atanh(0.5 * tanh({0}))", "ldexp({0}, 3)",
    "lgamma(2.0 + tanh({0}))", "tgamma(1.5 + tanh({0}))",
    "(0.7 * sin({0}) - cos({0}) * ({0}))",  # partners of one argument (rules.Rule.partner)
    "(({0}) / sqrt(1.5 + ({0}) * ({0})))",  # a division by a square root (its partial shares 1 / r: rules.py)
]
BINARY = ["({0} + {1})", "({0} - {1})", "({0} * {1})", "({0} / (1.5 + ({1}) * ({1})))", "hypot({0}, 1.0 + {1})",
          "atan2({0}, 2.0 + ({1}) * ({1}))", "fmax({0}, {1})", "fmin({0}, {1})"]
# Complex arithmetic (clang's __muldc3/__divdc3 and <complex.h>), read back as real numbers.
COMPLEX_UNARY = [
    "creal(cexp(({0}) * I) * (1.0 + 0.5 * I))", "cimag(csqrt(2.0 + tanh({0}) + I * ({0})))", "cabs(({0}) + 0.5 * I)",
    "carg(2.0 + ({0}) * I)", "creal(clog(2.0 + tanh({0}) + I * ({0})))", "cimag(csin(({0}) + 0.5 * I))",
    "creal(ccos(0.5 * tanh({0}) + 0.3 * I))", "creal(cpow(1.5 + 0.2 * I, tanh({0}) + 0.3 * I))",
    "cimag(conj(({0}) + 2.0 * I) * (0.5 - ({0}) * I))",
]
COMPLEX_BINARY = ["creal((({0}) + ({1}) * I) * (({1}) - 0.5 * I))",
                  "cimag((({0}) + 0.5 * I) / (1.5 + tanh({1}) + ({0}) * I))"]
# The same in C++ (std::complex), and what C++ adds: a class with operators, a template, a lambda.
CXX_UNARY = [
    "std::real(std::exp(fz_c(0.0, {0})) * fz_c(1.0, 0.5))", "std::imag(std::sqrt(fz_c(2.0 + tanh({0}), {0})))",
    "std::abs(fz_c({0}, 0.5))", "std::arg(fz_c(2.0, {0}))", "std::real(std::log(fz_c(2.0 + tanh({0}), {0})))",
    "fz_sq({0})", "(fz_vec2{{{0}, 0.5}} * 1.5 + fz_vec2{{0.25, {0}}}).norm2()",
    "[&](double q) {{ return q * q - 0.5 * q; }}({0})",
]
# SIMD code: vector values (GNU's vector types) inside statement expressions, so that they stay
# within the function ({n}: a number that keeps names apart, {i}: a lane index, {k}: an offset).
VECTOR = [
    "({{ fz_v2 _v{n} = {{{0}, {1}}}; fz_v2 _w{n} = _v{n} * _v{n} + __builtin_shufflevector(_v{n}, _v{n}, 1, 0) * 0.5;"
    " _w{n}[0] - 0.25 * _w{n}[1]; }})",
    "({{ fz_v2 _v{n} = {{{0}, {1}}}; fz_v2 _w{n} = __builtin_elementwise_sqrt(_v{n} * _v{n} + 1.0) / "
    "(_v{n} * _v{n} + 2.0); _w{n}[1] * 1.5 + _w{n}[0]; }})",
    "({{ fz_v2 _v{n} = {{{0}, {1}}}; _v{n}[{i} & 1] = _v{n}[1 - ({i} & 1)] * 0.75; _v{n}[0] * _v{n}[1]; }})",
    "({{ fz_v2 _v{n}; __builtin_memcpy(&_v{n}, x + {k}, sizeof _v{n}); _v{n} = _v{n} * ({0}) + ({1});"
    " _v{n}[0] - _v{n}[1] * 0.5; }})",
]
CXX_BINARY = [
    "std::real(fz_c({0}, {1}) * fz_c({1}, -0.5))", "std::imag(fz_c({0}, 0.5) / fz_c(1.5 + tanh({1}), {0}))",
    "fz_vec2{{{0}, {1}}}.dot(fz_vec2{{{1}, 0.5}} - fz_vec2{{0.25, {0}}})", "fz_max2({0}, {1})",
    "[](double p, double q) {{ return p * tanh(q) + 0.5 * p; }}({0}, {1})",
]


@dataclass
class Function:
    name: str
    body: list[str]  # statements, one per line (compound statements on one line)
    helpers: list[str] = field(default_factory=list)
    uses_float: bool = False
    cxx: bool = False  # written in C++
    uses_vectors: bool = False  # vector values: not with interleaved lanes (dualv, dupv), which refuse them
    loads_pointers: bool = False  # pointers to data with derivatives loaded from memory: nor those

    def source(self, acts: dict[str, tuple[str, ...]]) -> str:
        entries = ";\n//       ".join(f"{self.name}_{k}: {v}" for k, v in acts.items())
        body = "\n".join("    " + s for s in self.body)
        return (f"// @diff({entries})\n"
                f"double {self.name}(double *x, double *y, double a, double b)\n{{\n"
                f"    double t0 = a, t1 = b, t2 = x[0], t3 = y[1];\n"
                f"    int n = {L} - (b > 1e9); /* {L}, though the compiler cannot know it */\n{body}\n"
                f"    return t0 + t1 * t2 - t3 + y[0];\n}}\n")




class Generator:
    """Random statements and expressions. `loops` holds the variables of the loops around the
    code being generated (innermost last); each runs from 0 to below L."""

    def __init__(self, rng: random.Random, index: int, scalars=("a", "b", "t0", "t1", "t2", "t3"),
                 arrays=("x", "y"), calls: bool = True, cxx: bool = False):
        self.rng, self.index, self.cxx = rng, index, cxx
        self.scalars, self.arrays, self.calls = scalars, arrays, calls
        self.helpers: list[str] = []
        self.uses_float = False
        self.uses_vectors = False
        self.loads_pointers = False
        self.vectors_made = itertools.count()  # (names of vector values, apart in the function)

    def leaf(self, loops: tuple = ()) -> str:
        r = self.rng
        choices = [*self.scalars, *(f"{a}[{r.randrange(L)}]" for a in self.arrays), f"{r.uniform(-2, 2):.3f}"]
        for v in loops:
            choices += [f"x[{v}]", f"y[{v}]", f"x[({v} + {r.randrange(1, L)}) % {L}]", f"(double){v}"]
        return r.choice(choices)

    def expr(self, depth: int, loops: tuple = ()) -> str:
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(loops)
        k = r.random()
        special, unary, rate = (CXX_BINARY, CXX_UNARY, 0.25) if self.cxx else (COMPLEX_BINARY, COMPLEX_UNARY, 0.1)
        if k < 0.4:
            a, b = self.expr(depth - 1, loops), self.expr(depth - 1, loops)
            return r.choice(special if r.random() < rate else BINARY).format(a, b)
        if k < 0.75:
            return r.choice(unary if r.random() < rate else UNARY).format(self.expr(depth - 1, loops))
        if k < 0.82:
            return f"(-({self.expr(depth - 1, loops)}))"
        if k < 0.88:  # floats hold bounded values: finite differences then see float rounding as noise
            self.uses_float = True
            return f"(double)(float)tanh({self.expr(depth - 1, loops)})"
        if k < 0.94 and self.calls and len(self.helpers) < 2:
            return self.call(depth, loops) if r.random() < 0.6 else self.struct_call(depth, loops)
        if k < 0.955:  # (in about a quarter of the functions)
            return self.vector(depth, loops)
        c, d = self.expr(depth - 1, loops), self.expr(depth - 1, loops)
        return f"({self.expr(depth - 1, loops)} > {r.uniform(-1, 1):.2f} ? {c} : {d})"

    def vector(self, depth: int, loops: tuple) -> str:
        """An expression computed with vector values (VECTOR)."""
        r = self.rng
        template = r.choice(VECTOR if "x" in self.arrays else VECTOR[:3])
        self.uses_vectors = True
        lane = loops[-1] if loops else f"(int)({self.scalars[0]} > 0.3)"
        return template.format(self.expr(depth - 1, loops), self.expr(depth - 1, loops), n=next(self.vectors_made),
                               i=lane, k=r.randrange(L - 1))

    def call(self, depth: int, loops: tuple) -> str:
        """A helper function, out of line or not, taking a scalar and the array x."""
        name = f"h{self.index}_{len(self.helpers)}"
        inline = "static" if self.rng.random() < 0.5 else "__attribute__((noinline)) static"
        inner = Generator(self.rng, self.index, scalars=("u",), arrays=("x",), calls=False, cxx=self.cxx)
        body = inner.expr(2)
        self.uses_float |= inner.uses_float
        self.uses_vectors |= inner.uses_vectors
        self.helpers.append(f"{inline} double {name}(double u, const double *x)\n{{\n    return {body};\n}}\n")
        # through a pointer the compiler cannot see through (not one with vector values: every call
        # through a pointer of its type may reach it, in functions differentiated with interleaved lanes)
        if self.rng.random() < 0.35 and not inner.uses_vectors:
            self.helpers.append(f"static double (*volatile p{name})(double, const double *) = {name};\n")
            name = "p" + name
        return f"{name}({self.expr(depth - 1, loops)}, x)"

    def struct_call(self, depth: int, loops: tuple) -> str:
        """A helper taking and returning a struct by value (STRUCT_HELPERS defines the struct)."""
        name = f"s{self.index}_{len(self.helpers)}"
        inline = "static" if self.rng.random() < 0.8 else "__attribute__((noinline)) static"
        inner = Generator(self.rng, self.index, scalars=("p.lo", "p.hi", "u"), arrays=(), calls=False, cxx=self.cxx)
        lo, hi = inner.expr(2), inner.expr(2)
        self.uses_float |= inner.uses_float
        self.uses_vectors |= inner.uses_vectors
        self.helpers.append(f"{inline} fz_pair {name}(fz_pair p, double u)\n{{\n    fz_pair r = {{ {lo}, {hi} }};\n"
                            f"    return r;\n}}\n")
        part = self.rng.choice(["lo", "hi"])
        made = f"fz_make({self.expr(depth - 1, loops)}, {self.expr(depth - 1, loops)})"
        return f"{name}({made}, {self.expr(depth - 1, loops)}).{part}"

    def heap(self, target: str) -> str:
        """Memory on the heap: returned by a function that allocates it (out of line or not), or
        a buffer grown by realloc; read back, then freed here or by another function."""
        r = self.rng
        if r.random() < 0.5:
            name = f"m{self.index}_{len(self.helpers)}"
            inline = "static" if r.random() < 0.5 else "__attribute__((noinline)) static"
            inner = Generator(r, self.index, scalars=("u",), arrays=("x",), calls=False, cxx=self.cxx)
            body = inner.expr(2)
            self.uses_float |= inner.uses_float
            self.uses_vectors |= inner.uses_vectors
            new = r.random() < 0.5 if self.cxx else False
            allocate = "new double[n]" if new else "(double *)malloc(n * sizeof *w)"
            self.helpers.append(f"{inline} double *{name}(double u, const double *x, int n)\n{{\n"
                                f"    double *w = {allocate};\n    for (int i = 0; i < n; i++)\n"
                                f"        w[i] = ({body}) * x[(i + {r.randrange(L)}) % {L}];\n    return w;\n}}\n")
            make = f"double *w = {name}({self.expr(2)}, x, n);"
            if new:
                return f"{{ {make} {target} = {target} * 0.5 + w[{r.randrange(L)}] * w[{r.randrange(L)}]; delete[] w; }}"
        else:
            make = (f"double *w = NULL; for (int i = 0; i < n; i++) {{ w = (double *)realloc(w, (i + 1) * sizeof *w); "
                    f"w[i] = {self.expr(2, ('i',))}; }}")
        free = r.choice(["free(w);", "fz_free(w);"])
        return f"{{ {make} {target} = {target} * 0.5 + w[{r.randrange(L)}] * w[{r.randrange(L)}]; {free} }}"

    def allocated(self, target: str) -> str:
        """Memory the function allocates itself (malloc, calloc, on first use into a struct on
        the stack, or carved from a block it allocates), written in loops after deeper loops read
        it (undone through the undo log), read back, then freed."""
        r = self.rng
        how = r.randrange(4)
        make = ["double *w = (double *)malloc(2 * n * sizeof *w);", "double *w = (double *)calloc(2 * n, sizeof *w);",
                "fz_box bx = {0, 0}; double *w = fz_lazy(&bx, n);",
                "double *blk = (double *)malloc(4 * n * sizeof *blk); double *w = blk + n;"][how]
        free = ["free(w);", "fz_free(w);", "free(bx.p);", "free(blk);"][how]
        self.loads_pointers |= how == 2
        e = lambda loops: self.expr(1, loops)
        fill = f"for (int i = 0; i < n; i++) w[i] = {e(('i',))};"
        forward = (f"for (int i = 0; i < n; i++) {{ double s = 0; for (int j = 0; j < n; j++) s += w[j] * "
                   f"{e(('i', 'j'))}; w[n + i] = tanh(s); }}")
        back = (f"for (int i = 0; i < n; i++) {{ double s = 0; for (int j = 0; j < n; j++) s += w[n + j] * "
                f"{e(('i', 'j'))}; w[i] = sin(s) + 0.5 * w[i]; }}")
        read = f"{target} = {target} * 0.5 + w[{r.randrange(L)}] * w[n + {r.randrange(L)}];"
        return "{ " + " ".join([make, fill, forward, back, read, free]) + " }"

    def library(self, target: str) -> str:
        """C++ as others write it (issue 41): a standard algorithm on a vector of active values,
        with a lambda or a standard comparator, or none; a switch whose cases share a block; a
        class whose constructor is defined out of its class; a function the project's header
        defines (CXX_HEADER)."""
        r = self.rng
        e = lambda loops=(): self.expr(1, loops)  # noqa: E731
        fill = f"std::vector<double> w(n); for (int i = 0; i < n; i++) w[i] = {e(('i',))};"
        read = f"{target} = {target} * 0.5 + w[{r.randrange(3)}] * {e()} + w[{r.randrange(3, L)}];"
        what = r.randrange(10)
        if what < 5:
            comparator = r.choice(["", ", [](double p, double q) { return p > q; }", ", std::greater<double>()",
                                   ", [](double p, double q) { return fabs(p) < fabs(q); }"])
            call = r.choice([f"std::sort(w.begin(), w.end(){comparator});",
                             f"std::stable_sort(w.begin(), w.end(){comparator});",
                             f"std::partial_sort(w.begin(), w.begin() + 3, w.end(){comparator});",
                             f"std::nth_element(w.begin(), w.begin() + 2, w.end(){comparator});",
                             f"std::swap(w[0], *std::max_element(w.begin(), w.end(){comparator}));"])
            return "{ " + " ".join([fill, call, read]) + " }"
        if what < 7:
            cases = [self.statement(0) for _ in range(3)]
            return (f"switch ((int)(fabs({e()}) * 3.0) % 5) {{ case 0: case 3: {cases[0]} break; "
                    f"case 1: {cases[1]} /* fall through */ case 2: {cases[2]} break; default: break; }}")
        if what < 9:
            return f"{{ fz_acc acc({e()}); acc.add({e()}); acc.add({e()}); {target} = {target} * 0.5 + acc.total(); }}"
        return f"{target} = {target} * 0.5 + fz_hsum(x, n) * {e()};"

    def statement(self, depth: int, loops: tuple = ()) -> str:
        r = self.rng
        if self.cxx and self.calls and not loops and depth > 0 and r.random() < 0.15:
            return self.library(r.choice(["t0", "t1", "t2", "t3"]))
        k = r.random()
        target = r.choice(["t0", "t1", "t2", "t3"])
        v = loops[-1] if loops else None
        if k < 0.27:
            return f"{target} = {self.expr(3, loops)};"
        if k < 0.4:
            index = v if v and r.random() < 0.6 else str(r.randrange(L))
            op = r.choice(["=", "+=", "*="])
            value = self.expr(2, loops)
            if op == "*=":
                value = f"tanh({value})"
            return f"y[{index}] {op} {value};"
        if k < 0.52 and depth > 0:
            cond = f"{self.expr(2, loops)} > {r.uniform(-1, 1):.2f}"
            return f"if ({cond}) {{ {self.statement(depth - 1, loops)} }} else {{ {self.statement(depth - 1, loops)} }}"
        if k < 0.7 and depth > 0 and len(loops) < 2:
            w = "ij"[len(loops)]
            # a constant trip count (unrolled before differentiation), one known only at run time
            # (n is L, but the compiler cannot see it), or a triangular inner loop
            bound = r.choice([f"{w} < {L}", f"{w} < n", f"{w} < n"] + ([f"{w} <= {v}"] if v else []))
            inner = " ".join(self.statement(depth - 1, loops + (w,)) for _ in range(r.randint(1, 3)))
            return f"for (int {w} = 0; {bound}; {w}++) {{ {inner} }}"
        if k < 0.75 and loops:
            return f"if ({self.expr(1, loops)} > {r.uniform(0.5, 1.5):.2f}) break;"
        if k < 0.81 and depth > 0 and not loops:
            inner = self.statement(depth - 1)
            return f"{{ int k = 0; while (k < 3 && {self.expr(1)} < {r.uniform(0.5, 3):.2f}) {{ {inner} k++; }} }}"
        if k < 0.86 and not loops:  # a local array, filled by a loop and read back
            return (f"{{ double w[{L}]; for (int i = 0; i < n; i++) w[i] = {self.expr(2, ('i',))}; "
                    f"{target} = {target} * 0.5 + w[{r.randrange(L)}] * w[{r.randrange(L)}]; }}")
        if k < 0.89 and not loops:
            if r.random() < 0.35:
                return self.allocated(target)
            if self.cxx and r.random() < 0.4:  # a std::vector, filled and read back
                return (f"{{ std::vector<double> w(x, x + n); for (int i = 0; i < n; i++) w[i] = w[i] * "
                        f"{self.expr(2, ('i',))}; {target} = {target} * 0.5 + w[{r.randrange(L)}] * w[{r.randrange(L)}]; }}")
            return self.heap(target)
        if k < 0.92:
            self.uses_float = True
            return f"{{ float f = (float)tanh({self.expr(2, loops)}); {target} = {target} * 0.5 + (double)(f * f); }}"
        if k < 0.96 and depth > 0 and not loops:
            return self.sum_loop(target)
        return f"{target} = {target} * {self.expr(2, loops)} + {self.leaf(loops)};"


    def sum_loop(self, target: str) -> str:
        """A loop that reads and sums, nothing more, over x[i] and x[i + 1] (whose load the optimizer
        carries over to the next iteration) or into a local sum."""
        r = self.rng
        term, op = self.expr(2, ("i",)), r.choice(["+=", "-="])
        if r.random() < 0.5:
            return f"for (int i = 0; i + 1 < n; i++) {target} {op} ({term}) * x[i + 1] - x[i] * x[i];"
        return f"{{ double s = 0; for (int i = 0; i < n; i++) s {op} {term}; {target} = {target} * 0.5 + s * s; }}"

    def parallel(self) -> str:
        """An OpenMP loop free of data races (specs/openmp.md): each iteration writes its own
        element of y, or a reduction (`+`, `*`, `max`, `min`) into a scalar, or a parallel region
        summing into a private variable that a critical section adds to a scalar, or atomic
        updates of a scalar, or a region of two loops, the second reading (after the barrier between them) elements of y the first
        wrote in other iterations; what the iterations read is otherwise x, y's own element and
        scalars no iteration writes."""
        r = self.rng
        target = r.choice(["t0", "t1", "t2", "t3"])
        inner = Generator(r, self.index, scalars=tuple(v for v in self.scalars if v != target), arrays=("x",),
                          calls=False, cxx=self.cxx)
        e = lambda: inner.expr(2, ("i",))
        schedule = r.choice(["", " schedule(static, 2)", " schedule(dynamic)", " schedule(guided)"])
        k = r.random()
        if k < 0.35:
            op = r.choice(["=", "+="])
            text = f"#pragma omp parallel for{schedule}\n    for (int i = 0; i < n; i++) {{ y[i] {op} {e()}; }}"
        elif k < 0.7:
            op = r.choice(["+", "*", "max", "min"])
            update = {"+": f"{target} += {e()};", "*": f"{target} *= 1.0 + 0.25 * tanh({e()});",
                      "max": f"{target} = fmax({target}, {e()});", "min": f"{target} = fmin({target}, {e()});"}[op]
            text = (f"#pragma omp parallel for reduction({op}: {target}){schedule}\n"
                    f"    for (int i = 0; i < n; i++) {{ {update} }}")
        elif k < 0.8:
            text = (f"#pragma omp parallel\n    {{ double loc = 0;\n    #pragma omp for{schedule}\n"
                    f"    for (int i = 0; i < n; i++) loc += {e()};\n    #pragma omp critical\n    {target} += loc; }}")
        elif k < 0.9:  # atomic updates of a scalar every iteration adds to
            op = r.choice(["+=", "-="])
            text = (f"#pragma omp parallel for{schedule}\n    for (int i = 0; i < n; i++) {{\n"
                    f"    #pragma omp atomic\n    {target} {op} {e()}; }}")
        else:  # two phases: what the first writes, the second reads at other iterations (after the barrier)
            text = (f"#pragma omp parallel\n    {{\n    #pragma omp for{schedule}\n"
                    f"    for (int i = 0; i < n; i++) {{ y[i] = {e()}; }}\n    #pragma omp for reduction(+: {target})\n"
                    f"    for (int i = 0; i < n; i++) {{ {target} += y[(i + 1) % n] * {e()}; }} }}")
        self.uses_float |= inner.uses_float
        self.uses_vectors |= inner.uses_vectors
        return text


def generate(rng: random.Random, index: int, openmp: bool = False, cxx: bool = False) -> Function:
    """A random function; with `openmp`, one with a parallel loop among its statements; with
    `cxx`, one in C++."""
    g = Generator(rng, index, cxx=cxx)
    body = [g.statement(2) for _ in range(rng.randint(2, 6))]
    if rng.random() < 0.3:  # (memory the function allocates: in about a third of the functions)
        body.insert(rng.randint(0, len(body)), g.allocated(rng.choice(["t0", "t1", "t2", "t3"])))
    if openmp:
        body.insert(rng.randint(0, len(body)), g.parallel())
    return Function(f"f{index}", body, g.helpers, g.uses_float, cxx, g.uses_vectors, g.loads_pointers)


def activities(rng: random.Random) -> dict[str, tuple]:
    """Random activities for (x, y, a, b): which inputs carry derivatives, per mode."""
    on = [rng.random() < 0.7, True, rng.random() < 0.7, rng.random() < 0.7]  # y is written: always active
    fwd = ", ".join("dual" if o else "const" for o in on)
    rev = ", ".join(("dup" if o else "const") if k < 2 else ("active" if o else "const") for k, o in enumerate(on))
    # Interleaved lanes: one shadow of 4L doubles per array; a scalar's 4 tangents by pointer.
    fwdv = ", ".join("dualv" if o else "const" for o in on)
    revv = ", ".join(("dupv" if o else "const") if k < 2 else ("active" if o else "const") for k, o in enumerate(on))
    return {"fwd": f"({fwd}) -> dual", "rev": f"({rev}) -> active", "fwd4": f"forward[4] ({fwd}) -> dualonly",
            "fwd4v": f"forward[4] ({fwdv}) -> dualonly", "rev4v": f"reverse[4] ({revv}) -> active", "on": tuple(on)}


# ------------------------------------------------------------------ building and checking

D = C.c_double
P = C.POINTER(D)
LANES = (1.0, 2.0, -1.0, 0.5)  # width 4: lane k's direction (or seed) is this times the first's, exactly


class Placement:
    """Where the arrays of the calls go: the k-th array made starts k doubles past a 64-byte
    boundary (k mod 8), so that over a check every pointer the derivative code is given (primal
    arrays, shadows, interleaved shadows, a scalar's tangents) is at each alignment a `double *`
    allows, from 64 bytes down to 8. `start` picks the first; a check starts it from its inputs,
    so that it places the same arrays alike when run again."""

    def __init__(self):
        self.next = 0

    def start(self, at: int) -> None:
        self.next = at % 8

    def array(self, values: list[float]):
        room = (D * (len(values) + 16))()
        skip = -C.addressof(room) % 64 // C.sizeof(D) + self.next % 8
        self.next += 1
        placed = (D * len(values)).from_buffer(room, skip * C.sizeof(D))  # which keeps `room` alive
        placed[:] = values
        return placed


PLACE = Placement()
SHARED_HELPERS = """static fz_pair fz_make(double lo, double hi) { fz_pair p = { lo, hi }; return p; }
__attribute__((noinline)) static void fz_free(double *w) { free(w); }
typedef struct { double *p; int n; } fz_box;
/* memory allocated on first use, kept in a struct (llm.c's activations) */
__attribute__((noinline)) static double *fz_lazy(fz_box *b, int n)
{
    if (b->p == NULL) {
        b->p = (double *)malloc(2 * n * sizeof(double));
        b->n = n;
    }
    return b->p;
}
"""  # (both languages' helpers: after fz_pair and fz_v2)
STRUCT_HELPERS = """#include <complex.h>
#include <math.h>
#include <stdlib.h>

typedef struct { double lo, hi; } fz_pair;
typedef double fz_v2 __attribute__((vector_size(16)));

""" + SHARED_HELPERS


CXX_HELPERS = """#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <functional>
#include <vector>

typedef struct { double lo, hi; } fz_pair;
typedef std::complex<double> fz_c;
typedef double fz_v2 __attribute__((vector_size(16)));

""" + SHARED_HELPERS + """struct fz_vec2 {
    double u, v;
    fz_vec2 operator+(const fz_vec2 &o) const { return {u + o.u, v + o.v}; }
    fz_vec2 operator-(const fz_vec2 &o) const { return {u - o.u, v - o.v}; }
    fz_vec2 operator*(double s) const { return {u * s, v * s}; }
    double dot(const fz_vec2 &o) const { return u * o.u + v * o.v; }
    double norm2() const { return dot(*this); }
};
template <typename T> static double fz_sq(T t) { return static_cast<double>(t * t); }
template <typename T> static T fz_max2(T p, T q) { return p > q ? p : q; }

namespace fz {
extern "C" {
"""
CXX_END = "}  // extern \"C\"\n}  // namespace fz\n"
# The project's header a C++ program includes: definitions (not inline), a class whose constructor
# is defined outside it (issue 41: linked twice, its C1 alias exported, before).
CXX_HEADER = """#pragma once
struct fz_acc {
    double scale, sum;
    fz_acc(double s);
    void add(double v) { sum += scale * v; }
    double total() const { return sum; }
};
fz_acc::fz_acc(double s) : scale(s), sum(0.25) {}
double fz_hsum(const double *w, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += 0.1 * w[i] * w[i];
    return s;
}
"""


def build(functions: list[tuple[Function, dict]], work: Path) -> tuple[C.CDLL | None, str]:
    """Builds one source holding the functions; returns the library, or None and adgen's errors.
    In C++, the functions have C names, in a namespace."""
    cxx = any(f.cxx for f, _ in functions)
    parts = [CXX_HELPERS + '#include "fz_header.hpp"\n' if cxx else STRUCT_HELPERS]
    for f, acts in functions:
        parts += f.helpers
        parts.append(f.source({k: v for k, v in acts.items() if k != "on"}))
    return build_source("\n".join(parts + ([CXX_END] if cxx else [])), work, cxx)


def build_source(text: str, work: Path, cxx: bool = False) -> tuple[C.CDLL | None, str]:
    """adgen and the C (or C++) compiler on one source, as one library; or None and adgen's
    errors. A source with OpenMP pragmas is built with -fopenmp and linked with the runtime,
    which runs its parallel regions on THREADS threads."""
    src = work / ("fuzz.cpp" if cxx else "fuzz.c")
    src.write_text(text)
    if cxx:
        (work / "fz_header.hpp").write_text(CXX_HEADER)
    out = work / "out"
    openmp = "#pragma omp" in text
    if openmp and libomp() is None:
        raise SystemExit("no OpenMP runtime (libomp) to run parallel programs: install libomp-dev")
    gxx = cxx and GXX and "__builtin_elementwise" not in text  # (clang's builtins, which g++ lacks)
    library = ["--cxx-library=libc++"] if cxx and not gxx else []  # (the derivative's library: the program's)
    done = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "build", "-q", str(src), "-o", str(out),
                           *library, *(["--", "-fopenmp"] if openmp else [])], capture_output=True, text=True)
    if done.returncode != 0:
        return None, done.stderr
    cc = [GXX] if gxx else [sys.executable, "-m", "ziglang", "c++" if cxx else "cc"]  # (g++: libstdc++)
    subprocess.run([*cc, "-c", "-O2", "-fPIC", *(["-fopenmp"] if openmp else []), str(src), "-o", str(work / "fuzz.o")],
                   check=True, capture_output=True)
    lib = work / f"lib{abs(hash(src.read_text())) % 10**9}.so"
    runtime = openmp_runtime() if openmp else []
    subprocess.run([*cc, "-shared", "-O2", str(work / "fuzz.o"), str(out / "fuzz.adgen.o"), *runtime, "-o", str(lib),
                    "-lm"], check=True, capture_output=True)  # (-O2: zig's runtimes of the compile's mode)
    if openmp:
        C.CDLL(libomp()).omp_set_num_threads(THREADS)  # (no thread starts before a region runs)
        os.environ["ADGEN_PARALLEL_REVERSE"] = "always"  # (reverse sweeps on the team, atomic adds or not)
    return C.CDLL(str(lib)), ""


THREADS = 3  # for the parallel programs: five iterations split unevenly
GXX = shutil.which("g++")


def libomp() -> str | None:
    """The path of an OpenMP runtime library to link with, None where there is none."""
    from adgen.base.toolchain import openmp_library

    return openmp_library()


def openmp_runtime() -> list[str]:
    """A link's arguments for code the bundled clang compiled with -fopenmp: the runtime (and the
    empty entry point an older one lacks: base/toolchain.py's openmp_runtime_flags)."""
    from adgen.base.toolchain import openmp_runtime_flags

    return openmp_runtime_flags()


class Outcome:
    def __init__(self):
        self.passed = 0
        self.rejected = 0  # located build errors: passes, counted apart
        self.reasons: list[str] = []
        self.inconclusive = 0
        self.failures: list[str] = []


def _run(primal, z: list[float]) -> list[float]:
    """The primal as a map from (x, y, a, b) to (return value, y after the call)."""
    x, y = PLACE.array(z[:L]), PLACE.array(z[L:2 * L])
    r = primal(x, y, z[2 * L], z[2 * L + 1])
    return [r] + list(y)


_LIBM = C.CDLL(None)  # fenv: the C library's floating-point exception flags
ARM = platform.machine() in ("aarch64", "arm64")
FE_OVERFLOW, FE_ALL_EXCEPT = (0x04, 0x1F) if ARM else (0x08, 0x3D)
FE_TONEAREST, FE_UPWARD, FE_DOWNWARD = (0, 0x400000, 0x800000) if ARM else (0, 0x800, 0x400)


def _overflows(primal, z: list[float]) -> bool:
    """Whether some intermediate of the primal overflows to infinity at z (its result may still
    be finite, say through tanh): its derivative there is inf * 0, NaN in any AD tool."""
    x, y = PLACE.array(z[:L]), PLACE.array(z[L:2 * L])
    _LIBM.feclearexcept(FE_ALL_EXCEPT)
    primal(x, y, z[2 * L], z[2 * L + 1])
    return bool(_LIBM.fetestexcept(FE_OVERFLOW))


def _rounds_away(primal, z: list[float], tol: float) -> bool:
    """Whether the primal's value at z depends on how its operations round by more than tol:
    a term absorbed by a huge one (t + s - t with |t| near 1e270) is lost to the primal and to
    its finite differences, but its derivative is not, so there is no reference there. Rounding
    every operation up, then down, moves a well-conditioned result by a few ulps only."""
    runs = []
    try:
        for mode in (FE_UPWARD, FE_DOWNWARD):
            _LIBM.fesetround(mode)
            runs.append(_run(primal, z))
    finally:
        _LIBM.fesetround(FE_TONEAREST)
    return not _close(runs[0], runs[1], tol)


def _fd(primal, z, u, h):
    plus = _run(primal, [a + h * b for a, b in zip(z, u)])
    minus = _run(primal, [a - h * b for a, b in zip(z, u)])
    return [(p - m) / (2 * h) for p, m in zip(plus, minus)]


def _close(a: list[float], b: list[float], tol: float) -> bool:
    scale = max(1.0, max(abs(v) for v in b))
    return all(abs(p - q) <= tol * scale for p, q in zip(a, b))


def check(lib, f: Function, acts: dict, rng: random.Random) -> str | None:
    """None when the three derivatives agree with finite differences and each other; else why."""
    on = acts["on"]
    primal = getattr(lib, f.name)
    primal.restype, primal.argtypes = D, [P, P, D, D]
    z = [rng.uniform(-1, 1) for _ in range(2 * L + 2)]
    PLACE.start(hash(tuple(z)))
    mask = [on[0]] * L + [on[1]] * L + [on[2], on[3]]
    u = [rng.uniform(-1, 1) if m else 0.0 for m in mask]
    values = _run(primal, z)
    if not all(math.isfinite(v) and abs(v) < 1e8 for v in values):
        return "skip"
    # Rounding to float makes a function a staircase at float resolution: take steps well
    # above it, and expect the tangents themselves to be rounded to float precision.
    h, tol, exact = (1e-3, 2e-3, 1e-5) if f.uses_float else (1e-6, 2e-5, 1e-9)
    fd, third = _fd(primal, z, u, h), _fd(primal, z, u, h / 3)
    if not _close(fd, third, tol / 4):
        return "skip"  # a branch flips within the step: no reference here
    jvp = forward(lib, f, on, z, u)
    if not all(map(math.isfinite, jvp)) and _overflows(primal, z):
        return "skip"
    if not _close(jvp, fd, tol):
        # An output whose finite differences change with the step on its own scale is not
        # resolved by the step (sin of a value that moves by thousands within it, say), though
        # the outputs together look settled beside a larger one.
        scale = max(1.0, max(abs(v) for v in fd))
        wrong = [i for i, (p, q) in enumerate(zip(jvp, fd)) if abs(p - q) > tol * scale]
        if any(abs(fd[i] - third[i]) > tol / 4 * max(1.0, abs(fd[i])) for i in wrong):
            return "skip"
        # A kink (min, max, a branch) very near z is straddled almost evenly by both steps, so
        # they agree with each other and not with the one-sided derivative: the derivative then
        # changes between just before and just after z.
        near = [forward(lib, f, on, [a + s * h / 10 * b for a, b in zip(z, u)], u) for s in (1, -1)]
        if all(map(math.isfinite, jvp + near[0] + near[1])) and not _close(near[0], near[1], tol):
            return "skip"
        if _rounds_away(primal, z, tol / 4):
            return "skip"
        return f"forward {jvp} != finite differences {fd}"
    if not hasattr(lib, f"{f.name}_rev"):  # forward mode alone (--openmp: its parallel regions fork)
        if not hasattr(lib, f"{f.name}_fwd4"):  # (not differentiated at width 4: `fuzz`'s `wide`)
            return None
        lanes = forward4(lib, f, on, z, u)
        if all(_close(lane, jvp, exact) for lane in lanes) or _rounds_away(primal, z, tol / 4):
            return None  # (or the lanes' sums, reassociated, cancel huge terms as the primal does)
        return f"forward[4] lanes {lanes} != forward {jvp}"
    v = [rng.uniform(-1, 1) for _ in range(L + 1)]
    grad = reverse(lib, f, on, z, v)
    if hasattr(lib, f"{f.name}_ckpt"):  # within a budget: the same operations again, the same gradient
        within = reverse(lib, f, on, z, v, "ckpt")
        if not _same(within, grad, 1e-12):
            return f"reverse within a budget {within} != reverse {grad}"
    lhs = sum(p * q for p, q in zip(jvp, v))
    rhs = sum(p * q for p, q in zip(grad, u))
    if not abs(lhs - rhs) <= exact * max(1.0, abs(lhs), sum(abs(g) for g in grad)):  # a NaN gradient too
        if not math.isfinite(rhs) and _overflows(primal, z):
            return "skip"  # an intermediate overwritten after it overflowed: its zero adjoint times inf
        return f"<J u, v> = {lhs} but <u, J^T v> = {rhs}"
    if not hasattr(lib, f"{f.name}_fwd4"):
        return None
    lanes = forward4(lib, f, on, z, u)  # the same direction in every lane: equal but for rounding
    if not all(_close(lane, jvp, exact) for lane in lanes) and not _rounds_away(primal, z, tol / 4):
        return f"forward[4] lanes {lanes} != forward {jvp}"  # (derivative sums may be reassociated: where
        # they cancel huge terms, as the primal does then, rounding differs lane by lane)
    if not hasattr(lib, f"{f.name}_fwd4v"):  # a program kept before interleaved lanes were checked
        return None
    lanes = forward4v(lib, f, on, z, u)  # lane k along LANES[k] times u
    if not all(_same(lane, [s * t for t in jvp], exact) for s, lane in zip(LANES, lanes)):
        return f"forward[4] interleaved lanes {lanes} != forward {jvp} times {LANES}"
    lanes = reverse4v(lib, f, on, z, v)  # lane k seeded with LANES[k] times v
    if not all(_same(lane, [s * g for g in grad], exact) for s, lane in zip(LANES, lanes)):
        return f"reverse[4] interleaved lanes {lanes} != reverse {grad} times {LANES}"
    return None


def _same(lane: list[float], want: list[float], tol: float) -> bool:
    """A lane equals the width-1 derivative it scales. That is finite here (check has compared it
    with finite differences, and the gradient through the dot product, NaN failing both; an
    overflow inside the primal was inconclusive before), so a NaN lane is wrong; an infinity
    must be matched where the scaling overflows."""
    if any(math.isnan(p) or math.isinf(q) and p != q for p, q in zip(lane, want)):
        return False
    finite = [(p, q) for p, q in zip(lane, want) if math.isfinite(q)]
    return not finite or _close([p for p, _ in finite], [q for _, q in finite], tol)


def _args(on, z, shadows):
    """Arguments in the derived ABI: each active input followed by its shadows."""
    x, y = PLACE.array(z[:L]), PLACE.array(z[L:2 * L])
    args = [x] + ([*shadows[0]] if on[0] else []) + [y] + ([*shadows[1]] if on[1] else []) + [z[2 * L]] + \
        ([*shadows[2]] if on[2] else []) + [z[2 * L + 1]] + ([*shadows[3]] if on[3] else [])
    return [D(a) if isinstance(a, float) else a for a in args], y


def forward(lib, f, on, z, u) -> list[float]:
    class R(C.Structure):
        _fields_ = [("ret", D), ("d_ret", D)]

    dx, dy = PLACE.array(u[:L]), PLACE.array(u[L:2 * L])
    args, _ = _args(on, z, [[dx], [dy], [u[2 * L]], [u[2 * L + 1]]])
    fwd = getattr(lib, f"{f.name}_fwd")
    fwd.restype = R
    r = fwd(*args)
    return [r.d_ret] + list(dy)


def forward4(lib, f, on, z, u) -> list[list[float]]:
    class R(C.Structure):
        _fields_ = [("d_ret", D * 4)]

    dxs = [PLACE.array(u[:L]) for _ in range(4)]
    dys = [PLACE.array(u[L:2 * L]) for _ in range(4)]
    args, _ = _args(on, z, [dxs, dys, [u[2 * L]] * 4, [u[2 * L + 1]] * 4])
    fwd = getattr(lib, f"{f.name}_fwd4")
    fwd.restype = R
    r = fwd(*args)
    return [[r.d_ret[k]] + list(dys[k]) for k in range(4)]


def reverse(lib, f, on, z, v, entry: str = "rev") -> list[float]:
    fields = [("ret", D)] + ([("d_a", D)] if on[2] else []) + ([("d_b", D)] if on[3] else [])

    class R(C.Structure):
        _fields_ = fields

    gx, gy = PLACE.array([0.0] * L), PLACE.array(v[1:])
    args, _ = _args(on, z, [[gx], [gy], [], []])
    rev = getattr(lib, f"{f.name}_{entry}")
    rev.restype = R if len(fields) > 1 else D
    r = rev(*args, D(v[0]))
    da = getattr(r, "d_a", 0.0) if len(fields) > 1 else 0.0
    db = getattr(r, "d_b", 0.0) if len(fields) > 1 else 0.0
    return list(gx) + list(gy) + [da, db]


def _interleave(values: list[float]) -> list[float]:
    """Lane k of element j at index 4j + k (specs/abi.md), lane k scaled by LANES[k]."""
    return [s * v for v in values for s in LANES]


def forward4v(lib, f, on, z, u) -> list[list[float]]:
    """forward[4] with dualv: one shadow of 4L doubles per array, a scalar's 4 tangents by pointer."""
    class R(C.Structure):
        _fields_ = [("d_ret", D * 4)]

    dx, dy = PLACE.array(_interleave(u[:L])), PLACE.array(_interleave(u[L:2 * L]))
    da, db = PLACE.array(_interleave(u[2 * L:2 * L + 1])), PLACE.array(_interleave(u[2 * L + 1:]))
    args, _ = _args(on, z, [[dx], [dy], [da], [db]])
    fwd = getattr(lib, f"{f.name}_fwd4v")
    fwd.restype = R
    r = fwd(*args)
    return [[r.d_ret[k]] + [dy[4 * j + k] for j in range(L)] for k in range(4)]


def reverse4v(lib, f, on, z, v) -> list[list[float]]:
    """reverse[4] with dupv: one shadow of 4L doubles per array (y's holding the seeds of y)."""
    fields = [("ret", D)] + ([("d_a", D * 4)] if on[2] else []) + ([("d_b", D * 4)] if on[3] else [])

    class R(C.Structure):
        _fields_ = fields

    gx, gy = PLACE.array([0.0] * 4 * L), PLACE.array(_interleave(v[1:]))
    args, _ = _args(on, z, [[gx], [gy], [], []])
    rev = getattr(lib, f"{f.name}_rev4v")
    rev.restype = R if len(fields) > 1 else D
    r = rev(*args, *(D(s * v[0]) for s in LANES))
    lanes = []
    for k in range(4):
        da = r.d_a[k] if on[2] else 0.0
        db = r.d_b[k] if on[3] else 0.0
        lanes.append([gx[4 * j + k] for j in range(L)] + [gy[4 * j + k] for j in range(L)] + [da, db])
    return lanes


# ------------------------------------------------------------------ running

def run_batch(batch: list[tuple[Function, dict]], rng: random.Random, outcome: Outcome, work: Path,
              keep_failures: bool) -> None:
    lib, errors = build(batch, work)
    while lib is None:
        # A rejected construct counts as a pass when the error names it and its line; the error
        # names the derived function that needed it, so that function leaves the batch.
        bad = set(re.findall(r"fuzz\.c(?:pp)?:\d+:\d+: error: cannot differentiate .*\(needed by '(f\d+)_\w+'\)",
                             errors))
        names = {f.name for f, _ in batch}
        if not bad or not bad <= names:
            outcome.failures.append(f"build failed without a located 'cannot differentiate' error:\n{errors}")
            if keep_failures:  # the functions that fail alone, kept (minimized) for the test suite
                for f, acts in batch:
                    if _unbuildable(f, acts, work):
                        minimize_and_keep(f, acts, work, None)
            return
        outcome.rejected += len(bad)
        outcome.reasons += re.findall(r"error: cannot differentiate (.*?) in function", errors)
        batch = [(f, a) for f, a in batch if f.name not in bad]
        if not batch:
            return
        lib, errors = build(batch, work)
    seeds = [rng.getrandbits(64) for _ in batch]
    results = checked(lib, [(f, acts, [seed]) for (f, acts), seed in zip(batch, seeds)])
    for (f, acts), seed, why in zip(batch, seeds, results):
        if why is None:
            outcome.passed += 1
        elif why == "skip":
            outcome.inconclusive += 1
        else:
            outcome.failures.append(f"{f.name} {acts['on']}: {why}")
            if keep_failures:
                minimize_and_keep(f, acts, work, seed)


def checked(lib, cases: list[tuple[Function, dict, list[int]]]) -> list[str | None]:
    """`check` of each case (a function, its activities, the seeds of its inputs), in a child
    process, so that derivative code that crashes is a failure of its function, not of the run."""
    results: list[str | None] = []
    while len(results) < len(cases):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: one line of JSON per case, as each is done
            os.close(read)
            out = os.fdopen(write, "w")
            for f, acts, seeds in cases[len(results):]:
                whys = []
                for seed in seeds:
                    try:
                        whys.append(check(lib, f, acts, random.Random(seed)))
                    except Exception as exc:  # a Python-level failure in the derivative's call
                        whys.append(f"{type(exc).__name__}: {exc}")
                why = next((w for w in whys if w not in (None, "skip")), "skip" if "skip" in whys else None)
                out.write(json.dumps(why) + "\n")
                out.flush()
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as lines:
            done = [json.loads(line) for line in lines]
        _, status = os.waitpid(pid, 0)
        results += done
        if len(results) < len(cases):  # the child died on the next case
            signal = os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            results.append(f"the derivative code crashed (signal {signal})")
    return results


def minimize_and_keep(f: Function, acts: dict, work: Path, seed: int | None) -> Path:
    """Removes statements one at a time while the function still fails at the inputs of `seed`
    (or of 0, 1, 2), or, with no seed, while it still fails to build; keeps the result."""
    body = list(f.body)
    fails = (lambda g: _fails(g, acts, work, [seed, 0, 1, 2])) if seed is not None else \
        (lambda g: _unbuildable(g, acts, work))
    changed = True
    while changed:
        changed = False
        for k in range(len(body)):
            trial = Function(f.name, body[:k] + body[k + 1:], f.helpers, f.uses_float, f.cxx, f.uses_vectors,
                             f.loads_pointers)
            if fails(trial):
                body = trial.body
                changed = True
                break
    kept = Function(f.name, body, f.helpers, f.uses_float, f.cxx, f.uses_vectors, f.loads_pointers)
    REGRESSIONS.mkdir(exist_ok=True)
    path = REGRESSIONS / f"{f.name}_{abs(hash(tuple(body))) % 10**6}.{'cpp' if f.cxx else 'c'}"
    header = (f"/* fuzz regression: activities {acts['on']} (x, y, a, b); {'float' if f.uses_float else 'double'}"
              + (f"; seed {seed} */\n" if seed is not None else "; failed to build */\n"))
    path.write_text(header + (CXX_HELPERS + CXX_HEADER.replace("#pragma once\n", "") if f.cxx else STRUCT_HELPERS) +
                    "".join(f.helpers) + kept.source(
        {k: v for k, v in acts.items() if k != "on"}) + (CXX_END if f.cxx else ""))
    return path


def _unbuildable(f: Function, acts: dict, work: Path) -> bool:
    """Whether adgen fails on the function alone without a located error (an internal one)."""
    lib, errors = build([(f, acts)], work)
    return lib is None and not re.search(r"fuzz\.c(?:pp)?:\d+:\d+: error: cannot differentiate", errors)


def _fails(f: Function, acts: dict, work: Path, seeds: list[int]) -> bool:
    lib, _ = build([(f, acts)], work)
    if lib is None:
        return False
    return checked(lib, [(f, acts, seeds)])[0] not in (None, "skip")


def fuzz(programs: int, seed: int, batch_size: int = 40, keep_failures: bool = True, progress=None,
         openmp: bool = False, cxx: bool = False, budget: bool = False, wide: float = 1.0) -> Outcome:
    """`programs` random functions from `seed`; with `openmp`, each with a parallel loop, every
    other batch with forward-mode derivatives alone (whose regions fork, where reverse mode's
    builds run them serialized); with `cxx`, in C++; with `budget`, each also differentiated in
    reverse mode within 512 bytes (specs/abi.md, "Memory budgets"). `wide` is the share of the
    functions also differentiated at width 4 (forward[4], and interleaved forward[4] and
    reverse[4]), which is most of a build's code: the suite's quick runs check half of them so,
    keeping their number of functions within the suite's time; the long runs all of them (at 1,
    a seed draws the same functions as before `wide` was there)."""
    rng = random.Random(seed)
    outcome = Outcome()
    with tempfile.TemporaryDirectory(prefix="adgen-fuzz-") as tmp:
        work = Path(tmp)
        done = 0
        while done < programs:
            n = min(batch_size, programs - done)
            batch = []
            for k in range(n):
                f, acts = generate(rng, done + k, openmp, cxx), activities(rng)
                if budget and "rev" in acts:
                    acts["ckpt"] = acts["rev"] + " within 512"
                if f.uses_vectors or f.loads_pointers:  # (interleaved lanes: not with vector values, nor
                    # with pointers loaded from memory holding derivatives)
                    del acts["fwd4v"], acts["rev4v"]
                if wide < 1 and rng.random() >= wide:
                    for mode in ("fwd4", "fwd4v", "rev4v"):
                        acts.pop(mode, None)
                if openmp and (done // batch_size) % 2:  # forward mode alone: its regions fork (specs/openmp.md)
                    del acts["rev"]
                batch.append((f, acts))
            run_batch(batch, rng, outcome, work, keep_failures)
            done += n
            if progress:
                progress(done, outcome)
    return outcome


def regression_cases() -> list[Path]:
    return sorted([*REGRESSIONS.glob("*.c"), *REGRESSIONS.glob("*.cpp")]) if REGRESSIONS.exists() else []


def check_regression(path: Path, work: Path) -> str | None:
    """Builds a kept failing program again and checks it: None when it now passes."""
    lib, f, acts, seeds = build_regression(path, work)
    if isinstance(lib, str):
        return lib
    why = checked(lib, [(f, acts, seeds + [0, 1, 2])])[0]
    return None if why in (None, "skip") else why


def build_regression(path: Path, work: Path):
    """A kept program built as the fuzzer builds it: the library (or the build's errors), the
    function, its activities, and the seed it failed at (if kept)."""
    text = path.read_text()
    on = tuple(v == "True" for v in re.search(r"activities \((\w+), (\w+), (\w+), (\w+)\)", text).groups())
    name = re.search(r"^double (f\d+)\(double \*x", text, re.M).group(1)
    f = Function(name, [], uses_float="; float" in text.split("\n", 1)[0])
    seed = re.search(r"; seed (\d+) \*/", text)
    lib, errors = build_source(text, work, path.suffix == ".cpp")
    return (errors if lib is None else lib), f, {"on": on}, [int(seed.group(1))] if seed else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long", type=int, default=200, metavar="N", help="how many programs (default 200)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch", type=int, default=40, help="functions per build")
    parser.add_argument("--openmp", action="store_true",
                        help=f"each function with an OpenMP parallel loop, run on {THREADS} threads (needs libomp)")
    parser.add_argument("--cxx", action="store_true", help="C++ functions (classes, templates, lambdas, std::vector...)")
    parser.add_argument("--budget", action="store_true",
                        help="also a reverse-mode gradient within 512 bytes (its loops checkpointed), against reverse's")
    args = parser.parse_args()

    def progress(done, outcome):
        print(f"\r{done}/{args.long} programs: {outcome.passed} passed, {outcome.inconclusive} inconclusive, "
              f"{len(outcome.failures)} failed", end="", file=sys.stderr, flush=True)

    outcome = fuzz(args.long, args.seed, args.batch, progress=progress if sys.stderr.isatty() else None,
                   openmp=args.openmp, cxx=args.cxx, budget=args.budget)
    from collections import Counter

    print(f"\n{args.long} programs, seed {args.seed}: {outcome.passed} checked and right, {outcome.rejected} rejected "
          f"with a located error, {outcome.inconclusive} inconclusive (a kink or rounding within the "
          f"finite-difference step), {len(outcome.failures)} failed")
    for reason, count in Counter(outcome.reasons).most_common():
        print(f"  rejected {count}x: {reason}")
    for failure in outcome.failures:
        print("FAIL", failure)
    return 1 if outcome.failures else 0


if __name__ == "__main__":
    sys.exit(main())
