"""The serving stack of one cluster: installed (Managed) or verified (Provided) (docs/stack.md).

Pure: the cluster's plan (``stack.selection``), its observed composed resources and its mode
in; the composed objects (Releases, Objects, checks, Usages), ``status.stack`` and the
stack's condition out. Install order and teardown order come from the table's ``needs``:
a component is first created once every component it needs is Ready, and a Usage keeps
each needed component (and the cluster's provider configs) until its dependents are gone.
A component once composed is always composed again: a dependency that blips never
uninstalls what runs on it, and neither does a pool edit (docs/stack.md, "Never uninstalled
under a running replica").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from modelplane.api.inferencecluster import (
    ComponentPhase,
    Components,
    StackComponent,
    StackPhase,
    StackStatus,
)
from modelplane.api.meta import Condition, condition, get_condition, holds
from modelplane.composition.delivery import cluster_object
from modelplane.composition.observed import Observed, ObservedObject
from modelplane.composition.types import ComposedObject, Json
from modelplane.naming import (
    POOL_LABEL,
    PROVIDER_CONFIG_KIND,
    SYSTEM_NAMESPACE,
    child_name,
    provider_config_name,
)
from modelplane.stack.collector import collector_values
from modelplane.stack.components import COMPONENTS_BY_NAME, configured_objects
from modelplane.stack.model import Component, Manifest, Requirement, ServedApi, set_path
from modelplane.stack.selection import StackPlan, Telemetry

HELM_API = "helm.m.crossplane.io/v1beta1"
KUBERNETES_API = "kubernetes.m.crossplane.io/v1alpha1"
USAGE_API = "protection.crossplane.io/v1beta1"
# provider-helm names the Helm release after this annotation, else the Release's own name
# (crossplane-contrib/provider-helm v1.4.0, the Release's external name): ours is short, fixed
# per component, and cannot collide with a release a platform team runs under its own name.
EXTERNAL_NAME_ANNOTATION = "crossplane.io/external-name"
RELEASE_PREFIX = "modelplane-"
# Helm's --wait bound for one install or upgrade: a driver's DaemonSet on a large pool, or a
# controller pulling its image, is slow, but a stuck install must surface as Failed.
WAIT_TIMEOUT = "10m"
STACK_READY = "StackReady"
REQUIREMENTS_MET = "RequirementsMet"
MAX_MESSAGE = 1024

# Resource-key prefixes of the cluster function's stack resources.
STACK_KEY_PREFIX = "stack-"
REQUIRE_KEY_PREFIX = "require-"
USAGE_KEY_PREFIX = "uses-"
HELM_PROVIDER_CONFIG_KEY = "helm-provider-config"


@dataclass(frozen=True, slots=True)
class StackResult:
    """What the stack part of one InferenceCluster reconcile composes and publishes."""

    objects: tuple[ComposedObject, ...]
    status: StackStatus
    condition: Condition


def release_key(component: Component) -> str:
    """The resource key of a component's Release."""
    return STACK_KEY_PREFIX + component.name


def object_key(component: Component, suffix: str) -> str:
    """The resource key of one of the objects we compose ourselves for a component."""
    return f"{STACK_KEY_PREFIX}{component.name}-{suffix}"


def component_keys(component: Component) -> tuple[str, ...]:
    """The resource keys of everything a component composes, in order."""
    if component.chart is not None:
        return (release_key(component),)
    return tuple(object_key(component, suffix) for suffix, _ in configured_objects(component.name))


# Every stack resource key to the component composing it (the table's components only compose
# these; Usages and checks have their own prefixes).
COMPONENT_OF_KEY: Mapping[str, str] = MappingProxyType(
    {key: c.name for c in COMPONENTS_BY_NAME.values() for key in component_keys(c)}
)


def requirement_key(requirement: Requirement) -> str:
    """The resource key of the observe-only Object checking ``requirement``."""
    if isinstance(requirement, ServedApi):
        return f"{REQUIRE_KEY_PREFIX}api-{requirement.api_service}"
    return f"{REQUIRE_KEY_PREFIX}{requirement.kind.lower()}-{requirement.name}"


