"""Drain before delete: a withdrawn endpoint's backend outlives every route that names it.

The control plane is driven as Crossplane drives it, with a clock: the deployment reconciles
every tick, the ModelService only when its answer's TTL expires (it reads the ModelEndpoints
as required resources, which are not watched), and the gateway serves each route for a
while after it is replaced (propagation). The service composes the route and the backends
it names together, on the gateway's cluster, keeping a draining endpoint's backend while the
endpoint exists. After every tick, every AIServiceBackend a served AIGatewayRoute names, and
the Backend behind it, must exist: a request routed there would otherwise get an error.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from modelplane.naming import backend_service_name, dns_name
from modelplane.runtime.crossplane.freshness import ttl_for
from modelplane.scheduling.rollout import DRAIN_PERIOD
from tests.reconcile.feedback import World
from tests.reconcile.fleet import cluster, deployment

T0 = datetime(2026, 1, 15, 9, 0, 0, tzinfo=UTC)
TICK = timedelta(seconds=10)
# What the gateway may still serve after a route changes: Envoy AI Gateway's controller
# rewrites the HTTPRoute it generates from the watched AIGatewayRoute and Envoy Gateway
# pushes xDS, within seconds; a tick is a generous bound.
PROPAGATION = TICK
SERVICE: dict[str, Any] = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelService",
    "metadata": {"name": "qwen3-8b", "namespace": "ml-team"},
    "spec": {
        "endpoints": [{"selector": {"matchLabels": {"modelplane.ai/deployment": "qwen3-8b"}}}]
    },
}
NO_EXECUTE = [{"key": "maintenance", "value": "kernel", "effect": "NoExecute"}]


# Failover tiers: the replica on c1 takes the traffic, the others only as it fails.
TIERED: dict[str, Any] = {
    **SERVICE,
    "spec": {
        "endpoints": [
            {
                "name": "primary",
                "selector": {
                    "matchLabels": {
                        "modelplane.ai/deployment": "qwen3-8b",
                        "modelplane.ai/cluster": "c1",
                    }
                },
            },
            {
                "name": "backup",
                "priority": 1,
                "selector": {"matchLabels": {"modelplane.ai/deployment": "qwen3-8b"}},
            },
        ]
    },
}


class Plane:
    """A World whose ModelService route is re-composed only when its TTL expires."""

    def __init__(
        self, world: World, route_ttl: timedelta, service: dict[str, Any] | None = None
    ) -> None:
        self.world = world
        self.route_ttl = route_ttl
        self.service = service or SERVICE
        self.composed_at = self._now()
        self.backends: set[str] = set()
        route = self._compose()
        # (applied at, backends) of every route the gateway may still be serving
        self.served: list[tuple[datetime, list[str]]] = [(self.composed_at, route)]

    def _now(self) -> datetime:
        assert self.world.now is not None
        return self.world.now

    def _compose(self) -> list[str]:
        """The service's answer: its route's backends; the backends it composes now exist,
        those it no longer composes are deleted."""
        routes = self.world.compose_routes([self.service])
        self.backends = self.world.compose_backends([self.service])
        return next(iter(routes.values()), [])

    def tiers(self) -> dict[int, list[str]]:
        """The backends of the route a reconcile would compose now, by priority."""
        out: dict[int, list[str]] = {}
        for refs in self.world.compose_route_refs([self.service]).values():
            for ref in refs:
                out.setdefault(ref["priority"], []).append(ref["name"])
        return out

    def route(self) -> list[str]:
        """The backends of the route applied last."""
        return self.served[-1][1]

    def tick(self, load: bool | list[str] = False) -> None:
        """One tick: the deployment reconciles; the route too when its TTL is up."""
        self.world.now = self._now() + TICK
        self.world.step(load)
        self.check()
        if self._now() - self.composed_at >= self.route_ttl:
            self.composed_at = self._now()
            self.served.append((self._now(), self._compose()))
        # A route replaced more than PROPAGATION ago is no longer served anywhere.
        self.served = [
            (at, refs)
            for i, (at, refs) in enumerate(self.served)
            if i == len(self.served) - 1 or self.served[i + 1][0] + PROPAGATION > self._now()
        ]
        self.check()

    def check(self) -> None:
        """Every backend a served route names exists (AIServiceBackend and Backend)."""
        backends = self.backends
        for _, refs in self.served:
            missing = sorted(set(refs) - backends)
            assert not missing, f"at {self._now()}: a served route names deleted {missing}"


def plane(replicas: int, clusters: list[dict[str, Any]], offset: int) -> Plane:
    """A settled fleet whose route was composed ``offset`` ticks ago."""
    world = World([deployment(replicas)], clusters, T0)
    world.settle()
    out = Plane(world, ttl_for("ModelService"))
    for _ in range(offset):
        out.tick()
    assert len(out.route()) == replicas
    return out


def three() -> list[dict[str, Any]]:
    return [
        cluster("c1"),
        cluster("c2", gateway="203.0.113.20"),
        cluster("c3", gateway="203.0.113.30"),
    ]


def backend_of(world: World, replica: str) -> str:
    """The AIServiceBackend (and Backend) name the service composes for ``replica``'s endpoint."""
    name = dns_name(SERVICE["metadata"]["name"], backend_service_name(replica))
    assert name in world.compose_backends([SERVICE])
    return name


