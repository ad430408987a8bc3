"""A ModelDeployment's status: replica counts, conditions and events (docs/reconcile.md,
"Conditions, events and readiness").

Pure: computed from the deployment, its schedule (scheduling.md), the cache state
and the observed ModelReplicas. Shared by ``schedule``, ``render`` and the
deployment function.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from modelplane.api import Condition, ModelDeployment, ModelReplica
from modelplane.api.meta import condition, get_condition
from modelplane.events import Event
from modelplane.scheduling.model import (
    CacheKind,
    CacheState,
    HoldCause,
    LossCause,
    Mode,
    Placement,
    ReplicaNotice,
    Schedule,
    Shortfall,
    Superseded,
)
from modelplane.scheduling.replicas import identity, owns, sort_key
from modelplane.scheduling.rollout import MAX_SURGE, PROGRESS_DEADLINE, applied, overdue
from modelplane.scheduling.rollout import ready as replica_ready

MODEL_CACHE_RESOLVED = "ModelCacheResolved"
REPLICAS_SCHEDULED = "ReplicasScheduled"
REPLICAS_READY = "ReplicasReady"
PROGRESSING = "Progressing"

NO_CLUSTERS_FOUND = "No InferenceClusters found"
WAITING_FOR_CLUSTERS = "Waiting for InferenceClusters"
SCALED_TO_ZERO = "Scaled to zero: removing all replicas"
ZERO_DESIRED = "0 replicas desired"


@dataclass(frozen=True, slots=True)
class DeploymentStatus:
    """``status.replicas`` {total, ready}, the conditions in order, and the events in order."""

    total: int
    ready: int
    conditions: tuple[Condition, ...]
    events: tuple[Event, ...]


def ready_at(observed: Mapping[tuple[str, int], ModelReplica], placement: Placement) -> bool:
    """A placed replica counts ready: kept, and observed Ready.

    One placed afresh on a reused identity is a new object, never ready yet; one updated in
    place now restarts.
    """
    return (
        placement.retained
        and not placement.revised
        and replica_ready(observed.get((placement.cluster, placement.index)))
    )


def observed_by_identity(
    deployment: ModelDeployment, observed_replicas: Iterable[ModelReplica]
) -> dict[tuple[str, int], ModelReplica]:
    """Our observed replicas by (cluster, index); the first by name wins a shared identity."""
    out: dict[tuple[str, int], ModelReplica] = {}
    for replica in sorted((r for r in observed_replicas if owns(deployment, r)), key=sort_key):
        out.setdefault(identity(replica), replica)
    return out


def deployment_status(
    deployment: ModelDeployment,
    schedule: Schedule,
    cache: CacheState,
    observed_replicas: Iterable[ModelReplica],
    *,
    now: datetime | None = None,
    waiting_since: Mapping[str, str] | None = None,
) -> DeploymentStatus:
    """Replica counts, conditions and events, in their order of one reconcile.

    ``now`` and ``waiting_since`` (the ``revision-since`` stamp of each replica waiting for
    Ready) judge the progress deadline of ``Progressing``.
    """
    observed = observed_by_identity(deployment, observed_replicas)
    if schedule.mode is Mode.PARKED:
        return DeploymentStatus(
            0,
            0,
            (
                condition(REPLICAS_SCHEDULED, True, "NoReplicasDesired", ZERO_DESIRED),
                condition(REPLICAS_READY, True, "NoReplicasDesired", ZERO_DESIRED),
                condition(PROGRESSING, True, ROLLOUT_COMPLETE, ZERO_DESIRED),
            ),
            (Event("Normal", SCALED_TO_ZERO),) if observed else (),
        )
    total = schedule.total
    # A replica placed in this reconcile is never ready yet, even on a reused identity.
    # A replica updated in place now restarts; a superseded replica still routed
    # serves for the replacement it waits for, so Ready capacity never reads lower than it is.
    ready = min(
        schedule.desired,
        sum(1 for p in schedule.replicas if ready_at(observed, p))
        + sum(1 for s in schedule.superseded if not s.retiring),
    )
    any_observed = any((p.cluster, p.index) in observed for p in schedule.replicas)
    conditions: list[Condition] = []
    events: list[Event] = []
    cache_condition = _cache_condition(deployment, cache)
    if cache_condition is not None:
        conditions.append(cache_condition[0])
        if cache_condition[1] is not None:
            events.append(cache_condition[1])
    reported = reported_message(deployment, REPLICAS_SCHEDULED)
    conditions.append(_scheduled(schedule, total, any_observed, events, reported))
    conditions.append(_ready(schedule, ready))
    late = overdue(waiting_since or {}, now)
    fetching = cache.kind is CacheKind.UNRESOLVED  # the next call brings it: not stuck
    refused = tuple(
        sorted(p.name for p in schedule.replicas if not applied(observed.get((p.cluster, p.index))))
    )
    conditions.append(_progressing(schedule, ready, late, fetching, refused))
    if schedule.mode is Mode.NORMAL and total > 0 and not any_observed:
        names = sorted({p.cluster for p in schedule.replicas})
        events.append(
            Event(
                "Normal",
                f"Scheduled {total} replicas across {len(names)} clusters: {', '.join(names)}",
            )
        )
    return DeploymentStatus(total, ready, tuple(conditions), tuple(events))


def _cache_condition(
    deployment: ModelDeployment, cache: CacheState
) -> tuple[Condition, Event | None] | None:
    ref = deployment.spec.template.spec.model_cache_ref
    if ref is None:
        return None
    if cache.kind is CacheKind.PRESENT:
        return condition(MODEL_CACHE_RESOLVED, True, "ModelCacheResolved"), None
    if cache.kind is CacheKind.UNRESOLVED:
        return (
            condition(
                MODEL_CACHE_RESOLVED,
                False,
                "ModelCacheUnresolved",
                f"Waiting for ModelCache {ref.name}",
            ),
            None,
        )
    text = f"ModelCache {ref.name} not found; holding replica placement"
    return condition(MODEL_CACHE_RESOLVED, False, "ModelCacheNotFound", text), Event(
        "Warning", text
    )


def _scheduled(
    schedule: Schedule,
    total: int,
    any_observed: bool,
    events: list[Event],
    reported: str | None,
) -> Condition:
    """ReplicasScheduled (docs/reconcile.md, "`ReplicasScheduled` when replicas are missing"),
    appending the events its case raises.

    ``reported`` is the observed composite's ReplicasScheduled message: a shortfall's
    Warning is raised only when its text differs (once per change).
    """
    desired = schedule.desired
    if schedule.cause is HoldCause.CLUSTERS_UNRESOLVED:
        message = NO_CLUSTERS_FOUND if schedule.clusters_fetched else WAITING_FOR_CLUSTERS
        if schedule.clusters_fetched:
            events.append(Event("Warning", NO_CLUSTERS_FOUND))
        if total:
            message += f"; keeping {total} existing replicas"
        return condition(REPLICAS_SCHEDULED, False, "ClustersUnresolved", message)
    if schedule.cause is HoldCause.INVALID_NODE_SELECTOR:
        message = f"Invalid nodeSelector CEL expression: {schedule.selector_error}"
        events.append(Event("Warning", message))
        return condition(REPLICAS_SCHEDULED, False, "InvalidNodeSelector", message)
    if schedule.cluster_count == 0:
        events.append(Event("Warning", NO_CLUSTERS_FOUND))
        return condition(REPLICAS_SCHEDULED, False, "NoClusters", NO_CLUSTERS_FOUND)
    if total + schedule.waiting < desired:
        # Only here is a shortfall worded: its counts are codes, formatted once.
        shortfall = _shortfall(schedule)
        if total == 0:
            message = f"0 of {desired} replicas scheduled: {shortfall.message()}"
        else:
            message = (
                f"Scheduled {total} of {desired} replicas; {desired - total} did not fit: "
                f"{shortfall.message()}"
            )
        message += _kept_clause(schedule)
        if message != reported:
            events.append(Event("Warning", message))
        if total == 0:
            return condition(REPLICAS_SCHEDULED, False, shortfall.reason, message)
        if not any_observed:
            return condition(REPLICAS_SCHEDULED, False, "Scheduling", message)
        return condition(REPLICAS_SCHEDULED, True, "ReplicasCreated", message)
    waits = (
        f"; {schedule.waiting} waiting for a move to finish (at most {MAX_SURGE} extra)"
        if schedule.waiting
        else ""
    )
    if not any_observed:
        held_back = f"Scheduled {total} of {desired} replicas{waits}" if waits else ""
        return condition(REPLICAS_SCHEDULED, False, "Scheduling", held_back)
    return condition(
        REPLICAS_SCHEDULED,
        True,
        "ReplicasCreated",
        f"Scheduled {total} of {desired} replicas{waits}",
    )


def _kept_clause(schedule: Schedule) -> str:
    """``; <n> running replica(s) kept until a replacement fits``, or nothing."""
    stuck = [s for s in schedule.superseded if not s.retiring and not s.replacement]
    if not stuck:
        return ""
    n = len(stuck)
    return f"; {n} running {_plural(n, 'replica')} kept until a replacement fits"


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def _replicas(names: Sequence[str]) -> str:
    """``replica a`` or ``replicas a, b``."""
    return f"{_plural(len(names), 'replica')} {', '.join(names)}"


INVALID_INPUT = "InvalidInput"


def invalid_input_status(deployment: ModelDeployment, problem: str, kept: int) -> DeploymentStatus:
    """The status of a reconcile that could not read one of its inputs.

    The deployment itself is valid, so something can be said: every observed replica is
    kept, ``ReplicasScheduled`` names the problem, and what the previous reconcile wrote
    (``ModelCacheResolved``, ``ReplicasReady``, ``status.replicas``) is carried over instead
    of being lost to a Fatal result, which Crossplane turns into Unknown conditions.
    """
    status = deployment.status
    previous = {c.type: c for c in ((status.conditions if status else None) or ())}
    message = f"{problem}; keeping {kept} existing replicas"
    conditions: list[Condition] = []
    if MODEL_CACHE_RESOLVED in previous:
        conditions.append(_carried(previous[MODEL_CACHE_RESOLVED]))
    conditions.append(condition(REPLICAS_SCHEDULED, False, INVALID_INPUT, message))
    if REPLICAS_READY in previous:
        conditions.append(_carried(previous[REPLICAS_READY]))
    else:
        conditions.append(condition(REPLICAS_READY, "Unknown", INVALID_INPUT, message))
    if PROGRESSING in previous:  # nothing moves or rolls while held
        conditions.append(_carried(previous[PROGRESSING]))
    counts = status.replicas if status is not None else None
    total = counts.total if counts is not None and counts.total is not None else kept
    ready = counts.ready if counts is not None and counts.ready is not None else 0
    return DeploymentStatus(total, ready, tuple(conditions), (Event("Warning", message),))


def _carried(previous: Condition) -> Condition:
    return condition(previous.type, previous.status, previous.reason or "", previous.message or "")


def reported_message(deployment: ModelDeployment, type_: str) -> str | None:
    """The message of the observed composite's condition ``type_``, if it has one.

    The one read of the input status: like the ModelCache's staging events, the shortfall
    Warning is raised on a change only, so that a deployment stuck short of replicas does
    not repeat it on every reconcile (docs/reconcile.md).
    """
    previous = deployment.status.conditions if deployment.status is not None else None
    return get_condition(previous, type_).message


def _shortfall(schedule: Schedule) -> Shortfall:
    """The counted reasons of a Normal schedule short of replicas (scheduling computes them)."""
    if schedule.shortfall is None:
        raise ValueError("a Normal schedule with fewer replicas than desired has a shortfall")
    return schedule.shortfall


def _ready(schedule: Schedule, ready: int) -> Condition:
    """ReplicasReady (docs/reconcile.md, "`ReplicasReady` says every loss"): counted against
    ``spec.replicas``, every loss said.

    The first matching row wins: nothing scheduled and nothing lost; a replica whose cluster
    is gone, drains, lost its pools, has its serving stack not ready, is NotReady or has no
    gateway (the first notice's cause is the reason, every notice is a clause); replicas not
    scheduled; all ready; starting.
    """
    desired, total = schedule.desired, schedule.total
    notices = schedule.notices
    if total == 0 and not notices and not schedule.superseded:
        return condition(REPLICAS_READY, False, "NoReplicasScheduled")
    counted = f"{ready} of {desired} ready"
    if notices:
        moving = {s.placement.name: s for s in schedule.superseded}
        clauses = [notice_message(n, total >= desired, moving) for n in notices]
        return condition(
            REPLICAS_READY, False, notices[0].cause.value, "; ".join([counted, *clauses])
        )
    if total + schedule.waiting < desired:
        why = schedule.shortfall.message() if schedule.shortfall else "ReplicasScheduled says why"
        return condition(
            REPLICAS_READY,
            False,
            "ReplicasNotScheduled",
            f"{counted}; {desired - total} not scheduled: {why}{_kept_clause(schedule)}",
        )
    if ready == desired:
        return condition(REPLICAS_READY, True, "AllReplicasReady", counted)
    return condition(REPLICAS_READY, False, "ModelStarting", counted)


_LOSS_TEXT = {
    LossCause.CLUSTER_GONE: "is gone",
    LossCause.DRAINING: "is draining ({detail})",
    LossCause.POOLS_LOST: "no longer publishes pool {detail}",
    LossCause.STACK_NOT_READY: "has its serving stack not ready ({detail})",
    LossCause.REQUIREMENTS_NOT_MET: "does not meet the serving stack's requirements ({detail})",
    LossCause.NOT_READY: "is NotReady",
    LossCause.NO_GATEWAY: "has no gateway address",
}


def notice_message(
    notice: ReplicaNotice, replaced: bool, moving: Mapping[str, Superseded] | None = None
) -> str:
    """``cluster <c> <state>: replica(s) <names> <what happens next>`` (docs/reconcile.md).

    ``replaced``: the schedule reached ``spec.replicas``, so removed replicas have their
    replacements; otherwise they wait for room, as ReplicasScheduled says. ``moving``: the
    superseded replicas by name: they keep serving until they are replaced.
    """
    state = _LOSS_TEXT[notice.cause].format(detail=notice.detail)
    who = _replicas(notice.replicas)
    first = (moving or {}).get(notice.replicas[0])
    if first is not None:
        if first.retiring:
            fate = "replaced, withdrawn from routing and removed next"
        elif first.replacement:
            fate = "kept serving until its replacement is Ready"
        else:
            fate = "kept serving, no replacement fits yet (ReplicasScheduled says why)"
    elif notice.cause is LossCause.NO_GATEWAY:
        fate = "kept, withdrawn from routing"
    elif not notice.cause.removed:
        # Without a gateway address its endpoint is gone too: say both, not just "kept".
        fate = "kept, withdrawn from routing (no gateway)" if notice.withdrawn else "kept"
    elif replaced:
        fate = "removed, re-placed"
    else:
        fate = "removed, not re-placed (ReplicasScheduled says why)"
    return f"cluster {notice.cluster} {state}: {who} {fate}"


ROLLOUT_IN_PROGRESS = "RolloutInProgress"
MOVING = "Moving"
ROLLOUT_COMPLETE = "RolloutComplete"
ROLLOUT_STUCK = "RolloutStuck"


def _progressing(
    schedule: Schedule,
    ready: int,
    late: tuple[str, ...],
    fetching: bool = False,
    refused: tuple[str, ...] = (),
) -> Condition:
    """Progressing: where the rollout and the moves stand, with counts.

    First matching row: a replica waited past the deadline (``RolloutStuck``); a running
    replica must move and nothing can replace it (``RolloutStuck``); replicas are moving
    (``Moving``); replicas are missing and none can be placed, with nothing else in flight
    (``False``, the reason ReplicasScheduled gives); a replica's change was not taken by its
    cluster, or replicas are at an older revision or not Ready yet (``RolloutInProgress``);
    otherwise ``RolloutComplete``.
    """
    desired = schedule.desired
    rollout = schedule.rollout
    updated = rollout.updated if rollout is not None else schedule.total
    counts = f"{updated} of {desired} replicas updated"
    if schedule.mode is Mode.HELD:
        # Nothing is placed, moved or updated while held.
        state = ROLLOUT_IN_PROGRESS if updated < desired or ready < desired else ROLLOUT_COMPLETE
        return condition(
            PROGRESSING, True, state, f"{counts}, {ready} ready; paused while scheduling is held"
        )
    if late:
        deadline = int(PROGRESS_DEADLINE.total_seconds())
        who = _replicas(late)
        return condition(
            PROGRESSING,
            False,
            ROLLOUT_STUCK,
            f"{counts}; {who} not Ready within {deadline}s; the rollout is stopped",
        )
    moves = [s for s in schedule.superseded if s.cause.moves]
    unplaced = [s for s in moves if not s.retiring and not s.replacement]
    if unplaced and schedule.total + schedule.waiting < desired:
        n = len(unplaced)
        return condition(
            PROGRESSING,
            False,
            ROLLOUT_STUCK,
            f"{counts}; {n} running {_plural(n, 'replica')} cannot move: no replacement fits "
            "(ReplicasScheduled says why); the previous placement keeps serving",
        )
    if moves:
        n = len(moves)
        paths = ", ".join(_path(s) for s in moves)
        return condition(
            PROGRESSING, True, MOVING, f"{counts}; {n} {_plural(n, 'replica')} moving {paths}"
        )
    blocked = None if fetching else _cannot_place(schedule, updated, ready)
    if blocked is not None:
        reason, why = blocked
        n = desired - schedule.total
        return condition(
            PROGRESSING,
            False,
            reason,
            f"{counts}, {ready} ready; {n} {_plural(n, 'replica')} cannot be placed: {why}",
        )
    outdated = rollout.outdated if rollout is not None else ()
    if refused:
        # The cluster refused the change: nothing proceeds until it is taken (ModelAccepted
        # on each replica names the Object and the provider's message).
        return condition(
            PROGRESSING,
            True,
            ROLLOUT_IN_PROGRESS,
            f"{counts}, {ready} ready; {_replicas(refused)} not synced: the cluster has not "
            "taken the change (the replica's ModelAccepted says why)",
        )
    if outdated or updated < desired or ready < desired:
        return condition(PROGRESSING, True, ROLLOUT_IN_PROGRESS, f"{counts}, {ready} ready")
    return condition(PROGRESSING, True, ROLLOUT_COMPLETE, counts)


def _cannot_place(schedule: Schedule, updated: int, ready: int) -> tuple[str, str] | None:
    """The reason and the why of a rollout that cannot go on, else None.

    It cannot when the schedule is short of ``spec.replicas`` and nothing is in flight:
    nothing moves, waits for the surge bound, or is outdated, updating or starting. Like a
    Deployment's ``Progressing=False``, this says the rollout will not finish by itself; the
    reason is the one ReplicasScheduled gives (``NoClusters``, or the shortfall's).
    """
    if schedule.total + schedule.waiting >= schedule.desired:
        return None
    rollout = schedule.rollout
    outdated = rollout.outdated if rollout is not None else ()
    if schedule.waiting or schedule.superseded or outdated:
        return None
    if updated < schedule.total or ready < schedule.total:
        return None  # a replica is still updating or starting
    if schedule.cluster_count == 0:
        return "NoClusters", "no InferenceClusters found"
    shortfall = _shortfall(schedule)
    return shortfall.reason, shortfall.message()


def _path(move: Superseded) -> str:
    """``from <c1> to <c2>`` (``within <c> (pool <p1> to <p2>)`` inside one cluster); a retiring
    one is leaving, one without a replacement waits."""
    source = move.placement.cluster
    if move.retiring:
        return f"from {source} (replaced, leaving)"
    if move.replacement and move.replacement_cluster == source:
        # A move inside one cluster (a renamed pool, a new shape): say which pools.
        old, new = ", ".join(move.pools), ", ".join(move.replacement_pools)
        return f"within {source} (pool {old} to {new})" if old != new else f"within {source}"
    if move.replacement:
        return f"from {source} to {move.replacement_cluster}"
    return f"from {source} (waiting for a replacement)"
