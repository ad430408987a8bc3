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


class EndpointSelector(KubeModel):
    """The ModelEndpoints of one entry: every pair must be present with an equal value."""

    match_labels: dict[str, str] = Field(
        min_length=1,
        max_length=MAX_MATCH_LABELS,
        description="Labels an endpoint must carry (at least one pair).",
    )


class ServiceEntry(KubeModel):
    """One entry: a selection of endpoints and its share of the traffic."""

    selector: EndpointSelector
    weight: int = Field(
        default=1,
        ge=1,
        le=MAX_ENTRY_WEIGHT,
        description="This entry's share, split evenly over the ready endpoints it matches.",
    )


class ModelServiceSpec(KubeModel):
    """The entries, in priority order: an endpoint matched by several belongs to the first."""

    endpoints: tuple[ServiceEntry, ...] = Field(min_length=1, max_length=MAX_ENTRIES)
    crossplane: FreeForm | None = None


class ModelServiceStatus(OpenModel):
    """Written by the platform: the address and the conditions."""

    address: str | None = None
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
