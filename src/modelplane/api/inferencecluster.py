"""InferenceCluster: one Kubernetes cluster of the fleet."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from modelplane.api.base import (
    GROUP_VERSION,
    FreeForm,
    KubeModel,
    OpenModel,
    list_map,
    rule,
    validations,
)
from modelplane.api.inferenceclass import (
    ICL_07,
    CapacityValue,
    Claim,
    Device,
    InferenceClass,
    TypedValue,
)
from modelplane.api.meta import CONDITIONS_LIST, Condition, ObjectMeta

Source = Literal["GKE", "EKS", "AKS", "Nebius", "Vultr", "Existing"]
Stack = Literal["Standard", "Dynamo"]
# Who brings the serving stack of an Existing cluster: this project installs it (Managed), or
# the platform did and this project verifies it (Provided) (docs/stack.md).
Components = Literal["Managed", "Provided"]
# The Gateway API implementations whose routing rules composition knows (docs/composition.md,
# "Routes per gateway").
GatewayImplementation = Literal["GKE", "Istio", "EnvoyGateway", "Kgateway"]

IC_01 = rule(
    "IC-01",
    "self.cluster.source != 'Nebius' || !has(self.nodePools) || self.nodePools.all(p, "
    "!has(p.fabric) || p.fabric.type != 'InfiniBand' || has(p.fabric.infiniband))",
    "fabric.infiniband is required when fabric.type is InfiniBand and cluster.source is Nebius.",
)
IC_02 = rule(
    "IC-02",
    "self.source != 'Existing' || has(self.existing)",
    "spec.cluster.existing is required when spec.cluster.source is Existing.",
)
IC_SOURCE_RULES = [
    rule(
        f"IC-0{i + 3}",
        f"self.source != '{value}' || has(self.{block})",
        f"spec.cluster.{block} is required when spec.cluster.source is {value}.",
    )
    for i, (value, block) in enumerate(
        [("GKE", "gke"), ("EKS", "eks"), ("AKS", "aks"), ("Nebius", "nebius"), ("Vultr", "vultr")]
    )
]
IC_08 = rule(
    "IC-08",
    "self == oldSelf",
    "spec.stack is immutable; recreate the cluster to change its serving stack.",
)
IC_12 = rule(
    "IC-12",
    "!has(oldSelf.components) || (has(self.components) && self.components == oldSelf.components)",
    "spec.cluster.existing.components is immutable once set; recreate the cluster to change "
    "who brings its serving stack.",
)
IC_13 = rule(
    "IC-13",
    "self.all(k, !k.startsWith('modelplane.ai/') && k.matches("
    "'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && self[k].matches("
    "'^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$'))",
    "placement labels must be valid label keys and values outside modelplane.ai/: they are "
    "stamped on every replica and endpoint of the cluster beside the managed labels",
)
# TLS on the cluster's gateway: the stack composes the HTTPS listener, so only where the stack
# installs the Gateway (Envoy Gateway, named, on a Managed stack;
# docs/crossplane.md, "TLS to the inference clusters' gateways").
IC_14 = rule(
    "IC-14",
    "!has(self.gateway) || !has(self.gateway.tls) || (has(self.gateway.implementation) && "
    "self.gateway.implementation == 'EnvoyGateway')",
    "spec.gateway.tls needs spec.gateway.implementation EnvoyGateway: the HTTPS listener is "
    "composed on the Envoy Gateway the stack installs",
)
IC_15 = rule(
    "IC-15",
    "!has(self.gateway) || !has(self.gateway.tls) || !has(self.cluster.existing) || "
    "!has(self.cluster.existing.components) || self.cluster.existing.components != 'Provided'",
    "spec.gateway.tls needs a Managed stack: a Provided stack's Gateway is the platform's, and "
    "no listener is composed on it",
)
# One or more PEM CERTIFICATE blocks (RFC 7468 strict encoding: base64 lines between the
# labels), nothing else but whitespace around them.
IC_16 = rule(
    "IC-16",
    "self.matches('^\\\\s*(-----BEGIN CERTIFICATE-----\\\\r?\\\\n([A-Za-z0-9+/=]{1,76}\\\\r?\\\\n)+"
    "-----END CERTIFICATE-----\\\\s*)+$')",
    "caCertificate must be PEM: one or more -----BEGIN CERTIFICATE----- blocks of base64 lines, "
    "nothing else",
)
IC_09 = rule(
    "IC-09",
    "!has(self.infiniband) || self.type == 'InfiniBand'",
    "fabric.infiniband is only valid when fabric.type is InfiniBand.",
)
IC_10 = rule(
    "IC-10",
    "self.metadata.name.size() <= 63",
    "InferenceCluster names must be at most 63 characters: the name is stamped as the "
    "modelplane.ai/cluster label value",
)
IC_11 = rule(
    "IC-11",
    "self.name.matches('^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')",
    "node pool name must be a non-empty label value: it is the modelplane.ai/pool node label",
)


class SecretRef(KubeModel):
    """A key of a Secret holding a kubeconfig."""

    name: str = Field(min_length=1, max_length=253)
    key: str = Field(default="kubeconfig", min_length=1, max_length=253)


class IdentitySecretRef(KubeModel):
    """A key of a Secret holding cloud identity credentials."""

    name: str = Field(min_length=1, max_length=253)
    key: str = Field(default="private_key", min_length=1, max_length=253)
    # The identity types a released provider-kubernetes (v1.2.1, pkg/kube/config/config.go
    # IdentityType, pkg/kube/client/client.go) accepts from a Secret: AWSWebIdentityCredentials
    # only works with InjectedIdentity and NebiusServiceAccountCredentials is only on its main
    # branch, so neither is offered (docs/crossplane.md "Run on Crossplane").
    type: Literal[
        "GoogleApplicationCredentials",
        "AzureServicePrincipalCredentials",
        "AzureWorkloadIdentityCredentials",
    ] = "GoogleApplicationCredentials"


class ExistingCache(KubeModel):
    """Where an existing cluster stages model caches."""

    storage_class_name: str | None = Field(default=None, min_length=1, max_length=253)


class ExistingCluster(KubeModel):
    """A cluster brought as-is."""

    model_config = ConfigDict(json_schema_extra=validations(IC_12))

    secret_ref: SecretRef
    identity_secret_ref: IdentitySecretRef | None = None
    cache: ExistingCache | None = None
    components: Components | None = Field(
        default=None,
        description=(
            "Who brings the serving stack: Managed (absent) installs every component the "
            "cluster's replicas need; Provided installs nothing and verifies them instead, "
            "reporting RequirementsMet. Immutable once set."
        ),
    )

    @property
    def mode(self) -> Components:
        """``components`` with its default applied: Managed when absent."""
        return self.components or "Managed"


class Credentials(KubeModel):
    """The provider config a cloud cluster is created through."""

    type: Literal["ProviderConfig", "ClusterProviderConfig"] = "ClusterProviderConfig"
    name: str = Field(default="default", min_length=1, max_length=253)


class GKECluster(KubeModel):
    """A GKE cluster."""

    region: str = Field(min_length=1, max_length=32)
    kubernetes_version: str = "1.35"
    credentials: Credentials | None = None


class EKSCluster(KubeModel):
    """An EKS cluster."""

    region: str = Field(min_length=1, max_length=32)
    kubernetes_version: str = "1.36"
    credentials: Credentials | None = None


class VultrCluster(KubeModel):
    """A Vultr cluster."""

    region: str = Field(min_length=1, max_length=32)
    kubernetes_version: str = "v1.36.1+3"
    credentials: Credentials | None = None


class AKSCluster(KubeModel):
    """An AKS cluster."""

    location: str = Field(min_length=1, max_length=32)
    kubernetes_version: str = "1.34"
    credentials: Credentials | None = None


class NebiusCluster(KubeModel):
    """A Nebius cluster."""

    kubernetes_version: str = "1.34"
    credentials: Credentials | None = None


class ClusterSource(KubeModel):
    """Where the cluster comes from. Validated, not read by the scheduler."""

    model_config = ConfigDict(json_schema_extra=validations(IC_02, *IC_SOURCE_RULES))

    source: Source
    existing: ExistingCluster | None = None
    gke: GKECluster | None = None
    eks: EKSCluster | None = None
    aks: AKSCluster | None = None
    nebius: NebiusCluster | None = None
    vultr: VultrCluster | None = None


class Taint(KubeModel):
    """A cluster taint; NoSchedule keeps new replicas off, NoExecute also drains."""

    key: str = Field(min_length=1)
    value: str | None = None
    effect: Literal["NoSchedule", "NoExecute"]


class CapacityBlock(KubeModel):
    """A capacity reservation. Not read."""

    capacity_reservation_id: str = Field(min_length=4, max_length=64, pattern=r"^cr-[0-9a-f]+$")


class InfiniBand(KubeModel):
    """An InfiniBand fabric. Pools naming the same fabric share it, so the scheduler may split
    an engine's device-claiming members across them."""

    fabric: str = Field(min_length=1, max_length=63)


