"""InferenceGateway: a front door on one InferenceCluster, serving the ModelServices it selects.

The shape follows upstream Modelplane v0.5 (RedbackThomson/modelplane
``docs/content/platform/inference-gateway.md`` @ 667562db): ``clusterName``,
``serviceSelector``, ``tls.certificateRefs``, ``auth.method: APIKey`` with
``auth.apiKey.secretSelector``, and ``status.endpoints``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from modelplane.api.base import GROUP_VERSION, FreeForm, KubeModel, OpenModel
from modelplane.api.meta import CONDITIONS_LIST, Condition, ObjectMeta

# Gateway API v1.5.1 caps a listener's certificateRefs at 64 (Gateway v1 schema,
# listeners[].tls.certificateRefs maxItems).
MAX_CERTIFICATE_REFS = 64
MAX_MATCH_LABELS = 16


class LabelSelector(KubeModel):
    """Every pair must be present with an equal value."""

    match_labels: dict[str, str] = Field(
        min_length=1, max_length=MAX_MATCH_LABELS, description="Labels to match (at least one)."
    )


class CertificateRef(KubeModel):
    """A kubernetes.io/tls Secret in modelplane-system on the gateway's cluster, by name."""

    name: str = Field(min_length=1, max_length=253)


class GatewayTLS(KubeModel):
    """Serve HTTPS, terminating TLS with these certificates."""

    certificate_refs: tuple[CertificateRef, ...] = Field(
        min_length=1,
        max_length=MAX_CERTIFICATE_REFS,
        description="Secrets in modelplane-system on the gateway's cluster (type "
        "kubernetes.io/tls), put there by the operator and named by the HTTPS listener; never "
        "copied from the control plane.",
    )


class APIKeyAuth(KubeModel):
    """Where callers' keys are."""

    secret_selector: LabelSelector = Field(
        description="Secrets in modelplane-system on the control plane, by name: the Secrets of "
        "those names in modelplane-system on the gateway's cluster hold the keys, each data "
        "entry one caller (its name the identity, its value the key); never copied."
    )


class GatewayAuth(KubeModel):
    """How callers are authenticated."""

    method: Literal["APIKey"] = Field(description="APIKey: a key per caller, from Secrets.")
    api_key: APIKeyAuth


class InferenceGatewaySpec(KubeModel):
    """Where the front door runs, what it serves and how callers reach it."""

    cluster_name: str = Field(
        min_length=1,
        max_length=63,
        description="The InferenceCluster the gateway runs on; it must declare "
        "spec.gateway.implementation EnvoyGateway (its stack installs Envoy Gateway and "
        "Envoy AI Gateway). At most one gateway per cluster.",
    )
    service_selector: LabelSelector | None = Field(
        default=None,
        description="The ModelServices this gateway serves, by label; absent: every one.",
    )
    tls: GatewayTLS | None = None
    auth: GatewayAuth | None = Field(
        default=None, description="Absent: nobody is authenticated (run behind another gateway)."
    )
    port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="The listener's port; absent: 443 with tls, else 80.",
    )
    crossplane: FreeForm | None = None


class GatewayEndpoints(OpenModel):
    """The base URLs callers use, per API."""

    open_ai: str | None = Field(default=None, alias="openAI")
    anthropic: str | None = None


class InferenceGatewayStatus(OpenModel):
    """Written by the platform: the Gateway's address, the URLs callers use, the conditions."""

    address: str | None = None
    endpoints: GatewayEndpoints | None = None
    conditions: (
        Annotated[tuple[Condition, ...], Field(json_schema_extra=CONDITIONS_LIST)] | None
    ) = None


class InferenceGateway(KubeModel):
    """A front door on one cluster."""

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["InferenceGateway"] = "InferenceGateway"
    metadata: ObjectMeta
    spec: InferenceGatewaySpec
    status: InferenceGatewayStatus | None = None
