"""A small fleet for the reconcile tests, built as the user would write it."""

from __future__ import annotations

import copy
from typing import Any

from modelplane.api import (
    InferenceCluster,
    ModelCache,
    ModelDeployment,
    ModelEndpoint,
    ModelReplica,
)
from modelplane.reconcile.deployment import Fleet

SELECTOR = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0\n'


def deployment(replicas: int = 2, **template_spec: Any) -> dict[str, Any]:
    """The seed's qwen3-8b, with ``template_spec`` keys laid over its template spec."""
    spec: dict[str, Any] = {
        "engines": [
            {
                "name": "qwen3-8b",
                "members": [
                    {
                        "role": "Standalone",
                        "nodeSelector": {
                            "devices": [
                                {"name": "gpu", "count": 1, "selectors": [{"cel": SELECTOR}]}
                            ]
                        },
                        "template": {
                            "spec": {
                                "containers": [
                                    {
                                        "name": "engine",
                                        "image": "vllm/vllm-openai:v0.23.0",
                                        "args": [
                                            "--model=Qwen/Qwen3-8B",
                                            "--served-model-name=$(MODELPLANE_SERVED_MODEL_NAME)",
                                        ],
                                    }
                                ]
                            }
                        },
                    }
                ],
            }
        ]
    }
    spec.update(template_spec)
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "qwen3-8b", "namespace": "ml-team"},
        "spec": {"replicas": replicas, "template": {"spec": spec}},
    }


def cluster(
    name: str,
    *,
    ready: bool = True,
    gateway: str | None = "203.0.113.10",
    labels: dict[str, str] | None = None,
    gpus: int = 8,
    nodes: int = 1,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A cluster with one pool `h100` of ``nodes`` nodes x ``gpus`` GPUs."""
    status: dict[str, Any] = {
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "reason": "Available"}
        ],
        "gpuPools": [
            {
                "name": "h100",
                "nodes": nodes,
                "devices": [
                    {
                        "name": "gpu",
                        "claim": "DRA",
                        "driver": "gpu.nvidia.com",
                        "deviceClassName": "gpu.nvidia.com",
                        "count": gpus,
                        "capacity": {"memory": {"value": "81559Mi"}},
                    }
                ],
            }
        ],
    }
    if gateway is not None:
        status["gateway"] = {"address": gateway}
    spec: dict[str, Any] = {
        "cluster": {"source": "Existing", "existing": {"secretRef": {"name": name}}}
    }
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": status,
    }


def fleet(
    deployments: list[dict[str, Any]],
    clusters: list[dict[str, Any]],
    replicas: list[dict[str, Any]] = (),  # type: ignore[assignment]
    endpoints: list[dict[str, Any]] = (),  # type: ignore[assignment]
    caches: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> Fleet:
    """Typed objects of the given manifests."""
    return Fleet(
        deployments=[ModelDeployment.model_validate(d) for d in deployments],
        clusters=[InferenceCluster.model_validate(c) for c in clusters],
        caches=[ModelCache.model_validate(c) for c in caches],
        replicas=[ModelReplica.model_validate(r) for r in replicas],
        endpoints=[ModelEndpoint.model_validate(e) for e in endpoints],
    )


def observed(replica: dict[str, Any], ready: bool) -> dict[str, Any]:
    """A rendered replica fed back as observed state, Ready or not."""
    out = copy.deepcopy(replica)
    out["status"] = {
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "reason": "Available"}
        ]
    }
    return out


def observed_endpoint(endpoint: dict[str, Any], ready: bool = True) -> dict[str, Any]:
    """A rendered endpoint fed back as observed state."""
    out = copy.deepcopy(endpoint)
    out["status"] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return out


def cache(name: str = "qwen", match_labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A ModelCache in ml-team."""
    spec: dict[str, Any] = {
        "source": "HuggingFace",
        "huggingFace": {"repo": "Qwen/Qwen3-8B", "sizeGiB": 16},
    }
    if match_labels is not None:
        spec["clusterSelector"] = {"matchLabels": match_labels}
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelCache",
        "metadata": {"name": name, "namespace": "ml-team"},
        "spec": spec,
    }
