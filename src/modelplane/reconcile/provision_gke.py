"""GKE provisioning: network, cluster, node pools and identities (docs/provisioning.md, "GKE").

Pure: the InferenceCluster (``source: GKE``), its InferenceClasses and its observed composed
resources in; the namespaced managed resources of crossplane-contrib/provider-upjet-gcp
v3.0.0 (``*.gcp.m.upbound.io``), the Usages ordering their teardown, and where the
kubeconfig lands out. Every resource goes through the GCP provider config the cluster names
(``spec.cluster.gke.credentials``), whose ``projectID`` is the project: no resource names
one, except the two IAM bindings, which take it from the ServiceAccount the provider created.

What a replica needs of a node, and why each setting is here:

- the pool label (``naming.POOL_LABEL``) our pods select on;
- ``gke-no-default-nvidia-gpu-device-plugin=true`` (GKE's device plugin would advertise the
  same GPUs as the DRA driver), ``nvidia.com/gpu.present=true`` and
  ``cloud.google.com/gke-nvidia-gpu-dra-driver=true`` (the cluster autoscaler models the DRA
  driver's ResourceSlices, so a pool at zero nodes scales up for a claim): the node labels of
  GKE's DRA guide (gke-ai-labs.dev, "GPU fungibility with DRA and Custom Compute Classes") and of
  modelplaneai/modelplane ``functions/compose-gke-cluster`` (commit 190f7151);
- the driver GKE installs (``gpuDriverVersion: LATEST``), which lives under
  ``/home/kubernetes/bin/nvidia``: the stack's NVIDIA DRA driver is told so
  (``stack/components.py``, its GKE values);
- the ``nvidia.com/gpu`` NoSchedule taint every replica pod tolerates
  (``composition/pods.GPU_TOLERATION``), and the cluster's own ``spec.taints``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from modelplane.api import InferenceClass, InferenceCluster
from modelplane.api.inferenceclass import GKEPool
from modelplane.api.inferencecluster import GKECluster, NodePool
from modelplane.api.meta import holds
from modelplane.composition.conditions import observed_ready
from modelplane.composition.delivery import cluster_object
from modelplane.composition.observed import Observed
from modelplane.composition.taints import CPU_POOL_TAINT
from modelplane.composition.types import ComposedObject, Json
from modelplane.naming import (
    POOL_LABEL,
    SYSTEM_NAMESPACE,
    child_name,
    dns_name,
)
from modelplane.reconcile.provision import Provisioned
from modelplane.reconcile.stack import usage

COMPUTE_API = "compute.gcp.m.upbound.io/v1beta1"
CONTAINER_API = "container.gcp.m.upbound.io/v1beta1"
CLOUDPLATFORM_API = "cloudplatform.gcp.m.upbound.io/v1beta1"
# The external name is the GCP resource's name (provider-upjet-gcp v3.0.0 config/externalname.go:
# TemplatedStringAsIdentifier("name", ...) for networks, subnetworks, routers, NATs, clusters,
# node pools; "account_id" for service accounts). Set so it meets GCP's rules, which are
# stricter than a Kubernetes name: a GKE cluster or node pool name is at most 40 characters,
# a service account id 6 to 30, each a lowercase letter first.
EXTERNAL_NAME = "crossplane.io/external-name"
GCP_NAME_LENGTH = 40
ACCOUNT_ID_LENGTH = 30

KEY_PREFIX = "gke-"
NETWORK_KEY = "gke-network"
SUBNET_KEY = "gke-subnet"
PROXY_SUBNET_KEY = "gke-proxy-subnet"
ROUTER_KEY = "gke-router"
NAT_KEY = "gke-nat"
FILESTORE_API_KEY = "gke-filestore-api"
NODE_ACCOUNT_KEY = "gke-node-account"
NODE_ROLE_KEY = "gke-node-role"
ACCESS_ACCOUNT_KEY = "gke-access-account"
ACCESS_KEY_KEY = "gke-access-key"
ACCESS_ROLE_KEY = "gke-access-role"
CLUSTER_KEY = "gke-cluster"
SYSTEM_POOL_KEY = "gke-pool-system"
STORAGE_CLASS_KEY = "gke-storage-class"

# The VPC-native cluster's ranges (GKE "VPC-native clusters": a subnet with two secondary
# ranges, one for pods and one for Services). A /14 of pods is GKE's own default size; the
# proxy-only subnet is what the regional external Application Load Balancer behind the
# gke-l7-regional-external-managed GatewayClass needs (purpose REGIONAL_MANAGED_PROXY, one
# per region and VPC network, /23 recommended: GKE "Deploying Gateways").
NODE_CIDR = "10.0.0.0/20"
POD_RANGE = ("pods", "10.4.0.0/14")
SERVICE_RANGE = ("services", "10.8.0.0/20")
PROXY_CIDR = "10.129.0.0/23"

# The pool the stack's controllers run on: GPU nodes are tainted, so they land here.
SYSTEM_MACHINE_TYPE = "e2-standard-4"
SYSTEM_MAX_NODES = 3
IMAGE_TYPE = "COS_CONTAINERD"
OAUTH_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
GPU_DRIVER_VERSION = "LATEST"  # the NVIDIA DRA driver needs 565 or later
# A regional cluster's node pools span three zones of the region unless told otherwise (GKE
# "Regional clusters"): nodeCount is spread over them.
DEFAULT_ZONES = 3
GPU_TAINT = ("nvidia.com/gpu", "present", "NO_SCHEDULE")
CPU_TAINT = (CPU_POOL_TAINT, "true", "NO_SCHEDULE")
GPU_LABELS: Mapping[str, str] = {
    "gke-no-default-nvidia-gpu-device-plugin": "true",
    "nvidia.com/gpu.present": "true",
    "cloud.google.com/gke-nvidia-gpu-dra-driver": "true",
}
TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}
# Dynamic Resource Allocation is GA (resource.k8s.io/v1, on by default) from Kubernetes 1.34.
MIN_VERSION = (1, 34)
# The roles GKE documents for a least-privilege node service account, and the one our
# provider configs' identity needs to install the stack (cluster-wide RBAC included).
NODE_ROLE = "roles/container.defaultNodeServiceAccount"
ACCESS_ROLE = "roles/container.admin"
# GKE's Filestore CSI driver provisions one Filestore instance per volume; on a VPC other than
# `default` its StorageClass must name the network (GKE "Access Filestore instances with the
# Filestore CSI driver").
STORAGE_CLASS_NAME = "modelplane-rwx"
FILESTORE_PROVISIONER = "filestore.csi.storage.gke.io"
FILESTORE_TIER = "standard"
# provider-upjet-gcp v3.0.0 writes a Cluster's kubeconfig under this key
# (config/namespaced/container/config.go, clusterConnectionDetails) and a ServiceAccountKey's
# decoded JSON key under private_key (config/namespaced/cloudplatform/config.go).
KUBECONFIG_KEY = "kubeconfig"
PRIVATE_KEY_KEY = "private_key"
# The kubeconfig carries no credentials (GKE issues no client certificate): provider-kubernetes
# v1.2.1 (pkg/kube/client/client.go) and provider-helm v1.4.0 add a token from this identity.
IDENTITY_TYPE = "GoogleApplicationCredentials"


def kubeconfig_secret(cluster: str) -> str:
    """The Secret the GKE Cluster writes its kubeconfig to, in ``SYSTEM_NAMESPACE``."""
    return child_name(cluster, "gke-kubeconfig")


def access_secret(cluster: str) -> str:
    """The Secret the access ServiceAccountKey writes its JSON key to."""
    return child_name(cluster, "gke-access-key")


def pool_key(pool: str) -> str:
    """The resource key of a GPU pool's NodePool."""
    return f"gke-pool-{pool}"


