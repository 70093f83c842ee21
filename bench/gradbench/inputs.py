"""The inputs of GradBench's evals, made as its eval generators make them.

GradBench's generators (python/gradbench/gradbench/evals/*/run.py) import its protocol's
modules, which need pydantic, scipy and dataclasses_json; so each is written out here again from
its run.py, numpy only: the same seeds, the same draws in the same order (a size's input is drawn
after those of the sizes the eval runs before it), the same data files of the checkout (ba, ht).
Two departures, said in the results' header: lstm's generator draws from numpy's global state
unseeded (here: seeded with 31337, as the other evals are), and its text,
evals/lstm/data/lstm_full.txt, is used when the checkout has it, else a stand-in of the same
alphabet size drawn with seed 31337 (LSTM_TEXT_NOTE). particle and saddle have no `manual`
tool: their reference is the constant GradBench's eval expects (REFERENCE).

The "check" inputs are not GradBench's: small inputs of the gradient evals whose gradients are
far from zero (ode's standard inputs give a gradient of zeros, n being far above the steps' reach),
each with a `Probe`, so that every tool's gradient is compared with central differences of the
program's own primal function."""

from __future__ import annotations

import math
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

SEED = 31337
PROGRAMS = ("hello", "ba", "det", "gmm", "ht", "kmeans", "llsq", "lse", "lstm", "ode", "particle", "saddle")
SIZES = ("smallest", "larger", "check")

# GradBench's evals/particle/run.py and evals/saddle/run.py: the output each function must give.
REFERENCE = {"particle": 0.2071918746486116, "saddle": [8.246324826140356e-06] * 4}
LSTM_TEXT_NOTE = "a stand-in text (ASCII letters, digits, punctuation, drawn with seed 31337)"


@dataclass(frozen=True)
class Probe:
    """What a gradient is of: the input's field differentiated, and the primal output's element the
    gradient is of (None: the output is the scalar)."""
    field: str
    element: int | None = None

    def scalar(self, output: Any) -> float:
        return float(output if self.element is None else output[self.element])


@dataclass
class Case:
    """One evaluation: a program's derivative function on one input."""
    program: str
    function: str
    size: str  # one of SIZES
    label: str  # the input, as GradBench's eval describes it
    make: Callable[[Path], Any] = field(repr=False)  # the GradBench checkout -> the input
    reference: Any = None  # the expected output where there is no manual tool
    probe: Probe | None = None  # a check case's: compared with central differences of the primal

    @property
    def name(self) -> str:
        return f"{self.program}-{self.size}-{self.function}"


def _sequence(draws: Callable[[Any], Any], order: list, wanted) -> Any:
    """The input for `wanted`, drawn after those of the sizes before it in the eval's `order`."""
    for size in order:
        made = draws(size)
        if size == wanted:
            return made
    raise ValueError(f"{wanted} is not among the eval's sizes")


def _by_product(*axes: list[int]) -> list[tuple[int, ...]]:
    """The eval's combinations of sizes, in the order it runs them (sorted by their product, stably)."""
    combos = [()]
    for axis in axes:
        combos = [c + (v,) for c in combos for v in axis]
    return sorted(combos, key=math.prod)


def det(ell: int) -> Callable[[Path], Any]:
    def make(_: Path) -> Any:
        np.random.seed(SEED)
        return _sequence(lambda e: {"A": np.random.rand(e * e).tolist(), "ell": e}, [5, 6, 7, 8, 9, 10, 11], ell)
    return make


def kmeans(k: int, n: int, d: int) -> Callable[[Path], Any]:
    def draw(combo: tuple[int, int, int]) -> Any:
        k_, n_, d_ = combo
        points = np.random.rand(n_, d_).tolist()
        return {"points": points, "centroids": points[-k_:]}

    def make(_: Path) -> Any:
        np.random.seed(SEED)
        return _sequence(draw, _by_product([10, 100, 1000], [1000, 10000], [8, 16]), (k, n, d))
    return make


def llsq(n: int, m: int = 128) -> Callable[[Path], Any]:
    ns = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8196, 16392]

    def make(_: Path) -> Any:
        np.random.seed(SEED)
        return _sequence(lambda c: {"x": np.random.rand(c[1]).tolist(), "n": c[0]}, _by_product(ns, [128]), (n, m))
    return make


def lse(n: int) -> Callable[[Path], Any]:
    ns = [2500 * 2 ** i for i in range(10)]

    def make(_: Path) -> Any:
        np.random.seed(SEED)
        return _sequence(lambda size: {"x": np.random.rand(size).tolist()}, ns, n)
    return make


