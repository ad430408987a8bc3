"""The Configuration depends on every provider package whose kinds the cluster function composes."""

from __future__ import annotations

import yaml

from modelplane.packaging import (
    ACTIVATED_MANAGED_RESOURCES,
    PROVIDER_AWS_SERVICES,
    PROVIDER_GCP_SERVICES,
)
from modelplane.reconcile import provision_eks, provision_gke
from modelplane.reconcile.cluster import converged_provisioning
from tests.builders import gke_recipe
from tests.paths import shared_path
from tests.reconcile.test_provision_eks import converged as eks_converged
from tests.reconcile.test_provision_eks import eks_cluster, pool
from tests.reconcile.test_provision_gke import _class, _classes, _cluster


def _groups(module: object) -> set[str]:
    """The API groups of the *_API constants a provisioning module composes."""
    return {
        value.split("/", 1)[0]
        for name, value in vars(module).items()
        if name.endswith("_API") and isinstance(value, str) and ".m.upbound.io/" in value
    }


def test_every_composed_aws_service_has_its_package() -> None:
    services = {g.split(".", 1)[0] for g in _groups(provision_eks)}
    assert services and services <= set(PROVIDER_AWS_SERVICES)


def test_every_composed_gcp_service_has_its_package() -> None:
    services = {g.split(".", 1)[0] for g in _groups(provision_gke)}
    assert services and services <= set(PROVIDER_GCP_SERVICES)


def _crd_names() -> dict[tuple[str, str], str]:
    """(group, kind) -> CRD name of every released provider CRD in ../shared/schemas."""
    out = {}
    for path in shared_path("schemas").glob("*.m.*.io_*.yaml"):
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        out[(crd["spec"]["group"], crd["spec"]["names"]["kind"])] = crd["metadata"]["name"]
    return out


def test_the_activation_policy_names_every_managed_resource_the_functions_compose() -> None:
    """A provisioned GKE cluster, an EKS cluster with an EFA pool (a launch template) and the
    stack compose only kinds the policy activates, each by its released CRD's name."""
    gke = converged_provisioning(_cluster(), _classes(_class(recipe=gke_recipe())))
    assert gke is not None
    eks = eks_converged(eks_cluster(pool("efa", fabric={"type": "EFA"})))
    composed = {
        (o.object["apiVersion"].split("/")[0], o.object["kind"])
        for o in (*gke.objects, *eks.objects)
        if o.object["apiVersion"].split("/")[0].endswith(".m.upbound.io")
    }
    crds = _crd_names()
    names = {crds[k] for k in composed}
    assert "launchtemplates.ec2.aws.m.upbound.io" in names
    assert names <= set(ACTIVATED_MANAGED_RESOURCES)
    assert {"objects.kubernetes.m.crossplane.io", "releases.helm.m.crossplane.io"} <= set(
        ACTIVATED_MANAGED_RESOURCES
    )
    # Nothing activated that no released CRD defines (a typo would activate nothing).
    assert set(ACTIVATED_MANAGED_RESOURCES) <= set(crds.values())
