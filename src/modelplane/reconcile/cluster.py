"""The InferenceCluster composition: publish a bring-your-own cluster (docs/crossplane.md, "How the
function behaves").

Pure: the cluster, the InferenceClasses Crossplane fetched for it and its observed
composed objects in; the composed objects, the published status, the condition and
events out. It publishes on a live control plane what ``render`` derives locally
(docs/api.md, "InferenceCluster: what is read and derived"), so deployments see the same fleet in
both runtimes: ``status.gpuPools``
from the node pools and their InferenceClasses and, for ``source: Existing``, the
ClusterProviderConfig every replica's Objects go through and the address and
implementation of the cluster's inference gateway (the latter from its GatewayClass's
``controllerName``). This project provisions no cluster: any other source is
reported, not acted on. ``runtime/crossplane/cluster_fn.py`` is its gRPC adapter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from modelplane.api import InferenceClass, InferenceCluster, ModelReplica
from modelplane.api.inferencecluster import (
    ClusterOccupancy,
    Components,
    ExistingCluster,
    Gateway,
    GatewayImplementation,
    GpuPool,
    InferenceClusterStatus,
    ProviderConfigRef,
    SecretRef,
    StackStatus,
    derived_gpu_pools,
)
from modelplane.api.meta import Condition, condition, holds
from modelplane.api.metricmapping import MetricMapping
from modelplane.api.telemetrydestination import TelemetryDestination
from modelplane.composition.conditions import ready_flag
from modelplane.composition.delivery import (
    SUCCESSFUL_CREATE,
    TEAM_NAMESPACE_KEY_PREFIX,
    shared_objects,
    team_namespace_objects,
)
from modelplane.composition.namespaces import is_team_namespace, remote_namespace
from modelplane.composition.observed import NOTHING_OBSERVED, Observed, ObservedObject
from modelplane.composition.routing import gateway_implementation, implementation_for_controller
from modelplane.composition.types import ComposedObject, Json
from modelplane.events import Event
from modelplane.naming import (
    GATEWAY_CLASS_KEY,
    GATEWAY_KEY,
    GATEWAY_NAME,
    PROVIDER_CONFIG_KEY,
    PROVIDER_CONFIG_KIND,
    SYSTEM_NAMESPACE,
    child_name,
    provider_config_name,
)
from modelplane.reconcile.stack import (
    HELM_PROVIDER_CONFIG_KEY,
    USAGE_KEY_PREFIX,
    compose_stack,
    object_key,
)
from modelplane.scheduling.occupancy import published_occupancy
from modelplane.stack.components import component
from modelplane.stack.selection import (
    INSTALLED_GATEWAY,
    StackPlan,
    Telemetry,
    plan_stack,
    telemetry_for,
)

# Where a Managed stack's own Gateway and GatewayClass are observed (reconcile/stack.py).
MANAGED_GATEWAY_KEY = object_key(component("inference-gateway"), "gateway")
MANAGED_GATEWAY_CLASS_KEY = object_key(component("inference-gateway"), "class")

PROVIDER_API = "kubernetes.m.crossplane.io/v1alpha1"
GATEWAY_READY_QUERY = "has(object.status.addresses) && size(object.status.addresses) > 0"
GATEWAY_CLASS_READY_QUERY = "has(object.spec.controllerName)"
CLUSTER_READY = "ClusterReady"


@dataclass(frozen=True, slots=True)
class ClassLookups:
    """What Crossplane fetched for the ``class-*`` keys of one cluster."""

    found: Mapping[str, InferenceClass]
    missing: tuple[str, ...]  # fetched, no such class; sorted
    pending: tuple[str, ...]  # not fetched yet; sorted


@dataclass(frozen=True, slots=True)
class ClusterComposition:
    """What one InferenceCluster reconcile composes and publishes.

    ``status`` holds only the fields this reconcile owns (``gpuPools``,
    ``providerConfigRef``, ``gateway``); ``ready`` False marks the composite not ready,
    None leaves readiness to Crossplane.
    """

    objects: list[ComposedObject]
    status: InferenceClusterStatus
    conditions: list[Condition]
    events: list[Event] = field(default_factory=list)
    ready: bool | None = None


def _remote(observed: ObservedObject | None) -> ObservedObject:
    """The remote object an observed provider-kubernetes Object reports, or nothing."""
    remote = observed.remote if observed is not None else None
    return remote if remote is not None else NOTHING_OBSERVED


def _ready(observed: ObservedObject | None) -> bool:
    return observed is not None and holds(observed.conditions, "Ready")


def gateway_class_implementation(
    observed_class: ObservedObject | None,
) -> GatewayImplementation | None:
    """The implementation the observed GatewayClass's ``spec.controllerName`` names, if known."""
    controller = _remote(observed_class).controller_name
    return implementation_for_controller(controller) if controller is not None else None


