"""The routing surface of a replica: InferencePool, HTTPRoute, gateway policies
(docs/composition.md, "Routes per gateway").

Routes are composed for the Gateway API implementation the cluster runs (docs/composition.md,
"Routes per gateway"), since the implementations differ on timeouts and on how they reach a
picker that serves TLS.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.api import InferenceCluster, ModelReplica, ReplicaEngine
from modelplane.api.inferencecluster import GatewayImplementation
from modelplane.composition.containers import HEALTH_PATH
from modelplane.composition.members import DEFAULT_HTTP_PORT, serving_port
from modelplane.composition.names import (
    KEY_EPP_DESTINATION_RULE,
    KEY_GATEWAY_BACKEND_POLICY,
    KEY_GATEWAY_HEALTH_CHECK,
    ReplicaNames,
)
from modelplane.composition.types import Json
from modelplane.naming import GATEWAY_NAME, SERVING_LABEL, SYSTEM_NAMESPACE

PICKER_GRPC_PORT = 9002
# The picker Service's ext-proc port protocol, as llm-d-router's chart sets it
# (config/charts/routerlib/templates/_service.yaml @ v0.10.0).
EXT_PROC_APP_PROTOCOL = "kubernetes.io/h2c"
POOL_GROUP = "inference.networking.k8s.io"
# The Envoy AI Gateway release the EnvoyGateway rules below were read at (the stack installs
# stack/components.py's; tests/stack/test_stack_facts.py keeps the two equal).
AI_GATEWAY_FACTS_RELEASE = "v1.1.0"

# A backend timeout no generation reaches: one day. GKE cannot disable its backend timeout
# (30 s by default); a GCP backend service accepts 1 to 2,147,483,647 s.
LONG_BACKEND_TIMEOUT_S = 86_400
ZERO_TIMEOUT = "0s"

# GKE's load balancer health check of the pool's endpoints, as both upstream charts set it
# (gateway-api-inference-extension config/charts/inferencepool/templates/gke.yaml @ v1.5.0,
# llm-d-router config/charts/llm-d-router-gateway/templates/gke.yaml @ v0.10.0): every 2 s with
# a 2 s timeout, shorter than GKE's 5 s default so traffic leaves an unhealthy pod sooner.
HEALTH_CHECK_INTERVAL_S = 2
HEALTH_CHECK_TIMEOUT_S = 2

GKE_POLICY_API = "networking.gke.io/v1"
ISTIO_NETWORKING_API = "networking.istio.io/v1"


@dataclass(frozen=True, slots=True)
class GatewayRules:
    """How one Gateway API implementation must be routed to."""

    # GatewayClass spec.controllerName the cluster function maps back to the implementation.
    controller_name: str
    # Whether HTTPRoute rules may carry `timeouts`; where they may, 0s disables the
    # implementation's default request timeout.
    route_timeouts: bool
    # Whether the backend timeout is set by a GCPBackendPolicy on the pool instead, and the
    # pool's health check by a HealthCheckPolicy (without one GKE probes `/`, a 404 on vLLM).
    backend_policy: bool
    # Whether the gateway needs a DestinationRule to speak TLS to the picker.
    picker_tls_policy: bool


GATEWAY_RULES: dict[GatewayImplementation, GatewayRules] = {
    # GKE refuses rules[].timeouts (Accepted=False, UnsupportedValue: kserve/kserve#5311,
    # #5707); its 30 s backend timeout is a GCPBackendPolicy's (llm-d-router
    # config/charts/llm-d-router-gateway/templates/gke.yaml, httproute.yaml @ v0.10.0).
    "GKE": GatewayRules("networking.gke.io/gateway", False, True, False),
    # Istio reaches a TLS picker only through a DestinationRule with TLS SIMPLE
    # (llm-d-router-gateway templates/istio.yaml @ v0.10.0; GIE chart istio.yaml @ v1.5.0).
    "Istio": GatewayRules("istio.io/gateway-controller", True, False, True),
    # Envoy's 15 s default route timeout; Envoy AI Gateway dials the picker with TLS and
    # accepts its self-signed certificate (envoyproxy/ai-gateway
    # internal/extensionserver/inferencepool.go @ v1.1.0).
    "EnvoyGateway": GatewayRules(
        "gateway.envoyproxy.io/gatewayclass-controller", True, False, False
    ),
    # kgateway implements HTTPRoute timeouts natively (kgateway-dev/kgateway#10784) and only
    # speaks TLS to the picker (kgateway-dev/kgateway#11429).
    "Kgateway": GatewayRules("kgateway.dev/kgateway", True, False, False),
}


def implementation_for_controller(controller_name: str) -> GatewayImplementation | None:
    """The implementation a GatewayClass controllerName belongs to, if a known one."""
    return next(
        (impl for impl, rules in GATEWAY_RULES.items() if rules.controller_name == controller_name),
        None,
    )


def gateway_implementation(cluster: InferenceCluster) -> GatewayImplementation | None:
    """The cluster's gateway implementation: the platform's word, else observed, else derived.

    None means Gateway API defaults: a ``0s`` request timeout, no policy objects.
    """
    declared = cluster.spec.gateway.implementation if cluster.spec.gateway is not None else None
    if declared is not None:
        return declared
    status = cluster.status.gateway if cluster.status is not None else None
    if status is not None and status.implementation is not None:
        return status.implementation
    # A GKE cluster's gateway is GKE's unless it says otherwise.
    return "GKE" if cluster.spec.cluster.source == "GKE" else None


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
    """``T``: the single target port of the replica's pool."""
    engine = target_engine(replica)
    return serving_port(engine) if engine is not None else DEFAULT_HTTP_PORT


