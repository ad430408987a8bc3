"""The ModelService reconcile: select endpoints, weigh them per tier, compose one route.

Pure: the service, the ModelEndpoints of its namespace, the InferenceGateway and the
observed route in; the desired AIGatewayRoute and its BackendTrafficPolicy, the status,
conditions and events out. ``modelplane render`` and the Crossplane function run this
same code (docs/composition.md, "One address per model").
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from modelplane.api import InferenceCluster, InferenceGateway, ModelEndpoint, ModelService
from modelplane.api.meta import condition, holds
from modelplane.api.modelservice import CallerAPI, ModelServiceStatus, ServiceRoute
from modelplane.composition.backend import (
    AI_GATEWAY_API,
    EG_API,
    ai_service_backend,
    backend_security_policy,
    eg_backend,
    parse_origin,
)
from modelplane.composition.clustertls import (
    GatewayTLSBackend,
    backend_tls,
    ca_config_map,
    ca_digest,
    gateway_tls_backend,
)
from modelplane.composition.delivery import deliver
from modelplane.composition.frontdoor import (
    composes,
    namespace_object,
    placement_problem,
    secret_check,
    serves,
)
from modelplane.composition.observed import NOTHING_OBSERVED, ObservedObject
from modelplane.composition.replica import provider_config_for
from modelplane.composition.types import ComposedObject, Json
from modelplane.composition.weights import backend_weights
from modelplane.events import Event
from modelplane.naming import (
    AI_SERVICE_BACKEND_KEY,
    BACKEND_KEY,
    BACKEND_SECURITY_POLICY_KEY,
    CLUSTER_LABEL,
    MODEL_HEADER,
    SERVICE_LABEL,
    SERVICE_RETRY_KEY,
    SERVICE_ROUTE_KEY,
    SYSTEM_NAMESPACE,
    USAGE_COSTS,
    dns_name,
    front_gateway_name,
    service_model,
    service_route_name,
)
from modelplane.reconcile.result import ReconcileResult
from modelplane.scheduling.rollout import draining_since

ENDPOINTS_RESOLVED = "EndpointsResolved"
ROUTING_READY = "RoutingReady"
# The HTTPRoute Envoy AI Gateway generates holds at most 16 backendRefs per rule (HTTPRoute
# v1 schema, rules[].backendRefs), so a route keeps 16 whatever the AIGatewayRoute allows.
MAX_BACKENDS = 16
# Failover (envoyproxy/ai-gateway site/docs/capabilities/traffic/provider-fallback.md @
# v1.1.0; envoyproxy/gateway internal/xds/translator/route.go buildRetryPolicy @ v1.8.3):
# a retry goes to another host (previous_hosts predicate, always set) and, with
# numAttemptsPerPriority 1, to the next priority after one attempt. Triggers replace Envoy
# Gateway's default retry_on; httpStatusCodes count only with retriable-status-codes.
# 503 and 429 (overloaded or rate-limited backends) are retried; 500 (the model failed on
# this input) is not. gateway-error covers 502/504, and a per-try idle timeout.
RETRY_TRIGGERS = ("connect-failure", "gateway-error", "retriable-status-codes")
RETRY_STATUS_CODES = (429, 503)
# Four attempts at most, as the upstream Modelplane docs describe ("up to four times").
RETRY_COUNT = 3
RETRY_BASE_INTERVAL = "100ms"
RETRY_MAX_INTERVAL = "1s"
# A service composes about 70 kB per serving gateway at the most entries and longest names
# (tests/runtime/test_answer_bounds.py); 32 keep its answer near 2.3 MB, under Crossplane's
# 4 MiB receive limit (docs/scale.md, "The largest answer").
MAX_SERVING_GATEWAYS = 32
# The CA bundles (spec.gateway.tls.caCertificate of the inference clusters) one route trusts: each
# is a ConfigMap per serving gateway, up to 8 KiB, so 4 add at most about 1.2 MB over 32
# gateways and keep the answer under 4 MiB (docs/scale.md, "The largest answer").
MAX_TRUST_BUNDLES = 4
# The resource key of a route's CA bundle ConfigMap on a gateway: the prefix and its digest.
CA_KEY_PREFIX = "ca-"


# Which caller APIs reach a backend of each schema (envoyproxy/ai-gateway
# internal/endpointspec/endpointspec.go @ v1.1.0, GetTranslator): the Messages endpoint
# translates to an OpenAI backend (NewAnthropicToChatCompletionOpenAITranslator) and passes
# through to an Anthropic one; chat completions has no translator to Anthropic and fails
# ("unsupported API schema").
CALLERS: dict[str, tuple[CallerAPI, ...]] = {
    "OpenAI": ("OpenAI", "Anthropic"),
    "Anthropic": ("Anthropic",),
}
# Outlier ejection (Envoy Gateway BackendTrafficPolicy healthCheck.passive, envoyproxy/gateway
# api/v1alpha1/healthcheck_types.go and internal/xds/translator/cluster.go
# buildXdsOutlierDetection @ v1.8.3): an endpoint answering 5xx, or failing to connect or
# time out, five times in a row is taken out for 30 s (more each time it recurs); a tier whose
# endpoints are all out hands its traffic to the next. Envoy counts only 5xx responses
# (Http::CodeUtility::is5xx in source/common/upstream/outlier_detection_impl.cc): a 429 resets
# the count, so a rate-limited provider is retried elsewhere but never ejected.
EJECT_AFTER_5XX = 5
EJECT_AFTER_GATEWAY_ERRORS = 3
EJECTION_INTERVAL = "3s"
BASE_EJECTION_TIME = "30s"
# Envoy bounds ejection over the route's whole cluster, every tier together, counting before
# it ejects: at most half, so a lone primary may go and its backup take over, but not all.
MAX_EJECTION_PERCENT = 50


@dataclass(frozen=True, slots=True)
class Backend:
    """One routable endpoint: its AIServiceBackend, the model it expects and its tier."""

    endpoint: str
    service: str  # the AIServiceBackend's name
    model: str
    priority: int
    schema: str = "OpenAI"
    entry: str | None = None


@dataclass(frozen=True, slots=True)
class ServiceResult(ReconcileResult[ModelServiceStatus]):
    """What one ModelService reconcile returns; ready: endpoints resolved, the route accepted."""

    backends: list[tuple[Backend, int]] = field(default_factory=list)  # with weights


def backend_of(
    endpoint: ModelEndpoint, priority: int = 0, entry: str | None = None
) -> Backend | None:
    """The routable backend of ``endpoint``, or None while its backend is not published."""
    routing = endpoint.status.routing if endpoint.status else None
    name = routing.backend_name if routing else None
    if not name:
        return None
    return Backend(
        endpoint=endpoint.metadata.name or "",
        service=name,
        model=endpoint.spec.model,
        priority=priority,
        schema=endpoint.spec.api.schema_,
        entry=entry,
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
    service: ModelService, per_entry: Sequence[Sequence[ModelEndpoint]]
) -> tuple[list[tuple[Backend, int]], int, int]:
    """The backends with their weights, the matched-ready count and the waiting count, from
    the endpoints each entry selects (``_assign``).

    Weights are computed per priority tier: entries of one priority share its traffic by
    weight; a lower tier takes traffic only as the tiers above it fail. Backends come in
    tier order, entry order within a tier.
    """
    entries = service.spec.endpoints
    ready: list[list[Backend]] = []
    waiting = 0
    for entry, matched in zip(entries, per_entry, strict=True):
        backends = [
            b for b in (backend_of(e, entry.priority, entry.name) for e in matched) if b is not None
        ]
        waiting += len(matched) - len(backends)
        ready.append(backends)
    pairs: list[tuple[Backend, int]] = []
    for tier in sorted({entry.priority for entry in entries}):
        members = [i for i, entry in enumerate(entries) if entry.priority == tier]
        weights = backend_weights([(entries[i].weight, len(ready[i])) for i in members])
        for i, ws in zip(members, weights, strict=True):
            pairs.extend(zip(ready[i], ws, strict=True))
    return pairs, sum(len(b) for b in ready), waiting


def ai_gateway_route(
    service: ModelService, gateway: InferenceGateway, backends: Sequence[tuple[Backend, int]]
) -> Json:
    """The AIGatewayRoute: requests whose model is ``<ns>/<name>``, to every backend.

    Each backendRef renames the model to what its backend expects (modelNameOverride) and
    carries its weight and failover tier (priority; envoyproxy/ai-gateway
    api/v1beta1/ai_gateway_route.go @ v1.1.0). ``timeouts.request`` bounds the whole request,
    retries included; ``streamIdleTimeout`` is the per-try idle timeout.
    """
    namespace = service.metadata.namespace or "default"
    name = service.metadata.name or ""
    timeouts = service.spec.timeouts
    refs: list[Json] = [
        {
            "name": backend.service,
            "modelNameOverride": backend.model,
            "weight": weight,
            "priority": backend.priority,
        }
        for backend, weight in backends
    ]
    return {
        "apiVersion": AI_GATEWAY_API,
        "kind": "AIGatewayRoute",
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
                        {
                            "headers": [
                                {
                                    "type": "Exact",
                                    "name": MODEL_HEADER,
                                    "value": service_model(namespace, name),
                                }
                            ]
                        }
                    ],
                    "backendRefs": refs,
                    "timeouts": {"request": timeouts.request},
                    "streamIdleTimeout": timeouts.idle,
                }
            ],
            # Token usage into the request's dynamic metadata, for the gateway's access log.
            "llmRequestCosts": [{"metadataKey": key, "type": kind} for key, kind, _ in USAGE_COSTS],
        },
    }


def retry_policy(service: ModelService) -> Json:
    """The BackendTrafficPolicy on the HTTPRoute Envoy AI Gateway generates for the route.

    The generated HTTPRoute has the AIGatewayRoute's name and namespace
    (envoyproxy/ai-gateway site/docs/capabilities/traffic/provider-fallback.md @ v1.1.0).
    """
    namespace = service.metadata.namespace or "default"
    name = service.metadata.name or ""
    route = service_route_name(name)
    return {
        "apiVersion": EG_API,
        "kind": "BackendTrafficPolicy",
        "metadata": {"name": route, "namespace": namespace, "labels": {SERVICE_LABEL: name}},
        "spec": {
            "targetRefs": [
                {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": route}
            ],
            "retry": {
                "numRetries": RETRY_COUNT,
                "numAttemptsPerPriority": 1,
                "retryOn": {
                    "triggers": list(RETRY_TRIGGERS),
                    "httpStatusCodes": list(RETRY_STATUS_CODES),
                },
                "perRetry": {
                    "backOff": {
                        "baseInterval": RETRY_BASE_INTERVAL,
                        "maxInterval": RETRY_MAX_INTERVAL,
                    }
                },
            },
            "healthCheck": {
                "passive": {
                    "consecutive5XxErrors": EJECT_AFTER_5XX,
                    "consecutiveGatewayErrors": EJECT_AFTER_GATEWAY_ERRORS,
                    "interval": EJECTION_INTERVAL,
                    "baseEjectionTime": BASE_EJECTION_TIME,
                    "maxEjectionPercent": MAX_EJECTION_PERCENT,
                }
            },
        },
    }


def route_accepted(route: ObservedObject | None) -> bool:
    """The observed AIGatewayRoute reports Accepted=True (Envoy AI Gateway's controller
    writes Accepted or NotAccepted; api/v1beta1/status.go @ v1.1.0)."""
    return route is not None and holds(route.conditions, "Accepted")


def policy_accepted(policy: ObservedObject | None) -> bool:
    """The observed BackendSecurityPolicy reports Accepted=True: Envoy AI Gateway's controller
    has it in its cache, so every filter config it builds for a route naming the backend
    carries the key (internal/controller/backend_security_policy.go Reconcile writes Accepted
    or NotAccepted; internal/controller/gateway.go backendWithMaybeBSP reads the same cache,
    @ v1.1.0)."""
    return policy is not None and holds(policy.conditions, "Accepted")


def held_for_key(
    gateways: Sequence[InferenceGateway],
    pairs: Sequence[tuple[Backend, int]],
    endpoints: Mapping[str, ModelEndpoint],
    observed: Mapping[str, ObservedObject],
) -> dict[str, frozenset[str]]:
    """Per gateway name, the keyed endpoints its route leaves out: those whose
    BackendSecurityPolicy there is not observed Accepted yet.

    Left out, not weighted 0: the extproc knows a backend only from a route naming it, and
    names it by backend and position (internal/internalapi PerRouteRuleRefBackendName @
    v1.1.0), so until its filter config, built after the policy, reaches the proxy, a request
    sent there fails in the gateway ("unknown backend", internal/extproc/server.go
    setBackend) instead of reaching the provider without its key. A weight-0 backendRef
    would already be in that config, keyless, when the weight rises.
    """
    out: dict[str, frozenset[str]] = {}
    for gateway in gateways:
        held = frozenset(
            backend.endpoint
            for backend, _ in pairs
            if _credential(endpoints.get(backend.endpoint)) is not None
            and not policy_accepted(
                observed.get(
                    gateway_key(gateway, f"{BACKEND_SECURITY_POLICY_KEY}-{backend.endpoint}"),
                    NOTHING_OBSERVED,
                ).remote
            )
        )
        if held:
            out[gateway.metadata.name or ""] = held
    return out


def service_routes(
    service: ModelService,
    per_entry: Sequence[Sequence[ModelEndpoint]],
    routed: Sequence[tuple[Backend, int]],
    accepted: bool,
) -> tuple[ServiceRoute, ...]:
    """Every endpoint the entries select (``per_entry``, from ``_assign``), tier by tier, with
    its weight in the route."""
    weights = {backend.endpoint: weight for backend, weight in routed}
    entries = service.spec.endpoints
    out: list[ServiceRoute] = []
    for tier in sorted({entry.priority for entry in entries}):
        for entry, matched in zip(entries, per_entry, strict=True):
            if entry.priority != tier:
                continue
            for endpoint in matched:
                name = endpoint.metadata.name or ""
                out.append(
                    ServiceRoute(
                        endpoint=name,
                        entry=entry.name,
                        priority=entry.priority,
                        weight=weights.get(name, 0),
                        ready=accepted and name in weights,
                        callers=CALLERS[endpoint.spec.api.schema_],
                    )
                )
    return tuple(out)


def openai_reach(backends: Sequence[tuple[Backend, int]]) -> str:
    """What an OpenAI caller reaches, when some routed backend speaks only Anthropic's API."""
    deaf = [b.endpoint for b, _ in backends if "OpenAI" not in CALLERS[b.schema]]
    if not deaf:
        return ""
    return (
        f"; OpenAI callers reach {len(backends) - len(deaf)} of {len(backends)} "
        f"(Anthropic only: {', '.join(deaf)}; an OpenAI request routed there fails)"
    )


