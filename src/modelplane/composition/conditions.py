"""ModelReplica conditions, events and readiness (docs/reconcile.md, "ModelReplica conditions").
Pure functions of observed state.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from modelplane.api.meta import Condition, condition, get_condition, holds
from modelplane.composition.delivery import DERIVE_FROM_CEL, SUCCESSFUL_CREATE
from modelplane.composition.observed import Observed, ObservedObject
from modelplane.events import Event

MODEL_ACCEPTED = "ModelAccepted"
MODEL_READY = "ModelReady"
NOT_SYNCED = "NotSynced"

# Why a replica's cluster is unresolved, in the table's order.
ClusterProblem = Literal["NotFetched", "NotFound", "NoProviderConfig"]

EVENT_WAITING_FOR_CLUSTER = "Waiting for cluster to be resolved"
EVENT_WAITING_FOR_PROVIDER_CONFIG = "Waiting for cluster providerConfigRef"


def observed_ready(obj: ObservedObject | None) -> bool:
    """The observed Object's ``Ready`` condition is ``True``."""
    return obj is not None and holds(obj.conditions, "Ready")


def observed_accepted(obj: ObservedObject | None) -> bool:
    """The provider has seen the remote object: a non-empty ``status.atProvider.manifest``."""
    return obj is not None and obj.reported


def not_synced(obj: ObservedObject | None) -> Condition | None:
    """The Object's ``Synced`` condition when it reads ``False``, else None.

    provider-kubernetes v1.2.1 reports a refused apply (a webhook or an immutable field)
    as ``Synced=False`` while ``Ready`` keeps the value it had: the remote object still
    runs its old spec, so a ``Ready`` Object is not proof that the change applied.
    """
    if obj is None:
        return None
    synced = get_condition(obj.conditions, "Synced")
    return synced if synced.status == "False" else None


def not_synced_message(observed: Observed) -> str | None:
    """Why the replica's desired state is not applied: each Object whose ``Synced`` is
    ``False``, by resource key, with the provider's message; None when every Object syncs."""
    parts: list[str] = []
    for key in sorted(observed):
        synced = not_synced(observed[key])
        if synced is not None:
            name = observed[key].name or key
            detail = synced.message or synced.reason or "no message"
            parts.append(f"Object {name} ({key}) is not synced: {detail}")
    return "; ".join(parts) if parts else None


def readiness_policy(obj: ObservedObject | None) -> str:
    """An Object's readiness policy; the CRD defaults it to SuccessfulCreate."""
    policy = obj.readiness_policy if obj is not None else None
    return policy if policy is not None else SUCCESSFUL_CREATE


def ready_flag(policy: str, observed: ObservedObject | None) -> bool | None:
    """The per-resource readiness flag; None leaves the resource unmarked.

    A workload (or picker Deployment) counts only once its observed Object is Ready, so
    a replica never goes Ready before its picker can route.
    """
    if observed is None:
        return None
    if policy == DERIVE_FROM_CEL:
        return True if observed_ready(observed) else None
    return True


def cluster_problem_message(problem: ClusterProblem, cluster: str) -> str:
    """The ``WaitingForCluster`` message."""
    if problem == "NotFetched":
        return f"Waiting for InferenceCluster {cluster}"
    if problem == "NotFound":
        return f"InferenceCluster {cluster} not found"
    return f"InferenceCluster {cluster} has no status.providerConfigRef yet"


def replica_conditions(
    workload_keys: Iterable[str],
    observed: Observed,
    problem: ClusterProblem | None,
    cluster: str,
) -> list[Condition]:
    """``ModelAccepted`` then ``ModelReady``, computed from the observed workloads.

    An observed Object that reads ``Synced=False`` makes ``ModelAccepted`` ``NotSynced``: the
    change was not taken, so the replica never counts as updated in a rollout. ``ModelReady``
    still says whether it serves: the remote objects run their previous spec, and a
    transient sync failure (the cluster's API server unreachable) takes nothing out of
    routing.
    """
    workloads = [observed.get(k) for k in workload_keys]
    accepted = bool(workloads) and all(observed_accepted(w) for w in workloads)
    ready = bool(workloads) and all(observed_ready(w) for w in workloads)
    if problem is not None:
        model_accepted = condition(
            MODEL_ACCEPTED, False, "WaitingForCluster", cluster_problem_message(problem, cluster)
        )
    elif (refused := not_synced_message(observed)) is not None:
        model_accepted = condition(MODEL_ACCEPTED, False, NOT_SYNCED, refused)
    elif accepted:
        model_accepted = condition(MODEL_ACCEPTED, True, "Accepted")
    else:
        model_accepted = condition(MODEL_ACCEPTED, False, "Deploying")
    if ready:
        model_ready = condition(MODEL_READY, True, "Serving")
    elif accepted:
        model_ready = condition(MODEL_READY, False, "ModelStarting")
    else:
        model_ready = condition(MODEL_READY, False, "WaitingForModel")
    return [model_accepted, model_ready]


def replica_events(
    problem: ClusterProblem | None,
    cluster: str,
    image: str,
    workloads_observed: bool,
) -> list[Event]:
    """The events of this reconcile."""
    if problem == "NoProviderConfig":
        return [Event("Normal", EVENT_WAITING_FOR_PROVIDER_CONFIG)]
    if problem is not None:
        return [Event("Normal", EVENT_WAITING_FOR_CLUSTER)]
    if not workloads_observed:
        return [Event("Normal", f"Composing {image} on {cluster}")]
    return []


def composite_ready(conditions: Iterable[Condition]) -> bool | None:
    """False (explicitly not ready) unless ModelReady is True; then Crossplane derives it."""
    return None if holds(conditions, MODEL_READY) else False
