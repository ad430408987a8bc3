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
from modelplane.naming import REVISION_SINCE_ANNOTATION, TEMPLATE_HASH_LABEL, template_hash

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


def overdue(since: Mapping[str, str], now: datetime | None) -> tuple[str, ...]:
    """The replicas (by name, sorted) waiting longer than ``PROGRESS_DEADLINE`` at ``now``.

    ``since`` maps a waiting replica's name to its stamp. Without a clock nothing is overdue;
    an unreadable stamp is not either.
    """
    if now is None:
        return ()
    late: list[str] = []
    for name, text in since.items():
        try:
            started = datetime.strptime(text, _STAMP_FORMAT).replace(tzinfo=UTC)
        except ValueError:
            continue
        if now - started > PROGRESS_DEADLINE:
            late.append(name)
    return tuple(sorted(late))
