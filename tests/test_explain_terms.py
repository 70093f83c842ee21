"""What `--explain` names stored values by (ir_ad/reverse/plan/terms.py): the source expression
at a debug location's column (base/c_expressions.py), the variables of -g's debug records
(ir_ad/ir/debuginfo.py), and sizes as a user reads them (base/units.py)."""

from __future__ import annotations

import pytest

from adgen.base.c_expressions import Expression, expression_at
from adgen.base.units import human_size
from adgen.ir_ad.ir import Module
from adgen.ir_ad.ir.debuginfo import variables

SOURCE = """\
double f(const double *x, double *out, int n)
{
    double m = x[0], s = 0, *p = out;
    for (int i = 1; i < n; i++)
        m = fmax(m, x[i]);
    for (int i = 0; i < n; i++)
        s += exp(x[i] - m);
    double z = exp(x[0]) * (x[1] - m), w = (double)n * *p;
    out[0] = -0.5 * n + s
             - m * s;
    p[at++] = a < b ? a : b;
    std::vector<double> v(n), u = std::max<double>(a, b) * c;
    return log(s) + m;
}
"""
LINES = SOURCE.splitlines()


def _at(line: int, token: str, nth: int = 0) -> Expression | None:
    """The expression at the `nth` occurrence of `token` on a 1-based line."""
    text, at = LINES[line - 1], -1
    for _ in range(nth + 1):
        at = text.index(token, at + 1)
    return expression_at(LINES, line, len(text[:at].encode()) + 1)


@pytest.mark.parametrize("line, token, nth, expected", [
    (5, "fmax", 0, Expression("fmax(m, x[i])", "m")),  # a call, the whole right side of `m =`
    (7, "exp", 0, Expression("exp(x[i] - m)")),
    (7, "+=", 0, Expression("s += exp(x[i] - m)", "s", True)),  # a compound assignment: s's new value
    (7, "-", 0, Expression("x[i] - m")),
    (7, "x", 1, Expression("x[i]")),  # a load stands at what it reads
    (8, "*", 0, Expression("exp(x[0]) * (x[1] - m)", "z")),  # a declaration's value
    (8, "*", 1, Expression("(double)n * *p", "w")),  # a cast, a dereference
    (8, "*", 2, Expression("*p")),
    (3, "out", 0, Expression("out", "p")),  # (`*p = out` declares p)
    (11, "++", 0, Expression("at++", "at", True)),
    (13, "+", 0, Expression("log(s) + m")),  # after `return`
    (13, "log", 0, Expression("log(s)")),
])
def test_the_expression_at_a_column(line, token, nth, expected):
    assert _at(line, token, nth) == expected


def test_an_expression_going_on_over_lines_is_not_named():
    """The caller shows the line with a caret instead."""
    assert _at(9, "+") is None  # (the sum goes on on the next line)
    assert _at(10, "-") is None and _at(10, "*") in (None, Expression("m * s"))  # (`-` is no negation)
    assert _at(9, "=") is None


def test_a_template_is_not_read_as_comparisons():
    assert _at(12, "*") is None and _at(12, "max") is None


def test_a_conditional_is_not_named_whole():
    assert _at(11, "<") == Expression("a < b") and _at(11, "?") is None  # (nor is `a < b` the value of p[at++])


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1, "1 B"), (48, "48 B"), (1023, "1023 B"), (1024, "1 KiB"),
                                     (2560, "2.5 KiB"), (int(90.2 * (1 << 20)), "90.2 MiB"), (3 << 30, "3 GiB")])
def test_sizes_as_a_user_reads_them(n, text):
    assert human_size(n) == text


def test_the_variables_of_debug_records():
    """With -g, clang's records name the variables values are; with line tables only, none."""
    ir = """define double @f(ptr %0, i32 %1) !dbg !10 {
  %3 = load double, ptr %0, align 8
    #dbg_value(double %3, !20, !DIExpression(), !23)
    #dbg_value(i64 %1, !21, !DIExpression(DW_OP_plus_uconst, 1, DW_OP_stack_value), !23)
  ret double %3
}
!20 = !DILocalVariable(name: "m", scope: !10, file: !1, line: 3, type: !7)
!21 = !DILocalVariable(name: "i", scope: !10, file: !1, line: 4, type: !8)
"""
    module = Module(ir)
    assert variables(module.metadata, module.functions["@f"].text) == {"%3": "m"}  # (i is n + 1: not n's name)
    assert [i.opcode for i in module.functions["@f"].instructions()] == ["load", "ret"]
