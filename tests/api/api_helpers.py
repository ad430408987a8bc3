"""Shared helpers of the API tests: paths of the repository and of ../shared."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
CORPUS = REPO / "tests" / "corpus"
EXAMPLES = REPO / "examples"


def shared_path(*parts: str) -> Path:
    """A file under ../shared, or skip the test when that checkout is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"{path} is absent: these checks need the shared spec checkout next to the repo"
        )
    return path
