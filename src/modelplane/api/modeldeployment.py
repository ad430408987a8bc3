"""ModelDeployment: what to serve, how many replicas, on which hardware (the seed)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from modelplane.api.base import (
    ATOMIC,
    DRA_SELECTOR,
    GROUP_VERSION,
    FreeForm,
    KubeModel,
    OpenModel,
    list_map,
    rule,
    validations,
)
from modelplane.api.meta import CONDITIONS_LIST, Condition, LabelSelector, NameRef, ObjectMeta
from modelplane.api.pod import (
    LabelMap,
    PickerTemplate,
    PodTemplate,
    ReplicaPickerTemplate,
    label_rules,
)

Role = Literal["Standalone", "Leader", "Worker"]
Phase = Literal["Prefill", "Decode"]
ServingMode = Literal["Unified", "PrefillDecode"]

# Kubernetes sets no limit on a pod's tolerations; MD-14 and MD-15 run once per item, so
# the list needs a bound for the API server's cost estimate (docs/api.md "Bounds").
MAX_TOLERATIONS = 64

_DNS_LABEL_MATCH = "matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')"

MD_01 = rule(
    "MD-01",
    f"self.metadata.name.size() <= 63 && self.metadata.name.{_DNS_LABEL_MATCH}",
    "ModelDeployment names must be DNS labels of at most 63 characters",
)
_PD = "self.serving.mode != 'PrefillDecode'"
MD_06 = rule(
    "MD-06",
    f"!has(self.serving) || {_PD} || size(self.engines) == 2",
    "PrefillDecode serving requires exactly two engines (one Prefill, one Decode)",
)
MD_07 = rule(
    "MD-07",
    f"!has(self.serving) || {_PD} || self.engines.exists_one(e, has(e.phase) && e.phase == 'Prefill')",
    "PrefillDecode serving requires exactly one engine with phase Prefill",
)
MD_08 = rule(
    "MD-08",
    f"!has(self.serving) || {_PD} || self.engines.exists_one(e, has(e.phase) && e.phase == 'Decode')",
    "PrefillDecode serving requires exactly one engine with phase Decode",
)
MD_09 = rule(
    "MD-09",
    "(has(self.serving) && self.serving.mode == 'PrefillDecode') || !self.engines.exists(e, has(e.phase))",
    "engine phase may only be set when serving.mode is PrefillDecode",
)
MD_10 = rule(
    "MD-10",
    "has(self.modelCacheRef) || !self.engines.exists(e, e.members.exists(m, m.role == 'Worker'))",
    "modelCacheRef is required when an engine has a Worker member: every pod of a multi-node "
    "engine mounts the cache",
)
MD_11 = rule(
    "MD-11",
    "self.mode != 'PrefillDecode' || has(self.router)",
    "serving.router is required when serving.mode is PrefillDecode",
)
MD_12 = rule(
    "MD-12",
    "!has(self.router) || self.router != 'EndpointPicker' || has(self.endpointPicker)",
    "serving.endpointPicker is required when serving.router is EndpointPicker",
)
MD_13 = rule(
    "MD-13",
    "!has(self.endpointPicker) || (has(self.router) && self.router == 'EndpointPicker')",
    "serving.endpointPicker may only be set when serving.router is EndpointPicker",
)
MD_14 = rule(
    "MD-14",
    "self.operator != 'Equal' || (has(self.key) && self.key != '')",
    "an Equal toleration must set a key",
)
MD_15 = rule(
    "MD-15",
    "self.operator != 'Exists' || !has(self.value)",
    "an Exists toleration must not set a value",
)
_ENGINE_SHAPE = (
    "(self.members.size() == 1 && self.members[0].role == 'Standalone') || "
    "(self.members.exists_one(m, m.role == 'Leader') && self.members.exists(m, m.role == 'Worker') "
    "&& !self.members.exists(m, m.role == 'Standalone'))"
)
MD_16 = rule(
    "MD-16",
    _ENGINE_SHAPE,
    "an engine must be either a single Standalone member or one Leader and one or more Workers",
)
MD_17 = rule(
    "MD-17",
    "self.members.exists(m, has(m.nodeSelector))",
    "at least one member of an engine must carry a nodeSelector requesting devices",
)
MD_18 = rule(
    "MD-18",
    f"self.name.{_DNS_LABEL_MATCH}",
    "engine name must be a DNS label: lowercase letters, digits and '-', starting and ending with "
    "a letter or digit",
)
MD_19 = rule(
    "MD-19",
    "!has(self.worker) || self.role == 'Worker'",
    "worker may only be set on a Worker member",
)
MD_20 = rule(
    "MD-20",
    "has(self.template.spec)",
    "member template.spec is required: it lists the member's containers",
)
MD_21 = rule(
    "MD-21",
    f"self.name.{_DNS_LABEL_MATCH}",
    "device request name must be a DNS label: it becomes a DRA DeviceRequest name",
)


def _http_ports(engine: str) -> str:
    """CEL for the http ports of an engine's serving members' engine containers, as nested lists.

    A 3-argument ``map`` (filter and transform in one) keeps every iteration variable on
    its schema path, so the API server's cost estimator sees the bounds of ``members``,
    ``containers`` and ``ports``; indexing a ``filter()`` result would lose them.
    A valid engine has one serving member with one engine container, so the result is
    ``[[port]]``; a container without a port named http serves on 8000.
    """
    named = "has(p.name) && p.name == 'http'"
    ports = (
        f"has(c.ports) && c.ports.exists(p, {named}) ? "
        f"c.ports.map(p, {named}, p.containerPort) : [8000]"
    )
    return (
        f"{engine}.members.map(m, m.role != 'Worker', "
        f"m.template.spec.containers.map(c, c.name == 'engine', {ports}))"
    )


MD_42 = rule(
    "MD-42",
    "(has(self.serving) && self.serving.mode == 'PrefillDecode') || "
    "!self.engines.all(e, e.members.exists(m, m.role != 'Worker') && e.members.all(m, "
    "has(m.template.spec) && m.template.spec.containers.exists(c, c.name == 'engine'))) || "
    f"self.engines.all(e, {_http_ports('e')} == {_http_ports('self.engines[0]')})",
    "under Unified serving every engine must use the same http port",
)


class TemplateMetadata(KubeModel):
    """Labels set on the ModelReplicas and ModelEndpoints this deployment composes."""

    model_config = ConfigDict(json_schema_extra=validations(*label_rules("", 2)))

    labels: LabelMap | None = Field(
        default=None,
        description="Labels to set on the ModelReplicas and ModelEndpoints this deployment "
        "composes, beside the labels Modelplane manages. Keys under modelplane.ai/ are reserved.",
    )


class EndpointPicker(KubeModel):
    """The endpoint picker Modelplane runs in front of the serving pods."""

    config: FreeForm | None = Field(
        default=None,
        description="The picker's configuration, such as an llm-d EndpointPickerConfig. Mounted "
        "unread at $(MODELPLANE_PICKER_CONFIG).",
    )
    template: PickerTemplate = Field(
        description="Pod template for the picker. The user writes the picker's command line."
    )


class ReplicaEndpointPicker(EndpointPicker):
    """The endpoint picker as copied onto a replica."""

    template: ReplicaPickerTemplate


class Serving(KubeModel):
    """How the deployment is served from the cluster edge to its engines."""

    model_config = ConfigDict(json_schema_extra=validations(MD_11, MD_12, MD_13))

    mode: ServingMode = Field(
        default="Unified",
        description="Unified serves prefill and decode on one engine. PrefillDecode splits them "
        "across two engines, each marking its phase.",
    )
    router: Literal["EndpointPicker"] | None = Field(
        default=None,
        description="The router the user writes. Required under PrefillDecode. Omitted under "
        "Unified: Modelplane's default picker configuration.",
    )
    endpoint_picker: EndpointPicker | None = Field(
        default=None, description="Required exactly when router is EndpointPicker."
    )


class Toleration(KubeModel):
    """Tolerates InferenceCluster taints when choosing clusters."""

    model_config = ConfigDict(json_schema_extra=validations(MD_14, MD_15))

    key: str | None = Field(
        default=None,
        description="Taint key to match. Empty with operator Exists tolerates every taint.",
    )
    operator: Literal["Exists", "Equal"] = Field(
        default="Equal",
        description="Exists matches any taint with the key; Equal matches key and value.",
    )
    value: str | None = None
    effect: Literal["NoSchedule", "NoExecute"] | None = Field(
        default=None, description="Taint effect to match. Empty matches all effects."
    )


class Selector(KubeModel):
    """One DRA device selector."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    cel: str | None = Field(
        default=None,
        min_length=1,
        max_length=10240,
        description="A DRA CEL expression evaluated against one device. It reads device.driver, "
        'device.attributes["<domain>"].<name> and device.capacity["<domain>"].<name> (a '
        "quantity), with the quantity() and semver() helpers.",
        json_schema_extra=DRA_SELECTOR,
    )


