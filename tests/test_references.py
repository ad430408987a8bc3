"""The repository explains itself: every reference in code and docs resolves inside it.

A comment or doc says why in place; a longer rule lives in docs/ and is referenced as
``docs/api.md, "Input limits"`` (file, then the start of a heading in it). No reference
points into a specification outside the repository (``§`` sections) or into the issue
tracker (``(issue N)`` tags). And every error the package defines derives from
``modelplane.errors.ModelplaneError``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import modelplane
from modelplane.errors import ModelplaneError

REPO = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve()


SECTION = re.compile("\N{SECTION SIGN}")
ISSUE_TAG = re.compile(r"\bissues? \d+", re.IGNORECASE)
# `docs/api.md, "Bounds"`, `docs/api.md "Bounds"`, `api.md, "Bounds"` (a docs/ page naming
# a sibling); the quoted text is the start of a heading of that file.
DOC_REF = re.compile(r"(?:docs/)?\b([a-z][a-z-]*\.md)`?,? \(?\"([^\"\n]+)\"")
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.MULTILINE)


def _files() -> list[Path]:
    """Every text file the references rule covers, pending files left out."""
    found = [REPO / "README.md", REPO / "Makefile"]
    for top in ("src", "tools", "tests", "benchmarks", "docs"):
        for path in sorted((REPO / top).rglob("*")):
            built = any(p == "__pycache__" or p.endswith(".egg-info") for p in path.parts)
            if path.is_file() and not built and path.suffix != ".pyc":
                found.append(path)
    return [p for p in found if p != THIS]


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""


def _headings() -> dict[str, list[str]]:
    """The headings of every docs/ page, by file name."""
    return {
        page.name: HEADING.findall(page.read_text(encoding="utf-8"))
        for page in sorted((REPO / "docs").glob("*.md"))
    }


def _problems(pattern: re.Pattern[str], what: str) -> list[str]:
    problems = []
    for path in _files():
        for number, line in enumerate(_text(path).splitlines(), 1):
            if pattern.search(line):
                problems.append(f"{path.relative_to(REPO)}:{number}: {what}: {line.strip()}")
    return problems


def test_no_references_into_a_specification_outside_the_repository() -> None:
    assert _problems(SECTION, "a section sign") == []


def test_no_issue_tags() -> None:
    assert _problems(ISSUE_TAG, "an issue tag") == []


def test_every_docs_reference_names_a_page_and_heading_that_exist() -> None:
    headings = _headings()
    problems = []
    for path in _files():
        for number, line in enumerate(_text(path).splitlines(), 1):
            for page, quoted in DOC_REF.findall(line):
                if page not in headings:
                    if page != "CHANGELOG.md":
                        problems.append(f"{path.relative_to(REPO)}:{number}: no docs/{page}")
                    continue
                if not any(h.startswith(quoted) for h in headings[page]):
                    problems.append(
                        f"{path.relative_to(REPO)}:{number}: docs/{page} has no heading {quoted!r}"
                    )
    assert problems == []


# A document named by itself (`cli.md`, `docs/cli.md`), not as a path inside another
# repository (`vllm docs/features/x.md` is an upstream citation: a directory precedes it).
BARE_DOC = re.compile(r"(?<![\w./-])(docs/)?([A-Za-z][\w-]*\.md)\b")


def test_every_named_document_is_in_the_repository() -> None:
    problems = []
    for path in _files():
        for number, line in enumerate(_text(path).splitlines(), 1):
            for in_docs, name in BARE_DOC.findall(line):
                place = REPO / "docs" / name if in_docs else None
                found = (
                    place.is_file()
                    if place
                    else any((REPO / d / name).is_file() for d in ("docs", "."))
                )
                if not found:
                    problems.append(f"{path.relative_to(REPO)}:{number}: {in_docs}{name}")
    assert problems == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("the contract (docs/cli.md)", [("docs/", "cli.md")]),
        ("see api.md and README.md", [("", "api.md"), ("", "README.md")]),
        ("(vllm-project/vllm docs/features/nixl_connector_usage.md)", []),
        ("spec/cli.md", []),
    ],
)
def test_the_named_document_pattern(line: str, expected: list[tuple[str, str]]) -> None:
    assert BARE_DOC.findall(line) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('see docs/api.md, "Bounds".', [("api.md", "Bounds")]),
        ('(docs/crossplane.md "Watches")', [("crossplane.md", "Watches")]),
        ('`docs/reconcile.md`, "Rollouts and moves"', [("reconcile.md", "Rollouts and moves")]),
        ("no reference here", []),
    ],
)
def test_the_reference_pattern(line: str, expected: list[tuple[str, str]]) -> None:
    assert DOC_REF.findall(line) == expected


def _package_errors() -> list[type[BaseException]]:
    """Every exception class the package defines."""
    found = []
    for info in pkgutil.walk_packages(modelplane.__path__, "modelplane."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
            ):
                found.append(value)
    return found


def test_every_package_error_derives_from_the_one_base() -> None:
    errors = _package_errors()
    assert len(errors) > 10
    assert [e.__qualname__ for e in errors if not issubclass(e, ModelplaneError)] == []


def test_errors_keep_the_builtin_kinds_callers_catch() -> None:
    from modelplane.cel.quantity import QuantityError
    from modelplane.cel.selectors import DeviceError
    from modelplane.cel.semver import SemverError
    from modelplane.composition.backend import InvalidURL

    for error in (QuantityError, DeviceError, SemverError, InvalidURL):
        assert issubclass(error, ValueError) and issubclass(error, ModelplaneError)