def helm_provider_config(cluster: str, kubernetes_config: Json) -> Json:
    """The provider-helm ClusterProviderConfig: the same kubeconfig Secret and identity."""
    return {
        "apiVersion": HELM_API,
        "kind": PROVIDER_CONFIG_KIND,
        "metadata": {"name": provider_config_name(cluster)},
        "spec": kubernetes_config["spec"],
    }


def pool_affinity(pools: Sequence[str]) -> Json:
    """A node affinity requiring one of ``pools`` by the pool label our pods select on."""
    term = {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": list(pools)}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def release(
    cluster: str,
    component: Component,
    pools: Sequence[str] = (),
    extra_values: Json | None = None,
    platform: str | None = None,
) -> Json:
    """The provider-helm Release installing ``component`` on the cluster.

    ``pools``: for a driver, the pools claiming its devices, where its node plugin runs.
    ``extra_values``: values computed for this cluster (the collector's configuration).
    ``platform``: the cloud this project provisioned the cluster on, if it did.
    """
    return _release(cluster, component, release_values(component, pools, extra_values, platform))


def release_values(
    component: Component,
    pools: Sequence[str] = (),
    extra_values: Json | None = None,
    platform: str | None = None,
) -> Json:
    """The Helm values of ``component``'s Release (``release``'s arguments): a fresh tree."""
    values: Json = _merged(component.values_tree(platform), extra_values or {})
    if component.pool_affinity is not None and pools:
        set_path(values, component.pool_affinity, pool_affinity(pools))
    return values


def _release(cluster: str, component: Component, values: Json) -> Json:
    """The Release installing ``component`` with ``values`` on the cluster."""
    chart = component.chart
    assert chart is not None  # only charted components are released
    return {
        "apiVersion": HELM_API,
        "kind": "Release",
        "metadata": {
            "name": child_name(cluster, release_key(component)),
            "namespace": SYSTEM_NAMESPACE,
            "annotations": {EXTERNAL_NAME_ANNOTATION: RELEASE_PREFIX + component.name},
        },
        "spec": {
            "providerConfigRef": {
                "kind": PROVIDER_CONFIG_KIND,
                "name": provider_config_name(cluster),
            },
            "forProvider": {
                "chart": {
                    "repository": chart.repository,
                    "name": chart.name,
                    "version": chart.version,
                },
                "namespace": component.namespace,
                "values": values,
                # Ready means rolled out, not accepted: dependents wait on health.
                "wait": component.wait,
                **({"waitTimeout": WAIT_TIMEOUT} if component.wait else {}),
            },
        },
    }


def _observe(cluster: str, key: str, manifest: Json) -> Json:
    """An observe-only Object reading ``manifest`` from the workload cluster."""
    return {
        "apiVersion": KUBERNETES_API,
        "kind": "Object",
        "metadata": {"name": child_name(cluster, key), "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "managementPolicies": ["Observe"],
            "providerConfigRef": {
                "kind": PROVIDER_CONFIG_KIND,
                "name": provider_config_name(cluster),
            },
            "forProvider": {"manifest": manifest},
        },
    }


def requirement_object(cluster: str, requirement: Requirement) -> Json:
    """The observe-only Object proving ``requirement`` on a Provided cluster."""
    if isinstance(requirement, ServedApi):
        manifest: Json = {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": requirement.api_service},
        }
    else:
        manifest = {
            "apiVersion": requirement.api_version,
            "kind": requirement.kind,
            "metadata": {"name": requirement.name},
        }
        if requirement.namespace is not None:
            manifest["metadata"]["namespace"] = requirement.namespace
    return _observe(cluster, requirement_key(requirement), manifest)


