"""ModelReplica: one scheduled replica, pinned to one cluster and, member by member, to a pool."""

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
from modelplane.api.inferencecluster import GatewayImplementation, ProviderConfigRef, Stack
from modelplane.api.meta import CONDITIONS_LIST, Condition, NameRef, ObjectMeta
from modelplane.api.modeldeployment import (
    MD_06,
    MD_07,
    MD_08,
    MD_09,
    MD_18,
    MD_19,
    MD_20,
    MD_21,
    Phase,
    ReplicaServing,
    Role,
    WorkerSpec,
)
from modelplane.api.pod import ReplicaPodTemplate

MR_01 = rule("MR-01", MD_06.rule, MD_06.message)
MR_02 = rule("MR-02", MD_07.rule, MD_07.message)
MR_03 = rule("MR-03", MD_08.rule, MD_08.message)
MR_04 = rule("MR-04", MD_09.rule, MD_09.message)
MR_05 = rule(
    "MR-05",
    "(self.members.size() == 1 && self.members[0].role == 'Standalone') || "
    "(self.members.exists_one(m, m.role == 'Leader') && self.members.exists(m, m.role == 'Worker') "
    "&& !self.members.exists(m, m.role == 'Standalone'))",
    "an engine must be either a single Standalone member or one Leader and one Worker member",
)
MR_06 = rule(
    "MR-06",
    "self.members.exists(m, has(m.deviceRequests))",
    "at least one member of an engine must carry deviceRequests",
)


class ReplicaSelector(KubeModel):
    """A selector copied verbatim from the deployment."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    cel: str | None = Field(
        default=None,
        min_length=1,
        max_length=10240,
        description="A DRA CEL expression evaluated against one device, as the deployment wrote it.",
        json_schema_extra=DRA_SELECTOR,
    )


class ResolvedDeviceRequest(KubeModel):
    """A claimable request resolved against the member's pool."""

    model_config = ConfigDict(json_schema_extra=validations(MD_21))

    name: str = Field(min_length=1, max_length=63)
    device_class_name: str = Field(min_length=1, max_length=253)
    count: int = Field(default=1, ge=1, le=64)
    selectors: (
        Annotated[tuple[ReplicaSelector, ...], Field(max_length=8, json_schema_extra=ATOMIC)] | None
    ) = None


class ReplicaMember(KubeModel):
    """A member pinned to a pool, with the device requests it resolved there."""

    model_config = ConfigDict(json_schema_extra=validations(MD_19, MD_20))

    role: Role = "Standalone"
    node_pool_name: str = Field(
        min_length=1, description="The pool this member's pods are pinned to."
    )
    device_requests: (
        Annotated[
            tuple[ResolvedDeviceRequest, ...],
            Field(min_length=1, max_length=16, json_schema_extra=list_map("name")),
        ]
        | None
    ) = None
    worker: WorkerSpec | None = None
    template: ReplicaPodTemplate


class ReplicaEngine(KubeModel):
    """An engine of a replica, in the deployment's engine order."""

    model_config = ConfigDict(json_schema_extra=validations(MD_18, MR_05, MR_06))

    name: str = Field(min_length=1, max_length=63)
    copies: int = Field(default=1, ge=1, le=64)
    phase: Phase | None = None
    members: Annotated[
        tuple[ReplicaMember, ...], Field(min_length=1, max_length=2, json_schema_extra=ATOMIC)
    ]


class ClusterInfoPool(KubeModel):
    """A pool the replica's members are pinned to, with the DRA drivers its cluster publishes
    for it (``status.gpuPools[].devices[].driver``)."""

    name: str = Field(min_length=1, max_length=253)
    # A published pool lists at most 16 devices, so at most 16 drivers.
    drivers: Annotated[
        tuple[Annotated[str, Field(min_length=1, max_length=253)], ...],
        Field(max_length=16, json_schema_extra=ATOMIC),
    ] = ()


class ClusterInfo(KubeModel):
    """What the replica's composition reads of its InferenceCluster, stamped by its
    ModelDeployment (docs/api.md, "ModelReplica: clusterInfo").

    Present, the replica function reads nothing but the replica; absent (a replica written
    by an older release), it requires its InferenceCluster and reads the same facts there.
    Not part of the replica's identity or template revision: refreshing it never rolls
    the replica.
    """

    provider_config_ref: ProviderConfigRef | None = Field(
        default=None,
        description="The cluster's status.providerConfigRef; absent while it publishes none.",
    )
    stack: Stack = Field(default="Standard", description="The cluster's spec.stack.")
    gateway_implementation: GatewayImplementation | None = Field(
        default=None,
        description="The cluster's gateway implementation (declared, observed or derived).",
    )
    node_pools: (
        Annotated[
            tuple[ClusterInfoPool, ...],
            Field(min_length=1, max_length=16, json_schema_extra=list_map("name")),
        ]
        | None
    ) = Field(
        default=None,
        description="The drivers the cluster publishes for each pool the members are pinned to.",
    )


class ModelReplicaSpec(KubeModel):
    """The desired state of one replica."""

    model_config = ConfigDict(json_schema_extra=validations(MR_01, MR_02, MR_03, MR_04))

    cluster_name: str = Field(
        min_length=1, description="The InferenceCluster this replica is pinned to."
    )
    model_cache_ref: NameRef | None = None
    serving: ReplicaServing | None = None
    engines: Annotated[
        tuple[ReplicaEngine, ...],
        Field(min_length=1, max_length=8, json_schema_extra=list_map("name")),
    ]
    crossplane: FreeForm | None = None
    cluster_info: ClusterInfo | None = None


class ModelReplicaStatus(OpenModel):
    """Conditions of a replica: ModelAccepted, ModelReady, Crossplane's Ready and Synced."""

    conditions: (
        Annotated[tuple[Condition, ...], Field(json_schema_extra=CONDITIONS_LIST)] | None
    ) = None


class ModelReplica(KubeModel):
    """One complete serving instance of a ModelDeployment on one InferenceCluster."""

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["ModelReplica"] = "ModelReplica"
    metadata: ObjectMeta
    spec: ModelReplicaSpec
    status: ModelReplicaStatus | None = None
