"""What a ModelService's route does at the front door, each fact pinned to the released source.

Envoy AI Gateway v1.1.0 (envoyproxy/ai-gateway @ v1.1.0) and Envoy Gateway v1.8.3
(envoyproxy/gateway @ v1.8.3); every composed object is validated against its released CRD
(../shared/schemas/SOURCES-frontdoor.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api import InferenceGateway, ModelEndpoint, ModelService
from modelplane.composition.observed import ObservedObject
from modelplane.naming import (
    AI_GATEWAY_METADATA_NAMESPACE,
    CALLER_HEADER,
    CALLER_METADATA_KEY,
    MODEL_HEADER,
    SYSTEM_NAMESPACE,
    backend_service_name,
    dns_name,
    service_route_name,
)
from modelplane.reconcile.endpoint import reconcile_endpoint
from modelplane.reconcile.gateway import security_policy
from modelplane.reconcile.service import (
    MAX_BACKENDS,
    ServiceResult,
)
from modelplane.runtime.wire import observed_object
from modelplane.stack.components import (
    ANTHROPIC_PREFIX,
    GATEWAY_CLASS_NAME,
    USAGE_LOG_FIELDS,
    USAGE_PROXY_NAME,
    component,
    configured_objects,
)
from tests.builders import inference_gateway

from .routes import ACCEPTED, delivered, reconcile_service, route_and_policy
from .schemas import validate_manifest

NAMESPACE = "research"
GATEWAY = InferenceGateway.model_validate(inference_gateway(address="192.0.2.40"))
OWN = {"fleet": "own"}
HOSTED = {"fleet": "hosted"}


def endpoint(
    name: str,
    labels: dict[str, str],
    schema: str = "OpenAI",
    *,
    published: bool = True,
    origin: str = "https://llm.example.net",
    key: str | None = None,
) -> ModelEndpoint:
    """A ModelEndpoint speaking ``schema`` at ``origin``, with the key in Secret ``key`` if
    given; its backend observed unless ``published`` is off."""
    spec: dict[str, Any] = {
        "origin": origin,
        "api": {"schema": schema, "prefix": "/v1"},
        "model": "m-7b",
    }
    if key is not None:
        spec["credential"] = {"apiKey": {"secretRef": {"name": key}}}
    resource = ModelEndpoint.model_validate(
        {"metadata": {"name": name, "namespace": NAMESPACE, "labels": labels}, "spec": spec}
    )
    if not published:
        return resource
    result = reconcile_endpoint(resource)
    return resource.model_copy(update={"status": result.status})


def service(name: str, *entries: dict[str, Any]) -> ModelService:
    return ModelService.model_validate(
        {"metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"endpoints": list(entries)}}
    )


def entry(labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"selector": {"matchLabels": labels}, **extra}


def objects(result: ServiceResult) -> tuple[dict[str, Any], dict[str, Any]]:
    """The AIGatewayRoute and the BackendTrafficPolicy, each valid against its released CRD."""
    return route_and_policy(result, GATEWAY)


def stack_object(kind: str) -> dict[str, Any]:
    (found,) = [dict(m) for _, m in configured_objects("inference-gateway") if m["kind"] == kind]
    validate_manifest(found)
    return found


# --- Anthropic callers ------------------------------------------------------------------

# (endpoint schema, the caller APIs that reach it): envoyproxy/ai-gateway
# internal/endpointspec/endpointspec.go @ v1.1.0, GetTranslator of MessagesEndpointSpec
# (Anthropic passthrough, Anthropic to OpenAI chat completions) and of
# ChatCompletionsEndpointSpec (no case for Anthropic: "unsupported API schema").
REACH = [("OpenAI", ("OpenAI", "Anthropic")), ("Anthropic", ("Anthropic",))]


@pytest.mark.parametrize(("schema", "callers"), REACH, ids=[r[0] for r in REACH])
def test_which_callers_reach_an_endpoint_of_each_schema(
    schema: str, callers: tuple[str, ...]
) -> None:
    result = reconcile_service(
        service("chat", entry(OWN)), [endpoint("e", OWN, schema)], GATEWAY, ACCEPTED
    )
    assert result.status.routes is not None
    assert [r.callers for r in result.status.routes] == [callers]


def test_a_service_mixing_schemas_says_whom_openai_callers_reach() -> None:
    """An OpenAI request routed to an Anthropic endpoint fails; the service says so."""
    endpoints = [
        endpoint("own-a", OWN),
        endpoint("own-b", OWN),
        endpoint("claude", HOSTED, "Anthropic"),
    ]
    result = reconcile_service(
        service("chat", entry(OWN), entry(HOSTED)), endpoints, GATEWAY, ACCEPTED
    )
    objects(result)
    routing = result.conditions[1]
    assert (routing.type, routing.status) == ("RoutingReady", "True")
    assert routing.message.endswith(
        "; OpenAI callers reach 2 of 3 (Anthropic only: claude; an OpenAI request routed "
        "there fails)"
    )
    assert [e.severity for e in result.events] == ["Warning"]
    assert "Anthropic only: claude" in result.events[0].message


def test_an_openai_only_service_says_nothing_more() -> None:
    result = reconcile_service(service("chat", entry(OWN)), [endpoint("x", OWN)], GATEWAY, ACCEPTED)
    assert "OpenAI callers" not in result.conditions[1].message and result.events == []


def test_an_anthropic_only_service_reaches_no_openai_caller() -> None:
    result = reconcile_service(
        service("chat", entry(OWN)), [endpoint("x", OWN, "Anthropic")], GATEWAY, ACCEPTED
    )
    assert "; OpenAI callers reach 0 of 1 (Anthropic only: x;" in result.conditions[1].message


def test_an_anthropic_endpoint_takes_messages_at_its_prefix() -> None:
    """The AIServiceBackend's schema Anthropic with prefix /v1: the gateway posts to
    <origin>/v1/messages (api/v1beta1/shared_types.go VersionedAPISchema.Prefix, "${prefix}/
    messages" for Anthropic @ v1.1.0)."""
    result = reconcile_service(
        service("chat", entry(HOSTED)), [endpoint("claude", HOSTED, "Anthropic")], GATEWAY, ACCEPTED
    )
    composed = {m["kind"]: m for m in delivered(result).values()}
    for obj in composed.values():
        validate_manifest(obj)
    assert composed["AIServiceBackend"]["spec"]["schema"] == {"name": "Anthropic", "prefix": "/v1"}


def test_anthropic_callers_post_under_the_anthropic_prefix() -> None:
    """Envoy AI Gateway serves the Messages API at <prefix>/v1/messages (cmd/extproc/mainlib/
    main.go @ v1.1.0); the stack states the chart's default prefix /anthropic
    (manifests/charts/ai-gateway-helm/values.yaml endpointConfig.anthropic), since the extproc
    keeps one processor per path (internal/extproc/server.go Register, a map) and registers the
    Anthropic /v1/models after the OpenAI one: an empty prefix would change the OpenAI listing."""
    values = {v.path: v.value for v in component("envoy-ai-gateway").values}
    assert values["endpointConfig.anthropic"] == ANTHROPIC_PREFIX == "/anthropic"
    assert "endpointConfig.openai" not in values  # the chart's "": /v1/chat/completions


# --- Usage records ------------------------------------------------------------------------


def test_the_route_captures_token_usage_for_every_request() -> None:
    """llmRequestCosts (api/v1beta1/ai_gateway_route.go, shared_types.go LLMRequestCost @
    v1.1.0): input, output and total tokens into dynamic metadata. For a streamed chat
    completion the gateway asks the backend for usage (stream_options.include_usage,
    internal/endpointspec/endpointspec.go ChatCompletionsEndpointSpec.ParseBody) whenever a
    cost is configured, so streams are metered too."""
    route, _ = objects(
        reconcile_service(service("chat", entry(OWN)), [endpoint("e", OWN)], GATEWAY, ACCEPTED)
    )
    assert route["spec"]["llmRequestCosts"] == [
        {"metadataKey": "llm_input_token", "type": "InputToken"},
        {"metadataKey": "llm_output_token", "type": "OutputToken"},
        {"metadataKey": "llm_total_token", "type": "TotalToken"},
    ]


def test_the_gateway_logs_one_usage_record_per_request() -> None:
    """The EnvoyProxy our GatewayClass names (envoyproxy/gateway api/v1alpha1/
    envoyproxy_types.go and accesslogging_types.go @ v1.8.3; the class's parametersRef is read
    from its namespace, internal/provider/kubernetes/controller.go
    processGatewayClassParamsRef): a Route-level JSON access log to stdout."""
    proxy = stack_object("EnvoyProxy")
    gateway_class = stack_object("GatewayClass")
    assert gateway_class["metadata"]["name"] == GATEWAY_CLASS_NAME
    assert gateway_class["spec"]["parametersRef"] == {
        "group": "gateway.envoyproxy.io",
        "kind": "EnvoyProxy",
        "name": USAGE_PROXY_NAME,
        "namespace": SYSTEM_NAMESPACE,
    }
    assert proxy["metadata"] == {"name": USAGE_PROXY_NAME, "namespace": SYSTEM_NAMESPACE}
    [setting] = proxy["spec"]["telemetry"]["accessLog"]["settings"]
    # Route: once per request, its retries included (an Upstream log would write one per try).
    assert setting["type"] == "Route"
    assert setting["matches"] == ["request.headers['x-ai-eg-model'] != ''"]
    assert setting["sinks"] == [{"type": "File", "file": {"path": "/dev/stdout"}}]
    fields = setting["format"]["json"]
    assert setting["format"]["type"] == "JSON" and fields == dict(USAGE_LOG_FIELDS)
    assert {k: fields[k] for k in ("caller", "service", "status", "duration_ms")} == {
        # The copy taken before the router, not the header ("Caller identity", below).
        "caller": "%DYNAMIC_METADATA(io.envoy.ai_gateway:modelplane.caller)%",
        "service": f"%REQ({MODEL_HEADER})%",
        "status": "%RESPONSE_CODE%",
        "duration_ms": "%DURATION%",
    }
    # backend_name is set when the upstream filter picks the backend (internal/extproc/
    # processor_impl.go buildBackendDynamicMetadata @ v1.1.0): a failed request names it too.
    assert fields["endpoint"] == "%DYNAMIC_METADATA(io.envoy.ai_gateway:backend_name)%"


def test_every_token_field_logged_is_one_the_route_captures() -> None:
    route, _ = objects(
        reconcile_service(service("chat", entry(OWN)), [endpoint("e", OWN)], GATEWAY, ACCEPTED)
    )
    captured = {c["metadataKey"] for c in route["spec"]["llmRequestCosts"]}
    prefix = f"%DYNAMIC_METADATA({AI_GATEWAY_METADATA_NAMESPACE}:"
    logged = {
        value.removeprefix(prefix).removesuffix(")%")
        for value in USAGE_LOG_FIELDS.values()
        if value.startswith(prefix)
    }
    # backend_name is the filter's own and the caller the chart's mapping; every other key is
    # a cost the route configures.
    assert logged - {"backend_name", CALLER_METADATA_KEY} == captured
    fields = {k for k, v in USAGE_LOG_FIELDS.items() if v.startswith(prefix)}
    assert fields == {"caller", "endpoint", "input_tokens", "output_tokens", "total_tokens"}


# --- Caller identity ----------------------------------------------------------------------
#
# The caller's id reaches the usage record and no backend. Where each step acts in the proxy
# (envoyproxy/gateway v1.8.3, envoyproxy/ai-gateway v1.1.0):
# 1. api_key_auth sets x-modelplane-caller (forwardClientIDHeader; Envoy Gateway gives it order 6
#    and the router 310, the last, internal/xds/translator/httpfilters.go newOrderedHTTPFilter);
# 2. header_to_metadata, which the AI Gateway's extension server inserts into every listener
#    immediately before the router (internal/extensionserver/header_to_metadata.go
#    insertHeaderToMetadataFilter, called from post_translate_modify.go PostTranslateModify),
#    copies it into io.envoy.ai_gateway:<attribute> (rule OnHeaderPresent, type STRING);
# 3. the router hands the request to each try's upstream filters, among them the AI Gateway's
#    upstream ext_proc (post_translate_modify.go maybeModifyCluster), which answers with the
#    backend's headerMutation.remove (internal/extproc/processor_impl.go ProcessRequestHeaders,
#    internal/headermutator Mutate: removed on every try, never restored on a retry);
# 4. the access log, at the end of the stream, reads the copy from step 2.


def _mapping(value: str) -> dict[str, str]:
    """A "header:attribute,..." value as Envoy AI Gateway parses it (internal/internalapi/
    internalapi.go ParseRequestHeaderAttributeMapping @ v1.1.0: pairs split on ",", each on
    its first ":")."""
    return dict(pair.strip().split(":", 1) for pair in value.split(","))


def test_the_usage_record_reads_the_caller_copied_before_the_router() -> None:
    """The chart's controller.logRequestHeaderAttributes (manifests/charts/ai-gateway-helm/
    values.yaml, null by default; templates/deployment.yaml passes it as
    --logRequestHeaderAttributes, cmd/controller/main.go @ v1.1.0) maps the header the
    SecurityPolicy forwards onto the key the usage record reads."""
    values = {v.path: v.value for v in component("envoy-ai-gateway").values}
    mapping = _mapping(str(values["controller.logRequestHeaderAttributes"]))
    assert mapping == {CALLER_HEADER: CALLER_METADATA_KEY}
    policy = security_policy(GATEWAY, ("callers",))
    assert policy["spec"]["apiKeyAuth"]["forwardClientIDHeader"] == CALLER_HEADER
    # The extension server writes under the AI Gateway's namespace (api/v1beta1/shared_types.go
    # AIGatewayFilterMetadataNamespace), which %DYNAMIC_METADATA(namespace:key)% reads.
    assert USAGE_LOG_FIELDS["caller"] == (
        f"%DYNAMIC_METADATA({AI_GATEWAY_METADATA_NAMESPACE}:{mapping[CALLER_HEADER]})%"
    )
    # No field reads the header itself: every backend removes it, and the removal acts on the
    # request's own header map (envoy source/common/router/router.h downstreamHeaders).
    assert not any(CALLER_HEADER in v.lower() for v in USAGE_LOG_FIELDS.values())


# Every kind of endpoint a service routes to: (id, the endpoint).
# A replica's endpoint is plain HTTP to its cluster gateway's address, as a deployment
# composes it (composition/endpoint.py).
EVERY_BACKEND = [
    ("replica", endpoint("replica", OWN, origin="http://192.0.2.7")),
    ("hosted", endpoint("hosted", HOSTED)),
    ("keyed-openai", endpoint("openai", HOSTED, key="provider-key")),
    ("keyed-anthropic", endpoint("claude", HOSTED, "Anthropic", key="provider-key")),
]


@pytest.mark.parametrize("given", [e for _, e in EVERY_BACKEND], ids=[i for i, _ in EVERY_BACKEND])
def test_no_backend_receives_the_callers_identity(given: ModelEndpoint) -> None:
    """AIServiceBackend.spec.headerMutation (api/v1beta1/ai_service_backend.go @ v1.1.0:
    "applied to the request before sending it to the backend"), on the AIServiceBackend of
    every endpoint a service routes to, ours and hosted, keyed or not."""
    labels = dict(given.metadata.labels or {})
    result = reconcile_service(service("chat", entry(labels)), [given], GATEWAY, ACCEPTED)
    manifests = delivered(result).values()
    [ai_backend] = [m for m in manifests if m["kind"] == "AIServiceBackend"]
    validate_manifest(ai_backend)
    # The controller lower-cases the names it hands the extproc (internal/controller/gateway.go
    # headerMutationToFilterAPI), whose mutator looks each up in the request's header map.
    assert ai_backend["spec"]["headerMutation"] == {"remove": ["x-modelplane-caller"]}


# --- Keyed backends wait for their key policy ----------------------------------------------
#
# Envoy AI Gateway's controller writes Accepted (or NotAccepted) on a BackendSecurityPolicy once
# it has reconciled it (internal/controller/backend_security_policy.go Reconcile,
# api/v1beta1/status.go @ v1.1.0); its gateway controller reads the policy of each backend a
# route names from the same cache when it builds the extproc's filter config
# (internal/controller/gateway.go backendWithMaybeBSP). A route naming the backend only after
# Accepted is observed therefore never gets a keyless entry for it.

KEYED = endpoint("openai", HOSTED, key="provider-key")
POLICY_KEY = "default-backend-security-policy-openai"
# The key's Secret found on the gateway's cluster ("Secrets on the cluster").
KEY_FOUND = {"default-credential-provider-key": ObservedObject(reported=True)}
ACCEPTED_POLICY = observed_object(
    {"status": {"conditions": [{"type": "Accepted", "status": "True"}]}}
)


def _route_names(result: ServiceResult) -> list[str] | None:
    """The backendRefs of the delivered route (None: no route delivered)."""
    routes = [m for m in delivered(result).values() if m["kind"] == "AIGatewayRoute"]
    if not routes:
        return None
    [route] = routes
    validate_manifest(route)
    return [r["name"] for r in route["spec"]["rules"][0]["backendRefs"]]


# (the policy as its Object reports it, None: not observed yet)
NOT_ACCEPTED = [
    ("not observed", None),
    ("no status yet", observed_object({"status": {}})),
    (
        "not accepted",
        observed_object(
            {
                "status": {
                    "conditions": [{"type": "NotAccepted", "status": "True", "message": "bad"}]
                }
            }
        ),
    ),
]


@pytest.mark.parametrize("policy", [p for _, p in NOT_ACCEPTED], ids=[i for i, _ in NOT_ACCEPTED])
def test_a_keyed_backend_gets_no_traffic_until_its_policy_is_accepted(policy: Any) -> None:
    svc = service("chat", entry(OWN), entry(HOSTED, priority=1))
    ours = endpoint("own", OWN, origin="http://192.0.2.7")
    more = {**KEY_FOUND, **({POLICY_KEY: ObservedObject(remote=policy)} if policy else {})}
    result = reconcile_service(svc, [ours, KEYED], GATEWAY, ACCEPTED, more)
    manifests = delivered(result)
    # Everything of the keyed backend is there, its policy watched; only the route skips it.
    assert {"Backend", "AIServiceBackend", "BackendSecurityPolicy"} <= {
        m["kind"] for k, m in manifests.items() if k.endswith("-openai")
    }
    [policy_object] = [o.object for o in result.objects if o.key == POLICY_KEY]
    assert policy_object["spec"]["watch"] is True
    assert _route_names(result) == [dns_name("chat", backend_service_name("own"))]
    assert result.status.routes is not None
    assert [(r.endpoint, r.weight, r.ready) for r in result.status.routes] == [
        ("own", 1, True),
        ("openai", 0, False),
    ]
    routing = result.conditions[1]
    assert (routing.type, routing.status, routing.reason) == (
        "RoutingReady",
        "False",
        "WaitingForKeyPolicy",
    )
    assert routing.message.startswith(
        "endpoint openai: its BackendSecurityPolicy on InferenceCluster frontdoor "
        "(InferenceGateway default) is not Accepted yet"
    )


def test_a_keyed_backend_is_routed_once_its_policy_is_accepted() -> None:
    svc = service("chat", entry(HOSTED))
    more = {**KEY_FOUND, POLICY_KEY: ObservedObject(remote=ACCEPTED_POLICY)}
    result = reconcile_service(svc, [KEYED], GATEWAY, ACCEPTED, more)
    assert _route_names(result) == [dns_name("chat", backend_service_name("openai"))]
    assert result.status.routes is not None
    assert [(r.weight, r.ready) for r in result.status.routes] == [(1, True)]
    assert result.conditions[1].reason == "RouteConfigured"


def test_a_service_of_keyed_backends_composes_no_route_before_their_policies() -> None:
    """No backendRef to name: no route, so a request for the model finds none at all."""
    result = reconcile_service(
        service("chat", entry(HOSTED)), [KEYED], GATEWAY, ACCEPTED, KEY_FOUND
    )
    assert _route_names(result) is None
    assert POLICY_KEY in {o.key for o in result.objects}
    assert result.conditions[1].reason == "WaitingForKeyPolicy"


# Each example validates every delivered Object against its released CRD: slow, never a
# wall-clock bound.
@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=5))
def test_the_route_never_names_a_keyed_backend_before_its_policy(
    shapes: list[tuple[bool, bool]],
) -> None:
    """Whatever mix of keyless endpoints and keyed ones, accepted or not: the route names
    exactly the keyless and the accepted."""
    endpoints, observed, expected = [], dict(KEY_FOUND), []
    for i, (keyed, accepted) in enumerate(shapes):
        name = f"e{i}"
        endpoints.append(endpoint(name, HOSTED, key="provider-key" if keyed else None))
        if keyed and accepted:
            observed[f"default-backend-security-policy-{name}"] = ObservedObject(
                remote=ACCEPTED_POLICY
            )
        if not keyed or accepted:
            expected.append(dns_name("chat", backend_service_name(name)))
    result = reconcile_service(
        service("chat", entry(HOSTED)), endpoints, GATEWAY, ACCEPTED, observed
    )
    assert _route_names(result) == (expected or None)
    assert result.status.routes is not None
    assert {r.endpoint for r in result.status.routes if r.weight} == {
        f"e{i}" for i, (keyed, accepted) in enumerate(shapes) if not keyed or accepted
    }


