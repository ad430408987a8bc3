"""Requirement keys and selectors of each function, and reading what Crossplane fetched.

docs/crossplane.md, "How the function behaves". Every call declares the same requirements for the
same composite,
so Crossplane's call-again loop settles on the second call. A key absent from the
request's ``required_resources`` is *not fetched yet*; a key present with no items is
*fetched, none*.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.api import (
    InferenceCluster,
    InferenceGateway,
    ModelCache,
    ModelDeployment,
    ModelReplica,
)
from modelplane.composition.frontdoor import PROVIDER_KUBERNETES, PROVIDER_RUNTIME_CONFIG
from modelplane.naming import CLUSTER_LABEL, SYSTEM_NAMESPACE
from modelplane.runtime.crossplane.messages import Requirement

CLUSTERS = "clusters"
CLASSES = "classes"
PINNED_REPLICAS = "replicas"
CACHE = "cache"
CLUSTER = "cluster"
CLASS_PREFIX = "class-"
INFERENCE_GATEWAYS = "inference-gateways"
SERVICE_ENDPOINTS = "endpoints"
GATEWAY_CLUSTER = "gateway-cluster"
CALLER_KEYS = "caller-keys"
PROVIDER = "provider-kubernetes"
RUNTIME_CONFIG = "provider-kubernetes-runtime-config"
DESTINATIONS = "telemetry-destinations"
MAPPINGS = "metric-mappings"

ALL_CLUSTERS = Requirement(CLUSTERS, "InferenceCluster")
ALL_CLASSES = Requirement(CLASSES, "InferenceClass")
ALL_DESTINATIONS = Requirement(DESTINATIONS, "TelemetryDestination")
ALL_MAPPINGS = Requirement(MAPPINGS, "MetricMapping")
ALL_GATEWAYS = Requirement(INFERENCE_GATEWAYS, "InferenceGateway")
# provider-kubernetes and its runtime config: Secrets are copied to a cluster only when it
# redacts them from Object status (composition/frontdoor.py ``sanitize_problem``).
PROVIDER_PACKAGE = Requirement(
    PROVIDER, "Provider", match_name=PROVIDER_KUBERNETES, api_version="pkg.crossplane.io/v1"
)
PROVIDER_RUNTIME = Requirement(
    RUNTIME_CONFIG,
    "DeploymentRuntimeConfig",
    match_name=PROVIDER_RUNTIME_CONFIG,
    api_version="pkg.crossplane.io/v1beta1",
)

# Requirements that are the same for every composite of a kind. The kind's Composition
# declares them on its pipeline step (``requirements.requiredResources``, read by
# ``packaging``), so Crossplane fetches them before the first call and the function need
# not ask: a kind with no other requirement is answered in one call (docs/crossplane.md,
# "One call per reconcile").
STATIC_REQUIREMENTS: Mapping[str, tuple[Requirement, ...]] = {
    "ModelDeployment": (ALL_CLUSTERS, ALL_CLASSES),
    "ModelCache": (ALL_CLUSTERS,),
    "ModelService": (ALL_GATEWAYS, ALL_CLUSTERS, PROVIDER_PACKAGE, PROVIDER_RUNTIME),
}


# The step input's field naming the keys of STATIC_REQUIREMENTS the Composition fetches
# (written by ``packaging``, read by the gRPC shell).
PREFETCHED_FIELD = "fetchedRequirements"


def static_keys(kind: str) -> frozenset[str]:
    """The requirement keys the Composition of ``kind`` fetches before every call."""
    return frozenset(r.key for r in STATIC_REQUIREMENTS.get(kind, ()))


def deployment_requirements(deployment: ModelDeployment) -> list[Requirement]:
    """The deployment function's lookups: none when parked (docs/reconcile.md, "Conditions, events
    and readiness").

    No ModelReplica: its own are its observed composed resources, and what other
    deployments hold comes with each cluster, in ``status.occupancy``.
    """
    if deployment.spec.replicas == 0:
        return []
    wanted = [ALL_CLUSTERS, ALL_CLASSES]
    ref = deployment.spec.template.spec.model_cache_ref
    if ref is not None:
        namespace = deployment.metadata.namespace or "default"
        wanted.append(Requirement(CACHE, "ModelCache", match_name=ref.name, namespace=namespace))
    return wanted


def replica_requirements(replica: ModelReplica) -> list[Requirement]:
    """The replica function's one lookup: the cluster it is pinned to; none when its
    deployment stamped what it reads of the cluster (``spec.clusterInfo``)."""
    if replica.spec.cluster_info is not None:
        return []
    return [Requirement(CLUSTER, "InferenceCluster", match_name=replica.spec.cluster_name)]


def cache_requirements(cache: ModelCache) -> list[Requirement]:
    """The cache function's one lookup: every cluster.

    No Secret: ``authSecret`` names a Secret on each cluster, which the download Job reads
    there (docs/composition.md, "What a ModelCache composes"), so the function never receives a token.
    """
    del cache  # every cache asks the same
    return [ALL_CLUSTERS]


def class_key(class_name: str) -> str:
    """The requirement key of one InferenceClass of a cluster's node pools."""
    return f"{CLASS_PREFIX}{class_name}"


