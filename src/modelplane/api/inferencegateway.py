"""InferenceGateway: the control plane's front door, serving every ModelService."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from modelplane.api.base import GROUP_VERSION, FreeForm, KubeModel, OpenModel
from modelplane.api.meta import CONDITIONS_LIST, Condition, ObjectMeta

# The one InferenceGateway every ModelService attaches to.
DEFAULT_GATEWAY = "default"


class InferenceGatewaySpec(KubeModel):
    """Which installed Gateway API implementation serves the front door."""

    gateway_class_name: str = Field(
        default="modelplane",
        min_length=1,
        max_length=253,
        description="A GatewayClass of Envoy Gateway (with Envoy AI Gateway installed); "
        "any other controller is refused (docs/crossplane.md, the inference gateway).",
    )
    port: int = Field(default=80, ge=1, le=65535, description="The HTTP listener's port.")
    crossplane: FreeForm | None = None


class InferenceGatewayStatus(OpenModel):
    """Written by the platform: the Gateway's address and the conditions."""

    address: str | None = None
    conditions: (
        Annotated[tuple[Condition, ...], Field(json_schema_extra=CONDITIONS_LIST)] | None
    ) = None


class InferenceGateway(KubeModel):
    """The control plane's front door."""

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["InferenceGateway"] = "InferenceGateway"
    metadata: ObjectMeta
    spec: InferenceGatewaySpec = Field(default_factory=InferenceGatewaySpec)
    status: InferenceGatewayStatus | None = None
