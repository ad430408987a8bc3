"""Routes every common gateway accepts: per implementation, against its documented limits.

Each implementation's limits are data below, with where they are documented. The composed
route and policies must respect them: no field the implementation refuses, no default
timeout left in place that would cut a long generation, and a way to reach a picker that
serves TLS (llm-d's picker does by default: --secure-serving=true, pkg/epp/server/options.go
@ v0.10.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from modelplane.api import InferenceCluster
from modelplane.composition import compose_replica
from modelplane.composition.routing import gateway_implementation, implementation_for_controller

from .builders import PC, cluster, manifests, replica, user_picker
from .schemas import POLICY_SHAPES, validate_delivered, validate_manifest
from .shapes import SHAPES

# A generation longer than this must still stream through: an hour of tokens.
LONG_GENERATION_S = 3600


@dataclass(frozen=True)
class Limits:
    """What an implementation documents about routes to an InferencePool."""

    # Whether `spec.rules[].timeouts` is accepted at all.
    accepts_route_timeouts: bool
    # Its default request/backend timeout when nothing is configured, in seconds (None: none).
    default_timeout_s: int | None
    # The policy kind that sets the backend timeout instead of the route, if any.
    backend_timeout_policy: str | None
    # The policy kind it needs to reach a picker serving TLS with a self-signed cert, if any.
    picker_tls_policy: str | None
    # The policy kind that points its load balancer's health check at the engine, if any.
    health_check_policy: str | None
    controller_name: str
    source: str


LIMITS: dict[str, Limits] = {
    "GKE": Limits(
        accepts_route_timeouts=False,
        default_timeout_s=30,
        backend_timeout_policy="GCPBackendPolicy",
        picker_tls_policy=None,
        health_check_policy="HealthCheckPolicy",
        controller_name="networking.gke.io/gateway",
        source="kserve/kserve#5311, #5707 (Accepted=False UnsupportedValue on rules.timeouts); "
        "GCP BackendService timeoutSec default 30, range 1..2147483647; llm-d-router "
        "config/charts/llm-d-router-gateway/templates/gke.yaml, httproute.yaml @ v0.10.0; "
        "gateway-api-inference-extension config/charts/inferencepool/templates/gke.yaml @ v1.5.0 "
        "(a HealthCheckPolicy on /health: GKE probes / otherwise, which vLLM answers 404)",
    ),
    "Istio": Limits(
        accepts_route_timeouts=True,
        default_timeout_s=None,
        backend_timeout_policy=None,
        picker_tls_policy="DestinationRule",
        health_check_policy=None,
        controller_name="istio.io/gateway-controller",
        source="llm-d-router config/charts/llm-d-router-gateway/templates/istio.yaml @ v0.10.0; "
        "gateway-api-inference-extension config/charts/inferencepool/templates/istio.yaml @ v1.5.0",
    ),
    "EnvoyGateway": Limits(
        accepts_route_timeouts=True,
        default_timeout_s=15,
        backend_timeout_policy=None,
        picker_tls_policy=None,
        health_check_policy=None,
        controller_name="gateway.envoyproxy.io/gatewayclass-controller",
        source="Envoy Gateway 'HTTP Timeouts' task (15 s default); envoyproxy/ai-gateway "
        "internal/extensionserver/inferencepool.go @ v1.1.0 (TLS to the picker, any cert)",
    ),
    "Kgateway": Limits(
        accepts_route_timeouts=True,
        default_timeout_s=15,
        backend_timeout_policy=None,
        picker_tls_policy=None,
        health_check_policy=None,
        controller_name="kgateway.dev/kgateway",
        source="kgateway-dev/kgateway#10784 (native HTTPRoute timeouts), #11429 (TLS-only "
        "picker connection); Envoy's 15 s route timeout",
    ),
}
# Gateway API HTTPRouteTimeouts: "0s" disables the timeout; an implementation that cannot
# must read it as the longest value it can set (gateway-api v1.5.1 apis/v1/httproute_types.go).
DISABLED = "0s"

POLICY_KINDS = {kind for _, kind in POLICY_SHAPES} | {"HealthCheckPolicy"}

# The health check both upstream charts attach to each InferencePool on GKE, but its port
# (gateway-api-inference-extension config/charts/inferencepool/templates/gke.yaml @ v1.5.0;
# llm-d-router config/charts/llm-d-router-gateway/templates/gke.yaml @ v0.10.0): an HTTP GET of
# /health on the pool's first target port, every 2 s with a 2 s timeout.
CHART_HEALTH_CHECK = {
    "timeoutSec": 2,
    "checkIntervalSec": 2,
    "config": {"type": "HTTP", "httpHealthCheck": {"requestPath": "/health"}},
}


def gateway_cluster(
    implementation: str | None = None,
    observed: str | None = None,
    source: str = "Existing",
) -> InferenceCluster:
    """The worked example's cluster with a declared and/or observed gateway implementation."""
    wire = cluster().to_wire()
    if implementation is not None:
        wire["spec"]["gateway"] = {"implementation": implementation}
    if observed is not None:
        wire["status"]["gateway"]["implementation"] = observed
    if source == "GKE":
        wire["spec"]["cluster"] = {"source": "GKE", "gke": {"region": "us-central1"}}
    return InferenceCluster.model_validate(wire)


