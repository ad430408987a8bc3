"""The CRD cost estimator is a build tool: the wheel, and so the function image (which
pip-installs the same tree, see the Dockerfile), holds no part of it.

The product's own estimate of selector cost (``modelplane.cel.cost``) does ship.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterable

import pytest
from setuptools import find_packages

from tests.paths import REPO

# What a build reads, with tools/ beside src/ as in the checkout: a package discovery that
# reached beyond src/modelplane would put the tool in the wheel.
BUILD_CONTEXT = ("pyproject.toml", "README.md", "LICENSE", "src", "tools")
# Names only the estimator's files have (before and after it left the package).
ESTIMATOR = ("crdcost", "crd_cost", "_crd_", "xcrd")


def _estimator_files(names: Iterable[str]) -> list[str]:
    return [n for n in names if n.startswith("tools/") or any(m in n for m in ESTIMATOR)]


def _backend_unavailable(stderr: str) -> bool:
    # pip could not install the build backend pyproject.toml names (offline, no index).
    return "setuptools" in stderr and (
        "No matching distribution" in stderr or "Could not find a version" in stderr
    )


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The file names in the wheel ``pip`` builds from the repository's sources."""
    root = tmp_path_factory.mktemp("wheel")
    context = root / "context"
    context.mkdir()
    for name in BUILD_CONTEXT:
        source = REPO / name
        if source.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
            shutil.copytree(source, context / name, ignore=ignore)
        else:
            shutil.copy2(source, context / name)
    # The ordinary isolated build, as `pip install .` in the Dockerfile runs it: the
    # development venv's own setuptools may be older than the build requires.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(root / "out"),
            str(context),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    if done.returncode != 0 and _backend_unavailable(done.stderr):
        pytest.skip(f"the build backend is unavailable: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    (wheel,) = (root / "out").glob("modelplane-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_holds_no_crd_cost_estimator(wheel_names: list[str]) -> None:
    assert "modelplane/cel/cost.py" in wheel_names
    assert "modelplane/api/crds.py" in wheel_names
    assert _estimator_files(wheel_names) == []


def test_package_discovery_finds_modelplane_alone() -> None:
    """The same question without a build, over the discovery pyproject.toml configures."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    find = config["tool"]["setuptools"]["packages"]["find"]
    where = REPO / find["where"][0]
    packages = find_packages(str(where), include=find.get("include", ("*",)))
    assert "modelplane" in packages and "modelplane.cel" in packages
    assert [p for p in packages if p.partition(".")[0] != "modelplane"] == []
    modules = [p.relative_to(where).as_posix() for p in where.rglob("*.py")]
    assert _estimator_files(modules) == []
