"""docs/reconcile.md's status tables, case by case, through one full local reconcile (render)."""

from __future__ import annotations

import re
from typing import Any

from modelplane.runtime.local.render import RenderedDeployment, render
from modelplane.runtime.wire import deployment_status_wire, replicas_wire
from tests.reconcile.fleet import cache, cluster, deployment, fleet, observed, observed_endpoint


def conditions(r: RenderedDeployment) -> list[tuple[str, str, str, str]]:
    return [
        (c["type"], c["status"], c["reason"], c["message"])
        for c in deployment_status_wire(r.result.status)["conditions"]
    ]


def only(rendered: list[RenderedDeployment]) -> RenderedDeployment:
    assert len(rendered) == 1
    return rendered[0]


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objects]


TWO = [cluster("us-east-1"), cluster("us-west-2", gateway="203.0.113.20")]


def test_fresh_placement_is_scheduling_and_starting() -> None:
    r = only(render(fleet([deployment()], TWO)))
    assert names(r.replicas) == ["qwen3-8b-e7f0a", "qwen3-8b-13bc2"]
    assert replicas_wire(r.result.status) == {"ready": 0, "total": 2}
    assert conditions(r) == [
        ("ReplicasScheduled", "False", "Scheduling", ""),
        ("ReplicasReady", "False", "ModelStarting", "0 of 2 ready"),
        ("Progressing", "True", "RolloutInProgress", "2 of 2 replicas updated, 0 ready"),
    ]
    assert r.endpoints == []
    assert [e.message for e in r.result.events] == [
        "Scheduled 2 replicas across 2 clusters: us-east-1, us-west-2"
    ]
    # Seven remote objects per replica (the picker's ServiceAccount, RBAC and default config
    # are the cluster's; its disruption budget is the replica's).
    assert len(r.remote) == 14
    assert {c for c, _ in r.remote} == {"us-east-1", "us-west-2"}


def test_ready_replica_gets_an_endpoint_and_a_not_ready_one_does_not() -> None:
    first = only(render(fleet([deployment()], TWO)))
    fed = [observed(first.replicas[0], True), observed(first.replicas[1], False)]
    r = only(render(fleet([deployment()], TWO, fed)))
    assert names(r.replicas) == names(first.replicas)  # stable
    assert all(p.retained for p in r.result.schedule.replicas)
    assert conditions(r) == [
        ("ReplicasScheduled", "True", "ReplicasCreated", "Scheduled 2 of 2 replicas"),
        ("ReplicasReady", "False", "ModelStarting", "1 of 2 ready"),
        ("Progressing", "True", "RolloutInProgress", "2 of 2 replicas updated, 1 ready"),
    ]
    assert len(r.endpoints) == 1
    endpoint = r.endpoints[0]
    assert endpoint["metadata"] == {
        "name": "qwen3-8b-e7f0a",
        "namespace": "ml-team",
        # The replica's labels but where its objects are on the cluster (docs/api.md).
        "labels": {
            k: v
            for k, v in first.replicas[0]["metadata"]["labels"].items()
            if k != "modelplane.ai/remote-namespace"
        },
    }
    assert endpoint["spec"] == {
        "origin": "http://203.0.113.10",
        "api": {"schema": "OpenAI", "prefix": "/ml-team/qwen3-8b-e7f0a/v1"},
        "model": "ml-team/qwen3-8b",
    }
    assert r.result.events == []


def test_all_ready_reads_all_replicas_ready() -> None:
    first = only(render(fleet([deployment()], TWO)))
    fed = [observed(x, True) for x in first.replicas]
    r = only(render(fleet([deployment()], TWO, fed)))
    assert conditions(r)[1] == ("ReplicasReady", "True", "AllReplicasReady", "2 of 2 ready")
    assert names(r.endpoints) == ["qwen3-8b-e7f0a", "qwen3-8b-13bc2"]
    assert r.result.replicas[0].ready is True


def test_ready_replica_on_a_cluster_without_gateway_gets_no_endpoint() -> None:
    first = only(render(fleet([deployment()], TWO)))
    fed = [observed(x, True) for x in first.replicas]
    clusters = [cluster("us-east-1", gateway=None), cluster("us-west-2", gateway="203.0.113.20")]
    r = only(render(fleet([deployment()], clusters, fed)))
    assert names(r.replicas) == names(first.replicas)  # retained: the gateway gates new ones only
    assert names(r.endpoints) == ["qwen3-8b-13bc2"]


