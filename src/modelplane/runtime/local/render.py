"""One full local reconcile of a fleet: what ``modelplane render`` prints (README.md).

The local runtime, a shell beside the Crossplane one: typed objects in, ordered desired
objects out. Deployments are reconciled in (namespace, name) order, each seeing the
replicas the earlier ones were given (docs/scheduling.md, "Inputs, identity and result");
each replica is then composed on its cluster (docs/composition.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import islice

from modelplane.api import (
    InferenceCluster,
    InferenceGateway,
    MetricMapping,
    ModelCache,
    ModelDeployment,
    ModelEndpoint,
    ModelReplica,
    ModelService,
    TelemetryDestination,
)
from modelplane.api.inferencecluster import (
    Components,
    InferenceClusterStatus,
    ProviderConfigRef,
    StackComponent,
    StackStatus,
    derived_gpu_pools,
)
from modelplane.api.meta import condition
from modelplane.composition import compose_replica
from modelplane.composition.delivery import shared_objects, team_namespace_objects
from modelplane.composition.observed import ObservedObject
from modelplane.composition.replica import derived_provider_config, provider_config_for
from modelplane.composition.types import ComposedObject, Json
from modelplane.naming import FRONT_GATEWAY_KEY, SERVICE_ROUTE_KEY
from modelplane.reconcile.autoscaling import Autoscaler, autoscaler
from modelplane.reconcile.cache import CacheResult, reconcile_cache
from modelplane.reconcile.cluster import (
    ConvergedStack,
    StackShape,
    converged_provisioning,
    converged_stack,
    provisioned_usages,
    team_namespaces,
)
from modelplane.reconcile.deployment import DeploymentResult, Fleet, reconcile_fleet
from modelplane.reconcile.endpoint import EndpointResult, reconcile_endpoint
from modelplane.reconcile.gateway import (
    SECURITY_POLICY_KEY,
    GatewayResult,
    endpoints_of,
    reconcile_gateway,
)
from modelplane.reconcile.service import ServiceResult, gateway_key, reconcile_service
from modelplane.reconcile.stack import StackSkeleton, release
from modelplane.reconcile.telemetry import COLLECTOR, DestinationResult, reconcile_destination
from modelplane.runtime.wire import composed, condition_wire, deployment_status_wire
from modelplane.stack.collector import collector_values
from modelplane.stack.components import component
from modelplane.stack.selection import StackPlan, telemetry_for


@dataclass
class RenderedDeployment:
    """One deployment's part of the output, each list already in print order."""

    deployment: Json
    result: DeploymentResult
    replicas: list[Json]
    remote: list[tuple[str, Json]] = field(default_factory=list)  # (cluster, Object)
    endpoints: list[Json] = field(default_factory=list)
    usages: list[Json] = field(default_factory=list)  # one per replica, in the same order

    def replicas_with_usages(self) -> list[Json]:
        """Each replica followed by its Usage."""
        usages = iter(self.usages)
        return [o for replica in self.replicas for o in (replica, *islice(usages, 1))]

    def control_plane(self) -> list[Json]:
        """The control-plane objects: the deployment, its replicas (each with its Usage),
        its endpoints."""
        return [self.deployment, *self.replicas_with_usages(), *self.endpoints]

    def in_order(self) -> list[Json]:
        """Everything, in the order ``render`` prints it (docs/cli.md)."""
        return [
            self.deployment,
            *self.replicas_with_usages(),
            *(o for _, o in self.remote),
            *self.endpoints,
        ]


@dataclass
class RenderedCache:
    """One ModelCache's part of the output: the cache with its status, its Usages, then its
    Objects."""

    cache: Json
    result: CacheResult
    model: ModelCache  # the typed input, for whoever reads it back (the summary)

    @property
    def remote(self) -> list[tuple[str, Json]]:
        """``(cluster, Object)`` per composed object, in print order."""
        return [(o.cluster, o.object) for o in self.result.objects]

    def control_plane(self) -> list[Json]:
        """The control-plane objects: the cache with its computed status, then its Usages
        (one per cluster it stages on, in cluster order)."""
        return [self.cache, *(u.object for u in self.result.usages)]

    def in_order(self) -> list[Json]:
        """Everything, in the order ``render`` prints it: the cache, its Usages, its Objects."""
        return [*self.control_plane(), *(o for _, o in self.remote)]


