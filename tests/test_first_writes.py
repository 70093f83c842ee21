"""Writes that need no clearing of shadow memory in the reverse sweep (analysis/flow.py,
Memory.first_accesses): stores of values without derivatives (and memsets) into memory the
function allocated, which nothing outside it can reach, before anything else may have read or
written it: a buffer zeroed by a loop walking it by pointer, or by memset, as the C++ library
makes a `std::vector<double>(n)`. A store after a read of the buffer, a store of a value with a
derivative, and a buffer the caller receives are not such writes. Gradients against central
differences."""

from __future__ import annotations

from conftest import quick_first
from test_forward import D, I, P, _grad_fd, arr, close, fn
from test_loops import optimized

SOURCE = r"""
#include <math.h>
#include <stdlib.h>
#include <string.h>
// @diff(smooth_grad: (dup, const) -> activeonly)
double smooth(const double *x, int n)
{
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
    for (double *p = a; p != a + n; p++)
        *p = 0;                                   /* first writes: zeros by pointer */
    memset(b, 0, n * sizeof(double));             /* a first write: memset */
    for (int i = 0; i < n; i++)
        a[i] += sin(x[i]) * x[i];
    double s = 0;
    for (int i = 1; i < n; i++) {
        b[i] = a[i] * a[i - 1];
        s += b[i] * x[i];
    }
    double t = b[n / 2];
    b[n / 2] = 0.5;                               /* after b was read: its adjoint clears */
    s += t * x[0];
    for (int i = 0; i < n; i++)
        s += b[i] * b[i];
    free(a);
    free(b);
    return s;
}

struct holder { double *a; double w; };
// @diff(kept_grad: (dup, dup, const) -> activeonly)
double kept(const double *x, struct holder *out, int n)
{
    double *a = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++)
        a[i] = 0;                                 /* the caller receives a: not a first write */
    for (int i = 0; i < n; i++)
        a[i] += x[i] * x[i];
    out->a = a;
    return a[n - 1] * x[0];
}
"""


def test_first_writes_found(tmp_path):
    from adgen.ir_ad.analysis.flow import CFG, Memory

    module = optimized(SOURCE, tmp_path)
    for name, expected in (("@smooth", True), ("@kept", False)):
        f = module.functions[name]
        memory = Memory(f, CFG(f), module)
        found = memory.first_accesses(lambda value: False)
        constant_stores = [i for i in f.instructions() if i.opcode == "store" and i.operands[0].is_constant
                           or i.opcode == "call" and "memset" in i.callee]
        zeros = [i for i in constant_stores if i.operands[0].value in ("0.000000e+00", "0") or "memset" in i.callee]
        assert zeros and all((id(i) in found) is expected for i in zeros), name
        later = [i for i in constant_stores if i.operands[0].value == "5.000000e-01"]
        assert all(id(i) not in found for i in later), name


@quick_first("n", [1, 2, 5, 9])
def test_gradients_against_central_differences(build_lib, n):
    lib = build_lib(SOURCE)
    smooth, smooth_grad = fn(lib, "smooth", D, P, I), fn(lib, "smooth_grad", None, P, P, I, D)
    x = [0.3 + 0.17 * k * (-1) ** k for k in range(n)]
    g = arr([0.0] * n)
    smooth_grad(arr(x), g, n, 1.0)
    for k in range(n):
        assert close(g[k], _grad_fd(lambda v: smooth(arr(v), n), x, k)), (n, k)
