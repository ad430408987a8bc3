"""The ModelService reconcile: select endpoints, weigh them, compose one HTTPRoute.

Pure: the service, the ModelEndpoints of its namespace, the InferenceGateway and the
observed route in; the desired HTTPRoute, the status, conditions and events out.
``modelplane render`` and the Crossplane function run this same code
(docs/composition.md, "One address per model").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from modelplane.api import InferenceGateway, ModelEndpoint, ModelService
from modelplane.api.meta import condition, holds
from modelplane.api.modelservice import ModelServiceStatus
from modelplane.composition.backend import InvalidURL, parse_target
from modelplane.composition.observed import ObservedObject
from modelplane.composition.routing import ZERO_TIMEOUT
from modelplane.composition.types import ComposedObject, Json
from modelplane.composition.weights import backend_weights
from modelplane.events import Event
from modelplane.naming import (
    SERVICE_LABEL,
    SERVICE_ROUTE_KEY,
    SYSTEM_NAMESPACE,
    front_gateway_name,
    service_prefix,
    service_route_name,
)
from modelplane.reconcile.result import ReconcileResult
from modelplane.scheduling.rollout import draining_since

ENDPOINTS_RESOLVED = "EndpointsResolved"
ROUTING_READY = "RoutingReady"
# An HTTPRoute rule holds at most 16 backendRefs (HTTPRoute v1 schema, rules[].backendRefs).
MAX_BACKENDS = 16


@dataclass(frozen=True, slots=True)
class Backend:
    """One routable endpoint: its Service, port, rewrite prefix and upstream host name."""

    endpoint: str
    service: str
    port: int
    rewrite_path: str
    hostname: str | None  # set for FQDN targets: the upstream expects its own Host


@dataclass(frozen=True, slots=True)
class ServiceResult(ReconcileResult[ModelServiceStatus]):
    """What one ModelService reconcile returns; ready: endpoints resolved, the route accepted."""

    backends: list[tuple[Backend, int]] = field(default_factory=list)  # with weights


def backend_of(endpoint: ModelEndpoint) -> Backend | None:
    """The routable backend of ``endpoint``, or None while its backend is not published."""
    routing = endpoint.status.routing if endpoint.status else None
    name = routing.backend_name if routing else None
    if not name:
        return None
    try:
        target = parse_target(endpoint.spec.url)
    except InvalidURL:
        return None
    return Backend(
        endpoint=endpoint.metadata.name or "",
        service=name,
        port=target.port,
        # A hand-written endpoint without rewritePath serves at its root (``/v1/...``).
        rewrite_path=endpoint.spec.rewrite_path or "/",
        hostname=target.host if target.address_type == "FQDN" else None,
    )


def gateway_address(gateway: InferenceGateway | None) -> str | None:
    """The front door's published address, if any."""
    return gateway.status.address if gateway and gateway.status else None


def _matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _assign(service: ModelService, endpoints: Sequence[ModelEndpoint]) -> list[list[ModelEndpoint]]:
    """The endpoints of each entry: same namespace, by name, each to its first matching entry.

    A draining endpoint (withdrawn, its backend kept until routes drop it) matches nothing.
    """
    namespace = service.metadata.namespace or "default"
    mine = sorted(
        (
            e
            for e in endpoints
            if (e.metadata.namespace or "default") == namespace
            and draining_since(e.metadata.annotations) is None
        ),
        key=lambda e: e.metadata.name or "",
    )
    entries: list[list[ModelEndpoint]] = [[] for _ in service.spec.endpoints]
    for endpoint in mine:
        labels = endpoint.metadata.labels or {}
        for i, entry in enumerate(service.spec.endpoints):
            if _matches(entry.selector.match_labels, labels):
                entries[i].append(endpoint)
                break
    return entries


def weighted_backends(
    service: ModelService, endpoints: Sequence[ModelEndpoint]
) -> tuple[list[tuple[Backend, int]], int, int]:
    """The backends with their weights, the matched-ready count and the waiting count."""
    per_entry = _assign(service, endpoints)
    ready: list[list[Backend]] = []
    waiting = 0
    for matched in per_entry:
        backends = [b for b in map(backend_of, matched) if b is not None]
        waiting += len(matched) - len(backends)
        ready.append(backends)
    weights = backend_weights(
        [(entry.weight, len(b)) for entry, b in zip(service.spec.endpoints, ready, strict=True)]
    )
    pairs = [
        (backend, weight)
        for backends, ws in zip(ready, weights, strict=True)
        for backend, weight in zip(backends, ws, strict=True)
    ]
    return pairs, sum(len(b) for b in ready), waiting


