"""A bad-input fuzzer for adgen: random mutations of annotated C and Rust sources (annotation
text, activities, widths, names, types in prototypes, declarations' forms, truncation, stray
bytes, line endings, moved or doubled annotations, deleted or duplicated lines, undeclared
identifiers in bodies, the arguments of calls to Enzyme's API) run through `adgen generate` and
`adgen build` (`adgen cc -c` for code written for Enzyme's API), each in a fresh directory with
an empty output directory; and, one run in four, mutations of the command line and the file
system around it (SETUPS: compiler flags before `--`, options a command does not take, an output
folder that is a file or lies under one, an output that is a symlink to another file or is a
folder, odd file names, missing and doubled sources).

    python tests/mutate.py --long 2000            # 2,000 mutations
    python tests/mutate.py --seed 7 --long 200    # another stream
    python tests/mutate.py --seed 7 --only 123    # mutation 123 of that stream again, shown

The seeds are the annotated sources of examples/, specs/golden/, tests/fuzz_regressions/ and the
sources written in the tests; Rust ones only where a rustc adgen can use is found. A run is
`ok` (exit status 0), `rejected` (status 1 with an error located in the user's file,
`FILE:LINE:COL: error:` at a line the file has, or an `adgen: error:` line for whole-file
problems; status 2 with a usage line and its error, argparse's), or `bad`: a Python traceback,
another exit status (an internal error's 70 too), a run past the time limit, an exit 1 without
such an error, a path of adgen's own in the output (its temporary directories `adgen-…`, its
generated files as a diagnostic's place, its templates), any file left in the output directory
or beside the source after an error (what a setup planted aside), or a file written through a
symlink. Permissions are not mutated: these runs are often root's, whom modes do not stop.
With --keep DIR, each bad case is minimized (lines removed while it stays bad for the same
reason) and written to DIR with the command and adgen's output, for triage."""

from __future__ import annotations

import argparse
import ast
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TIMEOUT = 180  # seconds for one adgen command

ANNOTATION = re.compile(r"^[ \t]*//[ \t]*@(?:diff|derivative|inactive)\b.*$", re.M)
ACTIVITY = re.compile(r"\b(const|active|activeonly|dup|duponly|dual|dualonly)\b")
ACTIVITIES = ["const", "active", "activeonly", "dup", "duponly", "dual", "dualonly", "dupv", "shadow", "",
              "active active", "const,", "of", "forward", "->"]
MODE = re.compile(r"\b(forward|reverse|split)\b(\[[^\]\n]*\])?")
WIDTHS = ["[0]", "[1]", "[4]", "[64]", "[65]", "[-2]", "[x]", "[]", "[4", "[99999999999999999999]", "[2][2]",
          " [4]", "[4.5]", "[0x4]"]
ENTRY_NAME = re.compile(r"(?<=[(;])\s*([A-Za-z_]\w*)\s*:")
NAMES = ["", "int", "2bad", "a-b", "x" * 300, "main", "__adgen_kernel_f", "sin", "malloc", "r\u00e9sultat", "of",
         "forward", "while", "fn", "self", "_"]
C_TYPE = re.compile(r"\b(?:const\s+)?(?:double|float|int|long|size_t|unsigned)\b\s*\**")
C_TYPES = ["float ", "int ", "long double ", "struct nowhere *", "double *", "const double *", "_Complex double ",
           "char ", "void ", "double **", "unsigned ", "double [4]", "struct { double x; } ", "undeclared_t ",
           "double (*)(double)", "..."]
RUST_TYPE = re.compile(r"&(?:mut\s+)?\[\w+\]|&(?:mut\s+)?\w+|\b(?:f64|f32|usize|u32|i32|bool)\b")
RUST_TYPES = ["f32", "i32", "&f64", "&mut [f64]", "String", "Vec<f64>", "&[f64; 4]", "*const f64", "impl Into<f64>",
              "(f64, f64)", "Option<f64>", "T", "&&f64", "[f64; 3]", "Box<f64>", "u8"]
STRAY = [b"\x00", b"\xff", b"\x80", b"\xc3", b"\t", b"\r", b"@", b"/*", b'"', b"'", b"\\", b"}", b"{", b"#", b"??=",
         b"\xef\xbb\xbf", b"\x1b[0m", b"`", b"$", b";", b"\n#include <nowhere.h>\n", b"\n#error stray\n"]