def reconcile_service(
    service: ModelService,
    endpoints: Sequence[ModelEndpoint],
    gateways: Sequence[InferenceGateway],
    clusters: Mapping[str, InferenceCluster],
    sanitize_problem: str | None,
    observed: Mapping[str, ObservedObject],
) -> ServiceResult:
    """Resolve the entries, compose the route on every gateway serving the service, report
    EndpointsResolved and RoutingReady.

    ``gateways`` is every InferenceGateway, ``clusters`` the InferenceClusters by name,
    ``sanitize_problem`` why Secrets may not be copied to a cluster (None: they may),
    ``observed`` the service's observed Objects by resource key.
    """
    namespace = service.metadata.namespace or "default"
    ident = f"ModelService {namespace}/{service.metadata.name}"
    per_entry = _assign(service, endpoints)
    pairs, matched, waiting = weighted_backends(service, per_entry)
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
    by_name = {
        e.metadata.name or "": e
        for e in endpoints
        if (e.metadata.namespace or "default") == namespace
    }
    pairs, untrusted = within_trust_bound(pairs, by_name, clusters)
    if untrusted:
        events.append(
            Event(
                "Warning",
                f"{ident}: its endpoints' clusters name more than {MAX_TRUST_BUNDLES} CA bundles "
                f"(spec.gateway.tls.caCertificate); not routed: {', '.join(untrusted)}",
            )
        )
    summary = f"Matched {matched} endpoint(s); {waiting} waiting for backend"
    if pairs:
        resolved = condition(ENDPOINTS_RESOLVED, True, "Resolved", summary)
    else:
        resolved = condition(ENDPOINTS_RESOLVED, False, "NoEndpoints", summary)
        events.append(
            Event("Warning", f"{ident}: no ready ModelEndpoint matches an entry; {summary}")
        )
    serving = serving_gateways(service, gateways, clusters, observed.keys())
    if len(serving) > MAX_SERVING_GATEWAYS:
        dropped = ", ".join(g.metadata.name or "" for g in serving[MAX_SERVING_GATEWAYS:])
        events.append(
            Event(
                "Warning",
                f"{ident}: {len(serving)} InferenceGateways select it; it is routed on the "
                f"first {MAX_SERVING_GATEWAYS} by name, not on {dropped}",
            )
        )
        serving = serving[:MAX_SERVING_GATEWAYS]
    first = next((g for g in serving if gateway_address(g)), None)
    reach = openai_reach(pairs)
    if reach:
        events.append(Event("Warning", f"{ident}: routing {len(pairs)} backend(s){reach}"))
    accepted = 0
    for gateway in serving:
        seen = observed.get(gateway_key(gateway, SERVICE_ROUTE_KEY))
        if route_accepted(seen.remote if seen is not None else None) and gateway_address(gateway):
            accepted += 1
    every_accepted = bool(serving) and accepted == len(serving)
    held = held_for_key(serving, pairs, by_name, observed)
    # An endpoint some gateway's route leaves out reads weight 0, not ready.
    waiting_key: frozenset[str] = frozenset().union(*held.values())
    routed = [(b, w) for b, w in pairs if b.endpoint not in waiting_key] if serving else []
    status = ModelServiceStatus(
        address=service_address(first) if first is not None else None,
        model=service_model(namespace, service.metadata.name or ""),
        routes=service_routes(service, per_entry, routed, every_accepted),
    )
    if not serving:
        routing = condition(
            ROUTING_READY,
            False,
            "WaitingForGateway",
            "No InferenceGateway serves this ModelService (none placed on a cluster whose "
            "spec.serviceSelector matches its labels)",
        )
        return ServiceResult([], status, [resolved, routing], events)
    kept = draining_backends(service, endpoints)
    keyed = [
        b
        for b in [*(b for b, _ in pairs), *kept]
        if _credential(by_name.get(b.endpoint)) is not None
    ]
    if keyed and sanitize_problem is not None:
        routing = condition(
            ROUTING_READY,
            False,
            "SecretsNotSanitized",
            f"endpoint {keyed[0].endpoint}: its credential Secret on the gateway's cluster is "
            f"observed only when provider-kubernetes redacts Secrets from Object status: "
            f"{sanitize_problem}",
        )
        return ServiceResult([], status, [resolved, routing], events)
    objects: list[ComposedObject] = []
    for gateway in serving if pairs or kept else ():
        config = provider_config_for(clusters[gateway.spec.cluster_name])
        assert config is not None  # serving_gateways keeps placed gateways only
        left_out = held.get(gateway.metadata.name or "", frozenset())
        objects.extend(
            deliver_route(service, gateway, pairs, by_name, config, kept, left_out, clusters)
        )
    if not pairs:
        routing = condition(ROUTING_READY, False, "Configuring", "No backend to route to yet")
        return ServiceResult(objects, status, [resolved, routing], events)
    names = ", ".join(g.metadata.name or "" for g in serving)
    plain = plaintext_reach(pairs, by_name)
    # A keyed backend's Secret must be on every serving gateway's cluster (never copied).
    absent = [
        (g, key.removeprefix(gateway_key(g, "credential-")))
        for g in serving
        for key in (o.key for o in objects)
        if key.startswith(gateway_key(g, "credential-"))
        and not observed.get(key, NOTHING_OBSERVED).reported
    ]
    if absent:
        g, secret = absent[0]
        routing = condition(
            ROUTING_READY,
            False,
            "SecretNotFound",
            f"a routed ModelEndpoint's spec.credential.apiKey.secretRef: no Secret "
            f"{namespace}/{secret} on "
            f"InferenceCluster {g.spec.cluster_name} (InferenceGateway {g.metadata.name}); "
            "put it there, the control plane never copies a key",
        )
        return ServiceResult(objects, status, [resolved, routing], events, pairs)
    if held:
        g = next(g for g in serving if (g.metadata.name or "") in held)
        pending = sorted(held[g.metadata.name or ""])
        routing = condition(
            ROUTING_READY,
            False,
            "WaitingForKeyPolicy",
            f"endpoint {pending[0]}: its BackendSecurityPolicy on InferenceCluster "
            f"{g.spec.cluster_name} (InferenceGateway {g.metadata.name}) is not Accepted yet; "
            f"the route there leaves it out until it is, so no request reaches the provider "
            f"without its key ({len(waiting_key)} keyed endpoint(s) waiting)",
        )
        return ServiceResult(objects, status, [resolved, routing], events, pairs)
    if every_accepted and status.address:
        routing = condition(
            ROUTING_READY,
            True,
            "RouteConfigured",
            f"Routing {len(pairs)} backend(s) for model {status.model} at {status.address} "
            f"(InferenceGateway {names}){reach}{plain}",
        )
    else:
        routing = condition(
            ROUTING_READY,
            False,
            "Configuring",
            f"Waiting for the Gateway to accept the route ({accepted} of {len(serving)}: "
            f"{names}){plain}",
        )
    return ServiceResult(objects, status, [resolved, routing], events, pairs)


