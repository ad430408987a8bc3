"""The TelemetryDestination and MetricMapping reconciles (docs/telemetry.md).

Pure. A destination composes nothing itself: each selected InferenceCluster's stack runs the
collector (``reconcile/stack.py``). It publishes which clusters send and whether each
cluster's collector is Ready, read from the cluster's ``status.stack``. A mapping publishes
that it is accepted; every cluster's collector renders it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from modelplane.api import InferenceCluster
from modelplane.api.meta import condition
from modelplane.api.metricmapping import MetricMapping, MetricMappingStatus
from modelplane.api.telemetrydestination import (
    DestinationCluster,
    TelemetryDestination,
    TelemetryDestinationStatus,
)
from modelplane.reconcile.result import ReconcileResult
from modelplane.stack.selection import selects

READY = "Ready"
COLLECTOR = "otel-collector"


@dataclass(frozen=True, slots=True)
class DestinationResult(ReconcileResult[TelemetryDestinationStatus]):
    """What one destination reconcile returns; ready: every selected collector is Ready."""


@dataclass(frozen=True, slots=True)
class MappingResult(ReconcileResult[MetricMappingStatus]):
    """What one mapping reconcile returns."""


def _collector(cluster: InferenceCluster) -> DestinationCluster:
    name = cluster.metadata.name or ""
    stack = cluster.status.stack if cluster.status is not None else None
    source = cluster.spec.cluster.source
    if source != "Existing":
        return DestinationCluster(
            name=name,
            ready=False,
            message=f"source {source} is not run by this project: no collector",
        )
    existing = cluster.spec.cluster.existing
    if existing is not None and existing.mode == "Provided":
        return DestinationCluster(
            name=name, ready=False, message="Provided cluster: the platform runs its collector"
        )
    item = next((i for i in (stack.items if stack else None) or () if i.name == COLLECTOR), None)
    if item is None:
        return DestinationCluster(name=name, ready=False, message="collector not reported yet")
    if item.phase == "Ready":
        return DestinationCluster(name=name, ready=True)
    message = f"collector {item.phase}" + (f": {item.message}" if item.message else "")
    return DestinationCluster(name=name, ready=False, message=message[:1024])


def reconcile_destination(
    destination: TelemetryDestination, clusters: Sequence[InferenceCluster]
) -> DestinationResult:
    """The clusters the destination selects, each with its collector's readiness."""
    chosen = sorted(
        (c for c in clusters if selects(destination, c.metadata.labels or {})),
        key=lambda c: c.metadata.name or "",
    )
    entries = tuple(_collector(c) for c in chosen)
    status = TelemetryDestinationStatus(clusters=entries)
    waiting = [e.name for e in entries if not e.ready]
    if not entries:
        ready = condition(READY, False, "NoClusters", "No InferenceCluster matches clusterSelector")
    elif waiting:
        ready = condition(
            READY, False, "CollectorsNotReady", "Collectors not Ready on " + ", ".join(waiting)
        )
    else:
        ready = condition(READY, True, "Sending", f"{len(entries)} cluster(s) sending")
    return DestinationResult([], status, [ready])


def reconcile_mapping(mapping: MetricMapping) -> MappingResult:
    """A mapping is accepted as written: the API already held every name to the vocabulary."""
    count = len(mapping.spec.metrics)
    ready = condition(READY, True, "Accepted", f"{count} rename(s) on every cluster's collector")
    return MappingResult([], MetricMappingStatus(), [ready])
