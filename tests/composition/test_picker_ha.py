"""Two pickers per replica (docs/composition.md, "Two pickers per replica").

The upstream facts, read at the tags named:

- llm-d/llm-d-router v0.10.0 ``pkg/epp/server/options.go``: ``--ha-enable-leader-election``
  (default off) makes readiness pass only on the leader (``cmd/epp/runner/health.go``);
  ``config/charts/README.md`` and ``llm-d-router/docs/operations.md``: with it off every replica serves
  (active-active), and each keeps its own approximate prefix state.
- kubernetes/api v0.34.10 ``policy/v1/types.go``: with ``maxUnavailable`` "an eviction is
  allowed if at most maxUnavailable pods selected by selector are unavailable after the
  eviction"; ``AlwaysAllow`` lets running pods that are not Ready be evicted whatever the
  budget, while healthy pods stay subject to it. The disruption controller computes it as
  ``disruptionsAllowed = currentHealthy - (expectedPods - maxUnavailable)``, at least 0
  (kubernetes/kubernetes ``pkg/controller/disruption/disruption.go``, ``updatePdbStatus``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from modelplane.composition import compose_replica
from modelplane.composition.picker import (
    PICKER_MAX_SURGE,
    PICKER_MAX_UNAVAILABLE,
    PICKER_REPLICAS,
)

from .builders import cluster, manifests, on_cluster, replica, standalone_engine, user_picker
from .schemas import validate_delivered, validate_manifest

Json = dict[str, Any]


def _user() -> Json:
    rep = replica(
        serving={"mode": "Unified", "router": "EndpointPicker", "endpointPicker": user_picker()}
    )
    return manifests(compose_replica(rep, cluster()))


PICKERS = {"default": lambda: manifests(compose_replica(replica(), cluster())), "user": _user}


def _matches(selector: Json, labels: Json) -> bool:
    return all(labels.get(k) == v for k, v in selector["matchLabels"].items())


def test_every_picker_runs_two_copies_rolled_one_at_a_time() -> None:
    assert PICKER_REPLICAS == 2
    for which, objs in ((k, f()) for k, f in PICKERS.items()):
        spec = objs["epp"]["spec"]
        assert spec["replicas"] == PICKER_REPLICAS, which
        assert spec["strategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1},
        }, which
        # The Deployment controller keeps spec.replicas - maxUnavailable available through a
        # rollout (apps/v1 RollingUpdateDeployment): one picker, never none.
        assert PICKER_REPLICAS - PICKER_MAX_UNAVAILABLE >= 1
        assert PICKER_MAX_SURGE == 1


def test_the_pickers_prefer_different_nodes_by_their_own_labels() -> None:
    for which, objs in ((k, f()) for k, f in PICKERS.items()):
        deployment = objs["epp"]["spec"]
        affinity = deployment["template"]["spec"]["affinity"]
        # Preferred: a one-node cluster still runs both (the budget alone protects a drain).
        assert set(affinity) == {"podAntiAffinity"}
        assert set(affinity["podAntiAffinity"]) == {
            "preferredDuringSchedulingIgnoredDuringExecution"
        }, which
        (term,) = affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        assert term["weight"] == 100
        assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
        selector = term["podAffinityTerm"]["labelSelector"]
        assert selector == deployment["selector"], which
        assert _matches(selector, deployment["template"]["metadata"]["labels"])


def test_the_default_picker_serves_on_every_copy() -> None:
    # Leader election off: every copy is Ready and serves. The release's flag is on only
    # when passed (options.go); with it, readiness passes on the leader alone (health.go).
    container = PICKERS["default"]()["epp"]["spec"]["template"]["spec"]["containers"][0]
    assert "--ha-enable-leader-election=false" in container["args"]
    assert container["readinessProbe"]["grpc"]["service"] == "inference-extension"


def test_the_budget_is_a_valid_policy_v1_object_delivered_like_the_others() -> None:
    composed = compose_replica(replica(), cluster())
    objs = manifests(composed)
    keys = list(objs)
    assert keys[keys.index("epp") + 1] == "epp-disruption-budget"
    budget = objs["epp-disruption-budget"]
    validate_manifest(budget)  # kubernetes-validate, strict, every version from 1.34
    assert budget["apiVersion"] == "policy/v1"
    assert budget["metadata"] == objs["epp"]["metadata"]
    assert budget["spec"] == {
        "maxUnavailable": PICKER_MAX_UNAVAILABLE,
        "selector": objs["epp"]["spec"]["selector"],
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    }
    delivered = next(o.object for o in composed.objects if o.key == "epp-disruption-budget")
    validate_delivered(delivered)
    assert delivered["spec"]["readiness"] == {"policy": "SuccessfulCreate"}
    assert "watch" not in delivered["spec"]


def test_the_budget_selects_exactly_the_replicas_pickers() -> None:
    objs = on_cluster(compose_replica(replica([standalone_engine(copies=2)]), cluster()))
    other = manifests(compose_replica(replica(name="qwen3-8b-13bc2"), cluster()))
    selector = objs["epp-disruption-budget"]["spec"]["selector"]
    picker_pods = objs["epp"]["spec"]["template"]["metadata"]["labels"]
    assert selector == objs["epp"]["spec"]["selector"]
    assert _matches(selector, picker_pods)
    # Not the engine's pods, nor another replica's pickers in the same namespace.
    engine_pods = objs["model-serving-qwen3-8b"]["spec"]["template"]["metadata"]["labels"]
    assert not _matches(selector, engine_pods)
    assert not _matches(selector, other["epp"]["spec"]["template"]["metadata"]["labels"])
    assert objs["epp-service"]["spec"]["selector"] == selector["matchLabels"]


# The drain, modelled on the policy/v1 semantics above.


@dataclass(frozen=True, slots=True)
class Picker:
    node: int
    ready: bool


def _disruptions_allowed(pickers: tuple[Picker, ...], max_unavailable: int) -> int:
    """updatePdbStatus: currentHealthy - desiredHealthy, at least 0."""
    expected = PICKER_REPLICAS  # the Deployment's scale
    allowed = sum(p.ready for p in pickers) - (expected - max_unavailable)
    return allowed if expected > 0 and allowed > 0 else 0


def _evictable(pickers: tuple[Picker, ...], target: Picker, budget: Json) -> bool:
    if not target.ready and budget["unhealthyPodEvictionPolicy"] == "AlwaysAllow":
        return True
    return _disruptions_allowed(pickers, budget["maxUnavailable"]) > 0


def _drain(
    pickers: tuple[Picker, ...], node: int, nodes: int, budget: Json
) -> tuple[list[int], bool]:
    """``kubectl drain``: evict every picker on ``node`` (each step, the first one the API
    server admits), retrying refusals, while the Deployment replaces each evicted one on
    another schedulable node, Ready a step later. Returns the Ready count after every step
    and whether the node was emptied."""
    ready_counts = []
    for _ in range(8):
        on_node = [p for p in pickers if p.node == node]
        if not on_node:
            return ready_counts, True
        # Replacements scheduled on the other nodes turn Ready.
        pickers = tuple(p if p.node == node else replace(p, ready=True) for p in pickers)
        admitted = [p for p in on_node if _evictable(pickers, p, budget)]
        if admitted:
            target = admitted[0]
            rest = list(pickers)
            rest.remove(target)
            others = [n for n in range(nodes) if n != node]
            if others:  # the replacement lands elsewhere; a cordoned node takes none
                rest.append(Picker(others[0], ready=False))
            pickers = tuple(rest)
        ready_counts.append(sum(p.ready for p in pickers))
    return ready_counts, False


@given(
    nodes=st.integers(min_value=1, max_value=3),
    placement=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    ready=st.tuples(st.booleans(), st.booleans()),
)
def test_a_drain_takes_at_most_one_of_the_two_pickers(
    nodes: int, placement: tuple[int, int], ready: tuple[bool, bool]
) -> None:
    budget = PICKERS["default"]()["epp-disruption-budget"]["spec"]
    pickers = tuple(Picker(n % nodes, r) for n, r in zip(placement, ready, strict=True))
    before = sum(p.ready for p in pickers)
    counts, emptied = _drain(pickers, pickers[0].node, nodes, budget)
    # Never fewer Ready pickers than one, once there was one: at most one is evicted
    # while the other serves.
    assert all(c >= min(before, 1) for c in counts)
    if nodes > 1:
        # Another node to go to: the drain finishes, unready pickers never block it.
        assert emptied
    elif before == 2:
        # One node, both Ready: the drain evicts one and holds the other.
        assert counts[-1] == 1 and not emptied


def test_both_pickers_on_one_draining_node_leave_one_at_a_time() -> None:
    budget = PICKERS["default"]()["epp-disruption-budget"]["spec"]
    both = (Picker(0, True), Picker(0, True))
    assert _disruptions_allowed(both, budget["maxUnavailable"]) == 1
    one_gone = (Picker(0, True), Picker(1, False))  # the replacement not Ready yet
    assert not _evictable(one_gone, one_gone[0], budget)
    counts, emptied = _drain(both, 0, 2, budget)
    assert emptied and min(counts) == 1
