"""Loads the forward sweep stores a loop's worth of at once, with one copy before the loop
(ir_ad/reverse/plan/block_copies.py). Each function's gradient must match central differences;
`--explain` must say which loads are copied, and only those that qualify are: the loop writes
nothing of their memory, they run in every iteration and step by their own size (a struct's
field steps by the struct's size). Then random
programs of that shape, some qualifying and some not (`python tests/test_block_copies.py 1000
[SEED]` runs a thousand)."""

from __future__ import annotations

import ctypes as C
import random

import pytest

from conftest import build_explained, central_difference, longer_run
from test_forward import D, F, I, P, arr

SOURCE = r"""
#include <math.h>
#include <stdlib.h>

/* GradBench's ode: a buffer each stage reads one behind, then overwrites. */
// @diff(stages_grad: (dup, const) -> active)
double stages(const double *restrict x, int n)
{
    double *t = malloc(n * sizeof *t), *z = malloc(n * sizeof *z), s = 0;
    for (int i = 0; i < n; i++)
        t[i] = x[i];
    for (int stage = 0; stage < 3; stage++) {
        z[0] = x[0];
        for (int i = 1; i < n; i++)
            z[i] = x[i] * t[i - 1];
        for (int i = 0; i < n; i++)
            t[i] = 0.5 * t[i] + z[i];
    }
    for (int i = 0; i < n; i++)
        s += t[i] * t[i];
    free(t);
    free(z);
    return s;
}

/* A pointer walking the buffer, which is overwritten after. */
// @diff(walk_grad: (dup, const, dup) -> active)
double walk(const double *restrict x, int n, double *restrict buf)
{
    double s = 0, *end = buf + n;
    for (int i = 0; i < n; i++)
        buf[i] = x[i] * x[i];
    for (const double *p = buf; p != end; ++p)
        s += sin(*p);
    for (int i = 0; i < n; i++)
        buf[i] = cos(buf[i]) + s;
    for (int i = 0; i < n; i++)
        s += buf[i] * x[i];
    return s;
}

/* A nest: each row reads the whole state, which the step then replaces. */
// @diff(rnn_grad: (dup, const, const) -> active)
double rnn(const double *restrict w, int n, int steps)
{
    double h[16], next[16], s = 0;
    for (int r = 0; r < n; r++)
        h[r] = w[r];
    for (int step = 0; step < steps; step++) {
        for (int r = 0; r < n; r++) {
            double a = 0;
            for (int c = 0; c < n; c++)
                a += w[r * n + c] * h[c] * h[c];
            next[r] = a;
        }
        for (int r = 0; r < n; r++)
            h[r] = tanh(next[r]);
    }
    for (int r = 0; r < n; r++)
        s += h[r];
    return s;
}

/* Floats: four bytes a step. */
// @diff(floats_grad: (dup, const) -> active)
float floats(const float *restrict x, int n)
{
    float t[32], s = 0;
    for (int i = 0; i < n; i++)
        t[i] = x[i] + 1.0f;
    for (int i = 0; i < n; i++)
        s += t[i] * t[i] * x[i];
    return s;
}

/* A struct's field, one struct a step (the array's stride: the struct's size in memory). */
typedef struct { double v; } cell;

// @diff(cells_grad: (dup, const) -> active)
double cells(const double *restrict x, int n)
{
    cell t[32];
    double s = 0;
    for (int i = 0; i < n; i++)
        t[i].v = x[i] * x[i];
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < n; i++)
            s += sin(t[i].v) * x[i];
        for (int i = 0; i < n; i++)
            t[i].v = cos(t[i].v);
    }
    return s;
}

/* Not copied: a field of a struct twice its size, so every other double. */
typedef struct { double a, b; } pair;

// @diff(pairs_grad: (dup, const) -> active)
double pairs(const double *restrict x, int n)
{
    pair t[32];
    double s = 0;
    for (int i = 0; i < n; i++)
        t[i].a = x[i] * x[i], t[i].b = x[i];
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < n; i++)
            s += sin(t[i].a) * t[i].b;
        for (int i = 0; i < n; i++)
            t[i].a = cos(t[i].a);
    }
    return s;
}

/* Not copied: the loop writes what it reads. */
// @diff(inplace_grad: (dup, const) -> active)
double inplace(const double *restrict x, int n)
{
    double t[32], s = 0;
    for (int i = 0; i < n; i++)
        t[i] = x[i];
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++) {
            s += t[i] * t[i] * x[i];
            t[i] = sin(t[i]);
        }
    return s;
}

/* Not copied: read only in some iterations. */
// @diff(some_grad: (dup, const) -> active)
double some(const double *restrict x, int n)
{
    double t[32], s = 0;
    for (int i = 0; i < n; i++)
        t[i] = x[i] * 2;
    for (int i = 0; i < n; i++)
        if (x[i] > 0)
            s += t[i] * t[i];
    return s;
}

/* Not copied: every other element. */
// @diff(strided_grad: (dup, const) -> active)
double strided(const double *restrict x, int n)
{
    double t[64], s = 0;
    for (int i = 0; i < 2 * n; i++)
        t[i] = x[i / 2] + i;
    for (int i = 0; i < n; i++)
        s += t[2 * i] * t[2 * i] * x[i];
    return s;
}
"""

