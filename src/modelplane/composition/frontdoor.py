"""The front door on an inference cluster: where an InferenceGateway may run, and the Secrets it
needs there, checked without their values passing through any object we write.

Pure. An InferenceGateway runs on the cluster its ``spec.clusterName`` names (upstream Modelplane
v0.5, RedbackThomson/modelplane ``docs/content/platform/inference-gateway.md`` @ 667562db): its
Gateway, and every ModelService route it serves, are provider-kubernetes Objects through that
cluster's provider config (docs/crossplane.md, "The inference gateway").

A Secret the front door needs on the cluster (a certificate, a caller key, a hosted provider's
key) is not copied there: provider-kubernetes' ``spec.references[].patchesFrom`` patches the
source's values into the Object in memory during each observation
(``internal/controller/namespaced/object/object.go`` ``resolveReferencies`` @ v1.2.1), and the
managed reconciler then writes that Object back (crossplane-runtime
``pkg/reconciler/managed/reconciler.go`` @ v2.0.0-rc.1: ``AddFinalizer``, the update before
``Create``, ``UpdateCriticalAnnotations``), so the values land in the Object's
``spec.forProvider.manifest`` (crossplane-contrib/provider-kubernetes#223, open). The Secret is
the operator's to put on the cluster; an observe-only Object (``secret_check``) says whether it
is there. An observed Secret is reported in the Object's ``status.atProvider.manifest``, data
included, unless the provider runs with ``--sanitize-secrets`` (``SANITIZE_SECRETS``, default
false, ``cmd/provider/main.go`` @ v1.2.1, which replaces the data with ``{"redacted": null}``,
``setAtProvider``): so no Secret is observed unless it does (``sanitize_problem``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.api import InferenceCluster, InferenceGateway
from modelplane.api.meta import holds
from modelplane.composition.delivery import deliver
from modelplane.composition.namespaces import NAMESPACE_MANAGEMENT_POLICIES, namespace_manifest
from modelplane.composition.replica import provider_config_for
from modelplane.composition.types import Json

# What the cluster must declare for its stack to install Envoy Gateway and Envoy AI Gateway
# (stack/components.py: both need gateway EnvoyGateway).
FRONT_DOOR_IMPLEMENTATION = "EnvoyGateway"

# The provider-kubernetes package and the runtime config this package ships for it
# (package/install/provider-kubernetes.yaml): the Provider's name is the one Crossplane gives a
# dependency (<org>-<repository>), so installing it first satisfies the Configuration's.
PROVIDER_KUBERNETES = "crossplane-contrib-provider-kubernetes"
PROVIDER_KUBERNETES_PACKAGE = "xpkg.crossplane.io/crossplane-contrib/provider-kubernetes:v1.2.1"
PROVIDER_RUNTIME_CONFIG = "modelplane-provider-kubernetes"
SANITIZE_ENV = "SANITIZE_SECRETS"
SANITIZE_FLAG = "--sanitize-secrets"
# The container Crossplane gives every package's runtime.
RUNTIME_CONTAINER = "package-runtime"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a gateway is not placed: the condition reason and its message. ``hold``: only the
    cluster's readiness is wanting, so a front door already composed there is kept (a cluster
    that turns NotReady for a while does not take its Gateway and routes down with it)."""

    reason: str
    message: str
    hold: bool = False


def placement_problem(
    gateway: InferenceGateway,
    cluster: InferenceCluster | None,
    gateways: Sequence[InferenceGateway],
) -> Refusal | None:
    """Why ``gateway`` cannot run on the cluster its ``spec.clusterName`` names, or None.

    The cluster must exist, declare Envoy Gateway, publish its provider config and be Ready;
    of several gateways naming one cluster the oldest (then the first by name) runs there
    (upstream: "A second gateway on a cluster that already has one reports
    ClusterAlreadyHasGateway"). Readiness is checked last and its refusal holds.
    """
    name = gateway.spec.cluster_name
    field = f"spec.clusterName: InferenceCluster {name}"
    if cluster is None:
        return Refusal("ClusterNotFound", f"{field} does not exist")
    declared = cluster.spec.gateway.implementation if cluster.spec.gateway else None
    if declared != FRONT_DOOR_IMPLEMENTATION:
        return Refusal(
            "UnsupportedCluster",
            f"{field} does not declare spec.gateway.implementation {FRONT_DOOR_IMPLEMENTATION}; "
            "the front door needs Envoy Gateway with Envoy AI Gateway, which its stack "
            "installs only then",
        )
    if provider_config_for(cluster) is None:
        return Refusal("ClusterNotReady", f"{field} publishes no status.providerConfigRef yet")
    first = cluster_owner(name, gateways)
    if first is not None and first.metadata.name != gateway.metadata.name:
        return Refusal(
            "ClusterAlreadyHasGateway",
            f"{field} already runs InferenceGateway {first.metadata.name}; one per cluster",
        )
    conditions = cluster.status.conditions if cluster.status else None
    if not holds(conditions or (), "Ready"):
        return Refusal("ClusterNotReady", f"{field} is not Ready", hold=True)
    return None


def composes(problem: Refusal | None, placed: bool) -> bool:
    """Whether to compose the front door: no problem, or one that holds what is ``placed``."""
    return problem is None or (problem.hold and placed)


