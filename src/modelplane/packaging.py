"""The Crossplane configuration package, as a set of files (docs/crossplane.md, "What gets
installed") (pure).

``package_files()`` returns every file ``modelplane package`` writes, by path relative
to the output directory. The package root is ``configuration/`` (a Configuration may
hold only XRDs and Compositions), so the function package's metadata and the Function
object for a direct install lie beside it.
"""

from __future__ import annotations

from typing import Any

import yaml

from modelplane import __version__
from modelplane.api.base import GROUP_VERSION
from modelplane.api.crds import render_xrds, xrd, xrd_name
from modelplane.api.kinds import KINDS, KindInfo
from modelplane.composition.frontdoor import provider_kubernetes, runtime_config
from modelplane.runtime.crossplane.messages import Requirement
from modelplane.runtime.crossplane.requirements import PREFETCHED_FIELD, STATIC_REQUIREMENTS

# The oldest releases the package works on (README "Run on Crossplane", evidence in
# docs/crossplane.md "Version floors"); tests derive both from what the package uses.
# Kubernetes: the rules call isSemver (ICL-09), a library new CRD rules may use from 1.34
# (introduced in 1.33; new rules compile at the server's version minus one minor).
KUBERNETES_FLOOR = "1.34"
# Crossplane: ModelDeployment's scale subresource is carried from the XRD into the CRD from
# 2.3, root-level x-kubernetes-validations (MD-01, IC-10) from 2.2; older releases drop them.
CROSSPLANE_FLOOR = "2.3"
CROSSPLANE_VERSION = f">=v{CROSSPLANE_FLOOR}.0"
PROVIDER_KUBERNETES = "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes"
PROVIDER_KUBERNETES_VERSION = ">=v1.0.0"
# The serving stack's Releases and their ClusterProviderConfig are provider-helm's namespaced
# helm.m.crossplane.io/v1beta1 kinds, composed against its v1.4.0 schema (docs/crossplane.md).
PROVIDER_HELM = "xpkg.crossplane.io/crossplane-contrib/provider-helm"
PROVIDER_HELM_VERSION = ">=v1.4.0"
# A GKE cluster's managed resources are provider-upjet-gcp's namespaced kinds
# (*.gcp.m.upbound.io), composed against its v3.0.0 schemas (docs/provisioning.md); the family
# publishes one package per service (.github/workflows/publish-provider-packages.yaml,
# repository provider-gcp, cmd/provider/<service>), each pulling in provider-family-gcp.
PROVIDER_GCP_VERSION = ">=v3.0.0"
PROVIDER_GCP_SERVICES = ("compute", "container", "cloudplatform")
PROVIDER_GCP = tuple(
    f"xpkg.crossplane.io/crossplane-contrib/provider-gcp-{service}"
    for service in PROVIDER_GCP_SERVICES
)
# An EKS cluster's are provider-upjet-aws's (*.aws.m.upbound.io, its v2.6.0 schemas), published
# the same way, one package per service (crossplane-contrib/provider-aws-<service>).
PROVIDER_AWS_VERSION = ">=v2.6.0"
PROVIDER_AWS_SERVICES = ("ec2", "eks", "iam", "efs")
PROVIDER_AWS = tuple(
    f"xpkg.crossplane.io/crossplane-contrib/provider-aws-{service}"
    for service in PROVIDER_AWS_SERVICES
)
FUNCTION_PACKAGE = "xpkg.crossplane.io/modelplane/function-modelplane"
FUNCTION_META_NAME = "function-modelplane"
# The name Crossplane gives the Function it installs as the Configuration's dependency
# (<org>-<repository>), so the Compositions resolve whether the function was installed
# as a dependency or directly from install/function.yaml.
FUNCTION_NAME = "modelplane-function-modelplane"
COMPOSE_STEP = "compose"


