"""The curated pod template of engine members and of the endpoint picker."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field

from modelplane.api.base import (
    ATOMIC,
    DNS_LABEL,
    LABEL_KEY,
    LABEL_VALUE,
    IntOrString,
    KubeModel,
    QuantityValue,
    rule,
    validations,
)
from modelplane.api.meta import LocalObjectReference

_DNS_LABEL_CEL = "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"
_LABEL_KEY_CEL = LABEL_KEY.replace("\\", "\\\\")
_LABEL_VALUE_CEL = LABEL_VALUE


def label_rules(prefix: str, first_id: int) -> list[Any]:
    """The four label rules (reserved prefix, key syntax, key prefix length, value syntax)."""
    ids = [f"MD-{first_id + i:02d}" for i in range(4)]
    return [
        rule(
            ids[0],
            "!has(self.labels) || self.labels.all(k, !k.startsWith('modelplane.ai/'))",
            f"{prefix}template.metadata.labels keys must not use the reserved modelplane.ai/ prefix",
        ),
        rule(
            ids[1],
            f"!has(self.labels) || self.labels.all(k, k.matches('{_LABEL_KEY_CEL}'))",
            f"{prefix}template.metadata.labels keys must be valid Kubernetes label keys",
        ),
        rule(
            ids[2],
            "!has(self.labels) || self.labels.all(k, k.split('/')[0].size() <= 253)",
            f"{prefix}template.metadata.labels key prefixes must be DNS subdomains of at most 253 characters",
        ),
        rule(
            ids[3],
            f"!has(self.labels) || self.labels.all(k, self.labels[k].matches('{_LABEL_VALUE_CEL}'))",
            f"{prefix}template.metadata.labels values must be valid Kubernetes label values",
        ),
    ]


MD_26 = rule(
    "MD-26",
    f"!has(self.annotations) || self.annotations.all(k, k.matches('{_LABEL_KEY_CEL}'))",
    "member template.metadata.annotations keys must be valid Kubernetes annotation keys",
)
MD_27 = rule(
    "MD-27",
    "!has(self.annotations) || self.annotations.all(k, k.split('/')[0].size() <= 253)",
    "member template.metadata.annotations key prefixes must be DNS subdomains of at most 253 characters",
)
MD_28 = rule(
    "MD-28",
    "self.exists_one(c, c.name == 'engine')",
    "exactly one container must be named 'engine'",
)
MD_29 = rule(
    "MD-29",
    "self.name != 'engine' || !has(self.readinessProbe)",
    "the engine container can't set readinessProbe: Modelplane probes the engine on its http port",
)
_RESERVED_ENV = "!has(self.env) || self.env.all(e, !e.name.startsWith('MODELPLANE_'))"
_RESERVED_ENV_MESSAGE = (
    "env names starting with MODELPLANE_ are reserved for variables Modelplane sets"
)
MD_30 = rule("MD-30", _RESERVED_ENV, _RESERVED_ENV_MESSAGE)
MD_31 = rule(
    "MD-31",
    "!has(self.ports) || self.ports.filter(p, has(p.name)).all(p, self.ports.filter(q, has(q.name)).exists_one(q, q.name == p.name))",
    "port names must be unique within a container",
)


def _probe_port_rule(rule_id: str, handler: str) -> Any:
    port = f"self.readinessProbe.{handler}.port"
    return rule(
        rule_id,
        f"!has(self.readinessProbe) || !has(self.readinessProbe.{handler}) || "
        f"(type({port}) == int ? ({port} >= 1 && {port} <= 65535) : "
        f"(has(self.ports) && self.ports.exists(q, has(q.name) && q.name == {port})))",
        f"readinessProbe.{handler}.port must be a number from 1 to 65535 or the name of one of this container's ports",
    )


MD_32 = _probe_port_rule("MD-32", "httpGet")
MD_33 = _probe_port_rule("MD-33", "tcpSocket")
MD_34 = rule(
    "MD-34",
    "[has(self.grpc), has(self.httpGet), has(self.tcpSocket)].filter(x, x).size() == 1",
    "readinessProbe must set exactly one of grpc, httpGet, tcpSocket",
)
MD_35 = rule(
    "MD-35",
    "!has(self.grpc) || (self.grpc.port >= 1 && self.grpc.port <= 65535)",
    "readinessProbe.grpc.port must be a number from 1 to 65535",
)
MD_36 = rule(
    "MD-36",
    "!has(self.initialDelaySeconds) || self.initialDelaySeconds >= 0",
    "readinessProbe.initialDelaySeconds must not be negative",
)
MD_37 = rule(
    "MD-37",
    "!has(self.name) || (self.name.matches('[a-z]') && !self.name.contains('--'))",
    "port name must contain at least one letter and no '--' (an IANA service name)",
)
MD_38 = rule(
    "MD-38",
    "!has(self.value) || !has(self.valueFrom)",
    "env value and valueFrom are mutually exclusive",
)
MD_39 = rule(
    "MD-39",
    "[has(self.configMapKeyRef), has(self.fieldRef), has(self.secretKeyRef)].filter(x, x).size() == 1",
    "valueFrom must set exactly one of configMapKeyRef, fieldRef, secretKeyRef",
)
MD_40 = rule("MD-40", f"self.name.matches({_DNS_LABEL_CEL})", "container name must be a DNS label")
MD_41 = rule("MD-41", _RESERVED_ENV, _RESERVED_ENV_MESSAGE)


class KeyRef(KubeModel):
    """A key of a ConfigMap or Secret."""

    key: str
    name: str
    optional: bool | None = None


class FieldRef(KubeModel):
    """The downward API: a field of the pod, e.g. status.podIP."""

    field_path: str
    api_version: str | None = None


class EnvVarSource(KubeModel):
    """Where an environment variable's value comes from."""

    model_config = ConfigDict(json_schema_extra=validations(MD_39))

    config_map_key_ref: KeyRef | None = None
    field_ref: FieldRef | None = None
    secret_key_ref: KeyRef | None = None


