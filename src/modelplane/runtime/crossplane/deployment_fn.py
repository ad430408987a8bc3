"""The ModelDeployment function: fan-out, scheduling, endpoints and status (docs/reconcile.md,
"Conditions, events and readiness").

The decisions are ``modelplane.reconcile.deployment.reconcile_deployment``, the same
code ``render`` runs. This module gathers its inputs from the request and writes its result into the
response.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from modelplane.api import (
    InferenceClass,
    InferenceCluster,
    ModelCache,
    ModelDeployment,
    ModelEndpoint,
    ModelReplica,
)
from modelplane.api.meta import UNRESOLVED
from modelplane.composition.observed import ObservedObject
from modelplane.naming import ENDPOINT_KEY_PREFIX, REPLICA_KEY_PREFIX, USAGE_KEY_PREFIX
from modelplane.reconcile.conditions import invalid_input_status
from modelplane.reconcile.deployment import (
    DeploymentInputs,
    DeploymentResult,
    reconcile_deployment,
)
from modelplane.runtime.crossplane import documents
from modelplane.runtime.crossplane.freshness import State
from modelplane.runtime.crossplane.held import held_resources
from modelplane.runtime.crossplane.messages import (
    FunctionRequest,
    FunctionResponse,
    Requirement,
    Result,
)
from modelplane.runtime.crossplane.requirements import (
    CACHE,
    CLASSES,
    CLUSTERS,
    deployment_requirements,
)
from modelplane.runtime.wire import composed, desired_object, observed_object, replicas_wire
from modelplane.scheduling.model import (
    CACHE_NONE,
    CACHE_UNRESOLVED,
    CacheState,
    Clusters,
    cache_state,
)
from modelplane.scheduling.occupancy import PUBLISHED


def wall_clock() -> datetime:
    """The function's clock: now, in UTC."""
    return datetime.now(UTC)


# The shell owns the clock: the core is told "now" to stamp replicas waiting for
# Ready and to judge the progress deadline. Tests replace it to replay a fixed sequence.
clock: Callable[[], datetime] = wall_clock


def cache_lookup(deployment: ModelDeployment, items: Sequence[ModelCache] | None) -> CacheState:
    """The three-state cache lookup: ``items`` None is not fetched yet."""
    if items is None and deployment.spec.template.spec.model_cache_ref is not None:
        return CACHE_UNRESOLVED
    return cache_state(deployment, items or ())


def observed_composed(
    observed: Mapping[str, Mapping[str, Any]],
) -> tuple[list[ModelReplica], list[ModelEndpoint]]:
    """The deployment's observed ModelReplicas and ModelEndpoints, by their resource keys.

    Refused when one of them is malformed: dropping it would delete it.
    """
    replicas: list[ModelReplica] = []
    endpoints: list[ModelEndpoint] = []
    for key in sorted(observed):
        if key.startswith(REPLICA_KEY_PREFIX):
            replicas.append(documents.observed(key, observed[key], ModelReplica))
        elif key.startswith(ENDPOINT_KEY_PREFIX):
            endpoints.append(documents.observed(key, observed[key], ModelEndpoint))
    return replicas, endpoints


def observed_usages(observed: Mapping[str, Mapping[str, Any]]) -> dict[str, ObservedObject]:
    """The deployment's observed Usages by resource key, as views (only their presence is
    read: a Usage is ready once it exists)."""
    return {
        key: observed_object(documents.restore(observed[key]))
        for key in sorted(observed)
        if key.startswith(USAGE_KEY_PREFIX)
    }


def gather_inputs(deployment: ModelDeployment, request: FunctionRequest) -> DeploymentInputs:
    """The reconcile's inputs from the request; Refused on a malformed input."""
    ours, endpoints = observed_composed(request.observed)
    usages = observed_usages(request.observed)
    if deployment.spec.replicas == 0:
        # Parked: nothing is looked up.
        return DeploymentInputs(
            deployment=deployment,
            clusters=UNRESOLVED,
            classes=[],
            cache=CACHE_NONE,
            observed_replicas=ours,
            observed_endpoints=endpoints,
            now=clock(),
            observed_usages=usages,
        )
    clusters = documents.required(request.required, CLUSTERS, InferenceCluster)
    classes = documents.required(request.required, CLASSES, InferenceClass)
    caches = (
        documents.required(request.required, CACHE, ModelCache)
        if deployment.spec.template.spec.model_cache_ref is not None
        else None
    )
    fleet: Clusters = UNRESOLVED if clusters is None else clusters
    # Only our own replicas: what every other one holds comes with its cluster, in the
    # status.occupancy the InferenceCluster function publishes.
    return DeploymentInputs(
        deployment=deployment,
        clusters=fleet,
        classes=classes or [],
        cache=cache_lookup(deployment, caches),
        observed_replicas=ours,
        observed_endpoints=endpoints,
        occupancy=PUBLISHED,
        now=clock(),
        observed_usages=usages,
    )


def to_response(result: DeploymentResult, requirements: list[Requirement]) -> FunctionResponse:
    """The reconcile result as a function response.

    Conditions go to the response's condition list (Crossplane owns
    ``status.conditions`` and stamps the transition times); ``status.replicas`` goes to
    the composite's desired status.
    """
    status = {"replicas": replicas_wire(result.status)}
    return FunctionResponse(
        resources=[
            *map(composed, result.replicas),
            *map(composed, result.usages),
            *map(composed, result.endpoints),
        ],
        composite_status=status,
        composite_ready=result.composite_ready,
        conditions=list(result.status.conditions),
        results=[Result(e.severity, e.message) for e in result.events],
        requirements=requirements,
        timeless=not result.reads_clock,
        # A settled deployment's answer stays true longer (freshness.READS).
        state=State.SETTLED if result.settled else State.DEFAULT,
    )


def run_deployment(request: FunctionRequest) -> FunctionResponse:
    """The deployment function.

    A malformed composite is Fatal (dispatch): nothing about it can be said. A malformed
    observed or fetched input is not: the held state comes back with a Warning and
    conditions, so the status survives a bad input.
    """
    deployment = documents.composite(request.composite, ModelDeployment)
    requirements = deployment_requirements(deployment)
    try:
        inputs = gather_inputs(deployment, request)
    except documents.Refused as refused:
        return held_response(deployment, request, str(refused), requirements)
    return to_response(reconcile_deployment(inputs), requirements)


def held_response(
    deployment: ModelDeployment,
    request: FunctionRequest,
    problem: str,
    requirements: list[Requirement],
) -> FunctionResponse:
    """Every observed replica, Usage and endpoint re-emitted as it is, a Warning and the held
    status.

    The observed objects are re-emitted raw (``held``), since one of them may be the
    malformed input: dropping it from the desired state would delete it (and dropping a
    replica's Usage would let its cluster be deleted under it).
    """
    kept = held_resources(
        request.observed,
        desired_object,
        keep=lambda key: key.startswith(
            (REPLICA_KEY_PREFIX, USAGE_KEY_PREFIX, ENDPOINT_KEY_PREFIX)
        ),
    )
    replicas = sum(1 for obj in kept if obj.key.startswith(REPLICA_KEY_PREFIX))
    status = invalid_input_status(deployment, problem, replicas)
    return FunctionResponse(
        resources=kept,
        composite_status={"replicas": replicas_wire(status)},
        composite_ready=None,
        conditions=list(status.conditions),
        results=[Result(e.severity, e.message) for e in status.events],
        requirements=requirements,
    )
