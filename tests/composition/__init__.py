"""Tests of the replica composition (composition.md §4–§11, status.md §3)."""
