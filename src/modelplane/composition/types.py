"""Shared type aliases of the composition package."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# A Kubernetes object (or part of one) as plain JSON data.
Json = dict[str, Any]

Stack = Literal["Standard", "Dynamo"]
WorkloadKind = Literal["Deployment", "LeaderWorkerSet", "PodCliqueSet"]


@dataclass(frozen=True, slots=True)
class ComposedObject:
    """One desired composed resource: its Crossplane resource key, the object, its readiness flag.

    The one desired-object type of every reconcile (replica, deployment, cache, cluster)
    and of the function response. ``ready`` True marks the resource ready (docs/reconcile.md,
    "ModelReplica conditions");
    False marks it explicitly not ready; None leaves it unmarked.
    """

    key: str
    object: Json
    ready: bool | None = None
