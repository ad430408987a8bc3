"""The ModelReplica function: one replica's Objects on its cluster (docs/composition.md, "Objects,
in order").

The composition itself is ``modelplane.composition.compose_replica``, the same code
``render`` runs; this module only reads the request and writes the response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.api import InferenceCluster, ModelReplica
from modelplane.api.meta import UNRESOLVED, Unresolved
from modelplane.composition import compose_replica
from modelplane.composition.observed import ObservedObject
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.freshness import State
from modelplane.runtime.crossplane.held import held_response
from modelplane.runtime.crossplane.messages import (
    FunctionRequest,
    FunctionResponse,
    Result,
)
from modelplane.runtime.crossplane.requirements import CLUSTER, replica_requirements
from modelplane.runtime.crossplane.structs import integral_floats_to_int
from modelplane.runtime.wire import kept_object, observed_object


def pick_cluster(items: list[InferenceCluster] | None, name: str) -> InferenceCluster | None:
    """The fetched cluster named ``name``, if any."""
    return next((c for c in items or () if c.metadata.name == name), None)


def observed_objects(observed: Mapping[str, Mapping[str, Any]]) -> dict[str, ObservedObject]:
    """The observed provider-kubernetes Objects, their integers restored, as typed views.

    The Objects carry remote kinds no schema here describes; their numeric fields
    (replicas, ports, probe timings) are integers, and held objects are re-emitted.
    """
    return {
        key: observed_object(integral_floats_to_int(dict(raw))) for key, raw in observed.items()
    }


def run_replica(request: FunctionRequest) -> FunctionResponse:
    """The replica function: requirement, composed Objects, conditions, events, readiness.

    A replica its deployment stamped (``spec.clusterInfo``) requires and reads nothing
    else; one written by an older release requires its InferenceCluster.
    """
    replica = documents.composite(request.composite, ModelReplica)
    requirements = replica_requirements(replica)
    stamped = replica.spec.cluster_info is not None
    cluster: InferenceCluster | Unresolved | None = UNRESOLVED
    if not stamped:
        try:
            items = documents.required(request.required, CLUSTER, InferenceCluster)
        except documents.Refused as refused:
            return held_response(request, str(refused), requirements, kept_object)
        if items is not None:
            cluster = pick_cluster(items, replica.spec.cluster_name)
    composition = compose_replica(replica, cluster, observed_objects(request.observed))
    return FunctionResponse(
        resources=list(composition.objects),
        composite_ready=composition.ready,
        conditions=composition.conditions,
        results=[Result(e.severity, e.message) for e in composition.events],
        requirements=requirements,
        state=State.STAMPED if stamped else State.DEFAULT,
    )
