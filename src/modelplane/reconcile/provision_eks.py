"""EKS provisioning: the AWS managed resources that make ``source: EKS`` a serving cluster.

Pure: the InferenceCluster, the InferenceClasses its pools name and its observed composed
resources in; a ``Provisioned`` out (reconcile/provision.py). Every resource is a namespaced
managed resource of provider-upjet-aws v2.6.0 (``*.aws.m.upbound.io``) in
``naming.SYSTEM_NAMESPACE``, named ``child_name(cluster, key)`` after its resource key, and
goes through ``spec.cluster.eks.credentials`` (docs/provisioning.md, "EKS").

What is composed, by resource key:

- network: a VPC (``VPC_CIDR``), per availability zone a public and a private subnet, an
  Elastic IP and a NAT gateway in the public subnet, a private route table routing
  ``0.0.0.0/0`` to that NAT gateway, and the associations; one internet gateway and one public
  route table routing to it;
- identities: the cluster role (AmazonEKSClusterPolicy) and the node role
  (AmazonEKSWorkerNodePolicy, AmazonEKS_CNI_Policy, AmazonEC2ContainerRegistryReadOnly);
- the EKS Cluster at ``spec.cluster.eks.kubernetesVersion`` (API authentication, the
  creator an administrator) and its ClusterAuth, whose connection Secret holds the
  kubeconfig (``connection``);
- a system node group for the serving stack, and one NodeGroup per ``spec.nodePools[]`` from
  its class's EKS recipe, with a LaunchTemplate where the pool takes a Capacity Block or EFA;
- EFS for ReadWriteMany model caches: a FileSystem, a MountTarget per private subnet, a
  security group admitting NFS from the VPC, the aws-efs-csi-driver add-on with its
  pod-identity role (and the eks-pod-identity-agent add-on it needs);
- the cluster autoscaler's IAM policy, role and pod-identity association (its Helm Release
  is a stack component).

Creation is ordered by readiness: what runs on the cluster (node groups, ClusterAuth,
pod-identity associations) is composed once the Cluster is Ready, the add-ons once the system
node group is; what was composed before stays composed, so a blip never deletes it.
Teardown is ordered by Usages: the node groups before the Cluster, the Cluster before its
network and roles.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from modelplane.api import InferenceClass, InferenceCluster
from modelplane.api.inferenceclass import EKSPool
from modelplane.api.inferencecluster import Credentials, EKSCluster, NodePool
from modelplane.api.meta import get_condition, holds
from modelplane.composition.conditions import observed_ready
from modelplane.composition.delivery import cluster_object
from modelplane.composition.observed import Observed, ObservedObject
from modelplane.composition.taints import CPU_POOL_TAINT
from modelplane.composition.types import ComposedObject, Json
from modelplane.errors import ModelplaneError
from modelplane.naming import (
    CLUSTER_LABEL,
    POOL_LABEL,
    SYSTEM_NAMESPACE,
    child_name,
)
from modelplane.reconcile.provision import Provisioned
from modelplane.reconcile.stack import USAGE_KEY_PREFIX, usage

EC2_API = "ec2.aws.m.upbound.io/v1beta1"
EKS_API = "eks.aws.m.upbound.io/v1beta1"
IAM_API = "iam.aws.m.upbound.io/v1beta1"
EFS_API = "efs.aws.m.upbound.io/v1beta1"

KEY_PREFIX = "eks-"
VPC_KEY = "eks-vpc"
IGW_KEY = "eks-internet-gateway"
PUBLIC_ROUTE_TABLE_KEY = "eks-route-table-public"
PUBLIC_ROUTE_KEY = "eks-route-public"
CLUSTER_ROLE_KEY = "eks-role-cluster"
NODE_ROLE_KEY = "eks-role-node"
CLUSTER_KEY = "eks-cluster"
CLUSTER_AUTH_KEY = "eks-cluster-auth"
SYSTEM_NODE_GROUP_KEY = "eks-nodegroup-system"
EFS_KEY = "eks-efs"
EFS_SECURITY_GROUP_KEY = "eks-efs-security-group"
EFS_NFS_RULE_KEY = "eks-efs-nfs"
EFS_CSI_ROLE_KEY = "eks-role-efs-csi"
EFS_CSI_POLICY_KEY = "eks-policy-efs-csi"
EFS_CSI_IDENTITY_KEY = "eks-pod-identity-efs-csi"
POD_IDENTITY_ADDON_KEY = "eks-addon-pod-identity-agent"
EFS_CSI_ADDON_KEY = "eks-addon-efs-csi-driver"
AUTOSCALER_ROLE_KEY = "eks-role-cluster-autoscaler"
AUTOSCALER_IAM_POLICY_KEY = "eks-iam-policy-cluster-autoscaler"
AUTOSCALER_POLICY_KEY = "eks-policy-cluster-autoscaler"
AUTOSCALER_IDENTITY_KEY = "eks-pod-identity-cluster-autoscaler"
NODE_GROUP_PREFIX = "eks-nodegroup-"
LAUNCH_TEMPLATE_PREFIX = "eks-launchtemplate-"

# The VPC and its subnets. A zone's subnets sit at a slot fixed by its letter, so adding or
# removing a zone never moves another zone's subnets: a private /19 (8,190 addresses, room
# for the VPC CNI's one address per pod) at 10.0.32*i.0 and a public /24 at 10.0.192+i.0.
VPC_CIDR = "10.0.0.0/16"
ZONE_LETTERS = "abcdef"
# The zones of a cluster whose pools name fewer than two: EKS needs subnets in two zones
# (botocore eks service-2.json, VpcConfigRequest.subnetIds: "at least two").
DEFAULT_ZONE_LETTERS = "abc"

# botocore eks 2017-11-01 service-2.json: AMITypes, CapacityTypes, TaintEffect,
# AuthenticationMode; ec2 2016-11-15: MarketType, NetworkInterfaceType.
GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"
SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"
ON_DEMAND = "ON_DEMAND"
CAPACITY_BLOCK = "CAPACITY_BLOCK"
CAPACITY_BLOCK_MARKET = "capacity-block"
EFA_INTERFACE = "efa"
AUTHENTICATION_MODE = "API"
# The taint every GPU pool carries; composed pods tolerate it (composition/pods.py).
GPU_TAINT: Json = {"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE"}
CPU_TAINT: Json = {"key": CPU_POOL_TAINT, "value": "true", "effect": "NO_SCHEDULE"}
# The root volume of the AL2023 EKS AMIs, where a launch template puts the recipe's disk.
ROOT_DEVICE = "/dev/xvda"

SYSTEM_INSTANCE_TYPE = "m7i.xlarge"
SYSTEM_NODES = (2, 2, 4)  # min, desired, max

# AWS managed policies (arn:aws:iam::aws:policy/...).
_AWS_POLICY = "arn:aws:iam::aws:policy/"
CLUSTER_POLICIES = ("AmazonEKSClusterPolicy",)
NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryReadOnly",
)
EFS_CSI_POLICY = "service-role/AmazonEFSCSIDriverPolicy"

# The EFS CSI driver's controller ServiceAccount (aws-efs-csi-driver) and the cluster
# autoscaler's, as the stack's Release names it (docs/provisioning.md, "EKS").
EFS_CSI_SERVICE_ACCOUNT = ("kube-system", "efs-csi-controller-sa")
AUTOSCALER_SERVICE_ACCOUNT = ("kube-system", "cluster-autoscaler")
# The storage class the cluster publishes in status.cache.storageClassName: EFS access points
# (efs.csi.aws.com, provisioningMode efs-ap) on the cluster's file system.
EFS_STORAGE_CLASS = "modelplane-efs"
STORAGE_CLASS_KEY = "eks-storage-class"
EFS_PROVISIONER = "efs.csi.aws.com"

# kubernetes/autoscaler cluster-autoscaler-chart-9.59.0, cloudprovider/aws/README.md "Full
# Cluster Autoscaler Features Policy": what auto-discovery and scale-from-zero read and do.
AUTOSCALER_POLICY: Json = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": [
                "autoscaling:DescribeAutoScalingGroups",
                "autoscaling:DescribeAutoScalingInstances",
                "autoscaling:DescribeLaunchConfigurations",
                "autoscaling:DescribeScalingActivities",
                "ec2:DescribeImages",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplateVersions",
                "ec2:GetInstanceTypesFromInstanceRequirements",
                "eks:DescribeNodegroup",
            ],
            "Resource": ["*"],
        },
        {
            "Effect": "Allow",
            "Action": [
                "autoscaling:SetDesiredCapacity",
                "autoscaling:TerminateInstanceInAutoScalingGroup",
            ],
            "Resource": ["*"],
        },
    ],
}

# ClusterAuth writes the kubeconfig under this key of its connection Secret (provider-upjet-aws
# v2.6.0 internal/controller/namespaced/eks/clusterauth/eks.go, crossplane-runtime v2.2.0
# apis/common/resource.go ResourceCredentialsSecretKubeconfigKey).
KUBECONFIG_KEY = "kubeconfig"

MAX_MESSAGE = 1024
_HASH = re.compile(r"[0-9a-f]{8}")


class PoolError(ModelplaneError):
    """A pool this cloud cannot provision; the message names the pool, class and field."""


@dataclass(frozen=True, slots=True)
class _Ctx:
    cluster: str
    eks: EKSCluster
    labels: Mapping[str, str]

    @property
    def region(self) -> str:
        return self.eks.region

    def name(self, key: str) -> str:
        return child_name(self.cluster, key)

    def provider_config(self) -> Json:
        credentials = self.eks.credentials or Credentials()
        return {"kind": credentials.type, "name": credentials.name}

    def managed(
        self,
        api: str,
        kind: str,
        key: str,
        for_provider: Json,
        *,
        regional: bool = True,
        **spec: Json,
    ) -> Json:
        forp = {"region": self.region, **for_provider} if regional else dict(for_provider)
        return {
            "apiVersion": api,
            "kind": kind,
            "metadata": {
                "name": self.name(key),
                "namespace": SYSTEM_NAMESPACE,
                "labels": dict(self.labels),
            },
            "spec": {"forProvider": forp, "providerConfigRef": self.provider_config(), **spec},
        }

    def ref(self, key: str) -> Json:
        return {"name": self.name(key)}

    def tags(self, key: str, **extra: str) -> Json:
        return {CLUSTER_LABEL: self.cluster, "Name": self.name(key), **extra}


# ---------------------------------------------------------------------------------------------
# Zones


def zone_slot(region: str, zone: str) -> int | None:
    """The subnet slot of ``zone``: its letter's place in ``ZONE_LETTERS``, None if not one."""
    if len(zone) == len(region) + 1 and zone.startswith(region) and zone[-1] in ZONE_LETTERS:
        return ZONE_LETTERS.index(zone[-1])
    return None