class Fabric(KubeModel):
    """The node pool's network fabric. Read by the scheduler: it splits an engine's
    device-claiming members (a Leader and a Worker that both claim devices) across pools only
    when the pools share a fabric, both EFA or both InfiniBand with the same infiniband.fabric.
    None, InfiniBand without a fabric name, and a published pool no node pool declares share
    none. NVLink domains are not modelled."""

    model_config = ConfigDict(json_schema_extra=validations(IC_09))

    type: Literal["None", "EFA", "InfiniBand"] = "None"
    infiniband: InfiniBand | None = None


# The most nodes one pool may say it has (docs/api.md "Bounds"): past the largest
# cluster any managed Kubernetes offers, so no real pool is refused, yet a typo of extra
# digits is refused at validate instead of being scheduled.
MAX_POOL_NODES = 100_000


class NodePool(KubeModel):
    """A node pool of the cluster, of one InferenceClass; its fabric is also the fabric of the
    published pool of the same name."""

    model_config = ConfigDict(json_schema_extra=validations(IC_11))

    name: str = Field(max_length=40, description="The modelplane.ai/pool node label value.")
    class_name: str = Field(min_length=1, max_length=253, description="An InferenceClass name.")
    node_count: int = Field(default=1, ge=0, le=MAX_POOL_NODES)
    max_node_count: int | None = Field(default=None, ge=1, le=MAX_POOL_NODES)
    min_node_count: int | None = Field(default=None, ge=0, le=MAX_POOL_NODES)
    zones: tuple[str, ...] | None = None
    capacity_block: CapacityBlock | None = None
    fabric: Fabric | None = None


