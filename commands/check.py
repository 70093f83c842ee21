"""`adgen check`: builds sources with their derivatives and checks every derived function
against central finite differences of its primal, on seeded random inputs that respect its
activities and width (and forward against reverse mode where a primal has both).

The primal is seen as a map from its active inputs (active/dual scalars, the contents of
dup/dual pointers) to its outputs (the returned value and the contents of those pointers
after the call). Forward mode is checked lane by lane against finite differences along the
same directions; reverse mode through <gradient, u> = d/dt <seeds, F(z + t u)>."""

from __future__ import annotations

import os
import random
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from adgen.base.zig_runtimes import quietly
from adgen.frontend.annotations import size_items
from adgen.frontend.languages import is_rust

from adgen.commands.load import BuildError, load
from adgen.commands.load_arguments import NUMPY_DTYPES


class CheckError(Exception):
    """A derived function cannot be checked as asked (a pointer without a length, say)."""


class Packed:
    """A struct or complex number passed by value, as the check sees it: its floating fields
    (`leaves`, flattened in order, a complex number's real then imaginary part) are numbers
    like any others; its other fields keep their values."""

    def __init__(self, spec: dict, leaves: np.ndarray, ints: dict | None = None):
        self.spec, self.leaves, self.ints = spec, np.asarray(leaves, dtype=np.float64), ints or {}

    @staticmethod
    def size(spec: dict) -> int:
        """How many floating leaves a struct or complex number has (a struct field's count times
        its own leaves: one for a float or double, none for anything else)."""
        if spec["ffi"].startswith("complex:"):
            return 2
        if spec["ffi"] == "struct":
            return sum(f["count"] * Packed.size(f) for f in spec["fields"])
        return 1 if spec["ffi"] in ("double", "float") else 0

    @staticmethod
    def random(spec: dict, rng: random.Random, given: dict[str, str]) -> "Packed":
        """Floating fields random in [-1, 1] and integer fields 4, but for the fields `given` by
        name (`--size w.gamma=1.5 --size w.m=3`: the top-level scalar fields of parameter w)."""
        leaves = [rng.uniform(-1, 1) for _ in range(Packed.size(spec))]
        ints, at = {}, 0
        for f in spec.get("fields", []):
            value = given.get(f"{spec['name']}.{f['name']}") if "name" in spec else None
            if value is not None and f["count"] == 1 and f["ffi"] in ("double", "float"):
                leaves[at] = float(value)
            elif value is not None and f["count"] == 1 and f["ffi"] not in ("struct", "ptr"):
                ints[f["name"]] = int(value)
            at += f["count"] * Packed.size(f)
        return Packed(spec, np.array(leaves), ints)

    @staticmethod
    def of(spec: dict, value) -> np.ndarray:
        """The floating leaves of a value adgen.load returned (a dict, or a complex number)."""
        if spec["ffi"].startswith("complex:"):
            return np.array([value.real, value.imag])
        out = []
        for f in spec["fields"]:
            items = value[f["name"]] if f["count"] > 1 else [value[f["name"]]]
            for item in items:
                if f["ffi"] == "struct" or f["ffi"].startswith("complex:"):
                    out += list(Packed.of(f, item))
                elif f["ffi"] in ("double", "float"):
                    out.append(float(item))
        return np.array(out)

    def value(self):
        """As adgen.load takes it."""
        if self.spec["ffi"].startswith("complex:"):
            return complex(self.leaves[0], self.leaves[1])
        return self._fill(self.spec, iter(self.leaves), self.ints)

    def _fill(self, spec, leaves, ints):
        out = {}
        for f in spec["fields"]:
            def one():
                if f["ffi"] == "struct":
                    return self._fill(f, leaves, ints.get(f["name"], {}))
                if f["ffi"].startswith("complex:"):
                    return complex(next(leaves), next(leaves))
                if f["ffi"] in ("double", "float"):
                    return next(leaves)
                return ints.get(f["name"], 4) if f["ffi"] != "ptr" else None
            out[f["name"]] = [one() for _ in range(f["count"])] if f["count"] > 1 else one()
        return out

    def moved(self, direction: np.ndarray, t: float) -> "Packed":
        return Packed(self.spec, self.leaves + t * direction, self.ints)

    def copy(self) -> "Packed":
        return Packed(self.spec, self.leaves.copy(), self.ints)

    def __len__(self) -> int:
        return len(self.leaves)