# --- Failover -----------------------------------------------------------------------------


def test_failing_endpoints_are_ejected_and_rate_limited_ones_retried_elsewhere() -> None:
    """Retries (envoyproxy/gateway internal/xds/translator/route.go buildRetryPolicy @ v1.8.3:
    the triggers replace its default retry_on, a retry goes to another host and after one
    attempt to the next tier). Outlier ejection (api/v1alpha1/healthcheck_types.go
    PassiveHealthCheck; internal/xds/translator/cluster.go buildXdsOutlierDetection): Envoy
    counts only 5xx responses towards consecutive_5xx and 502/503/504 towards gateway
    failures (source/common/upstream/outlier_detection_impl.cc putHttpResponseCode), so a 429
    is retried on another endpoint but never ejects the one that sent it."""
    _, policy = objects(
        reconcile_service(service("chat", entry(OWN)), [endpoint("e", OWN)], GATEWAY, ACCEPTED)
    )
    assert policy["spec"]["targetRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "HTTPRoute",
            "name": service_route_name("chat"),
        }
    ]
    retry = policy["spec"]["retry"]
    # connect failures, 502/503/504 (a per-try idle timeout is a 504), and 429/503 by code;
    # never 500, the model failing on this input.
    assert retry["retryOn"] == {
        "triggers": ["connect-failure", "gateway-error", "retriable-status-codes"],
        "httpStatusCodes": [429, 503],
    }
    assert (retry["numRetries"], retry["numAttemptsPerPriority"]) == (3, 1)
    passive = policy["spec"]["healthCheck"]["passive"]
    assert passive == {
        "consecutive5XxErrors": 5,
        "consecutiveGatewayErrors": 3,
        "interval": "3s",
        "baseEjectionTime": "30s",
        "maxEjectionPercent": 50,
    }
    assert 429 not in range(500, 600)  # what is5xx asks