@dataclass
class RenderedCluster:
    """What one InferenceCluster composes: its stack, converged, and its replicas' shared Objects."""

    name: str
    stack: ConvergedStack
    shared: list[Json]
    # What the cluster's source provisioned (GKE, EKS): its managed resources, the Objects it
    # delivers once the cluster answers, the Usages ordering its teardown after the stack's.
    provisioned: tuple[Json, ...] = ()
    delivered: tuple[Json, ...] = ()
    provisioned_usages: tuple[Json, ...] = ()

    @property
    def objects(self) -> list[Json]:
        """What was provisioned, provider configs, what the cloud delivers, the stack in
        install order, its Usages and the provisioned ones, the shared Objects."""
        return [
            *self.provisioned,
            *self.stack.provider_configs,
            *self.delivered,
            *self.stack.stack,
            *self.stack.usages,
            *self.provisioned_usages,
            *self.shared,
        ]

    @property
    def remote(self) -> list[tuple[str, Json]]:
        """``(cluster, object)`` per object composed for the cluster, in print order."""
        return [(self.name, o) for o in self.objects]

    def control_plane(self) -> list[Json]:
        """Nothing: the cluster itself is input, printed as given."""
        return []

    def in_order(self) -> list[Json]:
        """What ``render`` prints for the cluster (docs/cli.md)."""
        return self.objects


@dataclass
class StackShapes:
    """The skeletons the converged stacks of one ``render`` settled on, by stack mode and
    plan (reconcile/cluster.py ``converged_stack``'s ``settled``): a cluster planned like
    an earlier one is given its names in that one's skeleton, not composed anew."""

    settled: list[StackShape] = field(default_factory=list)

    def known(self, mode: Components, plan: StackPlan) -> StackSkeleton | None:
        """The skeleton a cluster of this mode and plan settled on, or None (none seen yet)."""
        for seen_mode, seen_plan, skeleton in self.settled:
            if seen_mode == mode and seen_plan == plan:
                return skeleton
        return None

    def remember(self, stack: ConvergedStack) -> None:
        """Keep the stack's shape, if its mode and plan are new."""
        if stack.shape is not None and self.known(*stack.shape[:2]) is None:
            self.settled.append(stack.shape)


def render_clusters(
    fleet: Fleet,
    deployments: Sequence[RenderedDeployment] = (),
    only: Sequence[InferenceCluster] | None = None,
) -> list[RenderedCluster]:
    """What every InferenceCluster composes, in name order, as a live control plane would.

    The converged view: every component of the stack composed and Ready (reconcile/cluster.py
    ``converged_stack``), planned on the cluster's published pools, else those derived from
    its node pools and classes. The shared Objects go through the provider config the
    cluster's replicas use (docs/cli.md); the rendered ``deployments``' replicas add the
    Namespace and shared Objects of each team namespace they are in (docs/composition.md,
    "Team namespaces"). ``only``: these of the fleet's clusters (each as it composes among
    all of them), in name order.
    """
    replicas = _placed_replicas(deployments)
    classes = {c.metadata.name or "": c for c in fleet.classes}
    shapes = StackShapes()
    out: list[RenderedCluster] = []
    chosen = fleet.clusters if only is None else only
    for cluster in sorted(chosen, key=lambda c: c.metadata.name or ""):
        name = cluster.metadata.name or ""
        published = cluster.status.gpu_pools if cluster.status is not None else None
        pools = published or derived_gpu_pools(cluster, classes)
        provider = provider_config_for(cluster) or derived_provider_config(cluster)
        keyed_shared = shared_objects(name, provider)
        on_cluster = [r for r in replicas if r.spec.cluster_name == name]
        for namespace in team_namespaces(on_cluster, {})[0]:
            keyed_shared.extend(team_namespace_objects(name, provider, namespace))
        shared = [o for _, o in keyed_shared]
        provisioned = converged_provisioning(cluster, classes)
        stack = converged_stack(cluster, pools, provisioned, shapes.known)
        shapes.remember(stack)
        rendered = RenderedCluster(name, stack, shared)
        if provisioned is not None:
            objects = [o.object for o in provisioned.objects]
            rendered.provisioned = tuple(o for o in objects if o["kind"] not in ("Usage", "Object"))
            rendered.delivered = tuple(o for o in objects if o["kind"] == "Object")
            rendered.provisioned_usages = (
                *(o for o in objects if o["kind"] == "Usage"),
                *provisioned_usages(cluster, provisioned, stack, keyed_shared),
            )
        out.append(rendered)
    return out