def cluster_zones(region: str, named: Iterable[str]) -> tuple[str, ...]:
    """The zones the network spans: those the pools name when they are two or more, else
    those and ``DEFAULT_ZONE_LETTERS``; in letter order."""
    zones = set(named)
    if len(zones) < 2:
        zones |= {region + letter for letter in DEFAULT_ZONE_LETTERS}
    return tuple(sorted(zones, key=lambda z: ZONE_LETTERS.index(z[-1])))


def private_cidr(slot: int) -> str:
    return f"10.0.{32 * slot}.0/19"


def public_cidr(slot: int) -> str:
    return f"10.0.{192 + slot}.0/24"


# ---------------------------------------------------------------------------------------------
# Pools


@dataclass(frozen=True, slots=True)
class PoolPlan:
    """One pool as EKS creates it: its recipe, zones, scaling and whether it needs a template."""

    pool: NodePool
    class_name: str
    recipe: EKSPool
    zones: tuple[str, ...]  # empty: every zone of the cluster
    min_size: int
    max_size: int
    desired: int
    autoscaled: bool

    @property
    def capacity_block(self) -> str | None:
        block = self.pool.capacity_block
        return block.capacity_reservation_id if block is not None else None

    @property
    def efa(self) -> bool:
        return self.pool.fabric is not None and self.pool.fabric.type == "EFA"

    @property
    def launch_template(self) -> bool:
        return self.capacity_block is not None or self.efa

    def identity(self) -> str:
        """What EKS cannot change on a live node group (instance type, disk, capacity type,
        subnets, launch template): 8 hex digits naming this node group; a change is a new one."""
        content = {
            "instanceType": self.recipe.instance_type,
            "diskSizeGb": self.recipe.disk_size_gb,
            "capacityBlock": self.capacity_block,
            "efa": self.efa,
            "zones": list(self.zones),
        }
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:8]

    @property
    def node_group_key(self) -> str:
        return node_group_key(self.pool.name, self.identity())

    @property
    def launch_template_key(self) -> str:
        return f"{LAUNCH_TEMPLATE_PREFIX}{self.pool.name}-{self.identity()}"