SelectorList = Annotated[
    tuple[Selector, ...], Field(min_length=1, max_length=8, json_schema_extra=ATOMIC)
]


class DeviceRequest(KubeModel):
    """A per-node device request; a claimable match becomes a DRA DeviceRequest."""

    model_config = ConfigDict(json_schema_extra=validations(MD_21))

    name: str = Field(
        min_length=1, max_length=63, description="Name of this request; the DRA DeviceRequest name."
    )
    count: int = Field(
        default=1, ge=1, le=64, description="How many matching devices a node must have."
    )
    selectors: SelectorList


class NodeSelector(KubeModel):
    """The per-node device request for a member's pods."""

    devices: Annotated[
        tuple[DeviceRequest, ...],
        Field(min_length=1, max_length=16, json_schema_extra=list_map("name")),
    ]


class WorkerSpec(KubeModel):
    """Settings of a Worker member."""

    nodes: int = Field(ge=1, le=63, description="How many nodes this member spans.")


class EngineMember(KubeModel):
    """One member of an engine's gang: a role with its hardware and pod template."""

    model_config = ConfigDict(json_schema_extra=validations(MD_19, MD_20))

    role: Role = Field(default="Standalone", description="The member's role in the engine.")
    node_selector: NodeSelector | None = Field(
        default=None, description="The per-node device request for this member's pods."
    )
    worker: WorkerSpec | None = Field(
        default=None, description="Settings for a Worker member. Valid only on a Worker."
    )
    template: PodTemplate = Field(description="Pod template for this member's engine pods.")


