"""The ModelDeployment function over gRPC (docs/reconcile.md, "Conditions, events and readiness";
docs/composition.md, "The ModelReplica of a placement"; docs/crossplane.md, "How the function
behaves").
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api import ModelDeployment
from modelplane.naming import replica_name
from modelplane.runtime.crossplane.deployment_fn import gather_inputs
from modelplane.runtime.crossplane.messages import FunctionRequest
from modelplane.scheduling.occupancy import PUBLISHED
from tests.builders import stack_component, stack_status

from .conftest import NOW_TEXT, Stubs
from .helpers import (
    composite_ready,
    composite_status,
    conditions,
    deployment,
    desired,
    direct,
    inference_class,
    model_cache,
    readiness,
    ready_cluster,
    replica,
    request,
    requirements,
    results,
    satisfy,
    with_occupancy,
)

WORLD: list[dict[str, Any]] = [ready_cluster("us-east-1"), inference_class()]
ALL = {"api_version": "modelplane.ai/v1alpha1", "match_labels": {}}


def _reconcile(stubs: Stubs, xr: dict[str, Any], world: list[dict[str, Any]], **kwargs: Any) -> Any:
    """Crossplane's loop: call, fetch what was asked for, call again."""
    first = stubs.v1.RunFunction(request(xr, **kwargs))
    second = stubs.v1.RunFunction(request(xr, required=satisfy(first, world), **kwargs))
    assert requirements(second) == requirements(first)  # the loop settles
    return second


def _and_usages(*keys: str) -> list[str]:
    """Replica resource keys, each with its Usage's (docs/reconcile.md, "Deletion
    protection"), sorted."""
    return sorted([*keys, *(k.replace("replica-", "usage-", 1) for k in keys)])


def _observed_replicas(count: int, ready: bool) -> dict[str, dict[str, Any]]:
    return {
        f"replica-us-east-1-{i}": replica(
            name=replica_name("qwen3-8b", "us-east-1", i), index=i, ready=ready
        )
        for i in range(count)
    }


def test_first_call_declares_requirements_and_holds(stubs: Stubs) -> None:
    rsp = direct(request(deployment()))
    assert requirements(rsp) == {
        "clusters": {"kind": "InferenceCluster", **ALL},
        "classes": {"kind": "InferenceClass", **ALL},
    }
    assert desired(rsp) == {}
    assert conditions(rsp)[0] == (
        "ReplicasScheduled",
        "False",
        "ClustersUnresolved",
        "Waiting for InferenceClusters",
    )
    assert results(rsp) == []
    assert composite_ready(rsp) == "READY_FALSE"
    assert composite_status(rsp) == {"replicas": {"ready": 0, "total": 0}}


def test_first_call_keeps_every_observed_replica(stubs: Stubs) -> None:
    observed = _observed_replicas(2, ready=True)
    rsp = direct(request(deployment(), observed=observed))
    kept = desired(rsp)
    # Nothing is created but the Usage of each kept replica (its cluster is not deleted).
    assert sorted(kept) == _and_usages(*observed)
    usages = {k: kept.pop(k) for k in list(kept) if k.startswith("usage-")}
    assert {u["spec"]["by"]["resourceRef"]["name"] for u in usages.values()} == {
        o["metadata"]["name"] for o in observed.values()
    }
    for key, obj in kept.items():
        # The observed spec unchanged, without what Crossplane and the API server own.
        assert obj["spec"] == {k: v for k, v in observed[key]["spec"].items() if k != "crossplane"}
        assert set(obj["metadata"]) <= {"name", "namespace", "labels", "annotations"}
        assert "status" not in obj
    assert readiness(rsp) == {
        **{key: "READY_TRUE" for key in observed},
        **{key: "READY_UNSPECIFIED" for key in usages},  # not observed yet
    }
    assert conditions(rsp)[0] == (
        "ReplicasScheduled",
        "False",
        "ClustersUnresolved",
        "Waiting for InferenceClusters; keeping 2 existing replicas",
    )
    assert composite_ready(rsp) == "READY_UNSPECIFIED"


