"""Shared helpers of the API tests: paths of the repository and of ../shared (see tests/paths.py)."""

from __future__ import annotations

from tests.paths import CORPUS, EXAMPLES, REPO, SHARED, shared_path

__all__ = ["CORPUS", "EXAMPLES", "REPO", "SHARED", "shared_path"]