def clusters_placed(deployments: Sequence[RenderedDeployment]) -> frozenset[str]:
    """The clusters the rendered ``deployments`` place a replica on: those alone compose
    differently in render_clusters with them than without them (the Namespace and shared
    Objects of each team namespace a replica is in)."""
    return frozenset(r.spec.cluster_name for r in _placed_replicas(deployments))


def _placed_replicas(deployments: Sequence[RenderedDeployment]) -> list[ModelReplica]:
    return [d.object for r in deployments for d in r.result.replicas]


def render_caches(fleet: Fleet) -> list[RenderedCache]:
    """Reconcile every ModelCache of the fleet, in (namespace, name) order."""
    out: list[RenderedCache] = []
    ordered = sorted(
        fleet.caches, key=lambda c: (c.metadata.namespace or "default", c.metadata.name or "")
    )
    for cache in ordered:
        result = reconcile_cache(cache, fleet.clusters, derive_provider_config=True)
        wire = cache.to_wire()
        wire["metadata"]["namespace"] = cache.metadata.namespace or "default"
        wire["status"] = {
            **result.status.to_wire(),
            "conditions": [condition_wire(c) for c in result.conditions],
        }
        out.append(RenderedCache(wire, result, cache))
    return out


def render(fleet: Fleet) -> list[RenderedDeployment]:
    """Reconcile every deployment of the fleet and compose every desired replica."""
    clusters = {c.metadata.name: c for c in fleet.clusters}
    return [_rendered(r, clusters) for r in reconcile_fleet(fleet)]


def _rendered(
    result: DeploymentResult, clusters: dict[str | None, InferenceCluster]
) -> RenderedDeployment:
    deployment = result.deployment
    wire = deployment.to_wire()
    wire["metadata"]["namespace"] = deployment.metadata.namespace or "default"
    wire["status"] = deployment_status_wire(result.status)
    rendered = RenderedDeployment(
        deployment=wire,
        result=result,
        replicas=[composed(r).object for r in result.replicas],
        endpoints=[composed(e).object for e in result.endpoints],
        usages=[composed(u).object for u in result.usages],
    )
    for replica in (r.object for r in result.replicas):
        cluster = clusters.get(replica.spec.cluster_name)
        composition = compose_replica(replica, cluster, derive_provider_config=True)
        rendered.remote.extend((replica.spec.cluster_name, o.object) for o in composition.objects)
    return rendered


@dataclass
class RenderedEndpoint:
    """One ModelEndpoint's routable backend: Backend, AIServiceBackend, BackendSecurityPolicy."""

    endpoint: ModelEndpoint
    result: EndpointResult

    @property
    def remote(self) -> list[tuple[str, Json]]:
        """Nothing: the backend lives on the control plane."""
        return []

    def control_plane(self) -> list[Json]:
        """The Backend, the AIServiceBackend, then any BackendSecurityPolicy (none for an invalid origin)."""
        return [o.object for o in self.result.objects]

    def in_order(self) -> list[Json]:
        """What ``render`` prints for this endpoint, after every deployment and cache."""
        return self.control_plane()


def render_endpoints(fleet: Fleet, rendered: list[RenderedDeployment]) -> list[RenderedEndpoint]:
    """The backend of every ModelEndpoint, composed ones and the input's, in (namespace, name) order.

    A composed endpoint replaces an input one of the same name (its earlier render, fed
    back). ``render`` shows the converged state: a composed backend counts as observed.
    """
    by_name: dict[tuple[str, str], ModelEndpoint] = {}
    for given in fleet.endpoints:
        by_name[(given.metadata.namespace or "default", given.metadata.name or "")] = given
    for r in rendered:
        for wire in r.endpoints:
            composed = ModelEndpoint.model_validate(wire)
            by_name[(composed.metadata.namespace or "default", composed.metadata.name or "")] = (
                composed
            )
    out: list[RenderedEndpoint] = []
    for key in sorted(by_name):
        endpoint = by_name[key]
        out.append(RenderedEndpoint(endpoint, reconcile_endpoint(endpoint)))
    return out


@dataclass
class RenderedFront:
    """An InferenceGateway with its status and its Gateway, or a ModelService and its route."""

    model: InferenceGateway | ModelService
    wire: Json
    result: GatewayResult | ServiceResult

    @property
    def remote(self) -> list[tuple[str, Json]]:
        """Nothing: the front door and the routes live on the control plane."""
        return []

    def control_plane(self) -> list[Json]:
        """The object with its computed status, then what it composes."""
        return [self.wire, *(o.object for o in self.result.objects)]

    def in_order(self) -> list[Json]:
        """What ``render`` prints for it."""
        return self.control_plane()