def _by_value(spec: dict) -> bool:
    return spec["ffi"] == "struct" or spec["ffi"].startswith("complex:")


def _holds_float(spec: dict) -> bool:
    """A float, or a struct or complex number by value with float parts."""
    if spec["ffi"] in ("float", "complex:float"):
        return True
    return spec["ffi"] == "struct" and any(_holds_float(f) for f in spec["fields"])


def _precision(pspec: dict) -> str:
    """"float" where any input or output of the primal is a float (or holds one), else "double"."""
    floats = any(_element_floating(p) == "float" or _holds_float(p) for p in pspec["params"])
    return "float" if floats or _holds_float(pspec["returns"]) else "double"


def _ret_size(pspec: dict) -> int:
    """How many outputs the returned value is: 1 for a float or double, its floating fields for a
    struct or complex number, 0 otherwise."""
    return Packed.size(pspec["returns"])


def _plain(v):
    """An argument as adgen.load takes it (a copy: arrays are written)."""
    return v.copy() if isinstance(v, np.ndarray) else v.value() if isinstance(v, Packed) else v


@dataclass
class Row:
    name: str
    mode: str
    width: int
    error: float
    ok: bool
    verdict: str = ""  # what to print instead of ok/MISMATCH

    @staticmethod
    def not_finite(name: str, mode: str, width: int) -> "Row":
        """The primal is not finite at the random input: nothing to compare, no verdict."""
        return Row(name, mode, width, float("nan"), False, "NOT FINITE")


def parse_sizes(items: list[str]) -> dict[str, str]:
    sizes = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name or not value:
            raise CheckError(f"--size takes NAME=VALUE (a number, or the name of an integer parameter), not '{item}'")
        sizes[name] = value
    return sizes


