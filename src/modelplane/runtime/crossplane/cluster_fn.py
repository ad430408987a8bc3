"""The InferenceCluster function: the gRPC adapter of ``reconcile.cluster`` (docs/crossplane.md,
"How the function behaves").

It reads the cluster, its fetched InferenceClasses and its observed objects from the
request, runs ``compose_cluster`` (the core decides everything) and writes the result
into the response.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.api import (
    InferenceClass,
    InferenceCluster,
    MetricMapping,
    ModelReplica,
    TelemetryDestination,
)
from modelplane.api.inferencecluster import ClusterOccupancy
from modelplane.reconcile.cluster import ClassLookups, compose_cluster
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.freshness import State
from modelplane.runtime.crossplane.held import held_response
from modelplane.runtime.crossplane.messages import (
    FunctionRequest,
    FunctionResponse,
    Result,
)
from modelplane.runtime.crossplane.requirements import (
    DESTINATIONS,
    MAPPINGS,
    PINNED_REPLICAS,
    class_key,
    cluster_class_names,
    cluster_requirements,
)
from modelplane.runtime.wire import kept_object, observed_objects
from modelplane.scheduling.rollout import ready


def lookup_classes(cluster: InferenceCluster, required: Mapping[str, Any]) -> ClassLookups:
    """Read every ``class-<name>`` key; Refused when an item is malformed."""
    found: dict[str, InferenceClass] = {}
    missing: list[str] = []
    pending: list[str] = []
    for name in cluster_class_names(cluster):
        items = documents.required(required, class_key(name), InferenceClass)
        if items is None:
            pending.append(name)
            continue
        match = next((c for c in items if c.metadata.name == name), None)
        if match is None:
            missing.append(name)
        else:
            found[name] = match
    return ClassLookups(found, tuple(missing), tuple(pending))


def cluster_of(composite: Mapping[str, Any] | None) -> InferenceCluster:
    """The composite as an InferenceCluster; Refused when malformed."""
    cluster = documents.composite(composite, InferenceCluster)
    if cluster.spec.cluster.source == "Existing" and cluster.spec.cluster.existing is None:
        # IC-02, which the API server enforces; the runtime checks structure only.
        raise documents.Refused(
            f"invalid InferenceCluster {cluster.metadata.name}: spec.cluster: "
            "spec.cluster.existing is required when spec.cluster.source is Existing."
        )
    return cluster


def quiet(
    cluster: InferenceCluster,
    occupancy: ClusterOccupancy | None,
    replicas: Sequence[ModelReplica] | None,
) -> bool:
    """Nothing placed on the cluster is in flight: the occupancy computed now is the one it
    already published, and every replica pinned to it is Ready.

    Then the replicas it reads change only when another deployment places or removes one,
    and that deployment charges its own replica itself until the cluster publishes it: the
    answer may stay true longer (docs/crossplane.md, "Answers that stay true longer").
    """
    if replicas is None:
        return False
    published = cluster.status.occupancy if cluster.status is not None else None
    return occupancy == published and all(ready(r) for r in replicas)


def run_cluster(request: FunctionRequest) -> FunctionResponse:
    """The cluster function: requirements, composed objects, status, condition, readiness."""
    cluster = cluster_of(request.composite)
    requirements = cluster_requirements(cluster)
    try:
        classes = lookup_classes(cluster, request.required)
        # A malformed pinned replica holds the published status (occupancy included):
        # counting around it could under-count what the cluster holds.
        replicas = documents.required(request.required, PINNED_REPLICAS, ModelReplica)
        destinations = documents.required(request.required, DESTINATIONS, TelemetryDestination)
        mappings = documents.required(request.required, MAPPINGS, MetricMapping)
    except documents.Refused as refused:
        return held_response(request, str(refused), requirements, kept_object)
    observed = observed_objects({k: dict(v) for k, v in request.observed.items()})
    composed = compose_cluster(cluster, classes, observed, replicas, destinations, mappings)
    return FunctionResponse(
        resources=composed.objects,
        composite_status=composed.status.to_wire(),
        composite_ready=composed.ready,
        conditions=composed.conditions,
        results=[Result(e.severity, e.message) for e in composed.events],
        requirements=requirements,
        state=State.QUIET if quiet(cluster, composed.status.occupancy, replicas) else State.DEFAULT,
    )
