"""What a change would do: the settled fleet before, the rounds of reconciles after, the diff.

Before: the input reconciled until it settles (``state.converge``): what `fleet` shows
once every replica it places is running and Ready. After: the changes applied to that
settled fleet, reconciled round by round until a round changes nothing. Every round is
one ``reconcile_fleet`` of the previous round's settled replicas, the reconcile `render`
runs, so a round's placements are what `render` prints for the same inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from modelplane.fleetview.capacity import FleetCapacity, capacity
from modelplane.fleetview.changes import Changes, apply
from modelplane.fleetview.state import FleetState, Running, converge, settled_replicas
from modelplane.reconcile.deployment import Fleet
from modelplane.scheduling.explain import move_message
from modelplane.scheduling.model import ExplainEntry, MoveCause, namespace_of

MAX_ROUNDS = 100
"""Reconciles a plan runs before it stops waiting for the fleet to settle."""


@dataclass(frozen=True, slots=True)
class Placed:
    """A replica that runs after the change and did not before."""

    deployment: str
    replica: str  # namespace/name
    cluster: str
    pools: tuple[str, ...]
    round: int  # the reconcile (1-based) that places it


@dataclass(frozen=True, slots=True)
class Move:
    """A running replica replaced make-before-break: it serves until its replacement is Ready."""

    deployment: str
    replica: str  # namespace/name
    cluster: str
    cause: str
    message: str  # as ``schedule --explain`` words it
    replacement: str  # namespace/name; "" when nothing could be placed: it keeps serving
    replacement_cluster: str
    replacement_pools: tuple[str, ...]
    round: int


@dataclass(frozen=True, slots=True)
class Removed:
    """A replica that ran before and does not after, and was not moved."""

    deployment: str
    replica: str
    cluster: str
    why: str


@dataclass(frozen=True, slots=True)
class Unplaced:
    """A deployment short of its replicas after the change, and why each cluster took none."""

    deployment: str
    placed: int
    desired: int
    explain: tuple[ExplainEntry, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    """The plan of a change: both fleets, what moves, lands, goes and does not fit."""

    before: FleetState
    after: FleetState
    rounds: tuple[FleetState, ...]  # after the change, in order
    settled: bool  # the last round changed nothing
    placed: tuple[Placed, ...]
    moves: tuple[Move, ...]
    removed: tuple[Removed, ...]
    unplaced: tuple[Unplaced, ...]

    @property
    def before_capacity(self) -> FleetCapacity:
        """The fleet's capacity before the change."""
        return capacity(self.before)

    @property
    def after_capacity(self) -> FleetCapacity:
        """The fleet's capacity once the change has settled (the headroom after)."""
        return capacity(self.after)


def settled(inputs: Fleet) -> FleetState:
    """The input reconciled until it settles (its last round)."""
    return converge(inputs, MAX_ROUNDS)[-1]


def changed_inputs(inputs: Fleet, before: FleetState, changes: Changes) -> Fleet:
    """The settled fleet with ``changes`` applied: what the first round after reconciles."""
    return apply(replace(inputs, replicas=settled_replicas(before)), changes)


def plan(inputs: Fleet, changes: Changes) -> Plan:
    """Plan ``changes`` against ``inputs``; raises ChangeError for a removal of nothing."""
    before = settled(inputs)
    rounds = converge(changed_inputs(inputs, before, changes), MAX_ROUNDS)
    after = rounds[-1]
    moves = _moves(rounds)
    moved = {m.replica for m in moves}
    was = {r.name: r for r in before.running}
    now = {r.name: r for r in after.running}
    first = _first_rounds(rounds)
    placed = tuple(
        Placed(r.deployment, name, r.cluster, _pools(r), first.get(name, len(rounds)))
        for name, r in sorted(now.items())
        if name not in was
    )
    removed = tuple(
        Removed(r.deployment, name, r.cluster, _why(r, after, rounds))
        for name, r in sorted(was.items())
        if name not in now and name not in moved
    )
    return Plan(
        before=before,
        after=after,
        rounds=rounds,
        settled=len(rounds) < MAX_ROUNDS or _quiet_last(rounds),
        placed=placed,
        moves=moves,
        removed=removed,
        unplaced=_unplaced(after),
    )


def _quiet_last(rounds: tuple[FleetState, ...]) -> bool:
    return not any(
        not p.retained for r in rounds[-1].results for p in r.schedule.replicas
    ) and not any(s.replacement for r in rounds[-1].results for s in r.schedule.superseded)


def _pools(running: Running) -> tuple[str, ...]:
    return tuple(
        sorted({m.node_pool_name for e in running.replica.spec.engines for m in e.members})
    )


def _first_rounds(rounds: tuple[FleetState, ...]) -> dict[str, int]:
    """The round each replica first runs in."""
    out: dict[str, int] = {}
    for number, state in enumerate(rounds, 1):
        for r in state.running:
            out.setdefault(r.name, number)
    return out


def _moves(rounds: tuple[FleetState, ...]) -> tuple[Move, ...]:
    """Every replica replaced make-before-break, in round then replica order; one still
    waiting for a replacement in the last round is listed with none."""
    out: dict[str, Move] = {}
    last = len(rounds)
    for number, state in enumerate(rounds, 1):
        for result in state.results:
            namespace = namespace_of(result.deployment.metadata.namespace)
            owner = f"{namespace}/{result.deployment.metadata.name}"
            for s in result.schedule.superseded:
                if not s.cause.moves:
                    continue
                name = f"{namespace}/{s.placement.name}"
                if name in out or (not s.replacement and number < last and not s.retiring):
                    continue  # waits for a later round's replacement
                if s.retiring and not s.replacement:
                    continue  # its replacement was named in an earlier round
                out[name] = Move(
                    owner,
                    name,
                    s.placement.cluster,
                    s.cause.value,
                    move_message(s),
                    f"{namespace}/{s.replacement}" if s.replacement else "",
                    s.replacement_cluster,
                    s.replacement_pools,
                    number,
                )
    return tuple(out.values())


def _why(running: Running, after: FleetState, rounds: tuple[FleetState, ...]) -> str:
    clusters = {v.name for v in after.views}
    if running.cluster not in clusters:
        return "its cluster is removed"
    deployments = {
        f"{namespace_of(r.deployment.metadata.namespace)}/{r.deployment.metadata.name}"
        for r in after.results
    }
    if running.deployment not in deployments:
        return "its deployment is removed"
    for state in rounds:
        for result in state.results:
            for s in result.schedule.superseded:
                namespace = namespace_of(result.deployment.metadata.namespace)
                if f"{namespace}/{s.placement.name}" == running.name:
                    return move_message(replace(s, retiring=True))
    for state in rounds:
        for result in state.results:
            for notice in result.schedule.notices:
                if running.replica.metadata.name in notice.replicas:
                    detail = f" ({notice.detail})" if notice.detail else ""
                    return f"{notice.cause.value}{detail}: removed, not Ready to serve a move"
    return MoveCause.SCALED_DOWN.value


def _unplaced(after: FleetState) -> tuple[Unplaced, ...]:
    out: list[Unplaced] = []
    for result in after.results:
        schedule = result.schedule
        if schedule.total < schedule.desired:
            meta = result.deployment.metadata
            out.append(
                Unplaced(
                    f"{namespace_of(meta.namespace)}/{meta.name}",
                    schedule.total,
                    schedule.desired,
                    schedule.explain,
                )
            )
    return tuple(out)