def gateway_address(observed_object: ObservedObject | None) -> str | None:
    """The first non-empty ``value`` of the observed Gateway's ``status.addresses``."""
    addresses = _remote(observed_object).addresses
    return addresses[0] if addresses else None


def assumed_secret_name(cluster_name: str) -> str:
    """The kubeconfig Secret ``render`` assumes a provisioned (not Existing) cluster has."""
    return f"{cluster_name}-kubeconfig"


def provider_config(cluster: InferenceCluster) -> Json:
    """The ClusterProviderConfig reading the cluster's kubeconfig from its Secret.

    A cluster that is not ``Existing`` is only ever rendered locally, which assumes it
    exists: its kubeconfig is assumed in ``assumed_secret_name`` (docs/cli.md).
    """
    existing = cluster.spec.cluster.existing or ExistingCluster(
        secret_ref=SecretRef(name=assumed_secret_name(cluster.metadata.name or ""))
    )
    spec: Json = {
        "credentials": {
            "source": "Secret",
            "secretRef": {
                "namespace": SYSTEM_NAMESPACE,
                "name": existing.secret_ref.name,
                "key": existing.secret_ref.key,
            },
        }
    }
    identity = existing.identity_secret_ref
    if identity is not None:
        spec["identity"] = {
            "type": identity.type,
            "source": "Secret",
            "secretRef": {
                "namespace": SYSTEM_NAMESPACE,
                "name": identity.name,
                "key": identity.key,
            },
        }
    return {
        "apiVersion": PROVIDER_API,
        "kind": PROVIDER_CONFIG_KIND,
        "metadata": {"name": provider_config_name(cluster.metadata.name or "")},
        "spec": spec,
    }


def _observe_only(cluster: InferenceCluster, key: str, manifest: Json, ready_query: str) -> Json:
    """An observe-only Object reading ``manifest`` from the workload cluster."""
    name = cluster.metadata.name or ""
    return {
        "apiVersion": PROVIDER_API,
        "kind": "Object",
        "metadata": {"name": child_name(name, key), "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "managementPolicies": ["Observe"],
            "providerConfigRef": {
                "kind": PROVIDER_CONFIG_KIND,
                "name": provider_config_name(name),
            },
            "forProvider": {"manifest": manifest},
            "readiness": {"policy": "DeriveFromCelQuery", "celQuery": ready_query},
            # The cluster turns Ready when the Gateway gets an address, and routes follow the
            # GatewayClass: watch both, as the replica's workloads are watched
            # (composition/delivery.py ``watched``).
            "watch": True,
        },
    }


def gateway_object(cluster: InferenceCluster) -> Json:
    """An observe-only Object reading the operator-installed inference Gateway."""
    manifest = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": GATEWAY_NAME, "namespace": SYSTEM_NAMESPACE},
    }
    return _observe_only(cluster, GATEWAY_KEY, manifest, GATEWAY_READY_QUERY)


def gateway_class_object(cluster: InferenceCluster, class_name: str) -> Json:
    """An observe-only Object reading the (cluster-scoped) GatewayClass of the Gateway."""
    manifest = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": class_name},
    }
    return _observe_only(cluster, GATEWAY_CLASS_KEY, manifest, GATEWAY_CLASS_READY_QUERY)


def _gateway_class_parts(
    cluster: InferenceCluster, observed: Observed
) -> tuple[list[ComposedObject], GatewayImplementation | None]:
    """The GatewayClass Object, once the Gateway names its class, and what it implements.

    While the class is not observed yet (or the Gateway is not), the implementation
    published before is kept, as the address is: a blip must not re-route every replica.
    """
    previous = cluster.status.gateway if cluster.status is not None else None
    kept = previous.implementation if previous is not None else None
    class_name = _remote(observed.get(GATEWAY_KEY)).gateway_class_name
    if class_name is None:
        return [], kept
    seen_class = observed.get(GATEWAY_CLASS_KEY)
    resource = ComposedObject(
        GATEWAY_CLASS_KEY,
        gateway_class_object(cluster, class_name),
        ready=True if _ready(seen_class) else None,
    )
    remote = _remote(seen_class)
    if remote.name != class_name or remote.controller_name is None:
        return [resource], kept
    return [resource], gateway_class_implementation(seen_class)


def team_namespaces(replicas: Sequence[ModelReplica] | None, observed: Observed) -> tuple[str, ...]:
    """The team namespaces the cluster's replicas are in, sorted (docs/composition.md,
    "Team namespaces").

    Not fetched yet: the ones composed before (read from the observed keys), so a blip in
    the fetch never withdraws a namespace's shared objects from under its pickers.
    """
    if replicas is None:
        found = {
            key.removeprefix(TEAM_NAMESPACE_KEY_PREFIX)
            for key in observed
            if key.startswith(TEAM_NAMESPACE_KEY_PREFIX)
        }
    else:
        found = {remote_namespace(r) for r in replicas}
    return tuple(sorted(ns for ns in found if is_team_namespace(ns)))


def _shared_parts(
    cluster: InferenceCluster, observed: Observed, replicas: Sequence[ModelReplica] | None
) -> list[ComposedObject]:
    """What every replica's picker on the cluster shares: its ServiceAccount, RBAC, config,
    in ``default`` and in every team namespace with replicas (after that Namespace)."""
    name = cluster.metadata.name or ""
    provider = (PROVIDER_CONFIG_KIND, provider_config_name(name))
    parts = shared_objects(name, provider)
    for namespace in team_namespaces(replicas, observed):
        parts.extend(team_namespace_objects(name, provider, namespace))
    return [
        ComposedObject(key, obj, ready_flag(SUCCESSFUL_CREATE, observed.get(key)))
        for key, obj in parts
    ]


def stack_gateway(cluster: InferenceCluster) -> GatewayImplementation:
    """The gateway implementation a Managed stack is planned for (the one installed, or not).

    The one routes are composed for (``composition.routing.gateway_implementation``: the
    platform's word, then what the cluster published, so a Gateway an operator installed keeps
    its implementation across an upgrade; a GKE cluster's is GKE's), else the one we install.
    """
    return gateway_implementation(cluster) or INSTALLED_GATEWAY


def stack_mode(cluster: InferenceCluster) -> Components:
    """Who brings the cluster's stack: ``existing.components``; a provisioned cluster is Managed."""
    existing = cluster.spec.cluster.existing
    return existing.mode if existing is not None else "Managed"


def cluster_stack_plan(
    cluster: InferenceCluster,
    pools: Sequence[GpuPool] | None,
    telemetry: Telemetry | None = None,
) -> tuple[Components, StackPlan]:
    """The cluster's stack mode and the components it needs on ``pools`` (None: not known)
    and for the telemetry destinations selecting it (None: not fetched yet)."""
    mode = stack_mode(cluster)
    gateway = stack_gateway(cluster) if mode == "Managed" else None
    return mode, plan_stack(cluster.spec.stack, pools, gateway, telemetry)


# How a converged stack's objects read: Ready, and (an observe-only check) found.
_CONVERGED = ObservedObject(conditions=(condition("Ready", True, "Available"),), reported=True)


@dataclass(frozen=True, slots=True)
class ConvergedStack:
    """What a cluster composes for its stack once everything it composed is Ready.

    ``render`` prints it (docs/cli.md): ``provider_configs`` the provider-kubernetes one,
    then the provider-helm one when a Release goes through it; ``stack`` a Provided
    cluster's checks, the Releases and our own Objects in install order, then the observed
    Gateway when the stack installs none; ``usages`` the teardown order.
    """

    provider_configs: tuple[Json, ...]
    stack: tuple[Json, ...]
    usages: tuple[Json, ...]
    status: StackStatus


def converged_stack(cluster: InferenceCluster, pools: Sequence[GpuPool] | None) -> ConvergedStack:
    """The cluster's stack composed round by round, each round's objects observed Ready and
    every check met, until a round composes nothing new: the whole stack, in install order.

    A cluster that is not ``Existing`` gets the stack a Managed one of its source would.
    """
    name = cluster.metadata.name or ""
    mode, plan = cluster_stack_plan(cluster, pools)
    config = provider_config(cluster)
    seen: dict[str, ObservedObject] = {}
    while True:
        result = compose_stack(name, mode, plan, seen, config)
        new = [o.key for o in result.objects if o.key not in seen]
        if not new:
            break
        seen.update(dict.fromkeys(new, _CONVERGED))
    configs = [config]
    stack: list[Json] = []
    usages: list[Json] = []
    for composed in result.objects:
        if composed.key == HELM_PROVIDER_CONFIG_KEY:
            configs.append(composed.object)
        elif composed.key.startswith(USAGE_KEY_PREFIX):
            usages.append(composed.object)
        else:
            stack.append(composed.object)
    if "inference-gateway" not in plan.names():
        stack.append(gateway_object(cluster))
    return ConvergedStack(tuple(configs), tuple(stack), tuple(usages), result.status)


def _plan_pools(
    cluster: InferenceCluster, gpu_pools: tuple[GpuPool, ...] | None, pending: bool
) -> tuple[GpuPool, ...] | None:
    """The pools whose devices choose the drivers: None while some class is not fetched."""
    if pending:
        return None
    published = cluster.status.gpu_pools if cluster.status is not None else None
    return gpu_pools or published or ()


def _existing_parts(
    cluster: InferenceCluster,
    observed: Observed,
    gpu_pools: tuple[GpuPool, ...] | None,
    pending: bool,
    telemetry: Telemetry | None = None,
    replicas: Sequence[ModelReplica] | None = None,
) -> tuple[list[ComposedObject], ProviderConfigRef, Gateway | None, StackStatus, Condition]:
    """The composed objects of an Existing cluster and the status fields they publish."""
    mode, plan = cluster_stack_plan(cluster, _plan_pools(cluster, gpu_pools, pending), telemetry)
    config = provider_config(cluster)
    stack = compose_stack(cluster.metadata.name or "", mode, plan, observed, config)
    objects = [
        ComposedObject(
            PROVIDER_CONFIG_KEY, config, ready=True if PROVIDER_CONFIG_KEY in observed else None
        )
    ]
    managed_gateway = "inference-gateway" in plan.names()
    if managed_gateway:
        seen_gateway = observed.get(MANAGED_GATEWAY_KEY)
        implementation: GatewayImplementation | None = (
            INSTALLED_GATEWAY if _ready(observed.get(MANAGED_GATEWAY_CLASS_KEY)) else None
        )
    else:
        seen_gateway = observed.get(GATEWAY_KEY)
        objects.append(
            ComposedObject(
                GATEWAY_KEY,
                gateway_object(cluster),
                ready=True if _ready(seen_gateway) else None,
            )
        )
        class_objects, implementation = _gateway_class_parts(cluster, observed)
        objects.extend(class_objects)
    reference = ProviderConfigRef(name=provider_config_name(cluster.metadata.name or ""))
    address = gateway_address(seen_gateway)
    previous = cluster.status.gateway if cluster.status else None
    if address is None and previous is not None and previous.address:
        # A blip in the gateway's status must not withdraw every endpoint on the cluster.
        address = previous.address
    if implementation is None and previous is not None:
        implementation = previous.implementation
    objects.extend(_shared_parts(cluster, observed, replicas))
    objects.extend(stack.objects)
    published = (
        None
        if address is None and implementation is None
        else Gateway(address=address, implementation=implementation)
    )
    return objects, reference, published, stack.status, stack.condition


