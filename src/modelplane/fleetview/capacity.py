"""Devices per cluster and pool: total, used and free, and who uses them.

The totals are the scheduler's: each cluster's occupancy (``scheduling.occupancy``,
what a deployment's ledger starts from) is the ledger charged with every running replica
by ``Ledger.charge_observed`` in (namespace, name) order. The same charges are made here
one replica at a time, on the scheduler's own ledger, so each replica's share is read off
the ledger between two charges and the ledger left at the end is the occupancy (a test
holds the two equal).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from modelplane.fleetview.state import FleetState, Running
from modelplane.scheduling.capacity import Ledger, PoolState
from modelplane.scheduling.explain import stack_status_message
from modelplane.scheduling.fleet import ClusterView, Dev, Pool, taint_text
from modelplane.scheduling.replicas import sort_key


@dataclass(frozen=True, slots=True)
class DeviceUse:
    """One claimable device of a pool (or a kind, summed): how many exist and are used."""

    kind: str  # the device's productName attribute, else its device class
    device_class: str
    total: int
    used: int

    @property
    def free(self) -> int:
        """Devices no replica holds."""
        return self.total - self.used


@dataclass(frozen=True, slots=True)
class DeploymentUse:
    """What one deployment holds on a pool or cluster: replicas, Ready ones, devices."""

    deployment: str
    replicas: int
    ready: int
    devices: int


@dataclass(frozen=True, slots=True)
class PoolCapacity:
    """One pool: its nodes, its claimable devices, whether it is full, who uses it."""

    name: str
    nodes: int
    devices: tuple[DeviceUse, ...]
    full: bool  # overcommitted by running replicas: no new replica lands here
    deployments: tuple[DeploymentUse, ...]


@dataclass(frozen=True, slots=True)
class ClusterCapacity:
    """One cluster: readiness, stack, taints, its pools (None: unknown) and deployments.

    ``stack_phase`` is the published ``status.stack`` phase (None when none is published);
    ``stack_message`` says why the serving stack takes no new replica, as ``--explain``
    words it (``StackNotReady`` or ``RequirementsNotMet``), and is empty when it does.
    """

    name: str
    ready: str  # the Ready condition's status, "Unknown" without one
    stack: str
    taints: tuple[str, ...]
    pools: tuple[PoolCapacity, ...] | None
    deployments: tuple[DeploymentUse, ...]
    stack_phase: str | None = None
    stack_message: str = ""

    @property
    def devices(self) -> tuple[DeviceUse, ...]:
        """The cluster's devices summed by kind."""
        return by_kind(d for p in self.pools or () for d in p.devices)


@dataclass(frozen=True, slots=True)
class FleetCapacity:
    """Every cluster by name, and the running replicas pinned to no cluster of the fleet."""

    clusters: tuple[ClusterCapacity, ...]
    stray: tuple[str, ...]  # namespace/name of replicas on a cluster the fleet does not have

    @property
    def devices(self) -> tuple[DeviceUse, ...]:
        """The fleet's devices summed by kind."""
        return by_kind(d for c in self.clusters for d in c.devices)


def by_kind(devices: Iterable[DeviceUse]) -> tuple[DeviceUse, ...]:
    """Devices summed per (kind, device class), sorted."""
    sums: dict[tuple[str, str], list[int]] = {}
    for d in devices:
        entry = sums.setdefault((d.kind, d.device_class), [0, 0])
        entry[0] += d.total
        entry[1] += d.used
    return tuple(DeviceUse(k, c, t, u) for (k, c), (t, u) in sorted(sums.items()))


def capacity(state: FleetState) -> FleetCapacity:
    """The fleet's capacity after ``state``'s reconcile."""
    pinned: defaultdict[str, list[Running]] = defaultdict(list)
    for item in state.running:
        pinned[item.cluster].append(item)
    names = {v.name for v in state.views}
    stray = tuple(r.name for r in state.running if r.cluster not in names)
    clusters = tuple(cluster_capacity(view, pinned[view.name]) for view in state.views)
    return FleetCapacity(clusters, stray)


def cluster_capacity(view: ClusterView, running: Sequence[Running]) -> ClusterCapacity:
    """One cluster's capacity with ``running`` (the replicas pinned to it) charged."""
    ready = view.ready_status or "Unknown"
    stack = "Dynamo" if view.dynamo else "Standard"
    taints = tuple(taint_text(t) for t in view.taints)
    phase = view.stack_status.phase if view.stack_status is not None else None
    unready = view.unready_stack
    problem = stack_status_message(unready) if unready is not None else ""
    if view.pools is None:
        uses = _uses(running, {r.name: 0 for r in running})
        return ClusterCapacity(view.name, ready, stack, taints, None, uses, phase, problem)
    ledger = Ledger([view])
    shares = charges(view, running, ledger)
    states = ledger.states(view.name)
    assert states is not None  # the view has pools
    pools = tuple(
        _pool_capacity(pool, states[pool.name], shares.get(pool.name, {}), running)
        for pool in view.pools
    )
    devices: Counter[str] = Counter()
    for per in shares.values():
        for replica, n in per.items():
            devices[replica] += n
    uses = _uses(running, devices)
    return ClusterCapacity(view.name, ready, stack, taints, pools, uses, phase, problem)


