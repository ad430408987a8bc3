"""EKS provisioning (reconcile/provision_eks.py): what an InferenceCluster with ``source: EKS``
composes, validated against provider-upjet-aws v2.6.0's released CRDs (../shared/schemas and its
schemas/SOURCES-provisioning.md), CEL rules included; the EKS and EC2 enums it writes are botocore's
(boto/botocore 1.43.67, botocore/data/eks/2017-11-01/service-2.json and
botocore/data/ec2/2016-11-15/service-2.json).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api import InferenceClass, InferenceCluster
from modelplane.api.meta import condition
from modelplane.composition.observed import ObservedObject
from modelplane.reconcile.provision import Provisioned
from modelplane.reconcile.provision_eks import provision_eks
from tests.builders import GV, cpu_device, gpu_device
from tests.composition import schemas
from tests.composition.schemas import validate_manifest

# The AWS kinds composed, beside the table the project's validator reads (extended here, not in
# the shared module).
AWS_CRDS = {
    ("ec2.aws.m.upbound.io", kind): f"ec2.aws.m.upbound.io_{kind.lower()}s.yaml"
    for kind in (
        "VPC",
        "Subnet",
        "InternetGateway",
        "EIP",
        "RouteTable",
        "Route",
        "RouteTableAssociation",
        "LaunchTemplate",
        "SecurityGroup",
        "SecurityGroupIngressRule",
    )
} | {
    ("ec2.aws.m.upbound.io", "NATGateway"): "ec2.aws.m.upbound.io_natgateways.yaml",
    ("eks.aws.m.upbound.io", "Cluster"): "eks.aws.m.upbound.io_clusters.yaml",
    ("eks.aws.m.upbound.io", "ClusterAuth"): "eks.aws.m.upbound.io_clusterauths.yaml",
    ("eks.aws.m.upbound.io", "NodeGroup"): "eks.aws.m.upbound.io_nodegroups.yaml",
    ("eks.aws.m.upbound.io", "Addon"): "eks.aws.m.upbound.io_addons.yaml",
    (
        "eks.aws.m.upbound.io",
        "PodIdentityAssociation",
    ): "eks.aws.m.upbound.io_podidentityassociations.yaml",
    ("iam.aws.m.upbound.io", "Role"): "iam.aws.m.upbound.io_roles.yaml",
    ("iam.aws.m.upbound.io", "Policy"): "iam.aws.m.upbound.io_policies.yaml",
    (
        "iam.aws.m.upbound.io",
        "RolePolicyAttachment",
    ): "iam.aws.m.upbound.io_rolepolicyattachments.yaml",
    ("efs.aws.m.upbound.io", "FileSystem"): "efs.aws.m.upbound.io_filesystems.yaml",
    ("efs.aws.m.upbound.io", "MountTarget"): "efs.aws.m.upbound.io_mounttargets.yaml",
}

# botocore eks 2017-11-01 service-2.json AMITypes, CapacityTypes, TaintEffect, AuthenticationMode;
# ec2 2016-11-15 MarketType, NetworkInterfaceType (the values this module may write).
AMI_TYPES = {"AL2023_x86_64_STANDARD", "AL2023_x86_64_NVIDIA", "AL2023_ARM_64_NVIDIA"}
CAPACITY_TYPES = {"ON_DEMAND", "SPOT", "CAPACITY_BLOCK"}
TAINT_EFFECTS = {"NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"}
AUTHENTICATION_MODES = {"API", "API_AND_CONFIG_MAP", "CONFIG_MAP"}
MARKET_TYPES = {"spot", "capacity-block", "interruptible-capacity-reservation"}
INTERFACE_TYPES = {"interface", "efa", "efa-only"}

READY = ObservedObject(conditions=(condition("Ready", True, "Available"),))


@pytest.fixture(autouse=True)
def _aws_crds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schemas, "CRD_FILES", {**schemas.CRD_FILES, **AWS_CRDS})


def eks_class(
    name: str = "h100-8x",
    instance_type: str = "p5.48xlarge",
    accelerator: tuple[str, int] = ("nvidia-h100-80gb", 8),
    disk: int | None = None,
    *,
    provider: str = "EKS",
) -> InferenceClass:
    recipe: dict[str, Any] = {
        "instanceType": instance_type,
        "accelerator": {"type": accelerator[0], "count": accelerator[1]},
    }
    if disk is not None:
        recipe["diskSizeGb"] = disk
    provisioning: dict[str, Any] = {"provider": provider}
    if provider == "EKS":
        provisioning["eks"] = recipe
    else:
        provisioning["gke"] = {
            "machineType": "a3-highgpu-8g",
            "accelerator": {"type": "nvidia-h100-80gb", "count": 8},
        }
    return InferenceClass.model_validate(
        {
            "apiVersion": GV,
            "kind": "InferenceClass",
            "metadata": {"name": name},
            "spec": {"provisioning": provisioning, "devices": [gpu_device()]},
        }
    )


def pool(name: str = "h100", class_name: str = "h100-8x", **fields: Any) -> dict[str, Any]:
    return {"name": name, "className": class_name, **fields}


def eks_cluster(*pools: dict[str, Any], region: str = "us-east-1", **eks: Any) -> InferenceCluster:
    return InferenceCluster.model_validate(
        {
            "apiVersion": GV,
            "kind": "InferenceCluster",
            "metadata": {"name": "aws-1"},
            "spec": {
                "cluster": {"source": "EKS", "eks": {"region": region, **eks}},
                "nodePools": list(pools) or [pool()],
            },
        }
    )


def classes(*found: InferenceClass) -> dict[str, InferenceClass]:
    return {c.metadata.name or "": c for c in found or (eks_class(),)}


def all_ready(result: Provisioned) -> dict[str, ObservedObject]:
    """Every object of ``result`` observed Ready, as Crossplane reports it back."""
    return {
        o.key: ObservedObject(conditions=READY.conditions, kept=copy.deepcopy(o.object))
        for o in result.objects
    }


def converged(
    cluster: InferenceCluster, found: Mapping[str, InferenceClass] | None = None
) -> Provisioned:
    """Provision round by round, each round's objects observed Ready, until nothing is new."""
    found = classes() if found is None else found
    observed: dict[str, ObservedObject] = {}
    while True:
        result = provision_eks(cluster, found, observed)
        if {o.key for o in result.objects} <= observed.keys():
            return result
        observed = all_ready(result)