def _ref(obj: Json) -> Json:
    """A Usage's reference to a composed object."""
    ref: Json = {"name": obj["metadata"]["name"]}
    if "namespace" not in obj["metadata"]:
        # A namespaced Usage protects a cluster-scoped object only when its reference says
        # so with an empty namespace (crossplane v2.3.4 internal/protection/usage/finder.go).
        ref["namespace"] = ""
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "resourceRef": ref}


def usage_key(of_key: str, by_key: str) -> str:
    """The resource key of the Usage keeping ``of_key``'s object until ``by_key``'s is gone."""
    return f"{USAGE_KEY_PREFIX}{of_key}-by-{by_key}"


def usage(cluster: str, of_key: str, of: Json, by_key: str, by: Json) -> tuple[str, Json]:
    """The Usage keeping ``of`` until ``by`` is gone, with its resource key."""
    key = usage_key(of_key, by_key)
    return key, {
        "apiVersion": USAGE_API,
        "kind": "Usage",
        "metadata": {"name": child_name(cluster, key), "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "of": _ref(of),
            "by": _ref(by),
            # The blocked delete of ``of`` is replayed as soon as ``by`` is gone, so teardown
            # proceeds in order without waiting for the next garbage-collection pass.
            "replayDeletion": True,
        },
    }


# ---------------------------------------------------------------------------------------------
# Phases


def _release_phase(seen: ObservedObject | None) -> tuple[ComponentPhase, str | None]:
    if seen is None:
        return "Installing", None
    if holds(seen.conditions, "Ready"):
        return "Ready", None
    synced = get_condition(seen.conditions, "Synced")
    if synced.status == "False":
        return "Failed", (synced.message or synced.reason or "not synced")[:MAX_MESSAGE]
    return "Installing", None


def _objects_phase(keys: tuple[str, ...], observed: Observed) -> tuple[ComponentPhase, str | None]:
    phases = [_release_phase(observed.get(key)) for key in keys]
    failed = next((p for p in phases if p[0] == "Failed"), None)
    if failed is not None:
        return failed
    if all(p[0] == "Ready" for p in phases):
        return "Ready", None
    return "Installing", None


def _requirement_met(seen: ObservedObject | None) -> bool | None:
    """True: the object exists; False: the provider looked and found none; None: not yet."""
    if seen is None:
        return None
    if seen.reported:
        return True
    synced = get_condition(seen.conditions, "Synced")
    return False if synced.status == "False" else None


def _needed_by_text(component: Component) -> str:
    return f"{component.title} {component.release} or later"


def _provided_phase(component: Component, observed: Observed) -> tuple[ComponentPhase, str | None]:
    missing: list[str] = []
    pending = False
    for requirement in component.requires:
        met = _requirement_met(observed.get(requirement_key(requirement)))
        if met is False:
            missing.append(requirement.label)
        elif met is None:
            pending = True
    if missing:
        return "Missing", (f"missing {', '.join(missing)}: install {_needed_by_text(component)}")[
            :MAX_MESSAGE
        ]
    if pending:
        return "Waiting", "not verified yet"
    return "Provided", None


# ---------------------------------------------------------------------------------------------
# Composition


@dataclass(frozen=True, slots=True)
class _Kept:
    """An object applied before, composed again as it was (a copy)."""

    object: Json

    def stamped(self, cluster: str, component: Component, key: str) -> Json:
        return dict(self.object)


@dataclass(frozen=True, slots=True)
class _Own:
    """An object we compose ourselves: its manifest, delivered by an Object of the cluster."""

    manifest: Manifest

    def stamped(self, cluster: str, component: Component, key: str) -> Json:
        # The Gateway's Object is watched (delivery.watched): its address, once the load
        # balancer has one, makes the cluster Ready.
        return cluster_object(cluster, key, dict(self.manifest))


@dataclass(frozen=True, slots=True)
class _Charted:
    """A Release whose values do not name the cluster."""

    values: Json

    def stamped(self, cluster: str, component: Component, key: str) -> Json:
        return _release(cluster, component, self.values)


