"""ModelCache staging in waves: at most MAX_STAGING clusters at once, bounded status."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api import InferenceCluster, ModelCache
from modelplane.api.modelcache import MAX_CACHE_CLUSTERS
from modelplane.composition.cache import KEY_DOWNLOAD, cache_names, owner_part, resource_key
from modelplane.reconcile.cache import MAX_NAMED, MAX_STAGING, CacheResult, reconcile_cache
from modelplane.runtime.wire import condition_wire, observed_objects

from .fleet import cache, cluster

SOURCE = "Qwen/Qwen3-8B@main"
WAITING = f"waiting for a staging slot: at most {MAX_STAGING} clusters stage at once"


def _names(count: int) -> list[str]:
    return [f"c{i:04d}" for i in range(count)]


def _clusters(names: list[str], tier: str = "gpu") -> list[InferenceCluster]:
    out = []
    for name in names:
        raw = cluster(name, labels={"tier": tier})
        raw["status"]["providerConfigRef"] = {"kind": "ClusterProviderConfig", "name": f"pc-{name}"}
        raw["spec"]["cluster"]["existing"]["cache"] = {"storageClassName": "rwx"}
        out.append(InferenceCluster.model_validate(raw))
    return out


def _cache(status: dict[str, Any] | None = None) -> ModelCache:
    raw = cache(match_labels={"tier": "gpu"})
    if status is not None:
        raw["status"] = status
    return ModelCache.model_validate(raw)


CACHE = _cache()
HF = CACHE.spec.hugging_face
assert HF is not None
JOB = cache_names(CACHE).job(HF)


def _object(remote: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": "x", "namespace": "ml-team"},
        "status": {
            "atProvider": {"manifest": remote},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _started(*names: str) -> dict[str, Any]:
    """The download owner observed (with its UID) on each cluster: its staging started."""
    return {
        resource_key(n, owner_part(HF)): _object({"metadata": {"name": JOB, "uid": f"uid-{n}"}})
        for n in names
    }


def _complete(*names: str) -> dict[str, Any]:
    """The download Job observed Complete on each cluster (its owner too)."""
    done = {"conditions": [{"type": "Complete", "status": "True"}]}
    jobs = {
        resource_key(n, KEY_DOWNLOAD): _object({"metadata": {"name": JOB}, "status": done})
        for n in names
    }
    return {**_started(*names), **jobs}


def _staging(result: CacheResult) -> list[str]:
    """The clusters whose download owner is composed: those holding a staging slot."""
    return [
        o.cluster
        for o in result.objects
        if o.object["spec"]["forProvider"]["manifest"]["kind"] == "ConfigMap"
    ]


def _phases(result: CacheResult) -> dict[str, str]:
    return {e.name: e.phase for e in result.status.clusters or ()}


def test_a_fresh_cache_stages_the_first_clusters_by_name_and_the_rest_wait() -> None:
    names = _names(MAX_STAGING + 8)
    result = reconcile_cache(CACHE, _clusters(names))
    assert _staging(result) == names[:MAX_STAGING]
    waiting = [e for e in result.status.clusters or () if e.name in names[MAX_STAGING:]]
    assert [(e.phase, e.message) for e in waiting] == [("Pending", WAITING)] * 8
    # A waiting cluster gets its PVC only.
    kinds = {
        o.object["spec"]["forProvider"]["manifest"]["kind"]
        for o in result.objects
        if o.cluster == names[-1]
    }
    assert kinds == {"PersistentVolumeClaim"}


def test_the_next_clusters_start_as_earlier_ones_complete() -> None:
    names = _names(MAX_STAGING + 8)
    observed = {**_started(*names[:MAX_STAGING]), **_complete(*names[:5])}
    result = reconcile_cache(CACHE, _clusters(names), observed_objects(observed))
    assert _staging(result) == names[5 : MAX_STAGING + 5]
    assert [_phases(result)[n] for n in names[:5]] == ["Ready"] * 5
    # Completed clusters are remembered Ready by the status alone, and stay out of the wave.
    again = reconcile_cache(
        _cache(result.status.to_wire()),
        _clusters(names),
        observed_objects(_started(*names[5 : MAX_STAGING + 5])),
    )
    assert _staging(again) == names[5 : MAX_STAGING + 5]
    assert again.status.to_wire()["summary"] == {"ready": f"5/{len(names)}"}


def test_a_cluster_leaving_the_footprint_frees_its_slot() -> None:
    names = _names(MAX_STAGING + 2)
    fleet = _clusters(names[1:]) + _clusters(names[:1], tier="cpu")
    result = reconcile_cache(CACHE, fleet, observed_objects(_started(*names[:MAX_STAGING])))
    assert _staging(result) == names[1 : MAX_STAGING + 1]
    assert names[0] not in _phases(result)


def test_started_clusters_keep_their_slot_over_earlier_names() -> None:
    names = _names(MAX_STAGING + 8)
    started = names[8:]
    result = reconcile_cache(CACHE, _clusters(names), observed_objects(_started(*started)))
    assert _staging(result) == started
    assert [_phases(result)[n] for n in names[:8]] == ["Pending"] * 8


def test_more_started_than_slots_is_cut_back_to_the_bound() -> None:
    # A cache composed before waves existed: every cluster started at once.
    names = _names(MAX_STAGING * 2)
    result = reconcile_cache(CACHE, _clusters(names), observed_objects(_started(*names)))
    assert _staging(result) == names[:MAX_STAGING]


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.sampled_from(["fresh", "started", "complete"]), min_size=1, max_size=60),
    st.randoms(use_true_random=False),
)
def test_never_more_than_the_bound_stage_and_the_wave_is_deterministic(
    states: list[str], rnd: Any
) -> None:
    names = _names(len(states))
    observed: dict[str, Any] = {}
    for name, state in zip(names, states, strict=True):
        if state == "started":
            observed |= _started(name)
        elif state == "complete":
            observed |= _complete(name)
    fleet = _clusters(names)
    result = reconcile_cache(CACHE, fleet, observed_objects(observed))
    staging = _staging(result)
    assert len(staging) <= MAX_STAGING
    shuffled = list(fleet)
    rnd.shuffle(shuffled)
    assert _staging(reconcile_cache(CACHE, shuffled, observed_objects(observed))) == staging
    # A free slot is never left while a cluster waits.
    waiting = [n for n, p in _phases(result).items() if p == "Pending" and n not in staging]
    assert not waiting or len(staging) == MAX_STAGING


def test_a_footprint_over_the_status_bound_keeps_a_bounded_list_and_a_summary() -> None:
    extra = 10
    names = _names(MAX_CACHE_CLUSTERS + extra)
    result = reconcile_cache(CACHE, _clusters(names))
    wire = result.status.to_wire()
    assert [e["name"] for e in wire["clusters"]] == names[:MAX_CACHE_CLUSTERS]
    assert wire["summary"] == {"ready": f"0/{len(names)}"}
    matched, artifact = (condition_wire(c) for c in result.conditions)
    assert matched["message"].endswith(
        f" and {MAX_CACHE_CLUSTERS - MAX_NAMED} more; {extra} more match but are not staged: "
        f"a cache stages on at most {MAX_CACHE_CLUSTERS} clusters"
    )
    assert len(artifact["message"]) < 1024
    assert {o.cluster for o in result.objects} == set(names[:MAX_CACHE_CLUSTERS])
    assert len(_staging(result)) == MAX_STAGING
    ModelCache.model_validate({**CACHE.to_wire(), "status": wire})  # within the XRD's bounds


def test_listed_clusters_keep_their_place_past_the_status_bound() -> None:
    names = _names(MAX_CACHE_CLUSTERS + 10)
    listed = names[10:]
    before = {
        "clusters": [
            {
                "name": n,
                "phase": "Ready",
                "message": "staged",
                "source": SOURCE,
                "layout": "HubCache",
            }
            for n in listed
        ]
    }
    result = reconcile_cache(_cache(before), _clusters(names))
    assert [e.name for e in result.status.clusters or ()] == listed
    assert _staging(result) == []
    assert result.status.to_wire()["summary"] == {"ready": f"{MAX_CACHE_CLUSTERS}/{len(names)}"}
    assert not result.ready
    artifact = condition_wire(result.conditions[1])
    assert (artifact["reason"], artifact["message"]) == (
        "Partial",
        f"{MAX_CACHE_CLUSTERS}/{len(names)} ready; 10 not staged",
    )
