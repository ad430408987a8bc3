"""Which gateways serve a ModelService, and what it composes on each gateway's cluster.

Upstream Modelplane v0.5 (RedbackThomson/modelplane docs/content/models/model-service.md @
565b345696b9814e72660fe86f579e83acb3288a, "Gateways and routes"): a gateway serves the services
its ``serviceSelector`` matches, every service when it has none, and the routing is rendered
onto each serving gateway's cluster. The route needs its backends beside it (Envoy AI Gateway
v1.1.0: an AIGatewayRoute's backendRefs name AIServiceBackends in its namespace), so they are
delivered there too; a hosted provider's key must be in the service's namespace there, observed
by an observe-only Object and never copied (patchesFrom would write the value into the Object's
spec: crossplane-contrib/provider-kubernetes#223, open at v1.2.1).
"""

from __future__ import annotations

from typing import Any

from modelplane.api import InferenceCluster, InferenceGateway, ModelEndpoint, ModelService
from modelplane.api.meta import condition
from modelplane.composition.namespaces import NAMESPACE_MANAGEMENT_POLICIES
from modelplane.composition.observed import ObservedObject
from modelplane.naming import SERVICE_ROUTE_KEY, backend_service_name
from modelplane.reconcile.endpoint import reconcile_endpoint
from modelplane.reconcile.service import (
    MAX_SERVING_GATEWAYS,
    ServiceResult,
    gateway_key,
    reconcile_service,
)
from tests.builders import front_door_cluster, inference_gateway

from .schemas import validate_delivered

CLUSTERS = {
    name: InferenceCluster.model_validate(front_door_cluster(name, provider_config=f"{name}-cfg"))
    for name in ("us", "eu")
}


def _gateway(name: str, cluster: str, **spec: Any) -> InferenceGateway:
    return InferenceGateway.model_validate(
        inference_gateway(name, cluster, address=f"{name}.example.com", **spec)
    )


def _endpoint(name: str, credential: str | None = None) -> ModelEndpoint:
    spec: dict[str, Any] = {"origin": "https://api.example.com", "model": "m"}
    if credential is not None:
        spec["credential"] = {"apiKey": {"secretRef": {"name": credential}}}
    endpoint = ModelEndpoint.model_validate(
        {"metadata": {"name": name, "namespace": "ml-team", "labels": {"m": "q"}}, "spec": spec}
    )
    return endpoint.model_copy(update={"status": reconcile_endpoint(endpoint).status})


def _service(name: str = "qwen", labels: dict[str, str] | None = None) -> ModelService:
    return ModelService.model_validate(
        {
            "metadata": {"name": name, "namespace": "ml-team", "labels": labels or {}},
            "spec": {"endpoints": [{"selector": {"matchLabels": {"m": "q"}}}]},
        }
    )


def _run(
    service: ModelService,
    gateways: list[InferenceGateway],
    endpoints: list[ModelEndpoint] | None = None,
    sanitize: str | None = None,
) -> ServiceResult:
    return reconcile_service(
        service, endpoints or [_endpoint("e")], gateways, CLUSTERS, sanitize, {}
    )


def _clusters_of(result: ServiceResult) -> dict[str, set[str]]:
    """Per provider config, the kinds delivered through it."""
    out: dict[str, set[str]] = {}
    for o in result.objects:
        config = o.object["spec"]["providerConfigRef"]["name"]
        out.setdefault(config, set()).add(o.object["spec"]["forProvider"]["manifest"]["kind"])
    return out


def test_a_gateway_without_selector_serves_every_service_on_its_cluster() -> None:
    result = _run(_service(), [_gateway("us", "us")])
    assert _clusters_of(result) == {
        "us-cfg": {
            "Namespace",
            "Backend",
            "AIServiceBackend",
            "AIGatewayRoute",
            "BackendTrafficPolicy",
        }
    }
    for o in result.objects:
        validate_delivered(o.object)
        # Objects live in the service's namespace on the control plane (a namespaced XR
        # composes into its own), their remote objects in the same namespace on the cluster.
        assert o.object["metadata"]["namespace"] == "ml-team"
        manifest = o.object["spec"]["forProvider"]["manifest"]
        assert manifest["metadata"].get("namespace", "ml-team") == "ml-team"
    [namespace] = [
        o for o in result.objects if o.key == gateway_key(_gateway("us", "us"), "namespace")
    ]
    # Created, never deleted: other services (and replicas) may share it.
    assert namespace.object["spec"]["managementPolicies"] == list(NAMESPACE_MANAGEMENT_POLICIES)