def _with_status(
    model: InferenceGateway | ModelService, result: GatewayResult | ServiceResult
) -> Json:
    wire = model.to_wire()
    wire["metadata"]["namespace"] = model.metadata.namespace or "default"
    if isinstance(model, InferenceGateway):
        del wire["metadata"]["namespace"]  # cluster-scoped
    wire["status"] = {
        **result.status.to_wire(),
        "conditions": [condition_wire(c) for c in result.conditions],
    }
    return wire


def render_fronts(
    gateways: list[InferenceGateway],
    services: list[ModelService],
    backends: list[RenderedEndpoint],
    clusters: Sequence[InferenceCluster] = (),
) -> list[RenderedFront]:
    """Every InferenceGateway (by name), then every ModelService (by namespace, name).

    ``render`` shows the converged state: each cluster publishes the provider config it
    composes, a gateway whose input carries ``status.address`` counts as programmed there
    (its SecurityPolicy created), a route to it as accepted, and provider-kubernetes as
    running with ``--sanitize-secrets`` (package/install/provider-kubernetes.yaml), and every
    Secret the front door names on a cluster as there. It reads no Secret, so a gateway's
    ``auth`` selects none.
    """
    out: list[RenderedFront] = []
    if not gateways and not services:
        return out  # no cluster's published config is needed (1,000 clusters: 20 ms)
    by_cluster = {c.metadata.name or "": _published_config(c) for c in clusters}
    served: list[InferenceGateway] = []
    for gateway in sorted(gateways, key=lambda g: g.metadata.name or ""):
        given = gateway.status.address if gateway.status else None
        observed: dict[str, ObservedObject] = {SECURITY_POLICY_KEY: _READY}
        if given:
            remote = ObservedObject(
                conditions=(condition("Programmed", True, ""),), addresses=(given,)
            )
            observed[FRONT_GATEWAY_KEY] = ObservedObject(remote=remote)
        cluster = by_cluster.get(gateway.spec.cluster_name)
        first = reconcile_gateway(gateway, cluster, gateways, (), None, observed)
        observed.update(_found(first.objects))
        result = reconcile_gateway(gateway, cluster, gateways, (), None, observed)
        if given and result.status.address:  # the input's address is already host[:port]
            status = result.status.model_copy(
                update={
                    "address": given,
                    "endpoints": endpoints_of(given, gateway.spec.tls is not None),
                }
            )
            result = GatewayResult(result.objects, status, result.conditions, result.events)
        served.append(gateway.model_copy(update={"status": result.status}))
        out.append(RenderedFront(gateway, _with_status(gateway, result), result))
    endpoints = [b.endpoint.model_copy(update={"status": b.result.status}) for b in backends]
    accepted = ObservedObject(remote=ObservedObject(conditions=(condition("Accepted", True, ""),)))
    for service in sorted(
        services, key=lambda s: (s.metadata.namespace or "default", s.metadata.name or "")
    ):
        routes = {
            gateway_key(g, SERVICE_ROUTE_KEY): accepted for g in served if gateway_has_address(g)
        }
        first_s = reconcile_service(service, endpoints, served, by_cluster, None, routes)
        routes.update(_found(first_s.objects))
        # Converged, Envoy AI Gateway has accepted every key policy, so the route names
        # the keyed endpoints too.
        routes.update(
            (o.key, accepted)
            for o in first_s.objects
            if o.object["spec"]["forProvider"]["manifest"]["kind"] == "BackendSecurityPolicy"
        )
        result_s = reconcile_service(service, endpoints, served, by_cluster, None, routes)
        out.append(RenderedFront(service, _with_status(service, result_s), result_s))
    return out


_READY = ObservedObject(conditions=(condition("Ready", True, ""),))


def _found(objects: Sequence[ComposedObject]) -> dict[str, ObservedObject]:
    """The observe-only Objects (the Secrets the front door names on a cluster) as found."""
    return {
        o.key: ObservedObject(reported=True, conditions=_READY.conditions)
        for o in objects
        if o.object["spec"].get("managementPolicies") == ["Observe"]
    }


def _published_config(cluster: InferenceCluster) -> InferenceCluster:
    """The cluster as its function publishes it: with the provider config it composes."""
    if provider_config_for(cluster) is not None:
        return cluster
    status = cluster.status or InferenceClusterStatus()
    ref = ProviderConfigRef(name=derived_provider_config(cluster)[1])
    return cluster.model_copy(
        update={"status": status.model_copy(update={"provider_config_ref": ref})}
    )


