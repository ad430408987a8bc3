"""The ModelCache reconcile: objects per cluster, per-cluster phases, conditions, events.

Pure: the cache, the fleet and the observed Objects in; desired objects, status and
events out. ``modelplane render`` and the Crossplane function run
this same code (docs/composition.md, caches; docs/api.md for the status fields). Each
cluster the cache stages on gets a Usage, so the cluster is not deleted under its weights
(docs/reconcile.md, "Deletion protection").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from modelplane.api import InferenceCluster, ModelCache
from modelplane.api.meta import Condition, condition, get_condition, holds, is_ready
from modelplane.api.modelcache import (
    HUB_CACHE_LAYOUT,
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
from modelplane.composition.conditions import ready_flag
from modelplane.composition.delivery import SUCCESSFUL_CREATE, readiness
from modelplane.composition.observed import NOTHING_OBSERVED, Observed, ObservedObject
from modelplane.composition.replica import derived_provider_config, provider_config_for
from modelplane.composition.types import ComposedObject, Json
from modelplane.composition.usage import cache_usage
from modelplane.events import Event
from modelplane.naming import cache_usage_key
from modelplane.scheduling.fleet import selector_mismatch

CLUSTERS_MATCHED = "ClustersMatched"
ARTIFACT_READY = "ArtifactReady"

# At most this many clusters of one cache stage at once (their download owner and Job
# composed); the others wait Pending with their PVC only and start, in name order, as
# earlier ones finish. It bounds the download load one cache puts on the model hub (32
# concurrent downloads of a model) and keeps the answer small: staging objects for 32
# clusters are about 150 kB, against Crossplane's 4 MiB receive limit
# (docs/composition.md, "Staging in waves").
MAX_STAGING = 32
# A condition message names at most this many clusters, then counts the rest.
MAX_NAMED = 20


@dataclass(frozen=True, slots=True)
class CacheObject(ComposedObject):
    """A desired provider-kubernetes Object that also names its cluster (render groups by it)."""

    cluster: str = ""


@dataclass(frozen=True, slots=True)
class CacheResult:
    """What one reconcile of a ModelCache yields."""

    objects: list[CacheObject]  # the staging Objects, delivered to each cluster
    status: ModelCacheStatus  # summary and clusters (conditions are separate, as for every kind)
    conditions: list[Condition]
    events: list[Event] = field(default_factory=list)
    ready: bool = False
    # One Usage per cluster with staging Objects, on the control plane, in cluster order.
    usages: list[CacheObject] = field(default_factory=list)


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
    started: bool = False  # its download owner is observed: it holds a staging slot

    @property
    def staging(self) -> bool:
        """It asks for a staging slot (its owner and Job composed)."""
        return self.stage is not None and self.stage.download


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
    if (
        before is not None
        and before.phase == "Ready"
        and before.source == source
        and before.layout == HUB_CACHE_LAYOUT
    ):
        # Staged: the Job and its owner are gone (or going); only the PVC stays. An entry
        # without the layout was staged flat by an earlier release: staged again.
        return _Site("Ready", f"{source} staged in PVC {names.pvc}", Stage(False))
    job = _remote(observed.get(resource_key(name, KEY_DOWNLOAD)), names.job(hf))
    if holds(job.conditions, "Complete") or holds(job.conditions, "SuccessCriteriaMet"):
        return _Site("Ready", f"{source} staged in PVC {names.pvc}", Stage(False))
    # The Job is composed only once its owner's UID is known, so that it never runs
    # unowned (docs/composition.md, "What a ModelCache composes").
    owner_object = observed.get(resource_key(name, owner_part(hf)))
    owner = _remote(owner_object, names.job(hf))
    stage = Stage(True, owner.uid)
    started = owner_object is not None
    failed = get_condition(job.conditions, "Failed")
    if failed.status == "True":
        why = failed.message or failed.reason or "failed"
        return _Site("Failed", f"download Job {names.job(hf)} failed: {why}", stage, started)
    pvc = _remote(observed.get(resource_key(name, KEY_PVC)), names.pvc)
    if job.active or pvc.phase == "Bound":
        return _Site("Hydrating", f"downloading {source} into PVC {names.pvc}", stage, started)
    return _Site("Pending", f"waiting for PVC {names.pvc} and download Job", stage, started)


WAITING = _Site(
    "Pending",
    f"waiting for a staging slot: at most {MAX_STAGING} clusters stage at once",
    Stage(False),
)


def _waves(sites: dict[str, _Site]) -> dict[str, _Site]:
    """At most ``MAX_STAGING`` clusters staging; the rest wait with their PVC only.

    Clusters already started (their owner observed) keep their slot, so a running download
    is never interrupted by a cluster that sorts before it; free slots go to the others in
    name order. Pure and deterministic: the same sites always give the same wave. A cluster
    that finishes (Ready) or leaves the footprint frees its slot in the same reconcile.
    """
    asking = [name for name in sorted(sites) if sites[name].staging]
    order = [n for n in asking if sites[n].started] + [n for n in asking if not sites[n].started]
    waiting = set(order[MAX_STAGING:])
    return {name: WAITING if name in waiting else site for name, site in sites.items()}


def _bounded_footprint(
    cache: ModelCache, footprint: list[InferenceCluster]
) -> list[InferenceCluster]:
    """At most ``MAX_CACHE_CLUSTERS`` clusters, those already in the status first.

    The status lists each staged cluster (it is how Ready is remembered), and the XRD bounds
    that list; past the bound, clusters already listed keep their place and new ones are
    not staged (the conditions and the summary count them), so the answer stays bounded.
    """
    if len(footprint) <= MAX_CACHE_CLUSTERS:
        return footprint
    known = set(_previous(cache))
    listed = [c for c in footprint if c.metadata.name in known]
    others = [c for c in footprint if c.metadata.name not in known]
    chosen = (listed + others)[:MAX_CACHE_CLUSTERS]
    return sorted(chosen, key=lambda c: c.metadata.name or "")


def _names(names: list[str]) -> str:
    """Names for a condition message: the first ``MAX_NAMED``, then a count of the rest."""
    if len(names) <= MAX_NAMED:
        return ", ".join(names)
    return ", ".join(names[:MAX_NAMED]) + f" and {len(names) - MAX_NAMED} more"


def _conditions(entries: list[CacheClusterStatus], unlisted: int) -> list[Condition]:
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
    message = "clusters: " + _names([e.name for e in entries])
    if unlisted:
        message += (
            f"; {unlisted} more match but are not staged: a cache stages on at most "
            f"{MAX_CACHE_CLUSTERS} clusters"
        )
    matched = condition(CLUSTERS_MATCHED, True, "Matched", message)
    return [matched, _artifact(entries, unlisted)]


def _artifact(entries: list[CacheClusterStatus], unlisted: int) -> Condition:
    ready = [e.name for e in entries if e.phase == "Ready"]
    total = len(entries) + unlisted
    if len(ready) == total:
        return condition(ARTIFACT_READY, True, "Staged", "staged on " + _names(ready))
    failed = [e.name for e in entries if e.phase == "Failed"]
    if failed:
        return condition(ARTIFACT_READY, False, "Failed", "failed on " + _names(failed))
    pending = [e.name for e in entries if e.phase != "Ready"]
    # Every listed cluster staged, yet more match: those past the bound are never staged.
    rest = f"staging on {_names(pending)}" if pending else f"{unlisted} not staged"
    if ready:
        return condition(ARTIFACT_READY, False, "Partial", f"{len(ready)}/{total} ready; {rest}")
    waiting = _names(pending)
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
    """Compose the cache on its footprint, in waves, and compute its status.

    At most ``MAX_CACHE_CLUSTERS`` clusters are staged on, at most ``MAX_STAGING`` of them
    at once (``_waves``), so the answer is bounded whatever the fleet.

    ``observed`` maps resource keys to observed provider-kubernetes Objects (their views).
    With ``derive_provider_config`` (local ``render``) a cluster without
    ``status.providerConfigRef`` gets the derived one, as for replicas.
    """
    seen: Observed = observed or {}
    hf = cache.spec.hugging_face
    assert hf is not None  # MC-01
    source = source_of(hf)
    footprint = cache_footprint(cache, clusters)
    staged = _bounded_footprint(cache, footprint)
    providers: dict[str, tuple[str, str] | None] = {}
    sites: dict[str, _Site] = {}
    for cluster in staged:
        name = cluster.metadata.name or ""
        provider = provider_config_for(cluster)
        if provider is None and derive_provider_config:
            provider = derived_provider_config(cluster)
        providers[name] = provider
        sites[name] = _site(cache, cluster, seen, provider)
    sites = _waves(sites)
    objects: list[CacheObject] = []
    usages: list[CacheObject] = []
    entries: list[CacheClusterStatus] = []
    for cluster in staged:
        name = cluster.metadata.name or ""
        site, provider = sites[name], providers[name]
        entries.append(
            CacheClusterStatus(
                name=name,
                phase=site.phase,
                message=_bounded(site.message),
                source=source,
                layout=HUB_CACHE_LAYOUT,
            )
        )
        storage_class = cache_storage_class(cluster)
        if site.stage is None or provider is None or storage_class is None:
            continue
        # The cluster holds (or is getting) the weights while its staging is composed.
        key = cache_usage_key(name)
        usage = cache_usage(cache, name).to_wire()
        usages.append(
            CacheObject(key, usage, ready_flag(SUCCESSFUL_CREATE, seen.get(key)), cluster=name)
        )
        for key, obj in cache_objects(cache, name, provider, storage_class, site.stage):
            manifest = obj["spec"]["forProvider"]["manifest"]
            objects.append(
                CacheObject(key, obj, _ready_flag(manifest, seen.get(key)), cluster=name)
            )
    ready = sum(1 for e in entries if e.phase == "Ready")
    unlisted = len(footprint) - len(staged)
    status = ModelCacheStatus(
        # The summary counts every matching cluster; the list (bounded by the XRD) names
        # those the cache is staged on.
        summary=CacheSummary(ready=f"{ready}/{len(footprint)}"),
        clusters=tuple(entries),
    )
    return CacheResult(
        objects=objects,
        status=status,
        conditions=_conditions(entries, unlisted),
        events=_events(cache, entries),
        ready=bool(entries) and ready == len(footprint),
        usages=usages,
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
