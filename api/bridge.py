"""What the framework bridges (`adgen.jax`, `adgen.tensorflow`) share: a C function of an
`adgen.load` library with the entries derived from it that their rules call, its float
parameters (the framework's differentiable operands) apart from its integers (fixed when a
program is traced), and the errors a rule raises when the entry it needs is missing."""

from __future__ import annotations

import numpy as np

from adgen.commands.entry_layout import FLOATS, Layout, Unsupported, layout, output_shape
from adgen.commands.load_arguments import bind, lengths

KINDS = ("forward", "reverse", "hvp", "forward_batch", "reverse_batch")
_RETURNS = {"forward": ("dual", "dualonly"), "reverse": ("active", "activeonly")}


class Signature:
    """`name` of `lib` and its entries, each found by mode, width and return activity (the one
    making most parameters differentiable, then the widest, if several) or named by the caller:
    `forward` (width 1: jvp), `reverse` (width 1: grad), `hvp` (`forward of REVERSE`: second
    derivatives), `forward_batch` and `reverse_batch` (width N: N tangents or seeds a call)."""

    def __init__(self, lib, name: str, bridge: str, named: dict[str, str | None]):
        self.lib, self.name, self.bridge = lib, name, bridge
        if name not in lib._all or lib._all[name]["kind"] != "primal":
            raise ValueError(f"{lib.path.name} has no annotated function '{name}'")
        if name not in lib._specs:
            raise ValueError(f"{lib.path.name} holds the derivatives of {name}, not {name} itself (a library of "
                             f"`adgen build`'s objects alone): load its source with adgen.load for {bridge}")
        self.params = lib._all[name]["params"]
        self.floats = [p["name"] for p in self.params if p["ffi"].removeprefix("ptr:") in FLOATS]
        returns = lib._all[name]["returns"]["ffi"]
        if returns not in FLOATS:
            raise ValueError(f"{bridge} takes functions returning float or double; {name} returns {returns}")
        self.dtype = FLOATS[returns][2]
        self.entries = _entries(lib, name, named)
        try:
            self.layouts: dict[str, Layout] = {key: layout(lib._all, self.name if key == "call" else entry, name)
                                               for key, entry in {"call": name, **self.entries}.items()}
        except Unsupported as exc:
            raise ValueError(f"{bridge} cannot call {name}: {exc}") from None
        self.activities = {k: dict(zip([p["name"] for p in self.params], lib._all[e]["activities"]))
                           for k, e in self.entries.items() if k != "hvp"}
        self._lengths = lengths(lib._all, name, lib._sizes.get(name, []))
        self._raw: dict = {}

    def bind(self, args: tuple, kwargs: dict) -> tuple[list, dict]:
        """The arguments of a call: the float parameters' values in order, the integers by name."""
        values = bind(self.name, self.params, args, kwargs)
        floats = [v for p, v in zip(self.params, values) if p["name"] in self.floats]
        ints = {p["name"]: v for p, v in zip(self.params, values) if p["name"] not in self.floats}
        return floats, ints

    def param(self, name: str) -> dict:
        return next(p for p in self.params if p["name"] == name)

    def static(self, value, param: dict, traced: bool) -> int:
        """An integer parameter's value, a Python int (fixed when a framework traces a call)."""
        if traced:
            raise TypeError(f"{self.name}(): '{param['name']}' is an integer, fixed when the function is traced: "
                            "pass a Python int (under jax.jit, mark it static: static_argnums or static_argnames)")
        if param["ffi"].startswith("ptr") or not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise TypeError(f"{self.name}(): '{param['name']}' ({param['ffi']}) takes a Python int; {self.bridge} "
                            "passes arrays and scalars of float or double, and integers")
        return int(value)

    def check_lengths(self, shapes: dict, ints: dict) -> None:
        """What `@size` says each array holds at least (C would read past a shorter one)."""
        for index, count, counted, element, text in self._lengths:
            p = self.params[index]
            wanted = count if count >= 0 else ints.get(self.params[counted]["name"], 0)
            if p["name"] in shapes and int(np.prod(shapes[p["name"]])) * _bytes(p) < wanted * element:
                raise ValueError(f"{self.name}(): '{p['name']}' has {int(np.prod(shapes[p['name']]))} elements; "
                                 f"@size({text}) says it holds {wanted}")

    def needs(self, key: str, why: str) -> None:
        """Raises, saying which entry to annotate, where `why` needs an entry of kind `key`."""
        if key not in self.entries:
            mode = {"forward": "forward (dual, ...) -> dual", "reverse": "reverse (dup, ...) -> active",
                    "hvp": f"forward of {self.entries.get('reverse', 'GRAD')} (dual, ...) -> dualonly"}[key]
            raise NotImplementedError(f"{why} needs an entry `{mode}` of {self.name}: add one to its @diff "
                                      f"annotation (docs/tutorials/{self.bridge.split('.')[1]}.md)")

    def differentiable(self, key: str, name: str, why: str) -> None:
        """Raises where the entry of kind `key` makes parameter `name` const (a derivative it would
        leave out: never a silent zero)."""
        if self.activities[key].get(name, "const") == "const":
            raise NotImplementedError(f"{why} with respect to '{name}' of {self.name}: {self.entries[key]} makes it "
                                      "const; give it an activity")

    def raw(self, key: str):
        """The entry's ctypes function (argument and result types set) and whether it returns a
        struct (its fields' names), for calls whose arguments the bridge has checked itself."""
        if key not in self._raw:
            f = self.lib._function(self.layouts[key].entry)
            self._raw[key] = (f._c, f._result)
        return self._raw[key]

    def inputs(self, key: str, values: dict, tangents: dict | None = None, seed=None, zeros=np.zeros_like) -> dict:
        """What the entry of kind `key` reads, by parameter name: the function's own `values`, the
        tangents of its float parameters (`tangents` by parameter, `zeros` of its value where not
        given), and `seed` where it takes one (the adjoint of the result; in the hvp entry the
        reverse entry's seed, whose own tangent is zero)."""
        given = dict(values)
        tangents = tangents or {}
        hvp = self.prefix("hvp") if key == "hvp" else None
        for p in self.layouts[key].inputs:
            if p.name in given:
                continue
            if p.owner:
                given[p.name] = tangents[p.owner] if p.owner in tangents else zeros(values[p.owner])
            else:
                given[p.name] = zeros(seed) if hvp and p.name.startswith(hvp) else seed
        return given

    def prefix(self, key: str) -> str:
        return self.lib._all[self.entries[key]]["prefix"]

    def gradient(self, key: str, out: dict, n: str, zeros):
        """Parameter `n`'s gradient among a reverse entry's results: its shadow, or its field
        (`zeros()` where it has neither)."""
        shadow = next((p.name for p in self.layouts[key].outputs if p.owner == n), self.prefix(key) + n)
        return out[shadow] if shadow in out else zeros()

    def hvp_outputs(self, out: dict, n: str, scalar: bool, zeros):
        """Parameter `n`'s row of a Hessian-vector product among the hvp entry's results: the
        tangent of the reverse entry's shadow, or of its one returned gradient."""
        h = self.prefix("hvp")
        if not scalar:
            return next(out[p.name] for p in self.layouts["hvp"].outputs if p.owner == n and p.name.startswith(h))
        grad_returns = self.lib._all[self.entries["reverse"]]["returns"].get("field")
        return out[h + "ret"] if grad_returns == self.prefix("reverse") + n else zeros()