def ode(n: int, s: int) -> Callable[[Path], Any]:
    def make(_: Path) -> Any:
        np.random.seed(SEED)
        return _sequence(lambda c: {"x": np.random.rand(c[0]).tolist(), "s": c[1]},
                         _by_product([1000, 10000, 100000], [1, 10, 100]), (n, s))
    return make


def gmm(d: int, k: int, n: int = 1000) -> Callable[[Path], Any]:
    """evals/gmm/run.py's generate(): a generator of its own per input, seeded with the seed."""
    def make(_: Path) -> Any:
        rng = np.random.default_rng(seed=SEED)
        return {"d": d, "k": k, "n": n,
                "x": [list(rng.normal(size=d)) for _ in range(n)],
                "m": 0, "gamma": 1.0,
                "alpha": list(rng.normal(size=k)),
                "mu": [list(rng.uniform(size=d)) for _ in range(k)],
                "q": [list(rng.normal(size=d)) for _ in range(k)],
                "l": [list(rng.normal(size=d * (d - 1) // 2)) for _ in range(k)]}
    return make


def ba(index: int) -> Callable[[Path], Any]:
    """evals/ba/run.py's parse() of ADBench's file baINDEX_*.txt."""
    def make(src: Path) -> Any:
        path = next((src / "evals" / "ba" / "data").glob(f"ba{index}_*.txt"), None)
        if path is None:
            raise FileNotFoundError(f"evals/ba/data/ba{index}_*.txt is not in the GradBench checkout")
        lines = iter(path.read_text().splitlines())
        n, m, p = (int(v) for v in next(lines).split())
        cam = [float(x) for x in next(lines).split()]
        x = [float(v) for v in next(lines).split()]
        w = float(next(lines))
        feat = [float(v) for v in next(lines).split()]
        return {"n": n, "m": m, "p": p, "cam": cam, "x": x, "w": w, "feat": feat}
    return make


def ht(index: int, variant: str = "complicated", model: str = "big") -> Callable[[Path], Any]:
    """evals/ht/io.py's read_hand_instance(...).to_dict(), of ADBench's handINDEX_*.txt."""
    def make(src: Path) -> Any:
        data_dir = src / "evals" / "ht" / "data" / f"{variant}_{model}"
        path = next(data_dir.glob(f"hand{index}_*.txt"), None)
        if path is None:
            raise FileNotFoundError(f"{data_dir.relative_to(src)}/hand{index}_*.txt is not in the GradBench checkout")
        model_dir = data_dir / "model"
        bones = model_dir / "bones.txt"
        triangles = np.loadtxt(model_dir / "triangles.txt", int, delimiter=":")
        bone_names = [line.split(":")[0] for line in bones.read_text().splitlines()]
        parents = np.loadtxt(bones, int, usecols=[1], delimiter=":").flatten()
        relative = np.loadtxt(bones, usecols=range(2, 18), delimiter=":").reshape(len(parents), 4, 4)
        inverse_absolute = np.loadtxt(bones, usecols=range(18, 34), delimiter=":").reshape(len(parents), 4, 4)
        vertices = (model_dir / "vertices.txt").read_text().splitlines()
        positions = np.zeros((len(vertices), 3))
        weights = np.zeros((len(vertices), len(bone_names)))
        for i, line in enumerate(vertices):
            atoms = line.split(":")
            positions[i] = [float(a) for a in atoms[:3]]
            for j in range(int(atoms[8])):
                weights[i, int(atoms[9 + 2 * j])] = float(atoms[10 + 2 * j])
        base_positions = np.ones((len(vertices), 4))
        base_positions[:, :3] = positions
        lines = iter(path.read_text().splitlines())
        npts, ntheta = (int(v) for v in next(lines).split())
        rows = [next(lines).split() for _ in range(npts)]
        us = [[float(v) for v in next(lines).split()] for _ in range(npts)] if variant == "complicated" else []
        theta = [float(next(lines)) for _ in range(ntheta)]
        return {"theta": theta, "us": us,
                "data": {"model": {"bone_count": len(bone_names), "bone_names": bone_names,
                                   "parents": parents.tolist(), "base_relatives": relative.tolist(),
                                   "inverse_base_absolutes": inverse_absolute.tolist(),
                                   "base_positions": base_positions.tolist(), "weights": weights.tolist(),
                                   "triangles": triangles.tolist(), "is_mirrored": False},
                         "correspondences": [int(r[0]) for r in rows],
                         "points": [[float(v) for v in r[1:]] for r in rows]}}
    return make


def lstm_text(src: Path, count: int) -> tuple[str, bool]:
    """The eval's text (its first `count` characters) and whether it is GradBench's own."""
    path = src / "evals" / "lstm" / "data" / "lstm_full.txt"
    if path.is_file():
        with open(path, encoding="utf8") as f:
            return f.read(count), True
    alphabet = string.ascii_letters + string.digits + " ,.;:'!?-\n"
    rng = np.random.RandomState(SEED)
    return "".join(rng.choice(list(alphabet), size=count)), False


def lstm(layers: int, chars: int) -> Callable[[Path], Any]:
    """evals/lstm/run.py's gen_lstm(), seeded (GradBench's is not), in the eval's order of sizes."""
    order = _by_product([2, 4, 6], [1024, 4096, 8192])

    def draw(full_text: str, combo: tuple[int, int]) -> Any:
        layer_count, char_count = combo
        text = full_text[:char_count]
        bits = math.ceil(math.log2(max(ord(c) for c in text)))
        sequence = [[float(b) for b in bin(ord(c))[2:].zfill(bits)] for c in text]
        state = np.random.random((2 * layer_count, bits))
        main_params = np.random.random((2 * layer_count, bits * 4))
        extra_params = np.random.random((3, bits))
        return {"main_params": main_params.tolist(), "extra_params": extra_params.tolist(),
                "state": state.tolist(), "sequence": sequence}

    def make(src: Path) -> Any:
        full_text, _ = lstm_text(src, 8192)
        np.random.seed(SEED)
        return _sequence(lambda combo: draw(full_text, combo), order, (layers, chars))
    return make


def cases() -> list[Case]:
    """Each program's derivative function at the eval's smallest standard size and, where cheap,
    one larger (hello, particle and saddle have one input each); and the check inputs."""
    found = [Case("hello", "double", "smallest", "x=1", lambda _: 1.0)]
    found += [Case("ba", "jacobian", "smallest", "ba1_n49_m7776_p31843", ba(1)),
              Case("ba", "jacobian", "larger", "ba3_n161_m48126_p182072", ba(3))]
    found += [Case("det", "gradient", "smallest", "ell=5", det(5)),
              Case("det", "gradient", "larger", "ell=8", det(8))]
    found += [Case("gmm", "jacobian", "smallest", "d=2 k=5 n=1000", gmm(2, 5)),
              Case("gmm", "jacobian", "larger", "d=10 k=25 n=1000", gmm(10, 25))]
    found += [Case("ht", "jacobian", "smallest", "complicated_big hand1_t26_c100", ht(1)),
              Case("ht", "jacobian", "larger", "complicated_big hand4_t26_c400", ht(4))]
    found += [Case("kmeans", "dir", "smallest", "k=10 n=1000 d=8", kmeans(10, 1000, 8)),
              Case("kmeans", "dir", "larger", "k=100 n=1000 d=8", kmeans(100, 1000, 8))]
    found += [Case("llsq", "gradient", "smallest", "n=16 m=128", llsq(16)),
              Case("llsq", "gradient", "larger", "n=1024 m=128", llsq(1024))]
    found += [Case("lse", "gradient", "smallest", "n=2500", lse(2500)),
              Case("lse", "gradient", "larger", "n=40000", lse(40000))]
    found += [Case("lstm", "jacobian", "smallest", "l=2 c=1024", lstm(2, 1024)),
              Case("lstm", "jacobian", "larger", "l=4 c=4096", lstm(4, 4096))]
    found += [Case("ode", "gradient", "smallest", "n=1000 s=1", ode(1000, 1)),
              Case("ode", "gradient", "larger", "n=10000 s=10", ode(10000, 10))]
    found += checks()
    for function in ("rr", "ff", "fr", "rf"):
        found.append(Case("particle", function, "smallest", "w=0", lambda _: {"w": 0.0}, REFERENCE["particle"]))
    for function in ("rr", "ff", "fr", "rf"):
        found.append(Case("saddle", function, "smallest", "start=(1,1)", lambda _: {"start": [1.0, 1.0]},
                          REFERENCE["saddle"]))
    return found


def checks() -> list[Case]:
    """The check inputs (see the module's docstring): ode's at n = 6 and s = 3 (its last element
    depends on every x there), and small ones of det, llsq and lse."""
    def drawn(fields: Callable[[np.random.RandomState], dict]) -> Callable[[Path], Any]:
        return lambda _: fields(np.random.RandomState(SEED))
    return [Case("det", "gradient", "check", "ell=3", drawn(lambda r: {"A": r.rand(9).tolist(), "ell": 3}),
                 probe=Probe("A")),
            Case("llsq", "gradient", "check", "n=4 m=8", drawn(lambda r: {"x": r.rand(8).tolist(), "n": 4}),
                 probe=Probe("x")),
            Case("lse", "gradient", "check", "n=8", drawn(lambda r: {"x": r.rand(8).tolist()}), probe=Probe("x")),
            Case("ode", "gradient", "check", "n=6 s=3", drawn(lambda r: {"x": r.rand(6).tolist(), "s": 3}),
                 probe=Probe("x", -1))]
