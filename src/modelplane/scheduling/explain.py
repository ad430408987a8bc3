"""Why each cluster received no new replica: the reason codes, in check order.

Every check returns an ``Unfit``: the reason code now, the message only when asked for
(``schedule --explain``). The runtime reads the codes alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from modelplane.api import Toleration
from modelplane.api.inferencecluster import StackStatus
from modelplane.scheduling.fleet import (
    ClusterView,
    selector_mismatch,
    taint_text,
    untolerated_taint,
)
from modelplane.scheduling.model import CacheKind, CacheState, MoveCause, Reason, Superseded, Unfit
from modelplane.scheduling.placement import Failure, Trial


def _mismatch_message(found: tuple[str, str | None, str], who: str) -> str:
    key, actual, want = found
    state = f"is {actual}" if actual is not None else "is absent"
    return f"label {key} {state}, {who} wants {want}"


def stack_message(engine: str) -> str:
    """The StackUnsupported message (docs/scheduling.md, "Why replicas are missing")."""
    return (
        f"engine {engine}: Worker uses $(MODELPLANE_RANK), which the Dynamo stack cannot provide "
        "to workers; use $((GROVE_PCLQ_POD_INDEX + 1)) in a shell command, or a Standard cluster"
    )


def _not_ready_message(status: str | None) -> str:
    return f"Ready condition is {status}" if status is not None else "no Ready condition"


MAX_STACK_NAMED = 3
"""The components a stack message names before it counts the rest (``and N more``)."""
MAX_COMPONENT_MESSAGE = 160
"""A component's message is cut to this many characters in a stack message."""
_COMPONENT_READY = frozenset({"Ready", "Provided"})


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= MAX_COMPONENT_MESSAGE:
        return text
    return text[: MAX_COMPONENT_MESSAGE - 3].rstrip() + "..."


def stack_status_message(stack: StackStatus) -> str:
    """The StackNotReady or RequirementsNotMet message (docs/scheduling.md, "Why replicas are
    missing"): the stack's phase, then the components not ready with their phase.

    ``serving stack Installing: lws v0.10.0 Installing, nvidia-dra-driver 25.12.0 Waiting``;
    ``requirements not met: lws v0.10.0 Missing (<its message>)``. One line and bounded:
    whitespace runs read as one space, a component's message is cut at
    ``MAX_COMPONENT_MESSAGE`` characters, and past ``MAX_STACK_NAMED`` components the rest
    are counted.
    """
    if stack.components == "Provided":
        head = (
            "requirements not met"
            if stack.phase == "RequirementsNotMet"
            else f"requirements not verified yet ({stack.phase})"
        )
    else:
        head = f"serving stack {stack.phase}"
    pending = [item for item in stack.items if item.phase not in _COMPONENT_READY]
    if not pending:
        return head
    named = [
        f"{item.name} {item.version} {item.phase}"
        + (f" ({_one_line(item.message)})" if item.message and item.message.strip() else "")
        for item in pending[:MAX_STACK_NAMED]
    ]
    rest = len(pending) - len(named)
    return f"{head}: {', '.join(named)}" + (f" and {rest} more" if rest else "")


@dataclass(frozen=True, slots=True)
class Gates:
    """The per-deployment inputs of the cluster checks (docs/scheduling.md, "Cluster checks")."""

    selector: Mapping[str, str]
    cache: CacheState
    cache_name: str
    tolerations: Sequence[Toleration]
    rank_engine: str | None  # an engine whose Worker uses $(MODELPLANE_RANK)
    # Clusters whose occupancy is not published yet (function runtime).
    unpublished: frozenset[str] = frozenset()


def selector_failure(gates: Gates, cluster: ClusterView) -> Unfit | None:
    """Rows 1-2: the cluster is not a candidate."""
    found = selector_mismatch(cluster.labels, gates.selector)
    if found is not None:
        clause = found
        return Unfit(
            cluster.name,
            Reason.CLUSTER_SELECTOR_MISMATCH,
            lambda: _mismatch_message(clause, "clusterSelector"),
        )
    if gates.cache.kind is CacheKind.PRESENT:
        found = selector_mismatch(cluster.labels, dict(gates.cache.selector))
        if found is not None:
            cache_clause = found
            who = f"ModelCache {gates.cache_name} clusterSelector"
            return Unfit(
                cluster.name,
                Reason.CACHE_SELECTOR_MISMATCH,
                lambda: _mismatch_message(cache_clause, who),
            )
    return None


def cache_failure(gates: Gates, cluster: ClusterView) -> Unfit | None:
    """Row 3: the referenced cache is absent or unresolved, so no new replica is placed."""
    if gates.cache.gate_open:
        return None
    state = "not found" if gates.cache.kind is CacheKind.ABSENT else "not yet resolved"
    name = gates.cache_name
    return Unfit(
        cluster.name,
        Reason.CACHE_UNAVAILABLE,
        lambda: f"ModelCache {name} {state}; no new replicas are placed",
    )


