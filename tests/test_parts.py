"""The derivative module optimized and compiled in parts at the same time (ir_ad/parts.py plans
the cut, ir/split.py cuts the text, cc1.py joins the objects): each part is valid IR, the
functions that would be inlined stay together, what the parts share is one definition, and the
joined object computes what the module compiled whole computes."""

from __future__ import annotations

import ctypes
import platform
import re
import subprocess

import pytest

from adgen.base.toolchain import bundled_cc, select_compiler
from adgen.ir_ad import optimize, parts
from adgen.ir_ad.cc1 import Cc1
from adgen.ir_ad.ir import split
from conftest import ROOT

LINUX = platform.system() == "Linux"


def _straight_line(name: str, n: int, callee: str | None = None, calls: int = 1) -> str:
    """A function of `n` dependent floating-point operations (its size is what a part costs),
    logging through the small `push` and calling `callee` `calls` times."""
    lines = [f"define internal double @{name}(double %x) {{", "  %v0 = fadd double %x, 1.0"]
    for i in range(1, n):
        lines.append(f"  %v{i} = fmul double %v{i - 1}, 0x3FF0000000000001" if i % 2 else
                     f"  %v{i} = fadd double %v{i - 1}, 1.5")
    last = f"%v{n - 1}"
    lines.append(f"  call void @push(double {last})")
    for k in range(calls if callee else 0):
        lines.append(f"  %c{k} = call double @{callee}(double {last})")
        lines.append(f"  %s{k} = fadd double {last}, %c{k}")
        last = f"%s{k}"
    lines += [f"  ret double {last}", "}"]
    return "\n".join(lines)


# A derivative's kernel: its forward sweep, then its reverse sweep, each called once.
KERNEL = "\n".join(["define internal double @kernel(double %x) {", "  %a = call double @aug(double %x)",
                     "  %r = call double @rev(double %a)", "  ret double %r", "}"])

# What a reverse-mode derivative looks like to the cut: an exported entry, its kernel calling the
# forward sweep and the reverse sweep once each, the reverse sweep calling a large callee from two
# sites, and a small runtime function (`push`) they all call, writing a global the parts share.
MODULE = "\n".join([
    "@state = internal global double 0.0, align 8",
    '@message = private unnamed_addr constant [3 x i8] c"ok\\00"',
    "define internal void @push(double %v) {",
    "  %old = load double, ptr @state, align 8",
    "  %new = fadd double %old, %v",
    "  store double %new, ptr @state, align 8",
    "  ret void",
    "}",
    _straight_line("aug", 1800),
    _straight_line("rev", 1800, callee="callee", calls=2),
    _straight_line("callee", 700),
    _straight_line("unused", 900),  # a source function nothing visible calls: dropped, in no part
    KERNEL,
    "define double @entry(double %x) {",
    "  store double 0.0, ptr @state, align 8",
    "  %k = call double @kernel(double %x)",
    "  %s = load double, ptr @state, align 8",
    "  %t = fadd double %k, %s",
    "  ret double %t",
    "}",
    "define double @state_now() {",
    "  %s = load double, ptr @state, align 8",
    "  ret double %s",
    "}",
    "define ptr @greeting() {",
    "  ret ptr @message",
    "}",
])


def _pieces(text: str = MODULE):
    return split.live(split.read_pieces(text))


def test_the_plan_parts_the_forward_and_reverse_sweeps_and_copies_small_functions():
    cut = parts.plan(_pieces(), count=2)
    assert cut is not None
    owner = cut.owner()
    assert owner["@kernel"] == owner["@aug"] == owner["@entry"]  # the kernel inlines its forward sweep
    assert owner["@rev"] != owner["@aug"]
    assert cut.copied == {"@push"}  # small, only called: a copy in each part to inline
    assert "@unused" not in owner  # nothing visible reaches it
    assert cut.describe().startswith("in 2 parts of about ")


def test_how_many_parts_the_module_alone_decides(monkeypatch):
    """One part per parts.PART instructions (the same object on any machine): none for a small
    module, two for twice that."""
    assert parts.plan(_pieces()) is None  # some 4,300 instructions
    monkeypatch.setattr(parts, "PART", 2000)
    assert len(parts.plan(_pieces()).parts) == 2
    small = "define double @f(double %x) {\n  %y = fadd double %x, 1.0\n  ret double %y\n}"
    assert parts.plan(_pieces(small)) is None


