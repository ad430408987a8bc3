"""ModelService: one stable address that balances over the ModelEndpoints it selects."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from modelplane.api.base import GROUP_VERSION, FreeForm, KubeModel, OpenModel
from modelplane.api.meta import CONDITIONS_LIST, Condition, ObjectMeta

# Gateway API backendRef weights are 0..1,000,000 (HTTPRoute v1 schema, backendRefs[].weight).
MAX_ENTRY_WEIGHT = 1_000_000
# A bound for the API server's CEL cost estimate; a route has at most 16 backendRefs anyway.
MAX_ENTRIES = 16
MAX_MATCH_LABELS = 16
# Failover tiers: Envoy's priority levels run 0..127 (envoy config.endpoint.v3
# LocalityLbEndpoints.priority); a handful is all a service needs.
MAX_PRIORITY = 15
# Gateway API's Duration (HTTPRouteTimeouts, gateway-api apis/v1 @ v1.5.1), which the
# AIGatewayRoute's timeouts and streamIdleTimeout reuse (envoyproxy/ai-gateway
# api/v1beta1/ai_gateway_route.go @ v1.1.0).
DURATION_PATTERN = r"^([0-9]{1,5}(h|m|s|ms)){1,4}$"
DEFAULT_REQUEST_TIMEOUT = "300s"
DEFAULT_IDLE_TIMEOUT = "60s"


class EndpointSelector(KubeModel):
    """The ModelEndpoints of one entry: every pair must be present with an equal value."""

    match_labels: dict[str, str] = Field(
        min_length=1,
        max_length=MAX_MATCH_LABELS,
        description="Labels an endpoint must carry (at least one pair).",
    )


class ServiceEntry(KubeModel):
    """One entry: a selection of endpoints and its share of the traffic."""

    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=63,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="A name for the entry, shown in events; a DNS label.",
    )
    selector: EndpointSelector
    weight: int = Field(
        default=1,
        ge=1,
        le=MAX_ENTRY_WEIGHT,
        description="This entry's share within its priority, split evenly over the ready "
        "endpoints it matches.",
    )
    priority: int = Field(
        default=0,
        ge=0,
        le=MAX_PRIORITY,
        description="The failover tier; lower is preferred. A tier takes traffic only as the "
        "tiers above it lose healthy endpoints.",
    )


class ServiceTimeouts(KubeModel):
    """How long the gateway waits on the service's endpoints."""

    request: str = Field(
        default=DEFAULT_REQUEST_TIMEOUT,
        pattern=DURATION_PATTERN,
        description="The whole request, retries included; 0s disables it.",
    )
    idle: str = Field(
        default=DEFAULT_IDLE_TIMEOUT,
        pattern=DURATION_PATTERN,
        description="How long an endpoint may send nothing; 0s disables it.",
    )


class ModelServiceSpec(KubeModel):
    """The entries, in priority order: an endpoint matched by several belongs to the first."""

    endpoints: tuple[ServiceEntry, ...] = Field(min_length=1, max_length=MAX_ENTRIES)
    timeouts: ServiceTimeouts = Field(default_factory=ServiceTimeouts)
    crossplane: FreeForm | None = None


# The APIs a caller speaks to the gateway: OpenAI's (/v1/chat/completions and the rest) and
# Anthropic's Messages API (/anthropic/v1/messages).
CallerAPI = Literal["OpenAI", "Anthropic"]


class ServiceRoute(KubeModel):
    """One endpoint the service selects and the traffic it gets."""

    endpoint: str = Field(description="The ModelEndpoint.")
    entry: str | None = Field(default=None, description="The name of the entry that selects it.")
    priority: int = Field(description="Its failover tier; lower is preferred.")
    weight: int = Field(
        description="Its share of its tier's traffic in the route; 0 while it gets none."
    )
    ready: bool = Field(description="The route names it and the gateway accepted the route.")
    callers: tuple[CallerAPI, ...] = Field(
        description="The caller APIs whose requests it can answer: an Anthropic endpoint "
        "answers only Anthropic callers."
    )


class ModelServiceStatus(OpenModel):
    """Written by the platform: the address, the routes and the conditions."""

    address: str | None = None
    model: str | None = Field(
        default=None, description="The model a caller names: <namespace>/<name>."
    )
    routes: tuple[ServiceRoute, ...] | None = Field(
        default=None,
        description="Every endpoint the entries select, in tier order, with the traffic it gets.",
    )
    conditions: (
        Annotated[tuple[Condition, ...], Field(json_schema_extra=CONDITIONS_LIST)] | None
    ) = None


class ModelService(KubeModel):
    """One stable address balancing over the ModelEndpoints it selects."""

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["ModelService"] = "ModelService"
    metadata: ObjectMeta
    spec: ModelServiceSpec
    status: ModelServiceStatus | None = None
