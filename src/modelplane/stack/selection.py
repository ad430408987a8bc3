"""Which components of the stack table one cluster needs (docs/stack.md, "What a cluster gets")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from modelplane.api.inferencecluster import GatewayImplementation, GpuPool, Stack
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
    # The cloud this project provisioned the cluster on (its Releases take that cloud's
    # values, ``Component.platform_values``); None: a cluster someone else brought.
    platform: str | None = None

    def names(self) -> frozenset[str]:
        """The names of the components planned."""
        return frozenset(c.name for c in self.components)


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
    platform: str | None = None,
) -> StackPlan:
    """The components a cluster of this stack, pools and gateway implementation needs.

    ``gateway``: the implementation its routes are composed for; the stack installs only
    the one it knows how to run (``INSTALLED_GATEWAY``), another one is the platform's.
    ``platform``: the cloud this project provisioned the cluster on, if it did.
    """
    by_driver = pools_by_driver(pools) if pools is not None else MappingProxyType({})
    drivers = frozenset(by_driver)
    chosen = tuple(c for c in COMPONENTS if _needed(c, stack, drivers, gateway))
    unsupported = tuple(sorted(drivers - DRIVERS.keys()))
    return StackPlan(chosen, pools is not None, unsupported, by_driver, platform)


def _needed(
    component: Component,
    stack: Stack,
    drivers: frozenset[str],
    gateway: GatewayImplementation | None,
) -> bool:
    need = component.need
    if need.kind == "always":
        return True
    if need.kind == "stack":
        return need.value == stack
    if need.kind == "driver":
        return need.value in drivers
    return need.value == gateway