# (function, integer arguments after n, whether a buffer (dup) follows, whether a load is copied)
CASES = [("stages", (), False, True), ("walk", (), True, True), ("rnn", (3,), False, True),
         ("floats", (), False, True), ("cells", (), False, True), ("pairs", (), False, False),
         ("inplace", (), False, False), ("some", (), False, False),
         ("strided", (), False, False)]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_explained(tmp_path_factory.mktemp("block_copies"), SOURCE)


def _copied(explained: str) -> dict[str, int]:
    """How many stored values `--explain` says are copied before their loop, per derivative."""
    found, title = {}, ""
    for line in explained.splitlines():
        if not line.startswith(" "):
            title = line.split(":")[0]
            found[title] = 0
        elif "stored by one copy before the loop" in line:
            found[title] += 1
    return found


@pytest.mark.parametrize("name,ints,buffer,copied", CASES)
def test_gradient_is_right_and_copies_only_what_qualifies(built, name, ints, buffer, copied):
    lib, explained = built
    n = 6
    single = name == "floats"
    T, PT = (F, C.POINTER(C.c_float)) if single else (D, P)
    rng = random.Random(name)
    x = [rng.uniform(-0.8, 0.8) for _ in range(n * n if name == "rnn" else n)]
    primal, grad = getattr(lib, name), getattr(lib, f"{name}_grad")
    extra = [PT] if buffer else []
    primal.argtypes, primal.restype = [PT, I, *([I] * len(ints)), *extra], T
    grad.argtypes, grad.restype = [PT, PT, I, *([I] * len(ints)), *(extra * 2), T], T
    dx = arr([0.0] * len(x), T)
    buffers = [arr([0.0] * n, T), arr([0.0] * n, T)] if buffer else []
    grad(arr(x, T), dx, n, *ints, *buffers, 1.0)

    def objective(v):
        return primal(arr(v, T), n, *ints, *([arr([0.0] * n, T)] if buffer else []))

    for k, value in enumerate(x):
        def along(t, k=k):
            v = list(x)
            v[k] = t
            return objective(v)
        want = central_difference(along, value, 1e-3 if single else None)
        assert dx[k] == pytest.approx(want, rel=2e-3 if single else 1e-6, abs=2e-3 if single else 1e-8), (name, k)
    assert (_copied(explained)[f"{name}_grad"] > 0) == copied, explained


