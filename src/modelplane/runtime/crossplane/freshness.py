"""How long each kind's answer stays true: the per-kind TTL (docs/crossplane.md, "Reconciles
driven by change").

With realtime compositions (Crossplane v2's default) an XR is reconciled when its own
object or one of its composed resources changes, and again when the pipeline's TTL expires
(and on every informer resync). A required resource is *not* watched: a kind that reads one
learns of its change only when the TTL expires. So each kind's TTL follows from what it
reads: the shortest bound over its inputs. This table is the one home of that decision; the
gRPC shell stamps the TTL on every answer (``proto.response_to_proto``). ``render`` has no TTL.
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


# The safety net for watched inputs: Crossplane's own --sync-interval default (v2.3.4
# cmd/crossplane/core/core.go), after which every XR is re-enqueued anyway.
LONG_TTL = datetime.timedelta(hours=1)
# An edit of a cluster reaches its replicas within the default poll of provider-kubernetes
# (--poll 10m, v1.2.1 cmd/provider/main.go): no sooner than a remote change is seen there.
EDITED_TTL = datetime.timedelta(minutes=10)
# Fleet state: what every kind answered before it had a TTL of its own.
SHORT_TTL = datetime.timedelta(minutes=1)

TTL_OF: Mapping[Change, datetime.timedelta] = {
    Change.WATCHED: LONG_TTL,
    Change.EDITED: EDITED_TTL,
    Change.FLEET: SHORT_TTL,
}


@dataclass(frozen=True, slots=True)
class Read:
    """One input of a kind's function and how its changes arrive."""

    what: str
    change: Change


_OWN = Read("its own spec and composed resources", Change.WATCHED)

# What each kind's function reads (docs/crossplane.md, "Reconciles driven by change").
READS: Mapping[str, tuple[Read, ...]] = {
    "InferenceClass": (Read("its own spec", Change.WATCHED),),
    "ModelEndpoint": (_OWN,),
    "InferenceGateway": (
        _OWN,
        Read("its InferenceCluster (readiness, provider config) and every gateway", Change.FLEET),
        Read("provider-kubernetes' runtime config; the caller-key Secrets", Change.EDITED),
    ),
    "ModelReplica": (
        _OWN,
        Read(
            "its InferenceCluster: provider config, stack, gateway implementation",
            Change.EDITED,
        ),
    ),
    "InferenceCluster": (
        _OWN,
        Read("the InferenceClasses of its node pools", Change.EDITED),
        Read("the ModelReplicas labelled for it (status.occupancy)", Change.FLEET),
        Read("every TelemetryDestination and MetricMapping (its collector)", Change.EDITED),
    ),
    "TelemetryDestination": (
        _OWN,
        Read("every InferenceCluster (labels, the collector's phase)", Change.FLEET),
    ),
    "MetricMapping": (_OWN,),
    "ModelDeployment": (
        _OWN,
        Read("every InferenceCluster (readiness, occupancy) and InferenceClass", Change.FLEET),
        Read("its ModelCache (per-cluster phases)", Change.FLEET),
    ),
    "ModelCache": (
        _OWN,
        Read("every InferenceCluster (readiness, storage class)", Change.FLEET),
    ),
    "ModelService": (
        _OWN,
        Read("the ModelEndpoints of its namespace", Change.FLEET),
        Read("every InferenceGateway (address) and InferenceCluster", Change.FLEET),
        Read("provider-kubernetes' runtime config", Change.EDITED),
    ),
}


def ttl_for(kind: str) -> datetime.timedelta:
    """The TTL of an answer for ``kind``: the shortest over what it reads.

    A kind not in the table (an unsupported composite, answered Fatal) gets the short TTL.
    """
    reads = READS.get(kind)
    if not reads:
        return SHORT_TTL
    return min(TTL_OF[read.change] for read in reads)