def test_a_callee_with_one_call_site_stays_with_its_caller():
    """Below the kernel, a function called once goes where its caller goes (LLVM inlines it)."""
    once = MODULE.replace(_straight_line("rev", 1800, callee="callee", calls=2),
                          _straight_line("rev", 1800, callee="callee", calls=1))
    owner = parts.plan(_pieces(once), count=3).owner()
    assert owner["@callee"] == owner["@rev"]
    owner = parts.plan(_pieces(), count=3).owner()  # called twice: it may part, the three balanced
    assert len({owner["@callee"], owner["@rev"], owner["@aug"]}) == 3


def test_parts_come_in_powers_of_two(monkeypatch):
    """Three parts on two cores take as long as four: a module of three parts' size is cut in two."""
    monkeypatch.setattr(parts, "PART", 1400)  # (some 4,300 instructions: three parts' worth)
    assert len(parts.plan(_pieces()).parts) == 2


# An OpenMP region's reverse sweep as a derivative holds it: the reverse sweep calls its team
# function once (one thread) and passes its address to the runtime (a team); the team function
# calls the large region sweep once. The region may go to a part of its own, with its team
# function: its caller cannot inline it.
REGION = "\n".join([
    "declare void @fork(ptr)",
    _straight_line("aug", 1500),
    _straight_line("region", 1500),
    _straight_line("sweep", 1500),
    "define internal double @team(double %x) {",
    "  %r = call double @region(double %x)",
    "  ret double %r",
    "}",
    "define internal double @rev(double %x) {",
    "  call void @fork(ptr @team)",
    "  %r = call double @team(double %x)",
    "  %s = call double @sweep(double %r)",
    "  ret double %s",
    "}",
    KERNEL,
    "define double @entry(double %x) {",
    "  %k = call double @kernel(double %x)",
    "  ret double %k",
    "}",
])


def test_a_function_whose_address_is_taken_parts_from_its_caller():
    pieces = _pieces(REGION)
    assert {p.name for p in pieces if "@team" in p.addressed} == {"@rev"}  # (a call names it too)
    owner = parts.plan(pieces, count=3).owner()
    assert owner["@team"] == owner["@region"]  # LLVM inlines the region into its team function
    assert owner["@sweep"] == owner["@rev"]  # and a function called once into its caller
    assert len({owner["@aug"], owner["@rev"], owner["@region"]}) == 3


def test_each_part_is_valid_ir_and_what_parts_share_is_defined_once():
    pieces = _pieces()
    cut = parts.plan(pieces, count=2)
    texts = split.part_texts(pieces, cut.owner(), cut.copied, 2, "t3st")
    for text in texts:
        optimize.parse(text)  # parses and verifies, or raises
    rev_home = cut.owner()["@rev"]
    defines = [set(re.findall(r"^define [^@]*(@\"[^\"]+\"|@[\w.]+)\(", t, re.M)) for t in texts]
    assert '@"rev.adgen.t3st"' in defines[rev_home]  # called from the other part: renamed, hidden
    assert re.search(r'^define hidden double @"rev\.adgen\.t3st"', texts[rev_home], re.M)
    assert re.search(r'^declare hidden double @"rev\.adgen\.t3st"\(double %x\)$', texts[1 - rev_home], re.M)
    assert all("@push" in d for d in defines)  # copied: internal in each
    assert re.search(r'^@"state\.adgen\.t3st" = hidden global double', texts[0], re.M)
    assert re.search(r'^@"state\.adgen\.t3st" = external hidden global double', texts[1], re.M)
    assert all("@message = private unnamed_addr constant" in t for t in texts)  # copies no one can tell apart
    assert all("@unused" not in t for t in texts)


def test_metadata_naming_an_internal_function_keeps_it_in_every_part():
    """`!callees` (the functions a call through a pointer may reach) names functions the optimizer
    may have inlined everywhere: each part copies the metadata, so each must define or declare them."""
    text = MODULE + "\n" + "\n".join([
        "define internal double @only_named(double %x) {", "  ret double %x", "}",
        "define double @through(ptr %f, double %x) {", "  %r = call double %f(double %x), !callees !0", "  ret double %r",
        "}", "!0 = !{ptr @only_named}"])
    pieces = _pieces(text)
    assert "@only_named" in {p.name for p in pieces}  # (named by metadata alone: not dropped)
    cut = parts.plan(pieces, count=2)
    for part in split.part_texts(pieces, cut.owner(), cut.copied, 2, "t3st"):
        optimize.parse(part)  # parses and verifies: @only_named (renamed) defined or declared


def test_a_declaration_keeps_what_calls_need_of_a_define_line():
    line = ('define internal fastcc noundef double @"f\'rev"(ptr noalias captures(none) %a, double %x) '
            'unnamed_addr #3 personality ptr @__gxx_personality_v0 !dbg !12 {')
    assert split.declaration(line, crossing=True) == \
        'declare hidden fastcc noundef double @"f\'rev"(ptr noalias captures(none) %a, double %x) #3'
    weak = 'define weak_odr dso_local double @g(double %x) "disable-tail-calls"="true" {'
    assert split.declaration(weak, crossing=False) == "declare dso_local double @g(double %x)"