def test_first_call_keeps_observed_endpoints_of_ready_replicas(stubs: Stubs) -> None:
    observed: dict[str, Any] = _observed_replicas(1, ready=True)
    once = desired(_reconcile(stubs, deployment(replicas=1), WORLD, observed=observed))
    endpoint = dict(once["endpoint-us-east-1-0"])
    endpoint["metadata"] = {
        **endpoint["metadata"],
        "uid": "u",
        "resourceVersion": "7",
        "managedFields": [{"manager": "crossplane"}],
    }
    endpoint["status"] = {
        "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]
    }
    observed["endpoint-us-east-1-0"] = endpoint
    rsp = direct(request(deployment(replicas=1), observed=observed))
    kept = desired(rsp)["endpoint-us-east-1-0"]
    assert kept["spec"] == once["endpoint-us-east-1-0"]["spec"]
    assert set(kept["metadata"]) <= {"name", "namespace", "labels", "annotations"}
    assert "status" not in kept
    assert readiness(rsp)["endpoint-us-east-1-0"] == "READY_TRUE"


def test_with_the_fleet_fetched_replicas_are_placed(stubs: Stubs) -> None:
    rsp = _reconcile(stubs, deployment(), WORLD)
    objects = desired(rsp)
    assert sorted(objects) == _and_usages("replica-us-east-1-0", "replica-us-east-1-1")
    first = objects["replica-us-east-1-0"]
    assert first["metadata"]["name"] == replica_name("qwen3-8b", "us-east-1", 0)
    assert first["metadata"]["labels"]["modelplane.ai/replica-index"] == "0"
    assert first["spec"]["engines"][0]["members"][0]["nodePoolName"] == "h100"
    assert set(readiness(rsp).values()) == {"READY_UNSPECIFIED"}
    assert composite_status(rsp) == {"replicas": {"ready": 0, "total": 2}}
    assert conditions(rsp) == [
        ("ReplicasScheduled", "False", "Scheduling", ""),
        ("ReplicasReady", "False", "ModelStarting", "0 of 2 ready"),
        ("Progressing", "True", "RolloutInProgress", "2 of 2 replicas updated, 0 ready"),
    ]
    # New replicas wait for Ready from the function's clock on.
    assert first["metadata"]["annotations"] == {"modelplane.ai/revision-since": NOW_TEXT}
    assert results(rsp) == [("NORMAL", "Scheduled 2 replicas across 1 clusters: us-east-1")]


def test_ready_replicas_get_endpoints_and_flags(stubs: Stubs) -> None:
    observed = _observed_replicas(2, ready=True)
    rsp = _reconcile(stubs, deployment(), WORLD, observed=observed)
    objects = desired(rsp)
    assert sorted(objects) == sorted(
        [*_and_usages(*observed), "endpoint-us-east-1-0", "endpoint-us-east-1-1"]
    )
    endpoint = objects["endpoint-us-east-1-0"]
    name = replica_name("qwen3-8b", "us-east-1", 0)
    assert endpoint["spec"] == {
        "origin": "http://203.0.113.10",
        "api": {"schema": "OpenAI", "prefix": f"/ml-team/{name}/v1"},
        "model": "ml-team/qwen3-8b",
    }
    flags = readiness(rsp)
    assert flags["replica-us-east-1-0"] == "READY_TRUE"
    assert flags["endpoint-us-east-1-0"] == "READY_UNSPECIFIED"  # not observed yet
    assert composite_status(rsp) == {"replicas": {"ready": 2, "total": 2}}
    assert conditions(rsp) == [
        ("ReplicasScheduled", "True", "ReplicasCreated", "Scheduled 2 of 2 replicas"),
        ("ReplicasReady", "True", "AllReplicasReady", "2 of 2 ready"),
        ("Progressing", "True", "RolloutComplete", "2 of 2 replicas updated"),
    ]
    assert results(rsp) == []


def test_observed_ready_endpoint_is_marked(stubs: Stubs) -> None:
    observed: dict[str, Any] = _observed_replicas(1, ready=True)
    once = desired(_reconcile(stubs, deployment(replicas=1), WORLD, observed=observed))
    endpoint = dict(once["endpoint-us-east-1-0"])
    endpoint["status"] = {
        "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]
    }
    observed["endpoint-us-east-1-0"] = endpoint
    rsp = _reconcile(stubs, deployment(replicas=1), WORLD, observed=observed)
    assert readiness(rsp)["endpoint-us-east-1-0"] == "READY_TRUE"


