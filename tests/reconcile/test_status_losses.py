"""ReplicasReady says every loss: which replicas, which cluster, what happens next.

One status table through a full local reconcile (render): two Ready replicas, one per
cluster, then us-east-1 changes. Counting only what was kept, the kept cases would read
``AllReplicasReady``
and a drain without room ``1 of 1 ready``.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.runtime.local.render import render
from modelplane.runtime.wire import deployment_status_wire
from tests.builders import stack_component, stack_status
from tests.reconcile.fleet import cluster, deployment, fleet, observed

WEST = cluster("us-west-2", gateway="203.0.113.20")
WEST_FULL = cluster("us-west-2", gateway="203.0.113.20", gpus=1)  # room for its own replica only
DRAIN = [{"key": "maintenance", "value": "kernel", "effect": "NoExecute"}]
EAST = "qwen3-8b-e7f0a"  # the replica on us-east-1
NEXT = "removed, not re-placed (ReplicasScheduled says why)"
# A Ready replica that must move (not a gone cluster) serves until it is replaced.
SERVING = "kept serving until its replacement is Ready"
NO_FIT = "kept serving, no replacement fits yet (ReplicasScheduled says why)"


INSTALLING = stack_status("Installing", stack_component("lws", "v0.10.0", "Installing"))
NOT_MET = stack_status("RequirementsNotMet", stack_component("lws", "v0.10.0", "Missing"))


def _renamed_pool() -> dict[str, Any]:
    east = cluster("us-east-1")
    east["status"]["gpuPools"][0]["name"] = "h200"
    return east


CASES: list[tuple[str, list[dict[str, Any]], str, str, list[str]]] = [
    # case, clusters, reason, message after "<ready> of 2 ready; ", endpoints
    (
        "NotReady: kept, still routed",
        [cluster("us-east-1", ready=False), WEST],
        "ClusterNotReady",
        f"2 of 2 ready; cluster us-east-1 is NotReady: replica {EAST} kept",
        [EAST, "qwen3-8b-13bc2"],
    ),
    (
        "stack installing: kept, still routed",
        [cluster("us-east-1", stack_status=INSTALLING), WEST],
        "StackNotReady",
        f"2 of 2 ready; cluster us-east-1 has its serving stack not ready (Installing): "
        f"replica {EAST} kept",
        [EAST, "qwen3-8b-13bc2"],
    ),
    (
        "requirements not met, NotReady and no gateway: kept, withdrawn from routing",
        [cluster("us-east-1", ready=False, gateway=None, stack_status=NOT_MET), WEST],
        "RequirementsNotMet",
        "2 of 2 ready; cluster us-east-1 does not meet the serving stack's requirements "
        f"(RequirementsNotMet): replica {EAST} kept, withdrawn from routing (no gateway)",
        ["qwen3-8b-13bc2"],
    ),
    (
        "no gateway: kept, withdrawn from routing",
        [cluster("us-east-1", gateway=None), WEST],
        "NoGateway",
        f"2 of 2 ready; cluster us-east-1 has no gateway address: replica {EAST} kept, "
        "withdrawn from routing",
        ["qwen3-8b-13bc2"],
    ),
    (
        "draining: serves until its replacement is Ready",
        [cluster("us-east-1", taints=DRAIN), WEST],
        "ClusterDraining",
        f"2 of 2 ready; cluster us-east-1 is draining (maintenance=kernel:NoExecute): "
        f"replica {EAST} {SERVING}",
        [EAST, "qwen3-8b-13bc2"],
    ),
    (
        "draining, no room elsewhere: kept serving",
        [cluster("us-east-1", taints=DRAIN), WEST_FULL],
        "ClusterDraining",
        f"2 of 2 ready; cluster us-east-1 is draining (maintenance=kernel:NoExecute): "
        f"replica {EAST} {NO_FIT}",
        [EAST, "qwen3-8b-13bc2"],
    ),
    (
        "pools lost: serves until its replacement is Ready",
        [_renamed_pool(), WEST],
        "PoolsLost",
        f"2 of 2 ready; cluster us-east-1 no longer publishes pool h100: replica {EAST} {SERVING}",
        [EAST, "qwen3-8b-13bc2"],
    ),
    (
        "gone: re-placed",
        [WEST, cluster("us-central-1", gateway="203.0.113.30")],
        "ClusterGone",
        f"1 of 2 ready; cluster us-east-1 is gone: replica {EAST} removed, re-placed",
        ["qwen3-8b-13bc2"],
    ),
    (
        "gone, no room elsewhere",
        [WEST_FULL],
        "ClusterGone",
        f"1 of 2 ready; cluster us-east-1 is gone: replica {EAST} {NEXT}",
        ["qwen3-8b-13bc2"],
    ),
]


@pytest.mark.parametrize(
    ("clusters", "reason", "message", "endpoints"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_replicas_ready_says_the_loss(
    clusters: list[dict[str, Any]], reason: str, message: str, endpoints: list[str]
) -> None:
    first = render(fleet([deployment()], [cluster("us-east-1"), WEST]))[0]
    fed = [observed(x, True) for x in first.replicas]
    (r,) = render(fleet([deployment()], clusters, fed))
    ready = next(
        c
        for c in deployment_status_wire(r.result.status)["conditions"]
        if c["type"] == "ReplicasReady"
    )
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", reason, message)
    assert [e["metadata"]["name"] for e in r.endpoints] == endpoints


def test_a_shortfall_in_replicas_ready_has_its_reason() -> None:
    # Nothing lost, but only one of three fits: counted against spec.replicas, with the reason.
    (r,) = render(fleet([deployment(3)], [cluster("us-east-1", gpus=1)]))
    ready = next(
        c
        for c in deployment_status_wire(r.result.status)["conditions"]
        if c["type"] == "ReplicasReady"
    )
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "ReplicasNotScheduled",
        "0 of 3 ready; 2 not scheduled: 0/1 clusters available: 1 InsufficientCapacity",
    )


WEST_ID = "qwen3-8b-13bc2"  # the replica on us-west-2, Ready and routed throughout


def _notice(cluster_ready: bool, gateway: bool) -> tuple[str, str] | None:
    """The (reason, notice) us-east-1's state gives its replica, whether it is Ready or not."""
    if cluster_ready and gateway:
        return None
    if not cluster_ready:
        fate = "kept" if gateway else "kept, withdrawn from routing (no gateway)"
        return "ClusterNotReady", f"cluster us-east-1 is NotReady: replica {EAST} {fate}"
    return (
        "NoGateway",
        f"cluster us-east-1 has no gateway address: replica {EAST} kept, withdrawn from routing",
    )


