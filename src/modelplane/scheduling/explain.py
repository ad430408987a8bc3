"""Why each cluster received no new replica: the reason vocabulary of §11, in check order."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from modelplane.api import Toleration
from modelplane.scheduling.fleet import (
    ClusterView,
    repels,
    selector_mismatch,
    taint_text,
)
from modelplane.scheduling.model import CacheKind, CacheState, ExplainEntry
from modelplane.scheduling.placement import Failure, Trial

CLUSTER_SELECTOR_MISMATCH = "ClusterSelectorMismatch"
CACHE_SELECTOR_MISMATCH = "CacheSelectorMismatch"
CACHE_UNAVAILABLE = "CacheUnavailable"
TAINTED = "Tainted"
STACK_UNSUPPORTED = "StackUnsupported"
NOT_READY = "NotReady"
NO_GATEWAY = "NoGateway"
NO_POOLS = "NoPools"
NOT_SELECTED = "NotSelected"
NO_NEW_REPLICAS_NEEDED = "NoNewReplicasNeeded"
NO_REPLICAS_DESIRED = "NoReplicasDesired"
SCHEDULING_HELD = "SchedulingHeld"


def _mismatch_message(found: tuple[str, str | None, str], who: str) -> str:
    key, actual, want = found
    state = f"is {actual}" if actual is not None else "is absent"
    return f"label {key} {state}, {who} wants {want}"


def stack_message(engine: str) -> str:
    """The StackUnsupported message (§11 row 4a)."""
    return (
        f"engine {engine}: Worker uses $(MODELPLANE_RANK), which the Dynamo stack cannot provide "
        "to workers; use $((GROVE_PCLQ_POD_INDEX + 1)) in a shell command, or a Standard cluster"
    )


@dataclass(frozen=True)
class Gates:
    """The per-deployment inputs of the cluster checks (§4)."""

    selector: Mapping[str, str]
    cache: CacheState
    cache_name: str
    tolerations: Sequence[Toleration]
    rank_engine: str | None  # an engine whose Worker uses $(MODELPLANE_RANK)


def selector_failure(gates: Gates, cluster: ClusterView) -> ExplainEntry | None:
    """Rows 1-2: the cluster is not a candidate."""
    found = selector_mismatch(cluster.labels, gates.selector)
    if found is not None:
        return ExplainEntry(
            cluster.name, CLUSTER_SELECTOR_MISMATCH, _mismatch_message(found, "clusterSelector")
        )
    if gates.cache.kind is CacheKind.PRESENT:
        found = selector_mismatch(cluster.labels, dict(gates.cache.selector))
        if found is not None:
            who = f"ModelCache {gates.cache_name} clusterSelector"
            return ExplainEntry(
                cluster.name, CACHE_SELECTOR_MISMATCH, _mismatch_message(found, who)
            )
    return None


def new_replica_failure(gates: Gates, cluster: ClusterView) -> ExplainEntry | None:
    """Rows 4-7: a candidate that cannot take new replicas whatever its capacity."""
    taint = repels(cluster, gates.tolerations)
    if taint is not None:
        return ExplainEntry(cluster.name, TAINTED, f"taint {taint_text(taint)} is not tolerated")
    if cluster.dynamo and gates.rank_engine is not None:
        return ExplainEntry(cluster.name, STACK_UNSUPPORTED, stack_message(gates.rank_engine))
    if not cluster.ready:
        message = (
            f"Ready condition is {cluster.ready_status}"
            if cluster.ready_status is not None
            else "no Ready condition"
        )
        return ExplainEntry(cluster.name, NOT_READY, message)
    if not cluster.gateway:
        return ExplainEntry(cluster.name, NO_GATEWAY, "no gateway address")
    if cluster.pool_unknown:
        return ExplainEntry(cluster.name, NO_POOLS, "cluster publishes no pools")
    return None


def explain_cluster(
    gates: Gates,
    cluster: ClusterView,
    trial: Callable[[ClusterView], Trial | Failure],
    new_clusters: Sequence[str],
    kept: int,
    desired: int,
) -> ExplainEntry:
    """The entry of a cluster that received no new replica: the first failing check (§11)."""
    entry = selector_failure(gates, cluster)
    if entry is not None:
        return entry
    if not gates.cache.gate_open:
        state = "not found" if gates.cache.kind is CacheKind.ABSENT else "not yet resolved"
        return ExplainEntry(
            cluster.name,
            CACHE_UNAVAILABLE,
            f"ModelCache {gates.cache_name} {state}; no new replicas are placed",
        )
    entry = new_replica_failure(gates, cluster)
    if entry is not None:
        return entry
    outcome = trial(cluster)
    if isinstance(outcome, Failure):
        return ExplainEntry(cluster.name, outcome.reason, outcome.message)
    if new_clusters:
        message = f"eligible; the new replicas went to {', '.join(new_clusters)}"
        warm = [c for c in new_clusters if c in gates.cache.warm]
        if warm and cluster.name not in gates.cache.warm:
            # The cache tie-break decided: say so (docs/scheduling.md).
            message += f" (ModelCache {gates.cache_name} is already staged on {', '.join(warm)})"
        return ExplainEntry(cluster.name, NOT_SELECTED, message)
    return ExplainEntry(
        cluster.name,
        NO_NEW_REPLICAS_NEEDED,
        f"eligible; {kept} replica(s) already meet spec.replicas {desired}",
    )