def test_parked_looks_nothing_up_and_is_ready(stubs: Stubs) -> None:
    observed = _observed_replicas(1, ready=True)
    rsp = stubs.v1.RunFunction(request(deployment(replicas=0), observed=observed))
    assert requirements(rsp) == {}
    assert desired(rsp) == {}
    assert composite_ready(rsp) == "READY_TRUE"
    assert conditions(rsp) == [
        ("ReplicasScheduled", "True", "NoReplicasDesired", "0 replicas desired"),
        ("ReplicasReady", "True", "NoReplicasDesired", "0 replicas desired"),
        ("Progressing", "True", "RolloutComplete", "0 replicas desired"),
    ]
    assert results(rsp) == [("NORMAL", "Scaled to zero: removing all replicas")]


def test_a_shortfall_is_worded_and_warned_once_per_change(stubs: Stubs) -> None:
    # A shortfall counted by reason: one node of 8 GPUs takes 8 of 9 replicas.
    xr = deployment(replicas=9)
    rsp = _reconcile(stubs, xr, WORLD)
    text = (
        "Scheduled 8 of 9 replicas; 1 did not fit: 0/1 clusters available: 1 InsufficientCapacity"
    )
    assert conditions(rsp)[0] == ("ReplicasScheduled", "False", "Scheduling", text)
    assert results(rsp) == [
        ("WARNING", text),
        ("NORMAL", "Scheduled 8 replicas across 1 clusters: us-east-1"),
    ]
    # Crossplane wrote the condition onto the composite: the same text raises no new Warning.
    xr["status"]["conditions"].append(
        {"type": "ReplicasScheduled", "status": "False", "reason": "Scheduling", "message": text}
    )
    again = _reconcile(stubs, xr, WORLD)
    assert conditions(again)[0] == ("ReplicasScheduled", "False", "Scheduling", text)
    assert ("WARNING", text) not in results(again)
    # A different shortfall is a change: warned again.
    xr["spec"]["replicas"] = 10
    changed = _reconcile(stubs, xr, WORLD)
    assert ("WARNING", text.replace("8 of 9", "8 of 10").replace("1 did", "2 did")) in results(
        changed
    )


def test_cache_lookup_three_states(stubs: Stubs) -> None:
    xr = deployment(cache="qwen")
    first = direct(request(xr))
    assert requirements(first)["cache"] == {
        "api_version": "modelplane.ai/v1alpha1",
        "kind": "ModelCache",
        "match_name": "qwen",
        "namespace": "ml-team",
    }
    assert conditions(first)[0] == (
        "ModelCacheResolved",
        "False",
        "ModelCacheUnresolved",
        "Waiting for ModelCache qwen",
    )
    absent = stubs.v1.RunFunction(request(xr, required=satisfy(first, WORLD)))
    text = "ModelCache qwen not found; holding replica placement"
    assert conditions(absent)[0] == ("ModelCacheResolved", "False", "ModelCacheNotFound", text)
    assert ("WARNING", text) in results(absent)
    assert desired(absent) == {}
    present = stubs.v1.RunFunction(request(xr, required=satisfy(first, [*WORLD, model_cache()])))
    assert conditions(present)[0] == ("ModelCacheResolved", "True", "ModelCacheResolved", "")
    assert sorted(desired(present)) == _and_usages("replica-us-east-1-0", "replica-us-east-1-1")


def test_no_clusters_at_all(stubs: Stubs) -> None:
    rsp = _reconcile(stubs, deployment(), [inference_class()])
    assert conditions(rsp)[0] == (
        "ReplicasScheduled",
        "False",
        "NoClusters",
        "No InferenceClusters found",
    )
    assert results(rsp) == [("WARNING", "No InferenceClusters found")]
    assert composite_ready(rsp) == "READY_FALSE"


def test_empty_fleet_with_replicas_observed_holds(stubs: Stubs) -> None:
    observed = _observed_replicas(2, ready=False)
    rsp = _reconcile(stubs, deployment(), [], observed=observed)
    assert sorted(desired(rsp)) == _and_usages(*observed)
    assert conditions(rsp)[0] == (
        "ReplicasScheduled",
        "False",
        "ClustersUnresolved",
        "No InferenceClusters found; keeping 2 existing replicas",
    )
    assert ("WARNING", "No InferenceClusters found") in results(rsp)


