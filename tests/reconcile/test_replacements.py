"""Changes a cluster refuses in place roll as surge replacements under new names.

A ResourceClaimTemplate's ``spec`` is immutable (kubernetes
``pkg/apis/resource/validation/validation.go`` ``ValidateResourceClaimTemplateUpdate``), and
Grove's webhook refuses a change to a clique's ``minAvailable`` (ai-dynamo/grove
v0.1.0-alpha.12-rc1 ``operator/internal/webhook/admission/pcs/validation/podcliqueset.go``,
``validatePodCliqueSetTemplateSpecUpdate``). Each scenario starts from a settled fleet, makes
the edit and drives ``render`` feed-back (replicas load one reconcile after they appear): no
replica that existed before the edit is ever rewritten, nothing is taken out of service
before its replacement is Ready, and the end state runs the new template under new names.
A change every object takes in place (an image bump, ``worker.nodes`` on a
LeaderWorkerSet) still updates the replicas under their names.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.builders import memory_selector, seed_container
from tests.reconcile.feedback import World, said
from tests.reconcile.fleet import cluster, deployment

MAX_SURGE = 1  # docs/reconcile.md "Rollouts and moves", spelled here

Edit = Callable[[dict[str, Any]], None]


def _member(d: dict[str, Any], i: int = 0) -> dict[str, Any]:
    member: dict[str, Any] = d["spec"]["template"]["spec"]["engines"][0]["members"][i]
    return member


def gpu_count(d: dict[str, Any]) -> None:
    _member(d)["nodeSelector"]["devices"][0]["count"] = 2


def device_selector(d: dict[str, Any]) -> None:
    _member(d)["nodeSelector"]["devices"][0]["selectors"] = [{"cel": memory_selector("40Gi")}]


def worker_nodes(d: dict[str, Any]) -> None:
    _member(d, 1)["worker"] = {"nodes": 2}


def image(d: dict[str, Any]) -> None:
    for member in d["spec"]["template"]["spec"]["engines"][0]["members"]:
        member["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:v0.24.0"


def gang(replicas: int) -> dict[str, Any]:
    """A Leader (no GPU) + one Worker node of 8 GPUs."""
    worker = {
        "role": "Worker",
        "worker": {"nodes": 1},
        "nodeSelector": {
            "devices": [
                {"name": "gpu", "count": 8, "selectors": [{"cel": memory_selector("20Gi")}]}
            ]
        },
        "template": {"spec": {"containers": [seed_container()]}},
    }
    leader = {"role": "Leader", "template": {"spec": {"containers": [seed_container()]}}}
    return deployment(replicas, engines=[{"name": "gang", "members": [leader, worker]}])


def two(stack: str | None = None, nodes: int = 1) -> list[dict[str, Any]]:
    return [
        cluster("c1", nodes=nodes, stack=stack),
        cluster("c2", gateway="203.0.113.20", nodes=nodes, stack=stack),
    ]


def drive(world: World, edit: Edit, desired: int, steps: int = 10) -> tuple[set[str], list[str]]:
    """Apply ``edit`` and reconcile until the rollout completes, checking every step.

    Returns the replica names observed before the edit and the explain lines of the first
    reconcile's superseded replicas (``cause: message``).
    """
    before = {r["metadata"]["name"]: copy.deepcopy(r["spec"]) for r in world.replicas}
    edited = copy.deepcopy(world.deployments[0])
    edit(edited)
    world.deployments = [edited]
    first: list[str] = []
    for step in range(steps):
        r = world.step(load=lambda name: name not in before)
        if step == 0:
            first = [f"{s.cause.value}: {s.detail}" for s in r.result.schedule.superseded]
        for replica in r.replicas:
            name = replica["metadata"]["name"]
            if name in before:
                assert replica["spec"] == before[name], f"{name} rewritten in place"
        assert len(world.routed()) >= desired, step  # nothing leaves before it is replaced
        retiring = sum(1 for s in r.result.schedule.superseded if s.retiring)
        assert len(r.replicas) <= desired + MAX_SURGE + retiring, step
        if said(r, "Progressing")[1] == "RolloutComplete":
            break
    done = f"{desired} of {desired} replicas updated"
    assert said(r, "Progressing") == ("True", "RolloutComplete", done)
    return set(before), first


@pytest.mark.parametrize(
    ("edit", "refused"),
    [
        (gpu_count, "ResourceClaimTemplate spec"),
        (device_selector, "ResourceClaimTemplate spec"),
    ],
)
def test_a_claim_template_change_rolls_as_surge_replacements(edit: Edit, refused: str) -> None:
    world = World([deployment(2)], two())
    world.settle()
    before, first = drive(world, edit, 2)
    assert first == [f"ImmutableFieldChanged: {refused}"] * 2
    assert set(world.names()).isdisjoint(before)  # every replica is new
    assert world.routed() == world.names()


def test_worker_nodes_on_grove_rolls_as_surge_replacements() -> None:
    world = World([gang(2)], two("Dynamo", nodes=3))
    world.settle()
    assert len(world.routed()) == 2
    before, first = drive(world, worker_nodes, 2)
    refused = "PodCliqueSet spec.template.cliques[worker].spec.minAvailable"
    assert first == [f"ImmutableFieldChanged: {refused}"] * 2
    assert set(world.names()).isdisjoint(before)
    assert all(
        r["spec"]["engines"][0]["members"][1]["worker"]["nodes"] == 2 for r in world.replicas
    )


def test_worker_nodes_on_a_leader_worker_set_updates_in_place() -> None:
    world = World([gang(2)], two(nodes=3))
    world.settle()
    names = world.names()
    world.deployments = [copy.deepcopy(world.deployments[0])]
    worker_nodes(world.deployments[0])
    r = world.settle()
    assert said(r, "Progressing")[1] == "RolloutComplete"
    assert world.names() == names  # LeaderWorkerSet size is not immutable (lws v0.10.0)


def test_an_image_bump_on_a_deployment_updates_in_place() -> None:
    world = World([deployment(2)], two())
    world.settle()
    names = world.names()
    world.deployments = [copy.deepcopy(world.deployments[0])]
    image(world.deployments[0])
    r = world.step()
    assert not r.result.schedule.superseded
    assert len(r.result.schedule.rollout.updating) == 1  # one at a time, under its name
    r = world.settle()
    assert said(r, "Progressing")[1] == "RolloutComplete"
    assert world.names() == names


def test_a_loading_replica_dropped_with_a_new_template_leaves_its_name_unused() -> None:
    # A replica still loading on a pool that is renamed away is dropped at once; when the
    # template changed too (here its GPU count), a replacement under the same name would be
    # written over its objects in place, claim template included. It takes a new name.
    world = World([deployment(1)], [cluster("c1", gpus=4)])
    world.step(load=False)
    (old,) = world.names()
    world.clusters[0]["status"]["gpuPools"][0]["name"] = "h200"
    world.deployments = [copy.deepcopy(world.deployments[0])]
    gpu_count(world.deployments[0])
    world.step(load=False)
    assert old not in world.names()
    r = world.settle()
    assert len(world.routed()) == 1 and old not in world.names()
    assert said(r, "Progressing")[1] == "RolloutComplete"