def _pool_capacity(
    pool: Pool, state: PoolState, shares: Mapping[str, int], running: Sequence[Running]
) -> PoolCapacity:
    free = free_per_device(state)
    devices = tuple(
        DeviceUse(kind_of(d), d.device_class_name or "", d.count * pool.nodes, used)
        for j, d in enumerate(pool.shape.devices)
        if d.dra
        for used in (d.count * pool.nodes - free[j],)
    )
    on_pool = [
        r
        for r in running
        if any(m.node_pool_name == pool.name for e in r.replica.spec.engines for m in e.members)
    ]
    return PoolCapacity(pool.name, pool.nodes, devices, state.closed, _uses(on_pool, shares))


def _uses(running: Sequence[Running], devices: Mapping[str, int]) -> tuple[DeploymentUse, ...]:
    """Replicas, Ready replicas and devices per deployment, sorted by deployment."""
    out: dict[str, list[int]] = {}
    for r in running:
        entry = out.setdefault(r.deployment, [0, 0, 0])
        entry[0] += 1
        entry[1] += r.ready
        entry[2] += devices.get(r.name, 0)
    return tuple(DeploymentUse(d, n, ready, used) for d, (n, ready, used) in sorted(out.items()))


def free_per_device(state: PoolState) -> tuple[int, ...]:
    """Free devices of a pool state, summed over its nodes, per device index."""
    width = len(state.runs[0][0]) if state.runs else 0
    return tuple(sum(free[j] * count for free, count in state.runs) for j in range(width))


def charges(
    view: ClusterView, running: Sequence[Running], ledger: Ledger | None = None
) -> dict[str, dict[str, int]]:
    """Devices each replica holds, per pool then replica name: the occupancy's charges
    made one replica at a time (on ``ledger`` when given, left charged)."""
    out: dict[str, dict[str, int]] = {}
    for replica, pool, before, after in _replay(view, running, 0, ledger):
        taken = sum(b - a for b, a in zip(before[0], after[0], strict=True))
        if taken:
            per = out.setdefault(pool, {})
            per[replica.name] = per.get(replica.name, 0) + taken
    return out


# The free devices of a pool before and after one charge: per device index summed, and the
# first nodes' free vectors (as many as asked for).
_Snapshot = tuple[tuple[int, ...], list[tuple[int, ...]]]


def _replay(
    view: ClusterView, running: Sequence[Running], nodes: int, ledger: Ledger | None = None
) -> Iterable[tuple[Running, str, _Snapshot, _Snapshot]]:
    """Charge ``running`` as ``occupancy_of`` does, yielding each pool a charge changed."""
    ledger = ledger if ledger is not None else Ledger([view])
    states = ledger.states(view.name)
    if states is None:
        return
    pools = view.pool_map
    for item in sorted(running, key=lambda r: sort_key(r.replica)):
        names = sorted(
            {
                m.node_pool_name
                for e in item.replica.spec.engines
                for m in e.members
                if m.node_pool_name in pools
            }
        )
        before = {n: _snapshot(states[n], nodes) for n in names}
        ledger.charge_observed(item.replica, view)
        for n in names:
            yield item, n, before[n], _snapshot(states[n], nodes)


def _snapshot(state: PoolState, nodes: int) -> _Snapshot:
    return free_per_device(state), state.nodes(nodes) if nodes else []


@dataclass(frozen=True, slots=True)
class NodeSlots:
    """One drawn node: per claimable device, its slots' owners (a deployment, or "" if free)."""

    devices: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class PoolSlots:
    """The first nodes of a pool, slot by slot, and how many nodes are not drawn."""

    pool: Pool
    nodes: tuple[NodeSlots, ...]
    hidden: int


def pool_slots(view: ClusterView, running: Sequence[Running], limit: int) -> tuple[PoolSlots, ...]:
    """Who holds each device slot of each pool's first ``limit`` nodes (for a picture).

    A node's slots are filled in charge order: the first replica charged on a device
    holds its first slots.
    """
    owners: dict[str, list[list[list[str]]]] = {}
    for pool in view.pools or ():
        owners[pool.name] = [
            [[] for _ in pool.shape.devices] for _ in range(min(limit, pool.nodes))
        ]
    for item, name, before, after in _replay(view, running, limit):
        for i, (b, a) in enumerate(zip(before[1], after[1], strict=True)):
            for j, (fb, fa) in enumerate(zip(b, a, strict=True)):
                owners[name][i][j].extend([item.deployment] * (fb - fa))
    out: list[PoolSlots] = []
    for pool in view.pools or ():
        dra = [j for j, d in enumerate(pool.shape.devices) if d.dra]
        nodes = tuple(
            NodeSlots(
                tuple(tuple(_padded(owners[pool.name][i][j], pool.shape.devices[j])) for j in dra)
            )
            for i in range(len(owners[pool.name]))
        )
        out.append(PoolSlots(pool, nodes, max(0, pool.nodes - limit)))
    return tuple(out)


def _padded(held: list[str], device: Dev) -> list[str]:
    return (held + [""] * device.count)[: max(device.count, len(held))]


def kind_of(device: Dev) -> str:
    """What a device is for a person: its productName attribute, else its device class."""
    return _product(device.profile.key) or device.device_class_name or device.name


def _product(profile: str) -> str:
    attributes = json.loads(profile).get("attributes") or {}
    value = attributes.get("productName") or {}
    return str(value.get("string") or "")
