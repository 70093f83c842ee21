"""`python -m bench.rust_autodiff RUST_SRC [--rustc RUSTC] [--markdown FILE]`: Rust's own
autodiff tests, as written for nightly's `std::autodiff`, built by adgen on stable Rust.

RUST_SRC is a checkout of github.com/rust-lang/rust (or a folder holding its
`tests/codegen-llvm/autodiff/*.rs` and `tests/ui/autodiff/**/*.rs` at the same paths). Each test
with a `fn main` (not those expected to fail to compile) is copied and changed only so that
stable rustc takes it: `#![feature(autodiff)]` dropped, and
`std::autodiff::`/`core::autodiff::` made `adgen::`, whose crate of attributes
(`adgen --rust-crate-dir`) has std::autodiff's `autodiff_reverse` and `autodiff_forward`, and
the line including adgen's wrappers appended. `adgen build` reads the attributes as annotations
(specs/annotations.md); rustc compiles the test with the derivatives' object; the test's own
assertions check the values. Each test is passed (it ran and its assertions held; a
codegen test, which upstream is compiled and checked with FileCheck but not run, built and
linked, its run reported beside), refused (adgen's located error: what adgen does not
differentiate, by design or yet), or failed (any other error, rustc's included, or a failed
assertion). A test that uses other unstable features of the standard library (`#![feature(...)]`
beside autodiff's) has no meaning on stable Rust as it is: it is built with `RUSTC_BOOTSTRAP=1`,
which lets a stable rustc take them, and the table says so. The multi-file crates of `adbench` (ba, fft, gmm, lstm, ode-real: libraries for
ADBench's harness) are built as cargo packages with `cargo adgen build`; those with a check of
adgen's (`bench/rust_autodiff_checks/CRATE.rs`: the crate's derivatives, called through its own C
entry points, against central differences of its own primal) run it with `cargo test`. Writes a Markdown table (default
bench/results/rust_autodiff.md)."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# adgen's own errors (what it does not differentiate), as against rustc's in adgen's compile of the test
_ADGENS = re.compile(r"cannot differentiate|^activity '|is a generic function|^adgen cannot pass|is passed by value|"
                     r"is not generic|passed by value is active|cannot instantiate")
# (and the pretty-printer's tests, `pretty-compare-only`: their expanded text compared, not built)
_FAILING = re.compile(r"^//@\s*(?:build-fail|check-fail|compile-fail|check-pass|aux-build|ignore-auxiliary|"
                      r"pretty-compare-only)", re.M)


def tests(rust_src: Path) -> list[Path]:
    """The tests that run a program: a `fn main`, not expected to fail to compile nor only
    pretty-printed, not a part of a multi-file crate."""
    found = sorted((rust_src / "tests/codegen-llvm/autodiff").glob("*.rs"))
    found += sorted(p for p in (rust_src / "tests/ui/autodiff").rglob("*.rs") if "adbench" not in p.parts
                    and "auxiliary" not in p.parts)
    return [p for p in found if re.search(r"^fn main\(\)", p.read_text(), re.M) and not _FAILING.search(p.read_text())]


def features(texts: list[str]) -> list[str]:
    """The unstable features the sources ask for beside autodiff's (its own gate is dropped)."""
    gates = {g.strip() for t in texts for m in re.findall(r"^#!\[feature\(([^)]*)\)\]", t, re.M) for g in m.split(",")}
    return sorted(gates - {"autodiff", ""})


def nightly_env(env: dict, gates: list[str]) -> dict:
    return dict(env, RUSTC_BOOTSTRAP="1") if gates else env


def noted(outcome: tuple[str, str], gates: list[str]) -> tuple[str, str]:
    if not gates:
        return outcome
    said = f"with RUSTC_BOOTSTRAP=1 for its unstable library features ({', '.join(gates)})"
    return outcome[0], f"{outcome[1]}; {said}" if outcome[1] else said


def on_stable(text: str, stem: str) -> str:
    """The test as stable rustc takes it: no feature gate, adgen's attributes for std::autodiff's,
    adgen's wrappers included."""
    text = re.sub(r"^#!\[feature\(autodiff\)\]\s*$", "", text, flags=re.M)
    text = re.sub(r"\b(?:std|core)::autodiff::", "adgen::", text)
    return text + f'\ninclude!(concat!(env!("ADGEN_OUT"), "/{stem}.adgen.rs"));\n'


