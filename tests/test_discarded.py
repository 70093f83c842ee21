"""`duponly`: the forward sweep skips loops that write only memory the caller discards where nothing
reads it again (ir_ad/reverse/plan/discarded.py). Each function is differentiated twice, with
`duponly` and with `dup` (which never skips): the gradients must be the same, and right against
central differences; `--explain` says which loops are skipped. Then random integrators, the
same way (`python tests/test_discarded.py 1000 [SEED]` runs a thousand)."""

from __future__ import annotations

import random

import pytest

from conftest import build_explained, central_difference, longer_run
from test_forward import D, I, P, arr

SOURCE = r"""
#include <math.h>
#include <stdlib.h>

/* An integrator as GradBench's ode is written: the state y updated at the end of each step,
   which only the next step reads. */
// @diff(rk_grad: (dup, const, const, duponly); rk_dup: (dup, const, const, dup))
void rk(const double *restrict x, int n, int s, double *restrict y)
{
    double h = 1.0 / s, *k = malloc(n * sizeof *k);
    for (int i = 0; i < n; i++)
        y[i] = 0.5;
    for (int step = 0; step < s; step++) {
        k[0] = x[0];
        for (int i = 1; i < n; i++)
            k[i] = x[i] * sin(y[i - 1]);
        for (int i = 0; i < n; i++)
            y[i] += h * k[i];
    }
    free(k);
}

/* The same, the state read after the last step: nothing is skipped. */
// @diff(rk_read_grad: (dup, const, const, duponly) -> active; rk_read_dup: (dup, const, const, dup) -> active)
double rk_read(const double *restrict x, int n, int s, double *restrict y)
{
    rk(x, n, s, y);
    double e = 0;
    for (int i = 0; i < n; i++)
        e += y[i] * y[i];
    return e;
}

/* Written once and never read: skipped at every run. */
// @diff(out_grad: (dup, const, duponly); out_dup: (dup, const, dup))
void out(const double *restrict x, int n, double *restrict y)
{
    for (int i = 0; i < n; i++)
        y[i] = sin(x[i]) * x[i];
}

/* Steps until a value computed after the update says stop: the last iteration is not known
   before it, so nothing is skipped. */
// @diff(until_grad: (dup, const, const, duponly); until_dup: (dup, const, const, dup))
void until(const double *restrict x, int n, int m, double *restrict y)
{
    double k[16];
    for (int i = 0; i < n; i++)
        y[i] = x[i];
    for (int step = 0;; step++) {
        for (int i = 0; i < n; i++)
            k[i] = cos(y[i]) * x[i];
        for (int i = 0; i < n; i++)
            y[i] += 0.1 * k[i];
        if (k[0] > 0.9 || step >= m)
            break;
    }
}

/* Steps within steps: the inner loop's last step is read by the outer loop's next one. */
// @diff(nested_grad: (dup, const, const, const, duponly); nested_dup: (dup, const, const, const, dup))
void nested(const double *restrict x, int n, int outer, int inner, double *restrict y)
{
    double k[16];
    for (int i = 0; i < n; i++)
        y[i] = x[i];
    for (int o = 0; o < outer; o++)
        for (int s = 0; s < inner; s++) {
            for (int i = 0; i < n; i++)
                k[i] = tanh(y[(i + 1) % n]) * x[i];
            for (int i = 0; i < n; i++)
                y[i] += 0.25 * k[i];
        }
}

/* An update whose adjoint needs the values it overwrites: stored, so not skipped. */
// @diff(scale_grad: (dup, const, const, duponly); scale_dup: (dup, const, const, dup))
void scale(const double *restrict x, int n, int s, double *restrict y)
{
    double k[16];
    for (int i = 0; i < n; i++)
        y[i] = x[i];
    for (int step = 0; step < s; step++) {
        for (int i = 0; i < n; i++)
            k[i] = sin(x[i] + step);
        for (int i = 0; i < n; i++)
            y[i] = y[i] * k[i];
    }
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_explained(tmp_path_factory.mktemp("discarded"), SOURCE)


def _derivative(lib, name: str, scalars: int, active_result: bool):
    f = getattr(lib, name)
    f.argtypes = [P, P, *([I] * scalars), P, P] + ([D] if active_result else [])
    f.restype = D if active_result else None
    return f


def _gradient(f, x, n, ints, seed, active_result=False):
    """d x for the seed `seed` on y (and 1 on the result, where it is active)."""
    dx, y, dy = arr([0.0] * len(x)), arr([0.0] * n), arr(list(seed))
    f(arr(x), dx, n, *ints, y, dy, *([1.0] if active_result else []))
    return list(dx)


CASES = [  # (function, its integer arguments, whether its result is active, skipped)
    ("rk", (3,), False, "in the last iteration of"),
    ("rk_read", (3,), True, None),
    ("out", (), False, "at every run"),
    ("until", (4,), False, None),
    ("nested", (2, 3), False, None),
    ("scale", (3,), False, None),
]


@pytest.mark.parametrize("name,ints,active,skipped", CASES)
def test_duponly_gradient_is_dups_and_right(built, name, ints, active, skipped):
    lib, explained = built
    n = 5
    grad = _derivative(lib, f"{name}_grad", len(ints) + 1, active)
    dup = _derivative(lib, f"{name}_dup", len(ints) + 1, active)
    rng = random.Random(name)
    x = [rng.uniform(-1, 1) for _ in range(n)]
    seed = [rng.uniform(-1, 1) for _ in range(n)]
    got = _gradient(grad, x, n, ints, seed, active)
    assert got == pytest.approx(_gradient(dup, x, n, ints, seed, active), rel=1e-13, abs=1e-15)

    primal = getattr(lib, name)
    primal.argtypes, primal.restype = [P, I, *([I] * len(ints)), P], D if active else None

    def objective(v):  # <seed, y(v)> (+ the result)
        y = arr([0.0] * n)
        r = primal(arr(v), n, *ints, y)
        return sum(s * t for s, t in zip(seed, y)) + (r if active else 0.0)

    for k in range(n):
        def along(t, k=k):
            v = list(x)
            v[k] = t
            return objective(v)
        assert got[k] == pytest.approx(central_difference(along, x[k]), rel=1e-6, abs=1e-8)
    skips = _skips(explained)
    assert not skips[f"{name}_dup"], explained  # (dup keeps every store)
    if skipped is None:
        assert not skips[f"{name}_grad"], explained
    else:
        assert any(skipped in line for line in skips[f"{name}_grad"]), explained


def _skips(explained: str) -> dict[str, list[str]]:
    """`--explain`'s `skips` lines under each derivative's title (the names before its colon)."""
    found, title = {}, ""
    for line in explained.splitlines():
        if not line.startswith(" "):
            title = line.split(":")[0]
            found[title] = []
        elif line.startswith("  skips"):
            found[title].append(line)
    return found


def test_the_skip_is_only_on_duponly(built):
    """`dup` derivatives keep every store: the caller reads the primal memory after the call."""
    lib, explained = built
    rk, dup = getattr(lib, "rk"), _derivative(lib, "rk_dup", 2, False)
    rk.argtypes, rk.restype = [P, I, I, P], None
    x, n = [0.3, -0.2, 0.5, 0.9], 4
    for s in (1, 2, 3):
        want, y = arr([0.0] * n), arr([0.0] * n)
        rk(arr(x), n, s, want)
        dup(arr(x), arr([0.0] * n), n, s, y, arr([0.0] * n))
        assert list(y) == pytest.approx(list(want), rel=1e-14)  # (contracted differently, maybe)


def _integrator(rng: random.Random, k: int) -> str:
    """A random integrator of the shape the skip is for, with `dup` and `duponly` derivatives."""
    stage = rng.choice(["x[i] * sin(y[i - 1])", "tanh(y[i - 1] + x[i])", "exp(-y[i - 1] * y[i - 1]) * x[i]",
                        "x[i] * y[i - 1] - 0.5 * y[i]"])
    update = rng.choice(["y[i] += h * k[i];", "y[i] = 0.5 * y[i] + h * k[i];", "y[i] = k[i];",
                         "y[i] = tanh(y[i]) + h * k[i];", "y[i] += h * (k[i] + x[i]);",
                         "if (k[i] > 0) y[i] += h * k[i]; else y[i] -= h * k[i] * k[i];"])
    extra = rng.choice(["", "", "for (int i = 0; i < n / 2; i++) y[i] -= 0.125 * h * k[n - 1 - i];",
                        "k[0] += 0.01 * y[n - 1];"])  # (a read after the update, in the same step)
    after = rng.random() < 0.3
    init = rng.choice(["y[i] = x[i];", "y[i] = 0.25;"])
    ret = "double" if after else "void"
    tail = "double e = 0;\n    for (int i = 0; i < n; i++) e += y[i] * x[i];\n    return e;" if after else ""
    result = " -> active" if after else ""
    return f"""
