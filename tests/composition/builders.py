"""Inputs for composition tests: the seed's replica, clusters, and variants of both."""

from __future__ import annotations

from typing import Any

from modelplane.api import InferenceCluster, ModelReplica
from modelplane.composition.picker import shared_picker_objects
from tests.builders import (
    GV,
    PROVIDER_CONFIG,
    SEED_IMAGE,
    SEED_SELECTOR,
    cluster_status,
    inference_cluster,
    replica_labels,
    seed_replica_engine,
    stamped_request,
)

SEL = SEED_SELECTOR
PC = PROVIDER_CONFIG


def gpu_request(count: int = 1, name: str = "gpu") -> dict[str, Any]:
    """A resolved device request as the scheduler writes it."""
    return stamped_request(count, name)


def standalone_engine(name: str = "qwen3-8b", **extra: Any) -> dict[str, Any]:
    """The seed's engine: one Standalone member with one GPU."""
    return {**seed_replica_engine(name), **extra}


def gang_engine(
    name: str = "big", nodes: int = 1, leader_claims: bool = True, copies: int = 1
) -> dict[str, Any]:
    """A Leader + Worker engine, 8 GPUs on each pod (the leader optionally claimless)."""
    leader: dict[str, Any] = {
        "role": "Leader",
        "nodePoolName": "h100",
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "engine",
                        "image": SEED_IMAGE,
                        "command": ["sh", "-c"],
                        "args": [
                            "vllm serve --rank $(MODELPLANE_RANK) --leader $(MODELPLANE_LEADER_ADDRESS)"
                        ],
                    }
                ]
            }
        },
    }
    if leader_claims:
        leader["deviceRequests"] = [gpu_request(8)]
    worker: dict[str, Any] = {
        "role": "Worker",
        "nodePoolName": "h100-b",
        "deviceRequests": [gpu_request(8)],
        "worker": {"nodes": nodes},
        "template": {
            "spec": {"containers": [{"name": "engine", "image": SEED_IMAGE, "args": ["--worker"]}]}
        },
    }
    return {"name": name, "copies": copies, "members": [leader, worker]}


def replica_dict(
    engines: list[dict[str, Any]] | None = None,
    name: str = "qwen3-8b-e7f0a",
    namespace: str = "ml-team",
    deployment: str = "qwen3-8b",
    **spec: Any,
) -> dict[str, Any]:
    """A ModelReplica as the deployment function writes it."""
    return {
        "apiVersion": GV,
        "kind": "ModelReplica",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": replica_labels(deployment, namespace, "us-east-1", 0),
        },
        "spec": {
            "clusterName": "us-east-1",
            "engines": engines if engines is not None else [standalone_engine()],
            **spec,
        },
    }


def replica(engines: list[dict[str, Any]] | None = None, **kwargs: Any) -> ModelReplica:
    """A validated ModelReplica (schema defaults applied)."""
    return ModelReplica.model_validate(replica_dict(engines, **kwargs))


def cluster(
    stack: str = "Standard", provider_config: str | None = PC, name: str = "us-east-1"
) -> InferenceCluster:
    """The worked example's cluster, on the given stack."""
    status = cluster_status(ready=None, provider_config=provider_config)
    return InferenceCluster.model_validate(
        inference_cluster(name, secret="kubeconfig", stack=stack, status=status)
    )


def user_picker(config: dict[str, Any] | None = None, **container: Any) -> dict[str, Any]:
    """A user-written endpoint picker under ``router: EndpointPicker``."""
    picker: dict[str, Any] = {
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "router",
                        "image": "ghcr.io/llm-d/llm-d-inference-scheduler:v0.3.0",
                        "args": [
                            "--pool-name=$(MODELPLANE_POOL_NAME)",
                            "--pool-namespace=$(MODELPLANE_POOL_NAMESPACE)",
                            "--config-file=$(MODELPLANE_PICKER_CONFIG)",
                            "--grpc-port=9002",
                        ],
                        **container,
                    }
                ]
            }
        }
    }
    if config is not None:
        picker["config"] = config
    return picker


def manifests(composition: Any) -> dict[str, dict[str, Any]]:
    """The remote objects of a composition by resource key."""
    return {o.key: o.object["spec"]["forProvider"]["manifest"] for o in composition.objects}


def on_cluster(composition: Any) -> dict[str, dict[str, Any]]:
    """What the replica's pods see on its cluster: the cluster's shared picker objects, then
    the replica's own remote objects by resource key (a user's config replaces the default).
    """
    return {**dict(shared_picker_objects("ml-team")), **manifests(composition)}


def pod_templates(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Every pod template ``{metadata, spec}`` of a workload, whatever its kind."""
    kind = manifest["kind"]
    if kind == "Deployment":
        return [manifest["spec"]["template"]]
    if kind == "LeaderWorkerSet":
        lwt = manifest["spec"]["leaderWorkerTemplate"]
        return [lwt["leaderTemplate"], lwt["workerTemplate"]]
    if kind == "PodCliqueSet":
        return [
            {
                "metadata": {k: c[k] for k in ("labels", "annotations") if k in c},
                "spec": c["spec"]["podSpec"],
            }
            for c in manifest["spec"]["template"]["cliques"]
        ]
    raise AssertionError(f"not a workload: {kind}")