def test_offline_pinned_cluster_keeps_its_replica() -> None:
    first = only(render(fleet([deployment()], TWO)))
    fed = [observed(x, True) for x in first.replicas]
    clusters = [cluster("us-east-1", ready=False), TWO[1]]
    r = only(render(fleet([deployment()], clusters, fed)))
    assert names(r.replicas) == names(first.replicas)
    # Kept, but said: a NotReady cluster no longer reads AllReplicasReady.
    assert conditions(r)[1] == (
        "ReplicasReady",
        "False",
        "ClusterNotReady",
        "2 of 2 ready; cluster us-east-1 is NotReady: replica qwen3-8b-e7f0a kept",
    )


def test_deleted_cluster_replica_is_replaced_elsewhere() -> None:
    first = only(render(fleet([deployment()], TWO)))
    fed = [observed(x, True) for x in first.replicas]
    clusters = [TWO[1], cluster("us-central-1", gateway="203.0.113.30")]
    r = only(render(fleet([deployment()], clusters, fed)))
    placed = {(p.cluster, p.index, p.retained) for p in r.result.schedule.replicas}
    assert placed == {("us-central-1", 0, False), ("us-west-2", 0, True)}
    assert conditions(r)[1] == (
        "ReplicasReady",
        "False",
        "ClusterGone",
        "1 of 2 ready; cluster us-east-1 is gone: replica qwen3-8b-e7f0a removed, re-placed",
    )
    assert names(r.endpoints) == ["qwen3-8b-13bc2"]


def test_empty_cluster_list_holds_every_replica_and_endpoint() -> None:
    first = only(render(fleet([deployment()], TWO)))
    fed = [observed(x, True) for x in first.replicas]
    second = only(render(fleet([deployment()], TWO, fed)))
    endpoints = [observed_endpoint(e) for e in second.endpoints]
    r = only(render(fleet([deployment()], [], fed, endpoints)))
    assert names(r.replicas) == names(first.replicas)
    assert conditions(r)[0] == (
        "ReplicasScheduled",
        "False",
        "ClustersUnresolved",
        "No InferenceClusters found; keeping 2 existing replicas",
    )
    assert names(r.endpoints) == names(second.endpoints)
    assert [e.message for e in r.result.events] == ["No InferenceClusters found"]


def test_scale_up_and_down_keep_the_survivors() -> None:
    first = only(render(fleet([deployment()], TWO)))
    fed = [observed(x, True) for x in first.replicas]
    up = only(render(fleet([deployment(replicas=3)], TWO, fed)))
    assert names(up.replicas)[:1] == ["qwen3-8b-e7f0a"]
    assert sorted(names(up.replicas)) == sorted(
        ["qwen3-8b-e7f0a", "qwen3-8b-7b182", "qwen3-8b-13bc2"]
    )
    assert conditions(up)[0] == (
        "ReplicasScheduled",
        "True",
        "ReplicasCreated",
        "Scheduled 3 of 3 replicas",
    )
    down = only(render(fleet([deployment(replicas=1)], TWO, fed)))
    # Equal load: the later cluster name loses (docs/scheduling.md, "What it does, in order").
    assert names(down.replicas) == ["qwen3-8b-e7f0a"]
    assert names(down.endpoints) == ["qwen3-8b-e7f0a"]


def test_zero_parks_the_deployment() -> None:
    first = only(render(fleet([deployment()], TWO)))
    fed = [observed(x, True) for x in first.replicas]
    r = only(render(fleet([deployment(replicas=0)], TWO, fed)))
    assert r.replicas == [] and r.endpoints == [] and r.remote == []
    assert r.deployment["spec"]["replicas"] == 0  # the object and its spec stay
    assert replicas_wire(r.result.status) == {"ready": 0, "total": 0}
    assert conditions(r) == [
        ("ReplicasScheduled", "True", "NoReplicasDesired", "0 replicas desired"),
        ("ReplicasReady", "True", "NoReplicasDesired", "0 replicas desired"),
        ("Progressing", "True", "RolloutComplete", "0 replicas desired"),
    ]
    assert [e.message for e in r.result.events] == ["Scaled to zero: removing all replicas"]
    assert r.result.composite_ready is True