class ClusterGateway(KubeModel):
    """What the platform says about the cluster's inference gateway."""

    implementation: GatewayImplementation | None = Field(
        default=None,
        description=(
            "The Gateway API implementation behind modelplane-system/inference-gateway. "
            "Routes and gateway policies are composed for it. Absent: what the cluster "
            "publishes in status.gateway.implementation, else GKE for source GKE, else "
            "Gateway API defaults (a 0s request timeout, no policy objects)."
        ),
    )
    tls: GatewayTLS | None = Field(
        default=None,
        description=(
            "Serve HTTPS instead of HTTP, and reach the cluster's endpoints over it. Absent: "
            "plain HTTP on port 80."
        ),
    )


# The longest CA bundle a cluster may name: a root and an intermediate or two in PEM. Each
# service routing to the cluster copies it into a ConfigMap per serving gateway, so it counts
# towards the service's answer (docs/scale.md, "The largest answer").
MAX_CA_CERTIFICATE = 8192
# Gateway API's PreciseHostname (sigs.k8s.io/gateway-api apis/v1/shared_types.go @ v1.5.1),
# the type of Envoy Gateway's Backend tls.sni.
PRECISE_HOSTNAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


class CertificateRef(KubeModel):
    """A kubernetes.io/tls Secret in modelplane-system on the cluster, by name."""

    name: str = Field(min_length=1, max_length=253)


class GatewayTLS(KubeModel):
    """TLS on the cluster's gateway: what the front door reaches its replicas over."""

    hostname: str = Field(
        min_length=1,
        max_length=253,
        pattern=PRECISE_HOSTNAME,
        description=(
            "The name the certificate is issued for: the endpoints' origin is "
            "https://<hostname>, and the front door sends it as SNI and verifies the "
            "certificate against it (connecting to the gateway's published address)."
        ),
    )
    certificate_ref: CertificateRef = Field(
        description=(
            "The kubernetes.io/tls Secret the gateway's HTTPS listener serves, in "
            "modelplane-system on this cluster: the operator's to put there, never read or "
            "copied."
        ),
    )
    ca_certificate: (
        Annotated[
            str,
            Field(
                min_length=1, max_length=MAX_CA_CERTIFICATE, json_schema_extra=validations(IC_16)
            ),
        ]
        | None
    ) = Field(
        default=None,
        description=(
            "PEM CA certificates the front door trusts for this gateway (public data, not a "
            "Secret). Absent: the system's trusted CAs."
        ),
    )


