"""Core values cannot change: validated models refuse edits, core dataclasses are frozen.

A validated document is shared: the function server's worker threads read the same model,
and equal specs are one typed object across documents. An edit through one reader would
change what every other reader sees, so every model refuses it.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import pydantic
import pytest

from modelplane.api import InferenceCluster
from modelplane.api.base import KubeModel
from modelplane.api.kinds import KINDS
from modelplane.api.validation import validate_document
from modelplane.manifests import load
from tests.builders import seed_replica

REPO = Path(__file__).resolve().parents[2]
CORE = ("api", "cel", "scheduling", "composition", "reconcile")

# Dataclasses of the core left mutable, each with its reason (docs/architecture.md).
MUTABLE_BY_DESIGN = {
    # Built field by field while one document is checked, never shared between documents.
    "modelplane.api.validation.ValidationResult",
}


def _examples() -> dict[str, list[KubeModel]]:
    telemetry = REPO / "tests" / "fixtures" / "telemetry"
    loaded = load(
        [str(REPO / "examples"), str(REPO / "demo"), str(REPO / "tests" / "corpus"), str(telemetry)]
    )
    by_kind: dict[str, list[KubeModel]] = {}
    for obj in loaded.objects:
        by_kind.setdefault(obj.info.kind, []).append(obj.model)
    # No example holds a replica (the deployment function writes them): the seed's.
    replica = validate_document(seed_replica()).model
    assert replica is not None
    by_kind.setdefault("ModelReplica", []).append(replica)
    return by_kind


EXAMPLES = _examples()


def _models(value: object) -> Iterator[KubeModel]:
    """Every model inside ``value``, itself included, depth first."""
    if isinstance(value, KubeModel):
        yield value
        for name in type(value).model_fields:
            yield from _models(getattr(value, name))
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _models(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _models(item)


def test_every_kind_has_an_example() -> None:
    assert sorted(EXAMPLES) == sorted(info.kind for info in KINDS)


@pytest.mark.parametrize("kind", [info.kind for info in KINDS])
def test_no_model_of_a_validated_document_can_be_edited(kind: str) -> None:
    for document in EXAMPLES[kind]:
        for model in _models(document):
            for name in type(model).model_fields:
                with pytest.raises(pydantic.ValidationError, match="frozen"):
                    setattr(model, name, getattr(model, name))


@pytest.mark.parametrize("kind", [info.kind for info in KINDS])
def test_lists_of_a_validated_document_are_tuples(kind: str) -> None:
    for document in EXAMPLES[kind]:
        for model in _models(document):
            for name in type(model).model_fields:
                assert not isinstance(getattr(model, name), list), (type(model).__name__, name)


def test_a_change_is_a_new_value() -> None:
    cluster = EXAMPLES["InferenceCluster"][0]
    assert isinstance(cluster, InferenceCluster)
    labels = {**(cluster.metadata.labels or {}), "zone": "moved"}
    moved = cluster.model_copy(
        update={"metadata": cluster.metadata.model_copy(update={"labels": labels})}
    )
    assert moved.metadata.labels == labels
    assert cluster.metadata.labels != labels


def _core_dataclasses() -> Iterator[tuple[str, type]]:
    for package in CORE:
        root = importlib.import_module(f"modelplane.{package}")
        names = [f"modelplane.{package}"] + [
            info.name for info in pkgutil.walk_packages(root.__path__, f"modelplane.{package}.")
        ]
        for name in names:
            module = importlib.import_module(name)
            for value in vars(module).values():
                if (
                    isinstance(value, type)
                    and dataclasses.is_dataclass(value)
                    and value.__module__ == name
                ):
                    yield f"{name}.{value.__qualname__}", value


CORE_DATACLASSES = dict(_core_dataclasses())


def test_the_core_has_dataclasses_to_check() -> None:
    assert len(CORE_DATACLASSES) > 40


@pytest.mark.parametrize("name", sorted(CORE_DATACLASSES))
def test_every_core_dataclass_is_frozen(name: str) -> None:
    frozen = CORE_DATACLASSES[name].__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert frozen or name in MUTABLE_BY_DESIGN


def test_the_exemptions_are_real() -> None:
    # An exemption whose class is gone or was frozen since is dropped, not carried.
    assert set(CORE_DATACLASSES) >= MUTABLE_BY_DESIGN
    assert all(
        not CORE_DATACLASSES[n].__dataclass_params__.frozen  # type: ignore[attr-defined]
        for n in MUTABLE_BY_DESIGN
    )
