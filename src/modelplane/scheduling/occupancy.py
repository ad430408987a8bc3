"""A cluster's occupancy: what the replicas pinned to it hold of its pools.

The InferenceCluster function publishes it in ``status.occupancy``; a ModelDeployment's
ledger starts from it, so one reconcile reads its clusters and its own replicas, never
every other deployment's. ``render`` and ``schedule`` compute it from their input
replicas with the same code (``occupancy_of``), so both runtimes place alike.

An occupancy is the ledger state of the cluster's pools after charging every replica
pinned to it exactly as ``Ledger.charge_observed`` does, in (namespace, name) order:
charges on one cluster never touch another, so per-cluster charging in that order is
the fleet-wide walk the scheduler made before (docs/scheduling.md "Occupancy").

Pure: typed objects in, values out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from modelplane.api import ModelReplica
from modelplane.api.inferencecluster import (
    MAX_OCCUPANCY_REPLICAS,
    ClusterOccupancy,
    GpuPool,
    NodeRun,
    PoolOccupancy,
)
from modelplane.memo import Memo, same
from modelplane.scheduling.capacity import EMPTY, Ledger, Occupancy, PoolState, PoolUse, Run
from modelplane.scheduling.fleet import ClusterView, Pool, pools_only_view
from modelplane.scheduling.model import namespace_of
from modelplane.scheduling.replicas import sort_key


class Published:
    """The marker of "read each cluster's ``status.occupancy``" (the function runtime)."""

    def __repr__(self) -> str:
        return "PUBLISHED"


PUBLISHED = Published()

# How a schedule learns what others occupy: computed from its observed replicas (None,
# ``render``), given per cluster (``schedule_all``), or published by the clusters.
OccupancySource = Mapping[str, Occupancy] | Published | None


def replica_ref(replica: ModelReplica) -> str:
    """``namespace/name`` of a replica, as ``status.occupancy.replicas`` lists it."""
    return f"{namespace_of(replica.metadata.namespace)}/{replica.metadata.name or ''}"


def occupancy_of(view: ClusterView, replicas: Iterable[ModelReplica]) -> Occupancy:
    """Charge every replica pinned to ``view`` (``spec.clusterName``) in (namespace, name) order.

    The charge is ``Ledger.charge_observed``'s: a member on a pool the cluster does not
    publish charges nothing, a pod that fits no node marks its pool full. A cluster
    whose pools are unknown counts its replicas and charges nothing (no ledger reads it).
    """
    pinned = sorted((r for r in replicas if r.spec.cluster_name == view.name), key=sort_key)
    refs = frozenset(replica_ref(r) for r in pinned)
    if view.pools is None or not pinned:
        return Occupancy(refs)
    ledger = Ledger([view])
    ledger.charge_all_observed(pinned, view)
    states = ledger.states(view.name)
    pools: dict[str, PoolUse] = {}
    for pool in view.pools:
        state = states.get(pool.name) if states is not None else None
        if state is not None and _changed(state, pool):
            pools[pool.name] = PoolUse(tuple(state.runs), state.closed)
    return Occupancy(refs, pools)


def published_occupancy(
    name: str, gpu_pools: Sequence[GpuPool], replicas: Iterable[ModelReplica]
) -> ClusterOccupancy:
    """The ``status.occupancy`` cluster ``name`` publishes beside ``gpu_pools`` (cluster function).

    Charged on the very pools it publishes, so a deployment reads it against them.
    """
    view = pools_only_view(name, gpu_pools)
    return to_status(occupancy_of(view, replicas), view)


def _changed(state: PoolState, pool: Pool) -> bool:
    fresh = PoolState.fresh(pool)
    return state.closed or state.runs != fresh.runs


def computed(
    views: Iterable[ClusterView], replicas: Iterable[ModelReplica]
) -> dict[str, Occupancy]:
    """Every cluster's occupancy from a complete replica list (``render``, ``schedule``)."""
    by_cluster: dict[str, list[ModelReplica]] = {}
    for replica in replicas:
        by_cluster.setdefault(replica.spec.cluster_name, []).append(replica)
    return {v.name: occupancy_of(v, by_cluster.get(v.name, ())) for v in views}


