"""The replica function: one ModelReplica and its InferenceCluster to delivered objects.

Pure: the same replica, cluster and observed objects always give the same result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from modelplane.api import InferenceCluster, ModelReplica
from modelplane.api.inferencecluster import GatewayImplementation
from modelplane.api.meta import UNRESOLVED, Condition, Unresolved
from modelplane.api.modelreplica import ClusterInfo, ClusterInfoPool
from modelplane.composition.conditions import (
    ClusterProblem,
    composite_ready,
    readiness_policy,
    ready_flag,
    replica_conditions,
    replica_events,
)
from modelplane.composition.delivery import readiness, remote_objects, wrap
from modelplane.composition.members import containers_of, engine_container
from modelplane.composition.names import replica_names, workload_key
from modelplane.composition.observed import Observed
from modelplane.composition.routing import gateway_implementation
from modelplane.composition.taints import TAINT_BY_DRIVER, pool_drivers
from modelplane.composition.types import ComposedObject, Stack
from modelplane.events import Event
from modelplane.naming import PROVIDER_CONFIG_KIND, provider_config_name


@dataclass(frozen=True, slots=True)
class ReplicaComposition:
    """What the replica function returns for one reconcile."""

    objects: list[ComposedObject]
    conditions: list[Condition]
    events: list[Event] = field(default_factory=list)
    # False: explicitly not ready; None: left to Crossplane (docs/reconcile.md, "ModelReplica
    # conditions").
    ready: bool | None = None
    # True when the cluster was unresolved and observed objects were kept (docs/composition.md, "The
    # ModelReplica of a placement").
    held: bool = False


def provider_config_for(cluster: InferenceCluster) -> tuple[str, str] | None:
    """``(kind, name)`` of the cluster's ``status.providerConfigRef``, or None when absent."""
    ref = cluster.status.provider_config_ref if cluster.status is not None else None
    if ref is None or not ref.name:
        return None
    return ref.kind, ref.name


def derived_provider_config(cluster: InferenceCluster) -> tuple[str, str]:
    """The provider config a local run assumes for a cluster that publishes none (docs/api.md,
    "InferenceCluster: what is read and derived").
    """
    return PROVIDER_CONFIG_KIND, provider_config_name(cluster.metadata.name or "")


def cluster_stack(cluster: InferenceCluster) -> Stack:
    """The cluster's serving stack (absent reads Standard)."""
    return cluster.spec.stack


def _engine_image(replica: ModelReplica) -> str:
    """The image of the engine container of the first member of the first engine."""
    engines = replica.spec.engines
    if not engines:
        return ""
    member = engines[0].members[0]
    container = engine_container(member)
    if container is None:
        containers = containers_of(member)
        return containers[0].image if containers else ""
    return container.image


def cluster_info(replica: ModelReplica, cluster: InferenceCluster) -> ClusterInfo:
    """Every fact of ``cluster`` the replica's composition reads, as its deployment stamps
    it into ``spec.clusterInfo`` (docs/api.md, "ModelReplica: clusterInfo").

    The drivers are those the cluster publishes for the pools the replica's members are
    pinned to, the ones a taint is known for (``taints.TAINT_BY_DRIVER``: no other driver
    changes what is composed, so none other is stamped, and the stamp stays small); the
    replica's own claims are added when it is composed, as without a stamp.
    """
    ref = cluster.status.provider_config_ref if cluster.status is not None else None
    pinned = {m.node_pool_name for e in replica.spec.engines for m in e.members}
    published = cluster.status.gpu_pools if cluster.status is not None else None
    drivers: dict[str, set[str]] = {}
    for pool in published or ():
        if pool.name in pinned:
            drivers.setdefault(pool.name, set()).update(
                d.driver for d in pool.devices or () if d.driver in TAINT_BY_DRIVER
            )
    drivers = {name: found for name, found in drivers.items() if found}
    return ClusterInfo(
        provider_config_ref=ref if ref is not None and ref.name else None,
        stack=cluster_stack(cluster),
        gateway_implementation=gateway_implementation(cluster),
        node_pools=tuple(
            ClusterInfoPool(name=name, drivers=tuple(sorted(drivers[name])))
            for name in sorted(drivers)
        )
        or None,
    )


