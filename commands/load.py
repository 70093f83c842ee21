"""`adgen.load`: builds C sources with their derivatives into a shared library (or takes the
objects of an earlier `adgen build`) and calls its functions through ctypes, with the
signatures from the build's manifests. Pointer parameters take NumPy arrays (or ctypes
arrays), which the call reads and writes in place; result structs come back as named tuples."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import tempfile
import threading
from collections import namedtuple
from contextlib import contextmanager
from pathlib import Path

from adgen.base import __version__
from adgen.base.diagnostics import AdgenError, Diagnostic
from adgen.base.timing import Stages
from adgen.base.toolchain import (USERS_NDEBUG, bundled_cc, cxx_command, openmp_include_flags, openmp_link_flags,
                                  select_compiler, system_flags)
from adgen.base.templates import render_text
from adgen.commands.report import diagnostics_text, internal_error_text
from adgen.frontend.languages import is_cxx, is_rust

_SCALARS = {
    "double": ctypes.c_double, "float": ctypes.c_float, "longdouble": ctypes.c_longdouble, "bool": ctypes.c_bool,
    "byte": ctypes.c_byte, "ubyte": ctypes.c_ubyte, "short": ctypes.c_short, "ushort": ctypes.c_ushort,
    "int": ctypes.c_int, "uint": ctypes.c_uint, "long": ctypes.c_long, "ulong": ctypes.c_ulong,
    "longlong": ctypes.c_longlong, "ulonglong": ctypes.c_ulonglong,
}
NUMPY_DTYPES = {"double": "float64", "float": "float32", "int": "int32", "uint": "uint32", "long": "int64",
                 "ulong": "uint64", "longlong": "int64", "ulonglong": "uint64", "short": "int16", "ushort": "uint16",
                 "byte": "int8", "ubyte": "uint8", "bool": "bool"}


class BuildError(RuntimeError):
    """adgen or the C compiler refused the sources. The message is what `adgen build` prints
    (adgen's located diagnostics and their count), or the C compiler's own output; adgen's
    diagnostics are also in `diagnostics`, as data (adgen.base.diagnostics.Diagnostic: severity,
    message, span, notes), for a caller that shows them its own way. `diagnostics` is empty when
    the C compiler, or a bug in adgen, stopped the build."""

    def __init__(self, message: str, diagnostics: list[Diagnostic] = ()):
        super().__init__(message)
        self.diagnostics = list(diagnostics)


def load(path, build_dir=None, flags=()) -> "Library":
    """Builds and loads C sources with their derivatives.

    `path` is a C source, a list of them, or the output directory of an earlier `adgen build`
    (whose `.adgen.o` objects are loaded: the derived functions only). `build_dir` keeps the
    build (default: a cache directory keyed by the sources' contents); `flags` are extra
    compiler flags such as `["-Iinclude", "-DN=4"]`."""
    paths = [Path(p) for p in (path if isinstance(path, (list, tuple)) else [path])]
    if len(paths) == 1 and paths[0].is_dir():
        return _from_build_dir(paths[0])
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"no such file: {', '.join(missing)}")
    rust = [str(p) for p in paths if is_rust(p)]
    if rust:
        raise ValueError(f"{', '.join(rust)}: adgen.load and adgen check take C sources; a Rust source's derivatives "
                         "are called from Rust, through the wrappers `adgen build` writes (its .adgen.rs)")
    key = hashlib.sha256(("\0".join([__version__, _fingerprint(), *flags] + [p.read_text() for p in paths])
                          ).encode()).hexdigest()
    out = Path(build_dir) if build_dir else Path(tempfile.gettempdir()) / f"adgen-load-{key[:16]}"
    library = out / "libadgen.so"
    if build_dir or not library.exists():
        _build(paths, out, list(flags), library)
    return Library(library, sorted(out.glob("*.adgen.json")))


@functools.cache
def _fingerprint() -> str:
    """adgen's own files (sizes and times): a cached build is stale once adgen changes, even at
    the same version (an editable install). The packages' folders are looked up, not imported:
    `adgen` itself imports this module."""
    from adgen.base.templates import TEMPLATES  # Jinja: imported when building only

    packages = [Path(folder) for name in ("adgen", "adgen.base", "adgen.commands", "adgen.frontend", "adgen.ir_ad")
                for folder in importlib.util.find_spec(name).submodule_search_locations]
    files = sorted({p for d in packages for p in d.rglob("*") if p.suffix in (".py", ".lark")}
                   | {p for p in TEMPLATES.iterdir() if p.suffix == ".j2"})
    return ";".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files)


def _build(sources: list[Path], out: Path, flags: list[str], library: Path) -> None:
    """`adgen build -q SOURCES -o OUT -- FLAGS`, then the sources and the derivatives' objects
    linked into `library`."""
    flags = [*flags, *openmp_include_flags(select_compiler(None), flags)]
    _derive(sources, out, flags)
    cc = list(bundled_cc())
    cxx = list(cxx_command(select_compiler(None)))  # (C++ sources: their library's headers, and linked with it)
    objects = []
    for src in sources:
        obj = out / f"{src.stem}.o"
        compiled = _keeping_primals(src, out) if is_cxx(src) else src
        _run([*(cxx if is_cxx(src) else cc), "-c", "-O2", "-fPIC", *USERS_NDEBUG, *flags, "-iquote", str(out),
              "-iquote", str(src.parent), str(compiled), "-o", str(obj)])
        objects.append(str(obj))
    _run([*(cxx if any(is_cxx(s) for s in sources) else cc), "-shared", *objects,
          *(str(out / f"{s.stem}.adgen.o") for s in sources), *openmp_link_flags(select_compiler(None), flags),
          "-o", str(library), "-lm"])


def _keeping_primals(src: Path, out: Path) -> Path:
    """A C++ source with the addresses of its annotated functions taken, so that the library has
    them to call: C++ compiles an inline function, or an instantiation of a template, only where
    it is used."""
    functions = json.loads((out / f"{src.stem}.adgen.json").read_text())["functions"].values()
    addresses = [f["address"] for f in functions if f["kind"] == "primal" and "address" in f]
    wrapper = out / f"{src.stem}.keep{src.suffix}"
    quoted = str(src.resolve()).replace("\\", "\\\\").replace('"', '\\"')
    wrapper.write_text(render_text("keeping.cpp.j2", path=quoted, stem=re.sub(r"\W", "_", src.stem),
                                   addresses=addresses))
    return wrapper


def _derive(sources: list[Path], out: Path, flags: list[str]) -> None:
    """The build pipeline (what `adgen build` runs), its failure a BuildError that reads as the
    command's would."""
    from adgen.commands.build.pipeline import build  # LLVM and the AD core: imported when building only

    try:
        compiler = select_compiler(None)
        build(sources, out, list(system_flags(compiler)), [], flags, compiler, Stages())
    except AdgenError as exc:
        raise BuildError(diagnostics_text(exc.diagnostics), exc.diagnostics) from exc
    except Exception as exc:
        if os.environ.get("ADGEN_TRACEBACK"):
            raise
        raise BuildError(internal_error_text(exc)) from exc


def _from_build_dir(folder: Path) -> "Library":
    manifests = sorted(folder.glob("*.adgen.json"))
    objects = [m.with_name(m.name.replace(".adgen.json", ".adgen.o")) for m in manifests]
    if not manifests or not all(o.exists() for o in objects):
        raise FileNotFoundError(f"{folder} holds no output of `adgen build` (*.adgen.json with *.adgen.o)")
    library = folder / "libadgen-derivatives.so"
    _run([*bundled_cc(), "-shared", *map(str, objects), "-o", str(library), "-lm"])
    return Library(library, manifests, derived_only=True)


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise BuildError(done.stderr)


class Library:
    """The functions of a built library: `lib.NAME(...)` calls one; `lib.functions` lists them.
    A split-mode entry is one object (`Split`): its forward, reverse and free functions take a
    tape, which only that object hands out and checks, so they are not attributes of their own."""

    def __init__(self, path: Path, manifests: list[Path], derived_only: bool = False):
        self.path = Path(path)
        self._dll = ctypes.CDLL(str(self.path))
        self._specs: dict[str, dict] = {}
        for m in manifests:
            for name, spec in json.loads(Path(m).read_text())["functions"].items():
                if not (derived_only and spec["kind"] == "primal"):
                    self._specs[name] = spec
        self._calls: dict[str, CFunction] = {}

    @property
    def functions(self) -> list[str]:
        return sorted(name for name, spec in self._specs.items() if not _takes_tape(spec))

    def __getattr__(self, name: str) -> "CFunction":
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._specs:
            raise AttributeError(f"{self.path.name} has no function '{name}'; it has {', '.join(self.functions)}")
        spec = self._specs[name]
        if _takes_tape(spec):
            entry = name.removesuffix(f"_{spec['part']}")
            raise AttributeError(f"'{name}' takes a tape: call it as lib.{entry}."
                                 f"{'release' if spec['part'] == 'free' else spec['part']}(...)")
        return self._function(name)

    def _function(self, name: str):
        if name not in self._calls:
            spec = self._specs[name]
            if spec.get("member"):
                raise AttributeError(f"'{name}' is a C++ member function, which adgen.load cannot call: its derived "
                                     "functions it can")
            if spec["kind"] == "split":
                self._calls[name] = Split(self, name, spec)
                return self._calls[name]
            try:
                found = getattr(self._dll, spec.get("symbol", name))
            except AttributeError:
                if "symbol" not in spec:
                    raise
                raise AttributeError(f"'{name}' is not in {self.path.name}: C++ compiles an inline function (one "
                                     "defined in its class, say) only where it is used; define it outside the class "
                                     "to call it from Python (its derived functions are there)") from None
            self._calls[name] = CFunction(name, spec, found)
        return self._calls[name]

    def __dir__(self):
        return [*super().__dir__(), *self.functions]

    def __repr__(self) -> str:
        return f"<adgen library {self.path} with {', '.join(self.functions)}>"


class CFunction:
    """One C function: converts arguments, calls, and converts the result."""

    def __init__(self, name: str, spec: dict, c_function):
        self.name, self.spec, self._c = name, spec, c_function
        self._params = spec["params"]
        self._types = [_argtype(p) for p in self._params]
        c_function.argtypes = self._types
        returns = spec["returns"]
        self._result = None
        if "struct" in returns:
            self._struct = _structure(returns["struct"], returns["fields"])
            self._result = namedtuple(returns["struct"], [f["name"] for f in returns["fields"]])
            c_function.restype = self._struct
        else:
            c_function.restype = None if returns["ffi"] == "void" else _value_type(returns)
        params = ", ".join(f"{p['name']}: {p['ffi']}" for p in self._params)
        self.__doc__ = f"{name}({params})" + (f"  [{spec['mode']} mode, width {spec['width']}, derivative of "
                                             f"{spec['of']}]" if spec["kind"] == "derived" else "")

    def __call__(self, *args):
        if len(args) != len(self._params):
            names = ", ".join(p["name"] for p in self._params)
            raise TypeError(f"{self.name}() takes {len(self._params)} arguments ({names}), not {len(args)}")
        converted = [_argument(a, p, t, self.name) for a, p, t in zip(args, self._params, self._types)]
        _check_derivative_arrays(self.name, self._params, args, self.spec.get("width", 1))
        value = self._c(*converted)
        if self._result is None:
            return _field(value)
        return self._result(*(_field(getattr(value, f)) for f in self._result._fields))

    def __repr__(self) -> str:
        return f"<adgen function {self.__doc__}>"


class Split:
    """A split-mode entry (specs/abi.md): `forward(*args)` runs the forward sweep and returns the
    primal's result and a `Tape`; `reverse(tape, *seeds)` runs the reverse sweep, returning the
    gradients of active scalars (those of `dup` arrays accumulate in the shadows given to
    `forward`). Called as a whole, it runs both, like the reverse-mode function of the entry."""

    def __init__(self, lib: Library, name: str, spec: dict):
        self.name, self.spec = name, spec
        self._part = {part: lib._function(function) for part, function in spec["parts"].items()}

    def forward(self, *args):
        tape = Tape(self)
        value = self._part["forward"](*args, tape._memory)
        tape._hold(args)
        return value, tape

    def reverse(self, tape: "Tape", *seeds):
        """The reverse sweep of a tape of this entry's, once: a tape reversed or released
        already raises `TapeError` (run `forward` again for another)."""
        with _tape(tape, self)._use(self, "reverse"):
            return self._part["reverse"](tape._memory, *seeds)

    def release(self, tape: "Tape") -> None:
        """Releases what a tape never reversed holds, at once (dropping it does so later)."""
        with _tape(tape, self)._use(self, "release"):
            self._part["free"](tape._memory)

    def __call__(self, *args):
        params = self.spec["params"]
        if len(args) != len(params):
            names = ", ".join(p["name"] for p in params)
            raise TypeError(f"{self.name}() takes {len(params)} arguments ({names}), not {len(args)}")
        seeds = [a for a, p in zip(args, params) if p["role"].startswith("seed")]
        result, tape = self.forward(*(a for a, p in zip(args, params) if not p["role"].startswith("seed")))
        grads = self.reverse(tape, *seeds)
        values = {**_named(self._part["forward"].spec["returns"], result),
                  **_named(self._part["reverse"].spec["returns"], grads)}
        returns = self.spec["returns"]
        if "struct" in returns:
            return namedtuple(returns["struct"], [f["name"] for f in returns["fields"]])(
                *(values[f["name"]] for f in returns["fields"]))
        return values.get(returns.get("field"))

    def __repr__(self) -> str:
        return f"<adgen split-mode entry {self.name}: {', '.join(self.spec['parts'].values())}>"


class TapeError(RuntimeError):
    """A tape used where the C functions would corrupt memory: reversed twice, reversed after
    being released, never filled, or given to another entry than the one that filled it."""


class Tape:
    """The memory of one split-mode forward sweep (16-byte aligned, as the C functions want it),
    and where it stands: empty, holding a forward sweep (with the arguments its pointers point
    into, kept alive), then reversed or released. The C functions trust the caller to reverse a
    tape once; this object keeps that promise for Python callers, under a lock, since ctypes lets
    other threads run during the call. What a tape holds is released by the reverse sweep, by
    `release()`, or when the tape is garbage-collected (by NAME_free)."""

    def __init__(self, entry: Split):
        import numpy as np

        size = entry._part["tape_size"]()
        raw = np.zeros(size + 16, np.uint8)
        start = -raw.ctypes.data % 16
        self._memory, self._raw, self._entry = raw[start:start + size], raw, entry
        self._lock, self._state, self._arguments = threading.Lock(), "empty", ()

    @property
    def state(self) -> str:
        """'held' (reversible), 'reversed', 'released', or 'empty' (its forward sweep failed)."""
        return self._state

    def _hold(self, arguments: tuple) -> None:
        self._state, self._arguments = "held", arguments  # the shadows stay valid until the reverse sweep

    @contextmanager
    def _use(self, entry: Split, what: str):
        """Runs the body on a tape holding `entry`'s forward sweep, which is spent afterwards."""
        if self._entry is not entry:
            raise TapeError(f"{entry.name}.{what}(): this tape is from {self._entry.name}.forward(), "
                            f"not {entry.name}.forward()")
        with self._lock:
            if self._state != "held":
                raise TapeError(f"{entry.name}.{what}(): this tape was {self._state} already; a tape is reversed or "
                                f"released once (call {entry.name}.forward() again for another)"
                                if self._state != "empty" else
                                f"{entry.name}.{what}(): this tape holds no forward sweep")
            yield
            self._state, self._arguments = ("reversed" if what == "reverse" else "released"), ()

    def release(self) -> None:
        """Releases what the tape holds without reversing it; reversing it afterwards raises."""
        self._entry.release(self)

    def __del__(self):
        if getattr(self, "_state", None) == "held":  # straight to C: at exit, imports may be gone
            self._entry._part["free"]._c(self._memory.ctypes.data)

    def __repr__(self) -> str:
        return f"<adgen tape of {self._entry.name}, {self._state}>"


def _tape(tape, entry: Split) -> Tape:
    if not isinstance(tape, Tape):
        raise TypeError(f"{entry.name}: a tape is what {entry.name}.forward() returns, not {type(tape).__name__}")
    return tape


def _named(returns: dict, value) -> dict:
    """A returned value by field name."""
    if "struct" in returns:
        return dict(value._asdict())
    return {returns["field"]: value} if "field" in returns else {}


def _takes_tape(spec: dict) -> bool:
    """A split-mode part that takes a tape: called only through its entry's `Split`."""
    return spec.get("part") in ("forward", "reverse", "free")


def _check_derivative_arrays(function: str, params: list[dict], args: tuple, width: int) -> None:
    """What the C code would otherwise get wrong, silently or fatally, for derivative arrays:
    each holds as many elements as its primal (times the lanes it interleaves; a scalar's, one
    per lane). A shadow, which reverse mode always writes, is also writeable and shares no
    memory with a primal array, nor with another shadow unless their primals overlap the same
    way (aliased primals have shadows aliased alike); a tangent may be read only (the tangent of
    a `const` input: `f_dir(x, x, n)` is the derivative along x). How many elements the C code
    reads through a primal pointer is the caller's to get right, as in C."""
    import numpy as np

    given = {p["name"]: a for p, a in zip(params, args)}
    primals = [(p["name"], a) for p, a in zip(params, args) if not p["role"] and isinstance(a, np.ndarray)]
    seen = []
    for p, a in zip(params, args):
        role = p["role"]
        if not role.startswith(("shadow", "tangent")) or not isinstance(a, np.ndarray):
            continue
        owner = given.get(role.split(" of ", 1)[1].split(",")[0])
        lanes = width if "interleaved" in role else 1
        wanted = owner.size * lanes if isinstance(owner, np.ndarray) else lanes if isinstance(owner, (int, float)) \
            else a.size
        if a.size != wanted:
            raise ValueError(f"{function}(): '{p['name']}' has {a.size} elements; as the {role} it must have {wanted}")
        if role.startswith("tangent"):
            continue
        if not a.flags.writeable:
            raise ValueError(f"{function}(): '{p['name']}' is read-only; the gradient is added into it")
        for name, b in primals:
            if np.may_share_memory(a, b):
                raise ValueError(f"{function}(): '{p['name']}' shares memory with '{name}'; a shadow needs memory "
                                 "of its own")
        for name, b, other in seen:
            if np.may_share_memory(a, b) and not (isinstance(owner, np.ndarray) and isinstance(other, np.ndarray)
                                                  and _address(a) - _address(b) == _address(owner) - _address(other)):
                raise ValueError(f"{function}(): '{p['name']}' shares memory with '{name}', though their primals "
                                 "do not overlap so")
        seen.append((p["name"], a, owner))


def _address(array) -> int:
    return array.ctypes.data


def _scalar(ffi: str):
    if ffi not in _SCALARS:
        raise TypeError(f"adgen.load cannot pass a C value of kind '{ffi}' through ctypes")
    return _SCALARS[ffi]


def _argtype(param: dict):
    if not param["ffi"]:
        raise TypeError(f"adgen.load cannot pass parameter '{param['name']}': it is passed by value, of a type ctypes "
                        "cannot make (a C++ class with a std::vector in it, say); call this function from C or C++")
    return ctypes.c_void_p if param["ffi"].startswith("ptr") else _value_type(param)


def _value_type(entry: dict):
    """The ctypes type of a value passed or returned by value: a scalar, a struct (a ctypes
    Structure of its fields, nested alike) or a complex number (a pair, as C lays it out)."""
    ffi = entry["ffi"]
    if ffi == "struct":
        return _structure("struct", entry["fields"])
    if ffi.startswith("complex:"):
        part = _scalar(ffi.partition(":")[2])
        return type(ffi, (ctypes.Structure,), {"_fields_": [("real", part), ("imag", part)]})
    return _scalar(ffi)


def _structure(name: str, fields: list[dict]):
    """A ctypes Structure with the manifest's fields (arrays of `count` elements)."""
    members = [(f["name"], _value_type(f) * f["count"] if f["count"] > 1 else _value_type(f)) for f in fields]
    return type(name, (ctypes.Structure,), {"_fields_": members})


def _argument(value, param: dict, ctype, function: str):
    ffi = param["ffi"]
    if not ffi.startswith("ptr"):
        return _to_c(value, ctype, param["name"], function)
    if value is None or isinstance(value, (ctypes.Array, ctypes._Pointer, int)):
        return ctypes.cast(value, ctypes.c_void_p) if isinstance(value, (ctypes.Array, ctypes._Pointer)) else value
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is optional
        raise TypeError(f"{function}(): pass a ctypes array for pointer '{param['name']}' (or install numpy)")
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{function}(): pointer parameter '{param['name']}' takes a NumPy array (written in place), "
                        f"not {type(value).__name__}")
    element = ffi.partition(":")[2]
    wanted = NUMPY_DTYPES.get(element)
    if wanted and value.dtype != np.dtype(wanted):
        raise TypeError(f"{function}(): '{param['name']}' must be a NumPy array of {wanted}, not {value.dtype}")
    if not value.flags["C_CONTIGUOUS"]:
        raise TypeError(f"{function}(): '{param['name']}' must be C-contiguous (use numpy.ascontiguousarray)")
    return value.ctypes.data


def _to_c(value, t, name: str, function: str):
    """A Python value as ctypes type `t`: a struct from a dict of its fields, an array from a
    sequence, a complex number from any number."""
    if isinstance(value, t) or not issubclass(t, (ctypes.Structure, ctypes.Array)):
        return value
    if issubclass(t, ctypes.Array):
        return t(*(_to_c(x, t._type_, name, function) for x in value))
    if t.__name__.startswith("complex:"):
        value = complex(value)
        return t(value.real, value.imag)
    if not isinstance(value, dict):
        raise TypeError(f"{function}(): struct '{name}' takes a dict of its fields, not {type(value).__name__}")
    known = dict(t._fields_)
    out = t()
    for key, v in value.items():
        if key not in known:
            raise TypeError(f"{function}(): struct '{name}' has no field '{key}' (its fields: {', '.join(known)})")
        setattr(out, key, _to_c(v, known[key], f"{name}.{key}", function))
    return out


def _field(value):
    """A returned C value as Python's: arrays as NumPy arrays, structs as dicts, complex numbers."""
    if isinstance(value, ctypes.Structure):
        if type(value).__name__.startswith("complex:"):
            return complex(value.real, value.imag)
        return {name: _field(getattr(value, name)) for name, _ in value._fields_}
    if isinstance(value, ctypes.Array) and issubclass(value._type_, ctypes.Structure):
        return [_field(v) for v in value]
    if isinstance(value, ctypes.Array):
        try:
            import numpy as np

            return np.array(value[:])
        except ImportError:  # pragma: no cover
            return tuple(value)
    return value
