"""Builders of scheduler inputs for tests: camelCase dicts validated into the API models."""

from __future__ import annotations

from typing import Any

from modelplane.api import (
    InferenceClass,
    InferenceCluster,
    ModelCache,
    ModelDeployment,
    ModelReplica,
)
from tests.builders import (
    GPU_SELECTOR,
    H100_MEMORY,
    L4_MEMORY,
    cluster_status,
    gpu_device,
    gpu_pool,
    inference_cluster,
    replica_labels,
    selector_request,
    stamped_request,
)
from tests.builders import inference_class as shared_inference_class
from tests.builders import model_cache as shared_model_cache

GPU_SEL = GPU_SELECTOR
H100_MEM = H100_MEMORY
L4_MEM = L4_MEMORY


def gpu(
    count: int = 8,
    memory: str = H100_MEM,
    *,
    name: str = "gpu",
    claim: str = "DRA",
    cls: str | None = "gpu.nvidia.com",
    driver: str = "gpu.nvidia.com",
    attributes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A pool device (status.gpuPools shape)."""
    return gpu_device(
        count,
        memory,
        name=name,
        claim=claim,
        device_class=cls,
        driver=driver,
        attributes=attributes,
    )


def host(name: str = "host", driver: str = "cpu.example.com", count: int = 1) -> dict[str, Any]:
    """A synthetic CPU-host device."""
    return {"name": name, "claim": "Synthetic", "driver": driver, "count": count}


def pool(name: str, nodes: int, *devices: dict[str, Any]) -> dict[str, Any]:
    """A published pool."""
    return gpu_pool(name, nodes, *devices)


def cluster(
    name: str,
    *pools: dict[str, Any],
    labels: dict[str, str] | None = None,
    ready: str | None = "True",
    gateway: str | None = "203.0.113.1",
    taints: list[dict[str, Any]] | None = None,
    stack: str = "Standard",
    node_pools: list[dict[str, Any]] | None = None,
    stack_status: dict[str, Any] | None = None,
) -> InferenceCluster:
    """An InferenceCluster; Ready with a gateway unless told otherwise (``stack_status``:
    its published ``status.stack``, none by default)."""
    status = cluster_status(ready=ready, gateway=gateway, pools=list(pools), stack=stack_status)
    return InferenceCluster.model_validate(
        inference_cluster(
            name,
            secret="kc",
            stack=stack,
            taints=taints,
            node_pools=node_pools,
            labels=labels or None,
            status=status,
        )
    )


def inference_class(name: str, *devices: dict[str, Any]) -> InferenceClass:
    """An InferenceClass with the given devices (class shape: claim and count optional)."""
    return InferenceClass.model_validate(shared_inference_class(name, *devices))


def request(name: str = "gpu", count: int = 1, *cels: str) -> dict[str, Any]:
    """A nodeSelector device request."""
    return selector_request(name, count, *(cels or (GPU_SEL,)))


def member(
    role: str = "Standalone",
    *requests: dict[str, Any],
    worker_nodes: int | None = None,
    claimless: bool = False,
    args: list[str] | None = None,
) -> dict[str, Any]:
    """An engine member; a GPU request by default, none when ``claimless``."""
    container: dict[str, Any] = {"name": "engine", "image": "vllm/vllm-openai:v0.11.0"}
    if args:
        container["args"] = args
    out: dict[str, Any] = {"role": role, "template": {"spec": {"containers": [container]}}}
    if not claimless:
        out["nodeSelector"] = {"devices": list(requests) or [request()]}
    if worker_nodes is not None:
        out["worker"] = {"nodes": worker_nodes}
    return out


def engine(name: str, *members: dict[str, Any], copies: int | None = None) -> dict[str, Any]:
    """An engine; one Standalone GPU member by default."""
    out: dict[str, Any] = {"name": name, "members": list(members) or [member()]}
    if copies is not None:
        out["copies"] = copies
    return out


def deployment(
    name: str,
    replicas: int = 1,
    *engines: dict[str, Any],
    namespace: str = "ml-team",
    selector: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    cache: str | None = None,
    labels: dict[str, str] | None = None,
) -> ModelDeployment:
    """A ModelDeployment; one engine named after it by default."""
    spec: dict[str, Any] = {"engines": list(engines) or [engine(name)]}
    if selector is not None:
        spec["clusterSelector"] = {"matchLabels": selector}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    if cache is not None:
        spec["modelCacheRef"] = {"name": cache}
    template: dict[str, Any] = {"spec": spec}
    if labels:
        template["metadata"] = {"labels": labels}
    return ModelDeployment.model_validate(
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "template": template},
        }
    )


def model_cache(
    name: str, namespace: str = "ml-team", selector: dict[str, str] | None = None
) -> ModelCache:
    """A ModelCache."""
    return ModelCache.model_validate(shared_model_cache(name, namespace, match_labels=selector))


def stamped_member(
    pool_name: str,
    role: str = "Standalone",
    requests: list[tuple[str, str, int]] | None = None,
    worker_nodes: int | None = None,
) -> dict[str, Any]:
    """A replica member pinned to a pool with stamped (name, class, count) requests."""
    out: dict[str, Any] = {
        "role": role,
        "nodePoolName": pool_name,
        "template": {"spec": {"containers": [{"name": "engine", "image": "img"}]}},
    }
    if requests:
        out["deviceRequests"] = [stamped_request(k, n, c, GPU_SEL) for n, c, k in requests]
    if worker_nodes is not None:
        out["worker"] = {"nodes": worker_nodes}
    return out


def replica(
    deployment_name: str,
    cluster_name: str,
    index: int | str | None,
    *engines: dict[str, Any],
    name: str | None = None,
    namespace: str = "ml-team",
    pool_name: str = "h100",
    gpus: int = 1,
    ready: bool = False,
) -> ModelReplica:
    """An observed ModelReplica of ``deployment_name``; one Standalone engine on ``pool_name`` by default."""
    labels = replica_labels(deployment_name, namespace, cluster_name, index)
    if not engines:
        engines = (
            {
                "name": deployment_name,
                "copies": 1,
                "members": [stamped_member(pool_name, requests=[("gpu", "gpu.nvidia.com", gpus)])],
            },
        )
    body: dict[str, Any] = {
        "metadata": {
            "name": name or f"{deployment_name}-{cluster_name}-{index}",
            "namespace": namespace,
            "labels": labels,
        },
        "spec": {"clusterName": cluster_name, "engines": list(engines)},
    }
    if ready:
        body["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    return ModelReplica.model_validate(body)


def seed_fleet() -> list[InferenceCluster]:
    """The small worked-example fleet: eu-west-1 not Ready, us-east-1 (H100), us-west-2 (L4)."""
    return [
        cluster(
            "eu-west-1",
            pool("h100", 2, gpu()),
            labels={"region": "eu"},
            ready="False",
            gateway=None,
        ),
        cluster(
            "us-east-1", pool("h100", 1, gpu()), labels={"region": "us"}, gateway="203.0.113.10"
        ),
        cluster(
            "us-west-2",
            pool("l4", 2, gpu(1, L4_MEM)),
            labels={"region": "us"},
            gateway="203.0.113.20",
        ),
    ]