def test_modules_parts_cannot_copy_or_split_are_compiled_whole():
    assert split.splittable(MODULE)
    assert not split.splittable(MODULE + "\n@alias = internal alias double (double), ptr @aug")
    assert not split.splittable(MODULE.replace("ret void", "store ptr blockaddress (@aug, %bb), ptr null\n  ret void"))
    assert not split.splittable(MODULE + '\n@llvm.global_ctors = appending global [0 x { i32, ptr, ptr }] zeroinitializer')


@pytest.mark.skipif(not LINUX, reason="parts are joined by ELF's relocatable link")
@pytest.mark.slow
def test_the_joined_object_computes_what_the_whole_module_computes(tmp_path, monkeypatch):
    chosen = optimize.machine(None, None)
    tm, cc1 = optimize.create(chosen), Cc1.bundled(select_compiler(None), chosen)
    exported = {"entry", "state_now", "greeting"}
    whole, how_whole = optimize.compile_text(MODULE, exported, tm, jobs=2, cc1=cc1)
    monkeypatch.setattr(parts, "PART", 2000)
    joined, how = optimize.compile_text(MODULE, exported, tm, jobs=2, cc1=cc1)
    one_at_a_time, _ = optimize.compile_text(MODULE, exported, tm, jobs=1, cc1=cc1)
    assert how_whole == "in one part" and how.startswith("in 2 parts"), how
    assert joined == one_at_a_time  # how many run at once changes nothing
    results = []
    for name, code in (("whole", whole), ("joined", joined)):
        (tmp_path / f"{name}.o").write_bytes(code)
        subprocess.run([*bundled_cc(), "-shared", str(tmp_path / f"{name}.o"), "-o", str(tmp_path / f"lib{name}.so")],
                       check=True, capture_output=True)
        lib = ctypes.CDLL(str(tmp_path / f"lib{name}.so"))
        lib.entry.restype = lib.state_now.restype = ctypes.c_double
        lib.entry.argtypes = [ctypes.c_double]
        results.append((lib.entry(0.25), lib.state_now()))
    assert results[0] == results[1]
    assert results[0][1] != 0.0  # the parts' pushes all wrote the one state
    symbols = subprocess.run(["nm", str(tmp_path / "joined.o")], capture_output=True, text=True).stdout \
        if _has("nm") else ""
    for line in symbols.splitlines():  # what the object defines for others: the entries, and hidden names
        kind, name = line.split()[-2:]
        if kind in "TDBR":
            assert name in exported or ".adgen." in name, line


def _has(tool: str) -> bool:
    from shutil import which

    return which(tool) is not None


@pytest.mark.skipif(not LINUX, reason="parts are joined by ELF's relocatable link")
@pytest.mark.slow
def test_gpt2_built_in_parts_gives_the_gradient_built_whole(tmp_path):
    """bench/programs/gpt2.c (a derivative of some 16,000 instructions) in two parts, one or
    two at a time (the same object), and whole (as --emit-llvm compiles it): the same gradient,
    at the bench's tiny sizes."""
    programs = ROOT / "bench" / "programs"
    gradients, objects = [], []
    for options in (["-j", "1"], ["-j", "2"], ["--emit-llvm"]):
        out = tmp_path / "".join(options).strip("-")
        done = subprocess.run([*_adgen(), "build", "-v", *options, str(programs / "gpt2.c"), "-o", str(out)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert ("in 2 parts" in done.stderr) == (options[0] == "-j"), done.stderr
        objects.append((out / "gpt2.adgen.o").read_bytes())
        executable = out / "gpt2"
        subprocess.run([*bundled_cc(), "-O2", "-DWITH_ADGEN", "-I", str(out), "-I", str(programs),
                        str(programs / "harness.c"), str(programs / "gpt2_bench.c"), str(programs / "gpt2.c"),
                        str(out / "gpt2.adgen.o"), "-lm", "-o", str(executable)], check=True, capture_output=True)
        grad = out / "grad"
        subprocess.run([str(executable), "adgen", "1", str(grad), "1", "8", "16", "1", "4", "32"], check=True,
                       capture_output=True)
        gradients.append(grad.read_bytes())
    assert objects[0] == objects[1]
    assert gradients[0] == gradients[2]


def _adgen() -> list[str]:
    import sys

    return [sys.executable, "-m", "adgen.commands.cli"]
