"""Which observed replicas lost something to their cluster, and what happens to them.

Pure: read from the same views and retained set the scheduler used, so the status can say
which replicas, which cluster and what happens next, without a second opinion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from modelplane.api import ModelReplica, Toleration
from modelplane.scheduling.fleet import ClusterView, taint_text, untolerated_taint
from modelplane.scheduling.model import LossCause, Placement, ReplicaNotice
from modelplane.scheduling.replicas import identity

# (cluster, cause, detail, withdrawn): one notice each.
_Key = tuple[str, LossCause, str, bool]


def replica_notices(
    ours: Sequence[ModelReplica],
    views: Mapping[str, ClusterView],
    tolerations: Sequence[Toleration],
    kept: Sequence[Placement],
) -> tuple[ReplicaNotice, ...]:
    """The notices of one schedule, by cluster name then cause order.

    ``ours`` are the deployment's observed replicas in (namespace, name) order, ``views``
    every fetched cluster by name, ``kept`` the placements retained after scale-down.
    Removed: the cluster is gone, drains (an untolerated NoExecute taint) or no longer
    publishes a pinned pool. Kept: the cluster's serving stack is not ready (a Managed stack
    installing or failed, a Provided one whose requirements are not met; the detail is its
    phase), the cluster is NotReady, or it has no gateway address. A stack-not-ready or
    NotReady cluster without a gateway address is one notice marked ``withdrawn``: its
    replicas are kept and withdrawn from routing, and the status must say both.
    A replica dropped for another reason (a changed spec, selector or scale-down) is no loss.
    """
    kept_ids = {(p.cluster, p.index) for p in kept}
    found: dict[_Key, list[str]] = {}
    seen: set[tuple[str, int]] = set()
    for replica in ours:
        key = identity(replica)
        if not key[0] or key in seen:
            continue  # never pinned, or a duplicate identity: nothing was lost
        seen.add(key)
        cause = (
            _kept_cause(views[key[0]])
            if key in kept_ids
            else _lost_cause(replica, views, tolerations)
        )
        if cause is not None:
            found.setdefault((key[0], *cause), []).append(replica.metadata.name or "")
    order = list(LossCause)
    return tuple(
        ReplicaNotice(cluster, cause, tuple(names), detail, withdrawn)
        for (cluster, cause, detail, withdrawn), names in sorted(
            found.items(), key=lambda item: (item[0][0], order.index(item[0][1]))
        )
    )


def _kept_cause(view: ClusterView) -> tuple[LossCause, str, bool] | None:
    withdrawn = not view.gateway
    stack = view.unready_stack
    if stack is not None:
        cause = (
            LossCause.REQUIREMENTS_NOT_MET
            if stack.components == "Provided"
            else LossCause.STACK_NOT_READY
        )
        return cause, stack.phase, withdrawn
    if not view.ready:
        return LossCause.NOT_READY, "", withdrawn
    if withdrawn:
        return LossCause.NO_GATEWAY, "", False
    return None


def _lost_cause(
    replica: ModelReplica, views: Mapping[str, ClusterView], tolerations: Sequence[Toleration]
) -> tuple[LossCause, str, bool] | None:
    view = views.get(replica.spec.cluster_name or "")
    if view is None:
        return LossCause.CLUSTER_GONE, "", False
    taint = untolerated_taint(view, tolerations, no_execute_only=True)
    if taint is not None:
        return LossCause.DRAINING, taint_text(taint), False
    if view.pool_unknown:
        return None
    missing = sorted(
        {
            m.node_pool_name
            for e in replica.spec.engines
            for m in e.members
            if m.node_pool_name and view.pool(m.node_pool_name) is None
        }
    )
    return (LossCause.POOLS_LOST, ", ".join(missing), False) if missing else None
