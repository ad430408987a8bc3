"""`fleet`'s numbers are the scheduler's: its occupancy, its charges, its arithmetic."""

from __future__ import annotations

from collections import Counter

import pytest

from modelplane.fleetview.capacity import capacity, charges
from modelplane.fleetview.state import reconciled
from modelplane.scheduling.capacity import pods_of
from modelplane.scheduling.occupancy import computed, to_status
from modelplane.scheduling.scheduler import schedule_all
from tests.fleetview.helpers import example_fleet


def test_pool_free_counts_are_the_published_occupancy_of_what_runs() -> None:
    state = reconciled(example_fleet())
    fleet = capacity(state)
    occupancy = computed(state.views, [r.replica for r in state.running])
    for view, cluster in zip(state.views, fleet.clusters, strict=True):
        published = {p.name: p for p in to_status(occupancy[view.name], view).pools or ()}
        for pool in cluster.pools or ():
            entry = published.get(pool.name)
            for device in pool.devices:
                # A pool the occupancy does not list is all free.
                free = (
                    sum(run.count * run.free["gpu"] for run in entry.nodes)
                    if entry is not None
                    else device.total
                )
                assert device.free == free, (view.name, pool.name)


def test_the_running_replicas_are_the_ones_schedule_all_leaves_charged() -> None:
    inputs = example_fleet()
    state = reconciled(inputs)
    given = schedule_all(
        inputs.deployments, inputs.clusters, inputs.classes, inputs.caches, inputs.replicas
    )
    names = sorted(p.name for s in given for p in s.schedule.replicas)
    assert sorted(r.replica.metadata.name or "" for r in state.running) == names


def test_used_devices_are_every_running_replica_s_requests() -> None:
    state = reconciled(example_fleet())
    fleet = capacity(state)
    expected: Counter[tuple[str, str]] = Counter()
    for r in state.running:
        for engine in r.replica.spec.engines:
            for m in engine.members:
                pods = pods_of(m.role, m.worker.nodes if m.worker else None) * engine.copies
                for request in m.device_requests or ():
                    expected[(r.cluster, m.node_pool_name)] += request.count * pods
    used = {
        (c.name, p.name): sum(d.used for d in p.devices)
        for c in fleet.clusters
        for p in c.pools or ()
    }
    assert {k: v for k, v in used.items() if v} == dict(expected)
    assert sum(d.used for d in fleet.devices) == sum(expected.values()) == 40


@pytest.mark.parametrize("cluster", ["eu-west-1", "us-east-1", "ap-south-1"])
def test_each_deployment_s_share_adds_up_to_the_pool_s_use(cluster: str) -> None:
    state = reconciled(example_fleet())
    view = next(v for v in state.views if v.name == cluster)
    pinned = [r for r in state.running if r.cluster == cluster]
    shares = charges(view, pinned)
    fleet = capacity(state)
    for pool in next(c for c in fleet.clusters if c.name == cluster).pools or ():
        assert sum(shares.get(pool.name, {}).values()) == sum(d.used for d in pool.devices)
        assert sum(u.devices for u in pool.deployments) == sum(d.used for d in pool.devices)


def test_the_example_fleet_by_kind() -> None:
    fleet = capacity(reconciled(example_fleet()))
    assert [(d.kind, d.total, d.used, d.free) for d in fleet.devices] == [
        ("NVIDIA H100 80GB HBM3", 64, 40, 24),
        ("NVIDIA L4", 14, 0, 14),
    ]
