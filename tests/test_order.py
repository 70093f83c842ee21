"""Loops whose reverse sweep runs forward (ir_ad/reverse/plan/order.py): sums over arrays, with
adds, subtractions and fused multiply-adds, two sums at once, a sum inside a sum; and loops that
run backwards (a running sum read inside the loop, a sum used after the loop through a value
other than its last, a product, and a sum over x[i] and x[i + 1], whose load the optimizer
carries over to the next iteration: tests/test_carried.py). Each checked in every mode against central differences
(tests/every_mode.py), and `--explain` saying which loops run forward."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import adgen
from every_mode import annotations, check_hessian_vector_product, check_lanes_and_split, check_reverse

FORWARD = {"fused": 1, "minus": 1, "two": 1, "nested": 2}  # name: its loops that run forward
BACKWARD = ("running", "last", "product", "carried")

BODIES = {
    "carried": """    double s = 0;
    for (int i = 0; i < n - 1; i++)
        s += sin(x[i]) * x[i + 1] + x[i] * x[i];
    return s;""",
    "fused": """    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[n - 1 - i];
    return s;""",
    "minus": """    double s = 1;
    for (int i = 0; i < n; i++)
        s -= exp(0.3 * x[i]) - 0.5 * x[i];
    return s * s;""",
    "two": """    double s = 0, t = 0;
    for (int i = 0; i < n; i++) {
        s += x[i]; t += x[i] * x[i];
    }
    return s * t;""",
    "nested": """    double s = 0;
    for (int i = 0; i < n; i++) {
        double t = 0;
        for (int j = 0; j <= i; j++)
            t += cos(x[j]) * x[i];
        s += t * t;
    }
    return s;""",
    "running": """    double s = 0, t = 0;
    for (int i = 0; i < n; i++) {
        s += x[i]; t += s * x[i];
    }
    return t;""",
    "last": """    double s = 0, last = 0;
    for (int i = 0; i < n; i++) {
        s += x[i] * x[i]; last = sin(x[i]) * s;
    }
    return s + last;""",
    "product": """    double p = 1;
    for (int i = 0; i < n; i++)
        p = p * (1.0 + 0.1 * x[i]) + x[i];
    return p;""",
}

# each function's first line is line 1 of its own: the annotations (two lines) are above it
SOURCE = "#include <math.h>\n" + "".join(
    annotations(name) + f"double {name}(const double *x, int n)\n{{\n{body}\n}}\n" for name, body in BODIES.items())
X = np.array([0.7, -0.4, 1.3, 2.1, -0.9, 0.5, 1.7])


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    work = tmp_path_factory.mktemp("order")
    src = work / "order.c"
    src.write_text(SOURCE)
    return adgen.load(src, build_dir=work / "build")


@pytest.mark.parametrize("name", [*FORWARD, *BACKWARD])
def test_reverse_against_differences_and_forward(lib, name):
    check_reverse(lib, name, X)


@pytest.mark.parametrize("name", [*FORWARD, *BACKWARD])
def test_two_lanes_and_split_mode(lib, name):
    check_lanes_and_split(lib, name, X)


@pytest.mark.parametrize("name", [*FORWARD, *BACKWARD])
def test_hessian_vector_products(lib, name):
    check_hessian_vector_product(lib, name, X, np.array([1.0, -0.5, 0.25, 2.0, 0.3, -1.1, 0.6]))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 17])
def test_every_trip_count(lib, n):
    """Forward loops at trip counts the vectorized loop leaves over, against differences."""
    x = np.sin(np.arange(n) * 0.9) + 0.2
    for name in FORWARD:
        dx = np.zeros(n)
        getattr(lib, f"{name}_grad")(x.copy(), dx, n, 1.0)
        want = np.zeros(n)
        for k in range(n):
            e = np.eye(n)[k] * 1e-6
            want[k] = (getattr(lib, name)(x + e, n) - getattr(lib, name)(x - e, n)) / 2e-6
        assert dx == pytest.approx(want, rel=1e-6, abs=1e-6), name


def test_explain_says_which_loops_run_forward(tmp_path):
    src = tmp_path / "order.c"
    src.write_text(SOURCE)
    done = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "build", "--explain", str(src), "-o",
                           str(tmp_path)], capture_output=True, text=True, check=True)
    found = {title: len(set(re.findall(r"runs the loop at \S*order\.c:(\d+) forward", body)))
             for title, body in re.findall(r"^(\w+)_grad: reverse mode.*?\n((?:  .*\n)*)", done.stdout, re.M)}
    assert {name: found[name] for name in FORWARD} == FORWARD, done.stdout
    assert all(found[name] == 0 for name in BACKWARD), done.stdout