def run(test: Path, rust_src: Path, work: Path, rustc: str, macros: Path) -> tuple[str, str]:
    """(outcome, detail) of one test."""
    name = "t_" + re.sub(r"\W", "_", str(test.relative_to(rust_src / "tests")).removesuffix(".rs"))
    src = work / f"{name}.rs"
    src.write_text(on_stable(test.read_text(), name))
    out = work / f"{name}-out"
    gates = features([test.read_text()])
    env = nightly_env(dict(os.environ, ADGEN_RUSTC=rustc, ADGEN_OUT=str(out)), gates)
    built = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "build", "-q", str(src), "-o", str(out)],
                           capture_output=True, text=True, env=env)
    if built.returncode != 0:
        first = built.stderr.strip().splitlines()[0] if built.stderr.strip() else "(no message)"
        message = first.split("error: ", 1)[-1]
        located = re.match(r"\S+\.rs:\d+:\d+: error: ", first) and "internal error" not in built.stderr
        return ("refused" if located and _ADGENS.search(message) else "failed"), message[:160]
    program = work / name
    compiled = subprocess.run([rustc, "--edition=2021", "-O", str(src), "--extern", f"adgen={macros}",
                               "-C", f"link-arg={out / (name + '.adgen.o')}", "-C", "link-arg=-lm", "-o", str(program)],
                              capture_output=True, text=True, env=env)
    if compiled.returncode != 0:
        return "failed", "rustc: " + next((line for line in compiled.stderr.splitlines() if "error" in line), "")[:160]
    ran = subprocess.run([str(program)], capture_output=True, text=True, timeout=120)
    panic = next((line for line in ran.stderr.splitlines() if "panicked" in line or "assertion" in line), "")
    if "codegen-llvm" in test.parts:  # (upstream compiled and checked with FileCheck, never run)
        return "passed", "" if ran.returncode == 0 else f"built; its main, which upstream does not run: {panic[:120]}"
    if ran.returncode != 0:
        return "failed", f"exit {ran.returncode}: {panic[:160]}"
    return "passed", ""


CHECKS = Path(__file__).with_name("rust_autodiff_checks")  # adgen's checks of the adbench crates' values


def adbench(rust_src: Path) -> list[Path]:
    """The multi-file crates of `tests/ui/autodiff/adbench` (a `src/lib.rs` each)."""
    return sorted(p.parent.parent for p in (rust_src / "tests/ui/autodiff/adbench").glob("*/src/lib.rs"))


