"""The deployment reconcile: one ModelDeployment to its replicas, endpoints and status.

Pure: observed state in, desired state out (docs/composition.md, "Objects, in order";
docs/composition.md, "The ModelReplica of a placement"; docs/reconcile.md, "Conditions, events and
readiness"; docs/reconcile.md, "Deletion protection").
``reconcile_deployment`` (the Crossplane deployment function, one deployment) and
``reconcile_fleet`` (``render`` and ``schedule``, every deployment of a local fleet)
both end in ``finish_deployment``, so the runtimes cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Generic, TypeVar

from modelplane.api import (
    InferenceClass,
    InferenceCluster,
    ModelCache,
    ModelDeployment,
    ModelEndpoint,
    ModelReplica,
)
from modelplane.api.inferencecluster import placement_labels
from modelplane.api.meta import is_ready as status_is_ready
from modelplane.composition import model_endpoint
from modelplane.composition.conditions import ready_flag
from modelplane.composition.delivery import SUCCESSFUL_CREATE
from modelplane.composition.observed import ObservedObject
from modelplane.composition.replica import cluster_info
from modelplane.composition.usage import Usage, replica_usage
from modelplane.events import Event
from modelplane.naming import (
    CLUSTER_LABEL,
    DRAINING_SINCE_ANNOTATION,
    MANAGED_PREFIX,
    REVISION_SINCE_ANNOTATION,
    endpoint_key,
    replica_key,
    usage_key,
)
from modelplane.reconcile.conditions import (
    PROGRESSING,
    ROLLOUT_COMPLETE,
    DeploymentStatus,
    deployment_status,
    observed_by_identity,
    ready_at,
)
from modelplane.scheduling.model import (
    CacheState,
    Clusters,
    HoldCause,
    Mode,
    Placement,
    Schedule,
)
from modelplane.scheduling.occupancy import OccupancySource
from modelplane.scheduling.replicas import (
    index_of,
    owns,
    replica_object,
)
from modelplane.scheduling.rollout import drained, draining_since, ready, since_of, timestamp
from modelplane.scheduling.scheduler import schedule, schedule_all

__all__ = [
    "DeploymentInputs",
    "Desired",
    "DeploymentResult",
    "Event",
    "Fleet",
    "finish_deployment",
    "reconcile_deployment",
    "reconcile_fleet",
]


@dataclass(frozen=True, slots=True)
class Fleet:
    """Everything a local run reads, as typed objects: the deployments and the fleet snapshot."""

    deployments: Sequence[ModelDeployment]
    clusters: Sequence[InferenceCluster]
    classes: Sequence[InferenceClass] = ()
    caches: Sequence[ModelCache] = ()
    replicas: Sequence[ModelReplica] = ()
    endpoints: Sequence[ModelEndpoint] = ()
    # The shell's clock: stamps replicas waiting for Ready and judges the progress
    # deadline. None (a plain local render): nothing is stamped, no rollout is ever stuck.
    now: datetime | None = None


@dataclass(frozen=True, slots=True)
class DeploymentInputs:
    """Everything one deployment reconcile reads.

    ``clusters`` is UNRESOLVED while the InferenceCluster list has not been fetched
    (function runtime only). ``occupancy`` says what the clusters hold already
    (``scheduling.occupancy``): None computes it from ``observed_replicas``, which must
    then hold every ModelReplica of every namespace; the function runtime passes
    ``PUBLISHED`` and only ours. ``observed_endpoints`` holds at least ours.
    """

    deployment: ModelDeployment
    clusters: Clusters
    classes: Sequence[InferenceClass]
    cache: CacheState
    observed_replicas: Sequence[ModelReplica]
    observed_endpoints: Sequence[ModelEndpoint] = ()
    occupancy: OccupancySource = None
    now: datetime | None = None  # the shell's clock, as ``Fleet.now``
    # Our observed Usages by resource key (function runtime; a local run observes none).
    observed_usages: Mapping[str, ObservedObject] | None = None


M = TypeVar("M", ModelReplica, ModelEndpoint, Usage)


@dataclass(frozen=True)
class Desired(Generic[M]):
    """One composed ModelReplica, Usage or ModelEndpoint: its resource key, the object, its
    readiness.

    Typed: the shells write it to the wire (``runtime/wire.composed``). ``ready`` True marks
    the resource ready; None leaves it unmarked.
    """

    key: str
    object: M
    ready: bool | None = None


@dataclass(frozen=True, slots=True)
class DeploymentResult:
    """The desired state and status of one deployment reconcile."""

    deployment: ModelDeployment
    cache: CacheState
    replicas: list[Desired[ModelReplica]]
    endpoints: list[Desired[ModelEndpoint]]
    status: DeploymentStatus
    events: list[Event]
    composite_ready: bool | None  # True/False: set explicitly; None: left to Crossplane
    schedule: Schedule
    # Some replica waits for Ready: the status is judged against the clock (the progress
    # deadline), so the same inputs give another result once time passes.
    reads_clock: bool = False
    # One per emitted replica, in the same order: its cluster is not deleted while it is there.
    usages: list[Desired[Usage]] = field(default_factory=list)
    # Nothing left to do that the fleet could change: every desired replica scheduled and
    # Ready on a Ready cluster, nothing moving, rolling, waiting or draining (``settled``).
    settled: bool = False


def reconcile_deployment(inputs: DeploymentInputs) -> DeploymentResult:
    """Schedule one deployment and derive its replicas, endpoints and status."""
    result = schedule(
        inputs.deployment,
        inputs.clusters,
        inputs.classes,
        inputs.cache,
        inputs.observed_replicas,
        inputs.occupancy,
    )
    return finish_deployment(
        inputs.deployment,
        result,
        inputs.cache,
        inputs.observed_replicas,
        inputs.observed_endpoints,
        now=inputs.now,
        observed_usages=inputs.observed_usages,
        clusters=_by_name(inputs.clusters),
    )


def reconcile_fleet(fleet: Fleet) -> list[DeploymentResult]:
    """Reconcile every deployment of a local fleet, in (namespace, name) order.

    Each deployment is scheduled seeing the replicas the earlier ones were given
    (``schedule_all``); readiness is read from the input's replicas,
    never from what an earlier deployment got.
    """
    scheduled = schedule_all(
        fleet.deployments, fleet.clusters, fleet.classes, fleet.caches, fleet.replicas
    )
    return [
        finish_deployment(
            item.deployment,
            item.schedule,
            item.cache,
            fleet.replicas,
            fleet.endpoints,
            now=fleet.now,
            clusters=_by_name(fleet.clusters),
        )
        for item in scheduled
    ]


def _by_name(clusters: Clusters) -> Mapping[str, InferenceCluster]:
    """The clusters by name (none while unresolved): the first of a name wins."""
    if not isinstance(clusters, Sequence):
        return {}
    out: dict[str, InferenceCluster] = {}
    for cluster in clusters:
        out.setdefault(cluster.metadata.name or "", cluster)
    return out


def finish_deployment(
    deployment: ModelDeployment,
    result: Schedule,
    cache: CacheState,
    observed_replicas: Sequence[ModelReplica],
    observed_endpoints: Sequence[ModelEndpoint],
    *,
    now: datetime | None = None,
    observed_usages: Mapping[str, ObservedObject] | None = None,
    clusters: Mapping[str, InferenceCluster] | None = None,
) -> DeploymentResult:
    """Everything after the schedule: replica objects, their Usages, endpoints, status and
    readiness.

    A superseded replica is emitted beside the desired set, with its endpoint while
    it covers for a replacement; once it retires, its endpoint is marked draining (routes
    drop it, its backend stays) and the replica and the endpoint go once the drain is over
    (docs/reconcile.md, "Drain before delete"). Every emitted replica comes with the Usage
    that keeps its cluster from being deleted, and goes with it (docs/reconcile.md,
    "Deletion protection"). ``clusters``: the fetched clusters by name; each cluster's placement
    labels are stamped on its replicas (and so their endpoints) under the managed labels,
    and what each replica's composition reads of its cluster into its ``spec.clusterInfo``
    (a replica whose cluster is not among them keeps its own).
    """
    ours = observed_by_identity(deployment, observed_replicas)
    endpoints_seen = _endpoints_by_identity(deployment, observed_endpoints)
    leaving = [
        s
        for s in result.superseded
        if not s.retiring or _draining(endpoints_seen.get(_identity(s.placement)), now)
    ]
    # What the status says of the moves is what this reconcile emits: a retired replica
    # whose endpoint has drained (or is gone) is removed now, so it is no longer moving.
    result = replace(result, superseded=tuple(leaving))
    stamps = _since(result, ours, now)
    status = deployment_status(
        deployment,
        result,
        cache,
        observed_replicas,
        now=now,
        waiting_since=stamps,
    )
    # Every emitted replica in (cluster, index) order; a retiring one keeps its endpoint
    # marked draining (routes drop it, its backend stays) until the drain is over, then the
    # endpoint and the replica go together.
    emitted = sorted(
        [(p, True) for p in result.replicas] + [(s.placement, not s.retiring) for s in leaving],
        key=lambda item: (item[0].cluster, item[0].index),
    )
    retiring = {_identity(s.placement) for s in leaving if s.retiring}
    placements = [p for p, _ in emitted]
    routed = [route for _, route in emitted]
    fleet = clusters or {}
    models = []
    for p in placements:
        cluster = fleet.get(p.cluster)
        placed = _informed(_placed(replica_object(deployment, p), cluster), cluster)
        models.append(_stamped(placed, stamps.get(p.name)))
    replicas = [
        Desired(replica_key(p.cluster, p.index), model, True if ready_at(ours, p) else None)
        for p, model in zip(placements, models, strict=True)
    ]
    usages = _usages(placements, models, observed_usages or {})
    held = result.mode is Mode.HELD
    endpoints = [
        obj
        for p, model, route in zip(placements, models, routed, strict=True)
        if (
            obj := _emitted_endpoint(
                p, model, route, ours, endpoints_seen, held, retiring, now, fleet.get(p.cluster)
            )
        )
        is not None
    ]
    draining = any(draining_since(e.object.metadata.annotations) is not None for e in endpoints)
    reads_clock = bool(stamps) or (draining and now is not None)
    return DeploymentResult(
        deployment=deployment,
        cache=cache,
        replicas=replicas,
        endpoints=endpoints,
        status=status,
        events=list(status.events),
        composite_ready=_composite_ready(result, status),
        schedule=result,
        # A drain ends with time: the same inputs remove the backend once it is over.
        reads_clock=reads_clock,
        usages=usages,
        settled=settled(result, status, fleet, draining or reads_clock),
    )


def settled(
    result: Schedule,
    status: DeploymentStatus,
    clusters: Mapping[str, InferenceCluster],
    in_flight: bool = False,
) -> bool:
    """The deployment has nothing left to do that only the fleet could change.

    Parked; or every desired replica scheduled and Ready, every condition True (Progressing
    ``RolloutComplete``), nothing moving, rolling, held back or draining (``in_flight``), and
    every replica on a cluster that is fetched and Ready. Then what it must react to at
    once reaches it through its own replicas and endpoints, which Crossplane watches, and
    the fleet it reads (free capacity, a new cluster) matters only for work it does not
    have: its answer may stay true longer (docs/crossplane.md, "Answers that stay true
    longer").
    """
    if result.mode is Mode.PARKED:
        return True
    if result.mode is not Mode.NORMAL or in_flight:
        return False
    rollout = result.rollout
    if (
        result.superseded
        or result.waiting
        or (rollout is not None and (rollout.outdated or rollout.updating))
    ):
        return False
    if not status.total == status.ready == result.desired:
        return False
    for c in status.conditions:
        expected = ("True", ROLLOUT_COMPLETE) if c.type == PROGRESSING else ("True", c.reason)
        if (c.status, c.reason) != expected:
            return False
    return all(
        (cluster := clusters.get(p.cluster)) is not None and status_is_ready(cluster.status)
        for p in result.replicas
    )


def _usages(
    placements: Sequence[Placement],
    models: Sequence[ModelReplica],
    observed: Mapping[str, ObservedObject],
) -> list[Desired[Usage]]:
    """The Usage of each emitted replica, ready once it exists.

    Ready as a provider Object under ``SuccessfulCreate`` is (``ready_flag``): once observed.
    Its own ``Ready`` (Crossplane's usage controller marks it once the cluster carries the
    in-use label) is not waited for, since Crossplane counts a composed resource the function
    leaves unmarked as not ready: a control plane with usages turned off would hold the
    deployment's Ready false forever.
    """
    out: list[Desired[Usage]] = []
    for p, model in zip(placements, models, strict=True):
        key = usage_key(p.cluster, p.index)
        out.append(
            Desired(key, replica_usage(model), ready_flag(SUCCESSFUL_CREATE, observed.get(key)))
        )
    return out


def _identity(placement: Placement) -> tuple[str, int]:
    return (placement.cluster, placement.index)


def _emitted_endpoint(
    placement: Placement,
    replica: ModelReplica,
    route: bool,
    ours: dict[tuple[str, int], ModelReplica],
    seen: dict[tuple[str, int], ModelEndpoint],
    held: bool,
    retiring: set[tuple[str, int]],
    now: datetime | None,
    cluster: InferenceCluster | None = None,
) -> Desired[ModelEndpoint] | None:
    """The endpoint of an emitted replica: routed, draining (retiring) or none."""
    if route:
        return _endpoint(placement, replica, ours, seen, held, cluster)
    if _identity(placement) in retiring:
        return _withdrawn(placement, seen, now)
    return None


def _draining(observed: ModelEndpoint | None, now: datetime | None) -> bool:
    """A retiring replica stays while its endpoint is observed and its drain is not over.

    An endpoint observed without the mark is withdrawn in this reconcile (the drain starts);
    without an observed endpoint nothing routes to the replica and it goes at once.
    """
    if observed is None:
        return False
    since = draining_since(observed.metadata.annotations)
    return since is None or not drained(since, now)


def _withdrawn(
    placement: Placement, seen: dict[tuple[str, int], ModelEndpoint], now: datetime | None
) -> Desired[ModelEndpoint] | None:
    """The observed endpoint of a retiring replica, marked draining since its withdrawal."""
    observed = seen.get(_identity(placement))
    if observed is None:
        return None
    since = draining_since(observed.metadata.annotations)
    if since is None:
        since = timestamp(now) if now is not None else ""
    wire = observed.to_wire()
    wire.pop("status", None)
    meta = observed.metadata
    wire["metadata"] = {
        "name": meta.name,
        "namespace": meta.namespace,
        "labels": dict(meta.labels or {}),
        "annotations": {DRAINING_SINCE_ANNOTATION: since},
    }
    endpoint = ModelEndpoint.model_validate(wire)
    # Its backend still exists: a draining endpoint does not make the deployment unready.
    ready = status_is_ready(observed.status) or None
    return Desired(endpoint_key(*_identity(placement)), endpoint, ready)


def _since(
    result: Schedule, ours: dict[tuple[str, int], ModelReplica], now: datetime | None
) -> dict[str, str]:
    """The ``revision-since`` stamp of every replica of the desired set waiting for Ready.

    A replica created or updated now is stamped ``now``; one still waiting at the revision it
    was stamped for keeps its stamp; a Ready one has none.
    """
    outdated = set(result.rollout.outdated) if result.rollout is not None else set()
    out: dict[str, str] = {}
    for p in result.replicas:
        observed = ours.get((p.cluster, p.index)) if p.retained else None
        if p.revised or observed is None:
            stamp = timestamp(now) if now is not None else None
        elif ready(observed) or p.name in outdated:
            stamp = None  # Ready, or not at the current revision: nothing awaited of it
        else:
            stamp = since_of(observed)
        if stamp is not None:
            out[p.name] = stamp
    return out


def _placed(model: ModelReplica, cluster: InferenceCluster | None) -> ModelReplica:
    """The replica with its cluster's placement labels over its own, the managed ones kept.

    IC-13 keeps placement labels out of modelplane.ai/, so they never shadow a managed label;
    they do win over a template label of the same key: they describe where it runs.
    """
    labels = placement_labels(cluster) if cluster is not None else None
    if not labels:
        return model
    own = dict(model.metadata.labels or {})
    managed = {k: v for k, v in own.items() if k.startswith(MANAGED_PREFIX)}
    merged = {**own, **labels, **managed}
    return model.model_copy(
        update={"metadata": model.metadata.model_copy(update={"labels": merged})}
    )


def _informed(model: ModelReplica, cluster: InferenceCluster | None) -> ModelReplica:
    """The replica with what its composition reads of its cluster in ``spec.clusterInfo``.

    Never part of its identity or revision (its name and template hash are computed without
    it), so a fresher stamp updates the replica in place and rolls nothing. A cluster not
    fetched leaves the replica's own stamp, or none.
    """
    if cluster is None:
        return model
    info = cluster_info(model, cluster)
    if model.spec.cluster_info == info:
        return model
    return model.model_copy(update={"spec": model.spec.model_copy(update={"cluster_info": info})})


def _stamped(model: ModelReplica, since: str | None) -> ModelReplica:
    if since is None:
        return model
    annotations = {REVISION_SINCE_ANNOTATION: since}
    return model.model_copy(
        update={"metadata": model.metadata.model_copy(update={"annotations": annotations})}
    )


def _endpoint(
    placement: Placement,
    replica: ModelReplica,
    ours: dict[tuple[str, int], ModelReplica],
    seen: dict[tuple[str, int], ModelEndpoint],
    held: bool,
    cluster: InferenceCluster | None = None,
) -> Desired[ModelEndpoint] | None:
    """The ModelEndpoint of a ready replica whose cluster has a gateway (over HTTPS where
    ``cluster``, the replica's, declares ``spec.gateway.tls``)."""
    if not ready_at(ours, placement):
        return None
    identity = (placement.cluster, placement.index)
    observed = seen.get(identity)
    key = endpoint_key(*identity)
    if held:
        # A held reconcile re-emits what it observed and creates nothing.
        return (
            None
            if observed is None
            else Desired(key, observed, status_is_ready(observed.status) or None)
        )
    gateway = cluster.spec.gateway if cluster is not None else None
    tls = gateway.tls if gateway is not None else None
    endpoint = model_endpoint(
        replica, True, placement.gateway_address, tls.hostname if tls is not None else None
    )
    if endpoint is None:
        return None
    return Desired(
        key, endpoint, True if observed is not None and status_is_ready(observed.status) else None
    )


def _endpoints_by_identity(
    deployment: ModelDeployment, endpoints: Iterable[ModelEndpoint]
) -> dict[tuple[str, int], ModelEndpoint]:
    """Our observed endpoints by (cluster, index) labels; the first by name wins."""
    out: dict[tuple[str, int], ModelEndpoint] = {}
    for endpoint in sorted(endpoints, key=lambda e: e.metadata.name or ""):
        if owns(deployment, endpoint):
            labels = endpoint.metadata.labels or {}
            out.setdefault((labels.get(CLUSTER_LABEL, ""), index_of(labels)), endpoint)
    return out


def _composite_ready(result: Schedule, status: DeploymentStatus) -> bool | None:
    """Composite readiness of the deployment."""
    if result.mode is Mode.PARKED:
        return True
    if status.total == 0 or result.cause is HoldCause.INVALID_NODE_SELECTOR:
        return False
    return None