# The delivery step: what a service composes on each gateway's cluster, as provider-kubernetes
# Objects in its own namespace on the control plane (docs/crossplane.md, "The inference gateway").


def serving_gateways(
    service: ModelService,
    gateways: Sequence[InferenceGateway],
    clusters: Mapping[str, InferenceCluster],
    observed: Collection[str] = (),
) -> list[InferenceGateway]:
    """The gateways serving ``service``, by name: placed on their cluster, selecting it.

    A gateway whose cluster only turned NotReady keeps the route the service composed there
    (its Namespace Object among ``observed``, the service's observed resource keys).
    """
    return [
        g
        for g in sorted(gateways, key=lambda g: g.metadata.name or "")
        if serves(g, service.metadata.labels)
        and composes(
            placement_problem(g, clusters.get(g.spec.cluster_name), gateways),
            gateway_key(g, "namespace") in observed,
        )
    ]


def service_address(gateway: InferenceGateway) -> str | None:
    """The scheme and address a caller of ``gateway`` uses: https with TLS."""
    address = gateway_address(gateway)
    if not address:
        return None
    return f"{'https' if gateway.spec.tls is not None else 'http'}://{address}"


def gateway_key(gateway: InferenceGateway, key: str) -> str:
    """The resource key of ``key`` composed for ``gateway``."""
    return f"{gateway.metadata.name}-{key}"