def _bytes(p: dict) -> int:
    return int(np.dtype(FLOATS[p["ffi"].removeprefix("ptr:")][2]).itemsize)


def _entries(lib, name: str, named: dict) -> dict[str, str]:
    specs = lib._specs
    chosen = {}
    for kind in KINDS:
        given = named.get(kind)
        if given:
            if given not in specs or specs[given]["kind"] != "derived":
                raise ValueError(f"{lib.path.name} has no derived entry '{given}'")
            chosen[kind] = given
            continue
        of = chosen.get("reverse") if kind == "hvp" else name
        mode = "reverse" if kind.startswith("reverse") else "forward"
        found = [e for e, s in specs.items() if of and s["kind"] == "derived" and s["of"] == of
                 and s["mode"] == mode and (s["width"] > 1) == kind.endswith("batch")
                 and (kind == "hvp" or s["returns_activity"] in _RETURNS[mode])]
        if found:
            chosen[kind] = max(sorted(found), key=lambda e: (sum(a != "const" for a in specs[e]["activities"]),
                                                             specs[e]["width"]))
    return chosen


def call_numpy(sig: Signature, key: str, values: dict, ints: dict) -> dict:
    """The entry of kind `key` ("call": the function itself) on NumPy values by parameter name:
    its results by name (written arrays zeroed first, arrays it may write copied). The shapes
    were checked when the framework's op was made: the call goes to ctypes directly."""
    lay = sig.layouts[key]
    c_function, fields = sig.raw(key)
    shapes = {n: np.shape(v) for n, v in values.items()}
    given, outs, kept = [], {}, []
    for p in lay.params:
        if p.kind == "int":
            given.append(ints[p.name])
        elif p.kind == "out":
            outs[p.name] = a = np.zeros(output_shape(p, shapes), FLOATS[p.float][2])
            given.append(a.ctypes.data)
        elif p.array:
            dtype = FLOATS[p.float][2]
            a = np.array(values[p.name], dtype, order="C") if p.copy else np.ascontiguousarray(values[p.name], dtype)
            kept.append(a)  # (alive until the call returns)
            given.append(a.ctypes.data)
        else:
            given.append(float(values[p.name]))
    result = c_function(*given)
    if fields is None:
        if lay.returns:
            outs[lay.returns[0][0]] = np.asarray(result, FLOATS[lay.returns[0][1]][2])
    else:
        for name, t, count in lay.returns:
            value = getattr(result, name)
            outs[name] = np.array(value[:] if count > 1 else value, FLOATS[t][2])
    return outs