def _mr_name(cluster: str, key: str) -> str:
    return child_name(cluster, key)


@dataclass(frozen=True, slots=True)
class _Ctx:
    cluster: str
    gke: GKECluster
    provider: Json

    def managed(
        self,
        api: str,
        kind: str,
        key: str,
        for_provider: Json,
        external: str | None = None,
        connection: str | None = None,
    ) -> Json:
        metadata: Json = {"name": _mr_name(self.cluster, key), "namespace": SYSTEM_NAMESPACE}
        if external is not None:
            metadata["annotations"] = {EXTERNAL_NAME: external}
        spec: Json = {"providerConfigRef": dict(self.provider), "forProvider": for_provider}
        if connection is not None:
            spec["writeConnectionSecretToRef"] = {"name": connection}
        return {"apiVersion": api, "kind": kind, "metadata": metadata, "spec": spec}

    def ref(self, key: str) -> Json:
        return {"name": _mr_name(self.cluster, key)}

    def gcp_name(self, part: str) -> str:
        return dns_name(self.cluster, part, max_length=GCP_NAME_LENGTH)


def network_name(cluster: str) -> str:
    """The VPC network's GCP name (the StorageClass names it)."""
    return dns_name(cluster, "net", max_length=GCP_NAME_LENGTH)


def _version_error(gke: GKECluster) -> str | None:
    parts = gke.kubernetes_version.split(".")
    try:
        version = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        return (
            f"spec.cluster.gke.kubernetesVersion {gke.kubernetes_version!r} is not a GKE "
            "version (major.minor, such as 1.35)"
        )
    if version < MIN_VERSION:
        return (
            f"spec.cluster.gke.kubernetesVersion {gke.kubernetes_version}: Dynamic Resource "
            "Allocation is GA from 1.34; set 1.34 or later"
        )
    return None