@dataclass(frozen=True, slots=True)
class _Collector:
    """The collector's Release: its values name the cluster."""

    telemetry: Telemetry | None
    platform: str | None

    def stamped(self, cluster: str, component: Component, key: str) -> Json:
        telemetry = self.telemetry
        destinations = telemetry.destinations if telemetry is not None else ()
        mappings = telemetry.mappings if telemetry is not None else ()
        extra = collector_values(cluster, destinations, mappings)
        return release(cluster, component, extra_values=extra, platform=self.platform)


_Piece = _Kept | _Own | _Charted | _Collector
"""One composed object before it is given the cluster's names."""


@dataclass(frozen=True, slots=True)
class _Part:
    """One composed component: its objects by key (its last is what Usages name), each
    with its ready flag."""

    component: Component
    objects: tuple[tuple[str, _Piece, bool | None], ...]


@dataclass(frozen=True, slots=True)
class StackSkeleton:
    """What ``compose_stack`` composes for one cluster, before it is given the cluster's name.

    A function of the stack mode, the plan and the observed state alone: which objects,
    their keys, values, manifests, ready flags and Usages, ``status.stack`` and the
    condition. ``stamp_stack`` gives it a cluster's names (the objects' names, their provider
    config, the collector's values), so clusters planned and observed alike share one
    (``converged_stack``).
    """

    # The provider-helm ClusterProviderConfig's ready flag, when a Release goes through it.
    helm_config: tuple[bool | None] | None
    checks: tuple[tuple[str, Requirement, bool | None], ...]
    parts: tuple[_Part, ...]
    # (of, by, ready flag) per Usage, in order, by the objects' keys.
    usages: tuple[tuple[str, str, bool | None], ...]
    status: StackStatus
    condition: Condition

    def resource_keys(self) -> tuple[str, ...]:
        """The resource keys of everything composed, in order."""
        return (
            *((HELM_PROVIDER_CONFIG_KEY,) if self.helm_config is not None else ()),
            *(key for key, _, _ in self.checks),
            *(key for part in self.parts for key, _, _ in part.objects),
            *(usage_key(of, by) for of, by, _ in self.usages),
        )


def _part(component: Component, plan: StackPlan, observed: Observed) -> _Part:
    pieces = _pieces(component, plan, observed)
    return _Part(
        component,
        tuple(
            (key, piece, True if _release_phase(observed.get(key))[0] == "Ready" else None)
            for key, piece in pieces
        ),
    )


def _pieces(
    component: Component, plan: StackPlan, observed: Observed
) -> tuple[tuple[str, _Piece], ...]:
    if component.chart is None:
        return tuple(
            (object_key(component, suffix), _Own(manifest))
            for suffix, manifest in configured_objects(component.name, plan.gateway_certificate)
        )
    key = release_key(component)
    if component.need.kind == "telemetry":
        telemetry = plan.telemetry
        seen = observed.get(key)
        if (telemetry is None or not telemetry.destinations) and seen is not None and seen.kept:
            # Destinations not fetched yet: the collector stays as it was applied.
            return ((key, _Kept(seen.kept)),)
        return ((key, _Collector(telemetry, plan.platform)),)
    if component.pool_affinity is not None:
        pools = plan.driver_pools.get(component.need.value, ())
        seen = observed.get(key)
        if not pools and seen is not None and seen.kept:
            # Pools not known yet, or none claims the driver any more: the Release stays as it
            # was applied, so its node plugin is never moved off nodes mid-flight.
            return ((key, _Kept(seen.kept)),)
        return ((key, _Charted(release_values(component, pools, platform=plan.platform))),)
    own = plan.cluster_values.get(component.name)
    values = release_values(
        component, extra_values=_nested(own) if own else None, platform=plan.platform
    )
    return ((key, _Charted(values)),)


def _merged(base: Json, extra: Json) -> Json:
    """``base`` with ``extra`` laid over it, nested mappings merged key by key."""
    out = dict(base)
    for key, value in extra.items():
        below = out.get(key)
        out[key] = (
            _merged(below, value) if isinstance(below, dict) and isinstance(value, dict) else value
        )
    return out


