"""A cluster's occupancy: what the replicas pinned to it hold, and its wire shape.

The occupancy is the ledger state after charging every replica on the cluster as
``Ledger.charge_observed`` does, in (namespace, name) order; the table pins the node runs
a user would read in ``status.occupancy`` for each kind of replica.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings

from modelplane.api import InferenceCluster, ModelReplica
from modelplane.api.inferencecluster import ClusterOccupancy
from modelplane.scheduling import CACHE_NONE, schedule, schedule_all
from modelplane.scheduling.capacity import Ledger
from modelplane.scheduling.explain import UNPUBLISHED_MESSAGE
from modelplane.scheduling.fleet import cluster_view
from modelplane.scheduling.occupancy import (
    PUBLISHED,
    from_status,
    occupancy_of,
    to_status,
)

from .builders import cluster, deployment, gpu, host, pool, replica, stamped_member
from .test_properties import World, worlds

NIC = {"name": "nic", "claim": "DRA", "driver": "nic.example.com", "deviceClassName": "nic.x"}


def _fleet() -> InferenceCluster:
    """c1: pool h100 of 3 nodes x (8 GPUs + a synthetic host); pool nics of 2 nodes x 4 NICs."""
    return cluster(
        "c1",
        pool("h100", 3, gpu(), host()),
        pool("nics", 2, {**NIC, "count": 4}),
    )


def _wire(replicas: list[ModelReplica]) -> dict[str, Any]:
    view = cluster_view(_fleet(), {})
    return to_status(occupancy_of(view, replicas), view).to_wire()


def _gpus(name: str, n: int, namespace: str = "ml-team", cluster_name: str = "c1") -> ModelReplica:
    return replica("chat", cluster_name, 0, name=name, namespace=namespace, gpus=n)


def _worker(name: str, nodes: int, copies: int, gpus: int) -> ModelReplica:
    member = stamped_member(
        "h100", "Worker", requests=[("gpu", "gpu.nvidia.com", gpus)], worker_nodes=nodes
    )
    return replica("big", "c1", 0, {"name": "e", "copies": copies, "members": [member]}, name=name)


@dataclass(frozen=True)
class Case:
    name: str
    replicas: list[ModelReplica]
    expected: dict[str, Any]


CASES = [
    Case("nothing pinned: no pool listed (all free)", [], {"replicas": []}),
    Case(
        "one replica of 1 GPU: the first node has 7 left, the other two 8",
        [_gpus("a", 1)],
        {
            "replicas": ["ml-team/a"],
            "pools": [
                {
                    "name": "h100",
                    "nodes": [{"count": 1, "free": {"gpu": 7}}, {"count": 2, "free": {"gpu": 8}}],
                }
            ],
        },
    ),
    Case(
        # Sort order is (namespace, name): b in namespace "aaa" is charged before a.
        "charged in (namespace, name) order: first fit of 5 then 4",
        [_gpus("a", 4), _gpus("b", 5, namespace="aaa")],
        {
            "replicas": ["aaa/b", "ml-team/a"],
            "pools": [
                {
                    "name": "h100",
                    "nodes": [
                        {"count": 1, "free": {"gpu": 3}},
                        {"count": 1, "free": {"gpu": 4}},
                        {"count": 1, "free": {"gpu": 8}},
                    ],
                }
            ],
        },
    ),
    Case(
        "a Worker charges worker.nodes pods per copy: 2 x 2 pods of 8 GPUs, one fits no node",
        [_worker("w", 2, 2, 8)],
        {
            "replicas": ["ml-team/w"],
            "pools": [{"name": "h100", "full": True, "nodes": [{"count": 3, "free": {"gpu": 0}}]}],
        },
    ),
    Case(
        "a pod that fits no node marks the pool full and charges nothing more",
        [_gpus("a", 9)],
        {
            "replicas": ["ml-team/a"],
            "pools": [{"name": "h100", "full": True, "nodes": [{"count": 3, "free": {"gpu": 8}}]}],
        },
    ),
    Case(
        "a member on a pool the cluster does not publish charges nothing, but is counted",
        [replica("chat", "c1", 0, name="gone", pool_name="a100")],
        {"replicas": ["ml-team/gone"]},
    ),
    Case(
        "replicas pinned to another cluster are not counted",
        [_gpus("a", 2, cluster_name="c2")],
        {"replicas": []},
    ),
    Case(
        "another device class charges the device of that class (NICs), not the GPUs",
        [
            replica(
                "net",
                "c1",
                0,
                {
                    "name": "e",
                    "copies": 1,
                    "members": [stamped_member("nics", requests=[("nic", "nic.x", 3)])],
                },
                name="n",
            )
        ],
        {
            "replicas": ["ml-team/n"],
            "pools": [
                {
                    "name": "nics",
                    "nodes": [{"count": 1, "free": {"nic": 1}}, {"count": 1, "free": {"nic": 4}}],
                }
            ],
        },
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_occupancy_table(case: Case) -> None:
    wire = _wire(case.replicas)
    assert wire == case.expected
    # What is published reads back as the same ledger state.
    view = cluster_view(_fleet(), {})
    assert from_status(ClusterOccupancy.model_validate(wire), view) == occupancy_of(
        view, case.replicas
    )


def test_a_cluster_with_unknown_pools_counts_its_replicas_and_charges_nothing() -> None:
    unknown = cluster("c1")
    view = cluster_view(unknown, {})
    assert view.pool_unknown
    assert to_status(occupancy_of(view, [_gpus("a", 1)]), view).to_wire() == {
        "replicas": ["ml-team/a"]
    }


def test_the_replica_list_is_cut_at_its_bound_and_every_replica_stays_charged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from modelplane.scheduling import occupancy

    monkeypatch.setattr(occupancy, "MAX_OCCUPANCY_REPLICAS", 2)
    wire = _wire([_gpus(f"r{i}", 1) for i in range(3)])
    assert wire["replicas"] == ["ml-team/r0", "ml-team/r1"]
    assert wire["pools"][0]["nodes"][0] == {"count": 1, "free": {"gpu": 5}}


UNFIT = [
    ("node total differs from the pool's", [{"count": 2, "free": {"gpu": 8}}]),
    ("a DRA device missing", [{"count": 3, "free": {}}]),
    ("an unknown device", [{"count": 3, "free": {"gpu": 8, "tpu": 1}}]),
    ("more free than the device has", [{"count": 3, "free": {"gpu": 9}}]),
]


@pytest.mark.parametrize(("why", "nodes"), UNFIT, ids=[u[0] for u in UNFIT])
def test_an_occupancy_that_does_not_fit_the_pools_is_not_read(
    why: str, nodes: list[dict[str, Any]]
) -> None:
    published = ClusterOccupancy.model_validate(
        {"replicas": [], "pools": [{"name": "h100", "nodes": nodes}]}
    )
    assert from_status(published, cluster_view(_fleet(), {})) is None


def test_a_pool_no_longer_published_is_skipped() -> None:
    published = ClusterOccupancy.model_validate(
        {"replicas": ["x/y"], "pools": [{"name": "gone", "nodes": [{"count": 1, "free": {}}]}]}
    )
    read = from_status(published, cluster_view(_fleet(), {}))
    assert read is not None and read.replicas == {"x/y"} and dict(read.pools) == {}


def _published(c: InferenceCluster, occupancy: dict[str, Any] | None) -> InferenceCluster:
    raw = c.to_wire()
    if occupancy is None:
        raw["status"].pop("occupancy", None)
    else:
        raw["status"]["occupancy"] = occupancy
    return InferenceCluster.model_validate(raw)


def test_the_ledger_starts_from_the_published_occupancy() -> None:
    # 1 node of 8 GPUs: 6 taken by others per the published occupancy, so 2 of 3 fit.
    fleet = [cluster("c1", pool("h100", 1, gpu()))]
    full = {
        "replicas": ["other/x"],
        "pools": [{"name": "h100", "nodes": [{"count": 1, "free": {"gpu": 2}}]}],
    }
    d = deployment("chat", 3)
    got = schedule(d, [_published(fleet[0], full)], [], CACHE_NONE, [], PUBLISHED)
    assert [p.index for p in got.replicas] == [0, 1]
    # The same fleet with none published: nothing new placed, and said why.
    none = schedule(d, [_published(fleet[0], None)], [], CACHE_NONE, [], PUBLISHED)
    assert none.replicas == ()
    assert [(e.reason, e.message) for e in none.explain] == [("NoPools", UNPUBLISHED_MESSAGE)]
    # Render's way: computed from the replicas given, whatever the input's status says.
    others = [_gpus(f"o{i}", 1, namespace="other") for i in range(6)]
    stale = [_published(fleet[0], {"replicas": []})]
    assert len(schedule(d, stale, [], CACHE_NONE, others).replicas) == 2


def test_schedule_all_later_deployments_see_what_earlier_ones_got_and_dropped() -> None:
    # One node of 8 GPUs. "a" holds 6 GPUs on it but now wants 2 replicas of 1 GPU: its
    # 6-GPU replica is dropped (its shape changed) and its new ones take 2; "b" (after "a")
    # sees only a's new replicas and takes the 6 left.
    fleet = [cluster("c1", pool("h100", 1, gpu()))]
    old = replica("a", "c1", 0, name="a-old", gpus=6, pool_name="h100")
    old = ModelReplica.model_validate(
        {
            **old.to_wire(),
            "spec": {
                **old.to_wire()["spec"],
                "engines": [{**old.to_wire()["spec"]["engines"][0], "name": "old-engine"}],
            },
        }
    )
    a = deployment("a", 2)
    b = deployment("b", 8)
    results = {
        r.deployment.metadata.name: r.schedule for r in schedule_all([b, a], fleet, [], [], [old])
    }
    # a's dropped replica still holds its 6 GPUs in a's own pass (it runs until deleted).
    assert [p.retained for p in results["a"].replicas] == [False, False]
    assert len(results["b"].replicas) == 6


@settings(max_examples=200, deadline=None)
@given(worlds())
def test_published_occupancy_reads_back_as_computed(w: World) -> None:
    for c in w.fleet:
        view = cluster_view(c, {})
        computed = occupancy_of(view, w.others)
        wire = ClusterOccupancy.model_validate(to_status(computed, view).to_wire())
        assert from_status(wire, view) == computed


@settings(max_examples=200, deadline=None)
@given(worlds())
def test_replicas_charged_together_leave_what_each_charged_alone_leaves(w: World) -> None:
    """Ledger.charge_all_observed (a shared spec read once, a demand's consecutive charges
    packed together) leaves every pool as one charge_observed per replica does, also where
    the replicas overflow the pools (each placed replica twice) and pools close."""
    for c in w.fleet:
        view = cluster_view(c, {})
        pinned = [r for r in w.others if r.spec.cluster_name == view.name]
        for replicas in (pinned, [r for r in pinned for _ in range(2)]):
            together, alone = Ledger([view]), Ledger([view])
            together.charge_all_observed(replicas, view)
            for one in replicas:
                alone.charge_observed(one, view)
            states, expected = together.states(view.name), alone.states(view.name)
            if states is None or expected is None:
                assert states is expected
                continue
            assert {name: (s.runs, s.closed) for name, s in states.items()} == {
                name: (s.runs, s.closed) for name, s in expected.items()
            }
