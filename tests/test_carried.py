"""Values the reverse sweep takes from its previous iteration (ir_ad/reverse/plan/carried.py): a
loop's header phi made at one reverse iteration is its latch value at the next. Each function
has loops whose optimized code carries a value from one iteration to the next (load PRE's
`x[i + 1]` becoming the next `x[i]`, a running product, a distance of two, a value read on one
branch only, a loop nested inside, a loop that breaks), checked against central finite
differences and forward mode, at width 2, in split mode and forward over reverse; and the
Rosenbrock gradient's reverse loop reads x once per iteration."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import adgen
from every_mode import annotations, check_hessian_vector_product, check_lanes_and_split, check_reverse

NAMES = ("pairs", "product", "apart", "sometimes", "nested", "breaks")


SOURCE = r"""
#include <math.h>

""" + annotations("pairs") + r"""double pairs(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n - 1; i++) {
        double a = x[i + 1] - x[i] * x[i], b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
    }
    return s;
}

""" + annotations("product") + r"""double product(const double *x, int n)
{
    double p = 1, s = 0;
    for (int i = 0; i < n; i++) {
        double q = p * x[i];
        s += sin(p) * q;
        p = q;
    }
    return s;
}

""" + annotations("apart") + r"""double apart(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n - 2; i++)
        s += x[i] * x[i + 2] + x[i + 1] * x[i + 1] * x[i];
    return s;
}

""" + annotations("sometimes") + r"""double sometimes(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n - 1; i++) {
        double a = x[i], b = x[i + 1];
        if (a > 0)
            s += sin(a * b) * a;
        else
            s += b;
    }
    return s;
}

""" + annotations("nested") + r"""double nested(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n - 1; i++) {
        double a = x[i + 1] - x[i];
        for (int j = 0; j < n; j++)
            s += a * x[j] * x[i];
    }
    return s;
}

""" + annotations("breaks") + r"""double breaks(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n - 1; i++) {
        s += x[i] * x[i + 1] * x[i + 1];
        if (s > 40)
            break;
    }
    return s;
}
"""

X = np.array([0.7, -0.4, 1.3, 2.1, -0.9, 0.5, 1.7])  # no kinks within the finite differences' step


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    work = tmp_path_factory.mktemp("carried")
    src = work / "carried.c"
    src.write_text(SOURCE)
    return adgen.load(src, build_dir=work / "build")


@pytest.mark.parametrize("name", NAMES)
def test_reverse_against_differences_and_forward(lib, name):
    check_reverse(lib, name, X)


@pytest.mark.parametrize("name", NAMES)
def test_two_lanes_and_split_mode(lib, name):
    check_lanes_and_split(lib, name, X)


@pytest.mark.parametrize("name", NAMES)
def test_hessian_vector_products(lib, name):
    check_hessian_vector_product(lib, name, X, np.array([1.0, -0.5, 0.25, 2.0, 0.3, -1.1, 0.6]))


@pytest.mark.parametrize("n", [1, 2, 3, 9, 40])
def test_every_length(lib, n):
    """The first reverse iteration computes the value again; the others take it (the optimizer
    peels the first): right at every trip count, those the vectorized loop leaves over too."""
    x = np.sin(np.arange(n) * 0.7) + 0.1
    dx = np.zeros(n)
    lib.pairs_grad(x.copy(), dx, n, 1.0)
    want = np.zeros(n)
    for i in range(n - 1):
        a = x[i + 1] - x[i] ** 2
        want[i] += -400 * a * x[i] - 2 * (1 - x[i])
        want[i + 1] += 200 * a
    assert dx == pytest.approx(want, rel=1e-13, abs=1e-13)


def test_rosenbrock_reads_x_once_per_iteration(tmp_path):
    """The vectorized reverse loop of `pairs` (Rosenbrock's) loads x once, where it loaded x[i] and x[i + 1]."""
    src = tmp_path / "ros.c"
    src.write_text(SOURCE)
    subprocess.run([sys.executable, "-m", "adgen.commands.cli", "build", "-q", "--emit-llvm", str(src), "-o",
                    str(tmp_path)], check=True)
    fn = re.search(r"define void @pairs_grad\((.*?)\n}\n", (tmp_path / "ros.adgen.ll").read_text(), re.S).group(1)
    x = re.match(r"ptr [^%]*(%\S+),", fn).group(1)  # the first parameter
    loop = re.search(r"\nvector\.body:.*?\n\n", fn, re.S).group(0)
    base = dict(re.findall(r"(%\S+) = getelementptr [^,]*, ptr (%\S+),", loop))

    def root(p):
        while p in base:
            p = base[p]
        return p

    reads = [p for p in re.findall(r" = load [^,]*, ptr (%\S+),", loop) if root(p) == x]
    assert len(reads) == 1, loop