def test_insufficient_capacity() -> None:
    big = deployment()
    big["spec"]["template"]["spec"]["engines"][0]["members"][0]["nodeSelector"]["devices"][0][
        "count"
    ] = 16
    r = only(render(fleet([big], TWO)))
    assert r.replicas == []
    assert conditions(r) == [
        (
            "ReplicasScheduled",
            "False",
            "InsufficientCapacity",
            # 16 GPUs is more than a node of either pool has: a device reason.
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
    assert [(e.severity, e.message) for e in r.result.events] == [
        ("Warning", "0 of 2 replicas scheduled: 0/2 clusters available: 2 NoMatchingPool")
    ]
    assert r.result.composite_ready is False


def test_no_clusters_at_all() -> None:
    r = only(render(fleet([deployment()], [])))
    assert conditions(r)[0] == (
        "ReplicasScheduled",
        "False",
        "NoClusters",
        "No InferenceClusters found",
    )


def test_absent_cache_holds_placement_and_present_cache_narrows_it() -> None:
    ref = {"modelCacheRef": {"name": "qwen"}}
    absent = only(render(fleet([deployment(**ref)], TWO)))
    assert absent.replicas == []
    assert conditions(absent)[0] == (
        "ModelCacheResolved",
        "False",
        "ModelCacheNotFound",
        "ModelCache qwen not found; holding replica placement",
    )
    assert [e.message for e in absent.result.events][
        0
    ] == "ModelCache qwen not found; holding replica placement"
    clusters = [cluster("us-east-1", labels={"cache": "yes"}), TWO[1]]
    present = only(
        render(fleet([deployment(**ref)], clusters, caches=[cache(match_labels={"cache": "yes"})]))
    )
    assert conditions(present)[0] == ("ModelCacheResolved", "True", "ModelCacheResolved", "")
    assert {p.cluster for p in present.result.schedule.replicas} == {"us-east-1"}
    # The cache's PVC is mounted in every pod of the replica.
    workload = present.remote[0][1]["spec"]["forProvider"]["manifest"]
    volumes = workload["spec"]["template"]["spec"]["volumes"]
    assert {
        "name": "model-cache",
        "persistentVolumeClaim": {"claimName": "modelcache-ml-team-qwen-17db2"},
    } in volumes


def test_absent_cache_keeps_existing_replicas() -> None:
    ref = {"modelCacheRef": {"name": "qwen"}}
    first = only(render(fleet([deployment(**ref)], TWO, caches=[cache()])))
    fed = [observed(x, True) for x in first.replicas]
    r = only(render(fleet([deployment(**ref)], TWO, fed)))
    assert names(r.replicas) == names(first.replicas)


def test_labels_on_replicas_and_endpoints_managed_labels_win() -> None:
    labelled = deployment()
    labelled["spec"]["template"]["metadata"] = {"labels": {"tier": "prod", "team": "ml"}}
    first = only(render(fleet([labelled], TWO)))
    labels = first.replicas[0]["metadata"]["labels"]
    assert labels == {
        "tier": "prod",
        "team": "ml",
        "modelplane.ai/deployment": "qwen3-8b",
        "modelplane.ai/deployment-namespace": "ml-team",
        "modelplane.ai/cluster": "us-east-1",
        "modelplane.ai/replica-index": "0",
        # The template revision it runs: 10 hex digits of SHA-256.
        "modelplane.ai/template-hash": labels["modelplane.ai/template-hash"],
        # Where its objects are on the cluster: the deployment's team namespace.
        "modelplane.ai/remote-namespace": "ml-team",
    }
    assert re.fullmatch("[0-9a-f]{10}", labels["modelplane.ai/template-hash"])
    fed = [observed(x, True) for x in first.replicas]
    # An observed replica carrying a forged managed label gets the real one back.
    fed[0]["metadata"]["labels"]["modelplane.ai/cluster"] = "elsewhere"
    r = only(render(fleet([labelled], TWO, fed)))
    # The endpoint carries every replica label but where the replica's objects are on its
    # cluster (docs/api.md): a ModelService never selects on that layout.
    expected = {k: v for k, v in labels.items() if k != "modelplane.ai/remote-namespace"}
    assert r.endpoints[0]["metadata"]["labels"] == expected
