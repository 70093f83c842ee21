"""The documentation: the site builds with no warning, its links and README's lead somewhere, and
every example in README.md and docs/ runs as shown (tests/doc_examples.py says how they are read)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from doc_examples import matches, program, read_page, shown

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNNABLE = [page for page in PAGES if read_page(page).runs]
_PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # (the commands': the venv's first)
# The line adgen prints the first time it builds a runtime it caches, which a test run on a fresh
# machine may meet anywhere: not part of what a page shows.
_ONE_TIME = re.compile(r"^adgen: building .* once\b")


def _missing(requirement: str) -> str | None:
    """What a page's `requires:` names and this machine lacks: a program on the PATH, a Python
    module (`python:torch`), OpenMP's runtime (`libomp`) or a rustc adgen can use (`rustc`)."""
    if requirement == "libomp":
        from fuzzer import libomp
        return None if libomp() else "an OpenMP runtime (libomp: Debian's libomp-dev)"
    if requirement == "rustc":
        from conftest import no_rustc
        return f"a usable rustc ({no_rustc()})" if no_rustc() else None
    if requirement.startswith("python:"):
        module = requirement.split(":", 1)[1]
        return None if importlib.util.find_spec(module) else f"the Python module {module}"
    return None if shutil.which(requirement, path=_PATH) else requirement


QUICK = {ROOT / "README.md", ROOT / "docs" / "tutorials" / "c.md"}  # (the quick run's: -m "not slow")


def _shell(command: str, cwd: Path) -> tuple[int, list[str], str]:
    """A page's command run as a reader's shell runs it, with adgen's venv first on the PATH: its
    status, the lines it printed (stdout, then stderr) but the one-time runtime line, all it printed."""
    env = dict(os.environ, PATH=_PATH, COLUMNS="100", LC_ALL="C.UTF-8", PYTHONWARNINGS="ignore",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")  # (Open MPI's mpirun, run as root)
    env.pop("ADGEN_TRACEBACK", None)
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    printed = done.stdout + done.stderr
    lines = [line for line in printed.rstrip("\n").split("\n") if not _ONE_TIME.match(line)]
    return done.returncode, lines if any(line.strip() for line in lines) else [], printed


@pytest.mark.parametrize("path", [p if p in QUICK else pytest.param(p, marks=pytest.mark.slow) for p in RUNNABLE],
                         ids=[str(p.relative_to(ROOT)) for p in RUNNABLE])
def test_example_runs_as_shown(path, tmp_path):
    page = read_page(path)
    missing = [m for m in map(_missing, page.requires) if m]
    if missing:
        pytest.skip(f"{path.relative_to(ROOT)} needs {', '.join(missing)}, which this machine lacks")
    for step in page.steps:
        where = f"{path.relative_to(ROOT)}:{step.line}"
        if step.path:
            target = tmp_path / step.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.text)
            continue
        status, actual, printed = _shell(step.command, tmp_path)
        assert status == step.status, f"{where}: `{step.command}` exited with {status}, not {step.status}:\n{printed}"
        assert matches(step.expected, actual), (
            f"{where}: the output differs from the page's.\nThe page shows:\n{shown(step)}\n"
            f"It printed:\n" + "\n".join(actual))


def test_every_page_runs_what_it_shows():
    """Each tutorial and how-to page is an example a reader can follow to the end: it runs at least
    one command, and each program its commands start is one a reader has (adgen, a C compiler…)."""
    for page in PAGES:
        relative = page.relative_to(ROOT)
        if relative.parts[:2] in {("docs", "tutorials"), ("docs", "how-to")}:
            assert page in RUNNABLE, f"{relative} shows no command to run (a ```console block)"
    for page in RUNNABLE:
        for step in read_page(page).steps:
            if step.command:
                assert program(step) in {"adgen", "cc", "c++", "g++", "python", "./main", "cmake", "cargo",
                                          "rustc", "ls", "cat", "mkdir", "cd", "mpicc", "mpirun"} or \
                    program(step).startswith("./"), (
                    f"{page.relative_to(ROOT)}:{step.line}: `{step.command}`")


def test_readme_links_lead_somewhere():
    text = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README.md links to {target}, which does not exist"


def test_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines < 250, f"README.md has {lines} lines: move the detail to docs/"


def test_site_builds_without_warnings(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs and mkdocs-material are not installed (pip install '.[test]')")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").exists()


def test_error_reference_fixes_are_accepted(tmp_path, adgen, monkeypatch):
    """Each golden error case has a fix on the error reference page, and the fixed source builds."""
    import tomllib

    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    from generated import fixed_source

    golden = ROOT / "specs" / "golden"
    fixes = tomllib.loads((ROOT / "docs" / "reference" / "error_fixes.toml").read_text())
    cases = sorted(p.stem for p in (golden / "errors").glob("*.c"))
    assert sorted(set(fixes) - {"more"}) == cases, "docs/reference/error_fixes.toml: a fix per specs/golden/errors/ case"
    shutil.copytree(golden / "include", tmp_path / "include")
    (tmp_path / "errors").mkdir()
    monkeypatch.chdir(tmp_path / "errors")
    for case in cases:
        source = tmp_path / "errors" / f"{case}.c"
        source.write_text(fixed_source((golden / "errors" / f"{case}.c").read_text(), fixes[case]["edits"]))
        result = adgen("generate", source.name, "-o", "out", "-q")
        assert result.status == 0, f"{case}: the fix on the error page is refused:\n{result.err}"


def _more_errors():
    import tomllib
    return tomllib.loads((ROOT / "docs" / "reference" / "error_fixes.toml").read_text())["more"]


@pytest.mark.slow
@pytest.mark.parametrize("case", _more_errors(), ids=lambda case: case["file"])
def test_error_reference_examples_print_as_shown(case, tmp_path):
    """The error page's examples of the other stages: the command prints what the page shows,
    and the fix, a source or a command, succeeds."""
    missing = _missing(case.get("requires", "cc"))
    if missing:
        pytest.skip(f"the example needs {missing}, which this machine lacks")
    (tmp_path / case["file"]).write_text(case["source"].lstrip())
    status, actual, printed = _shell(case["command"], tmp_path)
    assert status == case["status"], printed
    assert matches(case["output"].strip("\n").split("\n"), actual), "\n".join(actual)
    if "fixed" in case:
        (tmp_path / case["file"]).write_text(case["fixed"].lstrip())
    status, _, printed = _shell(case.get("fixed_command", case["command"]), tmp_path)
    assert status == 0, printed