def _nested(flat: Mapping[str, object]) -> Json:
    """Dotted value paths as the nested mapping Helm reads."""
    tree: Json = {}
    for path, value in flat.items():
        set_path(tree, path, value)
    return tree


def _composed_before(component: Component, observed: Observed) -> bool:
    return any(key in observed for key in component_keys(component))


def compose_stack(
    cluster: str,
    mode: Components,
    plan: StackPlan,
    observed: Observed,
    kubernetes_config: Json,
) -> StackResult:
    """The stack's composed objects, ``status.stack`` and its condition for one cluster.

    ``kubernetes_config``: the cluster's provider-kubernetes ClusterProviderConfig, which
    the Usages keep and the helm one copies.
    """
    return stamp_stack(stack_skeleton(mode, plan, observed), cluster, kubernetes_config)


def stack_skeleton(mode: Components, plan: StackPlan, observed: Observed) -> StackSkeleton:
    """What ``compose_stack`` composes, before it is given a cluster's name."""
    components = _with_kept(plan, observed)
    phases: dict[str, tuple[ComponentPhase, str | None]] = {}
    parts: list[_Part] = []
    for component in components:
        if mode == "Provided" and component.installs:
            phases[component.name] = _provided_phase(component, observed)
            continue
        ready_needs = _unready_needs(component, phases, mode)
        if ready_needs and not _composed_before(component, observed):
            phases[component.name] = ("Waiting", "waits for " + ", ".join(ready_needs))
            continue
        part = _part(component, plan, observed)
        parts.append(part)
        phases[component.name] = _objects_phase(tuple(k for k, _, _ in part.objects), observed)
    items = tuple(
        StackComponent(
            name=c.name, version=c.release, phase=phases[c.name][0], message=phases[c.name][1]
        )
        for c in components
    )
    phase = _stack_phase(mode, items, plan)
    status = StackStatus(components=mode, phase=phase, items=items)
    releases = any(p.component.installs for p in parts)
    checks: list[tuple[str, Requirement, bool | None]] = []
    if mode == "Provided":
        for component in components:
            if component.installs:
                for requirement in component.requires:
                    key = requirement_key(requirement)
                    checks.append((key, requirement, _requirement_met(observed.get(key)) or None))
    return StackSkeleton(
        helm_config=(True if HELM_PROVIDER_CONFIG_KEY in observed else None,) if releases else None,
        checks=tuple(checks),
        parts=tuple(parts),
        usages=tuple(
            (of, by, True if usage_key(of, by) in observed else None) for of, by in _usages(parts)
        ),
        status=status,
        condition=_condition(mode, phase, items, plan),
    )


def stamp_stack(skeleton: StackSkeleton, cluster: str, kubernetes_config: Json) -> StackResult:
    """``skeleton`` given the names of ``cluster``, whose provider-kubernetes
    ClusterProviderConfig is ``kubernetes_config``: what ``compose_stack`` composes."""
    out: list[ComposedObject] = []
    if skeleton.helm_config is not None:
        helm_config = helm_provider_config(cluster, kubernetes_config)
        out.append(ComposedObject(HELM_PROVIDER_CONFIG_KEY, helm_config, skeleton.helm_config[0]))
    for key, requirement, met in skeleton.checks:
        out.append(ComposedObject(key, requirement_object(cluster, requirement), met))
    built: dict[str, Json] = {}
    for part in skeleton.parts:
        for key, piece, ready in part.objects:
            obj = built[key] = piece.stamped(cluster, part.component, key)
            out.append(ComposedObject(key, obj, ready))
    for of, by, ready in skeleton.usages:
        key, obj = usage(cluster, of, built[of], by, built[by])
        out.append(ComposedObject(key, obj, ready))
    return StackResult(tuple(out), skeleton.status, skeleton.condition)