def drain_until_gone(p: Plane, name: str) -> int:
    """Tick until ``name`` is gone; the number of ticks it took (bounded)."""
    limit = (DRAIN_PERIOD + ttl_for("ModelDeployment")) // TICK
    for n in range(1, limit + 1):
        p.tick()
        if name not in p.world.names():
            return n
    raise AssertionError(f"{name} still exists after {limit} ticks")


OFFSETS = [0, 2, 5]  # where in the route's TTL the withdrawal falls


@pytest.mark.parametrize("offset", OFFSETS)
def test_a_scale_down_keeps_the_backend_until_no_served_route_names_it(offset: int) -> None:
    p = plane(3, three(), offset)
    before = set(p.world.names())
    p.world.deployments = [deployment(2)]
    p.tick()
    (leaving,) = p.world.draining()
    assert leaving in p.world.names() and leaving not in p.world.routed()
    assert p.world.last[0].result.reads_clock  # the drain ends with time: never memoised
    backend = backend_of(p.world, leaving)  # its backend stays while it drains
    ticks = drain_until_gone(p, leaving)
    assert ticks * TICK >= DRAIN_PERIOD
    # The service's next answer drops the backend of the endpoint now gone.
    for _ in range(ttl_for("ModelService") // TICK):
        p.tick()
    assert backend not in p.backends and backend not in p.route()
    assert set(p.world.names()) == before - {leaving} and p.world.draining() == []


@pytest.mark.parametrize("offset", OFFSETS)
def test_a_move_retires_the_old_replica_only_after_routes_dropped_it(offset: int) -> None:
    p = plane(2, three(), offset)
    on_c1 = [n for n, c in p.world.clusters_of().items() if c == "c1"]
    p.world.clusters[0]["spec"]["taints"] = NO_EXECUTE
    p.tick()  # the replacement is placed, the old replica keeps serving
    (new,) = set(p.world.names()) - set(p.world.routed())
    p.tick(load=[new])  # Ready: routed from the next reconcile on, the old one withdrawn
    p.tick()
    assert new in p.world.routed()  # the replacement is not held back by the drain
    assert p.world.draining() == on_c1
    ticks = drain_until_gone(p, on_c1[0])
    assert ticks * TICK >= DRAIN_PERIOD - 2 * TICK
    assert "c1" not in p.world.clusters_of().values()


@pytest.mark.parametrize("offset", OFFSETS)
def test_withdrawing_a_whole_tier_drains_before_its_backend_goes(offset: int) -> None:
    """The primary tier's only replica moves off its cluster: the tier empties, the backup
    tier takes every request, and no served route names the primary's deleted backend."""
    world = World([deployment(3)], three(), T0)
    world.settle()
    p = Plane(world, ttl_for("ModelService"), TIERED)
    for _ in range(offset):
        p.tick()
    (primary,) = [n for n, c in world.clusters_of().items() if c == "c1"]
    old_backend = backend_of(world, primary)
    assert p.tiers()[0] == [old_backend] and len(p.tiers()[1]) == 2
    world.clusters[0]["spec"]["taints"] = NO_EXECUTE
    p.tick()  # the replacement is placed off c1, the primary keeps serving
    (new,) = set(world.names()) - set(world.routed())
    p.tick(load=[new])  # Ready: the primary is withdrawn
    p.tick()
    assert world.draining() == [primary]
    assert 0 not in p.tiers()  # the tier is withdrawn from the next route on
    assert old_backend in p.backends  # while routes that still name it are served
    drain_until_gone(p, primary)
    # The service's next answer drops the backend of the endpoint now gone.
    for _ in range(ttl_for("ModelService") // TICK):
        p.tick()
    assert old_backend not in p.backends and old_backend not in p.route()
    assert list(p.tiers()) == [1] and len(p.tiers()[1]) == 3


def test_scaling_to_zero_drains_like_a_scale_down() -> None:
    p = plane(1, three(), 0)
    (only,) = p.world.names()
    p.world.deployments = [deployment(0)]
    p.tick()
    assert p.world.draining() == [only] and p.world.routed() == []
    drain_until_gone(p, only)
    assert p.world.names() == []


def test_the_check_catches_a_route_that_outlives_the_drain() -> None:
    """A route re-read less often than the drain period would name a deleted backend."""
    world = World([deployment(3)], three(), T0)
    world.settle()
    p = Plane(world, DRAIN_PERIOD + ttl_for("ModelService"))
    p.world.deployments = [deployment(2)]
    with pytest.raises(AssertionError, match="names deleted"):
        for _ in range(2 * (DRAIN_PERIOD + ttl_for("ModelService")) // TICK):
            p.tick()


def test_the_drain_period_covers_a_route_reread_and_its_propagation() -> None:
    assert ttl_for("ModelService") + PROPAGATION <= DRAIN_PERIOD


def test_without_a_clock_the_next_reconcile_removes_a_drained_backend() -> None:
    """``render`` fed back: the withdrawal and the route without it come in one run, the
    backend and the replica go in the next."""
    world = World([deployment(3)], three())
    world.settle()
    world.deployments = [deployment(2)]
    world.step()
    (leaving,) = world.draining()
    (route,) = world.compose_routes([SERVICE]).values()
    assert backend_of(world, leaving) not in route and len(route) == 2
    world.step()
    assert leaving not in world.names() and world.draining() == []