@dataclass(frozen=True)
class Seed:
    name: str  # the file name it is written as
    text: str
    home: Path | None = None  # where its quoted includes are found (-I)

    @property
    def rust(self) -> bool:
        return self.name.endswith(".rs")

    @property
    def enzyme(self) -> bool:
        """Code written for Enzyme's C API, which `adgen cc` compiles."""
        return "__enzyme_" in self.text and not self.rust


@dataclass(frozen=True)
class Setup:
    """A mutation of the command line or the file system: files planted in the run's directory
    before adgen runs (relative path -> "file", "dir", or "link:TARGET"), which the judge does not
    count as left behind; arguments added; the output folder and the source's name changed."""
    kind: str
    args: tuple[str, ...] = ()
    out: str = "out"
    name: str | None = None
    plant: tuple[tuple[str, str], ...] = ()


@dataclass
class Mutation:
    index: int
    seed: Seed
    kinds: tuple[str, ...]
    data: bytes
    command: str  # "generate", "build" or "cc"
    setup: Setup | None = None

    @property
    def name(self) -> str:
        """The source's file name in the run's src/."""
        return self.setup.name if self.setup and self.setup.name else self.seed.name

    @property
    def kind(self) -> str:
        return "+".join(self.kinds)


@dataclass
class Verdict:
    outcome: str  # "ok", "rejected" or "bad"
    reason: str = ""  # why bad (or the error, when rejected)
    output: str = ""


