"""The routing surface of a replica: InferencePool and HTTPRoute (composition.md §9.1–§9.3)."""

from __future__ import annotations

from modelplane.api import ModelReplica, ReplicaEngine
from modelplane.composition.members import DEFAULT_HTTP_PORT, serving_port
from modelplane.composition.names import ReplicaNames
from modelplane.composition.types import REMOTE_NAMESPACE, Json

PICKER_GRPC_PORT = 9002
POOL_GROUP = "inference.networking.k8s.io"
GATEWAY_NAME = "inference-gateway"
GATEWAY_NAMESPACE = "modelplane-system"


def target_engine(replica: ModelReplica) -> ReplicaEngine | None:
    """The engine whose serving port is the pool's target: Prefill under PD, else the first."""
    engines = replica.spec.engines
    serving = replica.spec.serving
    if serving is not None and serving.mode == "PrefillDecode":
        prefill = next((e for e in engines if e.phase == "Prefill"), None)
        if prefill is not None:
            return prefill
    return engines[0] if engines else None


def target_port(replica: ModelReplica) -> int:
    """``T``: the single target port of the replica's pool (§9.1)."""
    engine = target_engine(replica)
    return serving_port(engine) if engine is not None else DEFAULT_HTTP_PORT


def inference_pool(names: ReplicaNames, port: int) -> Json:
    """The InferencePool selecting every serving pod of the replica (§9.2)."""
    return {
        "apiVersion": f"{POOL_GROUP}/v1",
        "kind": "InferencePool",
        "metadata": {"name": names.pool, "namespace": REMOTE_NAMESPACE},
        "spec": {
            "selector": {"matchLabels": {"modelplane.ai/serving": names.serving_key}},
            "targetPorts": [{"number": port}],
            "endpointPickerRef": {
                "name": names.epp,
                "port": {"number": PICKER_GRPC_PORT},
                "failureMode": "FailOpen",
            },
        },
    }


def http_route(names: ReplicaNames) -> Json:
    """The HTTPRoute from the cluster's inference gateway to the pool (§9.3)."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": names.serving_key, "namespace": REMOTE_NAMESPACE},
        "spec": {
            "parentRefs": [{"name": GATEWAY_NAME, "namespace": GATEWAY_NAMESPACE}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": names.route_prefix}}],
                    # A rule-level filter: Envoy rejects a rewrite on a backendRef.
                    "filters": [
                        {
                            "type": "URLRewrite",
                            "urlRewrite": {
                                "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}
                            },
                        }
                    ],
                    "backendRefs": [
                        {"group": POOL_GROUP, "kind": "InferencePool", "name": names.pool}
                    ],
                    # 0s disables the gateway's default request timeout, which cuts streams.
                    "timeouts": {"request": "0s"},
                }
            ],
        },
    }
