"""Tolerations by pool (docs/composition.md, "Tolerations by pool"): the drivers the cluster
publishes for a member's pool and the classes its members claim there decide them."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api import InferenceCluster, ModelReplica
from modelplane.api.validation import validate_document
from modelplane.composition import compose_replica
from tests.builders import (
    AMD_DRIVER,
    AMD_TAINT,
    CPU_DRIVER,
    CPU_TAINT,
    NVIDIA_TAINT,
    PROVIDER_CONFIG,
    amd_device,
    cluster_status,
    cpu_device,
    gpu_device,
    gpu_pool,
    inference_cluster,
    stamped_request,
    toleration,
)
from tests.composition.builders import gang_engine, manifests, pod_templates, replica, replica_dict

NIC = {"name": "nic", "claim": "Synthetic", "driver": "rdma.example.com", "count": 8}


def _cluster(*pools: dict[str, Any]) -> InferenceCluster:
    status = cluster_status(ready=None, provider_config=PROVIDER_CONFIG, pools=list(pools))
    return InferenceCluster.model_validate(inference_cluster("us-east-1", status=status))


def _pods(r: ModelReplica, cluster: InferenceCluster) -> list[dict[str, Any]]:
    composed = manifests(compose_replica(r, cluster))
    return [
        pod
        for m in composed.values()
        if m["kind"] in ("Deployment", "LeaderWorkerSet")
        for pod in pod_templates(m)
        if "modelplane.ai/engine" in pod["metadata"]["labels"]
    ]


def _gang(leader_pool: str, worker_pool: str, worker_class: str, leader_claims: bool) -> Any:
    engine = gang_engine(leader_claims=leader_claims)
    leader, worker = engine["members"]
    leader["nodePoolName"], worker["nodePoolName"] = leader_pool, worker_pool
    worker["deviceRequests"] = [stamped_request(8, device_class=worker_class)]
    if leader_claims:
        leader["deviceRequests"] = [stamped_request(1, device_class=worker_class)]
    return replica([engine], modelCacheRef={"name": "qwen"})


@pytest.mark.parametrize(
    ("pools", "leader_claims", "expected"),
    [
        # The leader claims nothing on the AMD pool: the published pool says AMD.
        ([gpu_pool("a", 2, amd_device())], False, [AMD_TAINT]),
        # Unpublished pool: the worker's claim on the same pool says AMD.
        ([], False, [AMD_TAINT]),
        # A GPU pool whose CPUs the CPU driver publishes too tolerates both taints.
        ([gpu_pool("a", 2, amd_device(), cpu_device())], True, [AMD_TAINT, CPU_TAINT]),
        # Synthetic devices of unknown drivers add nothing.
        ([gpu_pool("a", 2, amd_device(), NIC)], True, [AMD_TAINT]),
    ],
)
def test_members_on_one_pool_tolerate_its_taints(
    pools: list[dict[str, Any]], leader_claims: bool, expected: list[str]
) -> None:
    pods = _pods(_gang("a", "a", AMD_DRIVER, leader_claims), _cluster(*pools))
    assert [p["spec"]["tolerations"] for p in pods] == [[toleration(k) for k in expected]] * 2


def test_a_claimless_leader_on_an_unknown_pool_keeps_the_nvidia_toleration() -> None:
    """Nothing known of the leader's pool: the toleration every pod always had."""
    pods = _pods(_gang("unpublished", "a", CPU_DRIVER, False), _cluster())
    leader, worker = (p["spec"]["tolerations"] for p in pods)
    assert leader == [toleration(NVIDIA_TAINT)]
    assert worker == [toleration(CPU_TAINT)]


def test_an_unknown_driver_keeps_the_nvidia_toleration() -> None:
    other = gpu_device(4, driver="gpu.example.com", device_class="gpu.example.com")
    r = replica(
        [
            {
                "name": "e",
                "members": [
                    {
                        "nodePoolName": "x",
                        "deviceRequests": [stamped_request(device_class="gpu.example.com")],
                        "template": {"spec": {"containers": [{"name": "engine", "image": "i"}]}},
                    }
                ],
            }
        ]
    )
    (pod,) = _pods(r, _cluster(gpu_pool("x", 1, other)))
    assert pod["spec"]["tolerations"] == [toleration(NVIDIA_TAINT)]


def test_a_pod_template_cannot_carry_tolerations_of_its_own() -> None:
    """No user toleration can be dropped: the replica's pod template has none to keep (a
    deployment's tolerations are matched against cluster taints by the scheduler)."""
    doc = replica_dict()
    member = doc["spec"]["engines"][0]["members"][0]
    member["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]
    problems = validate_document(doc).problems
    assert [p.path for p in problems] == ["spec.engines[0].members[0].template.spec.tolerations"], (
        problems
    )
