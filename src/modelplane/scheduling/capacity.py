"""Capacity in devices: node vectors, first-fit packing, trials and the ledger (docs/scheduling.md,
"Matching, placing and packing").

Also the ledger's starting point, an ``Occupancy``: pool states as immutable values.
``scheduling.occupancy`` computes, publishes and reads them; the ledger only charges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from modelplane.api import ModelReplica
from modelplane.api.modelreplica import ModelReplicaSpec
from modelplane.memo import memoized
from modelplane.scheduling.fleet import ClusterView, Pool, PoolShape

Demand = tuple[tuple[int, int], ...]  # (device index in the pool, count) pairs, non-zero


Run = tuple[tuple[int, ...], int]  # (free vector, how many consecutive nodes share it)


class PoolState:
    """The free vectors of a pool's nodes (indexed like the pool's devices) and its closed flag.

    Nodes are held as runs of consecutive identical nodes, in node order: first-fit packing
    fills nodes in order and identical nodes absorb identical pods, so a run is charged with
    arithmetic instead of node by node. Memory and time follow the number of distinct node
    states (each pack splits at most one run into three), never the node count: a pool of
    100,000 fresh nodes is one run, like a pool of 8.

    Synthetic devices keep a 0 slot that no demand ever touches.
    """

    __slots__ = ("runs", "closed")

    def __init__(self, runs: list[Run], closed: bool = False) -> None:
        self.runs = runs
        self.closed = closed

    @staticmethod
    def fresh(pool: Pool) -> PoolState:
        """Every node at its full device counts: one run (none for a pool of no nodes)."""
        start = tuple(d.count if d.dra else 0 for d in pool.shape.devices)
        return PoolState([(start, pool.nodes)] if pool.nodes > 0 else [])

    def copy(self) -> PoolState:
        """An independent copy (a trial works on copies); runs are immutable tuples."""
        return PoolState(list(self.runs), self.closed)

    @property
    def node_count(self) -> int:
        """How many nodes the pool has."""
        return sum(count for _, count in self.runs)

    def nodes(self, limit: int) -> list[tuple[int, ...]]:
        """The free vectors of the first ``limit`` nodes, in node order."""
        head: list[tuple[int, ...]] = []
        for free, count in self.runs:
            if len(head) >= limit:
                break
            head.extend([free] * min(count, limit - len(head)))
        return head

    def pack(self, demand: Demand, pods: int) -> bool:
        """Pack ``pods`` pods of ``demand`` first-fit onto the nodes, in place.

        Returns False when some pod fits no node; the pods placed before it stay
        charged, so callers pack onto a copy unless they mean to keep a partial charge.
        """
        if not demand or pods <= 0:
            return True
        if self.closed:
            return False
        runs = self.runs
        out: list[Run] = []
        i = 0
        while i < len(runs) and pods > 0:
            free, count = runs[i]
            i += 1
            # First fit puts pods on the lowest node with room until it is full for this
            # demand, then moves on: each node of a run takes ``per_node`` pods.
            per_node = min(free[j] // n for j, n in demand)
            if per_node <= 0:
                out.append((free, count))
                continue
            full, rest = divmod(pods, per_node)
            if full >= count:
                out.append((_less(free, demand, per_node), count))
                pods -= per_node * count
                continue
            if full:
                out.append((_less(free, demand, per_node), full))
            left = count - full
            if rest:
                out.append((_less(free, demand, rest), 1))
                left -= 1
            if left:
                out.append((free, left))
            pods = 0
        out.extend(runs[i:])
        self.runs = _merged(out)
        return pods == 0


def _less(free: tuple[int, ...], demand: Demand, pods: int) -> tuple[int, ...]:
    """``free`` after ``pods`` pods of ``demand``."""
    vector = list(free)
    for j, n in demand:
        vector[j] -= n * pods
    return tuple(vector)


def _merged(runs: list[Run]) -> list[Run]:
    """Adjacent runs with equal vectors joined, so the run count stays at the distinct states."""
    merged: list[Run] = []
    for free, count in runs:
        if merged and merged[-1][0] == free:
            merged[-1] = (free, merged[-1][1] + count)
        else:
            merged.append((free, count))
    return merged


@dataclass(frozen=True, slots=True)
class PoolUse:
    """One pool's state after the charges: node runs in node order, and whether it is full."""

    runs: tuple[Run, ...]
    closed: bool = False

    def state(self) -> PoolState:
        """A ledger pool state to charge on (runs are immutable tuples: sharing is safe)."""
        return PoolState(list(self.runs), self.closed)


