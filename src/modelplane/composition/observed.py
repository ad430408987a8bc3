"""What the core reads of an observed composed resource: a small typed view.

Crossplane hands a function its observed composed resources as wire dicts. The shell
(``runtime/wire.observed_object``) reads each into an ``ObservedObject`` once, so the
core never reads a wire dict by key: it reads these fields, and conditions through
``api.meta.get_condition`` like every typed status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from modelplane.api.meta import Condition
from modelplane.composition.types import Json


@dataclass(frozen=True)
class RouteParent:
    """One ``status.parents`` entry of an observed HTTPRoute: the Gateway it names, its conditions."""

    gateway: str | None
    conditions: tuple[Condition, ...] = ()


@dataclass(frozen=True)
class ObservedObject:
    """The fields the reconciles read of one observed object; absent fields read empty.

    A provider-kubernetes Object reports the remote object it manages in
    ``status.atProvider.manifest``: ``remote`` is the same view of that object.
    """

    name: str | None = None  # metadata.name
    uid: str | None = None  # metadata.uid (what an owner reference must name)
    conditions: tuple[Condition, ...] = ()  # status.conditions
    readiness_policy: str | None = None  # spec.readiness.policy (an Object)
    reported: bool = False  # status.atProvider.manifest is non-empty: the provider has seen it
    remote: ObservedObject | None = None  # status.atProvider.manifest (an Object)
    gateway_class_name: str | None = None  # spec.gatewayClassName (a Gateway), non-empty
    controller_name: str | None = None  # spec.controllerName (a GatewayClass), non-empty
    addresses: tuple[str, ...] = ()  # status.addresses[].value (a Gateway), non-empty ones
    parents: tuple[RouteParent, ...] = ()  # status.parents (an HTTPRoute)
    active: bool = False  # status.active (a Job) is non-zero
    phase: str | None = None  # status.phase (a PersistentVolumeClaim)
    email: str | None = None  # status.atProvider.email (a GCP ServiceAccount), non-empty
    project: str | None = None  # status.atProvider.project (a GCP managed resource), non-empty
    # The object as an apply intent (apiVersion, kind, identity, spec): what a reconcile
    # re-emits when it keeps an object it cannot recompose.
    kept: Json = field(default_factory=dict, compare=False, repr=False)


NOTHING_OBSERVED = ObservedObject()
"""The view of an object not observed (or not the one asked for): every field empty."""

Observed = Mapping[str, ObservedObject]
"""Observed composed resources by resource key."""
