"""Fill prefers clusters where the ModelCache is already staged, as a tie-break only."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import ModelCache
from modelplane.scheduling import CacheState, schedule
from modelplane.scheduling.model import cache_state

from .builders import cluster, deployment, gpu, model_cache, pool
from .test_properties import MANY, World, worlds

FLEET = [cluster(name, pool("h100", 1, gpu(8))) for name in ("a", "b", "c")]


def _warm(*names: str) -> CacheState:
    return CacheState.present(None, names)


def test_a_warm_cluster_wins_a_tie() -> None:
    d = deployment("chat", 1, cache="qwen")
    assert [p.cluster for p in schedule(d, FLEET, [], _warm(), []).replicas] == ["a"]
    warm = schedule(d, FLEET, [], _warm("c"), [])
    assert [p.cluster for p in warm.replicas] == ["c"]
    explain = {e.cluster: (e.reason, e.message) for e in warm.explain}
    assert explain["a"] == (
        "NotSelected",
        "eligible; the new replicas went to c (ModelCache qwen is already staged on c)",
    )


def test_spread_comes_before_the_cache() -> None:
    # Three replicas on three equal clusters: one each, warm or not.
    d = deployment("chat", 3, cache="qwen")
    placed = schedule(d, FLEET, [], _warm("c"), []).replicas
    assert sorted(p.cluster for p in placed) == ["a", "b", "c"]
    two = schedule(deployment("chat", 2, cache="qwen"), FLEET, [], _warm("b", "c"), [])
    assert sorted(p.cluster for p in two.replicas) == ["b", "c"]


def test_a_full_warm_cluster_does_not_stop_placement() -> None:
    full = [cluster("a", pool("h100", 1, gpu(8))), cluster("b", pool("h100", 1, gpu(0)))]
    placed = schedule(deployment("chat", 1, cache="qwen"), full, [], _warm("b"), []).replicas
    assert [p.cluster for p in placed] == ["a"]


def test_only_ready_entries_of_the_current_source_are_warm() -> None:
    raw = model_cache("qwen").to_wire()
    raw["status"] = {
        "clusters": [
            {"name": "a", "phase": "Ready", "source": "Qwen/Qwen3-8B@main", "layout": "HubCache"},
            {"name": "b", "phase": "Hydrating", "source": "Qwen/Qwen3-8B@main"},
            {"name": "c", "phase": "Ready", "source": "Qwen/Qwen3-8B@old", "layout": "HubCache"},
            # Staged flat by an earlier release: staged again before it counts.
            {"name": "d", "phase": "Ready", "source": "Qwen/Qwen3-8B@main"},
        ]
    }
    state = cache_state(deployment("chat", 1, cache="qwen"), [ModelCache.model_validate(raw)])
    assert state.warm == frozenset({"a"})


@MANY
@given(worlds(), st.randoms(use_true_random=False))
def test_the_preference_never_changes_how_many_replicas_are_placed(
    w: World, rnd: random.Random
) -> None:
    names = [c.metadata.name or "" for c in w.fleet]
    warm = [n for n in names if rnd.random() < 0.5]
    cold = schedule(w.deployment, w.fleet, [], CacheState.present(), w.others)
    hot = schedule(w.deployment, w.fleet, [], CacheState.present(None, warm), w.others)
    assert len(hot.replicas) == len(cold.replicas)
    # Spread is unchanged: the same number of new replicas per load level.
    assert sorted(_loads(hot)) == sorted(_loads(cold))


def _loads(s: object) -> list[int]:
    counts: dict[str, int] = {}
    for p in s.replicas:  # type: ignore[attr-defined]
        counts[p.cluster] = counts.get(p.cluster, 0) + 1
    return list(counts.values())
