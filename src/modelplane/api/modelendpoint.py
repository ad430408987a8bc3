"""ModelEndpoint: one reachable OpenAI-compatible backend."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from modelplane.api.base import GROUP_VERSION, FreeForm, KubeModel, OpenModel
from modelplane.api.meta import CONDITIONS_LIST, Condition, ObjectMeta


class ModelEndpointSpec(KubeModel):
    """Where the backend is."""

    url: str = Field(min_length=1, description="Full URL of the backend.")
    rewrite_path: str | None = Field(
        default=None, description="Prefix the control-plane route rewrites to for this backend."
    )
    crossplane: FreeForm | None = None


class Routing(KubeModel):
    """Written by the platform; not read."""

    backend_name: str | None = None


class ModelEndpointStatus(OpenModel):
    """An endpoint counts ready when its Ready condition is True."""

    routing: Routing | None = None
    conditions: (
        Annotated[tuple[Condition, ...], Field(json_schema_extra=CONDITIONS_LIST)] | None
    ) = None


class ModelEndpoint(KubeModel):
    """One reachable OpenAI-compatible backend."""

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["ModelEndpoint"] = "ModelEndpoint"
    metadata: ObjectMeta
    spec: ModelEndpointSpec
    status: ModelEndpointStatus | None = None