class EnvVar(KubeModel):
    """An environment variable of a container."""

    model_config = ConfigDict(json_schema_extra=validations(MD_38))

    name: str
    value: str | None = None
    value_from: EnvVarSource | None = None


class ContainerPort(KubeModel):
    """A port the container listens on."""

    model_config = ConfigDict(json_schema_extra=validations(MD_37))

    container_port: int = Field(ge=1, le=65535, description="Port number the container listens on.")
    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=15,
        pattern=DNS_LABEL,
        description="Port name. The engine container's port named http is where Modelplane probes "
        "the engine and scrapes its metrics.",
    )


class GRPCAction(KubeModel):
    """A gRPC health check."""

    port: int
    service: str | None = None


class HTTPGetAction(KubeModel):
    """An HTTP GET health check."""

    path: str | None = None
    port: IntOrString


class TCPSocketAction(KubeModel):
    """A TCP connect health check."""

    port: IntOrString


class Probe(KubeModel):
    """How Kubernetes checks that a container beside the engine is ready."""

    model_config = ConfigDict(json_schema_extra=validations(MD_34, MD_35, MD_36))

    grpc: GRPCAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    failure_threshold: int | None = Field(default=None, ge=1)
    period_seconds: int | None = Field(default=None, ge=1)
    success_threshold: int | None = Field(default=None, ge=1)
    timeout_seconds: int | None = Field(default=None, ge=1)
    initial_delay_seconds: int | None = None


class Resources(KubeModel):
    """CPU and memory requests and limits; device claims are Modelplane's to add."""

    limits: dict[str, QuantityValue] | None = None
    requests: dict[str, QuantityValue] | None = None


# Kubernetes sets no limit on a container's env; the bound keeps the rules that walk it
# (MD-30, MD-38, MD-39, MD-41) within the API server's cost limits (docs/api.md "Bounds").
MAX_ENV = 256
EnvList = Annotated[tuple[EnvVar, ...], Field(max_length=MAX_ENV, json_schema_extra=ATOMIC)]
StringList = Annotated[tuple[str, ...], Field(json_schema_extra=ATOMIC)]


