"""Packaging: the wheel installs every layer (`adgen.base`, `adgen.commands`, `adgen.frontend`,
`adgen.ir_ad` and their subpackages), the templates, CMake's files and `adgen c++`'s <enzyme/enzyme>
under one `adgen` package (no top-level `frontend`), with the `adgen` console script."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from conftest import ROOT


def _left_out(folder: str, names: list[str]) -> set[str]:
    """What the copy leaves out: hidden files, caches, and build outputs at the top (not commands/build)."""
    top = {"build"} if folder == str(ROOT) else set()
    return {n for n in names if n.startswith(".") or n.endswith(".egg-info") or n == "__pycache__" or n in top}


@pytest.mark.slow
def test_wheel_layout(tmp_path):
    source = tmp_path / "src"  # a copy, so the build leaves nothing in the checkout
    shutil.copytree(ROOT, source, ignore=_left_out)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("adgen-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    code = [n for n in names if not n.startswith("adgen-")]
    assert all(n.startswith("adgen/") for n in code), code
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    code_packages = [p for p in packages if p not in ("adgen.templates", "adgen.cmake", "adgen.include")]
    assert {"adgen.base", "adgen.commands", "adgen.frontend", "adgen.ir_ad"} <= set(code_packages)
    for package in code_packages:  # every package of the source tree is in the wheel
        assert package.replace(".", "/") + "/__init__.py" in names, package
    for needed in ("adgen/torch.py", "adgen/jax.py", "adgen/tensorflow.py", "adgen/bridge.py",
                   "adgen/templates/xla_ffi.c.j2", "adgen/include/rust/adgen/Cargo.toml",
                   "adgen/include/rust/adgen/src/lib.rs", "adgen/commands/cli.py", "adgen/commands/load.py", "adgen/commands/check.py",
                   "adgen/frontend/annotations.lark", "adgen/frontend/rust.lark",
                   "adgen/templates/header.h.j2", "adgen/templates/stubs.c.j2",
                   "adgen/templates/declarations.h.j2", "adgen/templates/runtime.ll.j2",
                   "adgen/templates/lowering.c.j2", "adgen/cmake/adgenConfig.cmake",
                   "adgen/cmake/adgenConfigVersion.cmake", "adgen/include/enzyme/enzyme"):
        assert needed in names
    package_dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for package, folder in package_dirs.items():  # and no package of the source tree is left out of the list
        for init in (ROOT / folder).glob("**/__init__.py"):
            sub = init.parent.relative_to(ROOT / folder).parts
            assert ".".join((package, *sub)) in packages, init
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "adgen = adgen.commands.cli:command" in entry_points
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    for dependency in ("lark", "jinja2", "llvmlite", "libclang", "ziglang", "numpy"):
        assert f"Requires-Dist: {dependency}" in metadata


def test_bundled_example_generates(adgen, tmp_path):
    result = adgen("generate", ROOT / "examples" / "rosenbrock" / "rosenbrock.c", "-o", tmp_path)
    assert result.status == 0, result.err
    header = (tmp_path / "rosenbrock.adgen.h").read_text()
    assert "rosen_grad_result rosen_grad(double a, double b, double x, double y, double d_ret);" in header
    assert "rosen_tangent4_result rosen_tangent4(" in header


def test_import_adgen_needs_no_framework():
    """`import adgen` (and adgen.load) imports neither JAX nor TensorFlow nor PyTorch: the bridges
    are modules of their own, imported by who uses them."""
    done = subprocess.run([sys.executable, "-c", "import sys, adgen; adgen.load; adgen.Library\n"
                           "print(sorted(m for m in ('jax', 'tensorflow', 'torch') if m in sys.modules))"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr
