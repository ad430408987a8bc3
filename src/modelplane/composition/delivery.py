"""Object order (docs/composition.md, "Objects, in order") and delivery through provider-kubernetes
Objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from modelplane.api import ModelReplica
from modelplane.api.inferencecluster import GatewayImplementation
from modelplane.composition.backend import AI_GATEWAY_API
from modelplane.composition.claims import claim_template
from modelplane.composition.names import (
    KEY_EPP,
    KEY_POOL,
    KEY_ROUTE,
    ReplicaNames,
    cache_pvc_name,
    claim_key,
    workload_key,
)
from modelplane.composition.namespaces import (
    NAMESPACE_MANAGEMENT_POLICIES,
    SHARED_NAMESPACE,
    namespace_manifest,
)
from modelplane.composition.picker import picker_objects, shared_picker_objects
from modelplane.composition.routing import (
    http_route,
    inference_pool,
    picker_policies,
    route_policies,
    target_port,
)
from modelplane.composition.taints import pool_drivers
from modelplane.composition.types import Json, Stack
from modelplane.composition.workloads import engine_workload
from modelplane.naming import (
    PROVIDER_CONFIG_KIND,
    SYSTEM_NAMESPACE,
    child_name,
    provider_config_name,
)

OBJECT_API_VERSION = "kubernetes.m.crossplane.io/v1alpha1"
OBJECT_KIND = "Object"
RESOURCE_NAME_ANNOTATION = "crossplane.io/composition-resource-name"


def _all(*clauses: str) -> str:
    return " && ".join(clauses)


def _counts(*fields: str) -> str:
    # Status counts are omitted while zero; spec.replicas is always set (we write it).
    return _all(
        *(f"has(object.status.{f}) && object.status.{f} == object.spec.replicas" for f in fields)
    )


# The controller has computed this status from the current spec. provider-kubernetes
# reads numbers as doubles, so a query compares fields with fields, never with a literal.
_OBSERVED = _all(
    "has(object.status)",
    "has(object.status.observedGeneration)",
    "object.status.observedGeneration == object.metadata.generation",
)
DEPLOYMENT_ROLLED_OUT = _all(_OBSERVED, _counts("updatedReplicas", "replicas", "availableReplicas"))
"""Every pod runs the current template and is available, no old pod is left: the test of
``kubectl rollout status`` (docs/composition.md, "Ready means rolled out"). The Available
condition is not read: it is minimum availability, true with no pod ready when one copy may
be unavailable."""
PICKER_SERVING = _all(
    _OBSERVED,
    _counts("updatedReplicas", "replicas"),
    # Omitted while zero (kubernetes/api v0.34.10 apps/v1 DeploymentStatus): at least one.
    "has(object.status.availableReplicas)",
)
"""The picker Deployment: every picker runs the current template, no old one is left, and
at least one is available (docs/composition.md, "Two pickers per replica"). One serving
picker serves the replica, so a drain or a lost node that takes the other leaves the
replica Ready and routed; counts exclude terminating pods, so a rollout reads Ready only
once the old pickers are gone."""
LWS_ROLLED_OUT = _all(
    _OBSERVED,
    "has(object.status.conditions)",
    'object.status.conditions.exists(c, c.type == "Available" && c.status == "True" && '
    "has(c.observedGeneration) && c.observedGeneration == object.metadata.generation)",
    _counts("readyReplicas", "updatedReplicas", "replicas"),
)
"""Every group ready and updated, none left over, and Available at the current generation."""
GROVE_ROLLED_OUT = _all(
    _OBSERVED,
    _counts("availableReplicas", "updatedReplicas"),
    "(!has(object.status.updateProgress) || has(object.status.updateProgress.updateEndedAt))",
)
"""Every PodCliqueSet replica available and updated, and no rolling update in progress
(a PodCliqueSet has no Available condition)."""
JOB_COMPLETE = (
    'has(object.status.conditions) && object.status.conditions.exists(c, c.type == "Complete" '
    '&& c.status == "True")'
)
DERIVE_FROM_CEL = "DeriveFromCelQuery"
SUCCESSFUL_CREATE = "SuccessfulCreate"

# Resource keys whose readiness is their own query, not their kind's.
_KEY_READINESS = {(KEY_EPP, "apps/v1", "Deployment"): PICKER_SERVING}

# Remote kinds whose readiness is a CEL query on their status.
_CEL_READINESS = {
    ("apps/v1", "Deployment"): DEPLOYMENT_ROLLED_OUT,
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): LWS_ROLLED_OUT,
    ("grove.io/v1alpha1", "PodCliqueSet"): GROVE_ROLLED_OUT,
    ("batch/v1", "Job"): JOB_COMPLETE,
}


# Remote kinds whose status, written after creation, something else waits for: a Gateway's
# address makes its cluster or front door Ready; a BackendSecurityPolicy's Accepted lets its
# keyed endpoint into the route (docs/crossplane.md, "Keyed backends wait for their key").
_WATCHED_STATUS = {
    ("gateway.networking.k8s.io/v1", "Gateway"),
    (AI_GATEWAY_API, "BackendSecurityPolicy"),
}


def watched(manifest: Json) -> bool:
    """Whether the Object watches its remote object (docs/crossplane.md "Watches").

    Only objects whose status changes after creation and is waited for: those whose readiness
    is a query on status (the workloads: the replica turns Ready, and gets its endpoint, when
    they do; a cache's download Job: the cache turns Ready when it completes), and the
    Gateways and BackendSecurityPolicies (``_WATCHED_STATUS``). With watches the provider
    re-observes on every change instead of once per poll interval (10 minutes by default);
    everything else is ready once created, so polling it for drift is enough.
    provider-kubernetes v1.2.1 honours ``spec.watch`` only when started with
    ``--enable-watches``, and polls as before without it.
    """
    kind = (manifest["apiVersion"], manifest["kind"])
    return kind in _CEL_READINESS or kind in _WATCHED_STATUS


def readiness(manifest: Json, key: str | None = None) -> Json:
    """The Object's readiness policy for a remote object under resource key ``key``."""
    kind = (manifest["apiVersion"], manifest["kind"])
    query = _KEY_READINESS.get((key, *kind)) if key is not None else None
    if query is None:
        query = _CEL_READINESS.get(kind)
    if query is None:
        return {"policy": SUCCESSFUL_CREATE}
    return {"policy": DERIVE_FROM_CEL, "celQuery": query}


def wrap(names: ReplicaNames, key: str, manifest: Json, provider_config: tuple[str, str]) -> Json:
    """The provider-kubernetes Object delivering ``manifest`` under resource key ``key``."""
    return deliver(names.delivery_object(key), names.namespace, key, manifest, provider_config)


def deliver(
    name: str,
    namespace: str,
    key: str,
    manifest: Json,
    provider_config: tuple[str, str],
    policies: Sequence[str] | None = None,
) -> Json:
    """The Object ``namespace/name`` delivering ``manifest`` through ``provider_config``;
    ``policies``: its management policies when not every one (provider-kubernetes
    ``managementPolicies``, v1.2.1)."""
    kind, config = provider_config
    spec: Json = {
        "providerConfigRef": {"kind": kind, "name": config},
        "forProvider": {"manifest": manifest},
        "readiness": readiness(manifest, key),
    }
    if watched(manifest):
        spec["watch"] = True
    if policies is not None:
        spec["managementPolicies"] = list(policies)
    return {
        "apiVersion": OBJECT_API_VERSION,
        "kind": OBJECT_KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {RESOURCE_NAME_ANNOTATION: key},
        },
        "spec": spec,
    }


def cluster_object(
    cluster: str,
    key: str,
    manifest: Json,
    provider_config: tuple[str, str] | None = None,
    policies: Sequence[str] | None = None,
) -> Json:
    """The Object delivering ``manifest`` that InferenceCluster ``cluster`` composes under
    resource key ``key``: named from the cluster and the key, in the system namespace, through
    the cluster's own ClusterProviderConfig unless ``provider_config`` names another."""
    config = provider_config or (PROVIDER_CONFIG_KIND, provider_config_name(cluster))
    return deliver(child_name(cluster, key), SYSTEM_NAMESPACE, key, manifest, config, policies)


def shared_objects(
    cluster: str, provider_config: tuple[str, str], namespace: str = SHARED_NAMESPACE
) -> list[tuple[str, Json]]:
    """The Objects a cluster composes once for every replica in ``namespace`` on it, with their
    resource keys.

    Named from the cluster and the key in the system namespace, as the cluster's other
    Objects; the remote objects are in docs/composition.md, "Objects shared on a cluster".
    ``default``'s keep the keys of earlier releases; a team namespace's are suffixed with it.
    """
    out: list[tuple[str, Json]] = []
    for base, manifest in shared_picker_objects(namespace):
        key = base if namespace == SHARED_NAMESPACE else f"{base}-{namespace}"
        out.append((key, cluster_object(cluster, key, manifest, provider_config)))
    return out


TEAM_NAMESPACE_KEY_PREFIX = "team-namespace-"


def team_namespace_key(namespace: str) -> str:
    """The resource key of the Object creating team namespace ``namespace`` on a cluster."""
    return f"{TEAM_NAMESPACE_KEY_PREFIX}{namespace}"


def team_namespace_objects(
    cluster: str, provider_config: tuple[str, str], namespace: str
) -> list[tuple[str, Json]]:
    """The Objects a cluster composes for a team namespace its replicas are in, keyed: the
    Namespace itself (created and labelled, never deleted: composition/namespaces.py), then
    the pickers' shared objects in it."""
    key = team_namespace_key(namespace)
    obj = cluster_object(
        cluster, key, namespace_manifest(namespace), provider_config, NAMESPACE_MANAGEMENT_POLICIES
    )
    return [(key, obj), *shared_objects(cluster, provider_config, namespace)]


def remote_objects(
    replica: ModelReplica,
    names: ReplicaNames,
    stack: Stack,
    gateway: GatewayImplementation | None,
    pools: Mapping[str, frozenset[str]] | None = None,
) -> list[tuple[str, Json]]:
    """Every remote object of the replica with its resource key, in object order.

    ``gateway`` adds the policy objects its implementation needs (docs/composition.md);
    ``pools`` are the drivers known of each pool (``taints.pool_drivers``; the replica's own
    claims when absent).
    """
    cache = replica.spec.model_cache_ref
    cache_pvc = cache_pvc_name(names.namespace, cache.name) if cache is not None else None
    known = pools if pools is not None else pool_drivers(replica)
    objects: list[tuple[str, Json]] = []
    for engine in replica.spec.engines:
        objects.append(
            (workload_key(engine.name), engine_workload(names, engine, stack, cache_pvc, known))
        )
        for member in engine.members:
            template = claim_template(names, engine, member)
            if template is not None:
                objects.append((claim_key(engine.name, member.role), template))
    port = target_port(replica)
    objects.append((KEY_POOL, inference_pool(names, port)))
    objects.append((KEY_ROUTE, http_route(names, gateway)))
    objects.extend(route_policies(names, gateway, port))
    objects.extend(picker_objects(replica, names))
    objects.extend(picker_policies(names, gateway))
    return objects
