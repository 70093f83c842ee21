"""`adgen.load`: builds C sources with their derivatives into a shared library (or takes the
objects of an earlier `adgen build`) and calls its functions through ctypes, with the
signatures from the build's manifests. Pointer parameters take NumPy arrays (or ctypes
arrays), which the call reads and writes in place; result structs come back as named tuples.
What C would take on trust is checked first (None for a pointer, an array shorter than
`@size` says, an integer its C type cannot hold); builds are cached where only the user can
write, checked by their digests, and made aside and renamed into place under a lock."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections import namedtuple
from contextlib import contextmanager
from pathlib import Path

from adgen.base import __version__
from adgen.base.diagnostics import AdgenError, error
from adgen.base.mpi_wrapper import mpi_include_flags
from adgen.base.timing import Stages
from adgen.base.cxx_library import LIBSTDCXX, choose, without_stdlib
from adgen.base.toolchain import (USERS_NDEBUG, bundled_cc, cxx_command, cxx_library_flags, cxx_link_flags,
                                  openmp_include_flags, openmp_link_flags, select_compiler, system_flags)
from adgen.base.templates import render_text
from adgen.base.zig_runtimes import run_link
from adgen.commands.load_arguments import (argtype, argument, bind, check_derivative_arrays, check_lengths, from_c,
                                           lengths, pointered, structure, value_type)
from adgen.commands.load_cache import cache_root, locked, record_digests, sweep, verified
from adgen.commands.load_errors import BuildError, CacheError
from adgen.commands.report import diagnostics_text, internal_error_text
from adgen.frontend.languages import is_cxx, is_rust

__all__ = ["BuildError", "CacheError", "Library", "TapeError", "load"]  # adgen's API


def load(path, build_dir=None, flags=()) -> "Library":
    """Builds and loads C sources with their derivatives.

    `path` is a C source, a list of them, or the output directory of an earlier `adgen build`
    (whose `.adgen.o` objects are loaded: the derived functions only). `build_dir` keeps the
    build (default: a private cache directory keyed by the sources' contents and paths);
    `flags` are extra compiler flags such as `["-Iinclude", "-DN=4"]`."""
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
    from adgen.frontend.annotations import size_items  # (lark: not for `import adgen`)

    texts = [p.read_text() for p in paths]
    sizes = {p.stem: size_items(text) for p, text in zip(paths, texts)}
    if build_dir:
        return _load_into(Path(build_dir), paths, list(flags), sizes)
    return _load_cached(paths, texts, list(flags), sizes)


def _load_cached(paths: list[Path], texts: list[str], flags: list[str], sizes: dict) -> "Library":
    """The library of a folder of the private cache keyed by adgen, the flags and the sources,
    built there (aside, then renamed into place) unless it holds a build whose files still have
    their digests; under the key's lock, so that concurrent loads build once."""
    library = repr(_cxx_library(flags)) if any(is_cxx(p) for p in paths) else ""  # (CXX may change between loads)
    key = hashlib.sha256("\0".join([__version__, _fingerprint(), *flags, library, *(str(p.resolve()) for p in paths),
                                     *texts]).encode()).hexdigest()[:32]
    root = cache_root()
    out = root / key
    with locked(root / f"{key}.lock"):
        files = verified(out)
        if files is None:
            for stale in [out, *root.glob(f"{key}.build-*")]:  # (a build cut short, or a killed process's)
                shutil.rmtree(stale, ignore_errors=True)
            aside = Path(tempfile.mkdtemp(prefix=f"{key}.build-", dir=root))
            files = ["libadgen.so", *(f"{p.stem}.adgen.json" for p in paths)]
            try:
                _build(paths, aside, flags, aside / "libadgen.so")
                record_digests(aside, files)
                os.rename(aside, out)
            finally:
                shutil.rmtree(aside, ignore_errors=True)
            sweep(root, keep=key)  # (once per build: the cache does not grow for ever)
        os.utime(out)  # (when it was last loaded: what `sweep` goes by)
        return Library(out / "libadgen.so", [out / f for f in files if f.endswith(".adgen.json")], sizes=sizes)


def _load_into(out: Path, paths: list[Path], flags: list[str], sizes: dict) -> "Library":
    """A build into the user's `build_dir`, made in a folder inside it and then moved in (the
    library last), each file by a rename, under a lock: no load opens a library half written."""
    out.mkdir(parents=True, exist_ok=True)
    with locked(out):
        for stale in out.glob(".adgen-build-*"):  # (a killed process's)
            shutil.rmtree(stale, ignore_errors=True)
        aside = Path(tempfile.mkdtemp(prefix=".adgen-build-", dir=out))
        try:
            _build(paths, aside, flags, aside / "libadgen.so")
            for made in sorted(aside.iterdir(), key=lambda f: f.name == "libadgen.so"):
                os.replace(made, out / made.name)
        finally:
            shutil.rmtree(aside, ignore_errors=True)
        return Library(out / "libadgen.so", [out / f"{p.stem}.adgen.json" for p in paths], sizes=sizes)


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
    compiler = select_compiler(None)
    flags = [*flags, *openmp_include_flags(compiler, flags)]
    flags += mpi_include_flags(sources, flags)
    _derive(sources, out, flags)
    cc = list(bundled_cc())
    cxx = list(cxx_command(compiler))  # (C++ sources: their library's headers, and linked with it)
    chosen = _cxx_library(flags) if any(is_cxx(s) for s in sources) else None  # (the derivatives' C++ library)
    objects = []
    for src in sources:
        obj = out / f"{src.stem}.o"
        compiled = _keeping_primals(src, out) if is_cxx(src) else src
        own = [*without_stdlib(flags), *cxx_library_flags(compiler, chosen, flags)] if is_cxx(src) else flags
        _run([*(cxx if is_cxx(src) else cc), "-c", "-O2", "-fPIC", *USERS_NDEBUG, *own, "-iquote", str(out),
              "-iquote", str(src.parent), str(compiled), "-o", str(obj)])
        objects.append(str(obj))
    _run([*(cxx if chosen else cc), "-shared", *_link_mode(flags), *objects,
          *(str(out / f"{s.stem}.adgen.o") for s in sources), *openmp_link_flags(compiler, flags),
          *(cxx_link_flags(compiler, chosen) if chosen else []), "-o", str(library), "-lm"], link=True)


def _link_mode(flags: list[str]) -> list[str]:
    """The optimization level of the compiles (-O2, or the user's), for the link too: to zig's
    driver it picks the mode of the runtimes it links (compiler-rt, the bundled libc++), which it
    builds once per mode. With none, a link is zig's debug mode: a debug libc++ built besides the
    -O2 one the compiles' level asks for (minutes), and its UBSan runtime."""
    return ["-O2", *(f for f in flags if f.startswith("-O"))]  # (the last wins, as in the compiles)


def _cxx_library(flags: list[str]):
    """The C++ library C++ sources are compiled against (base/cxx_library.py); a wrong
    `-stdlib=`, or none found where one is asked for, a BuildError."""
    try:
        return choose(flags)
    except AdgenError as exc:
        raise BuildError(diagnostics_text(exc.diagnostics), exc.diagnostics) from exc


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
        build(sources, out, list(system_flags(compiler)), [], flags, compiler, Stages(), explain=False)
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
    libraries = {m.name.removesuffix(".adgen.json"): json.loads(m.read_text()).get("cxx_library") for m in manifests}
    named = {name: stem for stem, name in libraries.items() if name}
    link = []
    try:
        if len(named) > 1:  # (a C++ class of one library handed to derivatives compiled for the other's)
            raise AdgenError(error(" and ".join(f"{stem}.adgen.o was compiled against {name}"
                                                for stem, name in sorted((s, n) for n, s in named.items())) +
                                   f" (in {folder}): one program cannot use both C++ libraries; build them again "
                                   "against the same one (adgen build --cxx-library=...)"))
        if LIBSTDCXX in named:  # (what its objects call of libstdc++'s shared library)
            link = cxx_link_flags(select_compiler(None), choose([f"-stdlib={LIBSTDCXX}"]))
    except AdgenError as exc:
        raise BuildError(diagnostics_text(exc.diagnostics), exc.diagnostics) from exc
    library = folder / "libadgen-derivatives.so"
    fd, aside = tempfile.mkstemp(prefix=".libadgen-derivatives.", suffix=".so", dir=folder)
    os.close(fd)
    try:  # (linked aside and renamed: another load of the folder may be opening it)
        _run([*(cxx_command(select_compiler(None)) if link else bundled_cc()), "-shared", "-O2", *map(str, objects),
              *link, "-o", aside, "-lm"], link=True)  # (-O2: the runtimes adgen build's objects are linked with)
        os.replace(aside, library)
    finally:
        if os.path.exists(aside):
            os.unlink(aside)
    return Library(library, manifests, derived_only=True)


def _run(command: list[str], link: bool = False) -> None:
    """A compile, or a `link`: the first one to build a runtime zig caches says so (zig_runtimes.py)."""
    done = (run_link if link else subprocess.run)(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise BuildError(done.stderr)


class Library:
    """The functions of a built library: `lib.NAME(...)` calls one; `lib.functions` lists them.
    A split-mode entry is one object (`Split`): its forward, reverse and free functions take a
    tape, which only that object hands out and checks, so they are not attributes of their own."""

    def __init__(self, path: Path, manifests: list[Path], derived_only: bool = False,
                 sizes: dict[str, list[str]] | None = None):
        """`sizes`: by source stem, the `@size(p=n)` items of its text, the lengths of pointer
        parameters that calls are checked against."""
        self.path = Path(path)
        self._dll = ctypes.CDLL(str(self.path))
        self._specs: dict[str, dict] = {}
        self._all: dict[str, dict] = {}  # (with the primals: what the derived functions' parameters are of)
        self._sizes: dict[str, list[str]] = {}
        for m in manifests:
            stem = Path(m).name.removesuffix(".adgen.json")
            for name, spec in json.loads(Path(m).read_text())["functions"].items():
                self._all[name], self._sizes[name] = spec, (sizes or {}).get(stem, [])
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
            self._calls[name] = CFunction(name, spec, found, lengths(self._all, name, self._sizes[name]),
                                          pointered(self._all, name))
        return self._calls[name]

    def __dir__(self):
        return [*super().__dir__(), *self.functions]

    def __repr__(self) -> str:
        return f"<adgen library {self.path} with {', '.join(self.functions)}>"


class CFunction:
    """One C function: binds and converts arguments, checks what C would take on trust, calls,
    and converts the result."""

    def __init__(self, name: str, spec: dict, c_function, lengths: list = (), pointered: set[int] = frozenset()):
        self.name, self.spec, self._c, self._lengths = name, spec, c_function, list(lengths)
        self._pointered = pointered
        self._params = spec["params"]
        self._types = [argtype(p) for p in self._params]
        c_function.argtypes = self._types
        returns = spec["returns"]
        self._result = None
        if "struct" in returns:
            self._struct = structure(returns["struct"], returns["fields"])
            self._result = namedtuple(returns["struct"], [f["name"] for f in returns["fields"]])
            c_function.restype = self._struct
        else:
            c_function.restype = None if returns["ffi"] == "void" else value_type(returns)
        params = ", ".join(f"{p['name']}: {p['ffi']}" for p in self._params)
        self.__doc__ = f"{name}({params})" + (f"  [{spec['mode']} mode, width {spec['width']}, derivative of "
                                             f"{spec['of']}]" if spec["kind"] == "derived" else "")

    def __call__(self, *args, **kwargs):
        args = bind(self.name, self._params, args, kwargs)
        converted = [argument(a, p, t, self.name, i in self._pointered)
                     for i, (a, p, t) in enumerate(zip(args, self._params, self._types))]
        check_derivative_arrays(self.name, self._params, args, self.spec.get("width", 1))
        check_lengths(self.name, self._params, converted, args, self._lengths)
        value = self._c(*converted)
        if self._result is None:
            return from_c(value)
        return self._result(*(from_c(getattr(value, f)) for f in self._result._fields))

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

    def forward(self, *args, **kwargs):
        forward = self._part["forward"]
        args = bind(f"{self.name}.forward", forward._params[:-1], args, kwargs)  # (all but the tape)
        tape = Tape(self)
        value = forward(*args, tape._memory)
        tape._hold(tuple(args))
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

    def __call__(self, *args, **kwargs):
        params = self.spec["params"]
        args = bind(self.name, params, args, kwargs)
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


