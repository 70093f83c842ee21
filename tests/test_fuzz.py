"""The differential fuzzer (tests/fuzzer.py): a fixed-seed quick run, the failing programs it
has found before (kept in tests/fuzz_regressions/), and its minimizer."""

from __future__ import annotations

import random

import pytest

import fuzzer


@pytest.mark.slow
def test_quick_fuzz_run():
    outcome = fuzzer.fuzz(programs=220, seed=20261121, batch_size=55, keep_failures=False, wide=0.5)
    assert outcome.failures == []
    assert outcome.passed >= 180  # most points are smooth enough for a finite-difference reference
    assert outcome.passed + outcome.rejected + outcome.inconclusive == 220


@pytest.mark.skipif(fuzzer.libomp() is None, reason="no OpenMP runtime (libomp) to run parallel code: "
                                                     "install libomp-dev (.ci/run does)")
@pytest.mark.slow
def test_quick_fuzz_run_of_parallel_loops():
    outcome = fuzzer.fuzz(programs=60, seed=20261125, batch_size=30, keep_failures=False, openmp=True, wide=0.5)
    assert outcome.failures == []
    assert outcome.passed >= 52  # checked, not rejected: each with an OpenMP loop on three threads


@pytest.mark.slow
def test_quick_fuzz_run_in_cxx():
    """C++ bodies: classes with operators, templates, lambdas, std::complex, std::vector, new and
    delete, the functions in a namespace with C names."""
    outcome = fuzzer.fuzz(programs=80, seed=20261125, batch_size=40, keep_failures=False, cxx=True, wide=0.5)
    assert outcome.failures == []
    assert outcome.passed >= 70


@pytest.mark.slow
def test_quick_fuzz_run_within_a_budget():
    """Each also differentiated within 512 bytes (its loops checkpointed): that gradient must equal
    reverse mode's; what cannot be checkpointed is a located error. (Width 4: the other runs.)"""
    outcome = fuzzer.fuzz(programs=60, seed=20261126, batch_size=30, keep_failures=False, budget=True, wide=0)
    assert outcome.failures == []
    assert outcome.passed >= 40


@pytest.mark.slow
def test_kept_regressions_pass(tmp_path):
    for path in fuzzer.regression_cases():
        assert fuzzer.check_regression(path, tmp_path) is None, path.name


@pytest.mark.slow
def test_minimizer_keeps_only_what_fails(tmp_path, monkeypatch):
    culprit = "y[2] = sin(x[1]) * a;"
    f = fuzzer.Function("f7", ["t0 = a * b;", culprit, "t1 = cos(t0);", "y[0] += t1;"])
    acts = {**fuzzer.activities(random.Random(3)), "on": (True, True, True, True)}
    monkeypatch.setattr(fuzzer, "REGRESSIONS", tmp_path / "kept")
    monkeypatch.setattr(fuzzer, "_fails", lambda g, a, w, seeds: culprit in g.body and seeds[0] == 99)
    kept = fuzzer.minimize_and_keep(f, acts, tmp_path, 99)
    text = kept.read_text()
    assert culprit in text and "t1 = cos(t0);" not in text and "t0 = a * b;" not in text
    assert "activities (True, True, True, True)" in text and "double f7(double *x" in text
    assert "; seed 99 */" in text.splitlines()[0]  # the inputs it failed at, checked again
    (tmp_path / "work").mkdir()
    assert fuzzer.check_regression(kept, tmp_path / "work") is None  # it parses, builds, and is right


def test_overflow_inside_the_primal_is_inconclusive_not_wrong(tmp_path):
    """An intermediate overflowing to inf under a finite result gives a NaN derivative in any
    AD tool; the fuzzer sees the primal raise FE_OVERFLOW and has no reference there."""
    import ctypes as C
    import subprocess
    import sys

    def primal(name: str):
        lib = tmp_path / f"{name}.so"
        subprocess.run([sys.executable, "-m", "ziglang", "cc", "-shared", "-fPIC", "-O2",
                        str(fuzzer.REGRESSIONS / f"{name}.c"), "-o", str(lib), "-lm"], check=True)
        f = getattr(C.CDLL(str(lib)), name.split("_")[0])
        f.restype, f.argtypes = fuzzer.D, [fuzzer.P, fuzzer.P, fuzzer.D, fuzzer.D]
        return f

    rng = random.Random(0)
    z = [rng.uniform(-1, 1) for _ in range(2 * fuzzer.L + 2)]
    assert fuzzer._overflows(primal("f528_overflow"), z)
    assert not fuzzer._overflows(primal("f43_449371"), z)


