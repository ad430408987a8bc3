"""The ModelCache reconcile: objects per cluster, per-cluster phases, conditions, events.

Pure: the cache, the fleet and the observed Objects in; desired objects, status and
events out. ``modelplane render`` and the Crossplane function run
this same code (docs/composition.md, caches; docs/api.md for the status fields).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from modelplane.api import InferenceCluster, ModelCache
from modelplane.api.meta import Condition, condition, get_condition, holds, is_ready
from modelplane.api.modelcache import (
    MAX_CACHE_CLUSTERS,
    MAX_CACHE_MESSAGE,
    CacheClusterStatus,
    CachePhase,
    CacheSummary,
    ModelCacheStatus,
)
from modelplane.composition.cache import (
    KEY_DOWNLOAD,
    KEY_PVC,
    Stage,
    cache_names,
    cache_objects,
    cache_storage_class,
    owner_part,
    resource_key,
    source_of,
)
from modelplane.composition.delivery import readiness
from modelplane.composition.observed import NOTHING_OBSERVED, Observed, ObservedObject
from modelplane.composition.replica import derived_provider_config, provider_config_for
from modelplane.composition.types import ComposedObject, Json
from modelplane.events import Event
from modelplane.scheduling.fleet import selector_mismatch

CLUSTERS_MATCHED = "ClustersMatched"
ARTIFACT_READY = "ArtifactReady"


@dataclass(frozen=True, slots=True)
class CacheObject(ComposedObject):
    """A desired provider-kubernetes Object that also names its cluster (render groups by it)."""

    cluster: str = ""


@dataclass(frozen=True, slots=True)
class CacheResult:
    """What one reconcile of a ModelCache yields."""

    objects: list[CacheObject]
    status: ModelCacheStatus  # summary and clusters (conditions are separate, as for every kind)
    conditions: list[Condition]
    events: list[Event] = field(default_factory=list)
    ready: bool = False


def cache_footprint(
    cache: ModelCache, clusters: Sequence[InferenceCluster]
) -> list[InferenceCluster]:
    """The clusters the cache is staged on, by name.

    Those matching ``clusterSelector`` (absent: every cluster) that are Ready, plus those
    already in ``status.clusters``: a cluster that blips NotReady keeps its weights.
    """
    selector = (
        dict(cache.spec.cluster_selector.match_labels or {}) if cache.spec.cluster_selector else {}
    )
    known = {entry.name for entry in _previous(cache).values()}
    chosen = [
        c
        for c in clusters
        if selector_mismatch(c.metadata.labels or {}, selector) is None
        and (is_ready(c.status) or c.metadata.name in known)
    ]
    return sorted(chosen, key=lambda c: c.metadata.name or "")


def _previous(cache: ModelCache) -> dict[str, CacheClusterStatus]:
    entries = cache.status.clusters if cache.status is not None else None
    return {e.name: e for e in entries or ()}


def _remote(observed: ObservedObject | None, name: str) -> ObservedObject:
    """The remote object ``name`` an observed Object reports (``status.atProvider.manifest``).

    Empty when the Object still reports another object (a Job of the previous source,
    before the provider has replaced it), so an old Job's completion never reads as the
    new source staged.
    """
    remote = observed.remote if observed is not None else None
    return remote if remote is not None and remote.name == name else NOTHING_OBSERVED


@dataclass(frozen=True, slots=True)
class _Site:
    phase: CachePhase
    message: str
    stage: Stage | None  # None: nothing composed on this cluster


def _site(
    cache: ModelCache,
    cluster: InferenceCluster,
    observed: Observed,
    provider: tuple[str, str] | None,
) -> _Site:
    """The phase of the cache on one cluster and what to compose there."""
    name = cluster.metadata.name or ""
    hf = cache.spec.hugging_face
    assert hf is not None
    source = source_of(hf)
    names = cache_names(cache)
    if cache_storage_class(cluster) is None:
        return _Site(
            "Failed",
            f"InferenceCluster {name} has no cache storage class: set "
            "spec.cluster.existing.cache.storageClassName or publish status.cache.storageClassName",
            None,
        )
    if provider is None:
        return _Site("Pending", f"InferenceCluster {name} publishes no providerConfigRef yet", None)
    before = _previous(cache).get(name)
    if before is not None and before.phase == "Ready" and before.source == source:
        # Staged: the Job and its owner are gone (or going); only the PVC stays.
        return _Site("Ready", f"{source} staged in PVC {names.pvc}", Stage(False))
    job = _remote(observed.get(resource_key(name, KEY_DOWNLOAD)), names.job(hf))
    if holds(job.conditions, "Complete") or holds(job.conditions, "SuccessCriteriaMet"):
        return _Site("Ready", f"{source} staged in PVC {names.pvc}", Stage(False))
    # The Job is composed only once its owner's UID is known, so that it never runs
    # unowned (docs/composition.md, "What a ModelCache composes").
    owner = _remote(observed.get(resource_key(name, owner_part(hf))), names.job(hf))
    stage = Stage(True, owner.uid)
    failed = get_condition(job.conditions, "Failed")
    if failed.status == "True":
        why = failed.message or failed.reason or "failed"
        return _Site("Failed", f"download Job {names.job(hf)} failed: {why}", stage)
    pvc = _remote(observed.get(resource_key(name, KEY_PVC)), names.pvc)
    if job.active or pvc.phase == "Bound":
        return _Site("Hydrating", f"downloading {source} into PVC {names.pvc}", stage)
    return _Site("Pending", f"waiting for PVC {names.pvc} and download Job", stage)


def _conditions(entries: list[CacheClusterStatus]) -> list[Condition]:
    if not entries:
        return [
            condition(
                CLUSTERS_MATCHED,
                False,
                "NoClusters",
                "no Ready InferenceCluster matches the clusterSelector",
            ),
            condition(ARTIFACT_READY, False, "NoClusters", "not staged anywhere"),
        ]
    names = ", ".join(e.name for e in entries)
    matched = condition(CLUSTERS_MATCHED, True, "Matched", f"clusters: {names}")
    return [matched, _artifact(entries)]


def _artifact(entries: list[CacheClusterStatus]) -> Condition:
    ready = [e.name for e in entries if e.phase == "Ready"]
    if len(ready) == len(entries):
        return condition(ARTIFACT_READY, True, "Staged", "staged on " + ", ".join(ready))
    failed = [e.name for e in entries if e.phase == "Failed"]
    if failed:
        return condition(ARTIFACT_READY, False, "Failed", "failed on " + ", ".join(failed))
    waiting = ", ".join(e.name for e in entries if e.phase != "Ready")
    if ready:
        return condition(
            ARTIFACT_READY,
            False,
            "Partial",
            f"{len(ready)}/{len(entries)} ready; staging on {waiting}",
        )
    return condition(ARTIFACT_READY, False, "Hydrating", f"staging on {waiting}")


def _events(cache: ModelCache, entries: list[CacheClusterStatus]) -> list[Event]:
    """Events on transitions only, so that repeated reconciles do not repeat them."""
    before = _previous(cache)
    hf = cache.spec.hugging_face
    source = source_of(hf) if hf is not None else ""
    events: list[Event] = []
    for entry in entries:
        old = before.get(entry.name)
        was = old.phase if old is not None and old.source == entry.source else None
        if entry.phase == was:
            continue
        if entry.phase == "Hydrating":
            events.append(Event("Normal", f"Staging {source} on cluster {entry.name}"))
        elif entry.phase == "Ready":
            events.append(Event("Normal", f"Staged {source} on cluster {entry.name}"))
        elif entry.phase == "Failed":
            events.append(
                Event("Warning", f"Staging on cluster {entry.name} failed: {entry.message}")
            )
    return events


def reconcile_cache(
    cache: ModelCache,
    clusters: Sequence[InferenceCluster],
    observed: Observed | None = None,
    *,
    derive_provider_config: bool = False,
) -> CacheResult:
    """Compose the cache on every cluster of its footprint and compute its status.

    ``observed`` maps resource keys to observed provider-kubernetes Objects (their views).
    With ``derive_provider_config`` (local ``render``) a cluster without
    ``status.providerConfigRef`` gets the derived one, as for replicas.
    """
    seen: Observed = observed or {}
    hf = cache.spec.hugging_face
    assert hf is not None  # MC-01
    source = source_of(hf)
    objects: list[CacheObject] = []
    entries: list[CacheClusterStatus] = []
    for cluster in cache_footprint(cache, clusters):
        name = cluster.metadata.name or ""
        provider = provider_config_for(cluster)
        if provider is None and derive_provider_config:
            provider = derived_provider_config(cluster)
        site = _site(cache, cluster, seen, provider)
        entries.append(
            CacheClusterStatus(
                name=name, phase=site.phase, message=_bounded(site.message), source=source
            )
        )
        storage_class = cache_storage_class(cluster)
        if site.stage is None or provider is None or storage_class is None:
            continue
        for key, obj in cache_objects(cache, name, provider, storage_class, site.stage):
            manifest = obj["spec"]["forProvider"]["manifest"]
            objects.append(
                CacheObject(key, obj, _ready_flag(manifest, seen.get(key)), cluster=name)
            )
    ready = sum(1 for e in entries if e.phase == "Ready")
    status = ModelCacheStatus(
        summary=CacheSummary(ready=f"{ready}/{len(entries)}"),
        # The XRD bounds the list: beyond it (a footprint over 1024 clusters) the summary
        # still counts every cluster, the list names the first ones by name.
        clusters=tuple(entries[:MAX_CACHE_CLUSTERS]),
    )
    return CacheResult(
        objects=objects,
        status=status,
        conditions=_conditions(entries),
        events=_events(cache, entries),
        ready=bool(entries) and ready == len(entries),
    )


def _bounded(message: str) -> str:
    """A message within the status bound (a Job's condition message is remote text)."""
    if len(message) <= MAX_CACHE_MESSAGE:
        return message
    return message[: MAX_CACHE_MESSAGE - 3] + "..."


def _ready_flag(manifest: Json, observed: ObservedObject | None) -> bool | None:
    """True once the Object is observed Ready (or created, for SuccessfulCreate)."""
    if observed is None:
        return None
    if readiness(manifest)["policy"] == "SuccessfulCreate":
        return True
    return True if holds(observed.conditions, "Ready") else None