def _pool_errors(pool: NodePool, classes: Mapping[str, InferenceClass], region: str) -> list[str]:
    errors: list[str] = []
    where = f"spec.nodePools[{pool.name}]"
    found = classes.get(pool.class_name)
    if found is None:
        errors.append(f"{where}: InferenceClass {pool.class_name} not found")
    elif _recipe(found) is None:
        errors.append(
            f"{where}: InferenceClass {pool.class_name} has no GKE recipe "
            "(spec.provisioning.gke): GKE cannot create this pool"
        )
    for zone in pool.zones or ():
        if not zone.startswith(region + "-"):
            errors.append(f"{where}.zones: zone {zone} is not in region {region}")
    if pool.capacity_block is not None:
        errors.append(f"{where}.capacityBlock: an EC2 Capacity Block; GKE has none")
    if pool.fabric is not None and pool.fabric.type != "None":
        errors.append(f"{where}.fabric: {pool.fabric.type} is not provisioned on GKE")
    return errors


def _recipe(found: InferenceClass) -> GKEPool | None:
    provisioning = found.spec.provisioning
    return provisioning.gke if provisioning is not None else None


def _held(observed: Observed) -> tuple[ComposedObject, ...]:
    """What was composed before, kept as it was: an error never deletes a running cluster."""
    return tuple(
        ComposedObject(key, dict(seen.kept), True if holds(seen.conditions, "Ready") else None)
        for key, seen in sorted(observed.items())
        if _ours(key) and seen.kept
    )


def _ours(key: str) -> bool:
    return key.startswith(KEY_PREFIX) or key.startswith("uses-" + KEY_PREFIX)


def provision_gke(
    cluster: InferenceCluster, classes: Mapping[str, InferenceClass], observed: Observed
) -> Provisioned:
    """The GKE managed resources of ``cluster``, whether they are Ready, and its kubeconfig."""
    name = cluster.metadata.name or ""
    connection = (SYSTEM_NAMESPACE, kubeconfig_secret(name), KUBECONFIG_KEY)
    identity = (IDENTITY_TYPE, SYSTEM_NAMESPACE, access_secret(name), PRIVATE_KEY_KEY)
    gke = cluster.spec.cluster.gke
    if gke is None:
        message = "spec.cluster.gke is required when spec.cluster.source is GKE"
        return Provisioned(_held(observed), False, connection, message, identity)
    errors = [e for e in [_version_error(gke)] if e is not None]
    for pool in cluster.spec.node_pools or ():
        errors.extend(_pool_errors(pool, classes, gke.region))
    if errors:
        return Provisioned(_held(observed), False, connection, "; ".join(errors), identity)
    credentials = gke.credentials
    provider = {
        "kind": credentials.type if credentials is not None else "ClusterProviderConfig",
        "name": credentials.name if credentials is not None else "default",
    }
    ctx = _Ctx(name, gke, provider)
    parts = _compose(ctx, cluster, classes, observed)
    objects: list[ComposedObject] = []
    waiting: list[str] = []
    for key, obj in parts:
        ready = holds(observed[key].conditions, "Ready") if key in observed else False
        objects.append(ComposedObject(key, obj, True if ready else None))
        if not ready:
            waiting.append(f"{obj['kind']} {key.removeprefix(KEY_PREFIX)}")
    missing = [k for k in (NODE_ROLE_KEY, ACCESS_ROLE_KEY) if k not in dict(parts)]
    for key in missing:
        waiting.append(f"ProjectIAMMember {key.removeprefix(KEY_PREFIX)} (waits for its account)")
    for key, obj in _usages(ctx, parts):
        objects.append(ComposedObject(key, obj, True if key in observed else None))
    ready = not waiting
    extra = _storage_class(ctx, observed) if ready or STORAGE_CLASS_KEY in observed else None
    if extra is not None:
        objects.append(extra)
    status = None if ready else "provisioning on GKE: " + ", ".join(waiting)
    return Provisioned(tuple(objects), ready, connection, status, identity)