@pytest.mark.slow
def test_a_nan_gradient_after_an_overwritten_overflow_is_inconclusive(tmp_path):
    """An intermediate that overflows and is then overwritten (a running product squared, then
    assigned anew in a later loop): forward mode is finite, reverse mode's zero adjoint times
    its infinite partial is NaN, as in any AD tool; the primal raises FE_OVERFLOW there."""
    lib, f, acts, (seed,) = fuzzer.build_regression(fuzzer.REGRESSIONS / "f1220_overflow.cpp", tmp_path)
    assert fuzzer.check(lib, f, acts, random.Random(seed)) == "skip"


@pytest.mark.slow
def test_an_output_the_step_does_not_resolve_is_inconclusive_not_wrong(tmp_path):
    """One output oscillates within the finite-difference step while a much larger one makes
    the steps look settled together: the fuzzer must not call its derivative wrong, and the
    derivative is right (a step of 1e-9 agrees with it)."""
    lib, f, acts, (seed,) = fuzzer.build_regression(fuzzer.REGRESSIONS / "f1185_unresolved.c", tmp_path)
    assert fuzzer.check(lib, f, acts, random.Random(seed)) == "skip"
    rng = random.Random(seed)
    z = [rng.uniform(-1, 1) for _ in range(2 * fuzzer.L + 2)]
    u = [rng.uniform(-1, 1) for _ in z]  # every input is active here
    primal = getattr(lib, f.name)
    primal.restype, primal.argtypes = fuzzer.D, [fuzzer.P, fuzzer.P, fuzzer.D, fuzzer.D]
    tiny = fuzzer._fd(primal, z, u, 1e-9)
    jvp = fuzzer.forward(lib, f, acts["on"], z, u)
    assert abs(jvp[4] - tiny[4]) < 1e-3 * abs(tiny[4]) and abs(jvp[4]) > 1e4


@pytest.mark.slow
def test_a_term_the_primal_rounds_away_is_inconclusive_not_wrong(tmp_path):
    """t0 + b * x[0] - t3 with t0 = t3 near 1e271 returns y[0]-ish values: b * x[0] is absorbed,
    so finite differences miss its derivative, which forward mode (rightly) keeps. Rounding the
    primal up, then down, moves its value by far more than the tolerance: no reference there."""
    lib, f, acts, (seed,) = fuzzer.build_regression(fuzzer.REGRESSIONS / "f1584_absorbed.c", tmp_path)
    assert fuzzer.check(lib, f, acts, random.Random(seed)) == "skip"
    rng = random.Random(seed)
    z = [rng.uniform(-1, 1) for _ in range(2 * fuzzer.L + 2)]
    mask = [True] * (2 * fuzzer.L) + [False, True]  # a is const
    u = [rng.uniform(-1, 1) if m else 0.0 for m in mask]
    primal = getattr(lib, f.name)
    primal.restype, primal.argtypes = fuzzer.D, [fuzzer.P, fuzzer.P, fuzzer.D, fuzzer.D]
    assert fuzzer._rounds_away(primal, z, 1e-6)
    x0, b = z[0], z[-1]
    jvp = fuzzer.forward(lib, f, acts["on"], z, u)
    assert abs(jvp[0] - (u[fuzzer.L] + b * u[0] + x0 * u[-1])) < 1e-12  # d(y[0] + b * x[0])
    (tmp_path / "b").mkdir()
    other, _, _, _ = fuzzer.build_regression(fuzzer.REGRESSIONS / "f43_449371.c", tmp_path / "b")
    g = getattr(other, "f43")
    g.restype, g.argtypes = fuzzer.D, [fuzzer.P, fuzzer.P, fuzzer.D, fuzzer.D]
    assert not fuzzer._rounds_away(g, z, 1e-6)  # a well-conditioned primal


@pytest.mark.slow
def test_a_derivative_returning_through_a_tail_call_keeps_its_tangents(tmp_path):
    """A whole batch (40 functions, many called through pointers): the forward[4] derivative of
    the dispatcher of calls through pointers returned ret (extractvalue (call)); LLVM made that
    a jump to a callee returning five doubles through memory, so f793's tangent was whatever
    the register held (NaN). Derived functions make no tail calls now (ir/edit.py)."""
    text = (fuzzer.HERE / "fuzz_batches" / "f793_dispatch_tail_call.c").read_text()
    lib, errors = fuzzer.build_source(text, tmp_path)
    assert lib is not None, errors
    f = fuzzer.Function("f793", [], uses_float=True)
    acts = {"on": (False, True, True, True)}
    assert fuzzer.checked(lib, [(f, acts, [4472156022857737823, 0, 1, 2])]) == [None]


def test_generator_is_deterministic():
    a = [fuzzer.generate(random.Random(5), k).body for k in range(3)]
    b = [fuzzer.generate(random.Random(5), k).body for k in range(3)]
    assert a == b