def _cluster_condition(cluster: InferenceCluster, missing: tuple[str, ...]) -> Condition:
    if missing:
        return condition(CLUSTER_READY, False, "WaitingForClasses", waiting_for_classes(missing))
    source = cluster.spec.cluster.source
    if source == "Existing":
        return condition(CLUSTER_READY, True, "ClusterRunning")
    return condition(
        CLUSTER_READY,
        False,
        "SourceNotSupported",
        f"spec.cluster.source {source} is not provisioned by this project; "
        "bring the cluster as Existing",
    )


def _occupancy(
    cluster: InferenceCluster,
    gpu_pools: Sequence[GpuPool] | None,
    replicas: Sequence[ModelReplica] | None,
) -> ClusterOccupancy | None:
    """What the pinned replicas occupy of the pools published now (docs/scheduling.md).

    Charged on the pools deployments read: those published now, else the ones the
    cluster's status already carries (written by someone else, fleet.cluster_pools).
    Not fetched yet: the previous occupancy is kept, as the pools are while classes are
    pending (a deployment reads it only if it still fits the pools). No pools at all:
    none, since nothing can be charged; deployments then place nothing new here.
    """
    previous = cluster.status
    pools = gpu_pools or (previous.gpu_pools if previous is not None else None)
    if not pools:
        return None
    if replicas is None:
        return previous.occupancy if previous is not None else None
    return published_occupancy(cluster.metadata.name or "", pools, replicas)


def waiting_for_classes(missing: tuple[str, ...]) -> str:
    """The WaitingForClasses message and event text."""
    return "Waiting for InferenceClasses: " + ", ".join(sorted(missing))


def compose_cluster(
    cluster: InferenceCluster,
    classes: ClassLookups,
    observed: Observed,
    replicas: Sequence[ModelReplica] | None = None,
    destinations: Sequence[TelemetryDestination] | None = None,
    mappings: Sequence[MetricMapping] | None = None,
) -> ClusterComposition:
    """The cluster's composed objects, published status, condition, events and readiness.

    ``replicas``: the ModelReplicas labelled for this cluster in every namespace (None:
    not fetched yet); what they occupy is published as ``status.occupancy``.
    ``destinations``, ``mappings``: every TelemetryDestination and MetricMapping (None: not
    fetched yet); a destination selecting the cluster puts a collector in its stack.
    """
    gpu_pools: tuple[GpuPool, ...] | None
    if classes.pending:
        # Until every class is fetched the pools cannot be recomputed: keep what was published.
        gpu_pools = cluster.status.gpu_pools if cluster.status else None
    else:
        gpu_pools = derived_gpu_pools(cluster, classes.found)
    occupancy = _occupancy(cluster, gpu_pools, replicas)
    objects: list[ComposedObject] = []
    ready: bool | None = None
    provider_config_ref: ProviderConfigRef | None = None
    gateway: Gateway | None = None
    stack: StackStatus | None = None
    conditions = [_cluster_condition(cluster, classes.missing)]
    if cluster.spec.cluster.source == "Existing":
        telemetry = telemetry_for(cluster.metadata.labels or {}, destinations, mappings)
        objects, provider_config_ref, gateway, stack, stack_condition = _existing_parts(
            cluster, observed, gpu_pools, bool(classes.pending), telemetry, replicas
        )
        conditions.append(stack_condition)
    else:
        ready = False
    status = InferenceClusterStatus(
        gateway=gateway,
        provider_config_ref=provider_config_ref,
        gpu_pools=gpu_pools,
        occupancy=occupancy,
        stack=stack,
    )
    events = [Event("Normal", waiting_for_classes(classes.missing))] if classes.missing else []
    return ClusterComposition(objects, status, conditions, events, ready)