class Engine(KubeModel):
    """An engine: one gang of members, run as `copies` identical copies per replica."""

    model_config = ConfigDict(json_schema_extra=validations(MD_16, MD_17, MD_18))

    name: str = Field(
        min_length=1, max_length=63, description="Identifies the engine; a DNS label."
    )
    copies: int = Field(
        default=1, ge=1, le=64, description="How many identical copies of this engine per replica."
    )
    phase: Phase | None = Field(
        default=None, description="The engine's phase in a PrefillDecode deployment."
    )
    members: Annotated[
        tuple[EngineMember, ...], Field(min_length=1, max_length=2, json_schema_extra=ATOMIC)
    ]


class DeploymentTemplateSpec(KubeModel):
    """Everything about the replicas but their count."""

    model_config = ConfigDict(
        json_schema_extra=validations(MD_06, MD_07, MD_08, MD_09, MD_10, MD_42)
    )

    cluster_selector: LabelSelector | None = Field(
        default=None, description="Label selector over InferenceClusters; omitted, all qualify."
    )
    engines: Annotated[
        tuple[Engine, ...], Field(min_length=1, max_length=8, json_schema_extra=list_map("name"))
    ]
    model_cache_ref: NameRef | None = Field(
        default=None,
        description="A ModelCache in the same namespace; required for multi-node engines.",
    )
    serving: Serving | None = None
    tolerations: (
        Annotated[
            tuple[Toleration, ...], Field(max_length=MAX_TOLERATIONS, json_schema_extra=ATOMIC)
        ]
        | None
    ) = None


class DeploymentTemplate(KubeModel):
    """Template for the ModelReplicas this deployment fans out to."""

    metadata: TemplateMetadata | None = None
    spec: DeploymentTemplateSpec


class ModelDeploymentSpec(KubeModel):
    """The desired state of a ModelDeployment."""

    replicas: int = Field(
        ge=0, le=100, description="How many ModelReplicas to fan out to; 0 parks."
    )
    template: DeploymentTemplate
    crossplane: FreeForm | None = None


class ReplicaCounts(KubeModel):
    """Replica counts of a deployment."""

    ready: int | None = None
    total: int | None = None


class ModelDeploymentStatus(OpenModel):
    """Computed by Modelplane; of the input status only ReplicasScheduled is read (its Warning once per change)."""

    replicas: ReplicaCounts | None = None
    conditions: (
        Annotated[tuple[Condition, ...], Field(json_schema_extra=CONDITIONS_LIST)] | None
    ) = None


class ModelDeployment(KubeModel):
    """Deploy a model to the fleet, from one pod to disaggregated prefill and decode."""

    model_config = ConfigDict(json_schema_extra=validations(MD_01))

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["ModelDeployment"] = "ModelDeployment"
    metadata: ObjectMeta
    spec: ModelDeploymentSpec
    status: ModelDeploymentStatus | None = None


class ReplicaServing(Serving):
    """The serving block as copied onto a replica."""

    endpoint_picker: ReplicaEndpointPicker | None = None
