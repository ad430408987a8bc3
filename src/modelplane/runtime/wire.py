"""The edge between the wire and the core, shared by both runtimes (local and Crossplane).

Inward: an observed composed resource (a wire dict) becomes the typed ``ObservedObject``
the core reads. Outward: the core's typed results become the wire dicts ``render`` prints
and a function response carries. Nothing else in the package turns one into the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from modelplane.api.meta import Condition, ConditionStatus
from modelplane.composition.observed import ObservedObject, RouteParent
from modelplane.composition.types import ComposedObject, Json
from modelplane.reconcile.conditions import DeploymentStatus
from modelplane.reconcile.deployment import Desired
from modelplane.scheduling.model import ExplainEntry

_STATUSES: tuple[ConditionStatus, ...] = ("True", "False", "Unknown")

# Metadata of an observed object worth re-emitting; the rest (uid, resourceVersion,
# managedFields, ...) belongs to the API server.
_KEPT_METADATA = ("name", "namespace", "labels", "annotations")


def condition_wire(c: Condition) -> dict[str, str]:
    """The four keys printed for a condition, ``message`` "" when empty (docs/reconcile.md,
    "Conditions, events and readiness").
    """
    return {
        "type": c.type,
        "status": c.status,
        "reason": c.reason or "",
        "message": c.message or "",
    }


def explain_wire(entries: Iterable[ExplainEntry]) -> list[dict[str, str]]:
    """Why each cluster took no new replica, as ``schedule -o json`` and ``plan -o json``
    print it (docs/cli.md)."""
    return [{"cluster": e.cluster, "reason": e.reason, "message": e.message} for e in entries]


def replicas_wire(status: DeploymentStatus) -> dict[str, int]:
    """A ModelDeployment's ``status.replicas`` as written: ready, then total."""
    return {"ready": status.ready, "total": status.total}


def deployment_status_wire(status: DeploymentStatus) -> dict[str, object]:
    """A ModelDeployment's status block as render prints it: replicas, then conditions."""
    return {
        "replicas": replicas_wire(status),
        "conditions": [condition_wire(c) for c in status.conditions],
    }


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def conditions_of(raw: object) -> tuple[Condition, ...]:
    """A wire condition list as ``Condition``s; an entry without a string type or a valid
    status says nothing and is left out."""
    out: list[Condition] = []
    for item in _list(raw):
        if not isinstance(item, Mapping):
            continue
        type_, state = item.get("type"), item.get("status")
        if isinstance(type_, str) and state in _STATUSES:
            out.append(
                Condition(
                    type=type_,
                    status=state,
                    reason=_text(item.get("reason")),
                    message=_text(item.get("message")),
                )
            )
    return tuple(out)


def kept_object(observed: Json) -> Json:
    """An observed object re-emitted as desired: its apiVersion, kind, spec and identity."""
    metadata = observed.get("metadata") or {}
    kept: Json = {"apiVersion": observed.get("apiVersion"), "kind": observed.get("kind")}
    kept_meta = {k: metadata[k] for k in _KEPT_METADATA if k in metadata}
    if kept_meta:
        kept["metadata"] = kept_meta
    if "spec" in observed:
        kept["spec"] = observed["spec"]
    return kept


def _nonempty(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _view(raw: Mapping[str, Any], kept: Json) -> ObservedObject:
    status = _mapping(raw.get("status"))
    spec = _mapping(raw.get("spec"))
    at_provider = _mapping(status.get("atProvider"))
    manifest = at_provider.get("manifest")
    policy = _mapping(spec.get("readiness")).get("policy")
    return ObservedObject(
        name=_text(_mapping(raw.get("metadata")).get("name")),
        uid=_nonempty(_mapping(raw.get("metadata")).get("uid")),
        conditions=conditions_of(status.get("conditions")),
        readiness_policy=policy if isinstance(policy, str) else None,
        reported=bool(manifest),
        remote=_view(manifest, {}) if isinstance(manifest, Mapping) else None,
        gateway_class_name=_nonempty(spec.get("gatewayClassName")),
        controller_name=_nonempty(spec.get("controllerName")),
        addresses=tuple(
            value
            for item in _list(status.get("addresses"))
            if (value := _nonempty(_mapping(item).get("value"))) is not None
        ),
        parents=tuple(
            RouteParent(
                _text(_mapping(_mapping(p).get("parentRef")).get("name")),
                conditions_of(_mapping(p).get("conditions")),
            )
            for p in _list(status.get("parents"))
        ),
        active=bool(status.get("active")),
        phase=_text(status.get("phase")),
        email=_nonempty(at_provider.get("email")),
        project=_nonempty(at_provider.get("project")),
        kept=kept,
    )


def observed_object(raw: Json) -> ObservedObject:
    """The typed view of one observed object (its integers already restored)."""
    return _view(raw, kept_object(raw))


def observed_objects(observed: Mapping[str, Json]) -> dict[str, ObservedObject]:
    """The typed views of observed composed resources, by resource key."""
    return {key: observed_object(raw) for key, raw in observed.items()}


_DESIRED_METADATA = ("name", "namespace", "labels", "annotations")


def desired_object(obj: Json) -> Json:
    """A composed ModelReplica, Usage or ModelEndpoint as desired state.

    Held objects are re-emitted from observed state, which carries what Crossplane and
    the API server added: ``spec.crossplane`` (kept current by the composed XR's own
    reconciler), server-owned metadata and status. Desired state is an apply intent, so
    only the fields this reconcile owns are kept.
    """
    out = {k: v for k, v in obj.items() if k != "status"}
    metadata = obj.get("metadata") or {}
    out["metadata"] = {k: metadata[k] for k in _DESIRED_METADATA if k in metadata}
    spec = obj.get("spec")
    if isinstance(spec, dict) and "crossplane" in spec:
        out["spec"] = {k: v for k, v in spec.items() if k != "crossplane"}
    return out


def composed(desired: Desired[Any]) -> ComposedObject:
    """A composed ModelReplica, Usage or ModelEndpoint as the desired object written to the wire."""
    return ComposedObject(desired.key, desired_object(desired.object.to_wire()), desired.ready)