@dataclass(frozen=True, slots=True)
class ClusterFacts:
    """What a replica's objects depend on of its cluster, from its stamp or the cluster."""

    provider: tuple[str, str]
    stack: Stack
    gateway: GatewayImplementation | None
    drivers: Mapping[str, frozenset[str]]


def _stamped_facts(
    replica: ModelReplica, info: ClusterInfo, derive_provider_config: bool
) -> tuple[ClusterProblem | None, ClusterFacts | None]:
    """The facts of a replica carrying ``spec.clusterInfo``: nothing else is read."""
    ref = info.provider_config_ref
    provider = (ref.kind, ref.name) if ref is not None and ref.name else None
    if provider is None and derive_provider_config:
        provider = PROVIDER_CONFIG_KIND, provider_config_name(replica.spec.cluster_name)
    if provider is None:
        return "NoProviderConfig", None
    # The replica's own claims name the drivers of its pools too, as ``pool_drivers`` adds.
    drivers = {name: set(found) for name, found in pool_drivers(replica).items()}
    for pool in info.node_pools or ():
        drivers.setdefault(pool.name, set()).update(pool.drivers)
    return None, ClusterFacts(
        provider,
        info.stack,
        info.gateway_implementation,
        {name: frozenset(found) for name, found in drivers.items()},
    )


def _facts(
    replica: ModelReplica,
    cluster: InferenceCluster | Unresolved | None,
    derive_provider_config: bool,
) -> tuple[ClusterProblem | None, ClusterFacts | None]:
    """Why the cluster is unresolved (if it is), else what the replica reads of it.

    A replica whose deployment stamped ``spec.clusterInfo`` reads that and ignores
    ``cluster``; one without (written by an older release) reads its InferenceCluster.
    """
    info = replica.spec.cluster_info
    if info is not None:
        return _stamped_facts(replica, info, derive_provider_config)
    if cluster is UNRESOLVED:
        return "NotFetched", None
    if cluster is None:
        return "NotFound", None
    provider = provider_config_for(cluster)
    if provider is None and derive_provider_config:
        provider = derived_provider_config(cluster)
    if provider is None:
        return "NoProviderConfig", None
    return None, ClusterFacts(
        provider,
        cluster_stack(cluster),
        gateway_implementation(cluster),
        pool_drivers(replica, cluster),
    )


def compose_replica(
    replica: ModelReplica,
    cluster: InferenceCluster | Unresolved | None,
    observed: Observed | None = None,
    *,
    derive_provider_config: bool = False,
) -> ReplicaComposition:
    """Compose a replica's objects on its cluster, with its conditions and readiness.

    ``observed`` maps resource keys to the observed provider-kubernetes Objects (their
    typed views).
    A replica carrying ``spec.clusterInfo`` is composed from it alone and ``cluster`` is
    not read (the function then requires nothing). Without it, ``cluster`` None means the InferenceCluster was not found; UNRESOLVED, not fetched
    yet (function runtime). With
    ``derive_provider_config`` (local ``render``) a cluster without
    ``status.providerConfigRef`` gets the derived one; otherwise it is unresolved and,
    as when the cluster is missing, the observed objects are re-emitted unchanged
    (Decision 4) instead of being deleted.
    """
    seen: Observed = observed or {}
    cluster_name = replica.spec.cluster_name
    workloads = [workload_key(e.name) for e in replica.spec.engines]
    problem, facts = _facts(replica, cluster, derive_provider_config)
    conditions = replica_conditions(workloads, seen, problem, cluster_name)
    events = replica_events(
        problem, cluster_name, _engine_image(replica), any(k in seen for k in workloads)
    )
    if problem is not None or facts is None:
        kept = [
            ComposedObject(key, obj.kept, ready_flag(readiness_policy(obj), obj))
            for key, obj in seen.items()
        ]
        return ReplicaComposition(kept, conditions, events, composite_ready(conditions), True)
    names = replica_names(replica)
    objects = [
        ComposedObject(
            key,
            wrap(names, key, manifest, facts.provider),
            ready_flag(readiness(manifest, key)["policy"], seen.get(key)),
        )
        for key, manifest in remote_objects(
            replica, names, facts.stack, facts.gateway, facts.drivers
        )
    ]
    return ReplicaComposition(objects, conditions, events, composite_ready(conditions), False)
