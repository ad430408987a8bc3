"""The rollout policy's pieces: the template revision and the progress deadline."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from modelplane.api import ModelDeployment
from modelplane.scheduling.rollout import PROGRESS_DEADLINE, overdue, revision
from tests.builders import seed_deployment

T0 = datetime(2026, 1, 15, 9, 0, 0, tzinfo=UTC)


def _rev(doc: dict[str, Any]) -> str:
    return revision(ModelDeployment.model_validate(doc))


def _edited(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(seed_deployment(2))
    target: Any = doc["spec"]["template"]
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
    target[path[-1]] = value
    return doc


MEMBER = ("spec", "engines", 0, "members", 0)

# (edit, a new revision?): what restarts a replica, and what only steers its placement.
EDITS = [
    ("image", (*MEMBER, "template", "spec", "containers", 0, "image"), "vllm/vllm-openai:v1", True),
    ("copies", ("spec", "engines", 0, "copies"), 2, True),
    ("a template label", ("metadata", "labels"), {"team": "ml"}, True),
    ("modelCacheRef", ("spec", "modelCacheRef"), {"name": "qwen"}, True),
    ("clusterSelector", ("spec", "clusterSelector"), {"matchLabels": {"zone": "a"}}, False),
    ("tolerations", ("spec", "tolerations"), [{"key": "gpu", "operator": "Exists"}], False),
    ("copies written as its default", ("spec", "engines", 0, "copies"), 1, False),
]


@pytest.mark.parametrize(
    ("path", "value", "new"), [e[1:] for e in EDITS], ids=[e[0] for e in EDITS]
)
def test_which_edits_are_a_new_revision(path: tuple[str | int, ...], value: Any, new: bool) -> None:
    base = _rev(seed_deployment(2))
    assert len(base) == 10 and int(base, 16) >= 0
    assert (_rev(_edited(path, value)) != base) is new


def test_the_revision_is_stable_and_ignores_replicas_and_names() -> None:
    assert _rev(seed_deployment(2)) == _rev(seed_deployment(3))
    assert _rev(seed_deployment(2)) == _rev(seed_deployment(2, name="other", namespace="x"))


STAMP = "2026-01-15T09:00:00Z"
DEADLINE_CASES = [
    # (now, stamps, overdue names)
    (None, {"a": STAMP}, ()),  # no clock: nothing is ever overdue
    (T0 + PROGRESS_DEADLINE, {"a": STAMP}, ()),  # exactly at the deadline: not yet
    (T0 + PROGRESS_DEADLINE + timedelta(seconds=1), {"a": STAMP, "b": "2026-01-15T09:20:00Z"}, ("a",)),
    (T0 + timedelta(days=1), {"b": STAMP, "a": STAMP}, ("a", "b")),  # sorted
    (T0 + timedelta(days=1), {"a": "yesterday"}, ()),  # an unreadable stamp is not overdue
]  # fmt: skip


@pytest.mark.parametrize(("now", "stamps", "late"), DEADLINE_CASES)
def test_the_progress_deadline(
    now: datetime | None, stamps: dict[str, str], late: tuple[str, ...]
) -> None:
    assert overdue(stamps, now) == late
