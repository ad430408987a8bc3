"""Which components of the stack table one cluster needs (docs/stack.md, "What a cluster gets")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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

    def names(self) -> frozenset[str]:
        """The names of the components planned."""
        return frozenset(c.name for c in self.components)


def claimed_drivers(pools: Iterable[GpuPool]) -> frozenset[str]:
    """The DRA drivers the pools' devices are claimed through (Synthetic devices need none)."""
    return frozenset(
        device.driver for pool in pools for device in pool.devices or () if device.claim == "DRA"
    )


def plan_stack(
    stack: Stack,
    pools: Sequence[GpuPool] | None,
    gateway: GatewayImplementation | None,
) -> StackPlan:
    """The components a cluster of this stack, pools and gateway implementation needs.

    ``gateway``: the implementation its routes are composed for; the stack installs only
    the one it knows how to run (``INSTALLED_GATEWAY``), another one is the platform's.
    """
    drivers = claimed_drivers(pools) if pools is not None else frozenset()
    chosen = tuple(c for c in COMPONENTS if _needed(c, stack, drivers, gateway))
    unsupported = tuple(sorted(drivers - DRIVERS.keys()))
    return StackPlan(chosen, pools is not None, unsupported)


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