class Checker:
    def __init__(self, lib, sizes: dict[str, str], seed: int, timeout: float = 10.0):
        self.lib, self.sizes, self.seed, self.timeout = lib, sizes, seed, timeout

    def call(self, name: str, args: list):
        """One call into the library. C code cannot be interrupted from Python, but ctypes lets
        go of the interpreter while it runs: a timer thread reports a call that never returns
        (a Newton loop on a bad random input) and ends the process."""
        def hung():
            shown = ", ".join(_show(a) for a in args)
            sys.stderr.write(f"adgen: error: {name}({shown}) has not returned after {self.timeout:g} s; "
                             f"the random input (--seed {self.seed}) may make it loop forever: try another "
                             "--seed, other --size values, or a longer --timeout\n")
            sys.stderr.flush()
            os._exit(1)

        try:
            function = getattr(self.lib, name)
        except AttributeError as exc:  # (a C++ primal the library does not define, or cannot call)
            raise CheckError(str(exc)) from None
        timer = threading.Timer(self.timeout, hung)
        timer.daemon = True
        timer.start()
        try:
            return function(*args)
        finally:
            timer.cancel()

    # inputs ---------------------------------------------------------------------------------------
    def inputs(self, primal: str, rng: random.Random) -> list:
        """Random arguments for the primal: scalars in [-1, 1], integers from --size (default 4),
        arrays of the length --size gives."""
        spec = self.lib._specs[primal]
        ints = {}
        for p in spec["params"]:
            if not p["ffi"]:
                raise CheckError(f"'{primal}' takes parameter '{p['name']}' by value, of a type Python cannot make (a "
                                 "C++ class with a std::vector in it, say): check this derivative from C or C++")
            if not p["ffi"].startswith("ptr") and p["ffi"] not in ("double", "float", "longdouble") and \
                    not _by_value(p):
                ints[p["name"]] = int(self.sizes.get(p["name"], "4"))
        values = []
        for p in spec["params"]:
            ffi = p["ffi"]
            if _by_value(p):  # floating fields random, integer fields 4, unless --size gives them
                values.append(Packed.random(p, rng, self.sizes))
            elif ffi.startswith("ptr"):
                values.append(self._array(primal, p, ints, rng))
            elif p["name"] in ints:
                values.append(ints[p["name"]])
            else:
                values.append(rng.uniform(-1, 1))
        return values

    def _array(self, primal: str, p: dict, ints: dict, rng: random.Random):
        if _element(p).get("pointers"):
            raise CheckError(f"'{primal}' has parameter '{p['name']}' pointing to data that reaches its floats "
                             "through pointers (a std::vector, a struct holding a pointer): adgen check cannot make "
                             "one; check this derivative from C or C++")
        given = "1" if p.get("reference") else self.sizes.get(p["name"])  # (a C++ reference: one, always)
        if given is None:
            raise CheckError(f"'{primal}' has pointer parameter '{p['name']}': its length is needed, pass "
                             f"--size {p['name']}=N (or --size {p['name']}=n to use parameter n's value)")
        if given not in ints and not given.isdigit():
            raise CheckError(f"--size {p['name']}={given}: '{given}' is neither a number nor an integer parameter of "
                             f"'{primal}' (they are: {', '.join(ints) or 'none'})")
        length = ints[given] if given in ints else int(given)
        floating = _element_floating(p)
        if floating:  # doubles or floats, one or several per element (a struct, a row)
            per = max(_element(p)["size"] // (8 if floating == "double" else 4), 1)
            dtype = np.float64 if floating == "double" else np.float32
            return np.array([rng.uniform(-1, 1) for _ in range(length * per)], dtype=dtype)
        dtype = NUMPY_DTYPES.get(p["ffi"].partition(":")[2])
        if dtype is not None:  # integers: zeros
            return np.zeros(length, dtype=dtype)
        size = _element(p)["size"]
        if size <= 0:
            raise CheckError(f"'{primal}' has pointer parameter '{p['name']}' to elements of unknown size: "
                             "adgen check cannot make a buffer for it")
        return np.zeros(length * size, dtype=np.uint8)  # bytes of elements that hold no floating data

    # the primal as a map ----------------------------------------------------------------------------
    def outputs(self, primal: str, values: list) -> np.ndarray:
        spec = self.lib._specs[primal]
        args = [_plain(v) for v in values]
        ret = self.call(primal, args)
        parts = [np.atleast_1d(np.float64(ret))] if spec["returns"]["ffi"] in ("double", "float") else \
            [Packed.of(spec["returns"], ret)] if _by_value(spec["returns"]) else []
        parts += [a.astype(np.float64) for a, p in zip(args, spec["params"]) if _floating_array(p)]
        return np.concatenate(parts) if parts else np.zeros(0)

    def perturbed(self, values: list, direction: list, t: float) -> list:
        out = []
        for v, d in zip(values, direction):
            if d is None:
                out.append(v.copy() if isinstance(v, (np.ndarray, Packed)) else v)
            elif isinstance(v, Packed):
                out.append(v.moved(d, t))
            elif isinstance(v, np.ndarray):
                out.append((v.astype(np.float64) + t * d).astype(v.dtype))
            else:
                out.append(v + t * d)
        return out

    def fd(self, primal: str, values: list, direction: list, precision: str) -> np.ndarray:
        h = 1e-3 if precision == "float" else 1e-6
        plus = self.outputs(primal, self.perturbed(values, direction, h))
        minus = self.outputs(primal, self.perturbed(values, direction, -h))
        return (plus - minus) / (2 * h)

    # checking one derived function ------------------------------------------------------------------
    def check(self, name: str) -> Row:
        spec = self.lib._specs[name]
        primal = spec["of"]
        pspec = self.lib._specs[primal]
        if pspec.get("member"):
            raise CheckError(f"'{name}' differentiates the C++ member function '{primal}', which adgen check cannot "
                             f"call yet: check it from C++ (or the others with --only)")
        rng = random.Random(f"{self.seed}:{name}")
        values = self.inputs(primal, rng)
        n = spec["width"]
        acts = spec["activities"]
        precision = _precision(pspec)
        directions = [[self._direction(v, a, rng) for v, a in zip(values, acts)] for _ in range(n)]
        if spec["mode"] == "forward":
            lanes = self.forward(name, spec, pspec, values, directions)
            errors = [_error(lane, self._untangled(spec, pspec, self.fd(primal, values, u, precision)))
                      for lane, u in zip(lanes, directions)]
        else:
            out_size = len(self.outputs(primal, values))
            seeds = [np.array([rng.uniform(-1, 1) for _ in range(out_size)]) for _ in range(n)]
            grads = self.reverse(name, spec, pspec, values, seeds)
            errors = []
            for g, u, v in zip(grads, directions, seeds):
                lhs = sum(float(np.dot(np.ravel(gi), np.ravel(ui))) if isinstance(ui, np.ndarray) else gi * ui
                          for gi, ui in zip(g, u) if ui is not None)
                rhs = float(np.dot(v, self.fd(primal, values, u, precision)))
                errors.append(abs(lhs - rhs) / max(1.0, abs(rhs)))
        if not np.all(np.isfinite(self.outputs(primal, values))):
            return Row.not_finite(name, spec["mode"], n)
        worst = max(errors) if errors else 0.0
        tolerance = 1e-3 if precision == "float" else 1e-5
        return Row(name, spec["mode"], n, worst, worst <= tolerance)

    @staticmethod
    def _untangled(spec, pspec, outputs: np.ndarray) -> np.ndarray:
        """Finite differences of the outputs the forward derivative gives tangents of: not of the
        result when its activity is const (those come as zeros from `forward`)."""
        if spec["returns_activity"] not in ("dual", "dualonly"):
            outputs[:_ret_size(pspec)] = 0
        return outputs

    def _direction(self, value, activity: str, rng: random.Random):
        if activity == "const":
            return None
        if isinstance(value, np.ndarray) and value.dtype == np.uint8:
            raise CheckError("adgen check fills a pointer's elements with random numbers only when they hold "
                             f"nothing but doubles or nothing but floats; an argument marked '{activity}' "
                             "points to elements that mix floating and other fields")
        if isinstance(value, (np.ndarray, Packed)):
            return np.array([rng.uniform(-1, 1) for _ in range(len(value))])
        return rng.uniform(-1, 1)

    def forward(self, name, spec, pspec, values, directions) -> list[np.ndarray]:
        n = spec["width"]
        args, tangents = self._derived_args(spec, pspec, values, directions, seeds_for=None)
        result = self.call(name, args)
        lanes = []
        for k in range(n):
            parts = []
            field = spec["prefix"] + "ret"
            d_ret = getattr(result, field) if hasattr(result, field) else result
            if spec["returns_activity"] not in ("dual", "dualonly"):  # no tangent of the result
                parts.append(np.zeros(_ret_size(pspec)))
            elif pspec["returns"]["ffi"] in ("double", "float"):
                parts.append(np.atleast_1d(np.float64(np.ravel(d_ret)[k] if n > 1 else d_ret)))
            elif _by_value(pspec["returns"]):
                parts.append(Packed.of(pspec["returns"], d_ret[k] if n > 1 else d_ret))
            for i, p in enumerate(pspec["params"]):
                if _floating_array(p):
                    parts.append(tangents[i][k].astype(np.float64) if i in tangents else np.zeros(len(values[i])))
            lanes.append(np.concatenate(parts) if parts else np.zeros(0))
        return lanes

    def reverse(self, name, spec, pspec, values, seeds) -> list[list]:
        n = spec["width"]
        offsets, position = {}, _ret_size(pspec)
        for i, p in enumerate(pspec["params"]):
            if _floating_array(p):
                offsets[i] = position
                position += len(values[i])
        args, shadows = self._derived_args(spec, pspec, values, None, seeds_for=(seeds, offsets, position))
        result = self.call(name, args)
        grads = []
        for k in range(n):
            g = []
            for i, (p, act) in enumerate(zip(pspec["params"], spec["activities"])):
                if i in shadows:
                    g.append(shadows[i][k].astype(np.float64))
                elif act == "active" and _by_value(p):
                    value = getattr(result, spec["prefix"] + p["name"]) if hasattr(result, "_fields") else result
                    g.append(Packed.of(p, value[k] if n > 1 else value))
                elif act == "active":
                    value = getattr(result, spec["prefix"] + p["name"]) if hasattr(result, "_fields") else result
                    g.append(float(np.ravel(value)[k]) if n > 1 else float(value))
                else:
                    g.append(None)
            grads.append(g)
        return grads

    def _derived_args(self, spec, pspec, values, directions, seeds_for):
        """The derived function's arguments, in its ABI order (see specs/abi.md), and the
        arrays it writes derivatives into, per primal parameter and lane."""
        n = spec["width"]
        names = [p["name"] for p in pspec["params"]]
        index = {nm: i for i, nm in enumerate(names)}
        written: dict[int, list] = {}
        args = []
        for slot in spec["params"]:
            role = slot["role"]
            if not role:
                args.append(_plain(values[index[slot["name"]]]))
                continue
            if role.startswith("seed"):
                seeds, _, _ = seeds_for
                lane = int(slot["name"].rsplit("_", 1)[1]) if n > 1 else 0
                r = pspec["returns"]
                args.append(Packed(r, seeds[lane][:Packed.size(r)]).value() if _by_value(r) else float(seeds[lane][0]))
                continue
            owner = role.split(" of ", 1)[1].split(",")[0]
            i = index[owner]
            lanes = written.setdefault(i, [None] * n)
            interleaved = "interleaved" in role or (n == 1 and spec["activities"][i] in ("dualv", "dupv"))
            if interleaved:
                block = np.stack([self._lane_data(values, directions, seeds_for, i, k) for k in range(n)], axis=-1)
                array = np.ascontiguousarray(block.reshape(-1) if block.ndim > 1 else block)
                if isinstance(values[i], np.ndarray):
                    array = array.astype(values[i].dtype)
                    args.append(array)
                    for k in range(n):
                        lanes[k] = array.reshape(-1, n)[:, k] if n > 1 else array
                else:  # a scalar's N tangents behind a pointer
                    args.append(np.ascontiguousarray(array, dtype=np.float64 if slot["ffi"] == "ptr:double"
                                                     else np.float32))
                continue
            lane = int(slot["name"].rsplit("_", 1)[1]) if n > 1 else 0
            data = self._lane_data(values, directions, seeds_for, i, lane)
            if isinstance(values[i], Packed):  # a struct's tangent, of its own type
                args.append(Packed(values[i].spec, data, {}).value())
            elif isinstance(values[i], np.ndarray):
                array = np.ascontiguousarray(data, dtype=values[i].dtype)
                args.append(array)
                lanes[lane] = array
            else:
                args.append(float(data))
        return args, written

    def _lane_data(self, values, directions, seeds_for, i, lane):
        if directions is not None:  # forward: the tangent of input i in this lane (a copy: it is written)
            d = directions[lane][i]
            if d is None:
                return np.zeros(len(values[i])) if isinstance(values[i], (np.ndarray, Packed)) else 0.0
            return d.copy() if isinstance(d, np.ndarray) else d
        seeds, offsets, _ = seeds_for  # reverse: the seed of output i (its contents after the call)
        if i in offsets:
            return seeds[lane][offsets[i]:offsets[i] + len(values[i])].copy()
        return np.zeros(len(values[i]))


def cross_check(checker: "Checker", forward: str, reverse: str) -> Row:
    """Forward against reverse mode on one primal: <J u, v> = <u, J^T v>, with u on the inputs
    both derivatives treat as active and v on the outputs both carry derivatives of."""
    lib = checker.lib
    fspec, rspec = lib._specs[forward], lib._specs[reverse]
    primal = fspec["of"]
    pspec = lib._specs[primal]
    rng = random.Random(f"{checker.seed}:{forward}:{reverse}")
    values = checker.inputs(primal, rng)
    both = [f != "const" and r != "const" for f, r in zip(fspec["activities"], rspec["activities"])]
    u = [checker._direction(v, "dual" if on else "const", rng) for v, on in zip(values, both)]
    ju = checker.forward(forward, fspec, pspec, values, [u] * fspec["width"])[0]
    mask = [fspec["returns_activity"] in ("dual", "dualonly") and
            rspec["returns_activity"] in ("active", "activeonly")] * _ret_size(pspec)
    for i, p in enumerate(pspec["params"]):
        if _floating_array(p):
            mask += [both[i]] * len(values[i])
    v = np.array([rng.uniform(-1, 1) if m else 0.0 for m in mask])
    g = checker.reverse(reverse, rspec, pspec, values, [v] * rspec["width"])[0]
    lhs = float(np.dot(ju, v))
    rhs = sum(float(np.dot(np.ravel(gi), np.ravel(ui))) if isinstance(ui, np.ndarray) else gi * ui
              for gi, ui in zip(g, u) if ui is not None)
    if not np.all(np.isfinite(checker.outputs(primal, values))):
        return Row.not_finite(f"{forward} ~ {reverse}", "fwd/rev", 1)
    error = abs(lhs - rhs) / max(1.0, abs(lhs))
    tolerance = 1e-5 if _precision(pspec) == "float" else 1e-8  # the two round differently
    return Row(f"{forward} ~ {reverse}", "fwd/rev", 1, error, error <= tolerance)


def _show(value) -> str:
    if isinstance(value, Packed):
        return str(value.value())
    if isinstance(value, np.ndarray):
        head = ", ".join(f"{v:.6g}" for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"[{head}]"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _element(p: dict) -> dict:
    """A pointer's element as the manifest gives it; from the ffi alone in a manifest written before
    elements were recorded (one that adgen.load cached under the same version)."""
    kind = p["ffi"].partition(":")[2]
    scalar = {"double": 8, "float": 4}.get(kind, 0)
    return p.get("element", {"size": scalar, "floating": kind if scalar else ""})


def _element_floating(p: dict) -> str:
    return _element(p)["floating"] if p["ffi"].startswith("ptr") else ""


def _floating_array(p: dict) -> bool:
    return bool(_element_floating(p))


def _error(got: np.ndarray, expected: np.ndarray) -> float:
    if len(expected) == 0:
        return 0.0
    return float(np.max(np.abs(got - expected) / np.maximum(1.0, np.abs(expected))))


def annotated_sizes(sources: list) -> list[str]:
    """`@size(x=n, n=16)` in the sources' comments: lengths and values for `adgen check`, as if
    given with --size (which wins)."""
    return [item for src in sources for item in size_items(Path(src).read_text())]


def run(sources: list, flags: list[str], only: str | None, sizes: list[str], seed: int, quiet: bool,
        timeout: float = 10.0) -> int:
    """The command: builds, checks, prints the table; 0 when every derivative matches."""
    try:
        missing = [str(s) for s in sources if not Path(s).is_file()]
        if missing:  # (as adgen build says it)
            raise CheckError(f"no such file: {', '.join(missing)}")
        if any(is_rust(Path(s)) for s in sources):
            raise CheckError("adgen check takes C sources; check a Rust source's derivatives from Rust, through the "
                             "wrappers `adgen build` writes (its .adgen.rs)")
        with quietly(quiet):  # (what zig builds on a first link, said unless -q: zig_runtimes.py)
            lib = load(sources, flags=flags)
        size_map = parse_sizes(annotated_sizes(sources) + sizes)
        derived = [n for n in lib.functions if lib._specs[n]["kind"] in ("derived", "split")  # a split entry whole
                   and "part" not in lib._specs[n]]
        if only:
            if only not in derived:
                raise CheckError(f"no derived function named '{only}'; there are {', '.join(derived) or 'none'}")
            derived = [only]
        checker = Checker(lib, size_map, seed, timeout)
        rows = [checker.check(name) for name in derived]
        for fwd in (n for n in derived if lib._specs[n]["mode"] == "forward"):
            rev = next((n for n in derived if lib._specs[n]["mode"] == "reverse" and
                        lib._specs[n]["of"] == lib._specs[fwd]["of"]), None)
            if rev is not None:
                rows.append(cross_check(checker, fwd, rev))
    except BuildError as exc:
        sys.stderr.write(str(exc))
        return 1
    except CheckError as exc:
        print(f"adgen: error: {exc}", file=sys.stderr)
        return 1
    width = max([len("derivative")] + [len(r.name) for r in rows])
    print(f"{'derivative':<{width}}  {'mode':<8} {'width':>5}  {'max rel. error':>14}  verdict")
    if not rows:
        print("(no derived functions)")
    for r in rows:
        print(f"{r.name:<{width}}  {r.mode:<8} {r.width:>5}  {r.error:>14.2e}  "
              f"{r.verdict or ('ok' if r.ok else 'MISMATCH')}")
    bad = [r.name for r in rows if not r.ok and not r.verdict]
    unknown = [r.name for r in rows if r.verdict]
    if not quiet:
        print(f"{len(rows) - len(bad) - len(unknown)} of {len(rows)} checks pass (derivatives against central finite "
              f"differences, forward against reverse mode)" + (f"; mismatches: {', '.join(bad)}" if bad else ""))
        if unknown:
            print(f"not checked, the primal not finite at the random input (--seed {seed}): {', '.join(unknown)}; "
                  "try another --seed or other --size values")
    return 1 if bad or unknown else 0