def test_request_and_idle_timeouts_bound_every_rule() -> None:
    """timeouts.request bounds the whole request, retries and every streamed chunk included;
    streamIdleTimeout becomes the route's per_try_idle_timeout, which each byte from the
    backend resets (api/v1beta1/ai_gateway_route.go; internal/extensionserver/
    post_translate_modify.go maybeSetStreamIdleTimeout @ v1.1.0): a stream that keeps
    sending is cut only by the request timeout, which 0s lifts."""
    svc = ModelService.model_validate(
        {
            "metadata": {"name": "chat", "namespace": NAMESPACE},
            "spec": {"endpoints": [entry(OWN)], "timeouts": {"request": "20m", "idle": "90s"}},
        }
    )
    route, _ = objects(reconcile_service(svc, [endpoint("e", OWN)], GATEWAY, ACCEPTED))
    for rule in route["spec"]["rules"]:
        assert (rule["timeouts"], rule["streamIdleTimeout"]) == ({"request": "20m"}, "90s")


# --- GET /v1/models -----------------------------------------------------------------------


def declared_models(routes: list[dict[str, Any]]) -> list[str]:
    """What Envoy AI Gateway v1.1.0 lists at GET /v1/models for a Gateway's routes
    (internal/controller/gateway.go, the filter config's Models; internal/extproc/
    models_processor.go answers with them): every header match of a rule, in order, whose
    name is x-ai-eg-model and whose type is Exact or unset; no hostnames, so every host."""
    return [
        header["value"]
        for route in routes
        for rule in route["spec"]["rules"]
        for match in rule.get("matches", [])
        for header in match.get("headers", [])
        if header["name"] == MODEL_HEADER and header.get("type", "Exact") == "Exact"
    ]


names = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)


# Each example validates its routes against the released CRD: slow, never a wall-clock bound.
@settings(max_examples=30, deadline=None)
@given(st.lists(names, min_size=1, max_size=6, unique=True))
def test_models_lists_exactly_the_names_callers_use(services: list[str]) -> None:
    routes = []
    expected = []
    for name in services:
        result = reconcile_service(
            service(name, entry(OWN)), [endpoint("e", OWN)], GATEWAY, ACCEPTED
        )
        route, _ = objects(result)
        assert "hostnames" not in route["spec"]
        routes.append(route)
        expected.append(result.status.model)
    assert declared_models(routes) == expected == [f"{NAMESPACE}/{n}" for n in services]


# --- status.routes ------------------------------------------------------------------------


def test_status_routes_show_each_endpoints_tier_weight_and_readiness() -> None:
    endpoints = [
        endpoint("own-a", OWN),
        endpoint("own-b", OWN),
        endpoint("own-late", OWN, published=False),
        endpoint("claude", HOSTED, "Anthropic"),
    ]
    svc = service(
        "chat",
        entry(HOSTED, name="backup", priority=1),
        entry(OWN, name="primary", weight=3),
    )
    result = reconcile_service(svc, endpoints, GATEWAY, ACCEPTED)
    route, _ = objects(result)
    assert result.status.routes is not None
    rows = [
        (r.endpoint, r.entry, r.priority, r.weight, r.ready, r.callers)
        for r in result.status.routes
    ]
    both = ("OpenAI", "Anthropic")
    assert rows == [
        # the entry's weight 3, split as evenly as it goes over its two ready endpoints
        ("own-a", "primary", 0, 2, True, both),
        ("own-b", "primary", 0, 1, True, both),
        ("own-late", "primary", 0, 0, False, both),  # its backend not published yet
        ("claude", "backup", 1, 1, True, ("Anthropic",)),
    ]
    refs = {
        r["name"]: (r["weight"], r["priority"]) for r in route["spec"]["rules"][0]["backendRefs"]
    }
    for row in result.status.routes:
        if row.weight:
            remote = dns_name("chat", backend_service_name(row.endpoint))
            assert refs[remote] == (row.weight, row.priority)
    # Written as the CRD's status schema reads it.
    dumped = result.status.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped["routes"][0] == {
        "endpoint": "own-a",
        "entry": "primary",
        "priority": 0,
        "weight": 2,
        "ready": True,
        "callers": ["OpenAI", "Anthropic"],
    }


@pytest.mark.parametrize(
    ("gateway", "observed"),
    [(GATEWAY, None), (GATEWAY, observed_object({"status": {}})), (None, ACCEPTED)],
    ids=["route not observed", "route not accepted", "no gateway"],
)
def test_no_endpoint_reads_ready_until_the_gateway_accepts_the_route(
    gateway: InferenceGateway | None, observed: Any
) -> None:
    result = reconcile_service(service("chat", entry(OWN)), [endpoint("e", OWN)], gateway, observed)
    assert result.status.routes is not None
    assert [r.ready for r in result.status.routes] == [False]


def test_endpoints_beyond_the_routes_capacity_get_no_traffic() -> None:
    endpoints = [endpoint(f"own-{i:02d}", OWN) for i in range(MAX_BACKENDS + 2)]
    result = reconcile_service(service("chat", entry(OWN)), endpoints, GATEWAY, ACCEPTED)
    assert result.status.routes is not None
    weights = [r.weight for r in result.status.routes]
    assert weights == [1] * MAX_BACKENDS + [0, 0]
    assert [r.ready for r in result.status.routes][-2:] == [False, False]
