"""How long each answer stays true: the TTL by kind and state (docs/crossplane.md, "Reconciles
driven by change" and "Answers that stay true longer").

With realtime compositions (Crossplane v2's default) an XR is reconciled when its own
object or one of its composed resources changes, and again when the pipeline's TTL expires
(and on every informer resync). A required resource is *not* watched: a kind that reads one
learns of its change only when the TTL expires. So an answer's TTL follows from what it
reads: the shortest bound over its inputs. What a kind reads, and how soon a change of it
matters, can depend on what the function found (``State``): a replica stamped by its
deployment reads only its spec; a settled deployment or a quiet cluster needs the fleet
only for work it does not have. The function names the state of its answer; this table is
the one home of the TTL it gets; the gRPC shell stamps it on every answer
(``proto.response_to_proto``). ``render`` has no TTL.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping
from dataclasses import dataclass


class Change(enum.Enum):
    """How a change of an input reaches the kind's function."""

    # The XR's own object or its composed resources: Crossplane watches them.
    WATCHED = "watched"
    # A required resource that changes only when an operator edits another object (a
    # cluster's stack or gateway, a class): rare, and not urgent to the minute.
    EDITED = "edited"
    # A required resource whose content moves with the fleet by itself (occupancy, a
    # cluster turning Ready, an endpoint appearing or withdrawn).
    FLEET = "fleet"
    # Fleet state a settled deployment reads only to place work it does not have: free
    # capacity, a new cluster, a cache's new cluster. What it must react to at once (a
    # replica or endpoint of its own failing) is watched.
    NEW_WORK = "new work"
    # The replicas pinned to a quiet cluster: one appears or goes only by another
    # deployment's reconcile, which charges its own replicas itself until it is published.
    OTHERS = "others"


class State(enum.Enum):
    """What the function found, when the TTL of a kind's answer depends on it."""

    # Every answer of a kind with one state; the unstamped, unsettled or busy answer else.
    DEFAULT = "default"
    # A ModelReplica carrying spec.clusterInfo: it reads nothing but its spec.
    STAMPED = "stamped"
    # A ModelDeployment with every desired replica scheduled and Ready on a Ready
    # cluster, nothing moving, rolling or pending (reconcile.deployment.settled).
    SETTLED = "settled"
    # An InferenceCluster whose occupancy is the one it published and whose pinned
    # replicas are all Ready (cluster_fn.quiet).
    QUIET = "quiet"


# The safety net for watched inputs: Crossplane's own --sync-interval default (v2.3.4
# cmd/crossplane/core/core.go), after which every XR is re-enqueued anyway.
LONG_TTL = datetime.timedelta(hours=1)
# An edit of a cluster reaches its replicas within the default poll of provider-kubernetes
# (--poll 10m, v1.2.1 cmd/provider/main.go): no sooner than a remote change is seen there.
EDITED_TTL = datetime.timedelta(minutes=10)
# Fleet state: what every kind answered before it had a TTL of its own.
SHORT_TTL = datetime.timedelta(minutes=1)
# A settled deployment notices a change of the fleet that none of its replicas shows (new
# capacity, a new cluster, its cluster's status) within this: it has nothing to place, and a
# scale-up is an edit of its own spec, watched.
SETTLED_TTL = datetime.timedelta(minutes=5)
# A quiet cluster publishes another deployment's new replica within this. Until then a
# third deployment may count those devices free; the one that placed the replica always
# charges it itself (docs/crossplane.md, "Answers that stay true longer").
QUIET_TTL = datetime.timedelta(minutes=10)

TTL_OF: Mapping[Change, datetime.timedelta] = {
    Change.WATCHED: LONG_TTL,
    Change.EDITED: EDITED_TTL,
    Change.FLEET: SHORT_TTL,
    Change.NEW_WORK: SETTLED_TTL,
    Change.OTHERS: QUIET_TTL,
}


@dataclass(frozen=True, slots=True)
class Read:
    """One input of a kind's function and how its changes arrive."""

    what: str
    change: Change


_OWN = Read("its own spec and composed resources", Change.WATCHED)
_CLUSTER_EDITS = (
    Read("the InferenceClasses of its node pools", Change.EDITED),
    Read("every TelemetryDestination and MetricMapping (its collector)", Change.EDITED),
)

# What each kind's function reads, by the state of its answer (docs/crossplane.md,
# "Reconciles driven by change"). Every kind has a DEFAULT row.
READS: Mapping[str, Mapping[State, tuple[Read, ...]]] = {
    "InferenceClass": {State.DEFAULT: (Read("its own spec", Change.WATCHED),)},
    "ModelEndpoint": {State.DEFAULT: (_OWN,)},
    "InferenceGateway": {
        State.DEFAULT: (
            _OWN,
            Read(
                "its InferenceCluster (readiness, provider config) and every gateway",
                Change.FLEET,
            ),
            Read("provider-kubernetes' runtime config; the caller-key Secrets", Change.EDITED),
        )
    },
    "ModelReplica": {
        # Written by an older release: no spec.clusterInfo, its cluster is required.
        State.DEFAULT: (
            _OWN,
            Read(
                "its InferenceCluster: provider config, stack, gateway implementation, "
                "the drivers of its pools",
                Change.EDITED,
            ),
        ),
        # Its deployment stamps those facts into spec.clusterInfo, refreshing them on its
        # own reconciles: an edit reaches the replica as a change of its own spec.
        State.STAMPED: (_OWN,),
    },
    "InferenceCluster": {
        State.DEFAULT: (
            _OWN,
            *_CLUSTER_EDITS,
            Read("the ModelReplicas labelled for it (status.occupancy)", Change.FLEET),
        ),
        State.QUIET: (
            _OWN,
            *_CLUSTER_EDITS,
            Read("the ModelReplicas labelled for it, all Ready and published", Change.OTHERS),
        ),
    },
    "TelemetryDestination": {
        State.DEFAULT: (
            _OWN,
            Read("every InferenceCluster (labels, the collector's phase)", Change.FLEET),
        )
    },
    "MetricMapping": {State.DEFAULT: (_OWN,)},
    "ModelDeployment": {
        State.DEFAULT: (
            _OWN,
            Read("every InferenceCluster (readiness, occupancy) and InferenceClass", Change.FLEET),
            Read("its ModelCache (per-cluster phases)", Change.FLEET),
        ),
        State.SETTLED: (
            _OWN,
            Read(
                "every InferenceCluster (free capacity, new clusters) and InferenceClass",
                Change.NEW_WORK,
            ),
            Read("its ModelCache (clusters staged anew)", Change.NEW_WORK),
        ),
    },
    "ModelCache": {
        State.DEFAULT: (
            _OWN,
            Read("every InferenceCluster (readiness, storage class)", Change.FLEET),
        )
    },
    "ModelService": {
        State.DEFAULT: (
            _OWN,
            Read("the ModelEndpoints of its namespace", Change.FLEET),
            Read("every InferenceGateway (address) and InferenceCluster", Change.FLEET),
            Read("provider-kubernetes' runtime config", Change.EDITED),
        )
    },
}


def ttl_for(kind: str, state: State = State.DEFAULT) -> datetime.timedelta:
    """The TTL of an answer for ``kind`` in ``state``: the shortest over what it reads.

    A kind not in the table (an unsupported composite, answered Fatal) gets the short TTL;
    a state the kind does not have, its DEFAULT row.
    """
    rows = READS.get(kind)
    if not rows:
        return SHORT_TTL
    reads = rows.get(state, rows[State.DEFAULT])
    return min(TTL_OF[read.change] for read in reads)
