"""ModelEndpoint: one reachable OpenAI- or Anthropic-compatible backend."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from modelplane.api.base import GROUP_VERSION, FreeForm, KubeModel, OpenModel
from modelplane.api.meta import CONDITIONS_LIST, Condition, ObjectMeta

# The path an OpenAI-compatible server serves its API under (``/v1/chat/completions``).
DEFAULT_API_PREFIX = "/v1"


class EndpointAPI(KubeModel):
    """Which API the backend speaks, and under which path."""

    schema_: Literal["OpenAI", "Anthropic"] = Field(
        default="OpenAI",
        alias="schema",
        description="The API the backend speaks: OpenAI or Anthropic (Messages).",
    )
    prefix: str = Field(
        default=DEFAULT_API_PREFIX,
        min_length=1,
        max_length=1024,
        pattern=r"^/",
        description="The path the backend serves that API under (/v1 for most servers).",
    )


class SecretRef(KubeModel):
    """A Secret in the endpoint's namespace, by name."""

    name: str = Field(min_length=1, max_length=253)


class APIKeyCredential(KubeModel):
    """An API key the gateway attaches on the way to the backend."""

    secret_ref: SecretRef = Field(
        description="The Secret holding the key under the data key apiKey; never copied."
    )


class Credential(KubeModel):
    """How the gateway authenticates to the backend."""

    api_key: APIKeyCredential


class ModelEndpointSpec(KubeModel):
    """Where the backend is, what it speaks and the model name it expects."""

    origin: str = Field(
        min_length=1,
        max_length=2048,
        description="Scheme, host and optional port of the backend, no path "
        "(https://api.together.xyz, http://10.0.0.7:8000).",
    )
    api: EndpointAPI = Field(default_factory=EndpointAPI)
    model: str = Field(
        min_length=1,
        max_length=256,
        description="The model name the backend expects; the gateway rewrites the "
        "request's model to it.",
    )
    credential: Credential | None = None
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
    """One reachable OpenAI- or Anthropic-compatible backend."""

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["ModelEndpoint"] = "ModelEndpoint"
    metadata: ObjectMeta
    spec: ModelEndpointSpec
    status: ModelEndpointStatus | None = None