def of_kind(result: Provisioned, kind: str) -> list[dict[str, Any]]:
    return [o.object for o in result.objects if o.object["kind"] == kind]


def node_groups(result: Provisioned) -> dict[str, dict[str, Any]]:
    """The pools' node groups by pool label (the system group has none)."""
    out = {}
    for ng in of_kind(result, "NodeGroup"):
        labels = ng["spec"]["forProvider"].get("labels") or {}
        if "modelplane.ai/pool" in labels:
            out[labels["modelplane.ai/pool"]] = ng
    return out


MIXED = (
    pool("plain", nodeCount=2),
    pool("block", capacityBlock={"capacityReservationId": "cr-0123abcd"}, zones=["us-east-1b"]),
    pool("efa", fabric={"type": "EFA"}, nodeCount=1, maxNodeCount=4),
    pool(
        "both",
        capacityBlock={"capacityReservationId": "cr-0fff"},
        fabric={"type": "EFA"},
        zones=["us-east-1d"],
    ),
)


def test_every_managed_resource_is_valid_against_its_released_crd() -> None:
    """Each object, Usages included, passes its provider-upjet-aws v2.6.0 schema and the CEL
    rules upjet puts on required parameters (``spec.forProvider.X is a required parameter``)."""
    schemas.require_shared()
    result = converged(eks_cluster(*MIXED))
    kinds = set()
    for composed in result.objects:
        validate_manifest(composed.object)
        kinds.add(composed.object["kind"])
        assert composed.object["metadata"]["namespace"] == "modelplane-system"
    assert {k for _, k in AWS_CRDS} | {"Usage"} == kinds


def test_every_enum_written_is_botocores() -> None:
    result = converged(eks_cluster(*MIXED))
    for ng in of_kind(result, "NodeGroup"):
        spec = ng["spec"]["forProvider"]
        assert spec["amiType"] in AMI_TYPES
        assert spec["capacityType"] in CAPACITY_TYPES
        assert all(t["effect"] in TAINT_EFFECTS for t in spec.get("taint", ()))
    (cluster,) = of_kind(result, "Cluster")
    assert cluster["spec"]["forProvider"]["accessConfig"]["authenticationMode"] in (
        AUTHENTICATION_MODES
    )
    for lt in of_kind(result, "LaunchTemplate"):
        spec = lt["spec"]["forProvider"]
        if "instanceMarketOptions" in spec:
            assert spec["instanceMarketOptions"]["marketType"] in MARKET_TYPES
        for nic in spec.get("networkInterfaces", ()):
            assert nic["interfaceType"] in INTERFACE_TYPES


