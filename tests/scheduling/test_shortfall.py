"""A shortfall's ReplicasScheduled row: candidates counted by reason (docs/reconcile.md,
"`ReplicasScheduled` when replicas are missing").

Every candidate cluster is counted by the reason it cannot take one more replica at the end
of the schedule; reasons sorted by count, then name. Nothing scheduled reads
``InsufficientCapacity`` when every counted reason is about room or devices, else the most
frequent code. A Warning event carries the condition's message.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from modelplane.api import InferenceCluster, ModelDeployment, ModelReplica
from modelplane.events import Event
from modelplane.reconcile.conditions import deployment_status
from modelplane.reconcile.deployment import finish_deployment
from modelplane.runtime.wire import deployment_status_wire
from modelplane.scheduling import CACHE_NONE, CAPACITY_REASONS, Reason, Unfit, schedule

from .builders import L4_MEM, cluster, deployment, engine, gpu, member, pool, replica, request

TAINT = [{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}]


def h100(name: str, gpus: int = 8, **kw: Any) -> InferenceCluster:
    return cluster(name, pool("h100", 1, gpu(gpus)), **kw)


def l4(name: str) -> InferenceCluster:
    # One L4 per node: a request for 2 matches no pool (NoMatchingPool, a device reason).
    return cluster(name, pool("l4", 1, gpu(1, memory=L4_MEM)))


def chat(replicas: int, gpus: int = 2, **kw: Any) -> ModelDeployment:
    return deployment(
        "chat", replicas, engine("chat", member("Standalone", request("gpu", gpus))), **kw
    )


# Another deployment's replica holding all 8 GPUs of cluster a.
FULL_A = replica("other", "a", 0, namespace="aaa", gpus=8)


@dataclasses.dataclass
class Row:
    case: str
    deployment: ModelDeployment
    clusters: list[InferenceCluster]
    observed: list[ModelReplica]
    condition: tuple[str, str, str]  # status, reason, message


ROWS = [
    Row(
        "total 0, only room and device reasons",
        chat(1),
        [h100("a"), l4("b")],
        [FULL_A],
        (
            "False",
            "InsufficientCapacity",
            "0 of 1 replicas scheduled: 0/2 clusters available: "
            "1 InsufficientCapacity, 1 NoMatchingPool",
        ),
    ),
    Row(
        "total 0, a taint majority (the issue's example)",
        chat(2),
        [h100("a", taints=TAINT), h100("b", taints=TAINT), l4("c")],
        [],
        (
            "False",
            "Tainted",
            "0 of 2 replicas scheduled: 0/3 clusters available: 2 Tainted, 1 NoMatchingPool",
        ),
    ),
    Row(
        "total 0, ties sorted by name; the first names the reason",
        chat(1),
        [h100("a", gateway=None), h100("b", ready="False"), h100("c", taints=TAINT)],
        [],
        (
            "False",
            "NoGateway",
            "0 of 1 replicas scheduled: 0/3 clusters available: 1 NoGateway, 1 NotReady, 1 Tainted",
        ),
    ),
    Row(
        "total 0, a capacity reason tied with a taint: not all about room",
        chat(1),
        [h100("a"), h100("b", taints=TAINT)],
        [FULL_A],
        (
            "False",
            "InsufficientCapacity",
            "0 of 1 replicas scheduled: 0/2 clusters available: 1 InsufficientCapacity, 1 Tainted",
        ),
    ),
    Row(
        "total 0, no pools published is not a capacity reason",
        chat(1),
        [cluster("a"), l4("b"), l4("c")],
        [],
        (
            "False",
            "NoMatchingPool",
            "0 of 1 replicas scheduled: 0/3 clusters available: 2 NoMatchingPool, 1 NoPools",
        ),
    ),
    Row(
        "total 0, clusters outside clusterSelector are not candidates",
        chat(1, selector={"region": "us"}),
        [h100("a", labels={"region": "eu"}), h100("b", labels={"region": "us"}, taints=TAINT)],
        [],
        ("False", "Tainted", "0 of 1 replicas scheduled: 0/1 clusters available: 1 Tainted"),
    ),
    Row(
        "total 0, no candidate at all",
        chat(1, selector={"region": "us"}),
        [h100("a", labels={"region": "eu"})],
        [],
        ("False", "InsufficientCapacity", "0 of 1 replicas scheduled: 0/0 clusters available"),
    ),
    Row(
        "partial, Scheduling: the cluster that got a replica is full",
        chat(3, gpus=8),
        [h100("a"), h100("b", taints=TAINT)],
        [],
        (
            "False",
            "Scheduling",
            "Scheduled 1 of 3 replicas; 2 did not fit: 0/2 clusters available: "
            "1 InsufficientCapacity, 1 Tainted",
        ),
    ),
    Row(
        "partial, Scheduling: one cluster filled to the last GPU",
        chat(3, gpus=1),
        [h100("a", gpus=2)],
        [],
        (
            "False",
            "Scheduling",
            "Scheduled 2 of 3 replicas; 1 did not fit: 0/1 clusters available: "
            "1 InsufficientCapacity",
        ),
    ),
    Row(
        "partial, ReplicasCreated: a retained replica and a fill",
        chat(3),
        [h100("a", gpus=4), h100("c", ready="False")],
        [replica("chat", "a", 0, gpus=2, ready=True)],
        (
            "True",
            "ReplicasCreated",
            "Scheduled 2 of 3 replicas; 1 did not fit: 0/2 clusters available: "
            "1 InsufficientCapacity, 1 NotReady",
        ),
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.case for r in ROWS])
def test_shortfall_rows(row: Row) -> None:
    s = schedule(row.deployment, row.clusters, [], CACHE_NONE, row.observed)
    status = deployment_status(row.deployment, s, CACHE_NONE, row.observed)
    scheduled = status.conditions[0]
    assert scheduled.type == "ReplicasScheduled"
    assert (scheduled.status, scheduled.reason, scheduled.message) == row.condition
    # The same text as a Warning event, once in this reconcile's events (docs/reconcile.md,
    # "Conditions, events and readiness").
    warnings = [e for e in status.events if e.severity == "Warning"]
    assert warnings == [Event("Warning", row.condition[2])]
    assert s.shortfall is not None
    assert sum(n for _, n in s.shortfall.counts) == s.checked


def test_a_full_schedule_has_no_shortfall_and_no_warning() -> None:
    s = schedule(chat(2), [h100("a"), l4("b")], [], CACHE_NONE, [])
    assert s.total == 2 and s.shortfall is None
    status = deployment_status(chat(2), s, CACHE_NONE, [])
    assert [e.severity for e in status.events] == ["Normal"]


def test_explain_keeps_its_messages() -> None:
    # The runtime counts codes; --explain still words every passed-over cluster (docs/scheduling.md,
    # "Why replicas are missing").
    s = schedule(chat(3, gpus=8), [h100("a"), h100("b", taints=TAINT), l4("c")], [], CACHE_NONE, [])
    assert [(e.cluster, e.reason, e.message) for e in s.explain] == [
        ("b", "Tainted", "taint dedicated=infer:NoSchedule is not tolerated"),
        (
            "c",
            "NoMatchingPool",
            "engine chat member Standalone: no pool matches: "
            "pool l4: request gpu needs 8 of device gpu, 1 left",
        ),
    ]
    # a received the replica and has no entry; at the end it is full.
    assert s.shortfall is not None
    assert [(r.value, n) for r, n in s.shortfall.counts] == [
        ("InsufficientCapacity", 1),
        ("NoMatchingPool", 1),
        ("Tainted", 1),
    ]


def _never(cluster: str) -> Unfit:
    def boom() -> str:
        raise AssertionError(f"the runtime formatted the explain message of {cluster}")

    return Unfit(cluster, Reason.TAINTED, boom)


@pytest.mark.parametrize("row", ROWS, ids=[r.case for r in ROWS])
def test_the_runtime_never_formats_explain_messages(row: Row) -> None:
    # Everything after the schedule (status, events, replicas) reads the codes alone.
    s = schedule(row.deployment, row.clusters, [], CACHE_NONE, row.observed)
    silent = dataclasses.replace(s, explained=tuple(_never(u.cluster) for u in s.unfit))
    result = finish_deployment(row.deployment, silent, CACHE_NONE, row.observed, ())
    assert result.status.conditions[0].message == row.condition[2]


def test_capacity_reasons_are_the_room_and_device_rows() -> None:
    # docs/scheduling.md, "Why replicas are missing": NoPools (inventory not published) is not among
    # them.
    assert {r.value for r in CAPACITY_REASONS} == {
        "NoMatchingPool",
        "NoClaimableDevice",
        "NoSharedFabric",
        "InsufficientCapacity",
    }


def test_the_warning_is_raised_once_per_change() -> None:
    # Fed back with the status it computed (as Crossplane keeps it, or `render` re-run on its
    # own output), the same shortfall raises no second Warning; a new text does.
    clusters = [h100("a"), h100("b", taints=TAINT)]
    d = chat(3, gpus=8)
    first = deployment_status(d, schedule(d, clusters, [], CACHE_NONE, []), CACHE_NONE, [])
    assert [e.severity for e in first.events] == ["Warning", "Normal"]
    fed = ModelDeployment.model_validate({**d.to_wire(), "status": deployment_status_wire(first)})
    again = deployment_status(fed, schedule(fed, clusters, [], CACHE_NONE, []), CACHE_NONE, [])
    assert again.conditions == first.conditions
    assert [e.severity for e in again.events] == ["Normal"]
    fewer = clusters[:1]
    changed = deployment_status(fed, schedule(fed, fewer, [], CACHE_NONE, []), CACHE_NONE, [])
    assert [e.message for e in changed.events if e.severity == "Warning"] == [
        "Scheduled 1 of 3 replicas; 2 did not fit: 0/1 clusters available: 1 InsufficientCapacity"
    ]