def _age(gateway: InferenceGateway) -> tuple[str, str]:
    # RFC 3339 UTC timestamps sort as strings; one not yet created sorts last.
    extra = gateway.metadata.__pydantic_extra__ or {}
    created = extra.get("creationTimestamp")
    return (created if isinstance(created, str) and created else "~", gateway.metadata.name or "")


def cluster_owner(cluster: str, gateways: Sequence[InferenceGateway]) -> InferenceGateway | None:
    """The gateway that runs on ``cluster``: the oldest naming it, then the first by name."""
    naming = [g for g in gateways if g.spec.cluster_name == cluster]
    return min(naming, key=_age) if naming else None


def selects(selector: Mapping[str, str] | None, labels: Mapping[str, str] | None) -> bool:
    """A label selector (None: everything) matches ``labels``."""
    have = labels or {}
    return all(have.get(k) == v for k, v in (selector or {}).items())


def serves(gateway: InferenceGateway, labels: Mapping[str, str] | None) -> bool:
    """``gateway`` serves a ModelService with ``labels`` (no serviceSelector: every one)."""
    selector = gateway.spec.service_selector
    return selects(selector.match_labels if selector else None, labels)


# An observe-only Object only reads its remote object (crossplane-contrib/provider-kubernetes
# managementPolicies, v1.2.1).
OBSERVE_ONLY = ("Observe",)


def secret_check(
    name: str, namespace: str, key: str, remote: tuple[str, str], provider_config: tuple[str, str]
) -> Json:
    """The observe-only Object ``namespace/name`` reading Secret ``remote`` (namespace, name) on
    a cluster: it never creates, changes or deletes it, and reports it once it exists."""
    manifest: Json = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": remote[1], "namespace": remote[0]},
    }
    return deliver(name, namespace, key, manifest, provider_config, OBSERVE_ONLY)


def namespace_object(
    name: str, namespace: str, key: str, remote: str, provider_config: tuple[str, str]
) -> Json:
    """The Object creating namespace ``remote`` on a cluster, never deleting it (others may
    share it: team namespaces, composition/namespaces.py)."""
    return deliver(
        name,
        namespace,
        key,
        namespace_manifest(remote),
        provider_config,
        NAMESPACE_MANAGEMENT_POLICIES,
    )


def sanitize_problem(
    provider: Mapping[str, Any] | None, config: Mapping[str, Any] | None
) -> str | None:
    """Why Secrets may not be observed: provider-kubernetes does not run with
    ``--sanitize-secrets`` through this package's runtime config; None when it does.

    ``provider`` is the Provider ``crossplane-contrib-provider-kubernetes``, ``config`` the
    DeploymentRuntimeConfig ``modelplane-provider-kubernetes`` (both as fetched, None: absent).
    """
    if provider is None:
        return f"no Provider {PROVIDER_KUBERNETES}"
    spec = provider.get("spec") or {}
    ref = spec.get("runtimeConfigRef") or {} if isinstance(spec, Mapping) else {}
    if not isinstance(ref, Mapping) or ref.get("name") != PROVIDER_RUNTIME_CONFIG:
        return (
            f"Provider {PROVIDER_KUBERNETES} has no spec.runtimeConfigRef.name "
            f"{PROVIDER_RUNTIME_CONFIG} (package/install/provider-kubernetes.yaml)"
        )
    if config is None or not _sets_sanitize(config):
        return (
            f"DeploymentRuntimeConfig {PROVIDER_RUNTIME_CONFIG} does not set {SANITIZE_ENV}=true "
            f"or {SANITIZE_FLAG} on container {RUNTIME_CONTAINER}"
        )
    return None


def _sets_sanitize(config: Mapping[str, Any]) -> bool:
    template = (((config.get("spec") or {}).get("deploymentTemplate") or {}).get("spec") or {}).get(
        "template"
    ) or {}
    containers = (template.get("spec") or {}).get("containers") or ()
    for container in containers:
        if not isinstance(container, Mapping) or container.get("name") != RUNTIME_CONTAINER:
            continue
        for env in container.get("env") or ():
            if (
                isinstance(env, Mapping)
                and env.get("name") == SANITIZE_ENV
                and str(env.get("value", "")).lower() == "true"
            ):
                return True
        if SANITIZE_FLAG in (container.get("args") or ()):
            return True
    return False


def runtime_config() -> Json:
    """The DeploymentRuntimeConfig provider-kubernetes must run with (``--sanitize-secrets``)."""
    return {
        "apiVersion": "pkg.crossplane.io/v1beta1",
        "kind": "DeploymentRuntimeConfig",
        "metadata": {"name": PROVIDER_RUNTIME_CONFIG},
        "spec": {
            "deploymentTemplate": {
                "spec": {
                    "selector": {},
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": RUNTIME_CONTAINER,
                                    "env": [{"name": SANITIZE_ENV, "value": "true"}],
                                }
                            ]
                        }
                    },
                }
            }
        },
    }


def provider_kubernetes() -> Json:
    """The Provider, installed before the Configuration, running with ``runtime_config``."""
    return {
        "apiVersion": "pkg.crossplane.io/v1",
        "kind": "Provider",
        "metadata": {"name": PROVIDER_KUBERNETES},
        "spec": {
            "package": PROVIDER_KUBERNETES_PACKAGE,
            "runtimeConfigRef": {"name": PROVIDER_RUNTIME_CONFIG},
        },
    }