def draining_backends(service: ModelService, endpoints: Sequence[ModelEndpoint]) -> list[Backend]:
    """The backends of draining endpoints an entry matches: no route names them, but they are
    kept until the endpoint is gone, so a route still served from before never names a
    deleted backend (docs/reconcile.md, drain before delete)."""
    namespace = service.metadata.namespace or "default"
    out: list[Backend] = []
    for endpoint in sorted(endpoints, key=lambda e: e.metadata.name or ""):
        if (endpoint.metadata.namespace or "default") != namespace:
            continue
        if draining_since(endpoint.metadata.annotations) is None:
            continue
        labels = endpoint.metadata.labels or {}
        if not any(_matches(e.selector.match_labels, labels) for e in service.spec.endpoints):
            continue
        backend = backend_of(endpoint)
        if backend is not None:
            out.append(backend)
    return out


def _cluster_tls(
    endpoint: ModelEndpoint | None, clusters: Mapping[str, InferenceCluster]
) -> GatewayTLSBackend | None:
    if endpoint is None:
        return None
    return gateway_tls_backend(endpoint, parse_origin(endpoint.spec.origin), clusters)


def within_trust_bound(
    pairs: Sequence[tuple[Backend, int]],
    endpoints: Mapping[str, ModelEndpoint],
    clusters: Mapping[str, InferenceCluster],
) -> tuple[list[tuple[Backend, int]], list[str]]:
    """The backends whose CA bundles, in route order, are among the first ``MAX_TRUST_BUNDLES``
    distinct ones, and the endpoints left out."""
    bundles: set[str] = set()
    kept: list[tuple[Backend, int]] = []
    left: list[str] = []
    for backend, weight in pairs:
        tls = _cluster_tls(endpoints.get(backend.endpoint), clusters)
        ca = tls.ca if tls is not None else None
        if ca is not None and ca not in bundles:
            if len(bundles) == MAX_TRUST_BUNDLES:
                left.append(backend.endpoint)
                continue
            bundles.add(ca)
        kept.append((backend, weight))
    return kept, left


