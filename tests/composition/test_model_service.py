"""ModelService: the weight table, the route, the conditions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import InferenceGateway, ModelEndpoint, ModelService
from modelplane.composition.weights import MAX_WEIGHT, backend_weights
from modelplane.naming import (
    SERVICE_ROUTE_KEY,
    backend_service_name,
    dns_name,
    front_gateway_name,
    service_route_name,
)
from modelplane.reconcile.endpoint import reconcile_endpoint
from modelplane.reconcile.service import ServiceResult, gateway_key
from modelplane.runtime.wire import observed_object
from tests.builders import inference_gateway

from .routes import ACCEPTED, reconcile_service, route_and_policy

# (entries as (weight, ready endpoints), expected weights per entry)
WEIGHT_TABLE = [
    ("1 entry over 3 endpoints", [(1, 3)], [[1, 1, 1]]),
    ("80/20 over 3 and 1", [(80, 3), (20, 1)], [[27, 27, 26], [20]]),
    ("an entry with no ready endpoint is dropped", [(80, 3), (20, 0)], [[27, 27, 26], []]),
    ("scaled so every endpoint gets 1", [(1, 1), (1, 4)], [[4], [1, 1, 1, 1]]),
    ("divided by the GCD", [(50, 1), (50, 1)], [[1], [1]]),
    ("overflow rescaled, floor 1", [(1_000_000, 1), (1, 5)], [[1_000_000], [1, 1, 1, 1, 1]]),
    (
        "overflow rescaled proportionally",
        [(999_999, 1), (1_000_000, 3)],
        [[999_999], [333_334, 333_333, 333_333]],
    ),
    ("nothing ready", [(3, 0)], [[]]),
]


@pytest.mark.parametrize(
    ("case", "entries", "expected"), WEIGHT_TABLE, ids=[c[0] for c in WEIGHT_TABLE]
)
def test_weight_table(case: str, entries: list[tuple[int, int]], expected: list[list[int]]) -> None:
    assert backend_weights(entries) == expected


@given(st.lists(st.tuples(st.integers(1, MAX_WEIGHT), st.integers(0, 16)), min_size=1, max_size=6))
def test_every_ready_endpoint_gets_a_valid_weight(entries: list[tuple[int, int]]) -> None:
    weights = backend_weights(entries)
    assert [len(w) for w in weights] == [n for _, n in entries]
    flat = [v for w in weights for v in w]
    assert all(1 <= v <= MAX_WEIGHT for v in flat)
    for values in weights:  # as even as possible within an entry
        if values:
            assert max(values) - min(values) <= 1


@given(st.integers(1, 1000), st.integers(1, 1000), st.integers(1, 8), st.integers(1, 8))
def test_scaling_a_deployment_keeps_its_share(w1: int, w2: int, n1: int, n2: int) -> None:
    weights = backend_weights([(w1, n1), (w2, n2)])
    share = sum(weights[0]) / (sum(weights[0]) + sum(weights[1]))
    assert share == pytest.approx(w1 / (w1 + w2), abs=0.01)


def endpoint(
    name: str, origin: str, labels: dict[str, str], model: str = "Qwen/Qwen3-8B"
) -> ModelEndpoint:
    """An endpoint whose backend is observed (its status published)."""
    spec: dict[str, Any] = {"origin": origin, "model": model}
    resource = ModelEndpoint.model_validate(
        {"metadata": {"name": name, "namespace": "ml-team", "labels": labels}, "spec": spec}
    )
    result = reconcile_endpoint(resource)
    return resource.model_copy(update={"status": result.status})


def waiting(name: str, labels: dict[str, str]) -> ModelEndpoint:
    """An endpoint whose backend is not observed yet."""
    return ModelEndpoint.model_validate(
        {
            "metadata": {"name": name, "namespace": "ml-team", "labels": labels},
            "spec": {"origin": "http://10.0.0.9", "model": "Qwen/Qwen3-8B"},
        }
    )


def service(
    *entries: tuple[dict[str, str], int] | tuple[dict[str, str], int, int],
    timeouts: dict[str, str] | None = None,
) -> ModelService:
    """A service of entries (labels, weight[, priority])."""
    spec: dict[str, Any] = {
        "endpoints": [
            {"selector": {"matchLabels": e[0]}, "weight": e[1], "priority": (e[2:] or (0,))[0]}
            for e in entries
        ]
    }
    if timeouts is not None:
        spec["timeouts"] = timeouts
    return ModelService.model_validate(
        {"metadata": {"name": "qwen", "namespace": "ml-team"}, "spec": spec}
    )


GATEWAY = InferenceGateway.model_validate(inference_gateway(address="198.51.100.20"))
REPLICA = {"modelplane.ai/deployment": "qwen"}
HOSTED = {"provider": "hosted"}


def routed(endpoint: str) -> str:
    """The name of the service qwen's AIServiceBackend for ``endpoint`` on a gateway's cluster."""
    return dns_name("qwen", backend_service_name(endpoint))


def replicas(n: int) -> list[ModelEndpoint]:
    return [endpoint(f"qwen-{i}", f"http://203.0.113.{i + 1}", REPLICA) for i in range(n)]


def composed(result: ServiceResult) -> tuple[dict[str, Any], dict[str, Any]]:
    """The AIGatewayRoute and the BackendTrafficPolicy, each valid against its released CRD."""
    return route_and_policy(result, GATEWAY)


def test_replica_and_hosted_provider_behind_one_address() -> None:
    hosted = endpoint("hosted", "https://api.openai.com", HOSTED, model="gpt-4o-mini")
    result = reconcile_service(
        service((REPLICA, 80), (HOSTED, 20)), [*replicas(3), hosted], GATEWAY, ACCEPTED
    )
    route, _ = composed(result)
    [rule] = route["spec"]["rules"]
    # A caller names the model <namespace>/<name>; Envoy AI Gateway copies the body's
    # model into x-ai-eg-model before routing (api/v1beta1/shared_types.go @ v1.1.0).
    assert rule["matches"] == [
        {"headers": [{"type": "Exact", "name": "x-ai-eg-model", "value": "ml-team/qwen"}]}
    ]
    refs = [
        (r["name"], r["weight"], r["priority"], r["modelNameOverride"]) for r in rule["backendRefs"]
    ]
    # Each backend gets the model name it expects, not the caller's.
    assert refs == [
        (routed("qwen-0"), 27, 0, "Qwen/Qwen3-8B"),
        (routed("qwen-1"), 27, 0, "Qwen/Qwen3-8B"),
        (routed("qwen-2"), 26, 0, "Qwen/Qwen3-8B"),
        (routed("hosted"), 20, 0, "gpt-4o-mini"),
    ]
    assert route["spec"]["parentRefs"][0]["name"] == front_gateway_name("default")
    assert result.status.address == "http://198.51.100.20"
    assert result.status.model == "ml-team/qwen"
    assert [(c.type, c.status, c.reason, c.message) for c in result.conditions] == [
        ("EndpointsResolved", "True", "Resolved", "Matched 4 endpoint(s); 0 waiting for backend"),
        (
            "RoutingReady",
            "True",
            "RouteConfigured",
            "Routing 4 backend(s) for model ml-team/qwen at http://198.51.100.20 "
            # Said, never silent: which routed endpoints are reached in plaintext.
            "(InferenceGateway default); 3 of 4 reached over plain HTTP: qwen-0, qwen-1, qwen-2",
        ),
    ]
    assert result.ready


def test_priority_tiers_weigh_separately_and_fail_over_in_order() -> None:
    hosted = endpoint("hosted", "https://api.openai.com", HOSTED, model="gpt-4o-mini")
    result = reconcile_service(
        service((HOSTED, 1, 1), (REPLICA, 1, 0)), [*replicas(2), hosted], GATEWAY, ACCEPTED
    )
    route, policy = composed(result)
    refs = [
        (r["name"], r["weight"], r["priority"]) for r in route["spec"]["rules"][0]["backendRefs"]
    ]
    # Tier 0 first, whatever the entry order; each tier's weights are its own.
    assert refs == [
        (routed("qwen-0"), 1, 0),
        (routed("qwen-1"), 1, 0),
        (routed("hosted"), 1, 1),
    ]
    # A retry moves to the next tier after one attempt; 429 and 503 are retried, 500 is not.
    retry = policy["spec"]["retry"]
    assert retry["numAttemptsPerPriority"] == 1 and retry["numRetries"] == 3
    assert retry["retryOn"]["httpStatusCodes"] == [429, 503]
    assert policy["spec"]["targetRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "HTTPRoute",
            "name": service_route_name("qwen"),
        }
    ]


def test_long_generations_get_a_generous_default_timeout_and_can_lift_it() -> None:
    # Envoy Gateway's default request timeout is 15 s; a service defaults to 300 s for the
    # whole request and 60 s of silence per try (AIGatewayRoute timeouts and
    # streamIdleTimeout, envoyproxy/ai-gateway api/v1beta1/ai_gateway_route.go @ v1.1.0).
    route, _ = composed(reconcile_service(service((REPLICA, 1)), replicas(2), GATEWAY, ACCEPTED))
    [rule] = route["spec"]["rules"]
    assert (rule["timeouts"], rule["streamIdleTimeout"]) == ({"request": "300s"}, "60s")
    lifted = service((REPLICA, 1), timeouts={"request": "0s", "idle": "5m"})
    route, _ = composed(reconcile_service(lifted, replicas(2), GATEWAY, ACCEPTED))
    [rule] = route["spec"]["rules"]
    assert (rule["timeouts"], rule["streamIdleTimeout"]) == ({"request": "0s"}, "5m")


def test_an_endpoint_matched_twice_belongs_to_the_first_entry() -> None:
    both = endpoint("both", "http://10.0.0.1", {**REPLICA, **HOSTED})
    result = reconcile_service(service((REPLICA, 1), (HOSTED, 1)), [both], GATEWAY, ACCEPTED)
    assert [(b.endpoint, w) for b, w in result.backends] == [("both", 1)]
    result = reconcile_service(
        service((HOSTED, 3), (REPLICA, 1)), [both, *replicas(1)], GATEWAY, ACCEPTED
    )
    assert [(b.endpoint, w) for b, w in result.backends] == [("both", 3), ("qwen-0", 1)]


def test_waiting_endpoints_are_counted_and_not_routed() -> None:
    result = reconcile_service(
        service((REPLICA, 1)), [*replicas(1), waiting("late", REPLICA)], GATEWAY, ACCEPTED
    )
    assert result.conditions[0].message == "Matched 1 endpoint(s); 1 waiting for backend"
    assert [b.endpoint for b, _ in result.backends] == ["qwen-0"]


def test_no_endpoints() -> None:
    result = reconcile_service(service((REPLICA, 1)), [waiting("late", REPLICA)], GATEWAY, ACCEPTED)
    assert result.objects == []
    assert [(c.type, c.status, c.reason) for c in result.conditions] == [
        ("EndpointsResolved", "False", "NoEndpoints"),
        ("RoutingReady", "False", "Configuring"),
    ]
    assert [e.severity for e in result.events] == ["Warning"]


def test_gateway_missing() -> None:
    result = reconcile_service(service((REPLICA, 1)), replicas(2), None, None)
    assert result.objects == [] and result.status.address is None
    assert [(c.type, c.status, c.reason) for c in result.conditions][1] == (
        "RoutingReady",
        "False",
        "WaitingForGateway",
    )


@pytest.mark.parametrize(
    "observed",
    [
        None,
        {"status": {}},
        {"status": {"conditions": [{"type": "Accepted", "status": "False"}]}},
        {"status": {"conditions": [{"type": "NotAccepted", "status": "True"}]}},
    ],
)
def test_route_not_yet_accepted(observed: dict[str, Any] | None) -> None:
    route = observed_object(observed) if observed is not None else None
    result = reconcile_service(service((REPLICA, 1)), replicas(1), GATEWAY, route)
    # The route and its retries are composed, waiting for the controller.
    assert gateway_key(GATEWAY, SERVICE_ROUTE_KEY) in {o.key for o in result.objects}
    assert [(c.type, c.status, c.reason) for c in result.conditions][1] == (
        "RoutingReady",
        "False",
        "Configuring",
    )
    assert not result.ready


def test_endpoints_of_other_namespaces_are_not_selected() -> None:
    other = ModelEndpoint.model_validate(
        {
            "metadata": {"name": "x", "namespace": "other", "labels": REPLICA},
            "spec": {"origin": "http://10.0.0.1", "model": "Qwen/Qwen3-8B"},
            "status": {"routing": {"backendName": "x-backend"}},
        }
    )
    result = reconcile_service(service((REPLICA, 1)), [other], GATEWAY, ACCEPTED)
    assert result.backends == []


def test_at_most_sixteen_backends_with_a_warning() -> None:
    result = reconcile_service(service((REPLICA, 1)), replicas(18), GATEWAY, ACCEPTED)
    route, _ = composed(result)
    assert len(route["spec"]["rules"][0]["backendRefs"]) == 16
    assert any("the last 2 are not routed" in e.message for e in result.events)
