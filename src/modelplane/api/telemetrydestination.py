"""TelemetryDestination: where the fleet's metrics go, and which clusters send them (docs/telemetry.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from modelplane.api.base import GROUP_VERSION, KubeModel, OpenModel, list_map
from modelplane.api.meta import CONDITIONS_LIST, Condition, LabelSelector, ObjectMeta

# The collector exporters a destination may name, each a component the pinned
# otelcol-contrib release ships (stack/collector.py EXPORTER_TYPES).
ExporterType = Literal["OTLPGRPC", "OTLPHTTP", "PrometheusRemoteWrite"]
# A metric name as a Prometheus exposition writes it (colons included: vLLM's names).
METRIC_NAME = r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"
# An HTTP header name (RFC 9110 token characters).
HEADER_NAME = r"^[-!#%&'*+.^_`|~0-9A-Za-z]+$"
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"


class SecretKeyRef(KubeModel):
    """One key of a Secret."""

    name: str = Field(min_length=1, max_length=253, description="The Secret's name.")
    key: str = Field(
        min_length=1, max_length=253, pattern=SECRET_KEY, description="The key holding the value."
    )


class ExportHeader(KubeModel):
    """A header the exporter sends, its value read from a Secret on each sending cluster."""

    name: str = Field(min_length=1, max_length=128, pattern=HEADER_NAME)
    secret_key_ref: SecretKeyRef = Field(
        description="The Secret key holding the header's value, in modelplane-system on every "
        "cluster the destination selects. The collector reads it as an environment variable "
        "(env valueFrom secretKeyRef): the value never appears in a composed object."
    )


class TelemetryExporter(KubeModel):
    """How the collector sends: which exporter, where to, with which headers."""

    type: ExporterType = Field(
        description="OTLPGRPC (the otlp_grpc exporter), OTLPHTTP (otlp_http) or "
        "PrometheusRemoteWrite (prometheus_remote_write)."
    )
    endpoint: str = Field(
        min_length=1,
        max_length=2048,
        pattern=r"^https?://[^\s]+$",
        description="The receiver's URL: host:port for OTLP gRPC as a URL, the OTLP HTTP base "
        "URL, or the remote-write URL.",
    )
    headers: (
        Annotated[tuple[ExportHeader, ...], Field(max_length=8, json_schema_extra=list_map("name"))]
        | None
    ) = None


class QueryAuthentication(KubeModel):
    """How KEDA authenticates to the query endpoint."""

    mode: Literal["Bearer", "Basic"] = Field(
        description="Bearer: the Secret's key bearerToken; Basic: its keys username and password."
    )
    secret_name: str = Field(
        min_length=1,
        max_length=253,
        description="A Secret in the autoscaled deployment's namespace on the control plane; "
        "its TriggerAuthentication names it, KEDA reads it.",
    )


class TelemetryQuery(KubeModel):
    """Where the destination's metrics are read back with PromQL: what autoscaling queries."""

    server_address: str = Field(
        min_length=1,
        max_length=2048,
        pattern=r"^https?://[^\s]+$",
        description="The base URL of a Prometheus-compatible query API (KEDA appends "
        "/api/v1/query).",
    )
    authentication: QueryAuthentication | None = None


class TelemetryDestinationSpec(KubeModel):
    """Where the metrics go and who sends them."""

    cluster_selector: LabelSelector | None = Field(
        default=None,
        description="The InferenceClusters that send (by label); absent: every cluster. "
        "A selected cluster runs a collector; an unselected one runs none for this destination.",
    )
    exporter: TelemetryExporter
    passthrough: (
        Annotated[
            tuple[Annotated[str, Field(max_length=255, pattern=METRIC_NAME)], ...],
            Field(max_length=64, json_schema_extra={"x-kubernetes-list-type": "set"}),
        ]
        | None
    ) = Field(
        default=None,
        description="Source metrics this destination also receives under their own names; "
        "without them only the modelplane_* vocabulary leaves the cluster.",
    )
    query: TelemetryQuery | None = Field(
        default=None,
        description="Where autoscaling reads the destination's metrics back "
        '(docs/telemetry.md, "Autoscaling").',
    )


class DestinationCluster(KubeModel):
    """One cluster sending to the destination, and whether its collector is Ready."""

    name: str
    ready: bool
    message: str | None = None


class TelemetryDestinationStatus(OpenModel):
    """Written by the platform: the clusters that send and their collectors."""

    clusters: tuple[DestinationCluster, ...] | None = None
    conditions: (
        Annotated[tuple[Condition, ...], Field(json_schema_extra=CONDITIONS_LIST)] | None
    ) = None


class TelemetryDestination(KubeModel):
    """Where the fleet's metrics go."""

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["TelemetryDestination"] = "TelemetryDestination"
    metadata: ObjectMeta
    spec: TelemetryDestinationSpec
    status: TelemetryDestinationStatus | None = None