def to_status(occupancy: Occupancy, view: ClusterView) -> ClusterOccupancy:
    """The wire shape of ``status.occupancy`` (docs/api.md "InferenceCluster occupancy").

    Replicas sorted and cut at ``MAX_OCCUPANCY_REPLICAS`` (the rest stay charged);
    pools in published order, each DRA device's free count per node run.
    """
    pools: list[PoolOccupancy] = []
    for pool in view.pools or ():
        use = occupancy.pools.get(pool.name)
        if use is None:
            continue
        names = [(j, d.name) for j, d in enumerate(pool.shape.devices) if d.dra]
        pools.append(
            PoolOccupancy(
                name=pool.name,
                full=True if use.closed else None,
                nodes=tuple(
                    NodeRun(count=count, free={name: free[j] for j, name in names})
                    for free, count in use.runs
                ),
            )
        )
    return ClusterOccupancy(
        replicas=tuple(sorted(occupancy.replicas)[:MAX_OCCUPANCY_REPLICAS]),
        pools=tuple(pools) or None,
    )


def from_status(published: ClusterOccupancy, view: ClusterView) -> Occupancy | None:
    """A published occupancy read against the cluster's pools; None when it does not fit them.

    It fits when each listed pool that the cluster still publishes has exactly its node
    count in runs and a free count, within the device's count, for each of its DRA
    devices (the cluster function writes both from the same pools in one status). A
    listed pool the cluster no longer publishes is skipped: nothing can run there.
    """
    pools: dict[str, PoolUse] = {}
    for entry in published.pools or ():
        pool = view.pool(entry.name)
        if pool is None:
            continue
        runs = _runs(entry, pool)
        if runs is None:
            return None
        pools[pool.name] = PoolUse(runs, bool(entry.full))
    return Occupancy(frozenset(published.replicas), pools)


def _runs(entry: PoolOccupancy, pool: Pool) -> tuple[Run, ...] | None:
    devices = pool.shape.devices
    dra = {d.name for d in devices if d.dra}
    runs: list[Run] = []
    for node_run in entry.nodes:
        if set(node_run.free) != dra:
            return None
        free = tuple(node_run.free[d.name] if d.dra else 0 for d in devices)
        if any(f > d.count for f, d in zip(free, devices, strict=True)):
            return None
        runs.append((free, node_run.count))
    if sum(count for _, count in runs) != pool.nodes:
        return None
    return tuple(runs)


# The published occupancy read against the pools, by cluster name. An entry answers only
# for the occupancy and pools it was read from (equal in content; the same objects when
# fleet.cluster_view reused the view), so a changed status is read again.
_PUBLISHED: Memo[str, tuple[ClusterOccupancy, tuple[Pool, ...] | None, Occupancy | None]] = Memo(
    "scheduling.published_occupancy", 1 << 14
)


def published(view: ClusterView) -> Occupancy | None:
    """The cluster's ``status.occupancy`` as a ledger base; None when absent or not fitting."""
    status = view.occupancy
    if status is None:
        return None
    hit = _PUBLISHED.lookup_valid(
        view.name, lambda entry: same(entry[0], status) and same(entry[1], view.pools)
    )
    if isinstance(hit, tuple):
        return hit[2]
    read = from_status(status, view)
    _PUBLISHED.put(view.name, (status, view.pools, read))
    return read


@dataclass(frozen=True, slots=True)
class Bases:
    """The ledger's starting point: each cluster's occupancy, and those with none known."""

    occupancy: Mapping[str, Occupancy]
    unpublished: frozenset[str] = frozenset()


def bases(
    source: OccupancySource,
    views: Sequence[ClusterView],
    observed: Iterable[ModelReplica],
) -> Bases:
    """What every cluster's ledger starts from, for one schedule.

    ``None``: computed from ``observed`` (a complete replica list). A mapping: as given;
    a cluster missing from it is all free. ``PUBLISHED``: each cluster's published
    occupancy; a cluster with pools but none usable is *unpublished*, and takes no new
    replica until its function publishes one (docs/scheduling.md).
    """
    if source is None:
        return Bases(computed(views, observed))
    if not isinstance(source, Published):
        return Bases(source)
    found: dict[str, Occupancy] = {}
    missing: list[str] = []
    for view in views:
        if view.pools is None:
            continue
        read = published(view)
        if read is None:
            missing.append(view.name)
        else:
            found[view.name] = read
    return Bases(found, frozenset(missing))


def unlisted(
    ours: Iterable[ModelReplica], occupancy: Mapping[str, Occupancy]
) -> list[ModelReplica]:
    """Our replicas that their cluster's occupancy does not list: charged on top, in order."""
    out: list[ModelReplica] = []
    for replica in ours:
        listed = occupancy.get(replica.spec.cluster_name, EMPTY).replicas
        if replica_ref(replica) not in listed:
            out.append(replica)
    return out
