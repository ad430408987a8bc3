"""Changes without outage: the rollout policy and the revision of a replica.

A running replica that must move is replaced first (make-before-break, bounded by
``MAX_SURGE``); a template change that keeps placements is applied in place, at most
``MAX_UNAVAILABLE`` replicas at a time and only once every already-updated replica is
Ready. The state machine is in docs/reconcile.md ("Rollouts and moves").

Pure: the clock is the shell's; ``stuck`` is told ``now``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Final

from modelplane.api import ModelDeployment, ModelReplica
from modelplane.api.meta import get_condition, is_ready
from modelplane.composition.conditions import MODEL_ACCEPTED, NOT_SYNCED
from modelplane.naming import (
    DRAINING_SINCE_ANNOTATION,
    REVISION_SINCE_ANNOTATION,
    TEMPLATE_HASH_LABEL,
    template_hash,
)

# The seed has no strategy field (docs/api.md "Rollouts"): the defaults of the issue, one home.
MAX_SURGE: Final = 1
"""Replicas a deployment may run beyond ``spec.replicas`` while running replicas move."""
MAX_UNAVAILABLE: Final = 1
"""Replicas a template rollout may take out of service at once (counted against desired)."""
_STAMP_FORMAT: Final = "%Y-%m-%dT%H:%M:%SZ"  # RFC 3339 in UTC, as the annotation holds it
PROGRESS_DEADLINE: Final = timedelta(minutes=30)
"""How long an updated or new replica may take to become Ready before the rollout is stuck.

Longer than a Deployment's 600 s default: a model server pulls a multi-GiB image and loads
its weights before it is Ready (docs/reconcile.md)."""
DRAIN_PERIOD: Final = timedelta(minutes=2)
"""How long a withdrawn endpoint's backend outlives its withdrawal.

A ModelService reads the ModelEndpoints of its namespace as required resources, which
Crossplane does not watch: its route drops a withdrawn endpoint only when its answer's TTL
(one minute) expires, and the gateway then programs the new route within seconds. Two
minutes covers both with room for requests already in flight (docs/reconcile.md,
"Drain before delete")."""


def revision(deployment: ModelDeployment) -> str:
    """The deployment's current template revision (``naming.template_hash``)."""
    return template_hash(deployment.spec.template.to_wire())


def revision_of(replica: ModelReplica, current: str) -> str:
    """The revision an observed replica runs: its hash label.

    A replica without the label was written before revisions existed, from the template of
    its time, and was kept current in place by every reconcile since: it is adopted as
    ``current`` rather than rolled for a label.
    """
    return (replica.metadata.labels or {}).get(TEMPLATE_HASH_LABEL) or current


def ready(replica: ModelReplica | None) -> bool:
    """The observed replica reports Ready=True."""
    return replica is not None and is_ready(replica.status)


def applied(replica: ModelReplica | None) -> bool:
    """The cluster took the replica's desired state: no Object of it reads ``Synced=False``
    (its ``ModelAccepted`` is not ``NotSynced``)."""
    if replica is None or replica.status is None:
        return True
    accepted = get_condition(replica.status.conditions or (), MODEL_ACCEPTED)
    return accepted.reason != NOT_SYNCED


def settled(replica: ModelReplica | None) -> bool:
    """Ready, and running what it was last written with: a rollout may take its next turn."""
    return ready(replica) and applied(replica)


def timestamp(now: datetime) -> str:
    """``now`` as the RFC 3339 UTC text of ``REVISION_SINCE_ANNOTATION``."""
    return now.astimezone(UTC).strftime(_STAMP_FORMAT)


def since_of(replica: ModelReplica | None) -> str | None:
    """The observed replica's ``revision-since`` annotation, if it has one."""
    if replica is None:
        return None
    return (replica.metadata.annotations or {}).get(REVISION_SINCE_ANNOTATION)


def _parsed(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, _STAMP_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def draining_since(annotations: Mapping[str, str] | None) -> str | None:
    """The ``draining-since`` mark of an observed endpoint, None when it is not draining."""
    return (annotations or {}).get(DRAINING_SINCE_ANNOTATION)


def drained(since: str, now: datetime | None) -> bool:
    """A backend withdrawn at ``since`` may go at ``now``.

    Without a clock the reconcile that observes the mark is the next one after the
    withdrawal, and that suffices (``render`` recomposes every route in the same run). An
    unreadable or empty mark under a clock counts as drained: no capacity is held forever.
    """
    if now is None:
        return True
    started = _parsed(since)
    return started is None or now - started >= DRAIN_PERIOD


def overdue(since: Mapping[str, str], now: datetime | None) -> tuple[str, ...]:
    """The replicas (by name, sorted) waiting longer than ``PROGRESS_DEADLINE`` at ``now``.

    ``since`` maps a waiting replica's name to its stamp. Without a clock nothing is overdue;
    an unreadable stamp is not either.
    """
    if now is None:
        return ()
    late: list[str] = []
    for name, text in since.items():
        started = _parsed(text)
        if started is not None and now - started > PROGRESS_DEADLINE:
            late.append(name)
    return tuple(sorted(late))
