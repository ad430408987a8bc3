"""One table-driven test (or a few) per rule of the scheduler (docs/scheduling.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from modelplane.api import (
    InferenceClass,
    InferenceCluster,
    ModelDeployment,
    ModelReplica,
    Taint,
    Toleration,
)
from modelplane.naming import replica_name
from modelplane.scheduling import (
    CACHE_NONE,
    CACHE_UNRESOLVED,
    UNRESOLVED,
    CacheState,
    ExplainEntry,
    HoldCause,
    Mode,
    Schedule,
    identity,
    owns,
    schedule,
)
from modelplane.scheduling.fleet import tolerates
from tests.builders import memory_selector

from .builders import (
    GPU_SEL,
    cluster,
    deployment,
    engine,
    gpu,
    host,
    inference_class,
    member,
    pool,
    replica,
    request,
    stamped_member,
)


def run(
    d: ModelDeployment,
    clusters: Sequence[InferenceCluster] | Any,
    observed: Sequence[ModelReplica] = (),
    cache: CacheState = CACHE_NONE,
    classes: Sequence[InferenceClass] = (),
) -> Schedule:
    return schedule(d, clusters, classes, cache, observed)


def ids(s: Schedule) -> list[tuple[str, int]]:
    return [(p.cluster, p.index) for p in s.replicas]


def explain(s: Schedule) -> dict[str, tuple[str, str]]:
    return {e.cluster: (e.reason, e.message) for e in s.explain}


def h100(name: str = "c1", nodes: int = 1, **kw: Any) -> InferenceCluster:
    return cluster(name, pool("h100", nodes, gpu()), **kw)


# ---------------------------------------------------------------------------------------------
# Ownership, identity, names


def test_ownership_is_namespace_and_name_label() -> None:
    d = deployment("chat")
    assert owns(d, replica("chat", "c1", 0))
    assert not owns(d, replica("chat", "c1", 0, namespace="other"))
    assert not owns(d, replica("chat2", "c1", 0))


def test_same_name_in_another_namespace_is_charged_not_adopted() -> None:
    other = replica("chat", "c1", 0, namespace="other", gpus=8)
    s = run(deployment("chat"), [h100("c1"), h100("c2")], [other])
    assert ids(s) == [("c2", 0)]
    assert not s.replicas[0].retained
    assert explain(s)["c1"][0] == "InsufficientCapacity"


@pytest.mark.parametrize(
    ("label", "index"), [(None, 0), ("abc", 0), ("-1", 0), ("007", 7), ("12", 12), ("", 0)]
)
def test_identity_index(label: str | None, index: int) -> None:
    assert identity(replica("chat", "c1", label)) == ("c1", index)


def test_duplicate_identity_the_earlier_kept_name_wins() -> None:
    # Both valid: chat-aaa (7 GPUs) is kept. chat-bbb is dropped, but it runs until it is
    # deleted and its cluster's occupancy stops counting it: its GPU stays
    # charged, so the 8-GPU node has no room for a new replica in this pass.
    first = replica("chat", "c1", 0, name="chat-aaa", gpus=7)
    second = replica("chat", "c1", 0, name="chat-bbb", gpus=1)
    s = run(deployment("chat", 3), [h100()], [second, first])
    assert [(p.index, p.retained) for p in s.replicas] == [(0, True)]
    # Once chat-bbb is gone, its GPU is free again.
    s = run(deployment("chat", 3), [h100()], [first])
    assert [(p.index, p.retained) for p in s.replicas] == [(0, True), (1, False)]
    # A dropped earlier replica does not hold the identity: the later one is kept.
    broken = replica("chat", "c1", 0, name="chat-aaa", pool_name="gone")
    s = run(deployment("chat", 3), [h100()], [second, broken])
    assert [(p.index, p.retained) for p in s.replicas] == [(0, True), (1, False), (2, False)]


def test_retained_replica_is_renamed_by_the_rule() -> None:
    s = run(deployment("chat", 1), [h100()], [replica("chat", "c1", 3, name="whatever")])
    assert [(p.name, p.index, p.retained) for p in s.replicas] == [
        (replica_name("chat", "c1", 3), 3, True)
    ]


# ---------------------------------------------------------------------------------------------
# Normalisation; derived pools


def test_count_zero_device_matches_nothing() -> None:
    s = run(deployment("chat"), [cluster("c1", pool("h100", 1, gpu(0)))])
    assert s.replicas == ()
    assert explain(s)["c1"] == (
        "NoMatchingPool",
        "engine chat member Standalone: no pool matches: pool h100: request gpu needs 1 of device gpu, 0 left",
    )


def test_worker_without_worker_block_spans_one_node() -> None:
    gang = engine("g", member("Leader", claimless=True), member("Worker", request("gpu", 8)))
    s = run(deployment("g", 1, gang), [h100()])
    assert [(m.role, m.pods) for m in s.replicas[0].engines[0].members] == [
        ("Leader", 0),
        ("Worker", 1),
    ]


def test_pools_derived_from_classes() -> None:
    klass = inference_class("h100-8", {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com",
                                        "count": 8, "capacity": {"memory": {"value": "81559Mi"}}})  # fmt: skip
    c = cluster(
        "c1",
        node_pools=[{"name": "main", "className": "h100-8", "nodeCount": 1, "maxNodeCount": 2}],
    )
    s = run(
        deployment("big", 2, engine("big", member("Standalone", request("gpu", 8)))),
        [c],
        classes=[klass],
    )
    assert ids(s) == [("c1", 0), ("c1", 1)]  # maxNodeCount counts as capacity
    assert s.replicas[0].engines[0].members[0].pool == "main"


def test_missing_class_makes_the_cluster_pool_unknown() -> None:
    c = cluster("c1", node_pools=[{"name": "main", "className": "nope"}])
    s = run(deployment("chat"), [c])
    assert s.replicas == ()
    assert explain(s) == {"c1": ("NoPools", "cluster publishes no pools")}


def test_published_pools_win_over_node_pools() -> None:
    c = cluster("c1", pool("pub", 1, gpu()), node_pools=[{"name": "main", "className": "nope"}])
    s = run(deployment("chat"), [c])
    assert s.replicas[0].engines[0].members[0].pool == "pub"


# ---------------------------------------------------------------------------------------------
# Filtering


@pytest.mark.parametrize(
    ("labels", "want", "message"),
    [
        ({"region": "eu"}, {"region": "us"}, "label region is eu, clusterSelector wants us"),
        ({}, {"region": "us"}, "label region is absent, clusterSelector wants us"),
        ({"a": "1", "b": "2"}, {"b": "x", "a": "y"}, "label a is 1, clusterSelector wants y"),
    ],
)
def test_cluster_selector_mismatch(
    labels: dict[str, str], want: dict[str, str], message: str
) -> None:
    s = run(deployment("chat", selector=want), [h100("c1", labels=labels)])
    assert explain(s) == {"c1": ("ClusterSelectorMismatch", message)}
    assert s.checked == 0


def test_empty_selector_matches_every_cluster() -> None:
    s = run(deployment("chat", selector={}), [h100("c1")])
    assert ids(s) == [("c1", 0)] and s.checked == 1


def test_cache_selector_is_anded_and_a_clash_matches_nothing() -> None:
    d = deployment("chat", selector={"tier": "a"}, cache="qwen")
    s = run(d, [h100("c1", labels={"tier": "a"})], cache=CacheState.present({"tier": "b"}))
    assert s.replicas == ()
    assert explain(s) == {
        "c1": ("CacheSelectorMismatch", "label tier is a, ModelCache qwen clusterSelector wants b")
    }


def test_empty_cache_selector_adds_nothing() -> None:
    s = run(deployment("chat", cache="qwen"), [h100()], cache=CacheState.present(None))
    assert ids(s) == [("c1", 0)]


@pytest.mark.parametrize(
    ("ready", "message"),
    [
        ("False", "Ready condition is False"),
        ("Unknown", "Ready condition is Unknown"),
        (None, "no Ready condition"),
    ],
)
def test_not_ready_cluster_takes_no_new_replica(ready: str | None, message: str) -> None:
    s = run(deployment("chat"), [h100(ready=ready)])
    assert s.replicas == ()
    assert explain(s) == {"c1": ("NotReady", message)}


@pytest.mark.parametrize("gateway", [None, ""])
def test_no_gateway(gateway: str | None) -> None:
    s = run(deployment("chat"), [h100(gateway=gateway)])
    assert explain(s) == {"c1": ("NoGateway", "no gateway address")}


def test_readiness_and_gateway_do_not_drop_retained_replicas() -> None:
    s = run(deployment("chat"), [h100(ready="False", gateway=None)], [replica("chat", "c1", 0)])
    assert ids(s) == [("c1", 0)]
    assert s.replicas[0].retained and s.replicas[0].gateway_address == ""
    assert explain(s) == {"c1": ("NotReady", "Ready condition is False")}


RANK_WORKER = member(
    "Worker", request("gpu", 8), worker_nodes=2, args=["--rank=$(MODELPLANE_RANK)"]
)


def rank_deployment() -> ModelDeployment:
    return deployment("gang", 1, engine("gang", member("Leader", claimless=True), RANK_WORKER))


def test_dynamo_cannot_host_a_worker_using_the_rank() -> None:
    s = run(rank_deployment(), [h100("dyn", nodes=2, stack="Dynamo"), h100("std", nodes=2)])
    assert ids(s) == [("std", 0)]
    assert explain(s) == {
        "dyn": (
            "StackUnsupported",
            "engine gang: Worker uses $(MODELPLANE_RANK), which the Dynamo stack cannot provide to "
            "workers; use $((GROVE_PCLQ_POD_INDEX + 1)) in a shell command, or a Standard cluster",
        )
    }


def test_dynamo_retained_replica_using_the_rank_is_re_placed() -> None:
    observed = replica(
        "gang", "dyn", 0,
        {"name": "gang", "copies": 1, "members": [
            stamped_member("h100", "Leader"),
            stamped_member("h100", "Worker", [("gpu", "gpu.nvidia.com", 8)], worker_nodes=2)]},
    )  # fmt: skip
    s = run(
        rank_deployment(), [h100("dyn", nodes=2, stack="Dynamo"), h100("std", nodes=2)], [observed]
    )
    assert ids(s) == [("std", 0)]


@pytest.mark.parametrize(
    "command", ["vllm --rank=$MODELPLANE_RANK", "vllm --rank=${MODELPLANE_RANK}"]
)
def test_dynamo_refuses_a_worker_reading_the_rank_from_a_shell(command: str) -> None:
    shell_worker = member("Worker", request("gpu", 8), worker_nodes=2, args=["-c", command])
    d = deployment("g", 1, engine("g", member("Leader", claimless=True), shell_worker))
    s = run(d, [h100("dyn", nodes=2, stack="Dynamo"), h100("std", nodes=2)])
    assert ids(s) == [("std", 0)]
    assert explain(s)["dyn"][0] == "StackUnsupported"


def test_rank_in_env_value_or_leader() -> None:
    env_worker = member("Worker", request("gpu", 8))
    env_worker["template"]["spec"]["containers"][0]["env"] = [
        {"name": "R", "value": "x$(MODELPLANE_RANK)"}
    ]
    d = deployment("g", 1, engine("g", member("Leader", claimless=True), env_worker))
    assert explain(run(d, [h100("dyn", stack="Dynamo")]))["dyn"][0] == "StackUnsupported"
    leader = member("Leader", claimless=True, args=["$(MODELPLANE_RANK)"])
    d = deployment("g", 1, engine("g", leader, member("Worker", request("gpu", 8))))
    assert ids(run(d, [h100("dyn", stack="Dynamo")])) == [("dyn", 0)]


# ---------------------------------------------------------------------------------------------
# Taints and tolerations


@pytest.mark.parametrize(
    ("taint", "toleration", "tolerated"),
    [
        ({"key": "maint", "value": "on", "effect": "NoSchedule"}, {"key": "maint", "operator": "Exists"}, True),
        ({"key": "maint", "value": "on", "effect": "NoSchedule"}, {"key": "maint", "operator": "Equal", "value": "on"}, True),
        ({"key": "maint", "value": "on", "effect": "NoSchedule"}, {"key": "maint", "operator": "Equal", "value": "off"}, False),
        ({"key": "maint", "value": "on", "effect": "NoSchedule"}, {"operator": "Exists"}, True),
        ({"key": "decomm", "effect": "NoExecute"}, {"key": "decomm", "operator": "Exists", "effect": "NoSchedule"}, False),
        ({"key": "decomm", "effect": "NoExecute"}, {"key": "decomm", "operator": "Exists", "effect": "NoExecute"}, True),
        ({"key": "decomm", "effect": "NoExecute"}, {"key": "decomm", "operator": "Equal"}, True),
        ({"key": "decomm", "effect": "NoExecute"}, {"key": "decomm"}, True),  # operator defaults to Equal
    ],
)  # fmt: skip
def test_taint_table(taint: dict[str, Any], toleration: dict[str, Any], tolerated: bool) -> None:
    assert (
        tolerates(Toleration.model_validate(toleration), Taint.model_validate(taint)) is tolerated
    )
    s = run(deployment("chat", tolerations=[toleration]), [h100(taints=[taint])])
    assert (ids(s) == [("c1", 0)]) is tolerated


def test_a_second_untolerated_taint_still_repels() -> None:
    taints = [
        {"key": "a", "effect": "NoSchedule"},
        {"key": "b", "value": "v", "effect": "NoSchedule"},
    ]
    s = run(
        deployment("chat", tolerations=[{"key": "a", "operator": "Exists"}]), [h100(taints=taints)]
    )
    assert explain(s) == {"c1": ("Tainted", "taint b=v:NoSchedule is not tolerated")}


def test_no_schedule_does_not_drain_but_no_execute_does() -> None:
    keep = run(
        deployment("chat"),
        [h100(taints=[{"key": "m", "effect": "NoSchedule"}])],
        [replica("chat", "c1", 0)],
    )
    assert ids(keep) == [("c1", 0)]
    drain = run(
        deployment("chat"),
        [h100(taints=[{"key": "m", "effect": "NoExecute"}])],
        [replica("chat", "c1", 0)],
    )
    assert drain.replicas == ()


# ---------------------------------------------------------------------------------------------
# Matching


def test_first_fit_over_devices_in_published_order() -> None:
    c = cluster(
        "c1",
        pool("p", 1, gpu(1, name="small", cls="small.class"), gpu(8, name="big", cls="big.class")),
    )
    s = run(deployment("chat", 1, engine("chat", member("Standalone", request("gpu", 2)))), [c])
    (req,) = s.replicas[0].engines[0].members[0].device_requests
    assert (req.device_class_name, req.count) == ("big.class", 2)


def test_synthetic_matches_are_not_listed_and_claim_nothing() -> None:
    both = member(
        "Standalone", request("host", 1, 'device.driver == "cpu.example.com"'), request("gpu", 1)
    )
    s = run(deployment("m", 1, engine("m", both)), [cluster("c1", pool("p", 1, host(), gpu()))])
    (m,) = s.replicas[0].engines[0].members
    assert [r.name for r in m.device_requests] == ["gpu"] and m.pods == 1


def test_dra_device_without_class_is_skipped() -> None:
    c = cluster("c1", pool("p", 1, gpu(cls=None)))
    s = run(deployment("chat"), [c])
    assert explain(s)["c1"] == (
        "NoMatchingPool",
        "engine chat member Standalone: no pool matches: pool p: request gpu matches no device",
    )


def test_no_backtracking_between_requests() -> None:
    # Request a (any GPU) takes the 80Gi device first; b needs it and fails although swapping would fit.
    big = gpu(1, "81559Mi", name="big")
    small = gpu(1, "23034Mi", name="small")
    req_a = request("a", 1)
    req_b = request("b", 1, memory_selector("70Gi"))
    d = deployment("m", 1, engine("m", member("Standalone", req_a, req_b)))
    s = run(d, [cluster("c1", pool("p", 1, big, small))])
    assert explain(s)["c1"] == (
        "NoMatchingPool",
        "engine m member Standalone: no pool matches: pool p: request b needs 1 of device big, 0 left",
    )


def test_no_matching_pool_names_every_pool() -> None:
    c = cluster("c1", pool("cpu", 1, host()), pool("l4", 1, gpu(1, "23034Mi")))
    d = deployment("m", 1, engine("m", member("Standalone", request("gpu", 2))))
    assert explain(run(d, [c]))["c1"] == (
        "NoMatchingPool",
        "engine m member Standalone: no pool matches: pool cpu: request gpu matches no device; "
        "pool l4: request gpu needs 2 of device gpu, 1 left",
    )


def test_member_without_node_selector_rides_on_the_engine_pool() -> None:
    gang = engine("g", member("Leader", claimless=True), member("Worker", request("gpu", 1)))
    c = cluster("c1", pool("cpu", 1, host()), pool("h100", 1, gpu()))
    s = run(deployment("g", 1, gang), [c])
    assert [(m.pool, m.pods) for m in s.replicas[0].engines[0].members] == [
        ("h100", 0),
        ("h100", 1),
    ]


# ---------------------------------------------------------------------------------------------
# Engine placement


def test_no_claimable_device() -> None:
    d = deployment(
        "m",
        1,
        engine("m", member("Standalone", request("host", 1, 'device.driver == "cpu.example.com"'))),
    )
    s = run(d, [cluster("c1", pool("cpu", 1, host()))])
    assert explain(s) == {
        "c1": ("NoClaimableDevice", "engine m: no member resolves a claim: DRA device on any pool")
    }


def test_claimable_member_is_never_placed_claimless() -> None:
    # The Standalone could match the synthetic-only pool (its selector accepts any device), but it
    # can claim on the GPU pool, so only that pool is acceptable.
    any_device = request("dev", 1, "true")
    c = cluster("c1", pool("cpu", 1, host()), pool("h100", 1, gpu()))
    s = run(deployment("m", 2, engine("m", member("Standalone", any_device))), [c])
    assert ids(s) == [("c1", 0), ("c1", 1)]
    assert all(p.engines[0].members[0].pool == "h100" for p in s.replicas)


def test_split_phase_failure_names_the_member_and_its_pools() -> None:
    leader = member("Leader", request("host", 1, 'device.driver == "cpu.example.com"'))
    worker = member("Worker", request("gpu", 8), worker_nodes=3)
    c = cluster("c1", pool("cpu", 1, host()), pool("h100", 2, gpu()), pool("h200", 0, gpu()))
    s = run(deployment("coder", 1, engine("coder", leader, worker)), [c])
    assert explain(s)["c1"] == (
        "InsufficientCapacity",
        "engine coder member Worker: no pool has room: pool h100 needs Worker 3x{gpu=8}, free per node "
        "[gpu=8], [gpu=8]; pool h200 needs Worker 3x{gpu=8}, free per node (no nodes)",
    )


def test_free_per_node_is_cut_after_eight_nodes() -> None:
    d = deployment("m", 1, engine("m", member("Standalone", request("gpu", 8)), copies=11))
    s = run(d, [cluster("c1", pool("h100", 10, gpu()))])
    assert explain(s)["c1"] == (
        "InsufficientCapacity",
        "engine m: no pool has room: pool h100 needs Standalone 11x{gpu=8}, free per node "
        + ", ".join(["[gpu=8]"] * 8)
        + ", ... (10 nodes)",
    )


def test_need_lists_every_claiming_member_and_device() -> None:
    leader = member(
        "Leader", request("gpu", 1), request("nic", 1, 'device.driver == "nic.nvidia.com"')
    )
    worker = member("Worker", request("gpu", 4), worker_nodes=2)
    nic = {
        "name": "nic",
        "claim": "DRA",
        "driver": "nic.nvidia.com",
        "deviceClassName": "nic",
        "count": 1,
    }
    c = cluster("c1", pool("p", 1, gpu(), nic))
    s = run(deployment("m", 1, engine("m", leader, worker)), [c])
    assert explain(s)["c1"] == (
        "InsufficientCapacity",
        "engine m: no pool has room: pool p needs Leader 1x{gpu=1,nic=1} + Worker 2x{gpu=4}, "
        "free per node [gpu=8,nic=1]",
    )


def test_engines_share_one_trial_and_the_failing_engine_is_named() -> None:
    e1 = engine("first", member("Standalone", request("gpu", 6)))
    e2 = engine("second", member("Standalone", request("gpu", 4)))
    s = run(deployment("m", 1, e1, e2), [h100()])
    assert explain(s)["c1"] == (
        "InsufficientCapacity",
        "engine second: no pool has room: pool h100 needs Standalone 1x{gpu=4}, free per node [gpu=2]",
    )
    ok = run(deployment("m", 1, e1, e2), [h100(nodes=2)])
    assert [m.pool for e in ok.replicas[0].engines for m in e.members] == ["h100", "h100"]


def test_copies_multiply_pods() -> None:
    d = deployment("m", 1, engine("m", member("Standalone", request("gpu", 2)), copies=4))
    s = run(d, [h100()])
    assert s.replicas[0].engines[0].members[0].pods == 4
    assert (
        run(
            deployment("m", 2, engine("m", member("Standalone", request("gpu", 2)), copies=4)),
            [h100()],
        ).total
        == 1
    )


# ---------------------------------------------------------------------------------------------
# The ledger


def test_overcommitted_pool_is_closed() -> None:
    heavy = replica("other", "c1", 0, namespace="x", gpus=8)
    heavy2 = replica("other", "c1", 1, namespace="x", gpus=8)
    s = run(deployment("chat"), [h100()], [heavy, heavy2])
    assert explain(s)["c1"] == (
        "InsufficientCapacity",
        "engine chat: no pool has room: pool h100 is overcommitted by observed replicas",
    )


def test_claimless_member_still_fits_beside_a_closed_pool() -> None:
    heavy = [replica("o", "c1", i, namespace="x", gpus=8) for i in range(2)]
    leader = member("Leader", request("host", 1, 'device.driver == "cpu.example.com"'))
    c = cluster("c1", pool("cpu", 1, host()), pool("h100", 1, gpu()), pool("h200", 1, gpu()))
    s = run(
        deployment("m", 1, engine("m", leader, member("Worker", request("gpu", 8)))), [c], heavy
    )
    assert [m.pool for m in s.replicas[0].engines[0].members] == ["cpu", "h200"]


def test_observed_member_on_an_unpublished_pool_is_charged_nothing() -> None:
    ghost = replica("o", "c1", 0, namespace="x", pool_name="gone", gpus=8)
    assert ids(run(deployment("chat"), [h100()], [ghost])) == [("c1", 0)]


def test_observed_requests_map_by_device_class() -> None:
    other_class = replica("o", "c1", 0, namespace="x", gpus=8)
    c = cluster("c1", pool("h100", 1, gpu(cls="other.class")))
    # The observed request names gpu.nvidia.com, which this pool does not publish: skipped.
    assert ids(
        run(
            deployment("chat", 1, engine("chat", member("Standalone", request("gpu", 8)))),
            [c],
            [other_class],
        )
    ) == [("c1", 0)]


def test_observed_copies_and_worker_nodes_are_charged() -> None:
    gang = replica(
        "o", "c1", 0,
        {"name": "o", "copies": 2, "members": [
            stamped_member("h100", "Leader", [("gpu", "gpu.nvidia.com", 1)]),
            stamped_member("h100", "Worker", [("gpu", "gpu.nvidia.com", 1)], worker_nodes=2)]},
        namespace="x",
    )  # fmt: skip
    # 2 x (1 + 2) = 6 GPUs charged: two of 8 left.
    s = run(deployment("chat", 3), [h100()], [gang])
    assert s.total == 2


def test_our_dropped_replicas_free_their_devices() -> None:
    # The observed replica is pinned to a pool the deployment's new selector no longer matches.
    observed = replica("chat", "c1", 0, gpus=8)
    d = deployment(
        "chat", 1, engine("chat", member("Standalone", request("gpu", 8, 'device.driver == "x"')))
    )
    s = run(d, [cluster("c1", pool("h100", 1, gpu()), pool("x", 1, gpu(driver="x")))], [observed])
    assert [(p.cluster, p.index, p.retained) for p in s.replicas] == [("c1", 0, False)]
    assert s.replicas[0].engines[0].members[0].pool == "x"


def test_retained_replica_is_charged_at_its_observed_cost() -> None:
    observed = replica("chat", "c1", 0, gpus=6)
    s = run(deployment("chat", 2), [h100()], [observed])
    # Kept (re-resolved at 1 GPU) but charged 6: one more 1-GPU replica fits in the 2 left.
    assert [(p.index, p.retained) for p in s.replicas] == [(0, True), (1, False)]
    assert run(deployment("chat", 4), [h100()], [observed]).total == 3


# ---------------------------------------------------------------------------------------------
# Phases


def test_parked() -> None:
    s = run(deployment("chat", 0), [h100("b"), h100("a")], [replica("chat", "a", 0)])
    assert s.mode is Mode.PARKED and s.replicas == ()
    assert s.explain == tuple(
        ExplainEntry(c, "NoReplicasDesired", "spec.replicas is 0") for c in "ab"
    )


def test_parked_with_unresolved_clusters() -> None:
    s = run(deployment("chat", 0), UNRESOLVED)
    assert s.mode is Mode.PARKED and s.explain == ()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, [True]),
        ({"engine_name": "renamed"}, [False]),
        ({"extra_engine": True}, [False]),
        ({"role": "Leader"}, [False]),
        ({"pool": "gone"}, [False]),
        ({"selector": 'device.driver == "x"'}, []),  # dropped, and nothing matches any more
    ],
)
def test_retain_re_resolution(change: dict[str, Any], expected: list[bool]) -> None:
    engines = [
        engine("chat", member("Standalone", request("gpu", 1, change.get("selector", GPU_SEL))))
    ]
    if change.get("extra_engine"):
        engines.append(engine("extra"))
    d = deployment("chat", 1, *engines)
    stamped = stamped_member(change.get("pool", "h100"), change.get("role", "Standalone"),
                             [("gpu", "gpu.nvidia.com", 1)])  # fmt: skip
    obs = replica(
        "chat",
        "c1",
        0,
        {"name": change.get("engine_name", "chat"), "copies": 1, "members": [stamped]},
    )
    s = run(d, [h100()], [obs])
    assert [p.retained for p in s.replicas] == expected


def test_retain_requires_a_claiming_member_per_engine() -> None:
    # Deployment member's request now matches only the synthetic host: re-resolution gives [].
    d = deployment(
        "m",
        1,
        engine("m", member("Standalone", request("host", 1, 'device.driver == "cpu.example.com"'))),
    )
    obs = replica("m", "c1", 0, pool_name="p")
    s = run(d, [cluster("c1", pool("p", 1, host(), gpu()))], [obs])
    assert s.replicas == ()


def test_retained_split_engine_keeps_its_split() -> None:
    leader = member("Leader", claimless=True)
    worker = member("Worker", request("gpu", 1))
    d = deployment("g", 1, engine("g", leader, worker))
    obs = replica(
        "g", "c1", 0,
        {"name": "g", "copies": 1, "members": [
            stamped_member("cpu", "Leader"),
            stamped_member("h100", "Worker", [("gpu", "gpu.nvidia.com", 1)])]},
    )  # fmt: skip
    s = run(d, [cluster("c1", pool("cpu", 1, host()), pool("h100", 1, gpu()))], [obs])
    assert s.replicas[0].retained
    assert [m.pool for m in s.replicas[0].engines[0].members] == ["cpu", "h100"]


def test_retained_replica_is_not_checked_for_capacity_or_acceptability() -> None:
    # Pinned to the synthetic pool for its claimless member, and the GPU pool is full: kept anyway.
    heavy = [replica("o", "c1", i, namespace="x", gpus=8) for i in range(3)]
    s = run(deployment("chat"), [h100()], [replica("chat", "c1", 0), *heavy])
    assert ids(s) == [("c1", 0)] and s.replicas[0].retained


def test_cluster_gone_re_places() -> None:
    s = run(deployment("chat"), [h100("c2")], [replica("chat", "c1", 0)])
    assert ids(s) == [("c2", 0)] and not s.replicas[0].retained


def test_scale_down_order() -> None:
    observed = [
        replica("chat", c, i)
        for c, i in [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("c", 5)]
    ]
    fleet = [h100(n) for n in "abc"]
    assert ids(run(deployment("chat", 5), fleet, observed)) == [
        ("a", 0),
        ("a", 1),
        ("b", 0),
        ("b", 1),
        ("c", 5),
    ]
    assert ids(run(deployment("chat", 3), fleet, observed)) == [("a", 0), ("b", 0), ("c", 5)]
    assert ids(run(deployment("chat", 2), fleet, observed)) == [("a", 0), ("b", 0)]


def test_fill_takes_the_lowest_free_index() -> None:
    observed = [replica("chat", "a", 1), replica("chat", "a", 3)]
    s = run(deployment("chat", 4), [h100("a")], observed)
    assert ids(s) == [("a", 0), ("a", 1), ("a", 2), ("a", 3)]


def test_fill_spreads_before_stacking() -> None:
    s = run(deployment("chat", 5), [h100(n) for n in ("b", "a", "c")])
    assert ids(s) == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("c", 0)]


def test_fill_runs_short() -> None:
    s = run(
        deployment("chat", 3, engine("chat", member("Standalone", request("gpu", 8)))),
        [h100("a"), h100("b")],
    )
    assert ids(s) == [("a", 0), ("b", 0)]
    assert s.explain == ()


def test_unresolved_cache_blocks_fill() -> None:
    s = run(
        deployment("chat", 2, cache="qwen"),
        [h100()],
        [replica("chat", "c1", 0)],
        cache=CACHE_UNRESOLVED,
    )
    assert ids(s) == [("c1", 0)]
    assert explain(s) == {
        "c1": ("CacheUnavailable", "ModelCache qwen not yet resolved; no new replicas are placed")
    }


# ---------------------------------------------------------------------------------------------
# Holding


def test_unresolved_clusters_hold_everything_observed() -> None:
    observed = [
        replica("chat", "a", 0, name="z"),
        replica("chat", "a", 0, name="y"),
        replica("chat", "b", 1),
    ]
    s = run(deployment("chat", 5), UNRESOLVED, observed)
    assert (
        s.mode is Mode.HELD and s.cause is HoldCause.CLUSTERS_UNRESOLVED and not s.clusters_fetched
    )
    assert ids(s) == [("a", 0), ("b", 1)]
    assert all(p.held and p.retained and p.gateway_address == "" for p in s.replicas)
    assert s.replicas[0].observed is observed[1]  # the first by name wins the identity
    assert s.explain == ()


def test_held_replicas_are_scaled_down() -> None:
    observed = [replica("chat", c, i) for c, i in [("a", 0), ("a", 1), ("b", 0)]]
    s = run(deployment("chat", 2), UNRESOLVED, observed)
    assert ids(s) == [("a", 0), ("b", 0)]


def test_empty_cluster_list_with_our_replicas_is_a_fault() -> None:
    s = run(deployment("chat", 1), [], [replica("chat", "a", 0)])
    assert s.mode is Mode.HELD and s.cause is HoldCause.CLUSTERS_UNRESOLVED and s.clusters_fetched
    assert ids(s) == [("a", 0)]


def test_empty_cluster_list_without_replicas_is_empty() -> None:
    s = run(deployment("chat", 1), [], [replica("other", "a", 0)])
    assert s.mode is Mode.NORMAL and s.replicas == () and s.cluster_count == 0


def test_invalid_selector_holds() -> None:
    d = deployment(
        "chat", 1, engine("chat", member("Standalone", request("gpu", 1, "device.count >= 1")))
    )
    s = run(d, [h100("a"), h100("b")], [replica("chat", "a", 0, gpus=3)])
    assert s.mode is Mode.HELD and s.cause is HoldCause.INVALID_NODE_SELECTOR
    assert s.selector_error
    assert ids(s) == [("a", 0)]
    held = s.replicas[0]
    assert held.held and held.gateway_address == "203.0.113.1"
    assert held.engines[0].members[0].device_requests[0].count == 3  # read from the observed spec
    message = f"Invalid nodeSelector CEL expression: {s.selector_error}; existing replicas are kept"
    assert explain(s) == {c: ("SchedulingHeld", message) for c in "ab"}


def test_pool_unknown_cluster_keeps_its_replica_as_observed() -> None:
    c = cluster("c1", node_pools=[{"name": "main", "className": "nope"}])
    obs = replica("chat", "c1", 0, pool_name="main", gpus=2)
    s = run(deployment("chat", 1), [c], [obs])
    assert s.mode is Mode.NORMAL
    (p,) = s.replicas
    assert (
        p.held
        and p.retained
        and p.engines[0].members[0].pool == "main"
        and p.engines[0].members[0].pods == 1
    )
    assert explain(s) == {"c1": ("NoPools", "cluster publishes no pools")}


def test_explain_is_sorted_and_retained_clusters_have_entries() -> None:
    fleet = [h100(n) for n in ("c", "a", "b")]
    s = run(deployment("chat", 2), fleet, [replica("chat", "b", 0)])
    assert ids(s) == [("a", 0), ("b", 0)]
    assert [e.cluster for e in s.explain] == ["b", "c"]
    assert explain(s)["b"] == ("NotSelected", "eligible; the new replicas went to a")
