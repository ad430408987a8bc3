"""Capacity accounting by runs of identical nodes (docs/scheduling.md, "Rules we had to decide").

The run-length PoolState must give exactly the placements of the per-node first-fit model (kept here
as the reference), and its cost must not grow with a pool's node count.
"""

from __future__ import annotations

import tracemalloc
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api.inferencecluster import MAX_POOL_NODES
from modelplane.api.validation import validate_document
from modelplane.scheduling import CacheState, schedule
from modelplane.scheduling.capacity import Demand, PoolState
from modelplane.scheduling.fleet import cluster_view
from tests.builders import cluster_status, gpu_pool, inference_cluster

from .builders import cluster, deployment, engine, gpu, member, pool, request


def _reference_pack(nodes: list[list[int]], demand: Demand, pods: int) -> bool:
    """The per-node first-fit model, one list per node (the model before runs of nodes)."""
    if not demand or pods <= 0:
        return True
    node = 0
    for _ in range(pods):
        while node < len(nodes) and not all(nodes[node][j] >= n for j, n in demand):
            node += 1
        if node == len(nodes):
            return False
        for j, n in demand:
            nodes[node][j] -= n
    return True


def _expand(state: PoolState) -> list[list[int]]:
    return [list(free) for free, count in state.runs for _ in range(count)]


_DEVICES = 3
_vector = st.tuples(*[st.integers(0, 8)] * _DEVICES)
_runs = st.lists(st.tuples(_vector, st.integers(1, 5)), max_size=5)
_demand = st.dictionaries(st.integers(0, _DEVICES - 1), st.integers(1, 4), min_size=1).map(
    lambda d: tuple(sorted(d.items()))
)
_packs = st.lists(st.tuples(_demand, st.integers(0, 12)), min_size=1, max_size=8)


@settings(max_examples=400, deadline=None)
@given(_runs, _packs)
def test_runs_pack_exactly_like_the_per_node_model(
    runs: list[tuple[tuple[int, ...], int]], packs: list[tuple[Demand, int]]
) -> None:
    state = PoolState(list(runs))
    nodes = _expand(state)
    for demand, pods in packs:
        trial = state.copy()
        assert trial.pack(demand, pods) == _reference_pack(nodes, demand, pods)
        state = trial
        # Same free vector on every node, in node order, partial charges included.
        assert _expand(state) == nodes
        assert state.node_count == len(nodes)
        assert state.nodes(4) == [tuple(n) for n in nodes[:4]]
    # Each pack splits at most one run into three: the state grows with packs, not nodes.
    assert len(state.runs) <= len(runs) + 2 * len(packs)


@settings(max_examples=400, deadline=None)
@given(_runs, _demand, st.lists(st.integers(0, 12), min_size=1, max_size=6))
def test_identical_pods_packed_together_leave_what_packed_one_charge_at_a_time_leaves(
    runs: list[tuple[tuple[int, ...], int]], demand: Demand, charges: list[int]
) -> None:
    """First fit puts each identical pod on the first node with room: charges of one
    demand packed in turn (a pool closed at the first that does not fit, as the ledger
    closes it) leave the pool as their sum packed at once (Ledger.charge_all_observed)."""
    alone = PoolState(list(runs))
    for pods in charges:
        if not alone.pack(demand, pods):
            alone.closed = True
    together = PoolState(list(runs))
    if not together.pack(demand, sum(charges)):
        together.closed = True
    assert (together.runs, together.closed) == (alone.runs, alone.closed)


def test_a_pack_adds_at_most_two_runs() -> None:
    # 100,000 fresh nodes are one run; a partial charge splits it into three, no more.
    state = PoolState([((8,), 100_000)])
    assert state.pack(((0, 3),), 5)  # two pods per node: nodes 0-1 full (2 left), node 2 at 5
    assert state.runs == [((2,), 2), ((5,), 1), ((8,), 99_997)]
    assert state.pack(((0, 8),), 99_997)
    assert state.runs == [((2,), 2), ((5,), 1), ((0,), 99_997)]
    assert not state.pack(((0, 3),), 2)  # one pod fits node 2; the second fits nowhere
    assert state.runs == [((2,), 3), ((0,), 99_997)]


def _fleet(nodes: int) -> list[object]:
    return [
        cluster("a", pool("h100", nodes, gpu(8))),
        cluster("b", pool("h100", nodes, gpu(8)), pool("l4", nodes, gpu(4, name="l4"))),
    ]


def _placements_and_peak(nodes: int) -> tuple[list[tuple[str, ...]], int]:
    d = deployment("chat", 6, engine("e", member("Standalone", request("gpu", 3))))
    clusters = _fleet(nodes)
    schedule(
        d, clusters, [], CacheState.present(None, ()), []
    )  # warm the memo caches so both runs measure alike
    tracemalloc.start()
    try:
        result = schedule(d, clusters, [], CacheState.present(None, ()), [])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return [(p.cluster,) for p in result.replicas], peak


def test_scheduling_memory_does_not_grow_with_node_count() -> None:
    small, small_peak = _placements_and_peak(8)
    large, large_peak = _placements_and_peak(100_000)
    assert small == large
    # Per-node vectors would be ~100,000 lists (megabytes); runs keep the peak at the small
    # pool's, give or take a few hundred bytes of larger integers.
    assert large_peak < small_peak + 4096, (small_peak, large_peak)


def test_a_hundred_million_node_pool_is_one_run() -> None:
    # Past the schema's bound (validate refuses it), yet the accounting itself stays bounded.
    view = cluster_view(cluster("a", pool("h100", 8, gpu(8))), [])
    small = view.pool("h100")
    assert small is not None
    state = PoolState.fresh(replace(small, nodes=100_000_000))
    assert state.runs == [((8,), 100_000_000)]
    assert state.pack(((0, 1),), 800_000_000)  # eight one-GPU pods on every node
    assert state.runs == [((0,), 100_000_000)]
    assert not state.pack(((0, 1),), 1)


def _cluster_doc(nodes: int, pool_counts: dict[str, int]) -> dict[str, object]:
    return inference_cluster(
        "a",
        node_pools=[{"name": "h100", "className": "h100", **pool_counts}],
        status=cluster_status(pools=[gpu_pool("h100", nodes, gpu(8))]),
    )


@pytest.mark.parametrize(
    ("field", "nodes", "pool_counts"),
    [
        ("status.gpuPools[0].nodes", MAX_POOL_NODES + 1, {}),
        ("spec.nodePools[0].nodeCount", 8, {"nodeCount": MAX_POOL_NODES + 1}),
        ("spec.nodePools[0].maxNodeCount", 8, {"maxNodeCount": MAX_POOL_NODES + 1}),
        ("spec.nodePools[0].minNodeCount", 8, {"minNodeCount": MAX_POOL_NODES + 1}),
    ],
)
def test_pool_node_counts_past_the_bound_are_refused_at_validate(
    field: str, nodes: int, pool_counts: dict[str, int]
) -> None:
    problems = validate_document(_cluster_doc(nodes, pool_counts)).problems
    assert [(p.path, p.message) for p in problems] == [
        (field, f"Invalid value: {MAX_POOL_NODES + 1}: must be less than or equal to 100000")
    ]


def test_pool_node_counts_at_the_bound_are_valid() -> None:
    counts = {"nodeCount": MAX_POOL_NODES, "maxNodeCount": MAX_POOL_NODES}
    assert validate_document(_cluster_doc(MAX_POOL_NODES, counts)).problems == []