def test_invalid_selector_holds_with_a_warning(stubs: Stubs) -> None:
    observed = _observed_replicas(1, ready=True)
    rsp = _reconcile(stubs, deployment(selector="device.nope("), WORLD, observed=observed)
    assert sorted(desired(rsp)) == _and_usages(*observed)
    status, reason = conditions(rsp)[0][1:3]
    assert (status, reason) == ("False", "InvalidNodeSelector")
    assert results(rsp)[0][0] == "WARNING"
    assert results(rsp)[0][1].startswith("Invalid nodeSelector CEL expression: ")
    assert composite_ready(rsp) == "READY_FALSE"


def test_v1beta1_answers_the_same(stubs: Stubs) -> None:
    import crossplane.function.proto.v1beta1.run_function_pb2 as fnv1beta1

    req = request(
        deployment(), required=satisfy(stubs.v1.RunFunction(request(deployment())), WORLD)
    )
    beta = stubs.v1beta1.RunFunction(
        fnv1beta1.RunFunctionRequest.FromString(req.SerializeToString())
    )
    assert beta.SerializeToString(deterministic=True) == stubs.v1.RunFunction(
        req
    ).SerializeToString(deterministic=True)


def test_only_our_observed_replicas_are_read_others_come_with_the_cluster() -> None:
    xr = deployment()
    observed = _observed_replicas(1, ready=True)
    inputs = gather_inputs(
        ModelDeployment.model_validate(xr),
        FunctionRequest(
            composite=xr,
            observed=observed,
            # A stray key Crossplane would no longer fetch: not read.
            required={"clusters": [], "classes": [], "all-replicas": [replica(name="x")]},
        ),
    )
    names = [r.metadata.name for r in inputs.observed_replicas]
    assert names == [replica_name("qwen3-8b", "us-east-1", 0)]
    assert inputs.occupancy is PUBLISHED


def _foreign(count: int) -> list[dict[str, Any]]:
    """``count`` one-GPU replicas of deployment llama in namespace team-b on us-east-1."""
    return [
        replica(name=f"llama-{i}", namespace="team-b", index=i, deployment_name="llama")
        for i in range(count)
    ]


def test_request_carries_no_other_replica_and_their_devices_still_count(stubs: Stubs) -> None:
    # 7 of the node's 8 GPUs are held by another deployment. Crossplane fetches
    # only what the requirements ask for (no ModelReplica), and the cluster's published
    # occupancy says the 7 are taken: 1 of 2 replicas fits.
    others = _foreign(7)
    world = [with_occupancy(ready_cluster("us-east-1"), others), inference_class(), *others]
    first = stubs.v1.RunFunction(request(deployment()))
    fetched = satisfy(first, world)
    assert all(o["kind"] != "ModelReplica" for items in fetched.values() for o in items)
    rsp = stubs.v1.RunFunction(request(deployment(), required=fetched))
    assert sorted(desired(rsp)) == _and_usages("replica-us-east-1-0")
    assert conditions(rsp)[0][3] == (
        "Scheduled 1 of 2 replicas; 1 did not fit: 0/1 clusters available: 1 InsufficientCapacity"
    )
    # Published before the others existed: every GPU free, both fit.
    stale = [ready_cluster("us-east-1"), inference_class()]
    assert sorted(desired(_reconcile(stubs, deployment(), stale))) == _and_usages(
        "replica-us-east-1-0", "replica-us-east-1-1"
    )


def test_our_replicas_the_occupancy_does_not_list_yet_are_charged_on_top(stubs: Stubs) -> None:
    # 6 GPUs held by others, published; our replica 0 was created since (not listed). It
    # keeps its GPU and is charged on top: one more fits (8 = 6 + 1 + 1), not two.
    others = _foreign(6)
    world = [with_occupancy(ready_cluster("us-east-1"), others), inference_class(), *others]
    observed = _observed_replicas(1, ready=True)
    rsp = _reconcile(stubs, deployment(replicas=3), world, observed=observed)
    assert sorted(k for k in desired(rsp) if k.startswith("replica-")) == [
        "replica-us-east-1-0",
        "replica-us-east-1-1",
    ]
    # Listed (the cluster function ran since): charged once, the same answer.
    ours = list(observed.values())
    listed = [with_occupancy(ready_cluster("us-east-1"), [*others, *ours]), inference_class()]
    again = _reconcile(stubs, deployment(replicas=3), listed, observed=observed)
    assert sorted(k for k in desired(again) if k.startswith("replica-")) == [
        "replica-us-east-1-0",
        "replica-us-east-1-1",
    ]