def _compose(
    ctx: _Ctx, cluster: InferenceCluster, classes: Mapping[str, InferenceClass], observed: Observed
) -> list[tuple[str, Json]]:
    region = ctx.gke.region
    network_ref = {"networkRef": ctx.ref(NETWORK_KEY)}
    parts: list[tuple[str, Json]] = [
        (
            NETWORK_KEY,
            ctx.managed(
                COMPUTE_API,
                "Network",
                NETWORK_KEY,
                {"autoCreateSubnetworks": False, "routingMode": "REGIONAL"},
                network_name(ctx.cluster),
            ),
        ),
        (
            SUBNET_KEY,
            ctx.managed(
                COMPUTE_API,
                "Subnetwork",
                SUBNET_KEY,
                {
                    "region": region,
                    "ipCidrRange": NODE_CIDR,
                    **network_ref,
                    # Private nodes reach Google APIs (the image registry) without NAT.
                    "privateIpGoogleAccess": True,
                    "secondaryIpRange": [
                        {"rangeName": POD_RANGE[0], "ipCidrRange": POD_RANGE[1]},
                        {"rangeName": SERVICE_RANGE[0], "ipCidrRange": SERVICE_RANGE[1]},
                    ],
                },
                ctx.gcp_name("nodes"),
            ),
        ),
        (
            PROXY_SUBNET_KEY,
            ctx.managed(
                COMPUTE_API,
                "Subnetwork",
                PROXY_SUBNET_KEY,
                {
                    "region": region,
                    "ipCidrRange": PROXY_CIDR,
                    **network_ref,
                    "purpose": "REGIONAL_MANAGED_PROXY",
                    "role": "ACTIVE",
                },
                ctx.gcp_name("proxy"),
            ),
        ),
        (
            ROUTER_KEY,
            ctx.managed(
                COMPUTE_API,
                "Router",
                ROUTER_KEY,
                {"region": region, **network_ref},
                ctx.gcp_name("router"),
            ),
        ),
        (
            NAT_KEY,
            ctx.managed(
                COMPUTE_API,
                "RouterNAT",
                NAT_KEY,
                {
                    "region": region,
                    "routerRef": ctx.ref(ROUTER_KEY),
                    # Private nodes pull charts and images from outside Google (registry.k8s.io,
                    # docker.io, ghcr.io) through it.
                    "natIpAllocateOption": "AUTO_ONLY",
                    "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES",
                },
                ctx.gcp_name("nat"),
            ),
        ),
        (
            FILESTORE_API_KEY,
            ctx.managed(
                CLOUDPLATFORM_API,
                "ProjectService",
                FILESTORE_API_KEY,
                # A fresh project has the Filestore API off, and the CSI driver's volumes then
                # stay Pending; other clusters of the project may use it, so never turned off.
                {"service": "file.googleapis.com", "disableOnDestroy": False},
            ),
        ),
        (
            NODE_ACCOUNT_KEY,
            ctx.managed(
                CLOUDPLATFORM_API,
                "ServiceAccount",
                NODE_ACCOUNT_KEY,
                {"displayName": f"Modelplane GKE nodes of {ctx.cluster}"[:100]},
                dns_name("mpn", ctx.cluster, max_length=ACCOUNT_ID_LENGTH),
            ),
        ),
        (
            ACCESS_ACCOUNT_KEY,
            ctx.managed(
                CLOUDPLATFORM_API,
                "ServiceAccount",
                ACCESS_ACCOUNT_KEY,
                {"displayName": f"Modelplane access to GKE cluster {ctx.cluster}"[:100]},
                dns_name("mpa", ctx.cluster, max_length=ACCOUNT_ID_LENGTH),
            ),
        ),
        (
            ACCESS_KEY_KEY,
            ctx.managed(
                CLOUDPLATFORM_API,
                "ServiceAccountKey",
                ACCESS_KEY_KEY,
                {"serviceAccountIdRef": ctx.ref(ACCESS_ACCOUNT_KEY)},
                connection=access_secret(ctx.cluster),
            ),
        ),
    ]
    for key, account, role in (
        (NODE_ROLE_KEY, NODE_ACCOUNT_KEY, NODE_ROLE),
        (ACCESS_ROLE_KEY, ACCESS_ACCOUNT_KEY, ACCESS_ROLE),
    ):
        seen = observed.get(account)
        if seen is not None and seen.email and seen.project:
            parts.append(
                (
                    key,
                    ctx.managed(
                        CLOUDPLATFORM_API,
                        "ProjectIAMMember",
                        key,
                        {
                            "project": seen.project,
                            "role": role,
                            "member": f"serviceAccount:{seen.email}",
                        },
                    ),
                )
            )
    parts.append((CLUSTER_KEY, _cluster(ctx)))
    parts.append((SYSTEM_POOL_KEY, _system_pool(ctx)))
    for pool in cluster.spec.node_pools or ():
        recipe = _recipe(classes[pool.class_name])
        assert recipe is not None  # _pool_errors refused a pool without one
        parts.append((pool_key(pool.name), _gpu_pool(ctx, cluster, pool, recipe)))
    return parts