def _duration_s(value: str) -> float:
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    for unit in ("ms", "h", "m", "s"):
        if value.endswith(unit):
            return float(value[: -len(unit)]) * units[unit]
    raise AssertionError(value)


def _check_against_limits(objs: dict[str, Any], limits: Limits) -> None:
    route = objs["model-route"]
    validate_manifest(route)
    pool = objs["inference-pool"]["metadata"]["name"]
    for rule in route["spec"]["rules"]:
        if not limits.accepts_route_timeouts:
            assert "timeouts" not in rule, "the implementation refuses the route"
            continue
        request = rule.get("timeouts", {}).get("request")
        if limits.default_timeout_s is not None:
            assert request is not None, "the default timeout would cut long generations"
        if request is not None:
            assert request == DISABLED or _duration_s(request) >= LONG_GENERATION_S
    policies = {m["kind"]: m for m in objs.values() if m["kind"] in POLICY_KINDS}
    for manifest in policies.values():
        validate_manifest(manifest)
    expected = {
        limits.backend_timeout_policy,
        limits.picker_tls_policy,
        limits.health_check_policy,
    } - {None}
    assert set(policies) == expected
    if limits.backend_timeout_policy == "GCPBackendPolicy":
        policy = policies["GCPBackendPolicy"]
        assert policy["spec"]["targetRef"] == {
            "group": "inference.networking.k8s.io",
            "kind": "InferencePool",
            "name": pool,
        }
        assert policy["spec"]["default"]["timeoutSec"] >= LONG_GENERATION_S
    if limits.health_check_policy == "HealthCheckPolicy":
        _check_health_check(policies["HealthCheckPolicy"], objs)
    if limits.picker_tls_policy == "DestinationRule":
        rule = policies["DestinationRule"]
        epp = objs["epp-service"]["metadata"]
        assert rule["spec"]["host"] == f"{epp['name']}.{epp['namespace']}.svc.cluster.local"
        assert rule["spec"]["trafficPolicy"]["tls"] == {
            "mode": "SIMPLE",
            "insecureSkipVerify": True,
        }


def _check_health_check(policy: dict[str, Any], objs: dict[str, Any]) -> None:
    """The chart's health check, on the pool's target port, asking what the kubelet asks."""
    pool = objs["inference-pool"]
    assert policy["spec"]["targetRef"] == {
        "group": "inference.networking.k8s.io",
        "kind": "InferencePool",
        "name": pool["metadata"]["name"],
    }
    check = policy["spec"]["default"]
    port = check["config"]["httpHealthCheck"].pop("port")
    assert check == CHART_HEALTH_CHECK
    assert port == pool["spec"]["targetPorts"][0]["number"]
    # A pod the kubelet counts ready is one the load balancer counts healthy: the engine
    # container on the target port has a readiness probe of the same path on that port.
    selected = pool["spec"]["selector"]["matchLabels"]
    probes = [
        (probe["httpGet"]["path"], ports[probe["httpGet"]["port"]])
        for manifest in objs.values()
        for pod in _pod_templates(manifest)
        if selected.items() <= pod["metadata"].get("labels", {}).items()
        for container in pod["spec"]["containers"]
        if (probe := container.get("readinessProbe", {})).get("httpGet")
        for ports in [{p.get("name"): p["containerPort"] for p in container.get("ports", [])}]
        if ports.get(probe["httpGet"]["port"]) == port
    ]
    assert probes, "no serving container on the pool's target port"
    assert {path for path, _ in probes} == {check["config"]["httpHealthCheck"]["requestPath"]}


