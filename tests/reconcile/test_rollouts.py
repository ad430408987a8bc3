"""Changes without outage, step by step through render feed-back.

Each scenario starts from a settled fleet (every replica Ready and routed), makes one edit a
user would make, and drives ``render`` as the control plane would converge: render, apply,
let some replicas load, render again. What is asserted is what a user sees: which replicas
exist, which are routed, and what the conditions say.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.cli.main import main
from modelplane.runtime.local.render import RenderedDeployment
from tests.builders import seed_deployment
from tests.reconcile.feedback import HASH, World, said
from tests.reconcile.fleet import cluster, deployment

DRAIN = [{"key": "maintenance", "value": "kernel", "effect": "NoExecute"}]
T0 = datetime(2026, 1, 15, 9, 0, 0, tzinfo=UTC)


def three() -> list[dict[str, Any]]:
    return [
        cluster("c1"),
        cluster("c2", gateway="203.0.113.20"),
        cluster("c3", gateway="203.0.113.30"),
    ]


def settled(replicas: int, clusters: list[dict[str, Any]], now: datetime | None = None) -> World:
    world = World([deployment(replicas)], clusters, now)
    world.settle()
    assert len(world.ready()) == replicas and world.routed() == world.ready()
    return world


def bumped(replicas: int, image: str = "vllm/vllm-openai:v0.24.0") -> dict[str, Any]:
    d = deployment(replicas)
    d["spec"]["template"]["spec"]["engines"][0]["members"][0]["template"]["spec"]["containers"][0][
        "image"
    ] = image
    return d


def images(r: RenderedDeployment) -> dict[str, str]:
    return {
        x["metadata"]["name"]: x["spec"]["engines"][0]["members"][0]["template"]["spec"][
            "containers"
        ][0]["image"]
        for x in r.replicas
    }


def test_a_selector_typo_deletes_nothing_and_says_why() -> None:
    world = settled(2, three())
    before, routed = world.names(), world.routed()
    typo = deployment(2, clusterSelector={"matchLabels": {"region": "us-esat"}})
    world.deployments = [typo]
    for _ in range(3):  # however often it reconciles
        r = world.step(True)
        assert world.names() == before and world.routed() == routed
    assert said(r, "ReplicasScheduled") == (
        "False",
        "InsufficientCapacity",
        "0 of 2 replicas scheduled: 0/0 clusters available; "
        "2 running replicas kept until a replacement fits",
    )
    assert said(r, "ReplicasReady")[2] == (
        "2 of 2 ready; 2 not scheduled: 0/0 clusters available; "
        "2 running replicas kept until a replacement fits"
    )
    assert said(r, "Progressing") == (
        "False",
        "RolloutStuck",
        "0 of 2 replicas updated; 2 running replicas cannot move: no replacement fits "
        "(ReplicasScheduled says why); the previous placement keeps serving",
    )
    # Fixing the typo (a label every cluster carries... none here: drop the selector) moves on.
    world.deployments = [deployment(2)]
    r = world.step(True)
    assert said(r, "Progressing")[1] == "RolloutComplete"
    assert world.names() == before


def test_a_renamed_pool_serves_until_the_replacement_is_ready_and_is_withdrawn_first() -> None:
    world = settled(2, [cluster("us-east-1"), cluster("us-west-2", gateway="203.0.113.20")])
    (old,) = [n for n, c in world.clusters_of().items() if c == "us-east-1"]
    world.clusters[0]["status"]["gpuPools"][0]["name"] = "h200"
    r = world.step()  # the replacement is placed, not Ready yet
    (new,) = set(world.names()) - {old, *world.routed()}
    assert world.clusters_of()[new] == "us-east-1"  # the new pool of the same cluster
    assert old in world.routed() and len(world.routed()) == 2
    assert said(r, "Progressing") == (
        "True",
        "Moving",
        "2 of 2 replicas updated; 1 replica moving within us-east-1 (pool h100 to h200)",
    )
    r = world.step()  # still loading: nothing changes
    assert old in world.routed() and new in world.names()
    world.step(load=[new])
    assert new not in world.routed()  # Ready now, routed from the next reconcile on
    r = world.step()  # the replacement is Ready: the old endpoint goes first...
    assert old in world.names() and old not in world.routed() and new in world.routed()
    assert said(r, "Progressing")[2].endswith("1 replica moving from us-east-1 (replaced, leaving)")
    r = world.step()  # ...then the replica
    assert old not in world.names() and len(world.routed()) == 2
    assert said(r, "Progressing") == ("True", "RolloutComplete", "2 of 2 replicas updated")
    assert said(r, "ReplicasReady")[2].endswith(f"replica {old} removed, re-placed")
    r = world.step()  # once it is gone, the notice is too
    assert said(r, "ReplicasReady") == ("True", "AllReplicasReady", "2 of 2 ready")


def test_a_noexecute_drain_of_one_cluster_out_of_three() -> None:
    world = settled(3, three())
    (old,) = [n for n, c in world.clusters_of().items() if c == "c1"]
    world.clusters[0]["spec"]["taints"] = DRAIN
    r = world.step()
    assert len(world.names()) == 4 and len(world.routed()) == 3 and old in world.routed()
    (new,) = set(world.names()) - set(world.routed())
    assert world.clusters_of()[new] in ("c2", "c3")
    assert said(r, "ReplicasReady") == (
        "False",
        "ClusterDraining",
        f"3 of 3 ready; cluster c1 is draining (maintenance=kernel:NoExecute): replica {old} "
        "kept serving until its replacement is Ready",
    )
    routed = []
    for _ in range(4):
        world.step(True)
        routed.append(len(world.routed()))
    assert old not in world.names() and len(world.names()) == 3
    assert min(routed) == 3  # never fewer endpoints than replicas desired


def test_an_image_bump_reaches_three_replicas_one_at_a_time() -> None:
    world = settled(3, three())
    old_rev = set(world.revisions().values())
    world.deployments = [bumped(3)]
    seen: list[int] = []
    for _ in range(3):
        r = world.step()  # nothing loads: the rollout must wait
        updated = [n for n, i in images(r).items() if i.endswith("v0.24.0")]
        seen.append(len(updated))
        assert len(world.ready()) >= 2  # desired - maxUnavailable
    assert seen == [1, 1, 1]  # one replica updated, waiting for it to be Ready
    assert said(r, "Progressing") == (
        "True",
        "RolloutInProgress",
        "1 of 3 replicas updated, 2 ready",
    )
    for step in range(2, 4):
        world.step(True)  # the updated replica loads...
        r = world.step()  # ...so the next one is updated
        assert sum(i.endswith("v0.24.0") for i in images(r).values()) == step
        assert len(world.ready()) >= 2
    r = world.step(True)
    r = world.step()
    assert said(r, "Progressing") == ("True", "RolloutComplete", "3 of 3 replicas updated")
    revisions = set(world.revisions().values())
    assert len(revisions) == 1 and revisions.isdisjoint(old_rev)
    assert len(world.routed()) == 3


def test_a_change_the_cluster_refused_holds_the_rollout_and_keeps_routing() -> None:
    # The updated replica reads Ready, but one of its Objects reads Synced=False: its
    # cluster still runs the previous spec. The rollout takes no further turn and says
    # which replica, while the replica keeps its endpoint (it serves what it ran).
    world = settled(3, three())
    world.deployments = [bumped(3)]
    r = world.step()
    (first,) = [n for n, i in images(r).items() if i.endswith("v0.24.0")]
    world.step(True)
    refused = {
        "type": "ModelAccepted",
        "status": "False",
        "reason": "NotSynced",
        "message": "Object x (model-serving) is not synced: observe failed",
    }
    for x in world.replicas:
        if x["metadata"]["name"] == first:
            x["status"]["conditions"].append(refused)
    r = world.step()
    assert sum(i.endswith("v0.24.0") for i in images(r).values()) == 1  # no next turn
    assert first in world.routed() and len(world.routed()) == 3
    assert said(r, "Progressing") == (
        "True",
        "RolloutInProgress",
        f"1 of 3 replicas updated, 3 ready; replica {first} not synced: the cluster has not "
        "taken the change (the replica's ModelAccepted says why)",
    )


def test_a_stuck_rollout_stops_and_says_so() -> None:
    world = settled(3, three(), now=T0)
    world.deployments = [bumped(3)]
    r = world.step()
    (updating,) = [n for n, i in images(r).items() if i.endswith("v0.24.0")]
    stamped = next(x for x in r.replicas if x["metadata"]["name"] == updating)
    assert stamped["metadata"]["annotations"] == {
        "modelplane.ai/revision-since": "2026-01-15T09:00:00Z"
    }
    world.now = T0 + timedelta(minutes=29)
    r = world.step()
    assert said(r, "Progressing")[1] == "RolloutInProgress"
    world.now = T0 + timedelta(minutes=31)
    r = world.step()
    assert said(r, "Progressing") == (
        "False",
        "RolloutStuck",
        f"1 of 3 replicas updated; replica {updating} not Ready within 1800s; "
        "the rollout is stopped",
    )
    assert sum(i.endswith("v0.24.0") for i in images(r).values()) == 1  # never the next one
    world.step(load=[updating])
    r = world.step()  # it came up after all: the rollout resumes
    assert said(r, "Progressing")[1] == "RolloutInProgress"
    assert sum(i.endswith("v0.24.0") for i in images(r).values()) == 2


def test_without_a_clock_nothing_is_stamped_and_nothing_is_stuck() -> None:
    world = settled(2, three())
    world.deployments = [bumped(2)]
    r = world.step()
    assert all("annotations" not in x["metadata"] for x in r.replicas)


def test_scale_down_during_a_rollout() -> None:
    world = settled(3, three())
    world.deployments = [bumped(3)]
    first = world.step()
    (updating,) = [n for n, i in images(first).items() if i.endswith("v0.24.0")]
    world.deployments = [bumped(2)]
    r = world.step()
    # Scale-down takes an outdated replica first; it still serves while the updated one loads.
    (leaving,) = [m.placement.name for m in r.result.schedule.superseded]
    assert images(r)[leaving].endswith("v0.23.0") and leaving != updating
    assert leaving in world.routed() and len(world.routed()) == 2
    world.step(load=[updating])
    r = world.step()  # the updated replica is Ready: the surplus old one is withdrawn first...
    assert leaving in world.names() and leaving not in world.routed()
    r = world.step()  # ...then removed
    assert leaving not in world.names()
    r = world.settle()
    assert len(world.names()) == 2 and set(images(r).values()) == {"vllm/vllm-openai:v0.24.0"}
    assert said(r, "Progressing") == ("True", "RolloutComplete", "2 of 2 replicas updated")


def test_a_scaled_down_ready_replica_is_withdrawn_before_it_goes() -> None:
    world = settled(3, three())
    world.deployments = [deployment(2)]
    r = world.step()
    (leaving,) = [m.placement.name for m in r.result.schedule.superseded]
    assert leaving in world.names() and leaving not in world.routed() and len(world.routed()) == 2
    assert said(r, "Progressing") == ("True", "RolloutComplete", "2 of 2 replicas updated")
    world.step()
    assert leaving not in world.names() and len(world.names()) == 2


def test_a_single_replica_is_updated_by_surge_never_down_to_nothing() -> None:
    # With one replica, desired - maxUnavailable is 0: an update in place would leave nothing
    # serving, so the replica is replaced first, like a move.
    world = settled(1, three())
    (old,) = world.names()
    world.deployments = [bumped(1)]
    r = world.step()
    (new,) = set(world.names()) - {old}
    assert world.routed() == [old] and images(r)[new].endswith("v0.24.0")
    assert said(r, "Progressing")[1] == "Moving"
    routed = []
    for _ in range(3):
        world.step(True)
        routed.append(world.routed())
    assert all(routed) and world.names() == [new] and world.routed() == [new]


def test_a_single_replica_with_no_room_for_its_replacement_keeps_serving() -> None:
    world = settled(1, [cluster("c1", gpus=1)])
    (old,) = world.names()
    world.deployments = [bumped(1)]
    for _ in range(3):
        r = world.step(True)
        assert world.names() == [old] and world.routed() == [old]
    assert said(r, "Progressing")[:2] == ("False", "RolloutStuck")
    assert images(r)[old].endswith("v0.23.0")


def test_surge_never_exceeds_its_bound_when_every_replica_moves() -> None:
    labelled = [
        cluster("a1", labels={"zone": "a"}),
        cluster("a2", labels={"zone": "a"}, gateway="203.0.113.20"),
        cluster("b1", labels={"zone": "b"}, gateway="203.0.113.30"),
        cluster("b2", labels={"zone": "b"}, gateway="203.0.113.40"),
    ]
    world = World([deployment(2, clusterSelector={"matchLabels": {"zone": "a"}})], labelled)
    world.settle()
    world.deployments = [deployment(2, clusterSelector={"matchLabels": {"zone": "b"}})]
    counts, routed = [], []
    r = world.step()
    # One replacement at a time: the other waits for the surge room, which is no shortfall.
    assert said(r, "ReplicasScheduled")[1:] == (
        "Scheduling",
        "Scheduled 1 of 2 replicas; 1 waiting for a move to finish (at most 1 extra)",
    )
    assert said(r, "Progressing")[2].endswith(
        "2 replicas moving from a2 to b1, from a1 (waiting for a replacement)"  # name order
    )
    for i in range(12):
        world.step(load=i % 2 == 0)
        counts.append(len(world.names()))
        routed.append(len(world.routed()))
    assert max(counts) == 3  # desired + maxSurge, never more
    assert min(routed) == 2  # and never fewer routed than desired
    assert set(world.clusters_of().values()) == {"b1", "b2"}


def gpus_per_cluster(r: RenderedDeployment) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in r.replicas:
        for engine in x["spec"]["engines"]:
            for m in engine["members"]:
                for request in m.get("deviceRequests") or ():
                    cluster_name = x["spec"]["clusterName"]
                    out[cluster_name] = out.get(cluster_name, 0) + request["count"] * engine.get(
                        "copies", 1
                    )
    return out


def test_capacity_is_never_overcommitted_while_old_and_new_exist() -> None:
    # One cluster, one node of 3 GPUs, 2 replicas of 1 GPU. Renaming the engine changes the
    # shape: each replica must be replaced, and the old ones stay charged while they exist.
    world = World([deployment(2)], [cluster("c1", gpus=3)])
    world.settle()
    renamed = copy.deepcopy(deployment(2))
    renamed["spec"]["template"]["spec"]["engines"][0]["name"] = "qwen3"
    world.deployments = [renamed]
    peak = 0
    for i in range(12):
        r = world.step(load=i % 2 == 1)
        peak = max(peak, gpus_per_cluster(r).get("c1", 0))
        assert len(world.routed()) >= 2 or i == 0 and len(world.routed()) == 2
    assert peak == 3  # surge filled the one free GPU, never beyond it
    assert {x["spec"]["engines"][0]["name"] for x in world.replicas} == {"qwen3"}
    assert len(world.names()) == 2


def test_with_no_room_for_a_replacement_the_old_shape_keeps_serving() -> None:
    world = World([deployment(2)], [cluster("c1", gpus=2)])
    world.settle()
    renamed = deployment(2)
    renamed["spec"]["template"]["spec"]["engines"][0]["name"] = "qwen3"
    world.deployments = [renamed]
    before = world.names()
    r = world.step(True)
    assert world.names() == before and len(world.routed()) == 2
    assert said(r, "Progressing")[1] == "RolloutStuck"
    assert said(r, "ReplicasScheduled")[2].endswith(
        "; 2 running replicas kept until a replacement fits"
    )


def test_a_deleted_cluster_still_loses_its_replica() -> None:
    # A gone cluster cannot be kept: the replica is re-placed at once.
    world = settled(2, three())
    (old,) = [n for n, c in world.clusters_of().items() if c == "c1"]
    world.clusters = world.clusters[1:]
    world.step()
    assert old not in world.names() and len(world.names()) == 2


def test_hash_label_is_unchanged_by_a_selector_or_toleration_edit() -> None:
    world = settled(2, three())
    before = world.revisions()
    tolerant = deployment(2, tolerations=[{"key": "gpu", "operator": "Exists"}])
    world.deployments = [tolerant]
    r = world.step()
    assert world.revisions() == before and said(r, "Progressing")[1] == "RolloutComplete"
    assert all(HASH in x["metadata"]["labels"] for x in r.replicas)


def _moving_fleet(tmp_path: Path) -> tuple[Path, World]:
    """The worked example one reconcile in: a pool renamed and an image bumped, fed back."""
    world = settled(3, three())
    world.deployments = [bumped(3)]
    world.clusters[0]["status"]["gpuPools"][0]["name"] = "h200"
    world.step()
    path = tmp_path / "fleet.yaml"
    docs = [*world.deployments, *world.clusters, *world.replicas, *world.endpoints]
    path.write_text(yaml.safe_dump_all(docs))
    return path, world


def test_schedule_explain_shows_superseded_replicas_and_their_replacements(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, world = _moving_fleet(tmp_path)
    (old,) = [n for n, c in world.clusters_of().items() if c == "c1" and n in world.routed()]
    (new,) = [n for n, c in world.clusters_of().items() if c == "c1" and n != old]
    assert main(["schedule", str(path), "--explain"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[1]: line.split()[4] for line in out.splitlines()[1:5]}
    assert rows[old] == "superseded" and rows[new] == "retained"
    assert sorted(rows.values()).count("outdated") == 2  # not their turn: a move is in flight
    assert (
        f"    {old} on c1: its cluster no longer publishes a pool it is pinned to; serving "
        f"until its replacement {new} on c1 is Ready\n"
    ) in out
    assert main(["schedule", str(path), "--explain", "-o", "json"]) == 0
    (dep,) = json.loads(capsys.readouterr().out)["deployments"]
    assert [
        (m["name"], m["cause"], m["retiring"], m["replacement"]) for m in dep["superseded"]
    ] == [(old, "PoolsLost", False, new)]


def test_render_now_must_be_a_time_with_an_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = _moving_fleet(tmp_path)
    for bad in ("yesterday", "2026-01-15T09:00:00"):
        with pytest.raises(SystemExit) as exit_:
            main(["render", str(path), "--now", bad])
        assert exit_.value.code == 2
        assert "--now" in capsys.readouterr().err
    assert main(["render", str(path), "--now", "2026-01-15T10:00:00+01:00", "-o", "json"]) == 0
    objects = json.loads(capsys.readouterr().out)
    stamps = {
        o["metadata"].get("annotations", {}).get("modelplane.ai/revision-since")
        for o in objects
        if o["kind"] == "ModelReplica"
    }
    # Only a replica created or updated is stamped: the replacement was placed by a render
    # without a clock, and nothing is updated while it moves. A replica that stops being
    # Ready outside a rollout is never stamped, so it cannot read as a stuck rollout.
    assert stamps == {None}


def test_a_later_deployment_sees_a_superseded_replica_charged() -> None:
    # a-model's Ready replica on c1 must move to zone b; while it serves, b-model (scheduled
    # after it, in name order) finds c1's only GPU taken and c2's taken by the replacement.
    first = seed_deployment(1, name="a-model")
    later = seed_deployment(1, name="b-model")
    clusters = [
        cluster("c1", gpus=1, labels={"zone": "a"}),
        cluster("c2", gpus=1, labels={"zone": "b"}, gateway="203.0.113.20"),
    ]
    world = World([first], clusters, compose=False)
    world.settle()
    moved = copy.deepcopy(first)
    moved["spec"]["template"]["spec"]["clusterSelector"] = {"matchLabels": {"zone": "b"}}
    world.deployments = [moved, later]
    world.step()
    a, b = world.last
    assert [x["spec"]["clusterName"] for x in a.replicas] == ["c1", "c2"]  # old serves, new loads
    assert b.replicas == []  # no room left anywhere: nothing overcommitted
    assert said(b, "ReplicasScheduled")[1] == "InsufficientCapacity"
