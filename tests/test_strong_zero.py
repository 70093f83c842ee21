"""The side a select does not choose never turns a derivative into NaN (specs/abi.md, "What the
derivative code does"). The optimizer computes both sides of a branch and selects one
(`x > 0 ? sqrt(x) : 0.5 * x`, fmax and fmin, the recovery of infinities in a complex product or
quotient hoisted out of a loop); the side not chosen gets a zero adjoint, and its partials may be
infinite or NaN there (sqrt below 0, a product with an infinity). Reverse mode gave NaN where
forward mode and finite differences give finite derivatives, found by the differential fuzzer.
Each function is checked against central finite differences and forward against reverse, at
width 1, reverse[2], split mode, forward[2] and forward over reverse (Hessian-vector products),
at points where the side not chosen has non-finite partials. Across calls not inlined too (the
arguments a callee may mask, a result its caller may mask: NaN before), and a value computed on
every path but read on some, here or in a callee not inlined."""

from __future__ import annotations

import numpy as np
import pytest

import adgen
from every_mode import annotations, check_hessian_vector_product, check_lanes_and_split, check_reverse

NAMES = ("root", "nested", "biggest", "smallest", "stored", "product", "quotient", "passed", "returned", "early",
         "unread")


SOURCE = r"""
#include <complex.h>
#include <math.h>
#include <stdlib.h>

""" + annotations("root", lanes=True) + r"""double root(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] > 0 ? sqrt(x[i]) : 0.5 * x[i];
    return s;
}

/* the whole slice below the side not chosen: both square roots have NaN partials below 0 */
""" + annotations("nested", lanes=True) + r"""double nested(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] > 0 ? sqrt(sqrt(x[i])) : 0.5 * x[i];
    return s;
}

""" + annotations("biggest", lanes=True) + r"""double biggest(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += fmax(1.0, sqrt(x[i]));
    return s;
}

""" + annotations("smallest", lanes=True) + r"""double smallest(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += fmin(0.5 * x[i], 3.0 * sqrt(x[i]));
    return s;
}

/* the side not chosen comes through memory: stored in one loop, loaded in the next */
""" + annotations("stored", lanes=True) + r"""double stored(const double *x, int n)
{
    double *w = malloc(n * sizeof *w), s = 0;
    for (int i = 0; i < n; i++)
        w[i] = sqrt(x[i]);
    for (int i = 0; i < n; i++) {
        double r = w[i], t = 0.5 * x[i];  /* both loaded: a select between loads */
        s += x[i] > 0 ? r : t;
    }
    free(w);
    return s;
}

""" + annotations("product", lanes=True) + r"""double product(const double *x, int n)
{
    double t = 0;
    for (int i = 0; i < n; i++)
        t += creal((x[2] + 1.0 * I) * (2.0 - 0.5 * I));
    return t;
}

""" + annotations("quotient", lanes=True) + r"""double quotient(const double *x, int n)
{
    double t = 0;
    for (int i = 0; i < n; i++)
        t += creal((x[2] + 1.0 * I) / (2.0 - 0.5 * I));
    return t;
}

/* across calls not inlined: a callee selecting between its arguments, and a caller selecting
   between a callee's result and another value (a checkpointed loop's step is such a callee) */
__attribute__((noinline)) static double pick(double a, double b, double c) { return c > 0 ? a : b; }

""" + annotations("passed", lanes=True) + r"""double passed(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += pick(sqrt(x[i]), 0.5 * x[i], x[i]);
    return s;
}

__attribute__((noinline)) static double root_of(double a) { return sqrt(sqrt(a)); }

""" + annotations("returned", lanes=True) + r"""double returned(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        double r = root_of(x[i]);
        s += x[i] > 0 ? r : 0.5 * x[i];
    }
    return s;
}

/* a value computed on every path and read on one only: here where the loop breaks, never at X */
""" + annotations("early", lanes=True) + r"""double early(const double *x, int n)
{
    double r = sqrt(x[0]) * 3.0, s = 0;
    for (int i = 1; i < n; i++) {
        s += x[i] * x[i];
        if (s > 1e6) { s = r; break; }
    }
    return s;
}

/* the same across a call not inlined: the callee reads its argument on one path only */
__attribute__((noinline)) static double unless(double v, const double *x, int n)
{
    double s = 0;
    for (int i = 1; i < n; i++) {
        s += x[i] * x[i];
        if (s > 1e6) return v;
    }
    return s;
}

""" + annotations("unread", lanes=True) + r"""double unread(const double *x, int n)
{
    return unless(sqrt(x[0]) * 3.0, x, n);
}
"""

X = np.array([-1.0, -0.3, 0.7, 4.0])  # no kinks within the finite differences' step


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    work = tmp_path_factory.mktemp("strong_zero")
    src = work / "strong.c"
    src.write_text(SOURCE)
    return adgen.load(src, build_dir=work / "build")


@pytest.mark.parametrize("name", NAMES)
def test_reverse_against_differences_and_forward(lib, name):
    check_reverse(lib, name, X)


@pytest.mark.parametrize("name", NAMES)
def test_two_lanes_and_split_mode(lib, name):
    check_lanes_and_split(lib, name, X, lanes=True)


@pytest.mark.parametrize("name", NAMES)
def test_hessian_vector_products(lib, name):
    check_hessian_vector_product(lib, name, X, np.array([1.0, -0.5, 0.25, 2.0]))