def _cluster(ctx: _Ctx) -> Json:
    return ctx.managed(
        CONTAINER_API,
        "Cluster",
        CLUSTER_KEY,
        {
            "location": ctx.gke.region,
            "minMasterVersion": ctx.gke.kubernetes_version,
            "releaseChannel": {"channel": "REGULAR"},
            # Deleting the InferenceCluster deletes its GKE cluster.
            "deletionProtection": False,
            # GKE creates a cluster with a node pool; ours are separate resources.
            "removeDefaultNodePool": True,
            "initialNodeCount": 1,
            "networkRef": ctx.ref(NETWORK_KEY),
            "subnetworkRef": ctx.ref(SUBNET_KEY),
            "networkingMode": "VPC_NATIVE",
            "ipAllocationPolicy": {
                "clusterSecondaryRangeName": POD_RANGE[0],
                "servicesSecondaryRangeName": SERVICE_RANGE[0],
            },
            # Nodes have no public address (egress through the NAT); the control plane keeps
            # its public endpoint, which the provider configs reach.
            "privateClusterConfig": {"enablePrivateNodes": True, "enablePrivateEndpoint": False},
            # GKE's Gateway controller and its GatewayClasses (gke-l7-*), which the stack's
            # inference Gateway names.
            "gatewayApiConfig": {"channel": "CHANNEL_STANDARD"},
            "addonsConfig": {"gcpFilestoreCsiDriverConfig": {"enabled": True}},
        },
        ctx.gcp_name("gke"),
        connection=kubeconfig_secret(ctx.cluster),
    )


def _node_config(ctx: _Ctx, machine_type: str, labels: Json) -> Json:
    return {
        "machineType": machine_type,
        "imageType": IMAGE_TYPE,
        "oauthScopes": list(OAUTH_SCOPES),
        "serviceAccountRef": ctx.ref(NODE_ACCOUNT_KEY),
        "labels": labels,
    }


def _system_pool(ctx: _Ctx) -> Json:
    return ctx.managed(
        CONTAINER_API,
        "NodePool",
        SYSTEM_POOL_KEY,
        {
            "location": ctx.gke.region,
            "clusterRef": ctx.ref(CLUSTER_KEY),
            "initialNodeCount": 1,
            "autoscaling": {
                "totalMinNodeCount": 1,
                "totalMaxNodeCount": SYSTEM_MAX_NODES,
                "locationPolicy": "BALANCED",
            },
            "management": {"autoRepair": True, "autoUpgrade": True},
            "nodeConfig": _node_config(ctx, SYSTEM_MACHINE_TYPE, {}),
        },
        ctx.gcp_name("system"),
    )


