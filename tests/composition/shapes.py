"""Every replica shape the composition tests cover, with the cluster it lands on."""

from __future__ import annotations

import copy
from typing import Any

from modelplane.api import InferenceCluster, ModelReplica

from .builders import cluster, gang_engine, replica, standalone_engine, user_picker

PROXY_SIDECAR: dict[str, Any] = {
    "name": "proxy",
    "image": "envoyproxy/envoy:v1.31",
    "ports": [{"name": "proxy", "containerPort": 9000}],
    "readinessProbe": {"tcpSocket": {"port": 9000}},
}


def _with_sidecar() -> ModelReplica:
    engine = standalone_engine()
    engine["members"][0]["template"]["spec"]["containers"].append(copy.deepcopy(PROXY_SIDECAR))
    return replica([engine])


def _prefill_decode() -> ModelReplica:
    prefill = standalone_engine("prefill", phase="Prefill")
    decode = standalone_engine("decode", phase="Decode")
    containers = decode["members"][0]["template"]["spec"]["containers"]
    containers[0]["ports"] = [{"name": "http", "containerPort": 8001}]
    containers.append(
        {
            "name": "routing-sidecar",
            "image": "ghcr.io/llm-d/llm-d-routing-sidecar:v0.3.0",
            "args": ["--port=8000", "--vllm-port=8001"],
            "ports": [{"name": "sidecar", "containerPort": 8000}],
            "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
        }
    )
    config = {
        "apiVersion": "llm-d.ai/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [{"type": "prefill-header-handler"}],
    }
    return replica(
        [prefill, decode],
        serving={
            "mode": "PrefillDecode",
            "router": "EndpointPicker",
            "endpointPicker": user_picker(config),
        },
    )


SHAPES: dict[str, tuple[ModelReplica, InferenceCluster]] = {
    "standalone": (replica(), cluster()),
    "standalone-on-dynamo": (replica(), cluster("Dynamo")),
    "leader-worker-standard": (
        replica([gang_engine(nodes=2)], modelCacheRef={"name": "qwen"}),
        cluster(),
    ),
    "leader-worker-dynamo": (
        replica([gang_engine(nodes=2)], modelCacheRef={"name": "qwen"}),
        cluster("Dynamo"),
    ),
    "claimless-leader-standard": (
        replica([gang_engine(leader_claims=False)], modelCacheRef={"name": "qwen"}),
        cluster(),
    ),
    "claimless-leader-dynamo": (
        replica([gang_engine(leader_claims=False)], modelCacheRef={"name": "qwen"}),
        cluster("Dynamo"),
    ),
    "sidecar": (_with_sidecar(), cluster()),
    "cache": (replica(modelCacheRef={"name": "qwen"}), cluster()),
    "copies": (
        replica(
            [standalone_engine(copies=3), gang_engine("gang", copies=2)],
            modelCacheRef={"name": "qwen"},
        ),
        cluster("Dynamo"),
    ),
    "unified-user-picker": (
        replica(
            serving={"mode": "Unified", "router": "EndpointPicker", "endpointPicker": user_picker()}
        ),
        cluster(),
    ),
    "prefill-decode-user-picker": (_prefill_decode(), cluster()),
}