def test_a_cluster_without_occupancy_keeps_its_replicas_and_takes_no_new_one(
    stubs: Stubs,
) -> None:
    # The cluster function has not published status.occupancy (not run yet, or an older
    # version): nothing says what others hold there, so nothing new is placed on it.
    cluster = ready_cluster("us-east-1")
    del cluster["status"]["occupancy"]
    world = [cluster, inference_class()]
    observed = _observed_replicas(1, ready=True)
    rsp = _reconcile(stubs, deployment(replicas=2), world, observed=observed)
    assert sorted(k for k in desired(rsp) if k.startswith("replica-")) == ["replica-us-east-1-0"]
    assert conditions(rsp)[0][3] == (
        "Scheduled 1 of 2 replicas; 1 did not fit: 0/1 clusters available: 1 NoPools"
    )


STACKS = [
    # status.stack, the replicas after the call, ReplicasScheduled's message, ReplicasReady's reason
    (
        stack_status("Installing", stack_component("lws", "v0.10.0", "Installing")),
        ["replica-us-east-1-0"],
        "Scheduled 1 of 2 replicas; 1 did not fit: 0/1 clusters available: 1 StackNotReady",
        "StackNotReady",
    ),
    (
        stack_status("RequirementsNotMet", stack_component("lws", "v0.10.0", "Missing")),
        ["replica-us-east-1-0"],
        "Scheduled 1 of 2 replicas; 1 did not fit: 0/1 clusters available: 1 RequirementsNotMet",
        "RequirementsNotMet",
    ),
    (
        stack_status("Ready", stack_component("lws", "v0.10.0", "Ready")),
        ["replica-us-east-1-0", "replica-us-east-1-1"],
        "Scheduled 2 of 2 replicas",
        "ModelStarting",
    ),
]


@pytest.mark.parametrize(
    ("stack", "replicas", "scheduled", "ready_reason"),
    STACKS,
    ids=["Installing", "RequirementsNotMet", "Ready"],
)
def test_a_cluster_whose_stack_is_not_ready_keeps_its_replica_and_takes_no_new_one(
    stubs: Stubs, stack: dict[str, Any], replicas: list[str], scheduled: str, ready_reason: str
) -> None:
    cluster = ready_cluster("us-east-1")
    cluster["status"]["stack"] = stack
    observed = _observed_replicas(1, ready=True)
    rsp = _reconcile(stubs, deployment(replicas=2), [cluster, inference_class()], observed=observed)
    assert sorted(k for k in desired(rsp) if k.startswith("replica-")) == replicas
    assert conditions(rsp)[0][3] == scheduled
    assert conditions(rsp)[1][2] == ready_reason


def test_an_occupancy_that_does_not_fit_the_pools_reads_as_unpublished(stubs: Stubs) -> None:
    # Published for 1 node while the pool now has 2: not read (no new replica there).
    cluster = ready_cluster("us-east-1", nodes=2)
    cluster["status"]["occupancy"] = {
        "replicas": [],
        "pools": [{"name": "h100", "nodes": [{"count": 1, "free": {"gpu": 0}}]}],
    }
    rsp = _reconcile(stubs, deployment(replicas=1), [cluster, inference_class()])
    assert desired(rsp) == {}
    assert conditions(rsp)[0][3].endswith("0/1 clusters available: 1 NoPools")
    cluster["status"]["occupancy"]["pools"][0]["nodes"].append({"count": 1, "free": {"gpu": 8}})
    fits = _reconcile(stubs, deployment(replicas=1), [cluster, inference_class()])
    # Node 1 is full, node 2 free: the replica lands (first fit skips the full node).
    assert sorted(desired(fits)) == _and_usages("replica-us-east-1-0")


