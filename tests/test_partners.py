"""Primitives whose partial is their partner of the same argument (rules.Rule.partner: sin's is cos,
cos's is -sin). Where the primal computes both (a rotation's sin and cos of one angle), the reverse
sweep takes each partial from the primal's value of the other and the plan stores the two, so the
derivative calls neither again (plan/costs.py); where the partner is computed on a branch that
need not run, or not at all, the reverse sweep computes it itself. Each function is checked
against central finite differences and forward mode, at width 2, in split mode and forward over
reverse; the plans and the code are checked for what they store and call. sqrt's partial,
0.5 / r, shares the reciprocal 1 / r with code that divides 1 by r too (particle's charges,
whose gradient then divides once per iteration) and is 0.5 / r where nothing else does (rules.py).
A quotient the reverse sweep has at hand (bundle adjustment's u = X / Z, for u * u) divides the
adjoint by Z where it arrives, with no reciprocal 1 / Z (rules.Rule.over)."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import adgen
from every_mode import annotations, check_hessian_vector_product, check_lanes_and_split, check_reverse

NAMES = ("rotation", "rotations", "dominated", "branch", "sines", "charges", "lengths", "projected")


SOURCE = r"""
#include <math.h>

""" + annotations("rotation") + r"""double rotation(const double *x, int n)
{
    double theta = x[0] * x[1], c = cos(theta), s = sin(theta);
    double u = c * x[2] - s * x[3], v = s * x[2] + c * x[3];
    return u * u * x[4] + v * x[5] + s * c;
}

""" + annotations("rotations") + r"""double rotations(const double *x, int n)
{
    double total = 0;
    for (int i = 0; i < n - 1; i++) {
        double c = cos(x[i]), s = sin(x[i]);
        total += c * x[i + 1] - s * x[i + 1] * x[i + 1];
    }
    return total;
}

""" + annotations("dominated") + r"""double dominated(const double *x, int n)
{
    double c = cos(x[0]), total = c * x[1];
    if (x[2] > 0)
        total += sin(x[0]) * x[3];
    return total * x[4];
}

""" + annotations("branch") + r"""double branch(const double *x, int n)
{
    double total = sin(x[0]) * x[1];
    if (x[2] > 0)
        total += cos(x[0]) * x[3];
    return total;
}

""" + annotations("sines") + r"""double sines(const double *x, int n)
{
    double total = 0;
    for (int i = 0; i < n; i++)
        total += sin(x[i]) * exp(0.5 * x[i]) * x[i];
    return total;
}

""" + annotations("charges") + r"""double charges(const double *x, int n)
{
    double total = 0;
    for (int i = 0; i < n - 1; i++)
        total += 1 / sqrt(x[i] * x[i] + x[i + 1] * x[i + 1] + 0.5);
    return total;
}

""" + annotations("lengths") + r"""double lengths(const double *x, int n)
{
    double total = 0;
    for (int i = 0; i < n - 1; i++)
        total += sqrt(x[i] * x[i] + 1.0) * x[i + 1];
    return total;
}