def test_what_a_cluster_is_made_of() -> None:
    """The network spans three zones by default: public and private subnets, a NAT gateway with
    its Elastic IP per zone; the roles carry the policies EKS documents; the cluster runs the
    API's default version 1.36."""
    result = converged(eks_cluster(pool()))
    count = {k: len(of_kind(result, k)) for k in {o.object["kind"] for o in result.objects}}
    assert count | {"Usage": 0} == {
        "VPC": 1,
        "InternetGateway": 1,
        "Subnet": 6,
        "EIP": 3,
        "NATGateway": 3,
        "RouteTable": 4,
        "Route": 4,
        "RouteTableAssociation": 6,
        "Role": 4,
        "RolePolicyAttachment": 6,
        "Policy": 1,
        "Cluster": 1,
        "ClusterAuth": 1,
        "NodeGroup": 2,
        "FileSystem": 1,
        "MountTarget": 3,
        "SecurityGroup": 1,
        "SecurityGroupIngressRule": 1,
        "Addon": 2,
        "PodIdentityAssociation": 2,
        "Usage": 0,
    }
    zones = sorted(s["spec"]["forProvider"]["availabilityZone"] for s in of_kind(result, "Subnet"))
    assert zones == ["us-east-1a"] * 2 + ["us-east-1b"] * 2 + ["us-east-1c"] * 2
    policies = {
        a["spec"]["forProvider"].get("policyArn", "").rsplit("/", 1)[-1]
        for a in of_kind(result, "RolePolicyAttachment")
    }
    assert {
        "AmazonEKSClusterPolicy",
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonEC2ContainerRegistryReadOnly",
        "AmazonEFSCSIDriverPolicy",
    } <= policies
    (cluster,) = of_kind(result, "Cluster")
    assert cluster["spec"]["forProvider"]["version"] == "1.36"
    assert {a["spec"]["forProvider"]["addonName"] for a in of_kind(result, "Addon")} == {
        "aws-efs-csi-driver",
        "eks-pod-identity-agent",
    }
    (rule,) = of_kind(result, "SecurityGroupIngressRule")
    nfs = rule["spec"]["forProvider"]
    assert (nfs["ipProtocol"], nfs["fromPort"], nfs["toPort"]) == ("tcp", 2049, 2049)
    assert nfs["cidrIpv4"] == "10.0.0.0/16"


@pytest.mark.parametrize(
    ("eks", "version", "provider_config"),
    [
        ({}, "1.36", {"kind": "ClusterProviderConfig", "name": "default"}),
        (
            {
                "kubernetesVersion": "1.34",
                "credentials": {"type": "ProviderConfig", "name": "team-a"},
            },
            "1.34",
            {"kind": "ProviderConfig", "name": "team-a"},
        ),
    ],
)
def test_version_and_credentials_reach_every_resource(
    eks: dict[str, Any], version: str, provider_config: dict[str, str]
) -> None:
    result = converged(eks_cluster(pool(), **eks))
    for composed in result.objects:
        if composed.object["kind"] != "Usage":
            assert composed.object["spec"]["providerConfigRef"] == provider_config
    for obj in of_kind(result, "Cluster") + of_kind(result, "NodeGroup"):
        assert obj["spec"]["forProvider"]["version"] == version


def test_the_connection_is_the_cluster_auths_secret() -> None:
    """ClusterAuth writes the kubeconfig under ``kubeconfig`` of its connection Secret
    (provider-upjet-aws v2.6.0 internal/controller/namespaced/eks/clusterauth/eks.go; the key is
    crossplane-runtime v2.2.0 apis/common/resource.go ResourceCredentialsSecretKubeconfigKey)."""
    result = converged(eks_cluster(pool()))
    (auth,) = of_kind(result, "ClusterAuth")
    namespace, secret, key = result.connection
    assert (namespace, key) == ("modelplane-system", "kubeconfig")
    assert auth["metadata"]["namespace"] == namespace
    assert auth["spec"]["writeConnectionSecretToRef"] == {"name": secret}
    (cluster,) = of_kind(result, "Cluster")
    assert auth["spec"]["forProvider"]["clusterNameRef"] == {"name": cluster["metadata"]["name"]}
    assert cluster["spec"]["forProvider"]["accessConfig"]["bootstrapClusterCreatorAdminPermissions"]


