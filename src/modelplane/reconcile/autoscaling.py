"""Autoscaling a ModelDeployment on the fleet's load: a KEDA ScaledObject (docs/telemetry.md,
"Autoscaling").

Pure. A deployment opts in with the annotation ``modelplane.ai/autoscale-destination`` naming
a TelemetryDestination with a ``query`` endpoint. KEDA (v2.20.2) then drives the deployment's
scale subresource (``spec.replicas``) from a Prometheus query of the vocabulary: the requests
waiting in its engines across every cluster, against a target per replica. KEDA runs on the
control plane beside the ModelDeployment; credentials reach it through a TriggerAuthentication
naming a Secret of the deployment's namespace, never copied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from modelplane.api import ModelDeployment, TelemetryDestination
from modelplane.api.base import GROUP_VERSION
from modelplane.composition.types import Json
from modelplane.naming import DEPLOYMENT_LABEL

KEDA_API = "keda.sh/v1alpha1"
DESTINATION_ANNOTATION = "modelplane.ai/autoscale-destination"
TARGET_ANNOTATION = "modelplane.ai/autoscale-waiting-per-replica"
MIN_ANNOTATION = "modelplane.ai/autoscale-min-replicas"
MAX_ANNOTATION = "modelplane.ai/autoscale-max-replicas"
DEFAULT_TARGET = 4
DEFAULT_MIN = 1
DEFAULT_MAX = 10
# The seed's bound on spec.replicas.
MAX_REPLICAS = 100
# KEDA's Secret parameters per auth mode (kedacore/keda v2.20.2
# pkg/scalers/authentication/authentication_types.go).
AUTH_PARAMETERS: Mapping[str, tuple[str, ...]] = {
    "Bearer": ("bearerToken",),
    "Basic": ("username", "password"),
}


@dataclass(frozen=True, slots=True)
class Autoscaler:
    """What a deployment's opt-in composes, or why it composes nothing."""

    objects: tuple[Json, ...]
    problem: str | None = None


def _count(annotations: Mapping[str, str], key: str, default: int, low: int) -> int | str:
    raw = annotations.get(key)
    if raw is None:
        return default
    if not raw.isdigit() or not low <= int(raw) <= MAX_REPLICAS:
        return f"metadata.annotations[{key}]: {raw!r} is not an integer {low} to {MAX_REPLICAS}"
    return int(raw)


def waiting_query(deployment: ModelDeployment) -> str:
    """PromQL: the requests waiting in the deployment's engines, summed over the fleet."""
    name = deployment.metadata.name or ""
    namespace = deployment.metadata.namespace or "default"
    return f'sum(modelplane_requests_waiting{{deployment="{name}",namespace="{namespace}"}})'


def autoscaler(
    deployment: ModelDeployment, destinations: Sequence[TelemetryDestination]
) -> Autoscaler | None:
    """The ScaledObject (and TriggerAuthentication) of an opted-in deployment; None: no opt-in."""
    annotations = deployment.metadata.annotations or {}
    wanted = annotations.get(DESTINATION_ANNOTATION)
    if wanted is None:
        return None
    destination = next((d for d in destinations if d.metadata.name == wanted), None)
    where = f"metadata.annotations[{DESTINATION_ANNOTATION}]"
    if destination is None:
        return Autoscaler((), f"{where}: no TelemetryDestination {wanted}")
    query = destination.spec.query
    if query is None:
        return Autoscaler((), f"{where}: TelemetryDestination {wanted} has no spec.query")
    target = _count(annotations, TARGET_ANNOTATION, DEFAULT_TARGET, 1)
    low = _count(annotations, MIN_ANNOTATION, DEFAULT_MIN, 0)
    high = _count(annotations, MAX_ANNOTATION, DEFAULT_MAX, 1)
    for value in (target, low, high):
        if isinstance(value, str):
            return Autoscaler((), value)
    assert isinstance(target, int) and isinstance(low, int) and isinstance(high, int)
    if low > high:
        return Autoscaler(
            (), f"metadata.annotations[{MIN_ANNOTATION}]: {low} is over the maximum {high}"
        )
    name = deployment.metadata.name or ""
    namespace = deployment.metadata.namespace or "default"
    labels = {DEPLOYMENT_LABEL: name}
    metadata: Json = {"name": name, "namespace": namespace, "labels": labels}
    trigger: Json = {
        "type": "prometheus",
        "metadata": {
            "serverAddress": query.server_address,
            "query": waiting_query(deployment),
            # An AverageValue target: KEDA asks for ceil(waiting / threshold) replicas.
            "threshold": str(target),
            "activationThreshold": "0",
        },
    }
    objects: list[Json] = []
    auth = query.authentication
    if auth is not None:
        auth_name = f"{name}-telemetry"
        trigger["metadata"]["authModes"] = auth.mode.lower()
        trigger["authenticationRef"] = {"name": auth_name}
        objects.append(
            {
                "apiVersion": KEDA_API,
                "kind": "TriggerAuthentication",
                "metadata": {"name": auth_name, "namespace": namespace, "labels": dict(labels)},
                "spec": {
                    "secretTargetRef": [
                        {"parameter": p, "name": auth.secret_name, "key": p}
                        for p in AUTH_PARAMETERS[auth.mode]
                    ]
                },
            }
        )
    scaled: Json = {
        "apiVersion": KEDA_API,
        "kind": "ScaledObject",
        "metadata": metadata,
        "spec": {
            # The ModelDeployment's scale subresource: spec.replicas, which 0 parks.
            "scaleTargetRef": {
                "apiVersion": GROUP_VERSION,
                "kind": "ModelDeployment",
                "name": name,
            },
            "minReplicaCount": low,
            "maxReplicaCount": high,
            "triggers": [trigger],
        },
    }
    return Autoscaler((scaled, *objects))
