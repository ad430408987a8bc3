"""A small fleet for the reconcile tests, built as the user would write it."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from modelplane.api import (
    InferenceCluster,
    ModelCache,
    ModelDeployment,
    ModelEndpoint,
    ModelReplica,
)
from modelplane.reconcile.deployment import Fleet
from tests.builders import (
    cluster_status,
    gpu_device,
    gpu_pool,
    inference_cluster,
    model_cache,
    seed_deployment,
)


def deployment(replicas: int = 2, **template_spec: Any) -> dict[str, Any]:
    """The seed's qwen3-8b, with ``template_spec`` keys laid over its template spec."""
    out = seed_deployment(replicas)
    out["spec"]["template"]["spec"].update(template_spec)
    return out


def cluster(
    name: str,
    *,
    ready: bool = True,
    gateway: str | None = "203.0.113.10",
    labels: dict[str, str] | None = None,
    gpus: int = 8,
    nodes: int = 1,
    taints: list[dict[str, str]] | None = None,
    stack: str | None = None,
    stack_status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A cluster with one pool `h100` of ``nodes`` nodes x ``gpus`` GPUs (``stack_status``:
    its published ``status.stack``, none by default)."""
    status = cluster_status(
        ready=ready,
        gateway=gateway,
        pools=[gpu_pool("h100", nodes, gpu_device(gpus))],
        stack=stack_status,
    )
    return inference_cluster(
        name, secret=name, stack=stack, taints=taints, labels=labels or {}, status=status
    )


def fleet(
    deployments: list[dict[str, Any]],
    clusters: list[dict[str, Any]],
    replicas: Sequence[dict[str, Any]] = (),
    endpoints: Sequence[dict[str, Any]] = (),
    caches: Sequence[dict[str, Any]] = (),
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
    return model_cache(name, size_gib=16, match_labels=match_labels)