// @diff(g{k}_grad: (dup, const, const, duponly){result}; g{k}_dup: (dup, const, const, dup){result})
{ret} g{k}(const double *restrict x, int n, int s, double *restrict y)
{{
    double h = 0.5 / s, k[16];
    for (int i = 0; i < n; i++) {init}
    for (int step = 0; step < s; step++) {{
        k[0] = x[0];
        for (int i = 1; i < n; i++) k[i] = {stage};
        for (int i = 0; i < n; i++) {update}
        {extra}
    }}
    {tail}
}}
"""


def test_random_integrators(tmp_path):
    checks, skips = long_run(24, 20261203, tmp_path)
    assert checks == 96 and skips  # (some of them skipped)


def long_run(programs: int, seed: int, work) -> tuple[int, int]:
    """`programs` random integrators, 40 to a build, each at 1 to 4 steps: (checks, skips)."""
    checks = skips = 0
    for start in range(0, programs, 40):
        rng = random.Random(seed + start)
        sources = [_integrator(rng, k) for k in range(min(40, programs - start))]
        (work / str(start)).mkdir(parents=True, exist_ok=True)
        lib, explained = build_explained(work / str(start), "#include <math.h>\n" + "".join(sources))
        skips += explained.count("  skips")
        for k, source in enumerate(sources):
            active = "-> active" in source
            grad, dup = (_derivative(lib, f"g{k}_{kind}", 2, active) for kind in ("grad", "dup"))
            for s in (1, 2, 3, 4):
                n = rng.randint(2, 7)
                x, seed_y = ([rng.uniform(-1, 1) for _ in range(n)] for _ in range(2))
                got, want = (_gradient(f, x, n, (s,), seed_y, active) for f in (grad, dup))
                checks += 1
                if got != pytest.approx(want, rel=1e-13, abs=1e-15):
                    raise AssertionError(f"steps {s}: {got} != {want} (dup)\n{source}")
    return checks, skips


if __name__ == "__main__":  # python tests/test_discarded.py 1000 [SEED]: a longer run of the random integrators
    count, done, skipped = longer_run(long_run)
    print(f"{count} programs: {done} gradients the same as dup's, {skipped} loops skipped")
