"""`adgen generate`: annotated C in, checked header and stub file out.

parse (annotations) -> read (prototypes, libclang) -> check -> render. Nothing is written
here; the caller writes every output at once, and only when no stage found an error."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from adgen.base import __version__
from adgen.frontend.abi import Signature
from adgen.frontend.model import Derivation
from adgen.frontend.annotations import find_annotations
from adgen.frontend.checks import (Custom, attach, check_custom, check_entry, check_names, check_nested,
                                   check_overloads)
from adgen.base.diagnostics import AdgenError, Collector, SourceFile, Span, error
from adgen.frontend.prototypes import Prototype, Unit, read_unit
from adgen.frontend.manifest import manifest
from adgen.frontend.languages import refuse_unread
from adgen.frontend.render import output_names, render
from adgen.frontend.rust_closures import closure_template
from adgen.frontend.rust_source import RustUnit, is_rust, read_rust_unit, rust_entry, unclashing
from adgen.frontend.rust_wrappers import by_hand, nested_entry, render_rust
from adgen.base.timing import Stages, plural


@dataclass
class Generated:
    """One source's results: what was checked and the files to write."""

    source: SourceFile
    unit: Unit | None  # None when the source has no annotations (libclang is not run)
    signatures: list[Signature]
    files: dict[Path, str]
    inactive: list[Prototype] = field(default_factory=list)  # marked @inactive
    customs: list[Custom] = field(default_factory=list)  # derivatives written by hand (@derivative)

    def files_in(self, directory: Path) -> dict[Path, str]:
        """The same files made for another directory: `adgen build` lowers them from its work
        directory, as nothing is written to the output directory before the build succeeds."""
        return outputs(self.source, self.unit, self.signatures, directory)


def generate(sources: list[Path], out_dir: Path, flags: list[str], stages: Stages, namespace: str = "",
             closure_calls: dict | None = None) -> list[Generated]:
    """`namespace`: a cargo package's crate, whose Rust sources' C functions it names (`_symbols`);
    `closure_calls`, a crate's: where its targets call the derived functions of closures, by
    source (its resolved path) and derived name (RustUnit.closure_calls)."""
    refuse_unread(sources)
    _check_stems(sources)
    with stages.stage("parse"):
        texts = [_read(path) for path in sources]
        annotations = _each(find_annotations, texts)
    with stages.stage("read", f"{sum(bool(a) for a in annotations)} annotated of {len(sources)}"):
        made = frozenset(output_names(src.path)[0] for src in texts if not is_rust(src.path))
        units = [read_rust_unit(src, found, None if closure_calls is None else closure_calls.get(src.path.resolve(), {}),
                                closure_template) if is_rust(src.path) and found else None if is_rust(src.path) else
                 _read_c(src, found, flags, made) for src, found in zip(texts, annotations)]
    with stages.stage("check"):
        problems = Collector()
        for unit in units:
            if unit is not None and unit.errors:
                problems.diagnostics += unit.errors
        checked, nested, inactive, customs = [], [], {}, {}
        headers = HeaderAnnotations()
        for unit, found in zip(units, annotations):
            if unit is not None:
                for annotation, entry, function in attach(unit, found, problems) + headers.pairs(unit, problems):
                    if isinstance(unit, RustUnit) and annotation.marker != "@inactive":
                        entry = rust_entry(annotation, entry, function, unit, problems)
                        if entry is None:
                            continue
                    if annotation.marker == "@inactive":
                        inactive.setdefault(id(unit), {})[function.name] = function
                        continue
                    if annotation.marker == "@derivative":
                        custom = check_custom(entry, function, unit, problems,
                                              by_hand(unit) if isinstance(unit, RustUnit) else None)
                        if custom is not None:
                            customs.setdefault(id(unit), []).append(custom)
                            if isinstance(unit, RustUnit):  # (its wrappers hold the glue calling it)
                                unit.by_hand.append(custom)
                        continue
                    if entry.of is not None:  # a derivative of a derived function: once that one is checked
                        nested.append((entry, unit))
                        continue
                    d = check_entry(entry, function, problems)
                    checked.append((unclashing(d) if d is not None and isinstance(unit, RustUnit) else d, entry, unit))
        derived = [(d, unit) for d, _, unit in checked if d is not None]
        derived += check_nested(nested, checked, problems,
                                lambda e, inner, unit: nested_entry(e, inner, unit, problems)
                                if isinstance(unit, RustUnit) else e)
        derived = _symbols(check_overloads(derived, problems), namespace)
        signatures = check_names(derived, problems)
        if problems.diagnostics and any(u is not None and u.errors and not isinstance(u, RustUnit) for u in units):
            problems = _recheck_c(units, signatures, derived, out_dir, flags, problems)
        problems.raise_if_any()
    for remark in headers.unmade() + [r for u in units if isinstance(u, RustUnit) for r in u.remarks]:
        stages.remark(remark)
    with stages.stage("render", plural(len(signatures), "derivative function")):
        results = []
        for src, unit in zip(texts, units):
            mine = _of_unit(signatures, derived, unit) if unit else []
            results.append(Generated(src, unit, mine, outputs(src, unit, mine, out_dir),
                                     list(inactive.get(id(unit), {}).values()), customs.get(id(unit), [])))
    return results