def _program(rng: random.Random, k: int) -> str:
    """A random function of the shape block copies are for: a buffer read one element per
    iteration by a loop (at an offset, through an index of some type, a pointer, or in a nest),
    then overwritten, over a few steps. Some read loops also write the buffer, read it only in
    some iterations, or step by two: those are not copied, and must be right all the same."""
    T = rng.choice(["double", "double", "float"])
    index = rng.choice(["int", "long", "unsigned", "size_t"])
    storage = rng.choice(["stack", "heap", "argument"])
    off = rng.choice([0, 1, -1, 2])
    lo, hi = max(0, -off), max(0, off)
    f = rng.choice(["sin(%s)", "%s * %s", "exp(-%s * %s)", "tanh(%s) * x[i]", "%s / (1 + %s * %s)"])
    read = f.replace("%s", f"t[i + {off}]" if off else "t[i]")
    body = rng.choice([  # (T: the buffer's type)
        f"for ({index} i = {lo}; i < n - {hi}; i++) z[i] = x[i] * {read};",
        f"for ({index} i = {lo}; i < n - {hi}; i++) acc += {read} * x[i];",
        f"for ({index} i = {lo}; i < n - {hi}; i++) if (x[i] > 0) acc += {read};",  # (not every iteration)
        f"for ({index} i = {lo}; i < n - {hi}; i++) {{ acc += {read}; t[i] = 0.5 * t[i]; }}",  # (writes t)
        "for (int i = 0; 2 * i < n; i++) acc += sin(t[2 * i]) * x[i];",  # (steps by two)
        "for (T *p = t; p != t + n; ++p) acc += sin(*p) * *p;",  # (a pointer)
        "for (int r = 0; r < n; r++) { double a = 0; for (int c = 0; c < n; c++) a += x[(r + c) % n] * t[c] * t[c]; z[r] = a; }",
    ])
    update = rng.choice(["t[i] = 0.5 * t[i] + 0.25 * z[i] + acc * 0.01;", "t[i] = cos(t[i]) * x[i] + z[i];",
                         "t[i] = z[i] - 0.1 * t[i];"])
    make = {"stack": "T t[16];", "heap": "T *t = malloc(n * sizeof *t);", "argument": "T *t = y;"}[storage]
    free = "free(t);" if storage == "heap" else ""
    text = f"""
// @diff(NAME_grad: (dup, const, const, dup) -> active)
double NAME(const double *restrict x, int n, int s, T *restrict y)
{{
    {make}
    double z[16] = {{0}}, acc = 0;
    for (int i = 0; i < n; i++) t[i] = 0.5 + 0.3 * x[i];
    for (int step = 0; step < s; step++) {{
        {body}
        for (int i = 0; i < n; i++) {update}
    }}
    for (int i = 0; i < n; i++) acc += t[i] * t[i];
    {free}
    return acc;
}}
"""
    # (a float program has a double twin, g{k}_d: its gradient is checked against the twin's,
    # whose is checked against central differences; those of floats are too coarse a check)
    twin = text.replace("T", "double").replace("NAME", f"g{k}_d") if T == "float" else ""
    return text.replace("T", T).replace("NAME", f"g{k}") + twin


def test_random_programs(tmp_path):
    checks, copied = long_run(16, 20261204, tmp_path)
    assert checks == 48 and copied  # (some of them copy)


def long_run(programs: int, seed: int, work) -> tuple[int, int]:
    """`programs` random functions, 40 to a build, each at 1 to 3 steps against central
    differences: (checks, loads copied)."""
    checks = copied = 0
    for start in range(0, programs, 40):
        rng = random.Random(seed + start)
        sources = [_program(rng, k) for k in range(min(40, programs - start))]
        (work / str(start)).mkdir(parents=True, exist_ok=True)
        lib, explained = build_explained(work / str(start), "#include <math.h>\n#include <stdlib.h>\n"
                                         "#include <stddef.h>\n" + "".join(sources))
        copied += explained.count("stored by one copy before the loop")
        for k, source in enumerate(sources):
            single = "_d_grad" in source
            name = f"g{k}_d" if single else f"g{k}"
            primal, grad = getattr(lib, name), getattr(lib, f"{name}_grad")
            primal.argtypes, primal.restype = [P, I, I, P], D
            grad.argtypes, grad.restype = [P, P, I, I, P, P, D], D
            if single:
                floats = getattr(lib, f"g{k}_grad")
                floats.argtypes, floats.restype = [P, P, I, I, C.POINTER(F), C.POINTER(F), D], D
            for s in (1, 2, 3):
                n = rng.randint(3, 9)
                x = [rng.uniform(-0.9, 0.9) for _ in range(n)]
                dx = arr([0.0] * n)
                grad(arr(x), dx, n, s, arr([0.0] * 16), arr([0.0] * 16), 1.0)
                for j in range(n):
                    def along(v, j=j):
                        w = list(x)
                        w[j] = v
                        return primal(arr(w), n, s, arr([0.0] * 16))
                    want = central_difference(along, x[j])
                    if dx[j] != pytest.approx(want, rel=1e-6, abs=1e-8):
                        raise AssertionError(f"steps {s}, n {n}, x[{j}]: {dx[j]} != {want}\n{source}")
                if single:
                    dxf = arr([0.0] * n)
                    floats(arr(x), dxf, n, s, arr([0.0] * 16, F), arr([0.0] * 16, F), 1.0)
                    scale = max(abs(v) for v in dx) or 1.0
                    if any(abs(a - b) > 1e-4 * scale for a, b in zip(dxf, dx)):
                        raise AssertionError(f"steps {s}, n {n}: floats {list(dxf)} != {list(dx)}\n{source}")
                checks += 1
    return checks, copied


if __name__ == "__main__":  # python tests/test_block_copies.py 1000 [SEED]: a longer run of the random programs
    count, done, copies = longer_run(long_run)
    print(f"{count} programs: {done} gradients right against central differences, {copies} loads copied")