@pytest.mark.parametrize("replica_ready", [True, False], ids=["replica Ready", "replica starting"])
@pytest.mark.parametrize("gateway", [True, False], ids=["gateway", "no gateway"])
@pytest.mark.parametrize("cluster_ready", [True, False], ids=["cluster Ready", "cluster NotReady"])
def test_a_kept_replica_says_whether_it_is_still_routed(
    cluster_ready: bool, gateway: bool, replica_ready: bool
) -> None:
    # Every combination: the endpoint exists exactly when the replica is Ready and its cluster
    # has a gateway, and a notice that leaves routing unsaid means the replica keeps its route.
    first = render(fleet([deployment()], [cluster("us-east-1"), WEST]))[0]
    fed = [observed(x, replica_ready or x["metadata"]["name"] == WEST_ID) for x in first.replicas]
    east = cluster("us-east-1", ready=cluster_ready, gateway="203.0.113.10" if gateway else None)
    (r,) = render(fleet([deployment()], [east, WEST], fed))
    ready = next(
        c
        for c in deployment_status_wire(r.result.status)["conditions"]
        if c["type"] == "ReplicasReady"
    )
    counted = f"{2 if replica_ready else 1} of 2 ready"
    notice = _notice(cluster_ready, gateway)
    if notice is not None:
        expected = ("False", notice[0], f"{counted}; {notice[1]}")
    elif replica_ready:
        expected = ("True", "AllReplicasReady", counted)
    else:
        expected = ("False", "ModelStarting", counted)
    assert (ready["status"], ready["reason"], ready["message"]) == expected
    routed = replica_ready and gateway
    assert [e["metadata"]["name"] for e in r.endpoints] == ([EAST] if routed else []) + [WEST_ID]
    assert ("withdrawn from routing" in ready["message"]) is (not gateway)
