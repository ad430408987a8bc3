"""ModelReplica conditions, events and readiness (docs/reconcile.md, "ModelReplica conditions").
Pure functions of observed state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from modelplane.api.meta import Condition, condition
from modelplane.composition.delivery import DERIVE_FROM_CEL, SUCCESSFUL_CREATE
from modelplane.composition.types import Json
from modelplane.events import Event

MODEL_ACCEPTED = "ModelAccepted"
MODEL_READY = "ModelReady"

# Why a replica's cluster is unresolved, in the table's order.
ClusterProblem = Literal["NotFetched", "NotFound", "NoProviderConfig"]

EVENT_WAITING_FOR_CLUSTER = "Waiting for cluster to be resolved"
EVENT_WAITING_FOR_PROVIDER_CONFIG = "Waiting for cluster providerConfigRef"


def _get(obj: object, *path: str) -> object:
    for part in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


def observed_ready(obj: Json | None) -> bool:
    """The observed Object has condition ``Ready`` = ``True``."""
    conditions = _get(obj, "status", "conditions")
    if not isinstance(conditions, list):
        return False
    return any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions
    )


def observed_accepted(obj: Json | None) -> bool:
    """The provider has seen the remote object: a non-empty ``status.atProvider.manifest``."""
    return bool(_get(obj, "status", "atProvider", "manifest"))


def readiness_policy(obj: Json | None) -> str:
    """An Object's readiness policy; the CRD defaults it to SuccessfulCreate."""
    policy = _get(obj, "spec", "readiness", "policy")
    return policy if isinstance(policy, str) else SUCCESSFUL_CREATE


def ready_flag(policy: str, observed: Json | None) -> bool | None:
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
    observed: Mapping[str, Json],
    problem: ClusterProblem | None,
    cluster: str,
) -> list[Condition]:
    """``ModelAccepted`` then ``ModelReady``, computed from the observed workloads."""
    workloads = [observed.get(k) for k in workload_keys]
    accepted = bool(workloads) and all(observed_accepted(w) for w in workloads)
    ready = bool(workloads) and all(observed_ready(w) for w in workloads)
    if problem is not None:
        model_accepted = condition(
            MODEL_ACCEPTED, False, "WaitingForCluster", cluster_problem_message(problem, cluster)
        )
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
    model_ready = next((c for c in conditions if c.type == MODEL_READY), None)
    if model_ready is not None and model_ready.status == "True":
        return None
    return False