def plaintext_reach(
    pairs: Sequence[tuple[Backend, int]], endpoints: Mapping[str, ModelEndpoint]
) -> str:
    """What of the route is reached over plain HTTP (an ``http`` origin): a replica on a cluster
    without ``spec.gateway.tls``, or an endpoint written so; empty when every routed endpoint is
    reached over TLS (docs/crossplane.md, "TLS to the inference clusters' gateways")."""
    plain: list[str] = []
    for backend, _ in pairs:
        endpoint = endpoints.get(backend.endpoint)
        if endpoint is None or parse_origin(endpoint.spec.origin).scheme != "http":
            continue
        cluster = (endpoint.metadata.labels or {}).get(CLUSTER_LABEL)
        plain.append(
            f"{backend.endpoint} (InferenceCluster {cluster})" if cluster else backend.endpoint
        )
    if not plain:
        return ""
    shown = ", ".join(plain[:5]) + (", ..." if len(plain) > 5 else "")
    return f"; {len(plain)} of {len(pairs)} reached over plain HTTP: {shown}"


def _trusted(ca: str | None, bundles: dict[str, str], service: str) -> str | None:
    """The ConfigMap trusting ``ca`` (None: the system's CAs), added to ``bundles`` while they
    are fewer than ``MAX_TRUST_BUNDLES``."""
    if ca is None:
        return None
    if ca not in bundles and len(bundles) < MAX_TRUST_BUNDLES:
        bundles[ca] = dns_name(service, CA_KEY_PREFIX + ca_digest(ca))
    return bundles.get(ca)


