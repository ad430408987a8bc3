"""Every replica's cluster is protected exactly while the replica exists (docs/reconcile.md,
"Deletion protection"), through render feed-back: the Usage comes and goes in the same
desired state as its replica, through a move (make-before-break) and a scale-down.
"""

from __future__ import annotations

from typing import Any

from modelplane.runtime.local.render import RenderedDeployment
from tests.reconcile.feedback import World
from tests.reconcile.fleet import cluster, deployment

NO_EXECUTE = [{"key": "maintenance", "value": "kernel", "effect": "NoExecute"}]


def _three() -> list[dict[str, Any]]:
    return [
        cluster("c1"),
        cluster("c2", gateway="203.0.113.20"),
        cluster("c3", gateway="203.0.113.30"),
    ]


def _protected(r: RenderedDeployment) -> dict[str, str]:
    """Replica name -> the cluster its Usage keeps, from the Usages of one desired state."""
    return {
        u["spec"]["by"]["resourceRef"]["name"]: u["spec"]["of"]["resourceRef"]["name"]
        for u in r.usages
    }


def _pinned(r: RenderedDeployment) -> dict[str, str]:
    """Replica name -> its cluster, from the replicas of the same desired state."""
    return {o["metadata"]["name"]: o["spec"]["clusterName"] for o in r.replicas}


def test_a_move_protects_both_clusters_while_both_replicas_exist() -> None:
    world = World([deployment(1)], _three())
    world.settle()
    ((old, c1),) = world.clusters_of().items()
    world.clusters[[c["metadata"]["name"] for c in world.clusters].index(c1)]["spec"]["taints"] = (
        NO_EXECUTE
    )
    seen_both = False
    for step in range(8):
        r = world.step(load=True)
        # Every desired replica comes with its Usage, in the same answer, and nothing else.
        assert _protected(r) == _pinned(r), f"step {step}"
        names = set(_pinned(r))
        if len(names) == 2:
            seen_both = True
            # Make-before-break: the replacement's Usage exists before the old one's goes.
            assert set(_protected(r).values()) == {c1, _pinned(r)[(names - {old}).pop()]}
        if old not in names:
            break
    assert seen_both
    assert old not in _protected(r) and c1 not in _protected(r).values()


def test_a_scale_down_removes_the_replica_and_its_usage_together() -> None:
    world = World([deployment(2)], _three())
    world.settle()
    before = set(world.names())
    world.deployments = [deployment(1)]
    for step in range(6):
        r = world.step(load=True)
        assert _protected(r) == _pinned(r), f"step {step}"
        if len(r.replicas) == 1:
            break
    (kept,) = _pinned(r)
    assert kept in before and set(_protected(r)) == {kept}