def test_service_selector_picks_the_gateways_that_serve_a_service() -> None:
    eu = _gateway("eu", "eu", serviceSelector={"matchLabels": {"region": "eu"}})
    us = _gateway("us", "us", serviceSelector={"matchLabels": {"region": "us"}})
    both = [eu, us]
    assert set(_clusters_of(_run(_service(labels={"region": "eu"}), both))) == {"eu-cfg"}
    assert set(_clusters_of(_run(_service(labels={"region": "us"}), both))) == {"us-cfg"}
    unlabelled = _run(_service(), both)
    assert unlabelled.objects == []
    assert [c.reason for c in unlabelled.conditions] == ["Resolved", "WaitingForGateway"]
    # Without a selector a gateway serves every service: the route goes to both clusters, and
    # the address is the first gateway's by name.
    open_eu, open_us = _gateway("eu", "eu"), _gateway("us", "us")
    result = _run(_service(), [open_us, open_eu])
    assert set(_clusters_of(result)) == {"eu-cfg", "us-cfg"}
    assert result.status.address == "http://eu.example.com"


def test_a_gateway_not_placed_serves_nothing() -> None:
    first = _gateway("a", "us")
    second = _gateway("b", "us")  # the same cluster: refused, ClusterAlreadyHasGateway
    missing = _gateway("c", "nowhere")
    result = _run(_service(), [first, second, missing])
    routes = [o.key for o in result.objects if o.key.endswith(SERVICE_ROUTE_KEY)]
    assert routes == [gateway_key(first, SERVICE_ROUTE_KEY)]


def test_a_tls_gateway_publishes_an_https_address() -> None:
    gateway = _gateway("us", "us", tls={"certificateRefs": [{"name": "c"}]})
    assert _run(_service(), [gateway]).status.address == "https://us.example.com"


def test_a_hosted_providers_key_is_observed_on_the_cluster_never_copied() -> None:
    gateway = _gateway("us", "us")
    endpoints = [_endpoint("e", credential="provider-key")]
    result = _run(_service(), [gateway], endpoints)
    by_kind = {
        o.object["spec"]["forProvider"]["manifest"]["kind"]: o.object for o in result.objects
    }
    check = by_kind["Secret"]
    assert check["spec"]["managementPolicies"] == ["Observe"]
    assert "references" not in check["spec"]
    assert check["spec"]["forProvider"]["manifest"]["metadata"] == {
        "name": "provider-key",
        "namespace": "ml-team",
    }
    policy = by_kind["BackendSecurityPolicy"]["spec"]["forProvider"]["manifest"]
    assert policy["spec"]["apiKey"]["secretRef"] == {"name": "provider-key", "namespace": "ml-team"}
    for o in result.objects:
        validate_delivered(o.object)
    # Not routed as ready until the Secret is found there.
    [_, routing] = result.conditions
    assert routing.reason == "SecretNotFound"
    assert "no Secret ml-team/provider-key on InferenceCluster us" in routing.message
    found = {
        gateway_key(gateway, "credential-provider-key"): ObservedObject(reported=True),
        gateway_key(gateway, "backend-security-policy-e"): ObservedObject(
            remote=ObservedObject(conditions=(condition("Accepted", True, ""),))
        ),
        gateway_key(gateway, SERVICE_ROUTE_KEY): ObservedObject(
            remote=ObservedObject(conditions=(condition("Accepted", True, ""),))
        ),
    }
    ready = reconcile_service(_service(), endpoints, [gateway], CLUSTERS, None, found)
    assert ready.ready