def _credential(endpoint: ModelEndpoint | None) -> str | None:
    if endpoint is None or endpoint.spec.credential is None:
        return None
    return endpoint.spec.credential.api_key.secret_ref.name


def deliver_route(
    service: ModelService,
    gateway: InferenceGateway,
    pairs: Sequence[tuple[Backend, int]],
    endpoints: Mapping[str, ModelEndpoint],
    provider_config: tuple[str, str],
    kept: Sequence[Backend] = (),
    held: Collection[str] = (),
    clusters: Mapping[str, InferenceCluster] | None = None,
) -> list[ComposedObject]:
    """The Objects putting the service's route on ``gateway``'s cluster, in its namespace there:
    the Namespace (created, never deleted), each backend's Backend, AIServiceBackend and (keyed)
    BackendSecurityPolicy with an observe-only check of its Secret there, the AIGatewayRoute and
    its retry policy.

    ``kept`` are backends composed but not routed (draining endpoints), and so are the
    backends of the endpoints named in ``held`` (keyed, their policy not Accepted yet:
    ``held_for_key``). Backends are named per service, so two services sharing an endpoint
    never manage one object. An endpoint on an inference cluster's HTTPS gateway
    (``clusters``, composition/clustertls.py) gets a Backend at the cluster's address
    verifying its certificate's name, trusting the cluster's CA bundle, which a ConfigMap
    per bundle carries.
    """
    namespace = service.metadata.namespace or "default"
    name = service.metadata.name or ""

    def wrap(key: str, manifest: Json) -> ComposedObject:
        full = gateway_key(gateway, key)
        return ComposedObject(
            full, deliver(dns_name(name, full), namespace, full, manifest, provider_config)
        )

    ns_key = gateway_key(gateway, "namespace")
    out = [
        ComposedObject(
            ns_key,
            namespace_object(dns_name(name, ns_key), namespace, ns_key, namespace, provider_config),
        )
    ]
    renamed: list[tuple[Backend, int]] = []
    checked: set[str] = set()
    bundles: dict[str, str] = {}  # CA bundle -> its ConfigMap's name
    for index, (backend, weight) in enumerate([*pairs, *((b, 0) for b in kept)]):
        endpoint = endpoints[backend.endpoint]
        remote = dns_name(name, backend.service)
        if index < len(pairs) and backend.endpoint not in held:
            renamed.append((replace(backend, service=remote), weight))
        spec = endpoint.spec
        target = parse_origin(spec.origin)
        cluster_tls = gateway_tls_backend(endpoint, target, clusters or {})
        tls: Json | None = None
        if cluster_tls is not None:
            target = cluster_tls.target
            # None past the bound (only a draining backend, the routed ones are within it): it
            # is not routed, and with the system's CAs it fails verification, never plaintext.
            tls = backend_tls(cluster_tls, _trusted(cluster_tls.ca, bundles, name))
        out.append(
            wrap(
                f"{BACKEND_KEY}-{backend.endpoint}",
                eg_backend(namespace, backend.endpoint, target, remote, tls),
            )
        )
        out.append(
            wrap(
                f"{AI_SERVICE_BACKEND_KEY}-{backend.endpoint}",
                ai_service_backend(
                    namespace, backend.endpoint, spec.api.schema_, spec.api.prefix, remote
                ),
            )
        )
        secret = _credential(endpoint)
        if secret is None:
            continue
        # The key's Secret is the operator's to put in the namespace on the gateway's cluster
        # (never copied: composition/frontdoor.py); observed there, and named by the policy.
        # Its Accepted lets the endpoint into the route here (held_for_key): its Object is
        # watched (delivery.watched), so it is seen when written, not at the next poll.
        out.append(
            wrap(
                f"{BACKEND_SECURITY_POLICY_KEY}-{backend.endpoint}",
                backend_security_policy(
                    namespace, backend.endpoint, spec.api.schema_, secret, remote
                ),
            )
        )
        if secret not in checked:
            checked.add(secret)
            key = gateway_key(gateway, f"credential-{secret}")
            check = secret_check(
                dns_name(name, key), namespace, key, (namespace, secret), provider_config
            )
            out.append(ComposedObject(key, check))
    for ca, config_map in bundles.items():
        manifest = ca_config_map(namespace, config_map, ca, {SERVICE_LABEL: name})
        out.append(wrap(f"{CA_KEY_PREFIX}{ca_digest(ca)}", manifest))
    if renamed:
        out.append(wrap(SERVICE_ROUTE_KEY, ai_gateway_route(service, gateway, renamed)))
        out.append(wrap(SERVICE_RETRY_KEY, retry_policy(service)))
    return out