def _symbols(derived: list[tuple[Derivation, Unit]], namespace: str) -> list[tuple[Derivation, Unit]]:
    """Rust sources' derived functions, whose names are Rust's, scoped by their module, are C
    functions of names of their own where several sources are built together or a crate's are
    (`grad__adgen_safe`, `grad__adgen_mycrate_model`): two modules may both derive `grad`, and
    two crates linked into one program may too. Their wrappers keep the Rust names
    (RustUnit.symbol_tag)."""
    rust = {id(unit): unit for _, unit in derived if isinstance(unit, RustUnit)}
    if not namespace and len(rust) < 2:
        return derived
    for unit in rust.values():
        unit.symbol_tag = "__adgen_" + re.sub(r"\W", "_", f"{namespace}_{unit.source.path.stem}".lstrip("_"))
    return [(_tagged(d, unit.symbol_tag) if id(unit) in rust else d, unit) for d, unit in derived]


def _tagged(d: Derivation, tag: str) -> Derivation:
    """`d` with its C name tagged, and its inner derivation's (an `of` entry's primal is that one's
    derived function)."""
    if d.inner is None:
        return replace(d, name=d.name + tag)
    inner = _tagged(d.inner, tag)
    return replace(d, name=d.name + tag, inner=inner, primal=replace(d.primal, name=inner.name))


def _read_c(src: SourceFile, found: list, flags: list[str], made: frozenset[str]) -> Unit | None:
    """A C or C++ source read, where it has annotations or includes a header of the project that
    has (else None: nothing to derive)."""
    unit = read_unit(src, flags, made)
    return unit if found or unit.headers else None


class HeaderAnnotations:
    """Annotations in the project's headers (specs/annotations.md): an entry is made by the
    source of the build that defines its function, or, for a function the header defines
    (inline), by the first source including it; each header's errors reported once."""

    def __init__(self):
        self.found: dict[str, list] = {}  # real path -> its annotations
        self.claimed: set[tuple[str, int]] = set()  # (header, where a function starts): made by a source
        self.wanted: dict[tuple[str, int], tuple] = {}  # ... annotated: (the annotation, the function)

    def pairs(self, unit: Unit, problems: Collector) -> list:
        out = []
        main = os.path.realpath(unit.source.path)
        for path, header in unit.headers.items():
            first = path not in self.found
            if first:
                try:
                    self.found[path] = find_annotations(header.source)
                except AdgenError as exc:
                    problems.diagnostics += exc.diagnostics
                    self.found[path] = []
            view, here, seen = Unit(header.source, header.functions, {}, {}, [], cxx=unit.cxx), set(), Collector()
            attached = attach(view, self.found[path], seen)
            if first:  # (an error in an `#if` branch not taken is none: it stands before nothing; a header's
                # skipped stretches cannot skip annotations as a source's do, as a guard's second time is one)
                problems.diagnostics += [d for d in seen.diagnostics if d.span is None or not any(
                    start <= d.span.offset < end for start, end in header.skipped)]
            for annotation, entry, function in attached:
                key = (path, function.start)
                self.wanted.setdefault(key, (annotation, function))
                where = header.defined_in[header.functions.index(function)]
                if where == main or (where == path and (key not in self.claimed or key in here)):
                    self.claimed.add(key)
                    here.add(key)
                    out.append((annotation, entry, function))
        return out

    def unmade(self) -> list[str]:
        """What the build was asked for in headers and made nowhere: a function defined in none
        of its sources."""
        return [f"{annotation.span.location()}: note: {annotation.marker} of '{function.name}' not made: it is "
                "defined in none of the sources built (the build of the source defining it makes it)"
                for key, (annotation, function) in self.wanted.items() if key not in self.claimed]