class PlacementMetadata(KubeModel):
    """What every replica and endpoint placed on the cluster carries."""

    labels: (
        Annotated[
            dict[str, Annotated[str, Field(max_length=63)]],
            Field(max_length=16, json_schema_extra=validations(IC_13)),
        ]
        | None
    ) = Field(
        default=None,
        description=(
            "Stamped on every ModelReplica and ModelEndpoint placed on this cluster (over the "
            "template's labels, under the managed ones), so a ModelService can select by "
            "them, e.g. region."
        ),
    )


class ClusterPlacement(KubeModel):
    """How what is placed on the cluster is marked."""

    metadata: PlacementMetadata | None = None


class InferenceClusterSpec(KubeModel):
    """A cluster of the fleet."""

    model_config = ConfigDict(json_schema_extra=validations(IC_01, IC_14, IC_15))

    cluster: ClusterSource
    stack: Annotated[Stack, Field(json_schema_extra=validations(IC_08))] = "Standard"
    taints: (
        Annotated[tuple[Taint, ...], Field(json_schema_extra=list_map("key", "effect"))] | None
    ) = None
    node_pools: (
        Annotated[
            tuple[NodePool, ...],
            Field(min_length=1, max_length=8, json_schema_extra=list_map("name")),
        ]
        | None
    ) = None
    gateway: ClusterGateway | None = None
    placement: ClusterPlacement | None = None
    crossplane: FreeForm | None = None


class PoolDevice(KubeModel):
    """A device of a published pool: the class's device, claim and count required."""

    model_config = ConfigDict(json_schema_extra=validations(ICL_07))

    name: str = Field(min_length=1, max_length=63)
    claim: Claim
    driver: str = Field(min_length=1, max_length=253)
    device_class_name: str | None = Field(default=None, min_length=1, max_length=253)
    count: int = Field(ge=0)
    attributes: Annotated[dict[str, TypedValue], Field(max_length=32)] | None = None
    capacity: Annotated[dict[str, CapacityValue], Field(max_length=32)] | None = None


class GpuPool(KubeModel):
    """A pool the cluster publishes: node count and the devices of each node."""

    name: str
    nodes: int = Field(ge=0, le=MAX_POOL_NODES)
    devices: (
        Annotated[tuple[PoolDevice, ...], Field(max_length=16, json_schema_extra=list_map("name"))]
        | None
    ) = None


class Gateway(KubeModel):
    """The workload cluster's inference gateway."""

    address: str | None = None
    # Observed from the GatewayClass's controllerName by the InferenceCluster function.
    implementation: GatewayImplementation | None = None


class ProviderConfigRef(KubeModel):
    """The ClusterProviderConfig every Object composed for this cluster goes through."""

    name: str | None = None
    kind: Literal["ClusterProviderConfig"] = "ClusterProviderConfig"


class ClusterCacheStatus(KubeModel):
    """Not read."""

    storage_class_name: str | None = Field(default=None, max_length=253)


# The most replicas ``status.occupancy.replicas`` lists: a cluster's status must
# stay well under etcd's 1.5 MiB object limit (8,192 names of at most 317 characters is
# 2.6 MB only in the worst case; real names are about 40). Past it the list is cut in sort
# order while every replica stays charged in ``pools``, so a deployment charges an unlisted
# replica of its own once more: capacity is over-counted, never under (docs/scheduling.md).
MAX_OCCUPANCY_REPLICAS = 8192


class NodeRun(KubeModel):
    """``count`` consecutive nodes of a pool, in node order, with the same free devices."""

    count: int = Field(ge=1, le=MAX_POOL_NODES)
    free: Annotated[dict[str, Annotated[int, Field(ge=0)]], Field(max_length=16)] = Field(
        description="DRA device name -> devices still free on each of these nodes."
    )


class PoolOccupancy(KubeModel):
    """What the replicas pinned to a cluster occupy of one of its pools."""

    name: str = Field(min_length=1, max_length=63)
    full: bool | None = Field(
        default=None,
        description="Only when true: some pod of a counted replica fit no node of the pool.",
    )
    # A run holds at least one node, so a pool has at most as many runs as nodes.
    nodes: Annotated[tuple[NodeRun, ...], Field(max_length=MAX_POOL_NODES)]