@dataclass(frozen=True, slots=True)
class Occupancy:
    """What the replicas pinned to one cluster occupy.

    ``replicas``: the replicas charged, as ``namespace/name``. ``pools``: the pools whose
    state differs from fresh, by name; a pool not listed is all free.
    """

    replicas: frozenset[str] = frozenset()
    pools: Mapping[str, PoolUse] = field(default_factory=dict)


EMPTY = Occupancy()


class ClusterState:
    """One cluster's pool states: the ledger's, or a trial's copy-on-write overlay."""

    __slots__ = ("base", "changed")

    def __init__(self, base: Mapping[str, PoolState]) -> None:
        self.base = base
        self.changed: dict[str, PoolState] = {}

    def get(self, pool: str) -> PoolState:
        """The current state of a pool."""
        return self.changed.get(pool) or self.base[pool]

    def attempt(self, pool: str, packs: Sequence[tuple[Demand, int]]) -> bool:
        """Pack every (demand, pods) onto a copy of ``pool``; keep the copy only if all fit."""
        if all(not demand or pods <= 0 for demand, pods in packs):
            return True
        state = self.get(pool).copy()
        for demand, pods in packs:
            if not state.pack(demand, pods):
                return False
        self.changed[pool] = state
        return True


class Ledger:
    """Free capacity of every candidate cluster that is not pool-unknown.

    Pool states are created on first use: a fresh pool needs no vectors until something
    is charged to it or a trial reads it. ``bases`` gives a cluster's starting state (its
    occupancy); a pool it does not list starts fresh.
    """

    __slots__ = ("clusters", "pools", "bases")

    def __init__(
        self, clusters: Sequence[ClusterView], bases: Mapping[str, Occupancy] | None = None
    ) -> None:
        self.clusters = {c.name: c for c in clusters if c.pools is not None}
        self.pools: dict[str, _LazyPools] = {}
        self.bases = bases or {}

    @staticmethod
    def build(
        clusters: Sequence[ClusterView], bases: Mapping[str, Occupancy] | None = None
    ) -> Ledger:
        """A ledger over the given clusters' pools, from their occupancy (else every node free)."""
        return Ledger(clusters, bases)

    def states(self, cluster: str) -> _LazyPools | None:
        """The pool states of a cluster in the ledger (None when it is not in the ledger)."""
        states = self.pools.get(cluster)
        if states is None:
            view = self.clusters.get(cluster)
            if view is None:
                return None
            base = self.bases.get(cluster)
            states = self.pools[cluster] = _LazyPools(view, base)
        return states

    def trial(self, cluster: str) -> ClusterState:
        """A trial over a cluster: reads the ledger, writes its own copies."""
        states = self.states(cluster)
        if states is None:
            raise KeyError(cluster)
        return ClusterState(states)

    def commit(self, cluster: str, trial: ClusterState) -> None:
        """The chosen trial becomes the ledger's state for its cluster."""
        states = self.states(cluster)
        if states is not None:
            states.update(trial.changed)

    def charge_observed(self, replica: ModelReplica, cluster: ClusterView) -> None:
        """Charge an observed replica from its stamped spec."""
        self.charge_all_observed([replica], cluster)

    def charge_all_observed(self, replicas: Sequence[ModelReplica], cluster: ClusterView) -> None:
        """Charge observed replicas of one cluster in order, as charge_observed would each.

        A spec shared by several replicas (typed specs are shared by content) is read once,
        and consecutive charges of one demand on one pool are packed together: first fit
        puts each identical pod on the first node with room, so packing a pods and then b
        is packing a + b, and a pod that fits nowhere leaves the same state either way
        (the pool is then closed, and a closed pool takes nothing more).
        """
        states = self.states(cluster.name)
        if states is None:
            return
        read: dict[int, list[tuple[str, Demand, int]]] = {}
        merged: list[tuple[str, Demand, int]] = []
        for replica in replicas:
            spec = replica.spec
            charges = read.get(id(spec))
            if charges is None:
                charges = read[id(spec)] = observed_charges(spec, cluster)
            for pool, demand, pods in charges:
                if merged and merged[-1][0] == pool and merged[-1][1] == demand:
                    merged[-1] = (pool, demand, merged[-1][2] + pods)
                else:
                    merged.append((pool, demand, pods))
        for pool, demand, pods in merged:
            state = states[pool]
            # A pod that fits nowhere closes the pool for the rest of this schedule.
            if not state.pack(demand, pods):
                state.closed = True


