"""The scheduler's worked examples, exactly: names, pools, reasons and messages."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from modelplane.api import InferenceCluster, ModelDeployment, ModelReplica
from modelplane.naming import replica_name
from modelplane.scheduling import (
    CACHE_ABSENT,
    CACHE_NONE,
    CacheState,
    Schedule,
    cache_state,
    schedule,
)
from tests.builders import memory_selector

from .builders import (
    cluster,
    deployment,
    engine,
    gpu,
    host,
    member,
    model_cache,
    pool,
    replica,
    request,
    seed_fleet,
    stamped_member,
)


def run(
    d: ModelDeployment,
    clusters: Sequence[InferenceCluster],
    observed: Sequence[ModelReplica] = (),
    cache: CacheState = CACHE_NONE,
) -> Schedule:
    return schedule(d, clusters, [], cache, observed)


def ids(s: Schedule) -> list[tuple[str, str, int]]:
    return [(p.name, p.cluster, p.index) for p in s.replicas]


def explain(s: Schedule) -> dict[str, tuple[str, str]]:
    return {e.cluster: (e.reason, e.message) for e in s.explain}


@pytest.mark.parametrize(
    ("dep", "cl", "index", "name"),
    [
        ("my-model", "cluster-a", 0, "my-model-5ab63"),
        ("my-model", "cluster-a", 1, "my-model-609c5"),
        ("my-model", "cluster-b", 0, "my-model-f0b76"),
        ("qwen3-8b", "us-east-1", 0, "qwen3-8b-e7f0a"),
        ("qwen3-8b", "us-east-1", 1, "qwen3-8b-7b182"),
        ("qwen3-8b", "us-west-2", 0, "qwen3-8b-13bc2"),
        (
            "a-very-long-deployment-name-that-keeps-going-and-going-to-63chr",
            "us-east-1",
            0,
            "a-very-long-deployment-name-that-keeps-going-and-going-to-d7034",
        ),
    ],
)
def test_replica_names(dep: str, cl: str, index: int, name: str) -> None:
    assert replica_name(dep, cl, index) == name
    assert len(name) <= 63


# ---------------------------------------------------------------------------------------------
# 12.1 The seed deployment on a small fleet


def test_12_1_seed_fleet() -> None:
    s = run(deployment("qwen3-8b", 2), seed_fleet())
    assert ids(s) == [("qwen3-8b-e7f0a", "us-east-1", 0), ("qwen3-8b-13bc2", "us-west-2", 0)]
    east, west = s.replicas
    assert [(m.role, m.pool, m.pods) for e in east.engines for m in e.members] == [
        ("Standalone", "h100", 1)
    ]
    assert [(m.role, m.pool, m.pods) for e in west.engines for m in e.members] == [
        ("Standalone", "l4", 1)
    ]
    (req,) = east.engines[0].members[0].device_requests
    assert (req.name, req.device_class_name, req.count) == ("gpu", "gpu.nvidia.com", 1)
    assert east.gateway_address == "203.0.113.10" and not east.retained
    assert explain(s) == {"eu-west-1": ("NotReady", "Ready condition is False")}
    assert s.checked == 3


def test_12_1_with_cluster_selector() -> None:
    s = run(deployment("qwen3-8b", 2, selector={"region": "us"}), seed_fleet())
    assert ids(s) == [("qwen3-8b-e7f0a", "us-east-1", 0), ("qwen3-8b-13bc2", "us-west-2", 0)]
    assert explain(s) == {
        "eu-west-1": ("ClusterSelectorMismatch", "label region is eu, clusterSelector wants us")
    }
    assert s.checked == 2


def test_12_1_three_replicas() -> None:
    s = run(deployment("qwen3-8b", 3, selector={"region": "us"}), seed_fleet())
    assert ids(s) == [
        ("qwen3-8b-e7f0a", "us-east-1", 0),
        ("qwen3-8b-7b182", "us-east-1", 1),
        ("qwen3-8b-13bc2", "us-west-2", 0),
    ]


# ---------------------------------------------------------------------------------------------
# 12.2 Device-level packing


SMALL_NAMES = [
    "small-eca35", "small-7a45b", "small-0ba30", "small-668a7",
    "small-35aec", "small-2c21b", "small-e881b", "small-025e6",
]  # fmt: skip


def test_12_2_eight_one_gpu_replicas_share_one_node() -> None:
    s = run(deployment("small", 9), [cluster("c1", pool("h100", 1, gpu()))])
    assert ids(s) == [(n, "c1", i) for i, n in enumerate(SMALL_NAMES)]
    assert s.explain == ()  # c1 received new replicas


def test_12_2_second_cluster_without_room() -> None:
    full = replica("big", "c2", 0, namespace="research", gpus=8)
    s = run(
        deployment("small", 9),
        [cluster("c1", pool("h100", 1, gpu())), cluster("c2", pool("h100", 1, gpu()))],
        [full],
    )
    assert len(s.replicas) == 8
    assert explain(s) == {
        "c2": (
            "InsufficientCapacity",
            "engine small: no pool has room: pool h100 needs Standalone 1x{gpu=1}, free per node [gpu=0]",
        )
    }


def test_12_2_other_deployment_is_charged_first() -> None:
    big = ModelReplica.model_validate(
        {
            "metadata": {
                "name": "big-3c1d2",
                "namespace": "research",
                "labels": {"modelplane.ai/deployment": "big", "modelplane.ai/replica-index": "0"},
            },
            "spec": {
                "clusterName": "c1",
                "engines": [
                    {
                        "name": "big",
                        "copies": 1,
                        "members": [
                            stamped_member("h100", requests=[("gpu", "gpu.nvidia.com", 4)])
                        ],
                    }
                ],
            },
        }
    )
    s = run(deployment("small", 9), [cluster("c1", pool("h100", 1, gpu()))], [big])
    assert ids(s) == [(n, "c1", i) for i, n in enumerate(SMALL_NAMES[:4])]


def test_12_2_gang_packs_three_pods_on_one_node() -> None:
    gang = engine(
        "gang",
        member("Leader", request("gpu", 1)),
        member("Worker", request("gpu", 1), worker_nodes=2),
        copies=1,
    )
    fleet = [
        cluster("c1", pool("h100", 1, gpu())),
        cluster("c2", pool("h100", 1, gpu(3))),
    ]
    s = run(deployment("gang", 4, gang), fleet)
    # c1's node takes two gangs (6 GPUs); c2's 3-GPU node takes one.
    assert ids(s) == [(replica_name("gang", "c1", 0), "c1", 0), (replica_name("gang", "c1", 1), "c1", 1),
                      (replica_name("gang", "c2", 0), "c2", 0)]  # fmt: skip
    members = s.replicas[0].engines[0].members
    assert [(m.role, m.pool, m.pods) for m in members] == [
        ("Leader", "h100", 1),
        ("Worker", "h100", 2),
    ]
    assert explain(s) == {}


# ---------------------------------------------------------------------------------------------
# 12.3 Split engine

LEADER_HOST = member("Leader", request("host", 1, 'device.driver == "cpu.example.com"'))
WORKER_GPUS = member(
    "Worker",
    request("gpu", 8, memory_selector("70Gi")),
    worker_nodes=2,
)


def coder() -> ModelDeployment:
    return deployment("coder", 1, engine("coder", LEADER_HOST, WORKER_GPUS, copies=1))


def test_12_3_split_engine() -> None:
    c1 = cluster("c1", pool("cpu", 1, host()), pool("h100", 2, gpu()))
    s = run(coder(), [c1])
    assert ids(s) == [("coder-8ee2b", "c1", 0)]
    leader, worker = s.replicas[0].engines[0].members
    assert (leader.role, leader.pool, leader.pods, leader.device_requests) == (
        "Leader",
        "cpu",
        0,
        (),
    )
    assert (worker.role, worker.pool, worker.pods) == ("Worker", "h100", 2)
    assert [(r.name, r.count) for r in worker.device_requests] == [("gpu", 8)]


def test_12_3_whole_phase_is_not_split_for_capacity() -> None:
    dgx = pool("dgx", 1, host(), gpu())
    c1 = cluster("c1", dgx, pool("cpu", 1, host()), pool("h100", 2, gpu()))
    s = run(coder(), [c1])
    assert s.replicas == ()
    assert explain(s) == {
        "c1": (
            "InsufficientCapacity",
            "engine coder: no pool has room: pool dgx needs Worker 2x{gpu=8}, free per node [gpu=8]",
        )
    }


# ---------------------------------------------------------------------------------------------
# 12.4 Retain, scale down, spread


def abc() -> list[InferenceCluster]:
    return [cluster(n, pool("h100", 4, gpu())) for n in ("a", "b", "c")]


def chat_observed(*identities: tuple[str, int]) -> list[ModelReplica]:
    return [replica("chat", c, i) for c, i in identities]


def test_12_4_scale_down_most_loaded_cluster_highest_index() -> None:
    s = run(deployment("chat", 2), abc(), chat_observed(("a", 0), ("a", 1), ("b", 0)))
    assert ids(s) == [("chat-812a6", "a", 0), ("chat-9a1dd", "b", 0)]
    assert all(p.retained for p in s.replicas)
    message = "eligible; 2 replica(s) already meet spec.replicas 2"
    assert explain(s) == {c: ("NoNewReplicasNeeded", message) for c in "abc"}


def test_12_4_fill_spreads_to_the_empty_cluster() -> None:
    s = run(deployment("chat", 4), abc(), chat_observed(("a", 0), ("a", 1), ("b", 0)))
    assert ids(s) == [
        ("chat-812a6", "a", 0),
        (replica_name("chat", "a", 1), "a", 1),
        ("chat-9a1dd", "b", 0),
        ("chat-ef62e", "c", 0),
    ]
    assert [p.retained for p in s.replicas] == [True, True, True, False]
    message = "eligible; the new replicas went to c"
    assert explain(s) == {"a": ("NotSelected", message), "b": ("NotSelected", message)}


def test_12_4_tie_keeps_the_earlier_cluster_name() -> None:
    s = run(deployment("chat", 1), abc(), chat_observed(("a", 0), ("b", 0)))
    assert ids(s) == [("chat-812a6", "a", 0)]


# ---------------------------------------------------------------------------------------------
# 12.5 Drain and cache gate

DECOMMISSION = {"key": "modelplane.ai/decommission", "effect": "NoExecute"}


def test_12_5_no_execute_drains_and_refills() -> None:
    fleet = [
        cluster("a", pool("h100", 1, gpu()), taints=[DECOMMISSION]),
        cluster("b", pool("h100", 1, gpu())),
    ]
    s = run(deployment("chat", 1), fleet, chat_observed(("a", 0)))
    assert ids(s) == [("chat-9a1dd", "b", 0)]
    assert explain(s) == {
        "a": ("Tainted", "taint modelplane.ai/decommission:NoExecute is not tolerated")
    }


def test_12_5_tolerated_no_execute_keeps_the_replica() -> None:
    fleet = [
        cluster("a", pool("h100", 1, gpu()), taints=[DECOMMISSION]),
        cluster("b", pool("h100", 1, gpu())),
    ]
    toleration = {"key": "modelplane.ai/decommission", "operator": "Exists", "effect": "NoExecute"}
    s = run(deployment("chat", 1, tolerations=[toleration]), fleet, chat_observed(("a", 0)))
    assert ids(s) == [("chat-812a6", "a", 0)]
    assert s.replicas[0].retained


def test_12_5_no_schedule_keeps_the_replica_and_steers_new_ones() -> None:
    taint = {"key": "maint", "value": "on", "effect": "NoSchedule"}
    fleet = [
        cluster("a", pool("h100", 1, gpu()), taints=[taint]),
        cluster("b", pool("h100", 1, gpu())),
    ]
    s = run(deployment("chat", 3), fleet, chat_observed(("a", 0)))
    assert ids(s) == [
        ("chat-812a6", "a", 0),
        ("chat-9a1dd", "b", 0),
        (replica_name("chat", "b", 1), "b", 1),
    ]
    assert explain(s) == {"a": ("Tainted", "taint maint=on:NoSchedule is not tolerated")}


def test_12_5_absent_cache_retains_and_adds_nothing() -> None:
    fleet = [
        cluster(n, pool("h100", 1, gpu()), labels={"tier": "gpu" if n == "b" else "cpu"})
        for n in "abc"
    ]
    d = deployment("chat", 2, cache="qwen")
    assert cache_state(d, []) == CACHE_ABSENT
    s = run(d, fleet, chat_observed(("a", 0)), cache=CACHE_ABSENT)
    assert ids(s) == [("chat-812a6", "a", 0)]
    message = "ModelCache qwen not found; no new replicas are placed"
    assert explain(s) == {c: ("CacheUnavailable", message) for c in "abc"}


def test_12_5_present_cache_narrows_candidates_and_fill_resumes() -> None:
    fleet = [
        cluster(n, pool("h100", 1, gpu()), labels={"tier": "gpu" if n == "b" else "cpu"})
        for n in "abc"
    ]
    d = deployment("chat", 2, cache="qwen")
    cache = cache_state(d, [model_cache("qwen", selector={"tier": "gpu"})])
    assert cache == CacheState.present({"tier": "gpu"})
    s = run(d, fleet, chat_observed(("a", 0)), cache=cache)
    # a/0 is on a cluster that is no longer a candidate: re-placed on b.
    assert ids(s) == [("chat-9a1dd", "b", 0), (replica_name("chat", "b", 1), "b", 1)]
    want = "label tier is cpu, ModelCache qwen clusterSelector wants gpu"
    assert explain(s) == {
        "a": ("CacheSelectorMismatch", want),
        "c": ("CacheSelectorMismatch", want),
    }