def http_route(
    service: ModelService, gateway: InferenceGateway, backends: Sequence[tuple[Backend, int]]
) -> Json:
    """The HTTPRoute: ``PathPrefix /<ns>/<name>/``, one weighted backendRef per backend."""
    namespace = service.metadata.namespace or "default"
    name = service.metadata.name or ""
    refs: list[Json] = []
    for backend, weight in backends:
        rewrite: Json = {
            "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": backend.rewrite_path}
        }
        if backend.hostname:
            rewrite = {"hostname": backend.hostname, **rewrite}
        refs.append(
            {
                "group": "",
                "kind": "Service",
                "name": backend.service,
                "port": backend.port,
                "weight": weight,
                "filters": [{"type": "URLRewrite", "urlRewrite": rewrite}],
            }
        )
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {
            "name": service_route_name(name),
            "namespace": namespace,
            "labels": {SERVICE_LABEL: name},
        },
        "spec": {
            "parentRefs": [
                {
                    "group": "gateway.networking.k8s.io",
                    "kind": "Gateway",
                    "name": front_gateway_name(gateway.metadata.name or ""),
                    "namespace": SYSTEM_NAMESPACE,
                }
            ],
            "rules": [
                {
                    "matches": [
                        {"path": {"type": "PathPrefix", "value": service_prefix(namespace, name)}}
                    ],
                    "backendRefs": refs,
                    # 0s disables a default request timeout (Envoy Gateway's 15 s) that would
                    # cut a long generation. Traefik v3.7 does not implement route timeouts
                    # (HTTPRouteRequestTimeout unsupported in its v1.5 conformance report) and
                    # ignores the field; docs/crossplane.md, "Long generations".
                    "timeouts": {"request": ZERO_TIMEOUT},
                }
            ],
        },
    }


def route_accepted(route: ObservedObject | None, gateway: InferenceGateway) -> bool:
    """The observed route's parent (our Gateway) reports Accepted=True."""
    if route is None:
        return False
    wanted = front_gateway_name(gateway.metadata.name or "")
    return any(p.gateway == wanted and holds(p.conditions, "Accepted") for p in route.parents)


def reconcile_service(
    service: ModelService,
    endpoints: Sequence[ModelEndpoint],
    gateway: InferenceGateway | None,
    observed_route: ObservedObject | None,
) -> ServiceResult:
    """Resolve the entries, compose the route, report EndpointsResolved and RoutingReady."""
    namespace = service.metadata.namespace or "default"
    ident = f"ModelService {namespace}/{service.metadata.name}"
    pairs, matched, waiting = weighted_backends(service, endpoints)
    events: list[Event] = []
    if len(pairs) > MAX_BACKENDS:
        events.append(
            Event(
                "Warning",
                f"{ident}: {len(pairs)} backends; a route holds {MAX_BACKENDS}, "
                f"the last {len(pairs) - MAX_BACKENDS} are not routed",
            )
        )
        pairs = pairs[:MAX_BACKENDS]
    summary = f"Matched {matched} endpoint(s); {waiting} waiting for backend"
    if pairs:
        resolved = condition(ENDPOINTS_RESOLVED, True, "Resolved", summary)
    else:
        resolved = condition(ENDPOINTS_RESOLVED, False, "NoEndpoints", summary)
        events.append(
            Event("Warning", f"{ident}: no ready ModelEndpoint matches an entry; {summary}")
        )
    address = gateway_address(gateway)
    status = ModelServiceStatus(
        address=f"http://{address}{service_prefix(namespace, service.metadata.name or '').rstrip('/')}"
        if address and gateway is not None
        else None
    )
    if gateway is None:
        routing = condition(
            ROUTING_READY, False, "WaitingForGateway", "No InferenceGateway named default"
        )
        return ServiceResult([], status, [resolved, routing], events)
    if not pairs:
        routing = condition(ROUTING_READY, False, "Configuring", "No backend to route to yet")
        return ServiceResult([], status, [resolved, routing], events)
    route = ComposedObject(SERVICE_ROUTE_KEY, http_route(service, gateway, pairs))
    if route_accepted(observed_route, gateway) and address:
        routing = condition(
            ROUTING_READY,
            True,
            "RouteConfigured",
            f"Routing {len(pairs)} backend(s) at {status.address}",
        )
    else:
        routing = condition(
            ROUTING_READY, False, "Configuring", "Waiting for the Gateway to accept the route"
        )
    return ServiceResult([route], status, [resolved, routing], events, pairs)
