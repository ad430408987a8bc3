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
``controllerName``). A ``GKE`` or ``EKS`` cluster is provisioned first
(``reconcile/provision.py``: network, cluster, node pools), then gets the same provider configs,
from the kubeconfig the cloud wrote, and a Managed stack; AKS, Nebius and Vultr are reported,
not acted on. ``runtime/crossplane/cluster_fn.py`` is its gRPC adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from modelplane.api import InferenceClass, InferenceCluster, ModelReplica
from modelplane.api.inferencecluster import (
    ClusterCacheStatus,
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
from modelplane.api.meta import Condition, condition
from modelplane.api.metricmapping import MetricMapping
from modelplane.api.telemetrydestination import TelemetryDestination
from modelplane.composition.conditions import observed_ready, ready_flag
from modelplane.composition.delivery import (
    SUCCESSFUL_CREATE,
    TEAM_NAMESPACE_KEY_PREFIX,
    shared_objects,
    team_namespace_objects,
)
from modelplane.composition.namespaces import (
    MAX_TEAM_NAMESPACES,
    bounded_team_namespaces,
    remote_namespace,
)
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
from modelplane.reconcile.provision import Provisioned, provision
from modelplane.reconcile.provision_eks import CLUSTER_KEY as EKS_CLUSTER_KEY
from modelplane.reconcile.provision_eks import EFS_STORAGE_CLASS
from modelplane.reconcile.provision_gke import STORAGE_CLASS_NAME
from modelplane.reconcile.stack import (
    COMPONENT_OF_KEY,
    HELM_PROVIDER_CONFIG_KEY,
    REQUIRE_KEY_PREFIX,
    USAGE_KEY_PREFIX,
    StackSkeleton,
    component_keys,
    compose_stack,
    object_key,
    stack_skeleton,
    stamp_stack,
    usage,
)
from modelplane.scheduling.occupancy import published_occupancy
from modelplane.stack.components import COMPONENTS_BY_NAME, component
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
# On a cluster we provisioned on GKE the stack creates the Gateway of GKE's class instead.
GKE_GATEWAY_KEY = object_key(component("gke-gateway"), "gateway")
# The sources this project provisions (reconcile/provision.py) besides bringing one's own.
PROVISIONED_SOURCES = ("GKE", "EKS")
# Where the Filestore-backed class lives on a cluster we provisioned on GKE.
CACHE_STORAGE_CLASSES = {"GKE": STORAGE_CLASS_NAME, "EKS": EFS_STORAGE_CLASS}

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


def provider_config(cluster: InferenceCluster, provisioned: Provisioned | None = None) -> Json:
    """The ClusterProviderConfig reading the cluster's kubeconfig from its Secret.

    ``provisioned``: what the cluster's source provisioned; its kubeconfig is the Secret the
    cloud's cluster wrote (``connection``), with the identity it needs (``identity``). A
    cluster neither Existing nor provisioned is only ever rendered locally, which assumes it
    exists: its kubeconfig is assumed in ``assumed_secret_name`` (docs/cli.md).
    """
    if provisioned is not None:
        return _provisioned_config(cluster, provisioned)
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


def _provisioned_config(cluster: InferenceCluster, provisioned: Provisioned) -> Json:
    namespace, secret, key = provisioned.connection
    spec: Json = {
        "credentials": {
            "source": "Secret",
            "secretRef": {"namespace": namespace, "name": secret, "key": key},
        }
    }
    if provisioned.identity is not None:
        kind, id_namespace, id_secret, id_key = provisioned.identity
        spec["identity"] = {
            "type": kind,
            "source": "Secret",
            "secretRef": {"namespace": id_namespace, "name": id_secret, "key": id_key},
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
        ready=True if observed_ready(seen_class) else None,
    )
    remote = _remote(seen_class)
    if remote.name != class_name or remote.controller_name is None:
        return [resource], kept
    return [resource], gateway_class_implementation(seen_class)


def team_namespaces(
    replicas: Sequence[ModelReplica] | None, observed: Observed
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The team namespaces the cluster's replicas are in, sorted (docs/composition.md,
    "Team namespaces"), and those left out over ``MAX_TEAM_NAMESPACES``.

    Not fetched yet: the ones composed before (read from the observed keys), so a blip in
    the fetch never withdraws a namespace's shared objects from under its pickers.
    """
    composed = {
        key.removeprefix(TEAM_NAMESPACE_KEY_PREFIX)
        for key in observed
        if key.startswith(TEAM_NAMESPACE_KEY_PREFIX)
    }
    found = composed if replicas is None else {remote_namespace(r) for r in replicas}
    return bounded_team_namespaces(found, composed)


def over_namespace_bound(left_out: tuple[str, ...]) -> str:
    """The Warning event naming the team namespaces over the bound."""
    shown = ", ".join(left_out[:5]) + (", ..." if len(left_out) > 5 else "")
    return (
        f"{len(left_out)} team namespaces over the bound of {MAX_TEAM_NAMESPACES} on this "
        f"cluster are not composed (their pickers have no ServiceAccount): {shown}"
    )


def _shared_parts(
    cluster: InferenceCluster, observed: Observed, replicas: Sequence[ModelReplica] | None
) -> list[ComposedObject]:
    """What every replica's picker on the cluster shares: its ServiceAccount, RBAC, config,
    in ``default`` and in every team namespace with replicas (after that Namespace)."""
    name = cluster.metadata.name or ""
    provider = (PROVIDER_CONFIG_KIND, provider_config_name(name))
    parts = shared_objects(name, provider)
    for namespace in team_namespaces(replicas, observed)[0]:
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


def provisioned_platform(cluster: InferenceCluster) -> str | None:
    """The cloud this project provisions the cluster on, or None (Existing, or not supported)."""
    source = cluster.spec.cluster.source
    return source if source in PROVISIONED_SOURCES else None


def cluster_stack_plan(
    cluster: InferenceCluster,
    pools: Sequence[GpuPool] | None,
    telemetry: Telemetry | None = None,
) -> tuple[Components, StackPlan]:
    """The cluster's stack mode and the components it needs on ``pools`` (None: not known)
    and for the telemetry destinations selecting it (None: not fetched yet).

    The stack installs a gateway only where it is ours to run: Envoy Gateway anywhere, the
    Gateway of GKE's class on a cluster we provisioned on GKE (on a cluster someone brought,
    GKE's Gateway is theirs, observed as it is).
    """
    mode = stack_mode(cluster)
    platform = provisioned_platform(cluster)
    gateway = stack_gateway(cluster) if mode == "Managed" else None
    if gateway == "GKE" and platform != "GKE":
        gateway = None
    plan = plan_stack(
        cluster.spec.stack, pools, gateway, telemetry, platform, _cluster_values(cluster)
    )
    tls = cluster.spec.gateway.tls if cluster.spec.gateway is not None else None
    if tls is None:
        return mode, plan
    # IC-14 and IC-15 keep tls to a Managed stack's Envoy Gateway, whose Gateway we compose.
    return mode, replace(plan, gateway_certificate=tls.certificate_ref.name)


def _cluster_values(cluster: InferenceCluster) -> dict[str, dict[str, object]]:
    """Values of stack components only this cluster knows.

    The EKS autoscaler discovers the node groups of the cluster it is told the name of (the
    Cluster's name, its external name: provision_eks names it), in its region.
    """
    eks = cluster.spec.cluster.eks
    if cluster.spec.cluster.source != "EKS" or eks is None:
        return {}
    name = child_name(cluster.metadata.name or "", EKS_CLUSTER_KEY)
    return {"cluster-autoscaler": {"awsRegion": eks.region, "autoDiscovery.clusterName": name}}


def managed_gateway_key(plan: StackPlan) -> str | None:
    """The key of the Gateway the planned stack creates, or None when it creates none."""
    names = plan.names()
    if "inference-gateway" in names:
        return MANAGED_GATEWAY_KEY
    if "gke-gateway" in names:
        return GKE_GATEWAY_KEY
    return None


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
    # Every object composed, with its resource key (what Usages name).
    composed: tuple[ComposedObject, ...] = ()
    # The mode, the plan and the skeleton the last round composed (``converged_stack``'s
    # ``settled``).
    shape: StackShape | None = None


StackShape = tuple[Components, StackPlan, StackSkeleton]
"""A stack mode, a plan, and the skeleton a converged stack of that plan settled on."""

SettledStack = Callable[[Components, StackPlan], StackSkeleton | None]
"""The skeleton an earlier cluster of this mode and plan settled on, or None (none seen)."""


def converged_stack(
    cluster: InferenceCluster,
    pools: Sequence[GpuPool] | None,
    provisioned: Provisioned | None = None,
    settled: SettledStack | None = None,
) -> ConvergedStack:
    """The cluster's stack composed round by round, each round's objects observed Ready and
    every check met, until a round composes nothing new: the whole stack, in install order.

    A cluster that is not ``Existing`` gets the stack a Managed one of its source would;
    ``provisioned``: what its source provisioned, whose kubeconfig the provider configs read.

    ``settled``: the skeleton an earlier cluster of the same mode and plan settled on
    (``ConvergedStack.shape``), given this cluster's names instead of going round by round.
    What a round composes, and so which keys the next round sees, follows from the mode,
    the plan and the keys seen alone (``reconcile/stack.stack_skeleton`` is given no
    cluster name; ``stamp_stack`` gives it one), so a cluster planned alike settles on the
    same skeleton.
    """
    name = cluster.metadata.name or ""
    mode, plan = cluster_stack_plan(cluster, pools)
    config = provider_config(cluster, provisioned)
    skeleton = settled(mode, plan) if settled is not None else None
    if skeleton is None:
        # Every planned component observed composed and Ready from the start, so one round
        # composes them all; the next marks what that round added (Usages, checks).
        seen = {key: _CONVERGED for c in plan.components for key in component_keys(c)}
        while True:
            skeleton = stack_skeleton(mode, plan, seen)
            new = [key for key in skeleton.resource_keys() if key not in seen]
            if not new:
                break
            seen.update(dict.fromkeys(new, _CONVERGED))
    result = stamp_stack(skeleton, name, config)
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
    if managed_gateway_key(plan) is None:
        stack.append(gateway_object(cluster))
    keyed = (ComposedObject(PROVIDER_CONFIG_KEY, config), *result.objects)
    return ConvergedStack(
        tuple(configs), tuple(stack), tuple(usages), result.status, keyed, (mode, plan, skeleton)
    )


# A GCP ServiceAccount as a converged view reads it: the provider fills in its email and
# project (the GCP provider config's projectID, which only a live control plane knows).
RENDERED_PROJECT = "PROJECT_ID"


def _converged_view(obj: Json) -> ObservedObject:
    if obj.get("kind") != "ServiceAccount" or "gcp" not in str(obj.get("apiVersion")):
        return _CONVERGED
    account = obj["metadata"].get("annotations", {}).get("crossplane.io/external-name", "")
    return ObservedObject(
        conditions=_CONVERGED.conditions,
        reported=True,
        email=f"{account}@{RENDERED_PROJECT}.iam.gserviceaccount.com",
        project=RENDERED_PROJECT,
    )


def converged_provisioning(
    cluster: InferenceCluster, classes: Mapping[str, InferenceClass]
) -> Provisioned | None:
    """What the cluster's source provisions once every resource it composed is Ready, composed
    round by round as the converged stack is (None: the source is not provisioned here).

    What only the cloud knows reads as a placeholder: the project is ``RENDERED_PROJECT``.
    """
    if provisioned_platform(cluster) is None:
        return None
    seen: dict[str, ObservedObject] = {}
    while True:
        result = provision(cluster, classes, seen)
        assert result is not None
        new = [o for o in result.objects if o.key not in seen]
        if not new:
            return result
        seen.update({o.key: _converged_view(o.object) for o in new})


def provisioned_usages(
    cluster: InferenceCluster,
    provisioned: Provisioned,
    stack: ConvergedStack,
    shared: Sequence[tuple[str, Json]],
) -> tuple[Json, ...]:
    """The Usages keeping the provisioned resources until the stack is gone, for ``render``:
    ``shared`` the cluster's shared Objects with their keys."""
    composed = [*stack.composed, *(ComposedObject(k, o) for k, o in shared)]
    usages = _provider_config_usages(cluster.metadata.name or "", provisioned, composed, {})
    return tuple(u.object for u in usages)


def _plan_pools(
    cluster: InferenceCluster, gpu_pools: tuple[GpuPool, ...] | None, pending: bool
) -> tuple[GpuPool, ...] | None:
    """The pools whose devices choose the drivers: None while some class is not fetched."""
    if pending:
        return None
    published = cluster.status.gpu_pools if cluster.status is not None else None
    return gpu_pools or published or ()


def _serving_parts(
    cluster: InferenceCluster,
    observed: Observed,
    gpu_pools: tuple[GpuPool, ...] | None,
    pending: bool,
    provisioned: Provisioned | None = None,
    telemetry: Telemetry | None = None,
    replicas: Sequence[ModelReplica] | None = None,
) -> tuple[list[ComposedObject], ProviderConfigRef, Gateway | None, StackStatus, Condition]:
    """The composed objects of a cluster that answers (Existing, or provisioned and Ready) and
    the status fields they publish."""
    mode, plan = cluster_stack_plan(cluster, _plan_pools(cluster, gpu_pools, pending), telemetry)
    config = provider_config(cluster, provisioned)
    stack = compose_stack(cluster.metadata.name or "", mode, plan, observed, config)
    objects = [
        ComposedObject(
            PROVIDER_CONFIG_KEY, config, ready=True if PROVIDER_CONFIG_KEY in observed else None
        )
    ]
    gateway_key = managed_gateway_key(plan)
    implementation: GatewayImplementation | None
    if gateway_key == GKE_GATEWAY_KEY:
        # GKE's GatewayClasses are GKE's: what implements them is known without observing.
        seen_gateway = observed.get(GKE_GATEWAY_KEY)
        implementation = "GKE"
    elif gateway_key is not None:
        seen_gateway = observed.get(MANAGED_GATEWAY_KEY)
        implementation = (
            INSTALLED_GATEWAY if observed_ready(observed.get(MANAGED_GATEWAY_CLASS_KEY)) else None
        )
    else:
        seen_gateway = observed.get(GATEWAY_KEY)
        objects.append(
            ComposedObject(
                GATEWAY_KEY,
                gateway_object(cluster),
                ready=True if observed_ready(seen_gateway) else None,
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
        f"supported: {', '.join(PROVISIONED_SOURCES)} and Existing (bring the cluster)",
    )


def _provisioned_condition(
    provisioned: Provisioned, stack: StackStatus | None, missing: tuple[str, ...]
) -> Condition:
    """ClusterReady of a provisioned cluster: True once its resources and its stack are Ready."""
    if missing:
        return condition(CLUSTER_READY, False, "WaitingForClasses", waiting_for_classes(missing))
    if not provisioned.ready:
        return condition(
            CLUSTER_READY, False, "Provisioning", (provisioned.message or "provisioning")[:1024]
        )
    if stack is None or stack.phase != "Ready":
        phase = stack.phase if stack is not None else "Installing"
        return condition(
            CLUSTER_READY,
            False,
            "StackNotReady",
            f"the cluster is provisioned; its serving stack is {phase} (see StackReady)",
        )
    return condition(CLUSTER_READY, True, "ClusterRunning")


def _provider_config_usages(
    cluster: str, provisioned: Provisioned, objects: Sequence[ComposedObject], observed: Observed
) -> list[ComposedObject]:
    """Teardown order between the stack and what was provisioned (docs/provisioning.md).

    A Usage's user must share its namespace, so the cluster-scoped provider configs cannot
    keep anything: the Objects and Releases that go through them do. What the uninstall
    talks to (the cluster, and the identity or kubeconfig resource the provider configs
    read; the cloud module keeps the network under the cluster and the cluster under its
    pools) is kept by the last object to go of each stack component that needs no other
    (every other component goes before those, by the stack's own Usages), by each shared
    Object and by each Object the cloud module delivers: the stack is uninstalled from a
    cluster that still answers, with an identity still valid. Node pools may go first: an
    uninstall is API calls, and keeping every pool under every component would cost a Usage
    per pair, each polled by Crossplane (docs/scale.md).
    """
    tops = [o for o in provisioned.objects if o.object.get("kind") in _KEPT_UNDER_THE_STACK]
    users: list[ComposedObject] = []
    seen_components: set[str] = set()
    for composed in objects:
        kind = composed.object.get("kind")
        if kind not in ("Object", "Release") or composed.key.startswith(REQUIRE_KEY_PREFIX):
            continue
        component = COMPONENT_OF_KEY.get(composed.key)
        if component is not None:
            if component in seen_components or COMPONENTS_BY_NAME[component].needs:
                continue
            seen_components.add(component)
        users.append(composed)
    users.extend(o for o in provisioned.objects if o.object.get("kind") == "Object")
    out = [
        usage(cluster, top.key, top.object, user.key, user.object) for top in tops for user in users
    ]
    return [ComposedObject(k, o, True if k in observed else None) for k, o in out]


# The provisioned kinds the stack's uninstall talks to: the cluster and the credentials
# its provider configs read (GKE's access key, EKS's kubeconfig).
_KEPT_UNDER_THE_STACK = frozenset({"Cluster", "ServiceAccountKey", "ClusterAuth"})


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
    cache: ClusterCacheStatus | None = None
    source = cluster.spec.cluster.source
    provisioned = (
        provision(cluster, classes.found, observed) if source in PROVISIONED_SOURCES else None
    )
    telemetry = telemetry_for(cluster.metadata.labels or {}, destinations, mappings)
    if source == "Existing":
        conditions = [_cluster_condition(cluster, classes.missing)]
        objects, provider_config_ref, gateway, stack, stack_condition = _serving_parts(
            cluster,
            observed,
            gpu_pools,
            bool(classes.pending),
            telemetry=telemetry,
            replicas=replicas,
        )
        conditions.append(stack_condition)
    elif provisioned is not None:
        objects = list(provisioned.objects)
        conditions = []
        # Once the provider configs exist they are kept, with the stack, through any blip of
        # the cloud's resources: a stack is never uninstalled under running replicas.
        if provisioned.ready or PROVIDER_CONFIG_KEY in observed:
            serving, provider_config_ref, gateway, stack, stack_condition = _serving_parts(
                cluster,
                observed,
                gpu_pools,
                bool(classes.pending),
                provisioned,
                telemetry,
                replicas,
            )
            objects.extend(serving)
            objects.extend(
                _provider_config_usages(cluster.metadata.name or "", provisioned, serving, observed)
            )
            conditions.append(stack_condition)
        storage_class = CACHE_STORAGE_CLASSES.get(source)
        if storage_class is not None:
            cache = ClusterCacheStatus(storage_class_name=storage_class)
        cluster_ready = _provisioned_condition(provisioned, stack, classes.missing)
        conditions.insert(0, cluster_ready)
        ready = None if cluster_ready.status == "True" else False
    else:
        conditions = [_cluster_condition(cluster, classes.missing)]
        ready = False
    status = InferenceClusterStatus(
        gateway=gateway,
        provider_config_ref=provider_config_ref,
        gpu_pools=gpu_pools,
        cache=cache,
        occupancy=occupancy,
        stack=stack,
    )
    events = [Event("Normal", waiting_for_classes(classes.missing))] if classes.missing else []
    left_out = team_namespaces(replicas, observed)[1]
    if left_out:
        events.append(Event("Warning", over_namespace_bound(left_out)))
    return ClusterComposition(objects, status, conditions, events, ready)