def test_same_request_same_answer_with_remembered_inputs(stubs: Stubs) -> None:
    # Validated inputs are reused by digest between calls: nothing may leak between them.
    observed = _observed_replicas(2, ready=True)
    first = stubs.v1.RunFunction(request(deployment(), observed=observed))
    req = request(deployment(), observed=observed, required=satisfy(first, WORLD))
    answers = {stubs.v1.RunFunction(req).SerializeToString(deterministic=True) for _ in range(3)}
    assert len(answers) == 1
    other = request(deployment(replicas=1), observed=observed, required=satisfy(first, WORLD))
    assert composite_status(stubs.v1.RunFunction(other)) == {"replicas": {"ready": 1, "total": 1}}
    assert len({stubs.v1.RunFunction(req).SerializeToString(deterministic=True), *answers}) == 1


def _replica_usage(name: str, cluster: str = "us-east-1") -> dict[str, Any]:
    """The Usage keeping ``cluster`` while ml-team's replica ``name`` is on it (no labels)."""
    return {
        "apiVersion": "protection.crossplane.io/v1beta1",
        "kind": "Usage",
        "metadata": {"name": name, "namespace": "ml-team"},
        "spec": {
            "of": {
                "apiVersion": "modelplane.ai/v1alpha1",
                "kind": "InferenceCluster",
                "resourceRef": {"name": cluster, "namespace": ""},
            },
            "by": {
                "apiVersion": "modelplane.ai/v1alpha1",
                "kind": "ModelReplica",
                "resourceRef": {"name": name},
            },
        },
    }


def test_each_replica_comes_with_the_usage_that_keeps_its_cluster(stubs: Stubs) -> None:
    # docs/reconcile.md, "Deletion protection": one Usage per ModelReplica, beside it, so the
    # API server refuses to delete the InferenceCluster while the replica is pinned there.
    rsp = _reconcile(stubs, deployment(replicas=1), WORLD)
    objects = desired(rsp)
    replica_obj, usage = objects["replica-us-east-1-0"], objects["usage-us-east-1-0"]
    name = replica_obj["metadata"]["name"]
    expected = _replica_usage(name)
    # Crossplane's refusal names the Usage: it names the replica.
    expected["metadata"]["labels"] = {
        "modelplane.ai/deployment": "qwen3-8b",
        "modelplane.ai/deployment-namespace": "ml-team",
        "modelplane.ai/cluster": "us-east-1",
        "modelplane.ai/replica-index": "0",
    }
    expected["spec"]["replayDeletion"] = True
    assert usage == expected
    # Unmarked until it exists, then ready: its own Ready is not waited for.
    assert readiness(rsp)["usage-us-east-1-0"] == "READY_UNSPECIFIED"
    seen = {
        "replica-us-east-1-0": replica(name=name, index=0, ready=True),
        "usage-us-east-1-0": {**usage, "status": {}},  # no conditions yet
    }
    again = _reconcile(stubs, deployment(replicas=1), WORLD, observed=seen)
    assert readiness(again)["usage-us-east-1-0"] == "READY_TRUE"
    assert desired(again)["usage-us-east-1-0"] == usage


def test_scaling_down_removes_the_replica_and_its_usage_in_one_answer(stubs: Stubs) -> None:
    observed: dict[str, Any] = _observed_replicas(2, ready=False)
    for key, obj in list(observed.items()):
        name = obj["metadata"]["name"]
        observed[key.replace("replica-", "usage-", 1)] = _replica_usage(name)
    rsp = _reconcile(stubs, deployment(replicas=1), WORLD, observed=observed)
    # Not Ready, so nothing drains: replica 1 goes, and its Usage with it.
    assert sorted(desired(rsp)) == _and_usages("replica-us-east-1-0")


def test_a_malformed_input_keeps_every_usage(stubs: Stubs) -> None:
    # The held state re-emits every observed Usage: dropping one would let its cluster go.
    observed: dict[str, Any] = _observed_replicas(1, ready=True)
    once = desired(_reconcile(stubs, deployment(replicas=1), WORLD, observed=observed))
    observed["usage-us-east-1-0"] = once["usage-us-east-1-0"]
    broken = ready_cluster("us-east-1")
    broken["spec"]["nodePools"] = "not a list"
    rsp = _reconcile(stubs, deployment(replicas=1), [broken, inference_class()], observed=observed)
    (severity, message), *_ = results(rsp)
    assert severity == "WARNING" and message.endswith("; keeping 1 existing replicas")
    assert desired(rsp)["usage-us-east-1-0"] == once["usage-us-east-1-0"]
