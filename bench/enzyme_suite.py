"""Enzyme's own integration tests, built with `adgen cc` and `adgen c++` (and, with --enzyme PLUGIN,
with Enzyme's clang plugin, in the same run): every `*.c` file of test/Integration/ReverseMode,
ForwardMode and ForwardModeVector of a clone of Enzyme's repository, less those for MPI and BLAS
and the `-verify` diagnostics tests, and every `*.cpp` file of those folders and of BatchMode and
CppSugar, less those for MPI, BLAS, Boost, MPFR, OpenMP, `-verify` and `-enzyme-auto-sparsity`;
each built unchanged at each -O level and run. Each test aborts on a wrong value, so a file
passes when it builds and exits 0. A file whose RUN lines run it with lli (which compiles a
function only when it is first called) is built by both tools with -ffunction-sections
-fdata-sections -Wl,--gc-sections, so that, as under lli, a function nothing calls may use a
symbol nothing defines (customglob.cpp at -O0). The C files using OpenMP (its `-fopenmp` in their RUN lines,
or a `#pragma omp`) are built with -fopenmp and run on two threads. C++ files find Eigen in
/usr/include/eigen3 (Debian's libeigen3-dev) and `<enzyme/enzyme>` where each tool has it:
adgen ships its own, Enzyme's plugin is given the clone's `enzyme/include`.

    python -m bench.enzyme_suite ENZYME_SRC [--enzyme PLUGIN] [--levels 0,2] [--languages c,c++]
                                            [--only NAME] [--json FILE]

ENZYME_SRC is the clone (its `enzyme/` folder or the repository root). A file's own RUN lines say
whether it wants -ffast-math or -fno-exceptions (given to both), its C++ standard, and Enzyme's
-enzyme-loose-types (given to Enzyme). The exit status is 1 if a file fails with adgen."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The folders of each language's files, and what leaves a file out (in its name or RUN lines).
FOLDERS = {"c": ("ReverseMode", "ForwardMode", "ForwardModeVector"),
           "c++": ("ReverseMode", "ForwardMode", "ForwardModeVector", "BatchMode", "CppSugar")}
EXCLUDED = {"c": re.compile(r"\bmpi|blas|-verify", re.I),
            "c++": re.compile(r"\bmpi|blas|boost|mpfr|-verify|auto-sparsity|openmp", re.I)}
SUFFIX = {"c": ".c", "c++": ".cpp"}
EIGEN = "/usr/include/eigen3"


def tests(root: Path, languages: tuple[str, ...] = ("c", "c++")) -> list[Path]:
    """The suite's files: those whose name and RUN lines are not about what EXCLUDED names."""
    base = _integration(root)
    found = []
    for lang in languages:
        for folder in FOLDERS[lang]:
            for path in sorted((base / folder).glob("*" + SUFFIX[lang])):
                text = path.read_text(errors="replace")
                runs = " ".join(_run_lines(text))
                omp = " openmp" if "#pragma omp" in text else ""
                includes = " ".join(line for line in text.splitlines() if line.lstrip().startswith("#include")) \
                    if lang == "c++" else ""  # (Boost's, say)
                if not EXCLUDED[lang].search(" ".join((path.name, runs, omp, includes))):
                    found.append(path)
    return found


def _run_lines(text: str) -> list[str]:
    """A file's RUN lines: how Enzyme's lit suite builds (and runs) it."""
    return [line for line in text.splitlines() if "RUN:" in line]


def _integration(root: Path) -> Path:
    base = root / "test" / "Integration" if (root / "test" / "Integration").is_dir() else \
        root / "enzyme" / "test" / "Integration"
    if not base.is_dir():
        raise SystemExit(f"no test/Integration folder under {root}: give a clone of Enzyme's repository")
    return base


def _flags(path: Path, level: str) -> tuple[list[str], list[str]]:
    """What the file's RUN lines ask of both compilers, and of Enzyme's alone. A C++ file's flags
    are those of its first RUN line at `level` (its language, floating-point and optimization
    flags: `-fno-vectorize`, say), else of its first RUN line."""
    text = path.read_text(errors="replace")
    runs = _run_lines(text)
    every = " ".join(runs)
    if path.suffix == ".c":
        common = ["-std=c11"] + (["-fopenmp"] if "-fopenmp" in every or "#pragma omp" in text else [])
        common += ["-ffast-math"] if "-ffast-math" in every else []
        return common, ["-mllvm", "-enzyme-loose-types"] if "-enzyme-loose-types" in every else []
    compiling = [line for line in runs if "%clang" in line]
    line = next((r for r in compiling if f" {level} " in r), compiling[0] if compiling else "")
    words = line.split("%s")[0].split()
    common, enzyme = ["-I", EIGEN], []
    k = 0
    while k < len(words):
        word = words[k]
        if word == "-mllvm" and k + 1 < len(words):  # an LLVM option: Enzyme's are for the plugin alone
            (enzyme if "enzyme" in words[k + 1] else common).extend(words[k:k + 2])
            k += 1
        elif word.startswith(("-std=", "-f", "-D")) and not word.startswith("-fplugin"):
            common.append(word)
        k += 1
    if not any(w.startswith("-std=") for w in common):
        common.append("-std=c++17")
    if "-enzyme-loose-types" in every and "-enzyme-loose-types" not in enzyme:  # (in any of its RUN lines)
        enzyme += ["-mllvm", "-enzyme-loose-types"]
    return common, enzyme