class _Dumper(yaml.SafeDumper):
    """Plain block YAML without anchors, so generated files diff cleanly."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(document: dict[str, Any]) -> str:
    """One YAML document, keys in the order built, no line wrapping."""
    return yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        width=1 << 16,
        allow_unicode=True,
    )


def configuration(version: str = __version__) -> dict[str, Any]:
    """``configuration/crossplane.yaml``: the Configuration package's metadata."""
    return {
        "apiVersion": "meta.pkg.crossplane.io/v1",
        "kind": "Configuration",
        "metadata": {
            "name": "modelplane",
            "annotations": {
                "meta.crossplane.io/description": (
                    "Modelplane: serve AI models across a fleet of GPU clusters."
                ),
                "meta.crossplane.io/license": "Apache-2.0",
            },
        },
        "spec": {
            "crossplane": {"version": CROSSPLANE_VERSION},
            "dependsOn": [
                {"provider": PROVIDER_KUBERNETES, "version": PROVIDER_KUBERNETES_VERSION},
                {"provider": PROVIDER_HELM, "version": PROVIDER_HELM_VERSION},
                *({"provider": p, "version": PROVIDER_GCP_VERSION} for p in PROVIDER_GCP),
                *({"provider": p, "version": PROVIDER_AWS_VERSION} for p in PROVIDER_AWS),
                {"function": FUNCTION_PACKAGE, "version": f">=v{version}"},
            ],
        },
    }


def required_resource(requirement: Requirement) -> dict[str, Any]:
    """A step's ``requirements.requiredResources`` entry for a static requirement."""
    selector: dict[str, Any] = {
        "requirementName": requirement.key,
        "apiVersion": requirement.api_version,
        "kind": requirement.kind,
    }
    if requirement.namespace is not None:
        selector["namespace"] = requirement.namespace
    if requirement.match_name is not None:
        selector["name"] = requirement.match_name
    elif requirement.match_labels:
        selector["matchLabels"] = dict(requirement.match_labels)
    return selector


def compose_step(kind: str) -> dict[str, Any]:
    """The pipeline step of ``kind``: the function, and the requirements fetched before it.

    Crossplane (v2.0+, ``requirements.requiredResources`` of a pipeline step) fetches them
    before every call; the step's input tells the function which, so it does not ask for
    them again and a kind with no other requirement is answered in one call
    (docs/crossplane.md, "One call per reconcile").
    """
    step: dict[str, Any] = {"step": COMPOSE_STEP, "functionRef": {"name": FUNCTION_NAME}}
    static = STATIC_REQUIREMENTS.get(kind, ())
    if static:
        step["input"] = {
            "apiVersion": GROUP_VERSION,
            "kind": "StepInput",
            PREFETCHED_FIELD: [r.key for r in static],
        }
        step["requirements"] = {"requiredResources": [required_resource(r) for r in static]}
    return step


def composition(info: KindInfo) -> dict[str, Any]:
    """The Composition of one kind: a one-step pipeline calling the Modelplane function."""
    return {
        "apiVersion": "apiextensions.crossplane.io/v1",
        "kind": "Composition",
        "metadata": {"name": xrd_name(info)},
        "spec": {
            "compositeTypeRef": {"apiVersion": GROUP_VERSION, "kind": info.kind},
            "mode": "Pipeline",
            "pipeline": [compose_step(info.kind)],
        },
    }


def function_meta() -> dict[str, Any]:
    """``function/crossplane.yaml``: the function package's metadata for ``crossplane xpkg build``."""
    return {
        "apiVersion": "meta.pkg.crossplane.io/v1beta1",
        "kind": "Function",
        "metadata": {
            "name": FUNCTION_META_NAME,
            "annotations": {
                "meta.crossplane.io/description": (
                    "Modelplane's composition functions: deployments, replicas, clusters."
                ),
                "meta.crossplane.io/license": "Apache-2.0",
            },
        },
        "spec": {"crossplane": {"version": CROSSPLANE_VERSION}},
    }


def function_install(version: str = __version__) -> dict[str, Any]:
    """``install/function.yaml``: the Function object, for a direct install or ``crossplane render``."""
    return {
        "apiVersion": "pkg.crossplane.io/v1",
        "kind": "Function",
        "metadata": {"name": FUNCTION_NAME},
        "spec": {"package": f"{FUNCTION_PACKAGE}:v{version}"},
    }