def new_replica_failure(gates: Gates, cluster: ClusterView) -> Unfit | None:
    """Rows 4-7: a candidate that cannot take new replicas whatever its capacity."""
    taint = untolerated_taint(cluster, gates.tolerations)
    if taint is not None:
        return Unfit(
            cluster.name, Reason.TAINTED, lambda: f"taint {taint_text(taint)} is not tolerated"
        )
    if cluster.dynamo and gates.rank_engine is not None:
        engine = gates.rank_engine
        return Unfit(cluster.name, Reason.STACK_UNSUPPORTED, lambda: stack_message(engine))
    stack = cluster.unready_stack
    if stack is not None:
        reason = (
            Reason.REQUIREMENTS_NOT_MET
            if stack.components == "Provided"
            else Reason.STACK_NOT_READY
        )
        return Unfit(cluster.name, reason, lambda: stack_status_message(stack))
    if not cluster.ready:
        status = cluster.ready_status
        return Unfit(cluster.name, Reason.NOT_READY, lambda: _not_ready_message(status))
    if not cluster.gateway:
        return Unfit(cluster.name, Reason.NO_GATEWAY, lambda: "no gateway address")
    if cluster.pool_unknown:
        return Unfit(cluster.name, Reason.NO_POOLS, lambda: "cluster publishes no pools")
    if cluster.name in gates.unpublished:
        return Unfit(cluster.name, Reason.NO_POOLS, lambda: UNPUBLISHED_MESSAGE)
    return None


UNPUBLISHED_MESSAGE = (
    "cluster publishes no status.occupancy matching its pools yet: the InferenceCluster "
    "function has not counted the replicas on it; no new replica is placed there until it does"
)


def blocker(
    gates: Gates, cluster: ClusterView, trial: Callable[[ClusterView], Trial | Failure]
) -> Unfit | None:
    """Rows 3-10 for a candidate: why it cannot take one more replica now (None: it can)."""
    entry = cache_failure(gates, cluster) or new_replica_failure(gates, cluster)
    if entry is not None:
        return entry
    outcome = trial(cluster)
    if isinstance(outcome, Failure):
        return Unfit(cluster.name, outcome.reason, outcome.describe)
    return None


def _not_selected_message(gates: Gates, cluster: str, new_clusters: Sequence[str]) -> str:
    message = f"eligible; the new replicas went to {', '.join(new_clusters)}"
    warm = [c for c in new_clusters if c in gates.cache.warm]
    if warm and cluster not in gates.cache.warm:
        # The cache tie-break decided: say so (docs/scheduling.md).
        message += f" (ModelCache {gates.cache_name} is already staged on {', '.join(warm)})"
    return message


def explain_cluster(
    gates: Gates,
    cluster: ClusterView,
    trial: Callable[[ClusterView], Trial | Failure],
    new_clusters: Sequence[str],
    kept: int,
    desired: int,
) -> Unfit:
    """The entry of a cluster that received no new replica: the first failing check."""
    entry = selector_failure(gates, cluster) or blocker(gates, cluster, trial)
    if entry is not None:
        return entry
    if new_clusters:
        name = cluster.name
        return Unfit(
            name, Reason.NOT_SELECTED, lambda: _not_selected_message(gates, name, new_clusters)
        )
    return Unfit(
        cluster.name,
        Reason.NO_NEW_REPLICAS_NEEDED,
        lambda: f"eligible; {kept} replica(s) already meet spec.replicas {desired}",
    )


_MOVE_TEXT = {
    MoveCause.NOT_SELECTED: "its cluster no longer matches the deployment's selectors",
    MoveCause.DRAINING: "its cluster is draining (an untolerated NoExecute taint)",
    MoveCause.POOLS_LOST: "its cluster no longer publishes a pool it is pinned to",
    MoveCause.SHAPE_CHANGED: "its pins no longer satisfy the deployment's engines",
    MoveCause.TEMPLATE_CHANGED: "it runs an older template revision and is replaced first "
    "(an update in place would leave nothing serving)",
    MoveCause.IMMUTABLE_FIELD: "the template changes what its objects cannot change in place",
    MoveCause.SCALED_DOWN: "scaled down",
}


def move_message(move: Superseded) -> str:
    """Why a running replica is superseded and what takes its place (``--explain``).

    ``<name> on <cluster>: <why>; <what next>``: replaced by a named replica not Ready yet,
    replaced and leaving (its endpoint withdrawn first), or kept with no replacement placed.
    """
    p = move.placement
    head = f"{p.name} on {p.cluster}: {_MOVE_TEXT[move.cause]}"
    if move.detail:
        head = f"{head} ({move.detail})"
    if move.retiring:
        done = "" if move.cause is MoveCause.SCALED_DOWN else "replaced, "
        return f"{head}; {done}its endpoint is withdrawn and it is removed next"
    if move.replacement:
        return (
            f"{head}; serving until its replacement {move.replacement} on "
            f"{move.replacement_cluster} is Ready"
        )
    return f"{head}; serving, no replacement placed yet (a move in flight, or nothing fits)"
