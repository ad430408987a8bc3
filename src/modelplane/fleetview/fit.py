"""Headroom for one deployment: how many more replicas fit, and where, packed as the
scheduler packs them (``scheduling.schedule`` asked for more replicas than can fit)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from modelplane.api import ModelDeployment
from modelplane.fleetview.capacity import capacity
from modelplane.fleetview.state import FleetState, settled_replicas
from modelplane.scheduling import cache_state, schedule
from modelplane.scheduling.model import ExplainEntry, namespace_of
from modelplane.scheduling.scheduler import owned

FIT_LIMIT = 10_000
"""The most replicas a fit places: past it, the answer is "at least" this many."""


@dataclass(frozen=True, slots=True)
class Fit:
    """How many more replicas of a deployment fit on a settled fleet, and where."""

    deployment: str
    running: int  # replicas of it the fleet runs already
    more: int
    where: tuple[tuple[str, tuple[str, ...], int], ...]  # (cluster, pools, replicas)
    at_limit: bool  # FIT_LIMIT was reached: at least ``more`` fit
    explain: tuple[ExplainEntry, ...]  # why each cluster that took none took none


def fit(state: FleetState, deployment: ModelDeployment) -> Fit:
    """Schedule ``deployment`` against ``state`` settled, asking for as many more replicas
    as there are free devices (each replica claims at least one), up to FIT_LIMIT."""
    observed = settled_replicas(state)
    running = len(owned(deployment, observed))
    free = sum(d.free for d in capacity(state).devices)
    bound = min(free, FIT_LIMIT)
    asked = deployment.model_copy(
        update={"spec": deployment.spec.model_copy(update={"replicas": running + bound})}
    )
    inputs = state.fleet
    result = schedule(
        asked, inputs.clusters, inputs.classes, cache_state(asked, inputs.caches), observed
    )
    new = [p for p in result.replicas if not p.retained]
    where = Counter(
        (p.cluster, tuple(sorted({m.pool for e in p.engines for m in e.members if m.pool})))
        for p in new
    )
    meta = deployment.metadata
    return Fit(
        deployment=f"{namespace_of(meta.namespace)}/{meta.name}",
        running=running,
        more=len(new),
        where=tuple((c, pools, n) for (c, pools), n in sorted(where.items())),
        at_limit=bound == FIT_LIMIT and len(new) == bound,
        explain=result.explain,
    )
