"""The package's layers: an import never runs upward, and no two packages import each other.

docs/architecture.md, "Layers", states the order; this reads every module's imports from
its source (no module is imported) and checks them against it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "modelplane"

# Lowest first. A package may import its own layer's and lower layers' packages only.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "memo", "printable", "fieldpath", "naming", "events"}),
    frozenset({"cel"}),
    frozenset({"api"}),
    frozenset({"stack"}),
    frozenset({"composition"}),
    frozenset({"scheduling"}),
    frozenset({"reconcile"}),
    frozenset({"fleetview"}),
    frozenset({"jsonvalues", "forked", "fastyaml", "manifests"}),
    frozenset({"runtime", "packaging"}),
    frozenset({"cli", "__main__"}),
)
RANK = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}


def _package(path: Path) -> str:
    """The top-level package (or module) of the package a source file belongs to."""
    parts = path.relative_to(SRC).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def _imported(path: Path) -> set[str]:
    """The top-level modelplane packages ``path`` imports, its own left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "modelplane":
                names = [f"modelplane.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "modelplane" and len(parts) > 1:
                found.add(parts[1])
    return found - {_package(path)}


SOURCES = sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_package_has_a_layer() -> None:
    packages = {_package(p) for p in SOURCES} - {"__init__", "py"}
    assert packages - set(RANK) == set()


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_import_runs_upward(path: Path) -> None:
    own = _package(path)
    if own not in RANK:
        return  # the package's own __init__
    upward = sorted(p for p in _imported(path) if RANK.get(p, -1) > RANK[own])
    assert upward == [], f"{path.relative_to(SRC)} imports a higher layer: {upward}"


def test_no_two_packages_import_each_other() -> None:
    edges = {(_package(p), q) for p in SOURCES for q in _imported(p)}
    assert sorted((a, b) for a, b in edges if (b, a) in edges and a < b) == []