def cluster_class_names(cluster: InferenceCluster) -> list[str]:
    """The distinct ``spec.nodePools[].className`` of a cluster, sorted."""
    pools = cluster.spec.node_pools or ()
    return sorted({pool.class_name for pool in pools})


def cluster_requirements(cluster: InferenceCluster) -> list[Requirement]:
    """The cluster function's lookups: one per distinct class name, sorted, then its replicas.

    The replicas are the ModelReplicas labelled ``modelplane.ai/cluster=<name>`` in every
    namespace: no namespace on the selector lists across all of them (docs/crossplane.md).
    """
    name = cluster.metadata.name or ""
    return [
        *(
            Requirement(class_key(class_name), "InferenceClass", match_name=class_name)
            for class_name in cluster_class_names(cluster)
        ),
        Requirement(PINNED_REPLICAS, "ModelReplica", match_labels=((CLUSTER_LABEL, name),)),
        # Every destination and mapping: which select this cluster, and what its collector
        # renames (docs/telemetry.md).
        ALL_DESTINATIONS,
        ALL_MAPPINGS,
    ]


def destination_requirements() -> list[Requirement]:
    """A TelemetryDestination's one lookup: every cluster (selection and collector status)."""
    return [ALL_CLUSTERS]


def fetched(
    required: Mapping[str, Sequence[Mapping[str, Any]]], key: str
) -> Sequence[Mapping[str, Any]] | None:
    """The items fetched under ``key``, or None when Crossplane has not fetched it yet."""
    if key not in required:
        return None
    return required[key]


def service_requirements(namespace: str) -> list[Requirement]:
    """A ModelService's lookups: every InferenceGateway (which serve it) and InferenceCluster
    (where they run), provider-kubernetes and its runtime config (may a key be copied), and
    its namespace's endpoints.

    Every ModelEndpoint of the namespace, not one selector per entry: an endpoint matched
    by several entries belongs to the first, which only the whole list can tell.
    """
    return [
        ALL_GATEWAYS,
        ALL_CLUSTERS,
        PROVIDER_PACKAGE,
        PROVIDER_RUNTIME,
        Requirement(SERVICE_ENDPOINTS, "ModelEndpoint", namespace=namespace),
    ]


def gateway_requirements(gateway: InferenceGateway) -> list[Requirement]:
    """The gateway function's lookups: its cluster, every gateway (one per cluster),
    provider-kubernetes and its runtime config, and with ``auth`` the caller-key Secrets its
    selector matches in modelplane-system (only their names are read)."""
    wanted = [
        Requirement(GATEWAY_CLUSTER, "InferenceCluster", match_name=gateway.spec.cluster_name),
        ALL_GATEWAYS,
        PROVIDER_PACKAGE,
        PROVIDER_RUNTIME,
    ]
    auth = gateway.spec.auth
    if auth is not None:
        wanted.append(
            Requirement(
                CALLER_KEYS,
                "Secret",
                namespace=SYSTEM_NAMESPACE,
                api_version="v1",
                match_labels=tuple(sorted(auth.api_key.secret_selector.match_labels.items())),
            )
        )
    return wanted