""" + annotations("projected") + r"""double projected(const double *x, int n)
{
    double total = 0;
    for (int i = 0; i + 2 < n; i++) {
        double u = x[i] / (x[i + 2] + 3.0), v = x[i + 1] / (x[i + 2] + 3.0);
        total += u * u + 2.0 * v * v * v;
    }
    return total;
}
"""

X = np.array([0.7, -0.4, 1.3, 2.1, -0.9, 0.5, 1.7])


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    work = tmp_path_factory.mktemp("partners")
    src = work / "partners.c"
    src.write_text(SOURCE)
    return adgen.load(src, build_dir=work / "build")


@pytest.mark.parametrize("x", [X, -X], ids=["taken", "not-taken"])
@pytest.mark.parametrize("name", NAMES)
def test_reverse_against_differences_and_forward(lib, name, x):
    check_reverse(lib, name, x)


@pytest.mark.parametrize("name", NAMES)
def test_two_lanes_and_split_mode(lib, name):
    check_lanes_and_split(lib, name, X)


@pytest.mark.parametrize("name", NAMES)
def test_hessian_vector_products(lib, name):
    check_hessian_vector_product(lib, name, X, np.array([1.0, -0.5, 0.25, 2.0, 0.3, -1.1, 0.6]))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The plans (--explain) and the derivatives' optimized code (--emit-llvm), of gradients that
    return the primal's result too (so the forward sweep computes the sines and cosines anyway)."""
    work = tmp_path_factory.mktemp("partners-built")
    src = work / "partners.c"
    source = SOURCE
    for name in NAMES:
        source = source.replace(annotations(name), f"// @diff({name}_grad: (dup, const) -> active)\n")
    src.write_text(source)
    done = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "build", "--explain", "--emit-llvm", str(src),
                           "-o", str(work)], capture_output=True, text=True, check=True)
    return done.stdout + done.stderr, (work / "partners.adgen.ll").read_text()


def _plan(explained: str, name: str) -> str:
    return re.search(rf"^{name}_grad: .*?(?=^\S)", explained + "\nend", re.S | re.M).group(0)


def _trig_calls(code: str, name: str) -> int:
    body = re.search(rf"define [^@]*@{name}_grad\(.*?\n}}\n", code, re.S).group(0)
    return len(re.findall(r"call [^@]*@(?:llvm\.)?(?:sin|cos|sincos)\b", body))


@pytest.mark.parametrize("name", ["rotation", "rotations"])
def test_both_computed_by_the_primal_are_stored(built, name):
    """The gradient calls sin and cos once each, where the primal does; the plan stores both."""
    explained, code = built
    plan = _plan(explained, name)
    assert "a call to cos" in plan and "a call to sin" in plan, plan
    assert _trig_calls(code, name) == 2, code


def test_one_without_its_partner_is_computed_again(built):
    """sin(x[i]) alone: the reverse sweep computes cos(x[i]) for its partial, and sin with it in
    one call, so the plan stores only exp's result, not sin's."""
    explained, _ = built
    plan = _plan(explained, "sines")
    assert "a call to exp" in plan and "a call to sin" not in plan, plan


def _body(code: str, name: str) -> str:
    return re.search(rf"define [^@]*@{name}_grad\(.*?\n}}\n", code, re.S).group(0)


def test_square_roots_divided_by_share_the_reciprocal(built):
    """1 / sqrt(...) in a loop: each square root of the gradient (the forward sweep's, the reverse
    sweep's loops') is divided by once, its reciprocal the partial's and the quotient's adjoint's."""
    _, code = built
    body = _body(code, "charges")
    roots, divisions = len(re.findall(r"call [^@]*@llvm\.sqrt", body)), len(re.findall(r"= fdiv ", body))
    assert roots >= 2 and divisions == roots, body


def test_square_roots_alone_are_divided_into_once(built):
    """sqrt(...) * x: one division per square root, 0.5 / r, no reciprocal 1 / r."""
    _, code = built
    body = _body(code, "lengths")
    roots, divisions = len(re.findall(r"call [^@]*@llvm\.sqrt", body)), len(re.findall(r"= fdiv ", body))
    assert divisions == roots - 1 and not re.search(r"= fdiv [^,]*1\.0+e\+00, ", body), body


def test_quotients_at_hand_divide_the_adjoint(built):
    """u = a / z and v = b / z, both needed again for u * u and v * v: the reverse sweep divides
    their adjoints by z (-(d / z) * u for z's), and computes no reciprocal 1 / z."""
    _, code = built
    body = _body(code, "projected")
    assert re.search(r"= fdiv [^,]*%", body) and not re.search(r"= fdiv [^,]*1\.0+e\+00\)?, ", body), body