def gateway_has_address(gateway: InferenceGateway) -> bool:
    """The gateway publishes an address."""
    return bool(gateway.status and gateway.status.address)


@dataclass
class RenderedDestination:
    """A TelemetryDestination with its status, then the collector each cluster it selects runs."""

    wire: Json
    result: DestinationResult
    collectors: list[tuple[str, Json]] = field(default_factory=list)  # (cluster, Release)

    @property
    def remote(self) -> list[tuple[str, Json]]:
        """``(cluster, Release)`` per collector this destination is first to select."""
        return list(self.collectors)

    def control_plane(self) -> list[Json]:
        """The destination with its computed status."""
        return [self.wire]

    def in_order(self) -> list[Json]:
        """The destination, then the collectors' Releases in cluster order."""
        return [self.wire, *(o for _, o in self.collectors)]


def render_telemetry(
    destinations: list[TelemetryDestination],
    mappings: list[MetricMapping],
    clusters: Sequence[InferenceCluster],
) -> list[RenderedDestination]:
    """Every destination by name; each Managed cluster a destination selects gets its collector,
    printed once under the first destination (by name) selecting it.

    The collector is what the cluster's stack composes (``reconcile/stack.release``) with every
    destination selecting the cluster; ``render`` shows it Ready (the converged state).
    """
    out: list[RenderedDestination] = []
    if not destinations:
        return out  # no cluster's converged view is needed (1,000 clusters: 15 ms)
    shown: set[str] = set()
    ordered_clusters = sorted(clusters, key=lambda c: c.metadata.name or "")
    converged = [_collector_ready(c) for c in ordered_clusters]
    for destination in sorted(destinations, key=lambda d: d.metadata.name or ""):
        result = reconcile_destination(destination, converged)
        wire = destination.to_wire()
        wire["status"] = {
            **result.status.to_wire(),
            "conditions": [condition_wire(c) for c in result.conditions],
        }
        rendered = RenderedDestination(wire, result)
        for cluster in ordered_clusters:
            name = cluster.metadata.name or ""
            if name in shown or not _managed(cluster):
                continue
            telemetry = telemetry_for(cluster.metadata.labels or {}, destinations, mappings)
            if telemetry is None or destination not in telemetry.destinations:
                continue
            shown.add(name)
            values = collector_values(name, telemetry.destinations, telemetry.mappings)
            rendered.collectors.append(
                (name, release(name, component(COLLECTOR), extra_values=values))
            )
        out.append(rendered)
    return out


def _managed(cluster: InferenceCluster) -> bool:
    existing = cluster.spec.cluster.existing
    return (
        cluster.spec.cluster.source == "Existing"
        and existing is not None
        and existing.mode == "Managed"
    )


def _collector_ready(cluster: InferenceCluster) -> InferenceCluster:
    """The cluster as its converged stack reports a Managed collector: Ready."""
    if not _managed(cluster):
        return cluster
    item = StackComponent(name=COLLECTOR, version=component(COLLECTOR).release, phase="Ready")
    status = cluster.status or InferenceClusterStatus()
    stack = status.stack or StackStatus(components="Managed", phase="Ready", items=())
    items = tuple(i for i in stack.items or () if i.name != COLLECTOR) + (item,)
    stack = stack.model_copy(update={"items": items})
    return cluster.model_copy(update={"status": status.model_copy(update={"stack": stack})})


@dataclass
class RenderedAutoscaler:
    """The KEDA objects of a deployment that opts in to autoscaling, or why there are none."""

    deployment: ModelDeployment
    result: Autoscaler

    @property
    def remote(self) -> list[tuple[str, Json]]:
        """Nothing: KEDA runs on the control plane, beside the ModelDeployment."""
        return []

    def control_plane(self) -> list[Json]:
        """The ScaledObject, then any TriggerAuthentication."""
        return list(self.result.objects)

    def in_order(self) -> list[Json]:
        """What ``render`` prints for it."""
        return self.control_plane()


def render_autoscalers(
    deployments: list[ModelDeployment], destinations: list[TelemetryDestination]
) -> list[RenderedAutoscaler]:
    """Every deployment that opts in (its annotation), in (namespace, name) order."""
    out: list[RenderedAutoscaler] = []
    for deployment in sorted(
        deployments, key=lambda d: (d.metadata.namespace or "default", d.metadata.name or "")
    ):
        result = autoscaler(deployment, destinations)
        if result is not None:
            out.append(RenderedAutoscaler(deployment, result))
    return out
