"""Render and the functions place alike on random fleets.

Render computes every cluster's occupancy from the replicas it is given. On Crossplane the
InferenceCluster function publishes it from the ModelReplicas labelled for the cluster,
and the ModelDeployment function then reads only the clusters and its own replicas. Both
must give the same replicas, endpoints and conditions: over gRPC, with the requirements
answered as Crossplane answers them (``satisfy``).
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scheduling.test_properties import World, feed_back, with_replicas, worlds

from modelplane.api import ModelReplica
from modelplane.naming import replica_key
from modelplane.reconcile.deployment import DeploymentInputs, reconcile_deployment
from modelplane.runtime.wire import composed
from modelplane.scheduling import CACHE_NONE, identity, schedule

from .conftest import NOW, Stubs
from .helpers import conditions, desired, published_by_function, request, satisfy

READY = {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}


def _ours(w: World, size: int, rnd: random.Random) -> list[ModelReplica]:
    """Our deployment's replicas as an earlier reconcile left them (some Ready)."""
    earlier = with_replicas(w.deployment, size)
    placed = feed_back(earlier, schedule(earlier, w.fleet, [], CACHE_NONE, w.others))
    out = []
    for r in placed:
        wire = r.to_wire()
        if rnd.random() < 0.5:
            wire["status"] = READY
        out.append(ModelReplica.model_validate(wire))
    return out


def _over_grpc(
    stubs: Stubs, w: World, ours: list[ModelReplica], listed: bool
) -> tuple[dict[str, Any], list[tuple[str, str, str, str]]]:
    # The fleet as Crossplane stores it: every replica, ours only once a cluster counted it.
    world: list[dict[str, Any]] = [r.to_wire() for r in [*w.others, *(ours if listed else [])]]
    clusters = [published_by_function(stubs.v1.RunFunction, c.to_wire(), world) for c in w.fleet]
    world.extend(clusters)
    xr = w.deployment.to_wire()
    observed = {replica_key(*identity(r)): r.to_wire() for r in ours}
    first = stubs.v1.RunFunction(request(xr, observed=observed))
    fetched = satisfy(first, world)
    # The deployment function asks for no ModelReplica: none reaches it but its own.
    assert all(o["kind"] != "ModelReplica" for items in fetched.values() for o in items)
    rsp = stubs.v1.RunFunction(request(xr, observed=observed, required=fetched))
    return desired(rsp), conditions(rsp)


def _rendered(
    w: World, ours: list[ModelReplica]
) -> tuple[dict[str, Any], list[tuple[str, str, str, str]]]:
    result = reconcile_deployment(
        DeploymentInputs(w.deployment, w.fleet, [], CACHE_NONE, [*w.others, *ours], now=NOW)
    )
    desired_objects = [
        *map(composed, result.replicas),
        *map(composed, result.usages),
        *map(composed, result.endpoints),
    ]
    objects = {o.key: o.object for o in desired_objects}
    return objects, [(c.type, c.status, c.reason, c.message) for c in result.status.conditions]


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(worlds(), st.integers(0, 6), st.booleans(), st.randoms(use_true_random=False))
def test_render_and_the_functions_place_alike(
    stubs: Stubs, w: World, size: int, listed: bool, rnd: random.Random
) -> None:
    # ``listed`` False: our replicas were created after each cluster last published, so the
    # deployment function charges them on top of the occupancy; the others' namespace sorts
    # first, so that is the order render charges them in too.
    ours = _ours(w, size, rnd)
    assert _over_grpc(stubs, w, ours, listed) == _rendered(w, ours)