# lli compiles a function when it is first called (its lazy JIT): a function nothing runs may use
# a symbol nothing defines (customglob.cpp's `extern MyMemoryType host_mem_type`). A native link
# keeps only what main reaches when each function has its section and unreached ones are dropped.
AS_LLI_RUNS = ["-ffunction-sections", "-fdata-sections", "-Wl,--gc-sections"]


def through_lli(path: Path) -> bool:
    """Whether the file's RUN lines run what they build with lli (then AS_LLI_RUNS, for both tools)."""
    return any("%lli" in line for line in _run_lines(path.read_text(errors="replace")))


def executed(path: Path) -> bool:
    """Whether the file's RUN lines run what they build (`%lli`, or the executable): a test they
    only compile (`| %opt ... -S`) passes when it builds, whatever its own checks say when run
    (fbuff.cpp's expect a derivative its function does not have)."""
    runs = _run_lines(path.read_text(errors="replace"))
    return any("%lli" in line or re.search(r"(;|&&)\s*%t\b", line) for line in runs)


def run_one(command: list[str], exe: Path, cwd: Path, checked: bool = True) -> tuple[bool, str, float]:
    """Builds and runs one file: (passed, why not, seconds the build took); where its run is not
    `checked` (executed), a failed run is reported but passes."""
    started = time.perf_counter()
    try:
        built = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return False, "build timed out", time.perf_counter() - started
    seconds = time.perf_counter() - started
    if built.returncode != 0:
        return False, "build: " + (built.stderr.strip().splitlines() or ["?"])[-1][:200], seconds
    try:
        ran = subprocess.run([str(exe)], cwd=cwd, capture_output=True, text=True, timeout=120,
                             env=dict(os.environ, OMP_NUM_THREADS="2"))
    except subprocess.TimeoutExpired:
        return False, "run timed out", seconds
    if ran.returncode != 0:
        why = f"run: exit {ran.returncode}: " + (ran.stderr.strip().splitlines() or [""])[-1][:200]
        return (False, why, seconds) if checked else (True, "built (Enzyme's RUN lines only compile it); " + why,
                                                       seconds)
    return True, "", seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.enzyme_suite", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("enzyme_src", type=Path, help="a clone of Enzyme's repository")
    parser.add_argument("--enzyme", type=Path, metavar="PLUGIN", help="also build with Enzyme's clang plugin")
    parser.add_argument("--enzyme-cc", default="clang-19", help="the clang the plugin is for (default clang-19; "
                                                                   "its C++ driver is the same name with ++)")
    parser.add_argument("--languages", default="c,c++", help="the files' languages, comma-separated (default c,c++)")
    parser.add_argument("--levels", default="0,2", help="the -O levels, comma-separated (default 0,2)")
    parser.add_argument("--only", help="the files whose name contains this")
    parser.add_argument("--json", type=Path, help="write one record per file and level")
    args = parser.parse_args(argv)
    languages = tuple(args.languages.split(","))
    files = [f for f in tests(args.enzyme_src.resolve(), languages) if not args.only or args.only in f.name]
    enzyme_include = _integration(args.enzyme_src.resolve()).parent.parent / "include"
    levels = [f"-O{level}" for level in args.levels.split(",")]
    tools = ["adgen"] + (["enzyme"] if args.enzyme else [])
    records, started = [], time.time()
    print("  ".join([f"{'file':<40}"] + [f"{tool + level:<6}" for level in levels for tool in tools]))
    with tempfile.TemporaryDirectory(prefix="adgen-enzyme-suite-") as tmp:
        for path in files:
            name = f"{path.parent.name}/{path.name}"
            row = [name]
            for level in levels:
                common, loose = _flags(path, level)
                for tool in tools:
                    exe = Path(tmp) / f"{tool}{level}-{path.parent.name}-{path.stem}"
                    cxx = path.suffix != ".c"
                    command = ([sys.executable, "-m", "adgen.commands.cli", "c++" if cxx else "cc"] if tool == "adgen"
                               else [args.enzyme_cc.replace("clang", "clang++") if cxx else args.enzyme_cc,
                                     f"-fplugin={args.enzyme.resolve()}", *loose,
                                     *(["-I", str(enzyme_include)] if cxx else [])])
                    command += [*common, level, *(AS_LLI_RUNS if through_lli(path) else []), path.name, "-o",
                                str(exe), "-lm"]
                    ok, why, seconds = run_one(command, exe, path.parent, executed(path))
                    records.append(dict(file=name, level=level, tool=tool, passed=ok, why=why, build_s=seconds))
                    row.append("pass" if ok else "FAIL")
            print("  ".join(f"{cell:<40}" if k == 0 else f"{cell:<6}" for k, cell in enumerate(row)), flush=True)
    print()
    for tool in tools:
        for level in levels:
            mine = [r for r in records if r["tool"] == tool and r["level"] == level]
            print(f"{tool} {level}: {sum(r['passed'] for r in mine)} of {len(mine)} pass, builds "
                  f"{sum(r['build_s'] for r in mine):.0f} s in all")
            for lang in languages:
                of = [r for r in mine if r["file"].endswith(SUFFIX[lang])]
                print(f"  {lang}: {sum(r['passed'] for r in of)} of {len(of)}")
            for r in mine:
                if r["why"]:
                    print(f"  {r['file']}: {'' if r['passed'] else 'FAIL: '}{r['why']}")
    print(f"done in {time.time() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0 if all(r["passed"] for r in records if r["tool"] == "adgen") else 1


if __name__ == "__main__":
    sys.exit(main())
