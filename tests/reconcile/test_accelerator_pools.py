"""AMD and CPU pools end to end through `modelplane render`: placed, claimed, tolerated, valid.

Each pool's pods tolerate the taints its devices imply (docs/composition.md, "Tolerations by
pool"): NVIDIA pools ``nvidia.com/gpu``, AMD pools ``amd.com/gpu`` (the key our AMD DRA
driver's kubelet plugin tolerates, docs/stack.md), CPU pools ``modelplane.ai/cpu``
(modelplaneai/modelplane ``design/cpu-inference.md`` @ 6932526a, section Taint). A replica whose members sit on
different pools tolerates each pool's taint on that member's pods only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.cli.main import main
from tests.builders import (
    AMD_DRIVER,
    AMD_TAINT,
    CPU_DRIVER,
    CPU_TAINT,
    GV,
    NVIDIA_TAINT,
    amd_device,
    cluster_status,
    cpu_device,
    driver_selector,
    gpu_device,
    gpu_pool,
    inference_class,
    inference_cluster,
    model_cache,
    toleration,
)
from tests.composition.builders import pod_templates
from tests.composition.schemas import require_shared, validate_delivered

ROCM_IMAGE = "vllm/vllm-openai-rocm:v0.23.0"
CPU_IMAGE = "vllm/vllm-openai-cpu:v0.23.0-x86_64"
CUDA_IMAGE = "vllm/vllm-openai:v0.23.0"


def _request(driver: str, count: int = 1) -> dict[str, Any]:
    return {"name": "dev", "count": count, "selectors": [{"cel": driver_selector(driver)}]}


def _member(role: str, driver: str, image: str, count: int = 1, **extra: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "engine", "image": image, **extra}
    return {
        "role": role,
        "nodeSelector": {"devices": [_request(driver, count)]},
        "template": {"spec": {"containers": [container]}},
    }


def _deployment(name: str, *members: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"engines": [{"name": name, "members": list(members)}]}
    if len(members) > 1:  # every pod of a gang mounts the cache (MD rules)
        spec["modelCacheRef"] = {"name": "qwen"}
    return {
        "apiVersion": GV,
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": "ml-team"},
        "spec": {"replicas": 1, "template": {"spec": spec}},
    }


def _fleet(*deployments: dict[str, Any]) -> list[dict[str, Any]]:
    """One existing cluster publishing an AMD, a CPU and an NVIDIA pool, and their classes."""
    amd_class = inference_class("mi300x-8x", amd_device())
    cpu_class = inference_class("cpu-8", cpu_device())
    cpu_class["spec"]["provisioning"] = {
        "provider": "GKE",
        "gke": {"machineType": "c3-standard-8"},  # no accelerator: a CPU-only class (ICL-10)
    }
    status = cluster_status(
        pools=[
            gpu_pool("mi300x", 2, amd_device()),
            gpu_pool("cpu", 4, cpu_device()),
            gpu_pool("l4", 2, gpu_device(1, "23034Mi")),
        ]
    )
    status["cache"] = {"storageClassName": "standard-rwx"}
    cluster = inference_cluster("us-east-1", status=status)
    return [amd_class, cpu_class, cluster, model_cache(), *deployments]


def _render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docs: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], str]:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    code = main(["render", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    return list(yaml.safe_load_all(out)), err


def _remote(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    manifests = [o["spec"]["forProvider"]["manifest"] for o in objects if o["kind"] == "Object"]
    return [m for m in manifests if m["kind"] == kind]


def _engine_workload(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The one workload of the replica's engine (the endpoint picker is a Deployment too)."""
    (found,) = [
        m
        for m in _remote(objects, kind)
        if "modelplane.ai/engine" in pod_templates(m)[0]["metadata"]["labels"]
    ]
    return found


def _members(replica: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for e in replica["spec"]["engines"] for m in e["members"]]


@pytest.mark.parametrize(
    ("name", "driver", "image", "pool", "taint"),
    [
        ("amd-llm", AMD_DRIVER, ROCM_IMAGE, "mi300x", AMD_TAINT),
        ("cpu-llm", CPU_DRIVER, CPU_IMAGE, "cpu", CPU_TAINT),
    ],
)
def test_a_pool_places_claims_tolerates_and_renders_valid_objects(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    driver: str,
    image: str,
    pool: str,
    taint: str,
) -> None:
    require_shared()
    objects, err = _render(
        tmp_path, capsys, _fleet(_deployment(name, _member("Standalone", driver, image)))
    )
    assert "warning" not in err
    (replica,) = [o for o in objects if o["kind"] == "ModelReplica"]
    (member,) = _members(replica)
    assert member["nodePoolName"] == pool  # placed on the pool of its driver
    assert [r["deviceClassName"] for r in member["deviceRequests"]] == [driver]
    (rct,) = _remote(objects, "ResourceClaimTemplate")
    assert rct["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == driver
    deployment = _engine_workload(objects, "Deployment")
    (template,) = pod_templates(deployment)
    assert template["spec"]["nodeSelector"] == {"modelplane.ai/pool": pool}
    assert template["spec"]["tolerations"] == [toleration(taint)]
    for obj in objects:
        if obj["kind"] == "Object":
            validate_delivered(obj)


def test_a_mixed_gang_tolerates_each_pools_taint_on_its_own_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A coordinator leader on CPUs and AMD GPU workers: one LeaderWorkerSet, two pools."""
    require_shared()
    leader = _member("Leader", CPU_DRIVER, ROCM_IMAGE)
    worker = _member(
        "Worker", AMD_DRIVER, ROCM_IMAGE, 8, args=["--leader=$(MODELPLANE_LEADER_ADDRESS)"]
    )
    objects, err = _render(tmp_path, capsys, _fleet(_deployment("mixed", leader, worker)))
    (replica,) = [o for o in objects if o["kind"] == "ModelReplica"]
    assert {m["role"]: m["nodePoolName"] for m in _members(replica)} == {
        "Leader": "cpu",
        "Worker": "mi300x",
    }
    (lws,) = _remote(objects, "LeaderWorkerSet")
    assert lws is _engine_workload(objects, "LeaderWorkerSet")
    leader_pod, worker_pod = pod_templates(lws)
    assert leader_pod["spec"]["nodeSelector"] == {"modelplane.ai/pool": "cpu"}
    assert leader_pod["spec"]["tolerations"] == [toleration(CPU_TAINT)]
    assert worker_pod["spec"]["nodeSelector"] == {"modelplane.ai/pool": "mi300x"}
    assert worker_pod["spec"]["tolerations"] == [toleration(AMD_TAINT)]
    classes = {
        r["metadata"]["name"]: r["spec"]["spec"]["devices"]["requests"][0]["exactly"][
            "deviceClassName"
        ]
        for r in _remote(objects, "ResourceClaimTemplate")
    }
    claimed = {
        role: classes[pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]]
        for role, pod in (("leader", leader_pod), ("worker", worker_pod))
    }
    assert claimed == {"leader": CPU_DRIVER, "worker": AMD_DRIVER}
    for obj in objects:
        if obj["kind"] == "Object":
            validate_delivered(obj)  # the LeaderWorkerSet against its released CRD


def test_an_nvidia_pool_keeps_its_toleration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects, _ = _render(
        tmp_path,
        capsys,
        _fleet(_deployment("l4-llm", _member("Standalone", "gpu.nvidia.com", CUDA_IMAGE))),
    )
    deployment = _engine_workload(objects, "Deployment")
    (template,) = pod_templates(deployment)
    assert template["spec"]["tolerations"] == [toleration(NVIDIA_TAINT)]
