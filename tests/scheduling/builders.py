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

GPU_SEL = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0'
H100_MEM = "81559Mi"
L4_MEM = "23034Mi"


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
    device: dict[str, Any] = {"name": name, "claim": claim, "driver": driver, "count": count}
    if cls is not None and claim == "DRA":
        device["deviceClassName"] = cls
    if memory:
        device["capacity"] = {"memory": {"value": memory}}
    if attributes:
        device["attributes"] = attributes
    return device


def host(name: str = "host", driver: str = "cpu.example.com", count: int = 1) -> dict[str, Any]:
    """A synthetic CPU-host device."""
    return {"name": name, "claim": "Synthetic", "driver": driver, "count": count}


def pool(name: str, nodes: int, *devices: dict[str, Any]) -> dict[str, Any]:
    """A published pool."""
    return {"name": name, "nodes": nodes, "devices": list(devices)}


def cluster(
    name: str,
    *pools: dict[str, Any],
    labels: dict[str, str] | None = None,
    ready: str | None = "True",
    gateway: str | None = "203.0.113.1",
    taints: list[dict[str, Any]] | None = None,
    stack: str = "Standard",
    node_pools: list[dict[str, Any]] | None = None,
) -> InferenceCluster:
    """An InferenceCluster; Ready with a gateway unless told otherwise."""
    status: dict[str, Any] = {}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready, "reason": "Available"}]
    if gateway is not None:
        status["gateway"] = {"address": gateway}
    if pools:
        status["gpuPools"] = list(pools)
    spec: dict[str, Any] = {
        "cluster": {"source": "Existing", "existing": {"secretRef": {"name": "kc"}}},
        "stack": stack,
    }
    if taints:
        spec["taints"] = taints
    if node_pools:
        spec["nodePools"] = node_pools
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return InferenceCluster.model_validate({"metadata": meta, "spec": spec, "status": status})


def inference_class(name: str, *devices: dict[str, Any]) -> InferenceClass:
    """An InferenceClass with the given devices (class shape: claim and count optional)."""
    return InferenceClass.model_validate(
        {"metadata": {"name": name}, "spec": {"devices": list(devices)}}
    )


def request(name: str = "gpu", count: int = 1, *cels: str) -> dict[str, Any]:
    """A nodeSelector device request."""
    return {"name": name, "count": count, "selectors": [{"cel": c} for c in (cels or (GPU_SEL,))]}


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
    spec: dict[str, Any] = {
        "source": "HuggingFace",
        "huggingFace": {"repo": "Qwen/Qwen3-8B", "sizeGiB": 20},
    }
    if selector is not None:
        spec["clusterSelector"] = {"matchLabels": selector}
    return ModelCache.model_validate(
        {"metadata": {"name": name, "namespace": namespace}, "spec": spec}
    )


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
        out["deviceRequests"] = [
            {"name": n, "deviceClassName": c, "count": k, "selectors": [{"cel": GPU_SEL}]}
            for n, c, k in requests
        ]
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
    labels = {
        "modelplane.ai/deployment": deployment_name,
        "modelplane.ai/deployment-namespace": namespace,
        "modelplane.ai/cluster": cluster_name,
    }
    if index is not None:
        labels["modelplane.ai/replica-index"] = str(index)
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
