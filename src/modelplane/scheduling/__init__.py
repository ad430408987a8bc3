"""The fleet scheduler (scheduling.md): a pure function from a deployment and the fleet to placements.

Public API:

- ``schedule(deployment, clusters, classes, cache, observed_replicas, occupancy=None) -> Schedule``
  (``occupancy``: what the clusters hold already, ``scheduling.occupancy``)
- ``schedule_all(deployments, clusters, classes, caches, observed_replicas) -> list[Scheduled]``
- ``replica_object(deployment, placement) -> ModelReplica``
- ``cache_state(deployment, caches) -> CacheState`` (local runs)
"""

from modelplane.api.meta import UNRESOLVED
from modelplane.scheduling.model import (
    CACHE_ABSENT,
    CACHE_NONE,
    CACHE_UNRESOLVED,
    CAPACITY_REASONS,
    CacheKind,
    CacheState,
    Clusters,
    EnginePlacement,
    ExplainEntry,
    HoldCause,
    MemberPlacement,
    Mode,
    Placement,
    Reason,
    ResolvedRequest,
    Schedule,
    Shortfall,
    Unfit,
    cache_state,
)
from modelplane.scheduling.replicas import identity, owns, replica_object
from modelplane.scheduling.scheduler import (
    Scheduled,
    deployment_key,
    first_compile_error,
    schedule,
    schedule_all,
)

__all__ = [
    "CACHE_ABSENT",
    "CAPACITY_REASONS",
    "CACHE_NONE",
    "CACHE_UNRESOLVED",
    "UNRESOLVED",
    "CacheKind",
    "CacheState",
    "Clusters",
    "EnginePlacement",
    "ExplainEntry",
    "HoldCause",
    "MemberPlacement",
    "Mode",
    "Placement",
    "Reason",
    "ResolvedRequest",
    "Schedule",
    "Scheduled",
    "Shortfall",
    "Unfit",
    "cache_state",
    "deployment_key",
    "first_compile_error",
    "identity",
    "owns",
    "replica_object",
    "schedule",
    "schedule_all",
]