def _pod_templates(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates of a composed workload, whichever its kind."""
    spec = manifest.get("spec", {})
    if manifest["kind"] == "Deployment":
        return [spec["template"]]
    if manifest["kind"] == "LeaderWorkerSet":
        lws = spec["leaderWorkerTemplate"]
        return [lws[t] for t in ("leaderTemplate", "workerTemplate") if t in lws]
    if manifest["kind"] == "PodCliqueSet":
        return [
            {"metadata": {"labels": c.get("labels", {})}, "spec": c["spec"]["podSpec"]}
            for c in spec["template"]["cliques"]
        ]
    return []


@pytest.mark.parametrize("implementation", sorted(LIMITS))
def test_routes_respect_each_implementations_documented_limits(implementation: str) -> None:
    composed = compose_replica(replica(), gateway_cluster(implementation))
    _check_against_limits(manifests(composed), LIMITS[implementation])
    for obj in composed.objects:
        assert obj.object["spec"]["providerConfigRef"]["name"] == PC
        validate_delivered(obj.object)


@pytest.mark.parametrize("implementation", sorted(LIMITS))
def test_a_user_picker_is_reached_the_same_way(implementation: str) -> None:
    rep = replica(
        serving={"mode": "Unified", "router": "EndpointPicker", "endpointPicker": user_picker()}
    )
    _check_against_limits(
        manifests(compose_replica(rep, gateway_cluster(implementation))), LIMITS[implementation]
    )


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_pool_on_gke_is_health_checked_on_its_target_port(shape: str) -> None:
    rep, clu = SHAPES[shape]
    wire = clu.to_wire()
    wire["spec"]["gateway"] = {"implementation": "GKE"}
    objs = manifests(compose_replica(rep, InferenceCluster.model_validate(wire)))
    checks = [m for m in objs.values() if m["kind"] == "HealthCheckPolicy"]
    assert len(checks) == 1
    _check_health_check(checks[0], objs)
    validate_manifest(checks[0])


def test_without_an_implementation_the_route_has_gateway_api_defaults() -> None:
    objs = manifests(compose_replica(replica(), cluster()))
    assert objs["model-route"]["spec"]["rules"][0]["timeouts"] == {"request": DISABLED}
    assert not [m for m in objs.values() if m["kind"] in POLICY_KINDS]


def test_policies_follow_the_route_and_the_picker_in_order() -> None:
    gke = [o.key for o in compose_replica(replica(), gateway_cluster("GKE")).objects]
    route = gke.index("model-route")
    assert gke[route + 1 : route + 3] == ["gateway-backend-policy", "gateway-health-check"]
    istio = [o.key for o in compose_replica(replica(), gateway_cluster("Istio")).objects]
    assert istio[-2:] == ["epp-service", "epp-destination-rule"]


@pytest.mark.parametrize(
    ("declared", "observed", "source", "effective"),
    [
        (None, None, "Existing", None),
        (None, None, "GKE", "GKE"),
        (None, "Istio", "GKE", "Istio"),  # what the cluster runs beats its source
        ("Kgateway", "Istio", "Existing", "Kgateway"),  # the platform's word beats both
        ("EnvoyGateway", None, "GKE", "EnvoyGateway"),
    ],
)
def test_which_implementation_a_cluster_routes_for(
    declared: str | None, observed: str | None, source: str, effective: str | None
) -> None:
    assert gateway_implementation(gateway_cluster(declared, observed, source)) == effective


@pytest.mark.parametrize("implementation", sorted(LIMITS))
def test_controller_names_map_back_to_their_implementation(implementation: str) -> None:
    assert implementation_for_controller(LIMITS[implementation].controller_name) == implementation


def test_an_unknown_controller_is_no_implementation() -> None:
    assert implementation_for_controller("example.com/gateway-controller") is None