def provider_kubernetes_install() -> str:
    """``install/provider-kubernetes.yaml``: provider-kubernetes with the runtime config that keeps
    Secret data out of Object status (``--sanitize-secrets``), installed before the Configuration
    so Crossplane takes its dependency as satisfied (docs/crossplane.md, "The inference gateway").

    Nothing else needs granting: the functions compose only Objects, Releases, cloud managed
    resources and Usages, and read Providers, DeploymentRuntimeConfigs and Secrets, all of
    which Crossplane's own ClusterRole covers (crossplane/crossplane
    cluster/charts/crossplane/templates/clusterrole.yaml @ v2.3.4).
    """
    return to_yaml(runtime_config()) + "---\n" + to_yaml(provider_kubernetes())


# Every managed resource kind the functions compose, as its ManagedResourceDefinition name
# (<plural>.<group>): the providers' packages ship many more, and Crossplane v2 activates
# only those an activation policy names once its default "*" policy is turned off
# (docs.crossplane.io v2.3, "Managed Resource Activation Policies").
ACTIVATED_MANAGED_RESOURCES: tuple[str, ...] = (
    "objects.kubernetes.m.crossplane.io",
    "releases.helm.m.crossplane.io",
    *(
        f"{plural}.{service}.gcp.m.upbound.io"
        for service, plural in (
            ("compute", "networks"),
            ("compute", "subnetworks"),
            ("compute", "routers"),
            ("compute", "routernats"),
            ("container", "clusters"),
            ("container", "nodepools"),
            ("cloudplatform", "serviceaccounts"),
            ("cloudplatform", "serviceaccountkeys"),
            ("cloudplatform", "projectiammembers"),
            ("cloudplatform", "projectservices"),
        )
    ),
    *(
        f"{plural}.{service}.aws.m.upbound.io"
        for service, plural in (
            ("ec2", "vpcs"),
            ("ec2", "subnets"),
            ("ec2", "internetgateways"),
            ("ec2", "eips"),
            ("ec2", "natgateways"),
            ("ec2", "routetables"),
            ("ec2", "routes"),
            ("ec2", "routetableassociations"),
            ("ec2", "securitygroups"),
            ("ec2", "securitygroupingressrules"),
            ("ec2", "launchtemplates"),
            ("eks", "clusters"),
            ("eks", "clusterauths"),
            ("eks", "nodegroups"),
            ("eks", "addons"),
            ("eks", "podidentityassociations"),
            ("iam", "roles"),
            ("iam", "rolepolicyattachments"),
            ("iam", "policies"),
            ("efs", "filesystems"),
            ("efs", "mounttargets"),
        )
    ),
)


def activation_policy() -> dict[str, Any]:
    """``install/activation-policy.yaml``: the managed resources the functions compose."""
    return {
        "apiVersion": "apiextensions.crossplane.io/v1alpha1",
        "kind": "ManagedResourceActivationPolicy",
        "metadata": {"name": "modelplane"},
        "spec": {"activate": list(ACTIVATED_MANAGED_RESOURCES)},
    }


def package_files(version: str = __version__) -> dict[str, str]:
    """Every file of the package by relative path, in a stable order."""
    files: dict[str, str] = {"configuration/crossplane.yaml": to_yaml(configuration(version))}
    for info in KINDS:
        base = f"configuration/apis/{info.plural}"
        # The same text ``modelplane crds`` writes, so the two never disagree.
        files[f"{base}/definition.yaml"] = render_xrds([xrd(info)])
        files[f"{base}/composition.yaml"] = to_yaml(composition(info))
    files["function/crossplane.yaml"] = to_yaml(function_meta())
    files["install/function.yaml"] = to_yaml(function_install(version))
    files["install/provider-kubernetes.yaml"] = provider_kubernetes_install()
    files["install/activation-policy.yaml"] = to_yaml(activation_policy())
    return files