def _changed(cls: InferenceClass | None = None, **pool_fields: Any) -> dict[str, Any]:
    result = converged(eks_cluster(pool(**pool_fields)), classes(cls or eks_class()))
    return node_groups(result)["h100"]


@pytest.mark.parametrize(
    ("change", "cls", "fields", "replaced", "where"),
    [
        ("instance type", eks_class(instance_type="p5e.48xlarge"), {}, True, "instanceTypes"),
        ("disk", eks_class(disk=500), {}, True, "diskSize"),
        ("accelerator", eks_class(accelerator=("nvidia-h200-141gb", 8)), {}, False, "tags"),
        ("accelerator count", eks_class(accelerator=("nvidia-h100-80gb", 4)), {}, False, "tags"),
        ("node count", None, {"nodeCount": 3}, False, "scalingConfig"),
        ("zones", None, {"zones": ["us-east-1a", "us-east-1b"]}, True, "subnetIdRefs"),
    ],
)
def test_a_recipe_change_changes_the_node_group(
    change: str, cls: InferenceClass | None, fields: dict[str, Any], replaced: bool, where: str
) -> None:
    """What EKS cannot change on a live node group (instance types, disk, subnets: CreateNodegroup
    only) makes a new node group under a new name; the rest is updated in place."""
    before, after = _changed(), _changed(cls, **fields)
    assert (before["metadata"]["name"] != after["metadata"]["name"]) is replaced, change
    assert before["spec"]["forProvider"][where] != after["spec"]["forProvider"][where], change


