"""Proposed changes to a fleet: documents that replace or join the input, and removals.

A change document replaces the input object of the same kind, namespace and name, or
joins the input when there is none: an edited deployment (a new replica count, a new
template), a new deployment, a cluster with a NoExecute taint (a drain), a cluster with
other pools, a new cluster. A removal names an object to take out of the input; taking
out a ModelDeployment takes its replicas and endpoints with it, as deleting the
composite deletes what it composed (docs/fleet.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from modelplane.api import (
    InferenceClass,
    InferenceCluster,
    ModelCache,
    ModelDeployment,
    ModelEndpoint,
    ModelReplica,
)
from modelplane.api.base import KubeModel
from modelplane.errors import ModelplaneError
from modelplane.reconcile.deployment import Fleet
from modelplane.scheduling.model import namespace_of
from modelplane.scheduling.replicas import owns

# The kinds a plan reads, and whether each is namespaced.
KINDS: dict[str, bool] = {
    "InferenceCluster": False,
    "InferenceClass": False,
    "ModelDeployment": True,
    "ModelCache": True,
    "ModelReplica": True,
    "ModelEndpoint": True,
}


class ChangeError(ModelplaneError):
    """A change that cannot be applied: a removal of an object the input does not have."""


@dataclass(frozen=True, slots=True)
class Removal:
    """An object to take out of the input: ``Kind/name`` or ``Kind/namespace/name``."""

    kind: str
    namespace: str
    name: str

    @staticmethod
    def parse(text: str) -> Removal:
        """Read ``Kind/name`` (cluster-scoped kinds) or ``Kind/[namespace/]name``."""
        parts = text.split("/")
        kind = parts[0]
        if kind not in KINDS:
            raise ChangeError(f"{text}: the kind must be one of {', '.join(sorted(KINDS))}")
        namespaced = KINDS[kind]
        if len(parts) == 2 and parts[1]:
            return Removal(kind, "default" if namespaced else "", parts[1])
        if len(parts) == 3 and namespaced and parts[1] and parts[2]:
            return Removal(kind, parts[1], parts[2])
        form = "Kind/[namespace/]name" if namespaced else "Kind/name"
        raise ChangeError(f"{text}: a removal of a {kind} is written {form}")

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace + '/' if self.namespace else ''}{self.name}"


@dataclass(frozen=True, slots=True)
class Changes:
    """Documents replacing or joining the input, then removals."""

    objects: tuple[KubeModel, ...] = ()
    removals: tuple[Removal, ...] = ()


def key_of(obj: KubeModel) -> tuple[str, str, str]:
    """(kind, namespace, name) of an object; the namespace is "" for a cluster-scoped kind."""
    kind = str(getattr(obj, "kind", ""))
    meta = getattr(obj, "metadata", None)
    namespace = getattr(meta, "namespace", None)
    name = getattr(meta, "name", None) or ""
    return kind, namespace_of(namespace) if KINDS.get(kind, False) else "", name


M = TypeVar("M", bound=KubeModel)


def _merged(items: Sequence[M], model: type[M], changes: Changes) -> tuple[M, ...]:
    """``items`` with each change of that kind in place of the same object, or appended."""
    new = [o for o in changes.objects if isinstance(o, model)]
    by_key = {key_of(o): o for o in new}
    out = [by_key.pop(key_of(item), item) for item in items]
    out.extend(o for o in new if key_of(o) in by_key)
    gone = {(r.kind, r.namespace, r.name) for r in changes.removals}
    return tuple(o for o in out if key_of(o) not in gone)


def apply(fleet: Fleet, changes: Changes) -> Fleet:
    """The fleet with ``changes`` applied; ChangeError names a removal of nothing."""
    present = {
        key_of(o)
        for o in (
            *fleet.deployments,
            *fleet.clusters,
            *fleet.classes,
            *fleet.caches,
            *fleet.replicas,
            *fleet.endpoints,
            *changes.objects,
        )
    }
    for removal in changes.removals:
        if (removal.kind, removal.namespace, removal.name) not in present:
            raise ChangeError(f"{removal}: the input has no such object to remove")
    removed = [
        d
        for d in fleet.deployments
        if key_of(d) in {(r.kind, r.namespace, r.name) for r in changes.removals}
    ]
    replicas = tuple(
        r for r in _merged(fleet.replicas, ModelReplica, changes)
        if not any(owns(d, r) for d in removed)
    )  # fmt: skip
    endpoints = tuple(
        e for e in _merged(fleet.endpoints, ModelEndpoint, changes)
        if not any(owns(d, e) for d in removed)
    )  # fmt: skip
    return replace(
        fleet,
        deployments=_merged(fleet.deployments, ModelDeployment, changes),
        clusters=_merged(fleet.clusters, InferenceCluster, changes),
        classes=_merged(fleet.classes, InferenceClass, changes),
        caches=_merged(fleet.caches, ModelCache, changes),
        replicas=replicas,
        endpoints=endpoints,
    )
