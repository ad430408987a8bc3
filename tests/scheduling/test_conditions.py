"""ModelDeployment conditions, counts and events (docs/reconcile.md, "Conditions, events and
readiness"), row by row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from modelplane.api import InferenceCluster, ModelDeployment, ModelReplica
from modelplane.events import Event
from modelplane.reconcile.conditions import DeploymentStatus, deployment_status
from modelplane.runtime.wire import deployment_status_wire
from modelplane.scheduling import (
    CACHE_ABSENT,
    CACHE_NONE,
    CACHE_UNRESOLVED,
    UNRESOLVED,
    CacheState,
    schedule,
)

from .builders import cluster, deployment, engine, gpu, member, pool, replica, request


def status(
    d: ModelDeployment,
    clusters: Sequence[InferenceCluster] | Any,
    observed: Sequence[ModelReplica] = (),
    cache: CacheState = CACHE_NONE,
) -> DeploymentStatus:
    return deployment_status(d, schedule(d, clusters, [], cache, observed), cache, observed)


def conds(s: DeploymentStatus) -> list[tuple[str, str, str, str]]:
    return [(c.type, c.status, c.reason or "", c.message or "") for c in s.conditions]


FLEET = [cluster("a", pool("h100", 1, gpu())), cluster("b", pool("h100", 1, gpu()))]


def test_parked() -> None:
    s = status(deployment("chat", 0, cache="qwen"), FLEET, [replica("chat", "a", 0)], CACHE_ABSENT)
    assert (s.total, s.ready) == (0, 0)
    assert conds(s) == [
        ("ReplicasScheduled", "True", "NoReplicasDesired", "0 replicas desired"),
        ("ReplicasReady", "True", "NoReplicasDesired", "0 replicas desired"),
        ("Progressing", "True", "RolloutComplete", "0 replicas desired"),
    ]
    assert s.events == (Event("Normal", "Scaled to zero: removing all replicas"),)
    assert status(deployment("chat", 0), FLEET).events == ()


def test_fresh_deployment_is_scheduling() -> None:
    s = status(deployment("chat", 2), FLEET)
    assert (s.total, s.ready) == (2, 0)
    assert conds(s) == [
        ("ReplicasScheduled", "False", "Scheduling", ""),
        ("ReplicasReady", "False", "ModelStarting", "0 of 2 ready"),
        # A first placement is a rollout too: every replica is at the revision, none ready.
        ("Progressing", "True", "RolloutInProgress", "2 of 2 replicas updated, 0 ready"),
    ]
    assert s.events == (Event("Normal", "Scheduled 2 replicas across 2 clusters: a, b"),)


def test_observed_and_ready() -> None:
    observed = [replica("chat", "a", 0, ready=True), replica("chat", "b", 0, ready=True)]
    s = status(deployment("chat", 2), FLEET, observed)
    assert (s.total, s.ready) == (2, 2)
    assert conds(s) == [
        ("ReplicasScheduled", "True", "ReplicasCreated", "Scheduled 2 of 2 replicas"),
        ("ReplicasReady", "True", "AllReplicasReady", "2 of 2 ready"),
        # Observed replicas without a template-hash label are adopted at the current revision.
        ("Progressing", "True", "RolloutComplete", "2 of 2 replicas updated"),
    ]
    assert s.events == ()


def test_partial_shortfall_still_reads_created() -> None:
    observed = [replica("chat", "a", 0, ready=True)]
    big = engine("chat", member("Standalone", request("gpu", 8)))
    s = status(deployment("chat", 3, big), FLEET, observed)
    # a/0 is re-resolved at 8 GPUs (kept) but charged its observed 1: no room for another 8 on a.
    text = (
        "Scheduled 2 of 3 replicas; 1 did not fit: 0/2 clusters available: 2 InsufficientCapacity"
    )
    assert conds(s) == [
        ("ReplicasScheduled", "True", "ReplicasCreated", text),
        # Counted against spec.replicas, with the shortfall's reason.
        (
            "ReplicasReady",
            "False",
            "ReplicasNotScheduled",
            "1 of 3 ready; 1 not scheduled: 0/2 clusters available: 2 InsufficientCapacity",
        ),
        ("Progressing", "True", "RolloutInProgress", "2 of 3 replicas updated, 1 ready"),
    ]
    assert s.events == (Event("Warning", text),)


def test_new_placement_on_a_reused_identity_is_not_ready() -> None:
    # The observed a/0 is not Ready, on a pool the deployment no longer accepts: it serves
    # nothing, so it is re-placed at a/0 anew at once, and that new replica is not ready.
    observed = [replica("chat", "a", 0, pool_name="gone")]
    s = status(deployment("chat", 1), FLEET[:1], observed)
    assert s.ready == 0
    assert conds(s)[0] == (
        "ReplicasScheduled",
        "True",
        "ReplicasCreated",
        "Scheduled 1 of 1 replicas",
    )


def test_a_ready_replica_that_must_move_serves_until_its_replacement_is_ready() -> None:
    # The same a/0, but Ready. It keeps serving (and its identity); the replacement
    # takes a/1, so the deployment reads ready while it loads, and Progressing says Moving.
    observed = [replica("chat", "a", 0, pool_name="gone", ready=True)]
    d = deployment("chat", 1)
    result = schedule(d, FLEET[:1], [], CACHE_NONE, observed)
    assert [(p.cluster, p.index, p.retained) for p in result.replicas] == [("a", 1, False)]
    assert [(m.placement.index, m.replacement_cluster) for m in result.superseded] == [(0, "a")]
    s = deployment_status(d, result, CACHE_NONE, observed)
    assert s.ready == 1
    assert conds(s)[2] == (
        "Progressing", "True", "Moving", "1 of 1 replicas updated; 1 replica moving within a (pool gone to h100)"
    )  # fmt: skip


def test_insufficient_capacity() -> None:
    big = engine("chat", member("Standalone", request("gpu", 16)))
    s = status(deployment("chat", 2, big), FLEET)
    assert conds(s) == [
        (
            "ReplicasScheduled",
            "False",
            "InsufficientCapacity",
            "0 of 2 replicas scheduled: 0/2 clusters available: 2 NoMatchingPool",
        ),
        ("ReplicasReady", "False", "NoReplicasScheduled", ""),
        (
            "Progressing",
            "False",
            "InsufficientCapacity",
            "0 of 2 replicas updated, 0 ready; 2 replicas cannot be placed: "
            "0/2 clusters available: 2 NoMatchingPool",
        ),
    ]


def test_no_clusters() -> None:
    s = status(deployment("chat", 1), [])
    assert conds(s)[0] == ("ReplicasScheduled", "False", "NoClusters", "No InferenceClusters found")
    assert s.events == (Event("Warning", "No InferenceClusters found"),)


def test_clusters_unresolved_not_fetched() -> None:
    observed = [replica("chat", "a", 0, ready=True), replica("chat", "b", 0)]
    s = status(deployment("chat", 2), UNRESOLVED, observed)
    assert (s.total, s.ready) == (2, 1)
    assert conds(s) == [
        (
            "ReplicasScheduled",
            "False",
            "ClustersUnresolved",
            "Waiting for InferenceClusters; keeping 2 existing replicas",
        ),
        ("ReplicasReady", "False", "ModelStarting", "1 of 2 ready"),
        (
            "Progressing",
            "True",
            "RolloutInProgress",
            "2 of 2 replicas updated, 1 ready; paused while scheduling is held",
        ),
    ]
    assert s.events == ()
    empty = status(deployment("chat", 2), UNRESOLVED)
    assert conds(empty)[0] == (
        "ReplicasScheduled",
        "False",
        "ClustersUnresolved",
        "Waiting for InferenceClusters",
    )


def test_clusters_unresolved_empty_list() -> None:
    s = status(deployment("chat", 2), [], [replica("chat", "a", 0)])
    assert conds(s)[0] == (
        "ReplicasScheduled", "False", "ClustersUnresolved", "No InferenceClusters found; keeping 1 existing replicas"
    )  # fmt: skip
    assert s.events == (Event("Warning", "No InferenceClusters found"),)


def test_invalid_selector() -> None:
    d = deployment(
        "chat",
        1,
        engine("chat", member("Standalone", request("gpu", 1, "device.count >= 1"))),
        cache="q",
    )
    s = status(d, FLEET, [replica("chat", "a", 0, ready=True)], CACHE_ABSENT)
    error = conds(s)[1][3]
    assert error.startswith("Invalid nodeSelector CEL expression: ")
    assert conds(s) == [
        (
            "ModelCacheResolved",
            "False",
            "ModelCacheNotFound",
            "ModelCache q not found; holding replica placement",
        ),
        ("ReplicasScheduled", "False", "InvalidNodeSelector", error),
        ("ReplicasReady", "True", "AllReplicasReady", "1 of 1 ready"),
        (
            "Progressing",
            "True",
            "RolloutComplete",
            "1 of 1 replicas updated, 1 ready; paused while scheduling is held",
        ),
    ]
    assert s.events == (
        Event("Warning", "ModelCache q not found; holding replica placement"),
        Event("Warning", error),
    )


@pytest.mark.parametrize(
    ("cache", "row"),
    [
        (CacheState.present({}), ("ModelCacheResolved", "True", "ModelCacheResolved", "")),
        (CACHE_ABSENT, ("ModelCacheResolved", "False", "ModelCacheNotFound", "ModelCache qwen not found; holding replica placement")),
        (CACHE_UNRESOLVED, ("ModelCacheResolved", "False", "ModelCacheUnresolved", "Waiting for ModelCache qwen")),
    ],
)  # fmt: skip
def test_model_cache_resolved(cache: CacheState, row: tuple[str, str, str, str]) -> None:
    s = status(deployment("chat", 1, cache="qwen"), FLEET, [], cache)
    assert conds(s)[0] == row
    assert [c.type for c in s.conditions] == [
        "ModelCacheResolved",
        "ReplicasScheduled",
        "ReplicasReady",
        "Progressing",
    ]


def test_absent_cache_with_nothing_to_retain() -> None:
    s = status(deployment("chat", 1, cache="qwen"), FLEET, [], CACHE_ABSENT)
    assert conds(s)[1:] == [
        (
            "ReplicasScheduled",
            "False",
            "CacheUnavailable",
            "0 of 1 replicas scheduled: 0/2 clusters available: 2 CacheUnavailable",
        ),
        ("ReplicasReady", "False", "NoReplicasScheduled", ""),
        (
            "Progressing",
            "False",
            "CacheUnavailable",
            "0 of 1 replicas updated, 0 ready; 1 replica cannot be placed: "
            "0/2 clusters available: 2 CacheUnavailable",
        ),
    ]


def test_wire_form() -> None:
    s = status(deployment("chat", 1), FLEET)
    assert deployment_status_wire(s) == {
        "replicas": {"ready": 0, "total": 1},
        "conditions": [
            {"type": "ReplicasScheduled", "status": "False", "reason": "Scheduling", "message": ""},
            {
                "type": "ReplicasReady",
                "status": "False",
                "reason": "ModelStarting",
                "message": "0 of 1 ready",
            },
            {
                "type": "Progressing",
                "status": "True",
                "reason": "RolloutInProgress",
                "message": "1 of 1 replicas updated, 0 ready",
            },
        ],
    }


NO_SCHEDULE = [{"key": "gpu", "value": "busy", "effect": "NoSchedule"}]
CANNOT = "cannot be placed: 0/2 clusters available: 2"


@pytest.mark.parametrize(
    ("clusters", "observed", "cache", "row"),
    [
        pytest.param(
            [],
            [],
            CACHE_NONE,
            ("False", "NoClusters", "0 of 1 replicas updated, 0 ready; 1 replica cannot be placed: "
             "no InferenceClusters found"),
            id="no cluster",
        ),
        pytest.param(
            [cluster("a", pool("h100", 1, gpu()), taints=NO_SCHEDULE),
             cluster("b", pool("h100", 1, gpu()), taints=NO_SCHEDULE)],
            [],
            CACHE_NONE,
            ("False", "Tainted", f"0 of 1 replicas updated, 0 ready; 1 replica {CANNOT} Tainted"),
            id="tainted",
        ),
        pytest.param(
            FLEET,
            [],
            CACHE_ABSENT,
            ("False", "CacheUnavailable",
             f"0 of 1 replicas updated, 0 ready; 1 replica {CANNOT} CacheUnavailable"),
            id="cache not found",
        ),
        pytest.param(
            FLEET,
            [],
            CACHE_UNRESOLVED,
            ("True", "RolloutInProgress", "0 of 1 replicas updated, 0 ready"),
            id="cache not fetched yet: the next call brings it",
        ),
        pytest.param(
            [cluster("a", pool("h100", 1, gpu()), ready="False"),
             cluster("b", pool("h100", 1, gpu()), ready="False")],
            [],
            CACHE_NONE,
            ("False", "NotReady", f"0 of 1 replicas updated, 0 ready; 1 replica {CANNOT} NotReady"),
            id="no cluster Ready",
        ),
    ],
)  # fmt: skip
def test_progressing_is_false_when_nothing_can_be_placed(
    clusters: list[InferenceCluster],
    observed: list[ModelReplica],
    cache: CacheState,
    row: tuple[str, str, str],
) -> None:
    # Like a Deployment's Progressing=False: the rollout will not finish by itself, and the
    # reason is the one ReplicasScheduled gives, so it does not read RolloutInProgress forever.
    d = deployment("chat", 1, cache="qwen" if cache is not CACHE_NONE else None)
    s = status(d, clusters, observed, cache)
    assert conds(s)[-1] == ("Progressing", *row)


def test_progressing_no_capacity_once_the_placed_replicas_are_ready() -> None:
    # Two wanted, room for one: while the placed one starts the rollout is in progress; once it
    # is Ready nothing else is in flight and the missing one cannot be placed.
    fleet = [cluster("a", pool("h100", 1, gpu(count=1)))]
    starting = status(deployment("chat", 2), fleet, [replica("chat", "a", 0)])
    assert conds(starting)[-1] == (
        "Progressing", "True", "RolloutInProgress", "1 of 2 replicas updated, 0 ready"
    )  # fmt: skip
    ready = status(deployment("chat", 2), fleet, [replica("chat", "a", 0, ready=True)])
    assert conds(ready)[-1] == (
        "Progressing",
        "False",
        "InsufficientCapacity",
        "1 of 2 replicas updated, 1 ready; 1 replica cannot be placed: "
        "0/1 clusters available: 1 InsufficientCapacity",
    )
