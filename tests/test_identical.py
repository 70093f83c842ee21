"""Derived functions that came out the same are kept once (ir/identical.py): what merges, what
never does, and the module still reads."""

from __future__ import annotations

import subprocess

from adgen.ir_ad import optimize
from adgen.ir_ad.ir.identical import merged
from conftest import adgen_compiler


def _pair(n: int, size: str = "48") -> str:
    """A derivative's forward and reverse sweeps as adgen writes them (numbered `n`): each names
    the other (a cycle), and a constant of its own."""
    return "\n".join([
        f'@"f.l1.{n}.size" = internal constant i64 {size}',
        f'define internal double @"f.l1.{n}.aug"(double %x) {{',
        f'  %s = load i64, ptr @"f.l1.{n}.size", align 8',
        "  %y = fmul double %x, %x",
        "  ret double %y",
        "}",
        f'define internal double @"f.l1.{n}.rev"(double %x, i1 %again) {{',
        "  br i1 %again, label %more, label %done",
        "more:",
        f'  %a = call double @"f.l1.{n}.aug"(double %x)',
        f'  %b = call double @"f.l1.{n}.rev"(double %a, i1 false)',
        "  ret double %b",
        "done:",
        "  %d = fmul double %x, 2.0",
        "  ret double %d",
        "}",
    ])


CALLER = "\n".join([
    "define double @entry(double %x) {",
    '  %a = call double @"f.l1.3.rev"(double %x, i1 true)',
    '  %b = call double @"f.l1.7.rev"(double %x, i1 true)',
    "  %c = fadd double %a, %b",
    "  ret double %c",
    "}",
])


def test_the_same_derivative_twice_is_kept_once_cycles_and_constants_too():
    text, around, gone = merged(_pair(3) + "\n" + _pair(7) + "\n" + CALLER)
    assert gone == 3  # the second pair's sweeps and its constant
    assert '"f.l1.7.' not in text and around == []
    assert '%b = call double @"f.l1.3.rev"(double %x, i1 true)' in text
    optimize.parse(text)  # (reads, and verifies)


def test_references_from_the_rest_of_the_module_are_renamed():
    text, (around,), gone = merged(_pair(3) + "\n" + _pair(7), [CALLER])
    assert gone == 3 and '"f.l1.7.' not in around and around.count('@"f.l1.3.rev"') == 2
    optimize.parse(around + "\n" + text)


def test_what_differs_anywhere_stays_apart():
    different = _pair(7).replace("fmul double %x, 2.0", "fmul double %x, 3.0")
    text, _, gone = merged(_pair(3) + "\n" + different + "\n" + CALLER)
    assert gone == 2  # the constants (the same i64 48) and the forward sweeps, the same
    assert '@"f.l1.7.rev"' in text and '@"f.l1.7.aug"' not in text
    assert '%a = call double @"f.l1.3.aug"(double %x)' in text.split('@"f.l1.7.rev"')[1]
    optimize.parse(text)
    # a reverse sweep calling a forward sweep that differs: different too
    different = _pair(7).replace("fmul double %x, %x", "fadd double %x, %x")
    text, _, gone = merged(_pair(3) + "\n" + different + "\n" + CALLER)
    assert '@"f.l1.7.rev"' in text and '@"f.l1.7.aug"' in text


def test_variables_and_visible_functions_are_never_merged():
    """A variable's address is its identity (two counters are two), and a function the module
    exports is called by name from outside."""
    text = "\n".join(["@a = internal global i64 0", "@b = internal global i64 0",
                      "define double @g(double %x) {", "  ret double %x", "}",
                      "define double @h(double %x) {", "  ret double %x", "}"])
    assert merged(text) == (text, [], 0)



def test_entries_that_came_out_the_same_are_each_kept(tmp_path):
    """Enzyme's calls on two functions written the same (`adgen cc`): their kernels are the same
    code but each is found by its name, so only the derived functions behind them merge."""
    (tmp_path / "two.c").write_text(r"""
#include <stdio.h>
extern int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
double f(const double *x, int n) { double s = 0; for (int i = 0; i < n; i++) s += x[i] * x[i] * x[i]; return s; }
double g(const double *x, int n) { double s = 0; for (int i = 0; i < n; i++) s += x[i] * x[i] * x[i]; return s; }
int main(void) {
    double x[3] = {1, 2, 3}, a[3] = {0}, b[3] = {0};
    __enzyme_autodiff((void *)f, enzyme_dup, x, a, enzyme_const, 3);
    __enzyme_autodiff((void *)g, enzyme_dup, x, b, enzyme_const, 3);
    printf("%g %g %g %g %g %g\n", a[0], a[1], a[2], b[0], b[1], b[2]);
    return 0;
}
""")
    adgen_compiler("cc", "-O2", "two.c", "-o", "two", cwd=tmp_path)
    run = subprocess.run([str(tmp_path / "two")], capture_output=True, text=True)
    assert run.stdout.split() == ["3", "12", "27"] * 2, run.stdout + run.stderr
