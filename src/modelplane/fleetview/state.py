"""What runs on the fleet once a reconcile has run, and the fleet it settles to.

The reconcile is ``reconcile_fleet``, the one ``render`` and ``schedule`` run: the replicas
it leaves running are the ones it emits (the desired set and any superseded replica still
covering for one), beside every input replica that no input deployment owns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from modelplane.api import ModelReplica
from modelplane.api.meta import condition, is_ready
from modelplane.api.modelreplica import ModelReplicaStatus
from modelplane.naming import DEPLOYMENT_LABEL
from modelplane.reconcile.deployment import DeploymentResult, Fleet, reconcile_fleet
from modelplane.scheduling.fleet import ClusterView, fleet
from modelplane.scheduling.model import namespace_of
from modelplane.scheduling.replicas import sort_key


@dataclass(frozen=True, slots=True)
class Running:
    """One replica holding devices: the deployment it belongs to and whether it is Ready."""

    replica: ModelReplica
    deployment: str  # namespace/name from its labels; "" when it carries no deployment label
    ready: bool

    @property
    def name(self) -> str:
        """``namespace/name`` of the replica."""
        meta = self.replica.metadata
        return f"{namespace_of(meta.namespace)}/{meta.name or ''}"

    @property
    def cluster(self) -> str:
        """The cluster it is pinned to."""
        return self.replica.spec.cluster_name


@dataclass(frozen=True, slots=True)
class FleetState:
    """The fleet after one reconcile: cluster views, running replicas, each deployment's result."""

    fleet: Fleet
    views: tuple[ClusterView, ...]
    running: tuple[Running, ...]
    results: tuple[DeploymentResult, ...]


def owner_of(replica: ModelReplica) -> str:
    """``namespace/name`` of the deployment a replica's labels name ("" without the label)."""
    name = (replica.metadata.labels or {}).get(DEPLOYMENT_LABEL)
    return f"{namespace_of(replica.metadata.namespace)}/{name}" if name else ""


def reconciled(inputs: Fleet) -> FleetState:
    """Reconcile ``inputs`` once and collect what runs afterwards, sorted by replica."""
    results = tuple(reconcile_fleet(inputs))
    reconciled_owners = {
        f"{namespace_of(r.deployment.metadata.namespace)}/{r.deployment.metadata.name}"
        for r in results
    }
    running = [
        Running(r, owner, is_ready(r.status))
        for r in inputs.replicas
        if (owner := owner_of(r)) not in reconciled_owners or not owner
    ]
    for result in results:
        for desired in result.replicas:
            running.append(Running(desired.object, owner_of(desired.object), desired.ready is True))
    running.sort(key=lambda r: sort_key(r.replica))
    views = fleet(inputs.clusters, inputs.classes)
    return FleetState(inputs, views, tuple(running), results)


_READY = ModelReplicaStatus(conditions=(condition("Ready", True, "Available"),))


def settled_replicas(state: FleetState) -> tuple[ModelReplica, ...]:
    """The replicas once every move of this reconcile is done, each running and Ready.

    A superseded replica with a replacement is gone (its replacement is Ready), so is one
    retiring; one that found no replacement keeps covering, as the next reconcile keeps it.
    Every input replica no input deployment owns stays as it is.
    """
    leaving: set[str] = set()
    for result in state.results:
        namespace = namespace_of(result.deployment.metadata.namespace)
        for move in result.schedule.superseded:
            if move.retiring or move.replacement:
                leaving.add(f"{namespace}/{move.placement.name}")
    reconciled_owners = {
        f"{namespace_of(r.deployment.metadata.namespace)}/{r.deployment.metadata.name}"
        for r in state.results
    }
    out: list[ModelReplica] = []
    for item in state.running:
        if item.name in leaving:
            continue
        if item.deployment in reconciled_owners:
            out.append(item.replica.model_copy(update={"status": _READY}))
        else:
            out.append(item.replica)
    return tuple(out)


def settle(inputs: Fleet, state: FleetState) -> Fleet:
    """``inputs`` observing the settled replicas of ``state`` in place of its own."""
    return replace(inputs, replicas=settled_replicas(state))


def converge(inputs: Fleet, limit: int) -> tuple[FleetState, ...]:
    """Reconcile, settle and reconcile again until a round changes nothing (at most ``limit``).

    Each round is one reconcile of the previous round's settled replicas: exactly what
    ``render`` prints for them. A round changes nothing when it places no new replica and
    moves none (every superseded replica left found no replacement and keeps covering).
    """
    rounds: list[FleetState] = []
    current = inputs
    for _ in range(limit):
        state = reconciled(current)
        rounds.append(state)
        if _quiet(state):
            break
        current = settle(current, state)
    return tuple(rounds)


def _quiet(state: FleetState) -> bool:
    for result in state.results:
        schedule = result.schedule
        if any(not p.retained or p.revised for p in schedule.replicas):
            return False
        if any(s.retiring or s.replacement for s in schedule.superseded):
            return False
        if any(d.ready is not True for d in result.replicas):
            return False
    return True
