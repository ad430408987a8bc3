"""The same rollout over gRPC as through render feed-back.

The worked example of docs/reconcile.md ("Rollouts and moves"): three Ready replicas, an
image bump, and the pool of one replica's cluster renamed at the same time. At every
reconcile the deployment function, given what render feed-back observes (the replicas and
endpoints the previous reconcile asked for, some of them loaded), asks for exactly the
replicas and endpoints render asks for, and says the same conditions; the sequence ends with
every replica updated and routed. Each reconcile comes a drain period after the last, so a
withdrawn endpoint drains in one reconcile (docs/reconcile.md, "Drain before delete").
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from modelplane.runtime.crossplane import deployment_fn
from modelplane.runtime.local.render import RenderedDeployment
from modelplane.scheduling.rollout import DRAIN_PERIOD
from tests.reconcile.feedback import DRAINING, World, said
from tests.reconcile.fleet import cluster, deployment

from .conftest import NOW, Stubs
from .helpers import conditions, desired, published_by_function, request, satisfy


def _key(obj: dict[str, Any]) -> str:
    labels = obj["metadata"]["labels"]
    kind = {"ModelReplica": "replica", "Usage": "usage"}.get(obj["kind"], "endpoint")
    return f"{kind}-{labels['modelplane.ai/cluster']}-{labels['modelplane.ai/replica-index']}"


def _function(stubs: Stubs, world: World) -> Any:
    """One reconcile of the deployment function against what ``world`` observes."""
    xr = copy.deepcopy(world.deployments[0])
    observed = {_key(o): o for o in [*world.replicas, *world.endpoints]}
    # Each cluster as its InferenceCluster function publishes it, occupancy included.
    published = [
        published_by_function(stubs.v1.RunFunction, c, world.replicas) for c in world.clusters
    ]
    fetched = [*published, *world.replicas]
    first = stubs.v1.RunFunction(request(xr, observed=observed))
    return stubs.v1.RunFunction(request(xr, observed=observed, required=satisfy(first, fetched)))


def _expected(r: RenderedDeployment) -> dict[str, dict[str, Any]]:
    return {_key(o): o for o in [*r.replicas, *r.usages, *r.endpoints]}


def _routed(r: RenderedDeployment) -> int:
    """Endpoints a route may pick: a draining one is withdrawn."""
    return sum(1 for e in r.endpoints if DRAINING not in (e["metadata"].get("annotations") or {}))


def _ticking(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The function reads the world's clock; each reconcile comes a drain period later."""
    monkeypatch.setattr(deployment_fn, "clock", lambda: world.now)


def _tick(world: World) -> None:
    assert world.now is not None
    world.now += DRAIN_PERIOD


def _bumped() -> dict[str, Any]:
    d = deployment(3)
    container = d["spec"]["template"]["spec"]["engines"][0]["members"][0]["template"]["spec"][
        "containers"
    ][0]
    container["image"] = "vllm/vllm-openai:v0.24.0"
    return d


def test_the_worked_example_is_the_same_sequence_over_grpc(
    stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    clusters = [
        cluster("us-east-1"),
        cluster("us-west-2", gateway="203.0.113.20"),
        cluster("eu-west-1", gateway="203.0.113.30"),
    ]
    world = World([deployment(3)], clusters, NOW, compose=False)
    world.settle()
    world.deployments = [_bumped()]
    world.clusters[0]["status"]["gpuPools"][0]["name"] = "h200"
    _ticking(world, monkeypatch)
    reasons, routed = [], []
    for i in range(6):
        _tick(world)
        rsp = _function(stubs, world)  # before the world applies this reconcile
        r = world.step(load=True)  # every new or updated replica is Ready one reconcile later
        assert desired(rsp) == _expected(r), f"reconcile {i + 1}"
        rendered = [
            (c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
            for c in r.deployment["status"]["conditions"]
        ]
        assert conditions(rsp) == rendered, f"reconcile {i + 1}"
        reasons.append(said(r, "Progressing")[1:])
        routed.append(_routed(r))
    # The worked example's table, row by row (docs/reconcile.md, "Rollouts and moves").
    assert reasons == [
        (
            "Moving",
            "1 of 3 replicas updated; 1 replica moving within us-east-1 (pool h100 to h200)",
        ),
        ("Moving", "1 of 3 replicas updated; 1 replica moving from us-east-1 (replaced, leaving)"),
        ("RolloutInProgress", "1 of 3 replicas updated, 3 ready"),
        ("RolloutInProgress", "2 of 3 replicas updated, 2 ready"),
        ("RolloutInProgress", "3 of 3 replicas updated, 2 ready"),
        ("RolloutComplete", "3 of 3 replicas updated"),
    ]
    assert routed == [3, 3, 3, 2, 2, 3]  # never below desired - maxUnavailable
    assert {x["spec"]["engines"][0]["members"][0]["nodePoolName"] for x in world.replicas} == {
        "h100",
        "h200",
    }


def _typo() -> dict[str, Any]:
    return deployment(2, clusterSelector={"matchLabels": {"region": "us-esat"}})


def _single_bump() -> dict[str, Any]:
    d = _bumped()
    d["spec"]["replicas"] = 1
    return d


# (name, replicas before, the edit's deployment, reconciles): each through both runtimes.
SEQUENCES = [
    ("selector typo keeps what runs", 2, _typo, 3),
    ("single replica updated by surge", 1, _single_bump, 4),
    ("scale-down withdraws first", 3, lambda: deployment(2), 3),
]


@pytest.mark.parametrize(
    ("before", "edit", "steps"), [s[1:] for s in SEQUENCES], ids=[s[0] for s in SEQUENCES]
)
def test_the_same_sequence_over_grpc(
    stubs: Stubs,
    monkeypatch: pytest.MonkeyPatch,
    before: int,
    edit: Callable[[], dict[str, Any]],
    steps: int,
) -> None:
    clusters = [cluster("us-east-1"), cluster("us-west-2", gateway="203.0.113.20")]
    world = World([deployment(before)], clusters, NOW, compose=False)
    world.settle()
    world.deployments = [edit()]
    _ticking(world, monkeypatch)
    for i in range(steps):
        _tick(world)
        rsp = _function(stubs, world)
        r = world.step(load=True)
        assert desired(rsp) == _expected(r), f"reconcile {i + 1}"
        rendered = [
            (c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
            for c in r.deployment["status"]["conditions"]
        ]
        assert conditions(rsp) == rendered, f"reconcile {i + 1}"
        assert _routed(r), "never down to nothing"