def observed_charges(spec: ModelReplicaSpec, cluster: ClusterView) -> list[tuple[str, Demand, int]]:
    """The (pool, demand, pods) charges of an observed replica's stamped spec, in member
    order: none for a member without device requests, on a pool the cluster no longer
    publishes (it cannot run) or whose requests map to no device of the pool."""
    pools = cluster.pool_map
    charges: list[tuple[str, Demand, int]] = []
    for engine in spec.engines:
        for member in engine.members:
            requests = member.device_requests
            if not requests:
                continue
            pool = pools.get(member.node_pool_name)
            if pool is None:
                continue  # pinned to a pool the cluster no longer publishes: cannot run
            demand = _observed_demand(
                pool.shape, tuple([(r.device_class_name, r.count) for r in requests])
            )
            if not demand:
                continue
            worker = member.worker
            pods = pods_of(member.role, worker.nodes if worker is not None else None)
            charges.append((pool.name, demand, pods * engine.copies))
    return charges


class _LazyPools(dict[str, PoolState]):
    """A cluster's pool states by name, each created on first access: from the cluster's
    occupancy where it lists the pool, else fresh."""

    __slots__ = ("view", "base")

    def __init__(self, view: ClusterView, base: Occupancy | None = None) -> None:
        super().__init__()
        self.view = view
        self.base = base

    def __missing__(self, name: str) -> PoolState:
        pool = self.view.pool(name)
        if pool is None:
            raise KeyError(name)
        use = self.base.pools.get(name) if self.base is not None else None
        state = self[name] = use.state() if use is not None else PoolState.fresh(pool)
        return state


def observed_demand(pool: Pool, requests: tuple[tuple[str, int], ...]) -> Demand:
    """Map stamped (deviceClassName, count) requests to the pool's devices."""
    return _observed_demand(pool.shape, requests)


@memoized("scheduling.observed_demand", 1 << 14)
def _observed_demand(shape: PoolShape, requests: tuple[tuple[str, int], ...]) -> Demand:
    devices = shape.devices
    remaining = [d.count if d.dra else 0 for d in devices]
    demand: dict[int, int] = {}
    for class_name, count in requests:
        candidates = [
            j for j, d in enumerate(devices) if d.dra and d.device_class_name == class_name
        ]
        if not candidates:
            continue  # no device of that class: the request is skipped
        # The first device of the class that still covers the request, else the first of the class.
        chosen = next((j for j in candidates if remaining[j] >= count), candidates[0])
        remaining[chosen] -= count
        demand[chosen] = demand.get(chosen, 0) + count
    return tuple(sorted((j, n) for j, n in demand.items() if n > 0))


def pods_of(role: str, worker_nodes: int | None) -> int:
    """``pods(member)``: worker.nodes for a Worker (1 without a worker block), else 1
    (docs/scheduling.md, "Inputs, identity and result").
    """
    if role == "Worker":
        return max(0, worker_nodes) if worker_nodes is not None else 1
    return 1