def _with_kept(plan: StackPlan, observed: Observed) -> tuple[Component, ...]:
    """The planned components, plus any composed before that the plan no longer names."""
    planned = plan.names()
    kept = {
        c.name
        for c in COMPONENTS_BY_NAME.values()
        if c.name not in planned
        and _composed_before(c, observed)
        # No replica runs on the collector: once no fetched destination selects the
        # cluster it goes (while destinations are not fetched, it is kept).
        and not (c.need.kind == "telemetry" and plan.telemetry is not None)
    }
    if not kept:
        return plan.components
    # Table order is install order: keep it for the union.
    wanted = planned | kept
    return tuple(c for c in COMPONENTS_BY_NAME.values() if c.name in wanted)


def _unready_needs(
    component: Component, phases: Mapping[str, tuple[ComponentPhase, str | None]], mode: Components
) -> list[str]:
    """The components ``component`` needs that are not Ready (or Provided) yet."""
    out: list[str] = []
    for name in component.needs:
        phase = phases.get(name)
        if phase is None:
            continue  # not on this cluster: another implementation stands in for it
        if phase[0] not in ("Ready", "Provided"):
            out.append(f"{name} ({phase[0]})")
    return out


def _usages(parts: list[_Part]) -> list[tuple[str, str]]:
    """The Usages ordering the teardown, as (of, by) keys (docs/stack.md, "Teardown in order").

    A component's main object is its last (its Release, or the Gateway, the Job, the leaf
    Queue after what they need). Each component's main object is used by the main object of
    every component needing it, and within our own objects each is used by the next, so the
    Gateway goes before its class and namespace and the leaf queue before its root (KAI's
    webhook refuses to delete a parent queue with children).

    The provider configs need none: a provider keeps its provider config, with its
    ``in-use.crossplane.io`` finalizer, until no managed resource uses it
    (crossplane-runtime v2.0.0-rc.1 and v2.3.3, the releases provider-kubernetes v1.2.1 and
    provider-helm v1.4.0 build on, pkg/reconciler/providerconfig/reconciler.go).
    A Usage is ready once created: it guards, it does not serve.
    """
    main = {p.component.name: p.objects[-1][0] for p in parts}
    out: list[tuple[str, str]] = []
    for part in parts:
        keys = [key for key, _, _ in part.objects]
        out.extend(zip(keys, keys[1:], strict=False))
        for name in part.component.needs:
            if name in main:
                out.append((main[name], keys[-1]))
    return out


def _stack_phase(
    mode: Components, items: tuple[StackComponent, ...], plan: StackPlan
) -> StackPhase:
    if mode == "Provided":
        if plan.drivers_known and all(i.phase in ("Provided", "Ready") for i in items):
            return "RequirementsMet"
        return "RequirementsNotMet"
    if any(i.phase == "Failed" for i in items):
        return "Failed"
    if plan.drivers_known and all(i.phase in ("Ready", "Provided") for i in items):
        return "Ready"
    return "Installing"


def _condition(
    mode: Components, phase: StackPhase, items: tuple[StackComponent, ...], plan: StackPlan
) -> Condition:
    pending = [i for i in items if i.phase not in ("Ready", "Provided")]
    parts = [_item_text(i) for i in pending]
    if not plan.drivers_known:
        parts.append("the device drivers wait for the cluster's InferenceClasses")
    if plan.unsupported_drivers:
        parts.append(
            "no component installs DRA driver "
            + ", ".join(plan.unsupported_drivers)
            + ": the platform provides it"
        )
    message = "; ".join(parts)[:MAX_MESSAGE]
    if mode == "Provided":
        if phase == "RequirementsMet":
            return condition(REQUIREMENTS_MET, True, "RequirementsMet", message)
        reason = "RequirementsNotMet" if any(i.phase == "Missing" for i in items) else "Verifying"
        return condition(REQUIREMENTS_MET, False, reason, message)
    if phase == "Ready":
        return condition(STACK_READY, True, "Installed", message)
    return condition(STACK_READY, False, phase, message)


def _item_text(item: StackComponent) -> str:
    text = f"{item.name} {item.version} {item.phase}"
    return f"{text} ({item.message})" if item.message else text