@dataclass
class Outcome:
    ok: int = 0
    rejected: int = 0
    bad: list[tuple[Mutation, Verdict]] = field(default_factory=list)
    by_kind: dict[str, Counter] = field(default_factory=dict)
    errors: Counter = field(default_factory=Counter)  # the rejections' first errors, names and numbers left out

    def add(self, m: Mutation, v: Verdict) -> None:
        self.by_kind.setdefault(m.kinds[0], Counter())[v.outcome] += 1
        if v.outcome == "ok":
            self.ok += 1
        elif v.outcome == "rejected":
            self.rejected += 1
            message = re.sub(r"^.*?error: ", "", v.reason)
            self.errors[re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'…'", message))[:100]] += 1
        else:
            self.bad.append((m, v))


# ---------------------------------------------------------------------------------------------- seeds

def seeds(lang: str | None = None) -> list[Seed]:
    """Every annotated source adgen's tree holds, and every program calling Enzyme's API, of one
    language ("c", "rust"), those for `adgen cc` ("cc"), or all; Rust ones only where a rustc
    adgen can use is found."""
    rust = lang != "c" and rust_available()
    found = []
    for folder in (ROOT / "examples", ROOT / "specs" / "golden", HERE / "fuzz_regressions"):
        for path in sorted(folder.rglob("*")):
            if path.suffix in (".c", ".rs") and path.is_file() and "target" not in path.parts:
                text = path.read_text()
                if "@diff" in text or "@derivative" in text or "@inactive" in text or "__enzyme_" in text:
                    found.append(Seed(path.name, text, path.parent))
    for path in sorted(HERE.glob("test_*.py")):
        found += _written_in(path)
    return [s for s in found if (rust or not s.rust) and (lang != "rust" or s.rust) and (lang != "cc" or s.enzyme)]


def _written_in(path: Path) -> list[Seed]:
    """The sources a test file writes as string constants (f-strings left out: they are
    templates); programs calling Enzyme's API after the file's CHECK prelude, where it has one."""
    tree = ast.parse(path.read_text())
    templated = {id(n) for j in ast.walk(tree) if isinstance(j, ast.JoinedStr) for n in ast.walk(j)}
    prelude = next((n.value.value for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
                    and [getattr(t, "id", "") for t in n.targets] == ["CHECK"]), "")
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in templated:
            text = node.value
            if "{" in text and "\n" in text and ("@diff(" in text or "int main" in text and "__enzyme_" in text):
                ext = ".rs" if re.search(r"\bfn\s+\w+\s*[(<]", text) else ".c"
                text = prelude + text if "__enzyme_" in text and "@diff(" not in text else text
                out.append(Seed(f"{path.stem[5:]}_{len(out)}{ext}", text))
    return out


def rust_available() -> bool:
    from adgen.base.diagnostics import AdgenError
    from adgen.base.toolchain import select_rustc

    try:
        select_rustc()
        return True
    except AdgenError:
        return False


# ---------------------------------------------------------------------------------------------- mutations

def _lines(text: str) -> list[str]:
    return text.split("\n")


def _annotations(text: str) -> list[re.Match]:
    return list(ANNOTATION.finditer(text))


def _in_annotation(rng: random.Random, text: str, pattern: re.Pattern, replace) -> str | None:
    """One match of `pattern` inside an annotation line replaced by `replace(rng, match)`."""
    spots = [(a.start() + m.start(), a.start() + m.end(), m) for a in _annotations(text)
             for m in pattern.finditer(a.group(0))]
    if not spots:
        return None
    start, end, m = rng.choice(spots)
    return text[:start] + replace(rng, m) + text[end:]


def annotation_text(rng: random.Random, text: str, rust: bool) -> str | None:
    """A character of an annotation deleted, inserted, swapped or replaced."""
    found = _annotations(text)
    if not found:
        return None
    a = rng.choice(found)
    at = rng.randrange(a.start() + a.group(0).index("@"), a.end())
    op = rng.randrange(4)
    c = rng.choice("(),:;[]->@ x0|=\"'\\")
    if op == 0:
        return text[:at] + text[at + 1:]
    if op == 1:
        return text[:at] + c + text[at:]
    if op == 2 and at + 1 < a.end():
        return text[:at] + text[at + 1] + text[at] + text[at + 2:]
    return text[:at] + c + text[at + 1:]


def activity(rng: random.Random, text: str, rust: bool) -> str | None:
    return _in_annotation(rng, text, ACTIVITY, lambda r, m: r.choice(ACTIVITIES))


def width(rng: random.Random, text: str, rust: bool) -> str | None:
    """A mode's width changed, or one given where the entry names no mode."""
    changed = _in_annotation(rng, text, MODE, lambda r, m: m.group(1) + r.choice(WIDTHS))
    if changed is not None and rng.random() < 0.7:
        return changed
    return _in_annotation(rng, text, re.compile(r"(?<=:)\s*\("),
                          lambda r, m: f" {r.choice(['forward', 'reverse', 'split'])}{r.choice(WIDTHS)} (")


def name(rng: random.Random, text: str, rust: bool) -> str | None:
    """An entry's name made another: empty, a keyword, a name taken, not an identifier."""
    taken = re.findall(r"\b(?:double|float|void|int|fn)\s+\**(\w+)\s*\(", text) + ENTRY_NAME.findall(text)
    return _in_annotation(rng, text, ENTRY_NAME,
                          lambda r, m: " " + r.choice(NAMES + taken if taken else NAMES) + ":")


def prototype_type(rng: random.Random, text: str, rust: bool) -> str | None:
    """A type in the prototype of an annotated function made another."""
    lines = _lines(text)
    annotated = [i + 1 for i, line in enumerate(lines) if ANNOTATION.match(line)]
    spots = []
    for i in annotated:
        while i < len(lines) and ANNOTATION.match(lines[i]):
            i += 1
        if i < len(lines):
            for m in (RUST_TYPE if rust else C_TYPE).finditer(lines[i]):
                spots.append((i, m))
    if not spots:
        return None
    i, m = rng.choice(spots)
    new = rng.choice(RUST_TYPES if rust else C_TYPES)
    lines[i] = lines[i][:m.start()] + new + lines[i][m.end():]
    return "\n".join(lines)


def truncate(rng: random.Random, text: str, rust: bool) -> str | None:
    return text[:rng.randrange(len(text))] if text else None


def stray_bytes(rng: random.Random, text: str, rust: bool) -> bytes | None:
    data = text.encode()
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        stray = rng.choice(STRAY) if rng.random() < 0.8 else bytes([rng.randrange(256)])
        data = data[:at] + stray + data[at:]
    return data


def move_annotation(rng: random.Random, text: str, rust: bool) -> str | None:
    lines = _lines(text)
    at = [i for i, line in enumerate(lines) if ANNOTATION.match(line)]
    if not at:
        return None
    line = lines.pop(rng.choice(at))
    lines.insert(rng.randrange(len(lines) + 1), line)
    return "\n".join(lines)


def double_annotation(rng: random.Random, text: str, rust: bool) -> str | None:
    lines = _lines(text)
    at = [i for i, line in enumerate(lines) if ANNOTATION.match(line)]
    if not at:
        return None
    i = rng.choice(at)
    lines.insert(i if rng.random() < 0.6 else rng.randrange(len(lines) + 1), lines[i])
    return "\n".join(lines)


def delete_line(rng: random.Random, text: str, rust: bool) -> str | None:
    lines = _lines(text)
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def duplicate_line(rng: random.Random, text: str, rust: bool) -> str | None:
    lines = _lines(text)
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return "\n".join(lines)


def undeclared(rng: random.Random, text: str, rust: bool) -> str | None:
    """A statement using an undeclared name in a function's body (a loop's, where there is one),
    or a name in a body's expression replaced by an undeclared one."""
    lines = _lines(text)
    body = [i for i, line in enumerate(lines) if line.startswith((" ", "\t")) and line.strip()
            and not line.strip().startswith(("//", "/*", "*", "#"))]
    if not body:
        return None
    loops = [i for i in body if re.search(r"\b(for|while)\b", lines[i])]
    i = rng.choice(loops + body if loops and rng.random() < 0.5 else body)
    if rng.random() < 0.5:
        names = [m for m in re.finditer(r"\b[a-z_]\w*\b", lines[i])
                 if m.group(0) not in ("for", "while", "if", "return", "let", "mut", "in", "double", "int")]
        if names:
            m = rng.choice(names)
            lines[i] = lines[i][:m.start()] + "zz_undeclared" + lines[i][m.end():]
            return "\n".join(lines)
    indent = re.match(r"[ \t]*", lines[i]).group(0)
    lines.insert(i + 1, indent + ("zz_undeclared += 1.0;" if rust else "zz_undeclared += 1;"))
    return "\n".join(lines)


def signature_form(rng: random.Random, text: str, rust: bool) -> str | None:
    """The annotated function's declaration in another form: qualifiers, attributes, generics,
    a variadic or unprototyped parameter list."""
    lines = _lines(text)
    spots = [i + 1 for i, line in enumerate(lines) if ANNOTATION.match(line) and i + 1 < len(lines)
             and not ANNOTATION.match(lines[i + 1])]
    if not spots:
        return None
    i = rng.choice(spots)
    line = lines[i]
    if rust:
        m = re.search(r"\bfn\s+(\w+)", line)
        if m is None:
            return None
        if rng.random() < 0.5:
            line = line[:m.start()] + rng.choice(SIGNATURE_RUST) + line[m.start():]
        else:
            line = line[:m.end()] + rng.choice(["<T>", "<T: Copy>", "<'a>", "<const N: usize>", "<>"]) + line[m.end():]
    else:
        m = re.search(r"\w+\s*\(", line)
        if m is None:
            return None
        if rng.random() < 0.5:
            line = rng.choice(SIGNATURE_C) + line
        else:
            close = line.rfind(")")
            if close < 0:
                return None
            inside = rng.choice([", ...", "", " void", ", int extra"])
            line = line[:close] + inside + line[close:] if inside != "" else line[:m.end()] + line[close:]
    lines[i] = line
    return "\n".join(lines)


def enzyme_call(rng: random.Random, text: str, rust: bool) -> str | None:
    """An argument of a call to Enzyme's API made another marker, another value, or dropped, or
    the function differentiated made another."""
    calls = [c for c in re.finditer(r"__enzyme_\w+\s*\(([^;]*)\)\s*;", text)  # in a body, not declarations
             if text[text.rfind("\n", 0, c.start()) + 1:][:1] in (" ", "\t")]
    if not calls:
        return None
    call = rng.choice(calls)
    args = [m for m in re.finditer(r"[^,()]+", call.group(1))]
    if not args:
        return None
    a = rng.choice(args)
    start, end = call.start(1) + a.start(), call.start(1) + a.end()
    choice = rng.random()
    if choice < 0.3:
        return text[:start] + text[end:]
    new = rng.choice(ENZYME_ARGS) if choice < 0.8 else rng.choice(["(void *)main", "(void *)printf", "(void *)0",
                                                                    "(void *)sqrt", "(void *)&enzyme_dup"])
    return text[:start] + " " + new + text[end:]


ENZYME_ARGS = ["enzyme_dup", "enzyme_dupnoneed", "enzyme_out", "enzyme_const", "enzyme_width, 4", "enzyme_width",
               "enzyme_primal_return", "enzyme_allocated, 8", "enzyme_tape", "enzyme_dupv", "enzyme_nonsense",
               "1.0", "0", "x", "(double *)0", "enzyme_width, 0", "enzyme_width, 65", "enzyme_const_return"]


SIGNATURE_C = ["static ", "inline ", "static inline ", "extern ", "_Noreturn ", "__attribute__((noinline)) ",
               "__attribute__((always_inline)) ", "__attribute__((weak)) ", "register ", "typedef ", "const ",
               "__declspec(dllexport) ", "_Thread_local "]
SIGNATURE_RUST = ["unsafe ", "async ", "const ", "extern \"C\" ", "pub(crate) ", "#[inline(always)] ", "#[no_mangle] ",
                  "#[cfg(any())] ", "default ", "pub unsafe extern \"C\" "]


def line_endings(rng: random.Random, text: str, rust: bool) -> str | None:
    """Windows line endings, old Mac ones, or no final newline."""
    choice = rng.randrange(3)
    if choice == 0:
        return text.replace("\n", "\r\n")
    if choice == 1:
        return text.replace("\n", "\r")
    return text.rstrip("\n")


# ---------------------------------------------------------------------------------------------- setups

VICTIM = "victim.txt"  # a file outputs are made symlinks to: it must be unchanged after the run
FLAGS = ["-O2", "-O0", "-DFAST", "-Wall", "-fopenmp", "-march=native", "-g", "-std=c11", "-ffast-math", "-c"]
OPTIONS = [("--explain",), ("--emit-llvm",), ("-q",), ("-v",), ("-j", "0"), ("-j", "x"), ("-j", "-3"),
           ("--target", "nonsense-triple"), ("--march", "nonsense"), ("--depfile", "out/no/such/f.d"),
           ("--depfile", ""), ("-o",), ("--",), ("--", "-Wno-such-warning"), ("--", "-include", "nowhere.h"),
           ("--nonsense",), ("-I",), ("-I", "no/such/dir"), ("-D",), ("--version",), ("--help",)]
ODD_NAMES = ["a b.c", 'q"uote.c', "back\\slash.c", "f\u00e9\u03bb.c", "-dash.c", "x.y.c", "tab\t.c", "UPPER.C",
             "semi;colon.c", "dollar$x.c", "new\nline.c", "'single'.c"]


def _outputs(m: Mutation, stem: str) -> list[str]:
    return [f"{stem}.o"] if m.command == "cc" else [f"{stem}.adgen.{e}" for e in ("h", "c", "json", "o")]


def setup(rng: random.Random, m: Mutation) -> Setup:
    """One mutation of the command line or the file system for this run."""
    stem = Path(m.name).stem
    kind = rng.choice(["flag_before_dashes", "option", "out_is_a_file", "out_under_a_file", "output_symlink",
                       "output_is_a_folder", "odd_name", "missing_source", "source_twice", "source_is_a_folder"])
    if kind == "flag_before_dashes":
        return Setup(kind, args=(rng.choice(FLAGS),))
    if kind == "option":
        return Setup(kind, args=rng.choice(OPTIONS))
    if kind == "out_is_a_file":
        return Setup(kind, out="blocker", plant=(("blocker", "file"),))
    if kind == "out_under_a_file":
        return Setup(kind, out="blocker/out", plant=(("blocker", "file"),))
    if kind == "output_symlink":
        target = rng.choice(_outputs(m, stem))
        return Setup(kind, plant=((VICTIM, "file"), (f"out/{target}", f"link:../{VICTIM}")))
    if kind == "output_is_a_folder":
        return Setup(kind, plant=((f"out/{rng.choice(_outputs(m, stem))}", "dir"),))
    if kind == "odd_name":
        return Setup(kind, name=rng.choice(ODD_NAMES).replace(".c", Path(m.seed.name).suffix))
    if kind == "missing_source":
        return Setup(kind, args=("src/nowhere" + Path(m.seed.name).suffix,))
    if kind == "source_twice":
        return Setup(kind, args=(f"src/{m.name}",))
    return Setup(kind, args=("src",))


def plant(s: Setup | None, work: Path) -> set[Path]:
    """The setup's files made in the run's directory; returns their paths."""
    made = set()
    for rel, what in s.plant if s else ():
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if what == "dir":
            path.mkdir()
        elif what == "file":
            path.write_text("planted\n")
        else:
            path.symlink_to(what.removeprefix("link:"))
        made.add(path)
    return made


MUTATORS = {f.__name__: f for f in (annotation_text, activity, width, name, prototype_type, truncate, stray_bytes,
                                     move_annotation, double_annotation, delete_line, duplicate_line, undeclared,
                                     signature_form, line_endings, enzyme_call)}


def mutation(seed: int, index: int, sources: list[Seed], kinds_allowed: list[str] | None = None) -> Mutation:
    """Mutation `index` of the stream `seed`: reproducible on its own (--only)."""
    rng = random.Random(f"{seed}:{index}")
    src = rng.choice(sources)
    text, kinds = src.text, []
    allowed = kinds_allowed or list(MUTATORS)
    for _ in range(1 if rng.random() < 0.75 else 2):
        for kind in rng.sample(allowed, len(allowed)) + list(MUTATORS):  # the first that applies to this source
            changed = MUTATORS[kind](rng, text if isinstance(text, str) else text.decode(errors="replace"), src.rust)
            if changed is not None:
                text, kinds = changed, kinds + [kind]
                break
    data = text if isinstance(text, bytes) else text.encode()
    m = Mutation(index, src, tuple(kinds), data, "cc" if src.enzyme else "build" if rng.random() < 0.65 else "generate")
    if kinds_allowed is None and rng.random() < 0.25:  # the command line or the file system mutated too
        if rng.random() < 0.5:
            m.data, m.kinds = src.text.encode(), ()  # on the source as it was, which would build
        m.setup = setup(rng, m)
        m.kinds = (m.setup.kind,) + m.kinds
    return m


# ---------------------------------------------------------------------------------------------- judging

TRACEBACK = "Traceback (most recent call last)"
LOCATED = re.compile(r"^(?P<path>[^\n:]+):(?P<line>\d+):(?P<col>\d+): error: ", re.M)
OWN_PATHS = [
    (re.compile(r"(?:^|[\s/\\'\"(])adgen-[\w.-]*[/\\]"), "names adgen's temporary directory"),
    (re.compile(r"\.adgen\.(?:c|h|rs|json)(?::\d+)+"), "places a diagnostic in a file adgen generated"),
    (re.compile(r"\.j2\b|[/\\]templates[/\\]"), "names adgen's templates"),
]


def judge(status: int | None, output: str, source: Path, home: Path | None, out_dir: Path,
          planted: set[Path] = frozenset()) -> Verdict:
    """The verdict on one run: `status` None for one past the time limit; `output` its stdout and
    stderr; `source` the mutated file, `home` where its includes are; `out_dir` its outputs;
    `planted` what a setup made before the run."""
    victim = source.parent.parent / VICTIM
    if victim in planted and victim.read_bytes() != b"planted\n":
        return Verdict("bad", "wrote through a symlink into another file", output)
    if status is None:
        return Verdict("bad", "ran past the time limit", output)
    if TRACEBACK in output:
        return Verdict("bad", "a Python traceback", output)
    usage = re.search(r"^(?:usage: .*\n(?:.*\n)*?)?adgen[\w +-]*: error: .*", output, re.M)
    if status == 2 and usage and "usage: " in output:  # a usage error, argparse's (specs/errors.md)
        return Verdict("rejected", usage.group(0).splitlines()[-1], output)
    if status not in (0, 1):
        return Verdict("bad", f"exit status {status}", output)
    for pattern, why in OWN_PATHS:
        if pattern.search(output):
            return Verdict("bad", why, output)
    if status == 0:
        return Verdict("ok", "", output)
    outputs = list(out_dir.iterdir()) if out_dir.is_dir() else []
    left = sorted(p.name for p in outputs + list(source.parent.iterdir()) if p != source and p not in planted)
    if left:
        return Verdict("bad", "left files after an error: " + ", ".join(left), output)
    located = [m for m in LOCATED.finditer(output) if _users(m, source, home)]
    if located:
        return Verdict("rejected", output[located[0].start():].split("\n", 1)[0], output)
    whole = re.search(r"^adgen: error: .*", output, re.M)
    if whole:
        return Verdict("rejected", whole.group(0), output)
    return Verdict("bad", "exit 1 without an error located in the user's file", output)


def _users(m: re.Match, source: Path, home: Path | None) -> bool:
    """Whether a located error is in the user's file (the source, or a header beside its
    original), at a line that file has."""
    where = Path(m.group("path"))
    where = where if where.is_absolute() else source.parent.parent / where
    try:
        mine = where.resolve() == source.resolve() or (home is not None and where.resolve().is_relative_to(home))
        lines = len(re.split(rb"\r\n|\r|\n", where.read_bytes()))  # as C counts them
    except OSError:
        return False
    return mine and 1 <= int(m.group("line")) <= lines


def run(m: Mutation) -> Verdict:
    """The mutated source through adgen in a fresh directory, judged."""
    with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
        work = Path(tmp)
        (work / "src").mkdir()
        (work / "out").mkdir()
        source = work / "src" / m.name
        source.write_bytes(m.data)
        planted = plant(m.setup, work)
        status, output = _adgen(m, work)
        out = work / (m.setup.out if m.setup else "out")
        return judge(status, output, source, m.seed.home, out if out.is_dir() else work / "out", planted)


def command(m: Mutation) -> list[str]:
    """The adgen command, run in the mutation's directory (`adgen cc` compiles to out/)."""
    includes = ["-I", str(m.seed.home)] if m.seed.home else []
    folder = m.setup.out if m.setup else "out"
    out = ["-c", "-o", f"{folder}/{Path(m.name).stem}.o"] if m.command == "cc" else ["-o", folder]
    extra = list(m.setup.args) if m.setup else []
    cut = extra.index("--") if "--" in extra else len(extra)  # (`--` and what follows it go last)
    return [sys.executable, "-m", "adgen.commands.cli", m.command, f"src/{m.name}", *extra[:cut], *out, *includes,
            *extra[cut:]]


def _adgen(m: Mutation, work: Path) -> tuple[int | None, str]:
    try:
        done = subprocess.run(command(m), cwd=work, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        return None, _text(exc.stdout) + _text(exc.stderr)
    return done.returncode, _text(done.stdout) + _text(done.stderr)


def _text(data: bytes | None) -> str:
    return (data or b"").decode(errors="replace")


# ---------------------------------------------------------------------------------------------- minimizing

def minimize(m: Mutation, reason: str) -> Mutation:
    """The mutation with lines removed (halves, then single lines) while it stays bad for the
    same reason."""
    def same(data: bytes) -> bool:
        trial = Mutation(m.index, m.seed, m.kinds, data, m.command, m.setup)
        v = run(trial)
        return v.outcome == "bad" and _reason_kind(v.reason) == _reason_kind(reason)

    lines = m.data.split(b"\n")
    chunk = max(1, len(lines) // 2)
    while chunk >= 1:
        i = 0
        while i < len(lines):
            trial = lines[:i] + lines[i + chunk:]
            if trial and same(b"\n".join(trial)):
                lines = trial
            else:
                i += chunk
        chunk //= 2
    return Mutation(m.index, m.seed, m.kinds, b"\n".join(lines), m.command, m.setup)


def _reason_kind(reason: str) -> str:
    return reason.split(":")[0]


def keep(m: Mutation, v: Verdict, folder: Path, seed: int) -> Path:
    """A bad case, minimized, written to `folder` with its command and adgen's output."""
    small = minimize(m, v.reason)
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"s{seed}_{m.index}_{re.sub(r'[^A-Za-z0-9]', '', _reason_kind(v.reason))[:24]}"
    path = folder / f"{stem}_{re.sub(r'[^A-Za-z0-9_.-]', '_', m.name)}"
    path.write_bytes(small.data)
    again = run(small)
    (folder / f"{stem}.txt").write_text(
        f"mutation {m.index} of seed {seed} ({m.kind}) of {m.seed.name}\n"
        f"in a directory holding src/{m.name} (this file) and an empty out/"
        f"{f', and {dict(m.setup.plant)} planted' if m.setup and m.setup.plant else ''}:\n"
        f"  {' '.join(command(small))}\nbad: {again.reason or v.reason}\n\n{again.output or v.output}")
    return path


# ---------------------------------------------------------------------------------------------- running

def fuzz(count: int, seed: int, jobs: int = 1, lang: str | None = None, progress=None,
         keep_dir: Path | None = None, kinds: list[str] | None = None) -> Outcome:
    sources = seeds(lang)
    mutations = [mutation(seed, i, sources, kinds) for i in range(count)]
    outcome = Outcome()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for n, (m, v) in enumerate(zip(mutations, pool.map(run, mutations)), 1):
            if v.outcome == "bad" and _reason_kind(run(m).reason) != _reason_kind(v.reason):
                v.reason = "not reproduced on a second run: " + v.reason
            outcome.add(m, v)
            if v.outcome == "bad" and keep_dir is not None and not v.reason.startswith("not reproduced"):
                keep(m, v, keep_dir, seed)
            if progress:
                progress(n, outcome)
    return outcome


def report(outcome: Outcome, count: int, seed: int) -> str:
    lines = [f"{count} mutations, seed {seed}: {outcome.ok} ok, {outcome.rejected} rejected with a located error, "
             f"{len(outcome.bad)} bad"]
    lines.append("  by mutation (ok / rejected / bad):")
    for kind, c in sorted(outcome.by_kind.items()):
        lines.append(f"    {kind:18} {c['ok']:5} {c['rejected']:5} {c['bad']:5}")
    lines.append("  the errors rejections began with, most frequent first:")
    lines += [f"    {n:5}  {message}" for message, n in outcome.errors.most_common(15)]
    if outcome.bad:
        lines.append("  bad, by why:")
        for why, n in Counter(_reason_kind(v.reason) for _, v in outcome.bad).most_common():
            lines.append(f"    {n:5}  {why}")
    for m, v in outcome.bad:
        lines.append(f"BAD {m.index} ({m.kind}, {m.seed.name}, adgen {m.command}): {v.reason}")
        lines += ["    | " + line for line in v.output.strip().split("\n")[:6]]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long", type=int, default=200, metavar="N", help="how many mutations (default 200)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="adgen commands at once")
    parser.add_argument("--only", type=int, metavar="I", help="run mutation I of the stream alone, and show it")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="minimize each bad case and write it to DIR")
    parser.add_argument("--lang", choices=("c", "rust", "cc"),
                        help="C or Rust sources only, or the programs for adgen cc (default: all)")
    parser.add_argument("--kinds", type=lambda s: s.split(","), metavar="K,K",
                        help="these mutations only: " + ", ".join(MUTATORS))
    args = parser.parse_args()
    if args.only is not None:
        m = mutation(args.seed, args.only, seeds(args.lang), args.kinds)
        v = run(m)
        print(f"mutation {m.index} ({m.kind}) of {m.seed.name}, adgen {m.command}:\n"
              f"{m.data.decode(errors='replace')}\n---- {v.outcome} {v.reason}\n{v.output}")
        if v.outcome == "bad" and args.keep:
            print("kept:", keep(m, v, args.keep, args.seed))
        return 1 if v.outcome == "bad" else 0

    def progress(done, outcome):
        print(f"\r{done}/{args.long} mutations: {outcome.ok} ok, {outcome.rejected} rejected, {len(outcome.bad)} bad",
              end="", file=sys.stderr, flush=True)

    outcome = fuzz(args.long, args.seed, args.jobs, args.lang, progress if sys.stderr.isatty() else None, args.keep,
                   args.kinds)
    print("\n" + report(outcome, args.long, args.seed))
    return 1 if outcome.bad else 0


if __name__ == "__main__":
    sys.exit(main())