class _ContainerFields(KubeModel):
    name: str = Field(
        min_length=1,
        max_length=63,
        pattern=DNS_LABEL,
        description="Container name. The container named engine is the inference engine.",
    )
    image: str = Field(min_length=1, description="Container image.")
    command: StringList | None = None
    args: StringList | None = None
    env: EnvList | None = None
    ports: (
        Annotated[tuple[ContainerPort, ...], Field(max_length=8, json_schema_extra=ATOMIC)] | None
    ) = None
    readiness_probe: Probe | None = Field(
        default=None,
        description="How Kubernetes checks that a container beside the engine is ready. The "
        "engine container can't set one: Modelplane probes the engine on its http port.",
    )
    resources: Resources | None = Field(
        default=None,
        description="CPU and memory requests and limits. On the engine container, Modelplane "
        "adds the member's device claim beside them.",
    )


class Container(_ContainerFields):
    """A container of a deployment member's pods."""

    model_config = ConfigDict(json_schema_extra=validations(MD_29, MD_30, MD_31, MD_32, MD_33))


class ReplicaContainer(_ContainerFields):
    """A container of a replica member's pods (Modelplane may write MODELPLANE_* env here)."""

    model_config = ConfigDict(json_schema_extra=validations(MD_29, MD_31, MD_32, MD_33))


LabelMap = Annotated[dict[str, Annotated[str, Field(max_length=63)]], Field(max_length=32)]
AnnotationMap = Annotated[dict[str, Annotated[str, Field(max_length=8192)]], Field(max_length=32)]


class PodMetadata(KubeModel):
    """Labels and annotations applied to a member's pods."""

    model_config = ConfigDict(
        json_schema_extra=validations(*label_rules("member ", 22), MD_26, MD_27)
    )

    labels: LabelMap | None = None
    annotations: AnnotationMap | None = None


PullSecrets = Annotated[tuple[LocalObjectReference, ...], Field(json_schema_extra=ATOMIC)]


class PodSpec(KubeModel):
    """Pod spec of a deployment member's pods."""

    containers: Annotated[
        tuple[Container, ...],
        Field(
            min_length=1,
            max_length=8,
            json_schema_extra={
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                **validations(MD_28),
            },
        ),
    ]
    image_pull_secrets: PullSecrets | None = None


class ReplicaPodSpec(KubeModel):
    """Pod spec of a replica member's pods."""

    containers: Annotated[
        tuple[ReplicaContainer, ...],
        Field(
            min_length=1,
            max_length=8,
            json_schema_extra={
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                **validations(MD_28),
            },
        ),
    ]
    image_pull_secrets: PullSecrets | None = None


class PodTemplate(KubeModel):
    """Pod template for a member's engine pods: a curated subset of PodTemplateSpec."""

    metadata: PodMetadata | None = None
    spec: PodSpec | None = None


class ReplicaPodTemplate(KubeModel):
    """A replica member's pod template: the deployment member's, as written."""

    metadata: PodMetadata | None = None
    spec: ReplicaPodSpec | None = None


class PickerContainer(KubeModel):
    """The endpoint picker's single container, written by the user."""

    model_config = ConfigDict(json_schema_extra=validations(MD_40, MD_41))

    name: str = Field(min_length=1, max_length=63)
    image: str = Field(min_length=1)
    command: StringList | None = None
    args: StringList | None = None
    env: EnvList | None = None
    resources: Resources | None = None


class PickerPodSpec(KubeModel):
    """The picker's pod spec."""

    containers: Annotated[
        tuple[PickerContainer, ...], Field(min_length=1, max_length=1, json_schema_extra=ATOMIC)
    ]
    image_pull_secrets: PullSecrets | None = None


class PickerTemplate(KubeModel):
    """Pod template for the picker (no metadata)."""

    spec: PickerPodSpec


class ReplicaPickerContainer(PickerContainer):
    """The picker container as copied onto a replica (MD-41 is not applied there)."""

    model_config = ConfigDict(json_schema_extra=validations(MD_40))


class ReplicaPickerPodSpec(PickerPodSpec):
    """The picker's pod spec on a replica."""

    containers: Annotated[
        tuple[ReplicaPickerContainer, ...],
        Field(min_length=1, max_length=1, json_schema_extra=ATOMIC),
    ]


class ReplicaPickerTemplate(PickerTemplate):
    """The picker's pod template on a replica."""

    spec: ReplicaPickerPodSpec