def node_group_key(pool: str, identity: str) -> str:
    return f"{NODE_GROUP_PREFIX}{pool}-{identity}"


def _pool_label(pool: NodePool) -> str:
    return f"node pool {pool.name} (spec.nodePools[name={pool.name}])"


def plan_pool(region: str, pool: NodePool, classes: Mapping[str, InferenceClass]) -> PoolPlan:
    """The pool's plan, or a ``PoolError`` naming what is wrong."""
    where = _pool_label(pool)
    found = classes.get(pool.class_name)
    if found is None:
        raise PoolError(f"{where}: InferenceClass {pool.class_name} not found")
    provisioning = found.spec.provisioning
    recipe = provisioning.eks if provisioning is not None else None
    if recipe is None:
        raise PoolError(
            f"{where}: InferenceClass {pool.class_name} has no EKS recipe "
            "(spec.provisioning.eks); an EKS cluster creates pools only from one"
        )
    zones = tuple(dict.fromkeys(pool.zones or ()))
    for zone in zones:
        if zone_slot(region, zone) is None:
            raise PoolError(
                f"{where}: zones: {zone} is not an availability zone of region {region} "
                f"(expected {region} followed by one of {', '.join(ZONE_LETTERS)})"
            )
    if pool.capacity_block is not None and len(zones) != 1:
        raise PoolError(
            f"{where}: capacityBlock needs zones to name the one availability zone of "
            f"reservation {pool.capacity_block.capacity_reservation_id}"
        )
    if pool.max_node_count is None:
        # A fixed pool: EKS needs maxSize >= 1 (botocore eks NodegroupScalingConfig.maxSize is
        # a Capacity, minimum 1), so an empty pool may hold at most one node.
        n = pool.node_count
        return PoolPlan(pool, pool.class_name, recipe, zones, n, max(n, 1), n, False)
    top = pool.max_node_count
    low = pool.min_node_count if pool.min_node_count is not None else min(pool.node_count, top)
    if low > top:
        raise PoolError(f"{where}: minNodeCount {low} is more than maxNodeCount {top}")
    desired = min(max(pool.node_count, low), top)
    return PoolPlan(pool, pool.class_name, recipe, zones, low, top, desired, True)


# ---------------------------------------------------------------------------------------------
# The composition


@dataclass(frozen=True, slots=True)
class _Out:
    """The objects of one answer, in order, and the Usages between them: filled by the one
    call that builds it, never shared."""

    ctx: _Ctx
    observed: Observed
    objects: dict[str, Json]
    usages: list[tuple[str, Json]]

    def add(self, key: str, obj: Json) -> None:
        self.objects[key] = obj

    def use(self, of_key: str, by_key: str) -> None:
        """``of_key`` stays until ``by_key`` is gone."""
        self.usages.append(
            usage(self.ctx.cluster, of_key, self.objects[of_key], by_key, self.objects[by_key])
        )

    def ready(self, key: str) -> bool:
        seen = self.observed.get(key)
        return seen is not None and holds(seen.conditions, "Ready")

    def gate(self, prerequisite: str, key: str) -> bool:
        """Compose ``key`` once ``prerequisite`` is Ready, and keep it once composed."""
        return self.ready(prerequisite) or key in self.observed


