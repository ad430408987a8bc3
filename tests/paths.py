"""Where the tests find the repository, its examples and the ``../shared`` checkout.

One home for these paths: the tests read ``../shared`` relative to the repository root
and skip with a clear message when it is absent (it is never copied into the repository).
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SCHEMAS = SHARED / "schemas"
EXAMPLES = REPO / "examples"
CORPUS = REPO / "tests" / "corpus"


def shared_path(*parts: str) -> Path:
    """A file under ../shared, or skip the test when that checkout is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"{path} is absent: these checks need the shared spec checkout next to the repo"
        )
    return path
