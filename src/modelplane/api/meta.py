"""ObjectMeta, conditions and small references shared by all kinds."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum
from typing import Final, Literal, Protocol

from pydantic import Field

from modelplane.api.base import LABEL_VALUE, KubeModel, OpenModel, list_map


class _Unresolved(Enum):
    UNRESOLVED = "UNRESOLVED"

    def __repr__(self) -> str:
        return "UNRESOLVED"


UNRESOLVED: Final = _Unresolved.UNRESOLVED
"""The one way to say "not fetched yet" (function runtime only): an input Crossplane has
not fetched for this reconcile, as opposed to fetched and absent (None or empty)."""

Unresolved = Literal[_Unresolved.UNRESOLVED]


class ObjectMeta(OpenModel):
    """The metadata this project reads; other ObjectMeta fields are accepted and not read."""

    name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


# An object's name, uid and resourceVersion (None where not stamped): the API server
# gives every write of an object a new resourceVersion.
ObjectVersion = tuple[str, str | None, str | None]


def object_version(meta: ObjectMeta) -> ObjectVersion:
    """The name, ``uid`` and ``resourceVersion`` of an object, as far as they are strings."""
    extra = meta.__pydantic_extra__
    if not extra:
        return (meta.name or "", None, None)
    uid = extra.get("uid")
    version = extra.get("resourceVersion")
    return (
        meta.name or "",
        uid if isinstance(uid, str) else None,
        version if isinstance(version, str) else None,
    )


class Condition(KubeModel):
    """A status condition, as Crossplane and Kubernetes write them."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    observed_generation: int | None = None


Conditions = tuple[Condition, ...]

ConditionStatus = Literal["True", "False", "Unknown"]


def condition(
    type_: str, status: bool | ConditionStatus, reason: str, message: str = ""
) -> Condition:
    """A condition with exactly type, status, reason and message: the one condition type.

    Every reconcile (deployment, replica, cache, cluster) returns these; only the shells
    turn them into wire dicts (``runtime/wire.condition_wire``) or function-response
    conditions.
    """
    if isinstance(status, bool):
        status = "True" if status else "False"
    return Condition(type=type_, status=status, reason=reason, message=message)


class HasConditions(Protocol):
    """A status block with conditions."""

    @property
    def conditions(self) -> Sequence[Condition] | None:
        """The conditions, in the order written."""
        ...


def get_condition(conditions: Iterable[Condition] | None, type_: str) -> Condition:
    """The first condition of ``type_``; a missing one reads ``Unknown``, never None.

    The one condition reader, for typed statuses and observed objects alike (the shell
    builds an observed object's conditions into ``Condition``s). Crossplane's function
    SDK reads a missing condition the same way.
    """
    for c in conditions or ():
        if c.type == type_:
            return c
    return Condition(type=type_, status="Unknown")


def holds(conditions: Iterable[Condition] | None, type_: str) -> bool:
    """The condition ``type_`` reads ``status: "True"``."""
    return get_condition(conditions, type_).status == "True"


def is_ready(status: HasConditions | None) -> bool:
    """The status's ``Ready`` condition is ``True`` (Crossplane's readiness)."""
    return status is not None and holds(status.conditions, "Ready")


CONDITIONS_LIST = list_map("type")


class LocalObjectReference(KubeModel):
    """A reference to an object in the same namespace, by name."""

    name: str


class NameRef(KubeModel):
    """A reference by name (at least one character)."""

    name: str = Field(min_length=1)


class LabelSelector(KubeModel):
    """Equality-only label selector: every pair must be present with an equal value."""

    match_labels: dict[str, str] | None = None


__all__ = [
    "LABEL_VALUE",
    "CONDITIONS_LIST",
    "Condition",
    "ConditionStatus",
    "Conditions",
    "condition",
    "get_condition",
    "holds",
    "is_ready",
    "LabelSelector",
    "LocalObjectReference",
    "NameRef",
    "ObjectMeta",
    "ObjectVersion",
    "object_version",
    "UNRESOLVED",
    "Unresolved",
]