def _gpu_pool(ctx: _Ctx, cluster: InferenceCluster, pool: NodePool, recipe: GKEPool) -> Json:
    total_max = pool.max_node_count if pool.max_node_count is not None else pool.node_count
    total_min = pool.min_node_count if pool.min_node_count is not None else pool.node_count
    total_min = min(total_min, total_max)
    zones = len(pool.zones) if pool.zones else DEFAULT_ZONES
    accelerator = recipe.accelerator
    # A CPU-only pool (ICL-10: no accelerator) carries the CPU pool taint its pods tolerate
    # (composition/taints.py), a GPU pool the GPU taint and the labels of GKE's DRA setup.
    own = GPU_TAINT if accelerator is not None else CPU_TAINT
    taints = [{"key": own[0], "value": own[1], "effect": own[2]}]
    for taint in cluster.spec.taints or ():
        taints.append(
            {"key": taint.key, "value": taint.value or "", "effect": TAINT_EFFECTS[taint.effect]}
        )
    labels = {POOL_LABEL: pool.name, **(GPU_LABELS if accelerator is not None else {})}
    node_config = _node_config(ctx, recipe.machine_type, labels)
    node_config.update({"diskSizeGb": recipe.disk_size_gb, "taint": taints})
    if accelerator is not None:
        node_config["guestAccelerator"] = [
            {
                "type": accelerator.type,
                "count": accelerator.count,
                "gpuDriverInstallationConfig": {"gpuDriverVersion": GPU_DRIVER_VERSION},
            }
        ]
    for_provider: Json = {
        "location": ctx.gke.region,
        "clusterRef": ctx.ref(CLUSTER_KEY),
        # Per zone: nodeCount spread over the pool's zones, rounded up, but never more in
        # all than the pool's maximum (the autoscaler adds what is short, on demand).
        "initialNodeCount": min(math.ceil(pool.node_count / zones), total_max // zones),
        # Totals over every zone, so the pool's bounds are the ones published.
        "autoscaling": {
            "totalMinNodeCount": total_min,
            "totalMaxNodeCount": total_max,
            "locationPolicy": "ANY",
        },
        "management": {"autoRepair": True, "autoUpgrade": True},
        "nodeConfig": node_config,
    }
    if pool.zones:
        for_provider["nodeLocations"] = list(pool.zones)
    return ctx.managed(
        CONTAINER_API, "NodePool", pool_key(pool.name), for_provider, ctx.gcp_name(pool.name)
    )


def _usages(ctx: _Ctx, parts: list[tuple[str, Json]]) -> list[tuple[str, Json]]:
    """Teardown order: pools before the cluster, the cluster before its subnets and NAT,
    those and the router before the network. The pools are the last resources in use, so
    everything else is kept until they are gone: their service account and its role, and
    the key and role our provider configs reach the cluster with (the stack, uninstalled
    first, needs them: the InferenceCluster function keeps the pools until it is gone)."""
    by_key = dict(parts)
    pairs: list[tuple[str, str]] = [
        (NETWORK_KEY, SUBNET_KEY),
        (NETWORK_KEY, PROXY_SUBNET_KEY),
        (NETWORK_KEY, ROUTER_KEY),
        (ROUTER_KEY, NAT_KEY),
        (SUBNET_KEY, CLUSTER_KEY),
        (PROXY_SUBNET_KEY, CLUSTER_KEY),
        (NAT_KEY, CLUSTER_KEY),
        (FILESTORE_API_KEY, CLUSTER_KEY),
        (ACCESS_ACCOUNT_KEY, ACCESS_KEY_KEY),
        (ACCESS_ACCOUNT_KEY, ACCESS_ROLE_KEY),
        (NODE_ACCOUNT_KEY, NODE_ROLE_KEY),
    ]
    for key in by_key:
        if key.startswith("gke-pool-"):
            for kept in (CLUSTER_KEY, NODE_ACCOUNT_KEY, NODE_ROLE_KEY):
                pairs.append((kept, key))
            for kept in (ACCESS_KEY_KEY, ACCESS_ROLE_KEY):
                pairs.append((kept, key))
    return [
        usage(ctx.cluster, of, by_key[of], by, by_key[by])
        for of, by in pairs
        if of in by_key and by in by_key
    ]


def _storage_class(ctx: _Ctx, observed: Observed) -> ComposedObject:
    """The ReadWriteMany StorageClass ModelCaches use, once the cluster answers."""
    manifest: Json = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS_NAME},
        "provisioner": FILESTORE_PROVISIONER,
        "parameters": {"tier": FILESTORE_TIER, "network": network_name(ctx.cluster)},
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
    }
    obj = cluster_object(ctx.cluster, STORAGE_CLASS_KEY, manifest)
    ready = observed_ready(observed.get(STORAGE_CLASS_KEY))
    return ComposedObject(STORAGE_CLASS_KEY, obj, True if ready else None)