def _network(out: _Out, zones: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The VPC and its zones; returns every subnet key and the private subnet key per zone."""
    ctx = out.ctx
    vpc = {"vpcIdRef": ctx.ref(VPC_KEY)}
    out.add(
        VPC_KEY,
        ctx.managed(
            EC2_API,
            "VPC",
            VPC_KEY,
            {
                "cidrBlock": VPC_CIDR,
                "enableDnsHostnames": True,
                "enableDnsSupport": True,
                "tags": ctx.tags(VPC_KEY),
            },
        ),
    )
    out.add(
        IGW_KEY,
        ctx.managed(EC2_API, "InternetGateway", IGW_KEY, {**vpc, "tags": ctx.tags(IGW_KEY)}),
    )
    out.add(
        PUBLIC_ROUTE_TABLE_KEY,
        ctx.managed(
            EC2_API,
            "RouteTable",
            PUBLIC_ROUTE_TABLE_KEY,
            {**vpc, "tags": ctx.tags(PUBLIC_ROUTE_TABLE_KEY)},
        ),
    )
    out.add(
        PUBLIC_ROUTE_KEY,
        ctx.managed(
            EC2_API,
            "Route",
            PUBLIC_ROUTE_KEY,
            {
                "routeTableIdRef": ctx.ref(PUBLIC_ROUTE_TABLE_KEY),
                "destinationCidrBlock": "0.0.0.0/0",
                "gatewayIdRef": ctx.ref(IGW_KEY),
            },
        ),
    )
    subnets: list[str] = []
    private: dict[str, str] = {}
    for zone in zones:
        slot = zone_slot(ctx.region, zone)
        assert slot is not None  # cluster_zones keeps only zones with a slot
        public_key, private_key = f"eks-subnet-public-{zone}", f"eks-subnet-private-{zone}"
        # Load balancers find their subnets by these role tags (the inference gateway's
        # Service): internet-facing in the public ones, internal in the private ones.
        out.add(
            public_key,
            ctx.managed(
                EC2_API,
                "Subnet",
                public_key,
                {
                    **vpc,
                    "availabilityZone": zone,
                    "cidrBlock": public_cidr(slot),
                    "mapPublicIpOnLaunch": True,
                    "tags": ctx.tags(public_key, **{"kubernetes.io/role/elb": "1"}),
                },
            ),
        )
        out.add(
            private_key,
            ctx.managed(
                EC2_API,
                "Subnet",
                private_key,
                {
                    **vpc,
                    "availabilityZone": zone,
                    "cidrBlock": private_cidr(slot),
                    "tags": ctx.tags(private_key, **{"kubernetes.io/role/internal-elb": "1"}),
                },
            ),
        )
        eip_key, nat_key = f"eks-eip-{zone}", f"eks-nat-gateway-{zone}"
        table_key, route_key = f"eks-route-table-private-{zone}", f"eks-route-private-{zone}"
        out.add(
            eip_key,
            ctx.managed(EC2_API, "EIP", eip_key, {"domain": "vpc", "tags": ctx.tags(eip_key)}),
        )
        out.add(
            nat_key,
            ctx.managed(
                EC2_API,
                "NATGateway",
                nat_key,
                {
                    "allocationIdRef": ctx.ref(eip_key),
                    "subnetIdRef": ctx.ref(public_key),
                    "connectivityType": "public",
                    "tags": ctx.tags(nat_key),
                },
            ),
        )
        out.add(
            table_key,
            ctx.managed(EC2_API, "RouteTable", table_key, {**vpc, "tags": ctx.tags(table_key)}),
        )
        out.add(
            route_key,
            ctx.managed(
                EC2_API,
                "Route",
                route_key,
                {
                    "routeTableIdRef": ctx.ref(table_key),
                    "destinationCidrBlock": "0.0.0.0/0",
                    "natGatewayIdRef": ctx.ref(nat_key),
                },
            ),
        )
        for subnet_key, table in ((public_key, PUBLIC_ROUTE_TABLE_KEY), (private_key, table_key)):
            association = f"eks-route-association-{subnet_key.removeprefix('eks-subnet-')}"
            out.add(
                association,
                ctx.managed(
                    EC2_API,
                    "RouteTableAssociation",
                    association,
                    {"subnetIdRef": ctx.ref(subnet_key), "routeTableIdRef": ctx.ref(table)},
                ),
            )
        subnets += [public_key, private_key]
        private[zone] = private_key
    return subnets, private


def _trust(service: str, *actions: str) -> str:
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": service},
                "Action": list(actions or ("sts:AssumeRole",)),
            }
        ],
    }
    return json.dumps(policy, sort_keys=True, separators=(",", ":"))


def _role(
    out: _Out, key: str, service: str, policies: Sequence[tuple[str, str]], *actions: str
) -> list[str]:
    """A role trusted by ``service`` and its policy attachments; returns every key."""
    ctx = out.ctx
    out.add(
        key,
        ctx.managed(
            IAM_API,
            "Role",
            key,
            {"assumeRolePolicy": _trust(service, *actions), "tags": ctx.tags(key)},
            regional=False,
        ),
    )
    keys = [key]
    for attachment_key, arn_or_ref in policies:
        target: Json = (
            {"policyArn": arn_or_ref}
            if arn_or_ref.startswith("arn:")
            else {"policyArnRef": ctx.ref(arn_or_ref)}
        )
        out.add(
            attachment_key,
            ctx.managed(
                IAM_API,
                "RolePolicyAttachment",
                attachment_key,
                {"roleRef": ctx.ref(key), **target},
                regional=False,
            ),
        )
        keys.append(attachment_key)
    return keys


def _policy_key(role_key: str, policy: str) -> str:
    short = policy.rsplit("/", 1)[-1].removeprefix("Amazon").lower().replace("_", "-")
    return f"eks-policy-{role_key.removeprefix('eks-role-')}-{short}"


def _node_group_labels(plan: PoolPlan) -> Json:
    return {POOL_LABEL: plan.pool.name}


def _scaling(min_size: int, desired: int, max_size: int, autoscaled: bool) -> tuple[Json, Json]:
    """``forProvider`` and ``initProvider`` scaling: an autoscaled group's desired size is set
    at creation only, so the provider does not undo the autoscaler (botocore eks
    NodegroupScalingConfig.desiredSize: "you shouldn't change the desiredSize value
    directly" with the Cluster Autoscaler)."""
    if autoscaled:
        return {"minSize": min_size, "maxSize": max_size}, {
            "scalingConfig": {"desiredSize": desired}
        }
    return {"minSize": min_size, "maxSize": max_size, "desiredSize": desired}, {}


def _node_group(
    out: _Out,
    key: str,
    subnet_keys: Sequence[str],
    scaling: tuple[Json, Json],
    settings: Json,
    tags: Mapping[str, str],
) -> Json:
    ctx = out.ctx
    for_provider, init = scaling
    spec: Json = {}
    if init:
        spec["initProvider"] = init
    return ctx.managed(
        EKS_API,
        "NodeGroup",
        key,
        {
            "clusterNameRef": ctx.ref(CLUSTER_KEY),
            "nodeRoleArnRef": ctx.ref(NODE_ROLE_KEY),
            "subnetIdRefs": [ctx.ref(k) for k in subnet_keys],
            "version": ctx.eks.kubernetes_version,
            "scalingConfig": for_provider,
            **settings,
            "tags": ctx.tags(key, **tags),
        },
        **spec,
    )


def _launch_template(out: _Out, plan: PoolPlan) -> Json:
    """The pool's launch template: instance type, root disk, Capacity Block and EFA.

    Beside a launch template CreateNodegroup takes no ``diskSize`` and no ``instanceTypes``
    when the template names one (botocore eks service-2.json, CreateNodegroupRequest), so
    both live here. No AMI is named, so the node group keeps its ``amiType``.
    """
    ctx = out.ctx
    key = plan.launch_template_key
    spec: Json = {
        "name": ctx.name(key),
        "instanceType": plan.recipe.instance_type,
        "blockDeviceMappings": [
            {
                "deviceName": ROOT_DEVICE,
                "ebs": {"volumeSize": plan.recipe.disk_size_gb, "volumeType": "gp3"},
            }
        ],
        "tags": ctx.tags(key),
    }
    if plan.capacity_block is not None:
        spec["instanceMarketOptions"] = {"marketType": CAPACITY_BLOCK_MARKET}
        spec["capacityReservationSpecification"] = {
            "capacityReservationTarget": {"capacityReservationId": plan.capacity_block}
        }
    if plan.efa:
        # One EFA interface on the primary network card; EKS attaches the cluster security
        # group, which admits all traffic from itself as EFA requires.
        spec["networkInterfaces"] = [
            {
                "deviceIndex": 0,
                "networkCardIndex": 0,
                "interfaceType": EFA_INTERFACE,
                "deleteOnTermination": "true",
            }
        ]
    return ctx.managed(EC2_API, "LaunchTemplate", key, spec)


def _pool_settings(plan: PoolPlan) -> Json:
    # A CPU-only class (ICL-10: no accelerator) runs the standard AMI and carries the CPU pool
    # taint its pods tolerate (composition/taints.py); a GPU pool the NVIDIA AMI and GPU taint.
    gpu = plan.recipe.accelerator is not None
    settings: Json = {
        "amiType": GPU_AMI_TYPE if gpu else SYSTEM_AMI_TYPE,
        "capacityType": CAPACITY_BLOCK if plan.capacity_block is not None else ON_DEMAND,
        "labels": _node_group_labels(plan),
        "taint": [dict(GPU_TAINT if gpu else CPU_TAINT)],
    }
    if not plan.launch_template:
        settings["instanceTypes"] = [plan.recipe.instance_type]
        settings["diskSize"] = plan.recipe.disk_size_gb
    return settings


def _pool(out: _Out, plan: PoolPlan, private: Mapping[str, str]) -> str:
    """The pool's node group (and launch template); returns the node group's key."""
    ctx = out.ctx
    settings = _pool_settings(plan)
    if plan.launch_template:
        template = _launch_template(out, plan)
        out.add(plan.launch_template_key, template)
        # A fresh template is at version 1, and its content is this node group's identity, so it
        # never takes another version.
        settings["launchTemplate"] = {"name": ctx.name(plan.launch_template_key), "version": "1"}
    subnets = [private[z] for z in plan.zones] if plan.zones else list(private.values())
    accelerator = plan.recipe.accelerator
    tags = {"modelplane.ai/pool": plan.pool.name, "modelplane.ai/class": plan.class_name}
    if accelerator is not None:
        tags["modelplane.ai/accelerator"] = accelerator.type
        tags["modelplane.ai/accelerator-count"] = str(accelerator.count)
    scaling = _scaling(plan.min_size, plan.desired, plan.max_size, plan.autoscaled)
    out.add(
        plan.node_group_key, _node_group(out, plan.node_group_key, subnets, scaling, settings, tags)
    )
    if plan.launch_template:
        out.use(plan.launch_template_key, plan.node_group_key)
    return plan.node_group_key


def _efs(out: _Out, private: Mapping[str, str]) -> None:
    ctx = out.ctx
    out.add(
        EFS_KEY,
        ctx.managed(
            EFS_API,
            "FileSystem",
            EFS_KEY,
            {
                "encrypted": True,
                "performanceMode": "generalPurpose",
                "throughputMode": "elastic",
                "tags": ctx.tags(EFS_KEY),
            },
        ),
    )
    out.add(
        EFS_SECURITY_GROUP_KEY,
        ctx.managed(
            EC2_API,
            "SecurityGroup",
            EFS_SECURITY_GROUP_KEY,
            {
                "vpcIdRef": ctx.ref(VPC_KEY),
                "description": "NFS to the model cache file system from the cluster's VPC",
                "tags": ctx.tags(EFS_SECURITY_GROUP_KEY),
            },
        ),
    )
    out.add(
        EFS_NFS_RULE_KEY,
        ctx.managed(
            EC2_API,
            "SecurityGroupIngressRule",
            EFS_NFS_RULE_KEY,
            {
                "securityGroupIdRef": ctx.ref(EFS_SECURITY_GROUP_KEY),
                "ipProtocol": "tcp",
                "fromPort": 2049,
                "toPort": 2049,
                "cidrIpv4": VPC_CIDR,
                "description": "NFS from the VPC",
                "tags": ctx.tags(EFS_NFS_RULE_KEY),
            },
        ),
    )
    for zone, subnet_key in private.items():
        key = f"eks-efs-mount-{zone}"
        out.add(
            key,
            ctx.managed(
                EFS_API,
                "MountTarget",
                key,
                {
                    "fileSystemIdRef": ctx.ref(EFS_KEY),
                    "subnetIdRef": ctx.ref(subnet_key),
                    "securityGroupsRefs": [ctx.ref(EFS_SECURITY_GROUP_KEY)],
                },
            ),
        )


def _pod_identity(out: _Out, key: str, role_key: str, account: tuple[str, str]) -> Json:
    ctx = out.ctx
    namespace, service_account = account
    return ctx.managed(
        EKS_API,
        "PodIdentityAssociation",
        key,
        {
            "clusterNameRef": ctx.ref(CLUSTER_KEY),
            "roleArnRef": ctx.ref(role_key),
            "namespace": namespace,
            "serviceAccount": service_account,
            "tags": ctx.tags(key),
        },
    )


def _addon(out: _Out, key: str, name: str) -> Json:
    ctx = out.ctx
    return ctx.managed(
        EKS_API,
        "Addon",
        key,
        {
            "clusterNameRef": ctx.ref(CLUSTER_KEY),
            "addonName": name,
            "resolveConflictsOnCreate": "OVERWRITE",
            "resolveConflictsOnUpdate": "OVERWRITE",
            "tags": ctx.tags(key),
        },
    )


def connection_secret(cluster: str) -> tuple[str, str, str]:
    """Where the cluster's kubeconfig lands: ClusterAuth's connection Secret."""
    return SYSTEM_NAMESPACE, child_name(cluster, "eks-kubeconfig"), KUBECONFIG_KEY


def efs_storage_class(file_system_id: str) -> Json:
    """The StorageClass ``EFS_STORAGE_CLASS`` on the workload cluster, once the FileSystem's id
    (its external name) is known: dynamic EFS access points (the aws-efs-csi-driver
    README's "Dynamic Provisioning"), one directory per volume."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": EFS_STORAGE_CLASS},
        "provisioner": EFS_PROVISIONER,
        "parameters": {
            "provisioningMode": "efs-ap",
            "fileSystemId": file_system_id,
            "directoryPerms": "700",
        },
    }


def _previous_node_groups(plan: PoolPlan, observed: Observed) -> list[str]:
    """The pool's node groups observed under an earlier identity, in key order."""
    prefix = f"{NODE_GROUP_PREFIX}{plan.pool.name}-"
    return sorted(
        k
        for k in observed
        if k.startswith(prefix) and _HASH.fullmatch(k[len(prefix) :]) and k != plan.node_group_key
    )


def _kept_for(node_group: str, pool: str, observed: Observed) -> list[str]:
    """What stays with a node group kept from observed state: it, its template, its Usages."""
    identity = node_group[-8:]
    template = f"{LAUNCH_TEMPLATE_PREFIX}{pool}-{identity}"
    keys = [node_group] if node_group in observed else []
    if template in observed:
        keys.append(template)
    keys += sorted(
        k for k in observed if k.startswith(USAGE_KEY_PREFIX) and k.endswith(f"-by-{node_group}")
    )
    return keys


def _failure(key: str, out: _Out) -> str | None:
    seen = out.observed.get(key)
    if seen is None:
        return None
    synced = get_condition(seen.conditions, "Synced")
    if synced.status != "False":
        return None
    obj = out.objects.get(key) or seen.kept
    kind = obj.get("kind", "object")
    name = (obj.get("metadata") or {}).get("name", key)
    return f"{kind} {name}: {synced.message or synced.reason or 'not synced'}"


def _describe(key: str, ctx: _Ctx, pools: Mapping[str, str]) -> str:
    """``Kind name``, and the pool of a pool's node group."""
    if key == CLUSTER_KEY:
        return f"Cluster {ctx.name(key)}"
    if key == CLUSTER_AUTH_KEY:
        return f"ClusterAuth {ctx.name(key)}"
    pool = pools.get(key)
    suffix = f" (pool {pool})" if pool is not None else " (system)"
    return f"NodeGroup {ctx.name(key)}{suffix}"


def provision_eks(
    cluster: InferenceCluster, classes: Mapping[str, InferenceClass], observed: Observed
) -> Provisioned:
    """What an EKS InferenceCluster composes, whether it serves yet, and why not."""
    name = cluster.metadata.name or ""
    eks = cluster.spec.cluster.eks
    connection = connection_secret(name)
    if eks is None:
        # IC-04 refuses such a cluster; nothing can be composed without a region.
        return Provisioned(
            (), False, connection, "spec.cluster.eks is required when spec.cluster.source is EKS"
        )
    ctx = _Ctx(name, eks, {CLUSTER_LABEL: name})
    out = _Out(ctx, observed, {}, [])
    errors: list[str] = []
    plans: list[PoolPlan] = []
    failed_pools: list[NodePool] = []
    for pool in cluster.spec.node_pools or ():
        try:
            plans.append(plan_pool(eks.region, pool, classes))
        except PoolError as error:
            errors.append(str(error))
            failed_pools.append(pool)
    zones = cluster_zones(eks.region, (z for p in plans for z in p.zones))
    subnets, private = _network(out, zones)

    cluster_role = _role(
        out,
        CLUSTER_ROLE_KEY,
        "eks.amazonaws.com",
        [(_policy_key(CLUSTER_ROLE_KEY, p), _AWS_POLICY + p) for p in CLUSTER_POLICIES],
    )
    node_role = _role(
        out,
        NODE_ROLE_KEY,
        "ec2.amazonaws.com",
        [(_policy_key(NODE_ROLE_KEY, p), _AWS_POLICY + p) for p in NODE_POLICIES],
    )
    out.add(
        CLUSTER_KEY,
        ctx.managed(
            EKS_API,
            "Cluster",
            CLUSTER_KEY,
            {
                "version": eks.kubernetes_version,
                "roleArnRef": ctx.ref(CLUSTER_ROLE_KEY),
                "vpcConfig": {
                    "subnetIdRefs": [ctx.ref(k) for k in subnets],
                    # The control plane's providers reach the API server over the internet.
                    "endpointPublicAccess": True,
                    "endpointPrivateAccess": True,
                },
                # Access entries, with the identity creating the cluster (the provider config's,
                # which ClusterAuth signs its token with) an administrator; managed node groups'
                # roles get their access entries from EKS.
                "accessConfig": {
                    "authenticationMode": AUTHENTICATION_MODE,
                    "bootstrapClusterCreatorAdminPermissions": True,
                },
                "tags": ctx.tags(CLUSTER_KEY),
            },
        ),
    )
    for key in [*subnets, VPC_KEY, *cluster_role, *node_role]:
        out.use(key, CLUSTER_KEY)

    _efs(out, private)
    efs_role = _role(
        out,
        EFS_CSI_ROLE_KEY,
        "pods.eks.amazonaws.com",
        [(EFS_CSI_POLICY_KEY, _AWS_POLICY + EFS_CSI_POLICY)],
        "sts:AssumeRole",
        "sts:TagSession",
    )
    out.add(
        AUTOSCALER_IAM_POLICY_KEY,
        ctx.managed(
            IAM_API,
            "Policy",
            AUTOSCALER_IAM_POLICY_KEY,
            {
                "policy": json.dumps(AUTOSCALER_POLICY, sort_keys=True, separators=(",", ":")),
                "description": f"cluster-autoscaler of EKS cluster {ctx.name(CLUSTER_KEY)}",
                "tags": ctx.tags(AUTOSCALER_IAM_POLICY_KEY),
            },
            regional=False,
        ),
    )
    autoscaler_role = _role(
        out,
        AUTOSCALER_ROLE_KEY,
        "pods.eks.amazonaws.com",
        [(AUTOSCALER_POLICY_KEY, AUTOSCALER_IAM_POLICY_KEY)],
        "sts:AssumeRole",
        "sts:TagSession",
    )
    del efs_role, autoscaler_role

    # On the running cluster: once it is Ready.
    node_groups: list[str] = []
    if out.gate(CLUSTER_KEY, CLUSTER_AUTH_KEY):
        out.add(
            CLUSTER_AUTH_KEY,
            ctx.managed(
                EKS_API,
                "ClusterAuth",
                CLUSTER_AUTH_KEY,
                {"clusterNameRef": ctx.ref(CLUSTER_KEY)},
                writeConnectionSecretToRef={"name": connection[1]},
            ),
        )
    if out.gate(CLUSTER_KEY, SYSTEM_NODE_GROUP_KEY):
        low, desired, top = SYSTEM_NODES
        out.add(
            SYSTEM_NODE_GROUP_KEY,
            _node_group(
                out,
                SYSTEM_NODE_GROUP_KEY,
                list(private.values()),
                _scaling(low, desired, top, True),
                {
                    "amiType": SYSTEM_AMI_TYPE,
                    "capacityType": ON_DEMAND,
                    "instanceTypes": [SYSTEM_INSTANCE_TYPE],
                },
                {},
            ),
        )
        out.use(CLUSTER_KEY, SYSTEM_NODE_GROUP_KEY)
        node_groups.append(SYSTEM_NODE_GROUP_KEY)
    kept: list[str] = []
    for plan in plans:
        if not out.gate(CLUSTER_KEY, plan.node_group_key):
            continue
        key = _pool(out, plan, private)
        out.use(CLUSTER_KEY, key)
        node_groups.append(key)
        if not out.ready(key):
            # The pool's earlier node group serves until this one is Ready.
            for previous in _previous_node_groups(plan, observed):
                kept += _kept_for(previous, plan.pool.name, observed)
    for pool in failed_pools:
        # A pool that cannot be planned keeps what it had: deleting GPU nodes is not how an
        # error in its class is reported.
        prefix = f"{NODE_GROUP_PREFIX}{pool.name}-"
        for key in sorted(
            k for k in observed if k.startswith(prefix) and _HASH.fullmatch(k[len(prefix) :])
        ):
            kept += _kept_for(key, pool.name, observed)
    for key, role_key, account in (
        (EFS_CSI_IDENTITY_KEY, EFS_CSI_ROLE_KEY, EFS_CSI_SERVICE_ACCOUNT),
        (AUTOSCALER_IDENTITY_KEY, AUTOSCALER_ROLE_KEY, AUTOSCALER_SERVICE_ACCOUNT),
    ):
        if out.gate(CLUSTER_KEY, key):
            out.add(key, _pod_identity(out, key, role_key, account))
    # Add-ons run pods: once the system node group is Ready.
    for key, addon in (
        (POD_IDENTITY_ADDON_KEY, "eks-pod-identity-agent"),
        (EFS_CSI_ADDON_KEY, "aws-efs-csi-driver"),
    ):
        if out.gate(SYSTEM_NODE_GROUP_KEY, key):
            out.add(key, _addon(out, key, addon))

    composed = [
        ComposedObject(k, o, True if out.ready(k) else None) for k, o in out.objects.items()
    ]
    composed += [ComposedObject(k, o, True if k in observed else None) for k, o in out.usages]
    seen_keys = {c.key for c in composed}
    for key in dict.fromkeys(kept):
        if key not in seen_keys:
            seen = observed[key]
            ready = holds(seen.conditions, "Ready") or key.startswith(USAGE_KEY_PREFIX)
            composed.append(ComposedObject(key, seen.kept, True if ready else None))

    waiting = [
        k
        for k in (
            CLUSTER_KEY,
            CLUSTER_AUTH_KEY,
            SYSTEM_NODE_GROUP_KEY,
            *(p.node_group_key for p in plans),
        )
        if not out.ready(k)
    ]
    failures = [f for k in [*out.objects, *kept] if (f := _failure(k, out)) is not None]
    ready = not errors and not waiting
    parts = errors + failures
    if waiting:
        pools = {p.node_group_key: p.pool.name for p in plans}
        names = [_describe(k, ctx, pools) for k in waiting]
        parts.append("provisioning: " + ", ".join(names))
    message = "; ".join(parts)[:MAX_MESSAGE] if parts else None
    storage = _storage_class(name, observed) if ready or STORAGE_CLASS_KEY in observed else None
    if storage is not None:
        composed.append(storage)
    return Provisioned(tuple(composed), ready, connection, message)


def _storage_class(cluster: str, observed: Observed) -> ComposedObject | None:
    """The EFS StorageClass ModelCaches use, once the cluster answers and the file system's id
    (its external name) is known; kept as applied when the id is not observed this time."""
    seen = observed.get(STORAGE_CLASS_KEY)
    file_system = observed.get(EFS_KEY)
    fs_id = file_system.external_name if file_system is not None else None
    if fs_id is None:
        if seen is None or not seen.kept:
            return None
        return ComposedObject(STORAGE_CLASS_KEY, dict(seen.kept), _ready_flag(seen))
    obj = cluster_object(cluster, STORAGE_CLASS_KEY, efs_storage_class(fs_id))
    return ComposedObject(STORAGE_CLASS_KEY, obj, _ready_flag(seen))


def _ready_flag(seen: ObservedObject | None) -> bool | None:
    return True if observed_ready(seen) else None