@pytest.mark.parametrize(
    ("fields", "template", "capacity_type", "market", "efa"),
    [
        ({}, False, "ON_DEMAND", None, False),
        ({"fabric": {"type": "None"}}, False, "ON_DEMAND", None, False),
        (
            {"capacityBlock": {"capacityReservationId": "cr-0123abcd"}, "zones": ["us-east-1b"]},
            True,
            "CAPACITY_BLOCK",
            "capacity-block",
            False,
        ),
        ({"fabric": {"type": "EFA"}}, True, "ON_DEMAND", None, True),
        (
            {
                "capacityBlock": {"capacityReservationId": "cr-0123abcd"},
                "zones": ["us-east-1b"],
                "fabric": {"type": "EFA"},
            },
            True,
            "CAPACITY_BLOCK",
            "capacity-block",
            True,
        ),
    ],
)
def test_capacity_block_and_efa_pools_get_a_launch_template(
    fields: dict[str, Any], template: bool, capacity_type: str, market: str | None, efa: bool
) -> None:
    """A Capacity Block is EC2 MarketType ``capacity-block`` targeting the reservation, with EKS
    CapacityType ``CAPACITY_BLOCK``; EFA is a network interface of type ``efa``. Beside a launch
    template CreateNodegroup takes neither ``instanceTypes`` (the template names it) nor
    ``diskSize`` (botocore eks service-2.json, CreateNodegroupRequest), and the node group keeps
    the NVIDIA AMI type as the template names no AMI."""
    result = converged(eks_cluster(pool(**fields)))
    ng = node_groups(result)["h100"]["spec"]["forProvider"]
    templates = of_kind(result, "LaunchTemplate")
    assert ng["capacityType"] == capacity_type
    assert ng["amiType"] == "AL2023_x86_64_NVIDIA"
    assert bool(templates) is template
    if not template:
        assert ng["instanceTypes"] == ["p5.48xlarge"] and ng["diskSize"] == 100
        assert "launchTemplate" not in ng
        return
    (lt,) = templates
    spec = lt["spec"]["forProvider"]
    assert "instanceTypes" not in ng and "diskSize" not in ng
    assert ng["launchTemplate"] == {"name": spec["name"], "version": "1"}
    assert spec["instanceType"] == "p5.48xlarge"
    assert spec["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 100
    assert spec.get("instanceMarketOptions", {}).get("marketType") == market
    if market:
        target = spec["capacityReservationSpecification"]["capacityReservationTarget"]
        assert target == {"capacityReservationId": "cr-0123abcd"}
        assert len(ng["subnetIdRefs"]) == 1
    assert [n["interfaceType"] for n in spec.get("networkInterfaces", ())] == (
        ["efa"] if efa else []
    )


def test_gpu_node_groups_are_labelled_tainted_and_in_private_subnets() -> None:
    result = converged(eks_cluster(pool()))
    ng = node_groups(result)["h100"]["spec"]["forProvider"]
    assert ng["labels"] == {"modelplane.ai/pool": "h100"}
    assert ng["taint"] == [{"key": "nvidia.com/gpu", "effect": "NO_SCHEDULE"}]
    private = {
        s["metadata"]["name"]
        for s in of_kind(result, "Subnet")
        if "kubernetes.io/role/internal-elb" in s["spec"]["forProvider"]["tags"]
    }
    assert {r["name"] for r in ng["subnetIdRefs"]} == private
    assert ng["tags"]["modelplane.ai/accelerator"] == "nvidia-h100-80gb"


@pytest.mark.parametrize(
    ("fields", "for_provider", "init"),
    [
        ({"nodeCount": 3}, {"minSize": 3, "maxSize": 3, "desiredSize": 3}, None),
        # EKS refuses maxSize 0 (botocore eks NodegroupScalingConfig.maxSize: Capacity, min 1).
        ({"nodeCount": 0}, {"minSize": 0, "maxSize": 1, "desiredSize": 0}, None),
        ({"nodeCount": 2, "maxNodeCount": 6}, {"minSize": 2, "maxSize": 6}, 2),
        ({"nodeCount": 2, "minNodeCount": 0, "maxNodeCount": 6}, {"minSize": 0, "maxSize": 6}, 2),
        ({"nodeCount": 9, "maxNodeCount": 6}, {"minSize": 6, "maxSize": 6}, 6),
    ],
)
def test_scaling_follows_the_pool(
    fields: dict[str, Any], for_provider: dict[str, int], init: int | None
) -> None:
    """A fixed pool pins all three sizes; an autoscaled pool sets its desired size at creation
    only (``initProvider``), as the Cluster Autoscaler owns it afterwards (botocore eks
    NodegroupScalingConfig.desiredSize)."""
    ng = node_groups(converged(eks_cluster(pool(**fields))))["h100"]["spec"]
    assert ng["forProvider"]["scalingConfig"] == for_provider
    if init is None:
        assert "initProvider" not in ng
    else:
        assert ng["initProvider"] == {"scalingConfig": {"desiredSize": init}}


@pytest.mark.parametrize(
    ("pools", "found", "expected"),
    [
        (
            [pool("a100", "a100-gke")],
            [eks_class(), eks_class("a100-gke", provider="GKE")],
            "node pool a100 (spec.nodePools[name=a100]): InferenceClass a100-gke has no EKS "
            "recipe (spec.provisioning.eks)",
        ),
        (
            [pool("l4", "l4-1x")],
            [eks_class()],
            "node pool l4 (spec.nodePools[name=l4]): InferenceClass l4-1x not found",
        ),
        (
            [pool(zones=["eu-west-1a"])],
            [eks_class()],
            "zones: eu-west-1a is not an availability zone of region us-east-1",
        ),
        (
            [pool(capacityBlock={"capacityReservationId": "cr-0abc"})],
            [eks_class()],
            "capacityBlock needs zones to name the one availability zone of reservation cr-0abc",
        ),
        (
            [pool(minNodeCount=5, maxNodeCount=3)],
            [eks_class()],
            "minNodeCount 5 is more than maxNodeCount 3",
        ),
    ],
)
def test_a_pool_eks_cannot_create_is_a_clear_error(
    pools: list[dict[str, Any]], found: list[InferenceClass], expected: str
) -> None:
    """The pool gets no node group, the rest is composed, and the cluster is never ready."""
    result = converged(eks_cluster(pool("ok"), *pools), classes(*found))
    assert not result.ready
    assert result.message is not None and expected in result.message
    assert set(node_groups(result)) == {"ok"}


def test_readiness_flow() -> None:
    """Node groups, ClusterAuth and pod identities wait for the Cluster; add-ons for the system
    node group; the cluster is ready once the Cluster, every node group and ClusterAuth are."""
    cluster, found = eks_cluster(pool()), classes()
    first = provision_eks(cluster, found, {})
    kinds = {o.object["kind"] for o in first.objects}
    assert "Cluster" in kinds and not kinds & {"NodeGroup", "ClusterAuth", "Addon"}
    assert not first.ready and first.message is not None
    assert first.message.startswith("provisioning: Cluster aws-1-eks-cluster-")
    assert all(o.ready is None for o in first.objects)

    # The Cluster is Ready: its node groups and ClusterAuth come, the add-ons not yet.
    seen = all_ready(first)
    second = provision_eks(cluster, found, seen)
    kinds = {o.object["kind"] for o in second.objects}
    assert {"NodeGroup", "ClusterAuth", "PodIdentityAssociation"} <= kinds
    assert "Addon" not in kinds
    assert not second.ready and second.message is not None
    assert "NodeGroup" in second.message and "(pool h100)" in second.message
    assert "Cluster aws-1" not in second.message.replace("ClusterAuth", "")

    # A node group fails: its Synced message is the cluster's message.
    seen = all_ready(second)
    pool_key = next(k for k in seen if k.startswith("eks-nodegroup-h100-"))
    seen[pool_key] = ObservedObject(
        conditions=(condition("Synced", False, "ReconcileError", "InsufficientInstanceCapacity"),),
        kept=seen[pool_key].kept,
    )
    third = provision_eks(cluster, found, seen)
    assert not third.ready and third.message is not None
    assert "InsufficientInstanceCapacity" in third.message
    assert "Addon" in {o.object["kind"] for o in third.objects}

    done = converged(cluster, found)
    assert done.ready and done.message is None
    assert all(o.ready for o in done.objects)


def test_what_was_composed_stays_when_the_cluster_blips() -> None:
    """A Cluster going not-Ready (an upgrade) must not withdraw its node groups: Crossplane would
    delete them."""
    cluster, found = eks_cluster(pool()), classes()
    seen = all_ready(converged(cluster, found))
    seen["eks-cluster"] = ObservedObject(conditions=(condition("Ready", False, "Updating"),))
    again = provision_eks(cluster, found, seen)
    assert {o.key for o in again.objects} == set(seen)
    assert not again.ready


def test_teardown_order() -> None:
    """Usages keep the Cluster until every node group is gone, and the network and roles until
    the Cluster is; a launch template until its node group is."""
    result = converged(eks_cluster(*MIXED))
    kept_by: dict[str, set[str]] = {}
    for usage in of_kind(result, "Usage"):
        of, by = usage["spec"]["of"], usage["spec"]["by"]
        assert usage["spec"]["replayDeletion"] is True
        kept_by.setdefault(of["kind"], set()).add(by["kind"])
    assert kept_by == {
        "Cluster": {"NodeGroup"},
        "Subnet": {"Cluster"},
        "VPC": {"Cluster"},
        "Role": {"Cluster"},
        "RolePolicyAttachment": {"Cluster"},
        "LaunchTemplate": {"NodeGroup"},
    }
    (cluster,) = of_kind(result, "Cluster")
    users = {
        u["spec"]["by"]["resourceRef"]["name"]
        for u in of_kind(result, "Usage")
        if u["spec"]["of"]["resourceRef"]["name"] == cluster["metadata"]["name"]
    }
    assert users == {ng["metadata"]["name"] for ng in of_kind(result, "NodeGroup")}


def test_a_replaced_node_group_serves_until_its_successor_is_ready() -> None:
    cluster, found = eks_cluster(pool()), classes()
    seen = all_ready(converged(cluster, found))
    old = next(k for k in seen if k.startswith("eks-nodegroup-h100-"))
    bigger = classes(eks_class(instance_type="p5en.48xlarge"))
    during = provision_eks(cluster, bigger, seen)
    keys = {o.key for o in during.objects}
    new = next(k for k in keys if k.startswith("eks-nodegroup-h100-") and k != old)
    assert old in keys and f"uses-eks-cluster-by-{old}" in keys
    seen.update({o.key: ObservedObject(kept=o.object) for o in during.objects if o.key not in seen})
    seen[new] = READY
    after = {o.key for o in provision_eks(cluster, bigger, seen).objects}
    assert new in after and old not in after and f"uses-eks-cluster-by-{old}" not in after


def test_a_pool_whose_class_lost_its_recipe_keeps_its_nodes() -> None:
    """An error in a class is reported, not enacted by deleting the pool's GPU nodes."""
    cluster = eks_cluster(pool())
    seen = all_ready(converged(cluster, classes()))
    old = next(k for k in seen if k.startswith("eks-nodegroup-h100-"))
    result = provision_eks(cluster, classes(eks_class(provider="GKE")), seen)
    assert old in {o.key for o in result.objects}
    assert not result.ready and result.message is not None
    assert "has no EKS recipe" in result.message


@pytest.mark.parametrize(
    ("zones", "expected"),
    [
        ((), ["us-west-2a", "us-west-2b", "us-west-2c"]),
        (("us-west-2d",), ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]),
        (("us-west-2b", "us-west-2d"), ["us-west-2b", "us-west-2d"]),
    ],
)
def test_zones_and_their_fixed_subnets(zones: tuple[str, ...], expected: list[str]) -> None:
    """The pools' zones when they name two or more, else a, b and c as well; each zone's
    subnets sit at a slot fixed by its letter, so adding a zone never moves another's."""
    result = converged(
        eks_cluster(pool(zones=list(zones)) if zones else pool(), region="us-west-2")
    )
    cidrs = {
        s["spec"]["forProvider"]["availabilityZone"]: s["spec"]["forProvider"]["cidrBlock"]
        for s in of_kind(result, "Subnet")
        if "kubernetes.io/role/internal-elb" in s["spec"]["forProvider"]["tags"]
    }
    assert sorted(cidrs) == expected
    slots = {"a": "10.0.0.0/19", "b": "10.0.32.0/19", "c": "10.0.64.0/19", "d": "10.0.96.0/19"}
    assert all(cidrs[z] == slots[z[-1]] for z in cidrs)
    assert len(of_kind(result, "MountTarget")) == len(expected)