def outputs(src: SourceFile, unit: Unit | None, signatures: list[Signature], out_dir: Path) -> dict[Path, str]:
    """The files made for one source, in `out_dir` (the includes they copy from the source are
    rewritten relative to it)."""
    rendered = render(unit or Unit(src, [], {}, {}, []), signatures, out_dir, __version__)
    header, stubs = output_names(src.path)
    if isinstance(unit, RustUnit):  # its wrappers in Rust instead of a C header
        rendered = replace(rendered, header=render_rust(unit, signatures, __version__))
    return {out_dir / header: rendered.header, out_dir / stubs: rendered.stubs,
            out_dir / f"{src.path.stem}.adgen.json": manifest(src.path.name, __version__, signatures,
                                                              getattr(unit, "cxx_library", None))}


def _recheck_c(units, signatures, derived, out_dir, flags, problems: Collector) -> Collector:
    """clang errors seen while the `*.adgen.h` includes of this run's sources (a source's own, or
    another's) were stood in for by empty files may come from that emptiness (a use of a
    generated type or function). If the annotations check out, parse again with the real header
    texts and keep only what remains."""
    if len(problems.diagnostics) != sum(len(u.errors) for u in units if u is not None):
        return problems  # annotation errors too: report everything
    headers = {output_names(u.source.path)[0]: render(u, _of_unit(signatures, derived, u), out_dir, __version__).header
               for u in units if u is not None and not isinstance(u, RustUnit)}
    kept = Collector()
    for unit in units:
        if unit is None or not unit.errors or isinstance(unit, RustUnit):
            kept.diagnostics += unit.errors if isinstance(unit, RustUnit) else []
            continue
        again = read_unit(unit.source, flags, frozenset(headers), headers)
        kept.diagnostics += again.errors
    return kept


def _of_unit(signatures: list[Signature], derived, unit) -> list[Signature]:
    ours = {id(d) for d, u in derived if u is unit}
    return [s for s in signatures if id(s.derivation) in ours]


def _read(path: Path) -> SourceFile:
    try:
        source = SourceFile(path)
        if is_rust(path):
            _utf8(source, path.read_bytes())
        return source
    except FileNotFoundError:
        raise AdgenError(error(f"no such file: {path}"))
    except OSError as exc:
        raise AdgenError(error(f"cannot read {path}: {exc.strerror}"))


def _utf8(source: SourceFile, data: bytes) -> None:
    """A Rust source is UTF-8 (rustc refuses one that is not): an error at its first other byte.
    (C sources are bytes to clang: their stray bytes are read as '?'.)"""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = len(data[:exc.start].decode("utf-8"))  # the character offset: replaced bytes come after it
        raise AdgenError(error("a Rust source must be UTF-8: this byte is not", Span(source, at)))


def _each(parse, sources):
    """Runs a stage on every source, reporting the errors of all of them together."""
    results, problems = [], Collector()
    for src in sources:
        try:
            results.append(parse(src))
        except AdgenError as exc:
            problems.diagnostics += exc.diagnostics
            results.append([])
    problems.raise_if_any()
    return results


def _check_stems(sources: list[Path]) -> None:
    seen: dict[str, Path] = {}
    for path in sources:
        if path.stem in seen:
            raise AdgenError(error(f"{seen[path.stem]} and {path} would both write {path.stem}.adgen.h; "
                                   "run adgen on them separately with different -o directories"))
        seen[path.stem] = path
