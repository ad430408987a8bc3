"""ReplicasReady's loss notices through gRPC (the render table is in
tests/reconcile/test_status_losses.py): the served function says the same."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelplane.naming import replica_name

from .conftest import Stubs
from .helpers import (
    conditions,
    deployment,
    desired,
    inference_class,
    ready_cluster,
    replica,
    request,
    satisfy,
)

EAST = replica_name("qwen3-8b", "us-east-1", 0)
WEST = replica_name("qwen3-8b", "us-west-2", 0)
NEXT = "removed, not re-placed (ReplicasScheduled says why)"
# A Ready replica that must move (not a gone cluster) serves until it is replaced.
SERVING = "kept serving until its replacement is Ready"
NO_FIT = "kept serving, no replacement fits yet (ReplicasScheduled says why)"


def _east(change: str) -> dict[str, Any]:
    east = ready_cluster("us-east-1")
    status = east["status"]
    if change == "not-ready":
        status["conditions"][0].update(status="False", reason="Unavailable")
    elif change == "no-gateway":
        del status["gateway"]
    elif change == "draining":
        east["spec"]["taints"] = [{"key": "maintenance", "effect": "NoExecute"}]
    elif change == "pools-lost":
        status["gpuPools"][0]["name"] = "h200"
    return east


def _west(nodes: int = 1) -> dict[str, Any]:
    west = ready_cluster("us-west-2", gateway="203.0.113.20", nodes=nodes)
    west["status"]["gpuPools"][0]["devices"][0]["count"] = 1  # room for one replica
    return west


CASES = [
    (
        "not-ready",
        "ClusterNotReady",
        f"2 of 2 ready; cluster us-east-1 is NotReady: replica {EAST} kept",
        True,
    ),
    (
        "no-gateway",
        "NoGateway",
        f"2 of 2 ready; cluster us-east-1 has no gateway address: replica {EAST} kept, "
        "withdrawn from routing",
        False,
    ),
    (
        "draining",
        "ClusterDraining",
        f"2 of 2 ready; cluster us-east-1 is draining (maintenance:NoExecute): replica {EAST} "
        f"{NO_FIT}",
        True,
    ),
    (
        "pools-lost",
        "PoolsLost",
        f"2 of 2 ready; cluster us-east-1 no longer publishes pool h100: replica {EAST} {SERVING}",
        True,
    ),
    (
        "gone",
        "ClusterGone",
        f"1 of 2 ready; cluster us-east-1 is gone: replica {EAST} {NEXT}",
        False,
    ),
]


@pytest.mark.parametrize(("change", "reason", "message", "east_routed"), CASES)
def test_the_function_says_the_loss(
    stubs: Stubs, change: str, reason: str, message: str, east_routed: bool
) -> None:
    observed = {
        "replica-us-east-1-0": replica(name=EAST, cluster="us-east-1", index=0, ready=True),
        "replica-us-west-2-0": replica(name=WEST, cluster="us-west-2", index=0, ready=True),
    }
    clusters = [_west()] if change == "gone" else [_east(change), _west()]
    world = [*clusters, inference_class()]
    xr = deployment()
    first = stubs.v1.RunFunction(request(xr, observed=copy.deepcopy(observed)))
    rsp = stubs.v1.RunFunction(
        request(xr, observed=copy.deepcopy(observed), required=satisfy(first, world))
    )
    ready = next(c for c in conditions(rsp) if c[0] == "ReplicasReady")
    assert ready == ("ReplicasReady", "False", reason, message)
    assert ("endpoint-us-east-1-0" in desired(rsp)) is east_routed
