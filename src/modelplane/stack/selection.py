"""Which components of the stack table one cluster needs (docs/stack.md, "What a cluster gets")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from modelplane.api.inferencecluster import GatewayImplementation, GpuPool, Stack
from modelplane.api.metricmapping import MetricMapping
from modelplane.api.telemetrydestination import TelemetryDestination
from modelplane.stack.components import COMPONENTS, DRIVERS
from modelplane.stack.model import Component

# The gateway implementation a Managed stack installs when the cluster names none.
INSTALLED_GATEWAY: GatewayImplementation = "EnvoyGateway"


@dataclass(frozen=True, slots=True)
class StackPlan:
    """The components one cluster needs, in install order, and what the table cannot supply.

    ``drivers_known`` False: the cluster's pools are not known yet (its classes are not all
    fetched), so no driver is chosen; components already installed are kept meanwhile.
    ``unsupported_drivers``: DRA drivers its pools claim that no component installs.
    """

    components: tuple[Component, ...]
    drivers_known: bool
    unsupported_drivers: tuple[str, ...] = ()
    # Driver -> the pools claiming its devices, sorted: where its node plugin runs.
    driver_pools: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    # What the collector sends and renames: None while the destinations are not fetched
    # (a collector composed before is kept as applied meanwhile).
    telemetry: Telemetry | None = None
    # The cloud this project provisioned the cluster on (its Releases take that cloud's
    # values, ``Component.platform_values``); None: a cluster someone else brought.
    platform: str | None = None
    # Values only this cluster knows, by component name (an autoscaler's cluster name).
    cluster_values: Mapping[str, Mapping[str, object]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    # The Secret the installed Gateway serves HTTPS with (spec.gateway.tls); None: plain HTTP.
    gateway_certificate: str | None = None

    def names(self) -> frozenset[str]:
        """The names of the components planned."""
        return frozenset(c.name for c in self.components)


@dataclass(frozen=True, slots=True)
class Telemetry:
    """The TelemetryDestinations selecting one cluster and every MetricMapping."""

    destinations: tuple[TelemetryDestination, ...]
    mappings: tuple[MetricMapping, ...] = ()


def selects(destination: TelemetryDestination, labels: Mapping[str, str]) -> bool:
    """Whether the destination's clusterSelector (absent: every cluster) matches ``labels``."""
    selector = destination.spec.cluster_selector
    wanted = (selector.match_labels if selector is not None else None) or {}
    return all(labels.get(k) == v for k, v in wanted.items())


def telemetry_for(
    labels: Mapping[str, str],
    destinations: Sequence[TelemetryDestination] | None,
    mappings: Sequence[MetricMapping] | None,
) -> Telemetry | None:
    """What a cluster with ``labels`` sends: None while either list is not fetched."""
    if destinations is None or mappings is None:
        return None
    chosen = tuple(d for d in destinations if selects(d, labels))
    return Telemetry(chosen, tuple(mappings))


def pools_by_driver(pools: Iterable[GpuPool]) -> Mapping[str, tuple[str, ...]]:
    """Each DRA driver the pools' devices are claimed through (Synthetic devices need none),
    with the pools claiming it, sorted."""
    found: dict[str, set[str]] = {}
    for pool in pools:
        for device in pool.devices or ():
            if device.claim == "DRA":
                found.setdefault(device.driver, set()).add(pool.name)
    return MappingProxyType({d: tuple(sorted(names)) for d, names in sorted(found.items())})


def plan_stack(
    stack: Stack,
    pools: Sequence[GpuPool] | None,
    gateway: GatewayImplementation | None,
    telemetry: Telemetry | None = None,
    platform: str | None = None,
    cluster_values: Mapping[str, Mapping[str, object]] | None = None,
) -> StackPlan:
    """The components a cluster of this stack, pools and gateway implementation needs.

    ``gateway``: the implementation its routes are composed for; the stack installs only
    the one it knows how to run (``INSTALLED_GATEWAY``), another one is the platform's.
    ``telemetry``: the destinations selecting the cluster; the collector is planned when
    there is one.
    ``platform``: the cloud this project provisioned the cluster on, if it did.
    ``cluster_values``: values only this cluster knows, by component (its cloud name, region).
    """
    by_driver = pools_by_driver(pools) if pools is not None else MappingProxyType({})
    drivers = frozenset(by_driver)
    sends = telemetry is not None and bool(telemetry.destinations)
    chosen = tuple(c for c in COMPONENTS if _needed(c, stack, drivers, gateway, sends, platform))
    unsupported = tuple(sorted(drivers - DRIVERS.keys()))
    values = MappingProxyType(
        {name: MappingProxyType(dict(v)) for name, v in (cluster_values or {}).items()}
    )
    return StackPlan(chosen, pools is not None, unsupported, by_driver, telemetry, platform, values)


def _needed(
    component: Component,
    stack: Stack,
    drivers: frozenset[str],
    gateway: GatewayImplementation | None,
    sends: bool,
    platform: str | None,
) -> bool:
    need = component.need
    if need.kind == "telemetry":
        return sends
    if need.kind == "platform":
        return need.value == platform
    if need.kind == "always":
        return True
    if need.kind == "stack":
        return need.value == stack
    if need.kind == "driver":
        return need.value in drivers
    return need.value == gateway