@settings(max_examples=60, deadline=None)
@given(
    node_count=st.integers(0, 50),
    low=st.none() | st.integers(0, 50),
    top=st.none() | st.integers(1, 50),
)
def test_every_scaling_eks_accepts(node_count: int, low: int | None, top: int | None) -> None:
    """Whatever the pool says, the node group's sizes are ones EKS takes (min <= desired <= max,
    max >= 1: botocore eks NodegroupScalingConfig), or the pool is an error naming them."""
    fields: dict[str, Any] = {"nodeCount": node_count}
    if low is not None:
        fields["minNodeCount"] = low
    if top is not None:
        fields["maxNodeCount"] = top
    result = converged(eks_cluster(pool(**fields)))
    groups = node_groups(result)
    if top is not None and low is not None and low > top:
        assert not groups and result.message is not None and "minNodeCount" in result.message
        return
    spec = groups["h100"]["spec"]
    sizes = spec["forProvider"]["scalingConfig"]
    desired = sizes.get(
        "desiredSize", spec.get("initProvider", {}).get("scalingConfig", {}).get("desiredSize")
    )
    assert 0 <= sizes["minSize"] <= desired <= sizes["maxSize"] and sizes["maxSize"] >= 1
    assert sizes["maxSize"] == (top if top is not None else max(node_count, 1))


def test_a_cpu_only_pool_runs_the_standard_ami_with_the_cpu_pool_taint() -> None:
    """A CPU-only class (ICL-10) gets plain nodes its pods tolerate (composition/taints.py)."""
    cpu = InferenceClass.model_validate(
        {
            "apiVersion": GV,
            "kind": "InferenceClass",
            "metadata": {"name": "c7i-cpu"},
            "spec": {
                "provisioning": {"provider": "EKS", "eks": {"instanceType": "c7i.24xlarge"}},
                "devices": [cpu_device("90")],
            },
        }
    )
    result = converged(eks_cluster(pool("cpu", "c7i-cpu", nodeCount=2)), classes(cpu))
    group = node_groups(result)["cpu"]["spec"]["forProvider"]
    assert group["amiType"] == "AL2023_x86_64_STANDARD"
    assert group["taint"] == [
        {"key": "modelplane.ai/cpu", "value": "true", "effect": "NO_SCHEDULE"}
    ]
    assert group["instanceTypes"] == ["c7i.24xlarge"]
    assert "modelplane.ai/accelerator" not in group["tags"]
    validate_manifest(node_groups(result)["cpu"])