def inference_pool(names: ReplicaNames, port: int) -> Json:
    """The InferencePool selecting every serving pod of the replica."""
    return {
        "apiVersion": f"{POOL_GROUP}/v1",
        "kind": "InferencePool",
        "metadata": {"name": names.pool, "namespace": names.remote},
        "spec": {
            "selector": {"matchLabels": {SERVING_LABEL: names.serving_key}},
            "targetPorts": [{"number": port}],
            "endpointPickerRef": {
                "name": names.epp,
                "port": {"number": PICKER_GRPC_PORT},
                "failureMode": "FailOpen",
            },
        },
    }


def http_route(names: ReplicaNames, implementation: GatewayImplementation | None) -> Json:
    """The HTTPRoute from the cluster's inference gateway to the pool."""
    rule: Json = {
        "matches": [{"path": {"type": "PathPrefix", "value": names.route_prefix}}],
        # A rule-level filter: Envoy rejects a rewrite on a backendRef.
        "filters": [
            {
                "type": "URLRewrite",
                "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
            }
        ],
        "backendRefs": [{"group": POOL_GROUP, "kind": "InferencePool", "name": names.pool}],
    }
    rules = GATEWAY_RULES.get(implementation) if implementation is not None else None
    if rules is None or rules.route_timeouts:
        # 0s disables the gateway's default request timeout, which would cut token streams.
        rule["timeouts"] = {"request": ZERO_TIMEOUT}
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": names.serving_key, "namespace": names.remote},
        "spec": {
            "parentRefs": [{"name": GATEWAY_NAME, "namespace": SYSTEM_NAMESPACE}],
            "rules": [rule],
        },
    }


def backend_policy(names: ReplicaNames) -> Json:
    """GKE: the GCPBackendPolicy lifting the pool's 30 s backend timeout."""
    return {
        "apiVersion": GKE_POLICY_API,
        "kind": "GCPBackendPolicy",
        "metadata": {"name": names.pool, "namespace": names.remote},
        "spec": {
            "targetRef": {"group": POOL_GROUP, "kind": "InferencePool", "name": names.pool},
            "default": {"timeoutSec": LONG_BACKEND_TIMEOUT_S},
        },
    }


def health_check_policy(names: ReplicaNames, port: int) -> Json:
    """GKE: the HealthCheckPolicy probing the engine's health path on the pool's target port.

    Without it GKE's load balancer asks ``/`` on the serving port, which vLLM answers 404,
    and marks every model server unhealthy.
    """
    return {
        "apiVersion": GKE_POLICY_API,
        "kind": "HealthCheckPolicy",
        "metadata": {"name": names.pool, "namespace": names.remote},
        "spec": {
            "targetRef": {"group": POOL_GROUP, "kind": "InferencePool", "name": names.pool},
            "default": {
                "timeoutSec": HEALTH_CHECK_TIMEOUT_S,
                "checkIntervalSec": HEALTH_CHECK_INTERVAL_S,
                "config": {
                    "type": "HTTP",
                    "httpHealthCheck": {"requestPath": HEALTH_PATH, "port": port},
                },
            },
        },
    }


def picker_host(names: ReplicaNames) -> str:
    """The picker Service's cluster DNS name."""
    return f"{names.epp}.{names.remote}.svc.cluster.local"


def picker_destination_rule(names: ReplicaNames) -> Json:
    """Istio: originate TLS to the picker, whose certificate is self-signed."""
    return {
        "apiVersion": ISTIO_NETWORKING_API,
        "kind": "DestinationRule",
        "metadata": {"name": names.epp, "namespace": names.remote},
        "spec": {
            "host": picker_host(names),
            "trafficPolicy": {"tls": {"mode": "SIMPLE", "insecureSkipVerify": True}},
        },
    }


def route_policies(
    names: ReplicaNames, implementation: GatewayImplementation | None, port: int
) -> list[tuple[str, Json]]:
    """The backend policies the route needs on this implementation, with their keys.

    ``port`` is the pool's target port, the one its health check probes.
    """
    rules = GATEWAY_RULES.get(implementation) if implementation is not None else None
    if rules is None or not rules.backend_policy:
        return []
    return [
        (KEY_GATEWAY_BACKEND_POLICY, backend_policy(names)),
        (KEY_GATEWAY_HEALTH_CHECK, health_check_policy(names, port)),
    ]


def picker_policies(
    names: ReplicaNames, implementation: GatewayImplementation | None
) -> list[tuple[str, Json]]:
    """The policies the gateway needs to reach the picker on this implementation."""
    rules = GATEWAY_RULES.get(implementation) if implementation is not None else None
    if rules is None or not rules.picker_tls_policy:
        return []
    return [(KEY_EPP_DESTINATION_RULE, picker_destination_rule(names))]