def run_crate(folder: Path, rust_src: Path, work: Path, rustc: str, crate: str) -> tuple[str, str]:
    """(outcome, detail) of an adbench crate: its files changed as `on_stable` changes a test's
    (each module file including its wrappers), a cargo package of them built with `cargo adgen
    build`, then `cargo build`: passed where both succeed (the crate has no program to run)."""
    name = folder.name.replace("-", "_")
    package = work / name
    (package / "src").mkdir(parents=True)
    (package / "Cargo.toml").write_text(f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n\n'
                                        f'[dependencies]\nadgen = {{ path = "{crate}" }}\n\n[workspace]\n')
    (package / "build.rs").write_text('fn main() {\n    println!("cargo:rustc-link-search=native={}/target/adgen", '
                                      f'env!("CARGO_MANIFEST_DIR"));\n    println!("cargo:rustc-link-lib=static={name}_adgen");\n}}\n')
    gates = features([source.read_text() for source in (folder / "src").glob("*.rs")])
    for source in sorted((folder / "src").glob("*.rs")):
        text = on_stable(source.read_text(), source.stem)
        text = text[:text.rindex("\ninclude!")] + "\n"
        if re.search(r"#\[\s*(?:adgen::)?autodiff", text):
            text += f'include!(concat!(env!("CARGO_MANIFEST_DIR"), "/target/adgen/{source.stem}.adgen.rs"));\n'
        (package / "src" / source.name).write_text(text)
    env = nightly_env(dict(os.environ, RUSTC=rustc, PATH=os.pathsep.join([str(Path(rustc).parent), str(Path(sys.executable).parent),
                                                                         os.environ["PATH"]])), gates)
    cargo = str(Path(rustc).with_name("cargo"))
    built = subprocess.run([cargo, "adgen", "build", "-q"], cwd=package, capture_output=True, text=True, env=env)
    if built.returncode != 0:
        first = next((line for line in built.stderr.splitlines() if "error" in line), "(no message)")
        message = first.split("error: ", 1)[-1]
        return ("refused" if _ADGENS.search(message) else "failed"), message[:160]
    compiled = subprocess.run([cargo, "build", "-q"], cwd=package, capture_output=True, text=True, env=env)
    if compiled.returncode != 0:
        return "failed", "cargo build: " + next((line for line in compiled.stderr.splitlines() if "error" in line), "")
    check = CHECKS / f"{name}.rs"
    if not check.exists():
        return "passed", "built (a library: no program to run)"
    (package / "tests" / "common").mkdir(parents=True)
    shutil.copy(CHECKS / "common.rs", package / "tests" / "common" / "mod.rs")
    shutil.copy(check, package / "tests" / check.name)
    tested = subprocess.run([cargo, "test", "-q", "--test", name, "--", "--nocapture", "--test-threads=1"], cwd=package,
                            capture_output=True, text=True, env=env)
    errors = re.findall(r"^(.*): largest error (\S+)$", tested.stdout, re.M)
    if tested.returncode != 0:
        said = next((line for line in (tested.stdout + tested.stderr).splitlines() if "panicked" in line or "error" in line),
                    "(no message)")
        return "failed", f"its values (bench/rust_autodiff_checks/{check.name}): {said[:200]}"
    return "passed", ("built; its gradients against central differences (bench/rust_autodiff_checks/"
                      f"{check.name}): " + ", ".join(f"{what.lstrip('.')} {error}" for what, error in errors))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rust_src", type=Path, help="a checkout of github.com/rust-lang/rust")
    parser.add_argument("--rustc", default="rustc", help="the rustc to build with (default: the one on the PATH)")
    parser.add_argument("--markdown", type=Path, default=Path(__file__).parent / "results" / "rust_autodiff.md")
    args = parser.parse_args()
    found = tests(args.rust_src)
    if not found and not adbench(args.rust_src):
        print(f"no autodiff tests under {args.rust_src}/tests", file=sys.stderr)
        return 1
    crate = subprocess.run([sys.executable, "-m", "adgen.commands.cli", "--rust-crate-dir"], capture_output=True,
                           text=True).stdout.strip()
    version = subprocess.run([args.rustc, "--version"], capture_output=True, text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory(prefix="adgen-rust-autodiff-") as tmp:
        work = Path(tmp)
        macros = work / "libadgen.so"
        subprocess.run([args.rustc, "--crate-type=proc-macro", "--crate-name", "adgen", "--edition=2021",
                        f"{crate}/src/lib.rs", "-o", str(macros)], check=True, capture_output=True)
        for test in found:
            outcome, detail = noted(run(test, args.rust_src, work, args.rustc, macros), features([test.read_text()]))
            rows.append((str(test.relative_to(args.rust_src)), outcome, detail))
            print(f"{outcome:8} {rows[-1][0]}  {detail}", file=sys.stderr, flush=True)
        rustc = shutil.which(args.rustc) or args.rustc
        for folder in adbench(args.rust_src):
            outcome, detail = noted(run_crate(folder, args.rust_src, work, rustc, crate),
                                    features([source.read_text() for source in (folder / "src").glob("*.rs")]))
            rows.append((str(folder.relative_to(args.rust_src)), outcome, detail))
            print(f"{outcome:8} {rows[-1][0]}  {detail}", file=sys.stderr, flush=True)
    counts = {k: sum(r[1] == k for r in rows) for k in ("passed", "refused", "failed")}
    lines = [f"# Rust's autodiff tests built by adgen on stable Rust ({version})", "",
             f"{len(rows)} tests: {counts['passed']} passed, {counts['refused']} refused with a located error, "
             f"{counts['failed']} failed (`python -m bench.rust_autodiff RUST_SRC`).", "",
             "| test | outcome | adgen's error, or what failed |", "|---|---|---|"]
    lines += [f"| {name} | {outcome} | {detail.replace('|', '/')} |" for name, outcome, detail in rows]
    args.markdown.parent.mkdir(parents=True, exist_ok=True)
    args.markdown.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:3]))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