class ClusterOccupancy(KubeModel):
    """The devices the ModelReplicas pinned to the cluster occupy.

    Published by the InferenceCluster function; a ModelDeployment's scheduling starts
    from it instead of charging every other deployment's replicas itself.
    """

    replicas: Annotated[
        tuple[Annotated[str, Field(min_length=3, max_length=317)], ...],
        Field(max_length=MAX_OCCUPANCY_REPLICAS),
    ] = Field(description="The ModelReplicas counted, as namespace/name, sorted.")
    pools: (
        Annotated[
            tuple[PoolOccupancy, ...], Field(max_length=8, json_schema_extra=list_map("name"))
        ]
        | None
    ) = Field(default=None, description="Pools where something is charged; absent: all free.")


ComponentPhase = Literal["Waiting", "Installing", "Ready", "Failed", "Provided", "Missing"]
StackPhase = Literal["Ready", "Installing", "Failed", "RequirementsMet", "RequirementsNotMet"]


class StackComponent(KubeModel):
    """One component of the cluster's serving stack and where it stands (docs/stack.md)."""

    name: str = Field(min_length=1, max_length=63)
    version: str = Field(min_length=1, max_length=64)
    phase: ComponentPhase
    message: str | None = Field(default=None, max_length=1024)


class StackStatus(KubeModel):
    """The serving stack of the cluster: installed (Managed) or verified (Provided)."""

    components: Components
    phase: StackPhase = Field(description="The printer column's value.")
    # One entry per stack component the cluster needs; a handful, bounded by the table.
    items: Annotated[
        tuple[StackComponent, ...], Field(max_length=32, json_schema_extra=list_map("name"))
    ] = ()

    @property
    def ready(self) -> bool:
        """New replicas may be placed: the stack is installed, or its requirements are met."""
        return self.phase in ("Ready", "RequirementsMet")


class InferenceClusterStatus(OpenModel):
    """What the cluster publishes."""

    conditions: (
        Annotated[tuple[Condition, ...], Field(json_schema_extra=CONDITIONS_LIST)] | None
    ) = None
    gateway: Gateway | None = None
    provider_config_ref: ProviderConfigRef | None = None
    gpu_pools: (
        Annotated[tuple[GpuPool, ...], Field(max_length=8, json_schema_extra=list_map("name"))]
        | None
    ) = None
    cache: ClusterCacheStatus | None = None
    namespace: str | None = None
    occupancy: ClusterOccupancy | None = None
    stack: StackStatus | None = None


class InferenceCluster(KubeModel):
    """One Kubernetes cluster of the fleet."""

    model_config = ConfigDict(json_schema_extra=validations(IC_10))

    api_version: Literal["modelplane.ai/v1alpha1"] = GROUP_VERSION
    kind: Literal["InferenceCluster"] = "InferenceCluster"
    metadata: ObjectMeta
    spec: InferenceClusterSpec
    status: InferenceClusterStatus | None = None


def derived_gpu_pools(
    cluster: InferenceCluster, classes: Mapping[str, InferenceClass]
) -> tuple[GpuPool, ...] | None:
    """``status.gpuPools`` as a provisioned cluster publishes them (docs/api.md, "InferenceCluster:
    what is read and derived").

    Per node pool, in order: its name, ``nodes`` = ``maxNodeCount`` if set, else
    ``nodeCount``, and the class's devices with defaults applied. None when there is
    no node pool or some ``className`` names no known class: the cluster then
    publishes nothing while it waits for its classes.
    """
    node_pools = cluster.spec.node_pools or ()
    if not node_pools or any(p.class_name not in classes for p in node_pools):
        return None
    return tuple(
        GpuPool(
            name=pool.name,
            nodes=pool.max_node_count if pool.max_node_count is not None else pool.node_count,
            devices=tuple(_pool_device(device) for device in classes[pool.class_name].spec.devices),
        )
        for pool in node_pools
    )


def _pool_device(device: Device) -> PoolDevice:
    # The class device is already valid (and defaulted), and a valid class device is a
    # valid pool device: skip re-validation, which the scheduler would pay per cluster.
    return PoolDevice.model_construct(
        name=device.name,
        claim=device.claim,
        driver=device.driver,
        device_class_name=device.device_class_name,
        count=device.count,
        attributes=device.attributes,
        capacity=device.capacity,
    )


def placement_labels(cluster: InferenceCluster) -> dict[str, str]:
    """The labels the cluster stamps on what is placed on it (a fresh dict)."""
    placement = cluster.spec.placement
    metadata = placement.metadata if placement is not None else None
    return dict(metadata.labels or {}) if metadata is not None else {}