def test_a_keyed_backend_is_routed_on_each_gateway_once_its_policy_there_is_accepted() -> None:
    """Per gateway: the policy on one cluster says nothing of the other's (Envoy AI Gateway's
    controller on each writes Accepted on its own copy, api/v1beta1/status.go @ v1.1.0)."""
    us, eu = _gateway("us", "us"), _gateway("eu", "eu")
    accepted = ObservedObject(conditions=(condition("Accepted", True, ""),))
    observed = {gateway_key(g, "credential-k"): ObservedObject(reported=True) for g in (us, eu)}
    observed[gateway_key(us, "backend-security-policy-e")] = ObservedObject(remote=accepted)
    result = reconcile_service(
        _service(), [_endpoint("e", credential="k")], [us, eu], CLUSTERS, None, observed
    )
    routes = {
        o.key: o.object["spec"]["forProvider"]["manifest"]
        for o in result.objects
        if o.key.endswith(SERVICE_ROUTE_KEY)
    }
    assert list(routes) == [gateway_key(us, SERVICE_ROUTE_KEY)]  # eu: nothing to route yet
    assert result.status.routes is not None
    assert [(r.weight, r.ready) for r in result.status.routes] == [(0, False)]
    [_, routing] = result.conditions
    assert routing.reason == "WaitingForKeyPolicy"
    assert "on InferenceCluster eu (InferenceGateway eu)" in routing.message


def test_a_key_is_not_observed_unless_the_provider_redacts_secrets() -> None:
    keyed = [_endpoint("e", credential="provider-key")]
    result = _run(_service(), [_gateway("us", "us")], keyed, sanitize="no Provider x")
    assert result.objects == []
    [_, routing] = result.conditions
    assert routing.reason == "SecretsNotSanitized" and "no Provider x" in routing.message
    # A keyless service does not depend on it.
    assert _run(_service(), [_gateway("us", "us")], sanitize="no Provider x").objects


def test_two_services_sharing_an_endpoint_never_manage_one_object() -> None:
    gateways = [_gateway("us", "us")]
    endpoints = [_endpoint("e", credential="k")]

    def remote_names(service: str) -> set[tuple[str, str]]:
        result = _run(_service(service), gateways, endpoints)
        return {
            (m["kind"], m["metadata"]["name"])
            for m in (o.object["spec"]["forProvider"]["manifest"] for o in result.objects)
            if m["kind"] not in ("Namespace", "Secret")  # the user's, shared, only observed
        }

    assert remote_names("a").isdisjoint(remote_names("b"))
    assert all(name != backend_service_name("e") for _, name in remote_names("a"))


def test_a_route_on_a_cluster_turning_not_ready_is_kept() -> None:
    not_ready = {
        **CLUSTERS,
        "us": InferenceCluster.model_validate(
            front_door_cluster("us", provider_config="us-cfg", ready=False)
        ),
    }
    gateway = _gateway("us", "us")

    def run(observed: dict[str, ObservedObject]) -> ServiceResult:
        return reconcile_service(_service(), [_endpoint("e")], [gateway], not_ready, None, observed)

    assert run({}).objects == []  # never placed: nothing composed
    placed = {gateway_key(gateway, "namespace"): ObservedObject()}
    assert gateway_key(gateway, SERVICE_ROUTE_KEY) in {o.key for o in run(placed).objects}


def test_a_service_is_routed_on_at_most_32_gateways_with_a_warning() -> None:
    names = [f"g{i:02d}" for i in range(MAX_SERVING_GATEWAYS + 1)]
    clusters = {
        n: InferenceCluster.model_validate(front_door_cluster(n, provider_config=f"{n}-cfg"))
        for n in names
    }
    gateways = [_gateway(n, n) for n in names]
    result = reconcile_service(_service(), [_endpoint("e")], gateways, clusters, None, {})
    routes = {o.key for o in result.objects if o.key.endswith(SERVICE_ROUTE_KEY)}
    assert len(routes) == MAX_SERVING_GATEWAYS
    assert gateway_key(gateways[-1], SERVICE_ROUTE_KEY) not in routes
    [warning] = [e for e in result.events if "InferenceGateways select it" in e.message]
    assert warning.severity == "Warning" and warning.message.endswith(f"not on {names[-1]}")
