"""ModelService: the weight table, the route, the conditions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import InferenceGateway, ModelEndpoint, ModelService
from modelplane.composition.weights import MAX_WEIGHT, backend_weights
from modelplane.naming import backend_service_name, front_gateway_name
from modelplane.reconcile.endpoint import converged, reconcile_endpoint
from modelplane.reconcile.gateway import reconcile_gateway
from modelplane.reconcile.service import reconcile_service
from modelplane.runtime.wire import observed_object

from .schemas import validate_manifest

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
    name: str, url: str, labels: dict[str, str], rewrite: str | None = None
) -> ModelEndpoint:
    """An endpoint whose backend is observed (its status published)."""
    spec: dict[str, Any] = {"url": url}
    if rewrite:
        spec["rewritePath"] = rewrite
    model = ModelEndpoint.model_validate(
        {"metadata": {"name": name, "namespace": "ml-team", "labels": labels}, "spec": spec}
    )
    result = reconcile_endpoint(model, converged(reconcile_endpoint(model, ())))
    return model.model_copy(update={"status": result.status})


def waiting(name: str, labels: dict[str, str]) -> ModelEndpoint:
    """An endpoint whose backend is not observed yet."""
    return ModelEndpoint.model_validate(
        {
            "metadata": {"name": name, "namespace": "ml-team", "labels": labels},
            "spec": {"url": "http://10.0.0.9/v1"},
        }
    )


def service(*entries: tuple[dict[str, str], int]) -> ModelService:
    return ModelService.model_validate(
        {
            "metadata": {"name": "qwen", "namespace": "ml-team"},
            "spec": {
                "endpoints": [{"selector": {"matchLabels": m}, "weight": w} for m, w in entries]
            },
        }
    )


GATEWAY = InferenceGateway.model_validate(
    {"metadata": {"name": "default"}, "status": {"address": "198.51.100.20"}}
)
ACCEPTED = observed_object(
    {
        "status": {
            "parents": [
                {
                    "parentRef": {"name": front_gateway_name("default")},
                    "conditions": [{"type": "Accepted", "status": "True"}],
                }
            ]
        }
    }
)
REPLICA = {"modelplane.ai/deployment": "qwen"}
HOSTED = {"provider": "hosted"}


def replicas(n: int) -> list[ModelEndpoint]:
    return [
        endpoint(
            f"qwen-{i}",
            f"http://203.0.113.{i + 1}/ml-team/qwen-{i}/v1",
            REPLICA,
            f"/ml-team/qwen-{i}/",
        )
        for i in range(n)
    ]


def test_replica_and_hosted_provider_behind_one_address() -> None:
    hosted = endpoint("hosted", "https://api.openai.com/v1", HOSTED)
    result = reconcile_service(
        service((REPLICA, 80), (HOSTED, 20)), [*replicas(3), hosted], GATEWAY, ACCEPTED
    )
    [route] = [o.object for o in result.objects]
    validate_manifest(route)
    [rule] = route["spec"]["rules"]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/ml-team/qwen/"}}]
    refs = [(r["name"], r["port"], r["weight"]) for r in rule["backendRefs"]]
    assert refs == [
        (backend_service_name("qwen-0"), 80, 27),
        (backend_service_name("qwen-1"), 80, 27),
        (backend_service_name("qwen-2"), 80, 26),
        (backend_service_name("hosted"), 443, 20),
    ]
    rewrites = [r["filters"][0]["urlRewrite"] for r in rule["backendRefs"]]
    assert rewrites[0] == {
        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/ml-team/qwen-0/"}
    }
    # The hosted provider sees its own Host and its own root: /v1/chat/completions.
    assert rewrites[3] == {
        "hostname": "api.openai.com",
        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"},
    }
    assert result.status.address == "http://198.51.100.20/ml-team/qwen"
    assert [(c.type, c.status, c.reason, c.message) for c in result.conditions] == [
        ("EndpointsResolved", "True", "Resolved", "Matched 4 endpoint(s); 0 waiting for backend"),
        (
            "RoutingReady",
            "True",
            "RouteConfigured",
            "Routing 4 backend(s) at http://198.51.100.20/ml-team/qwen",
        ),
    ]
    assert result.ready


def test_long_generations_are_not_cut_by_a_default_timeout() -> None:
    # `request: 0s` disables the request timeout where the gateway implements route
    # timeouts (Envoy Gateway's default is 15 s); Traefik v3.7 lists HTTPRouteRequestTimeout
    # unsupported (gateway-api conformance/reports/v1.5/traefik-traefik/
    # experimental-v3.7.0-default-report.yaml) and its provider never reads the field
    # (traefik pkg/provider/kubernetes/gateway @ v3.7.9), so the route is accepted there.
    result = reconcile_service(service((REPLICA, 1)), replicas(2), GATEWAY, ACCEPTED)
    [route] = [o.object for o in result.objects]
    validate_manifest(route)  # the Gateway API HTTPRoute schema accepts the Duration
    [rule] = route["spec"]["rules"]
    # Only `request`: 0s there lifts the whole-request limit (backendRequest may not exceed it).
    assert rule["timeouts"] == {"request": "0s"}


def test_an_endpoint_matched_twice_belongs_to_the_first_entry() -> None:
    both = endpoint("both", "http://10.0.0.1/v1", {**REPLICA, **HOSTED})
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
        {
            "status": {
                "parents": [
                    {
                        "parentRef": {"name": "other"},
                        "conditions": [{"type": "Accepted", "status": "True"}],
                    }
                ]
            }
        },
        {
            "status": {
                "parents": [
                    {
                        "parentRef": {"name": front_gateway_name("default")},
                        "conditions": [{"type": "Accepted", "status": "False"}],
                    }
                ]
            }
        },
    ],
)
def test_route_not_yet_accepted(observed: dict[str, Any] | None) -> None:
    route = observed_object(observed) if observed is not None else None
    result = reconcile_service(service((REPLICA, 1)), replicas(1), GATEWAY, route)
    assert len(result.objects) == 1  # composed, waiting for the Gateway
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
            "spec": {"url": "http://10.0.0.1/v1"},
            "status": {"routing": {"backendName": "x-backend"}},
        }
    )
    result = reconcile_service(service((REPLICA, 1)), [other], GATEWAY, ACCEPTED)
    assert result.backends == []


def test_at_most_sixteen_backends_with_a_warning() -> None:
    result = reconcile_service(service((REPLICA, 1)), replicas(18), GATEWAY, ACCEPTED)
    [route] = [o.object for o in result.objects]
    validate_manifest(route)
    assert len(route["spec"]["rules"][0]["backendRefs"]) == 16
    assert any("the last 2 are not routed" in e.message for e in result.events)


def test_gateway_is_ready_once_programmed_with_an_address() -> None:
    gateway = InferenceGateway.model_validate(
        {"metadata": {"name": "default"}, "spec": {"port": 8080}}
    )
    pending = reconcile_gateway(gateway, None)
    assert [(c.status, c.reason) for c in pending.conditions] == [("False", "Provisioning")]
    assert pending.status.address is None
    observed = {
        "status": {
            "addresses": [{"value": "198.51.100.20"}],
            "conditions": [{"type": "Programmed", "status": "True"}],
        }
    }
    ready = reconcile_gateway(gateway, observed_object(observed))
    assert ready.status.address == "198.51.100.20:8080" and ready.ready
    [composed] = ready.objects
    listener = composed.object["spec"]["listeners"][0]
    assert (listener["port"], listener["allowedRoutes"]) == (8080, {"namespaces": {"from": "All"}})
